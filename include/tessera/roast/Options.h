// How a ROAST layer's kernels pick their tile configs (TunedKernel.h).
#ifndef TESSERA_ROAST_OPTIONS_H
#define TESSERA_ROAST_OPTIONS_H

#include "tessera/Context.h"
#include "tessera/TunedKernel.h"

#include <optional>

namespace tessera::roast {

/// `given`, or by default: tune each shape on a GPU (MissPolicy::TuneNow),
/// and on the CPU interpreter use each kernel's first config, since timing
/// candidates there measures the host, not a device.
TunedKernelOptions tuningFor(const Context &ctx, const std::optional<TunedKernelOptions> &given);

} // namespace tessera::roast

#endif
