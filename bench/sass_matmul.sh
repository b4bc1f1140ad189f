#!/bin/sh
# SASS facts of the matmul cubins in DIR (bench/carry.sh + tessera compile
# --emit=cubin put them in .carry/cubin): tensor-core instructions present,
# no local-memory spills. Needs cuobjdump (on the lent GPU machine).
#   bench/sass_matmul.sh DIR
for f in "$1"/*.cubin; do
  s=$(cuobjdump --dump-sass "$f")
  printf '%s: HGMMA %s IGMMA %s HMMA %s LDL %s STL %s LDGSTS %s BAR.SYNC %s\n' "$(basename "$f")" \
    "$(echo "$s" | grep -c HGMMA)" "$(echo "$s" | grep -c IGMMA)" "$(echo "$s" | grep -c ' HMMA')" \
    "$(echo "$s" | grep -c 'LDL')" "$(echo "$s" | grep -c 'STL')" "$(echo "$s" | grep -c LDGSTS)" \
    "$(echo "$s" | grep -c 'BAR.SYNC')"
done
