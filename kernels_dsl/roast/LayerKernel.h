// A ROAST layer's kernel: a TunedKernel over the kernel's @autotune space,
// minus the configs whose tile does not fit the layer's hash tile. Those
// would fail a static_assert; removing them up front also keeps the
// first-config policy (the interpreter's default) on a config that compiles.
#ifndef TESSERA_KERNELS_ROAST_LAYERKERNEL_H
#define TESSERA_KERNELS_ROAST_LAYERKERNEL_H

#include "tessera/Autotune.h"
#include "tessera/Context.h"
#include "tessera/TunedKernel.h"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace tessera::roast::detail {

/// `file` is relative to kernels_dsl/ ("roast/roast_mm.tile"). The space is
/// read by a front-end compile with `probe` on top of `constexprs`: tile
/// values that pass the kernel's static_asserts for this hash tile (its
/// defaults may not).
std::unique_ptr<TunedKernel> layerKernel(Context &ctx, const std::string &file,
                                         const std::string &kernel,
                                         const std::map<std::string, ConstexprValue> &constexprs,
                                         const std::map<std::string, ConstexprValue> &probe,
                                         const std::function<bool(const Config &)> &fits,
                                         const TunedKernelOptions &tuning);

} // namespace tessera::roast::detail

#endif
