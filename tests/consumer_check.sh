#!/usr/bin/env bash
# The installed package works for an out-of-tree project (test consumer_package):
# installs BUILD into a fresh prefix, then configures, builds and runs
# examples/consumer against it with only CMAKE_PREFIX_PATH (no LLVM/MLIR paths),
# in the CPU interpreter. Any failing step fails the test.
#
#   consumer_check.sh CMAKE BUILD CONFIG WORK CONSUMER_SRC GENERATOR MAKE_PROGRAM CXX
set -euo pipefail
cmake=$1 build=$2 config=$3 work=$4 src=$5 generator=$6 make=$7 cxx=$8
prefix=$work/prefix

rm -rf "$work"
mkdir -p "$work"
echo "== install $build into $prefix"
"$cmake" --install "$build" --prefix "$prefix" ${config:+--config "$config"} > "$work/install.log"

# The package carries nothing of LLVM/MLIR or of the build tree: the exported
# target is libtessera.so plus include/, and the headers include only tessera/
# and standard headers.
targets=$(find "$prefix" -name 'TesseraTargets*.cmake')
[ -n "$targets" ] || { echo "FAIL: no TesseraTargets*.cmake installed"; exit 1; }
if grep -nE 'MLIR|LLVM|INTERFACE_LINK_LIBRARIES|'"$build" $targets; then
  echo "FAIL: the exported target must carry only libtessera.so and include/ (no LLVM/MLIR,"
  echo "      no link dependencies, no build-tree paths)"; exit 1
fi
bad=$(grep -hE '^[[:space:]]*#[[:space:]]*include' "$prefix"/include/tessera/*.h \
      | sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*//' \
      | grep -vE '^("tessera/[A-Za-z0-9_]+\.h"|<[a-z_]+>)' || true)
if [ -n "$bad" ]; then
  echo "FAIL: public headers include something outside include/tessera and the standard library:"
  echo "$bad"; exit 1
fi

# The installed tools find the installed library ($ORIGIN/../lib).
env -u LD_LIBRARY_PATH "$prefix/bin/tessera" --version
env -u LD_LIBRARY_PATH "$prefix/bin/tessera-opt" --version > /dev/null

echo "== configure and build $src"
"$cmake" -S "$src" -B "$work/build" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF > "$work/configure.log" \
  || { cat "$work/configure.log"; exit 1; }
grep -q "Tessera_DIR:PATH=$prefix/" "$work/build/CMakeCache.txt" \
  || { echo "FAIL: find_package(Tessera) did not find the package in $prefix"; exit 1; }
"$cmake" --build "$work/build"

echo "== run"
env -u LD_LIBRARY_PATH TESSERA_INTERPRET=1 TESSERA_CACHE_DIR="$work/cache" "$work/build/consumer"
