#!/usr/bin/env bash
# Refactoring guard: writes the PTX (and the remarks) of every kernel in
# kernels_dsl/ for a fixed list of targets and options, so that two builds can
# be compared byte for byte. A change that should not change generated code
# (a refactor) must leave every file identical.
#
#   tests/ptx_snapshot.sh write TESSERA OUTDIR   one file per (kernel file, config)
#   tests/ptx_snapshot.sh diff  DIR_A DIR_B      exit 1 and list the differences
#
# Typical use: build the old commit, `write` to /tmp/before; build the new one,
# `write` to /tmp/after; `diff /tmp/before /tmp/after`.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)

# Each config: a name and the extra `tessera compile` arguments. Defaults of
# every constexpr, plus the switches and dtypes the dot paths branch on.
configs=(
  "sm80|--arch=sm_80"
  "sm80_w8|--arch=sm_80 --num-warps 8"
  "sm80_s1|--arch=sm_80 --num-stages 1"
  "sm90a|--arch=sm_90a"
  "sm90a_w8|--arch=sm_90a --num-warps 8"
  "sm90a_notma|--arch=sm_90a --no-tma"
  "sm90a_nows|--arch=sm_90a --no-warp-specialize"
)
# Extra constexpr settings for files whose default is one dtype only.
extra_defines() {
  case "$1" in
    basics/matmul.tile | basics/matmul_persistent.tile)
      echo "bf16|-D DT=bf16 -D OUT=bf16"; echo "f16|-D DT=f16 -D OUT=f16" ;;
    infcl/lse_fwd.tile) echo "bf16|-D DT=bf16" ;;
    roast/roast_mm.tile) echo "aligned|-D ALIGNED=True" ;;
  esac
}

write() {
  local tessera=$1 out=$2
  mkdir -p "$out"
  local n=0 failed=0
  while IFS= read -r f; do
    local rel=${f#"$root/kernels_dsl/"}
    local variants=("default|")
    while IFS= read -r v; do [ -n "$v" ] && variants+=("$v"); done < <(extra_defines "$rel")
    for v in "${variants[@]}"; do
      for c in "${configs[@]}"; do
        local name
        name="$(echo "$rel" | tr / _).${v%%|*}.${c%%|*}"
        # shellcheck disable=SC2086
        if "$tessera" compile "$f" --emit=ptx --remarks ${c#*|} ${v#*|} -o "$out/$name.ptx" \
             2>"$out/$name.remarks"; then
          n=$((n + 1))
        else
          echo "FAIL  $name" >&2
          sed 's/^/      /' "$out/$name.remarks" >&2
          failed=$((failed + 1))
        fi
      done
    done
  done < <(find "$root/kernels_dsl" -name '*.tile' ! -path '*/lib/*' | sort)
  echo "ptx_snapshot: $n compilations written to $out, $failed failed"
  [ "$failed" = 0 ]
}

compare() {
  local a=$1 b=$2
  # Remarks name the source file by the path given; compare them as written.
  if diff -rq "$a" "$b"; then
    echo "ptx_snapshot: identical ($(ls "$a" | wc -l) files)"
  else
    echo "ptx_snapshot: DIFFERENT" >&2
    return 1
  fi
}

case "${1:-}" in
  write) write "$2" "$3" ;;
  diff) compare "$2" "$3" ;;
  *) sed -n '2,11p' "$0"; exit 2 ;;
esac
