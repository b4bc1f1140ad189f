// Choosing the GPU or the CPU interpreter for `tessera run` and `tessera
// autotune` (backends.h).
#include "backends.h"

#include "tessera/Backend.h"

#include <iostream>

namespace tessera::cli {

Backends openContexts(bool interpret, bool withInterpreter) {
  Backends b;
  if (!interpret) {
    try {
      auto ctx = std::make_unique<Context>();
      if (ctx->isInterpreter()) {
        b.noGpuReason = "TESSERA_INTERPRET is set";
        b.byEnvironment = true;
      }
      else
        b.gpu = std::move(ctx);
    } catch (const std::exception &e) {
      b.noGpuReason = e.what();
    }
  }
  if (!b.gpu || withInterpreter)
    b.interp = std::make_unique<Context>(createInterpreterBackend());
  return b;
}

Backends openBackends(bool interpret, bool check) {
  Backends b = openContexts(interpret, check);
  if (!b.gpu && !interpret) {
    if (b.byEnvironment)
      std::cerr << "tessera: TESSERA_INTERPRET is set; running in the CPU interpreter";
    else
      std::cerr << "tessera: no GPU found (" << b.noGpuReason << "); running in the CPU interpreter";
    std::cerr << (check ? " only: --check has nothing to compare against" : "") << "\n";
  }
  return b;
}

} // namespace tessera::cli
