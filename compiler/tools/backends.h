// Where `tessera run`, `tessera autotune` and bench/basics_check run kernels: the GPU when there
// is one, else (or when asked) the CPU interpreter, saying why on stderr.
#ifndef TESSERA_TOOLS_BACKENDS_H
#define TESSERA_TOOLS_BACKENDS_H

#include "tessera/Context.h"

#include <memory>
#include <string>

namespace tessera::cli {

/// The contexts a command uses: the GPU (if any, and unless --interpret) and
/// the interpreter (without a GPU, or for --check).
struct Backends {
  std::unique_ptr<Context> gpu, interp;
  std::string noGpuReason; // why there is no GPU context
  bool byEnvironment = false; // TESSERA_INTERPRET asked for the interpreter
};

/// Opens the GPU unless `interpret`, and the interpreter when there is no GPU
/// or `withInterpreter` wants it anyway. Says nothing.
Backends openContexts(bool interpret, bool withInterpreter);
/// openContexts(interpret, check); without a GPU (and without `interpret`) it
/// says so on stderr.
Backends openBackends(bool interpret, bool check);

} // namespace tessera::cli

#endif
