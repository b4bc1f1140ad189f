// KernelLibrary.h: the layer APIs find kernels_dsl/ through
// $TESSERA_KERNELS_DIR, the installed copy or the source tree.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include "tessera/Error.h"
#include "tessera/KernelLibrary.h"

#include <string>

using tessera::testing::EnvGuard;
using tessera::testing::errorOf;

TEST_CASE("kernelLibraryPath finds the source tree's kernels", "[kernel-library]") {
  EnvGuard env("TESSERA_KERNELS_DIR", nullptr);
  std::string p = tessera::kernelLibraryPath("quant/blockwise_quant.tile");
  CHECK(p.size() > 30);
  CHECK(p.substr(p.size() - 26) == "quant/blockwise_quant.tile");
  CHECK(errorOf([] { tessera::kernelLibraryPath("quant/no_such_kernel.tile"); })
            .find("no_such_kernel.tile not found") != std::string::npos);
}

TEST_CASE("TESSERA_KERNELS_DIR overrides the kernels, and must exist", "[kernel-library]") {
  {
    EnvGuard env("TESSERA_KERNELS_DIR", TESSERA_SOURCE_DIR "/kernels_dsl");
    CHECK(tessera::kernelLibraryDir() == TESSERA_SOURCE_DIR "/kernels_dsl");
  }
  EnvGuard env("TESSERA_KERNELS_DIR", "/nonexistent/kernels");
  CHECK(errorOf([] { tessera::kernelLibraryDir(); })
            .find("TESSERA_KERNELS_DIR=/nonexistent/kernels is not a directory") != std::string::npos);
}
