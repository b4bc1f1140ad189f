#!/usr/bin/env bash
# CI check of the generated code: compiles every kernel of kernels_dsl/ (not
# lib/) with default constexprs to a cubin through ptxas and prints each
# kernel's registers and spills. Fails on any compile or ptxas failure; spills
# are reported, not failed. Without ptxas it prints "SKIPPED: ptxas not found"
# and exits with 77 (CTest's SKIP_RETURN_CODE for this test).
#
#   tests/ptxas_check.sh [TESSERA [KERNELS_DIR [ARCH]]]
#
# defaults: build/bin/tessera, kernels_dsl, sm_90 (relative to the repository).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tessera=${1:-$root/build/bin/tessera}
kernels=${2:-$root/kernels_dsl}
arch=${3:-sm_90}

# ptxas as the compiler finds it: $TESSERA_PTXAS, CUDA's, then PATH.
ptxas=""
if [ -n "${TESSERA_PTXAS:-}" ]; then
  [ -x "$TESSERA_PTXAS" ] && ptxas=$TESSERA_PTXAS
elif [ -x /usr/local/cuda/bin/ptxas ]; then
  ptxas=/usr/local/cuda/bin/ptxas
else
  ptxas=$(command -v ptxas || true)
fi
if [ -z "$ptxas" ]; then
  echo "SKIPPED: ptxas not found"
  exit 77
fi
if [ ! -x "$tessera" ]; then
  echo "ptxas_check: error: '$tessera' is not an executable" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "ptxas_check: $arch with $ptxas ($("$ptxas" --version | tail -1))"
files=0 kernels_ok=0 failed=0 spilling=0
while IFS= read -r f; do
  files=$((files + 1))
  rel=${f#"$kernels"/}
  out="$tmp/$(echo "$rel" | tr / _).cubin"
  if "$tessera" compile "$f" --emit=cubin --arch="$arch" -o "$out" 2>"$tmp/log" && [ -s "$out" ]; then
    n=0
    while read -r _ name _ regs stores loads _ _ _; do
      regs=${regs#registers=} stores=${stores#spill_stores=} loads=${loads#spill_loads=}
      note=""
      if [ "$stores" != 0 ] || [ "$loads" != 0 ]; then
        note="  SPILLS"
        spilling=$((spilling + 1))
      fi
      printf 'ok    %-32s %-22s registers %3s  spill stores %5s B  spill loads %5s B%s\n' \
        "$rel" "$name" "$regs" "$stores" "$loads" "$note"
      n=$((n + 1))
    done < <(grep '^kernel ' "$tmp/log")
    if [ "$n" = 0 ]; then
      echo "FAIL  $rel: no ptxas report for any kernel"
      sed 's/^/      /' "$tmp/log"
      failed=$((failed + 1))
    fi
    kernels_ok=$((kernels_ok + n))
  else
    echo "FAIL  $rel"
    sed 's/^/      /' "$tmp/log"
    failed=$((failed + 1))
  fi
done < <(find "$kernels" -name '*.tile' ! -path '*/lib/*' | sort)

echo "ptxas_check: $kernels_ok kernels in $files files assembled for $arch, $spilling with spills, $failed files failed"
if [ "$files" = 0 ]; then
  echo "ptxas_check: error: no .tile files under $kernels" >&2
  exit 1
fi
[ "$failed" = 0 ]
