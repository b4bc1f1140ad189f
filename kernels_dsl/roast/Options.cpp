#include "tessera/roast/Options.h"

namespace tessera::roast {

TunedKernelOptions tuningFor(const Context &ctx, const std::optional<TunedKernelOptions> &given) {
  if (given)
    return *given;
  TunedKernelOptions o;
  if (ctx.isInterpreter())
    o.onMiss = MissPolicy::FirstConfig;
  return o;
}

} // namespace tessera::roast
