// The GPU tests' entry: a CUDA context, or a visible skip when there is none.
#ifndef TESSERA_TESTS_GPUTESTSUPPORT_H
#define TESSERA_TESTS_GPUTESTSUPPORT_H

#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <memory>

namespace tessera::testing {

/// A context on GPU 0, or nullptr after a WARN that names why (CI has no GPU).
inline std::unique_ptr<Context> gpuOrSkip() {
  try {
    return std::make_unique<Context>(createCudaBackend(0));
  } catch (const Error &e) {
    WARN("GPU test skipped: no GPU (" << e.what() << ")");
    return nullptr;
  }
}

} // namespace tessera::testing

#endif
