#include "tessera/Error.h"
#include "tessera/Kernel.h"

namespace tessera {

Kernel::Kernel(Function function, KernelSignature signature, LaunchConfig config)
    : function_(std::move(function)), signature_(std::move(signature)), config_(config) {
  if (config_.numWarps == 0 || config_.numWarps > 32)
    throw Error("kernel '" + signature_.name + "': num_warps must be between 1 and 32, got " +
                std::to_string(config_.numWarps));
}

void Kernel::launchWithArgs(const Stream &stream, Grid grid,
                            const std::vector<ArgValue> &args) const {
  if (!function_.valid())
    throw Error("launch of an empty Kernel");
  checkLaunchArgs(signature_, args);
  function_.launch(stream, grid, block(), config_.sharedMemoryBytes, args);
}

} // namespace tessera
