#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine: installs what is missing,
# builds into build/, then runs the requested job.
#
#   ./setup.sh main    build, then compile every kernel in kernels_dsl/ and run
#                      the basics (build/bin/basics_check: on the GPU if there is
#                      one, else the interpreter)
#   ./setup.sh test    build, then run every test (unit, lit, examples, basics,
#                      ptxas, the installed package; what needs a GPU or the CUDA
#                      toolkit skips visibly)
#   ./setup.sh build   only install and build
#   ./setup.sh deps    only install the system packages
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(cmake ninja-build g++ llvm-22-dev libmlir-22-dev mlir-22-tools nlohmann-json3-dev catch2
          libzstd-dev zlib1g-dev libxml2-dev libedit-dev libffi-dev libncurses-dev)

deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    # LLVM 22 comes from apt.llvm.org when the distribution does not carry it.
    if ! apt-cache show llvm-22-dev >/dev/null 2>&1; then
      $sudo apt-get update -q
    fi
    if ! apt-cache show llvm-22-dev >/dev/null 2>&1; then
      echo "setup: adding apt.llvm.org for LLVM 22"
      $sudo apt-get install -y -q wget gnupg ca-certificates
      wget -qO- https://apt.llvm.org/llvm-snapshot.gpg.key | $sudo tee /etc/apt/trusted.gpg.d/apt.llvm.org.asc >/dev/null
      echo "deb http://apt.llvm.org/bookworm/ llvm-toolchain-bookworm-22 main" | $sudo tee /etc/apt/sources.list.d/llvm-22.list >/dev/null
      $sudo apt-get update -q
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  # The CUDA toolkit is optional: the runtime declares the driver API it uses
  # (runtime/cuda/DriverApi.h) and loads libcuda with dlopen. Without it the
  # ptxas checks skip, and PTX for kernels that call libdevice cannot be made.
  if [ -z "${TESSERA_PTXAS:-}" ] && [ ! -x /usr/local/cuda/bin/ptxas ] && ! command -v ptxas >/dev/null 2>&1; then
    echo "setup: note: no CUDA toolkit (ptxas) found: the ptxas checks will be skipped" >&2
  fi
  if [ -z "${TESSERA_LIBDEVICE:-}" ] && [ ! -f /usr/local/cuda/nvvm/libdevice/libdevice.10.bc ]; then
    echo "setup: note: no libdevice (CUDA's nvvm/libdevice/libdevice.10.bc) found: kernels that call math functions" >&2
    echo "      cannot be compiled to PTX (set TESSERA_LIBDEVICE); the interpreter does not need it" >&2
  fi
}

build() {
  deps
  if [ ! -f build/build.ninja ]; then
    cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
  fi
  cmake --build build
}

run_tests() {
  build
  (cd build && ctest --output-on-failure)
}

main_job() {
  build
  local failed=0
  echo "== compiling every kernel in kernels_dsl/ to tile IR"
  while IFS= read -r f; do
    if build/bin/tessera compile "$f" >/dev/null; then
      echo "ok    $f"
    else
      echo "FAIL  $f"
      failed=1
    fi
  done < <(find kernels_dsl -name '*.tile' ! -path '*/lib/*' | sort)
  # Skipped (exit 77) when ptxas is not installed.
  echo "== assembling every kernel with ptxas for sm_90 (registers, spills)"
  local rc=0
  bash tests/ptxas_check.sh build/bin/tessera kernels_dsl sm_90 || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || failed=1
  # On a GPU: each basic kernel on the GPU and in the interpreter, compared, and
  # both against fp64 references; without one: the interpreter against the
  # references (basics_check says which in its first line).
  echo "== running the basics"
  build/bin/basics_check --kernels-dir kernels_dsl || failed=1
  # The CLI's own GPU path: `tessera run --check` (the interpreter alone, and a
  # note on stderr, without a GPU).
  echo "== tessera run --check"
  build/bin/tessera run kernels_dsl/basics/vector_add.tile --grid 4 --check \
    buf:4096 buf:4096 out:4096 4096 || failed=1
  return $failed
}

case "${1:-}" in
  deps) deps ;;
  build) build ;;
  test) run_tests ;;
  main) main_job ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
