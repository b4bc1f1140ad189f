#include "analysis/ModuleOptions.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace tessera::analysis {

static constexpr const char *kTarget = "tessera.target", *kNumWarps = "tessera.num_warps",
                            *kNumStages = "tessera.num_stages",
                            *kWarpSpecialize = "tessera.warp_specialize", *kTma = "tessera.tma",
                            *kPersistentLaunch = "tessera.persistent_launch",
                            *kMaxRegisters = "tessera.max_registers",
                            *kClusterSize = "tessera.cluster_size";

void setModuleOptions(ModuleOp module, const CompileOptions &options) {
  Builder b(module.getContext());
  module->setAttr(kTarget, b.getStringAttr(options.resolvedTarget().name()));
  module->setAttr(kNumWarps, b.getI32IntegerAttr(options.numWarps));
  module->setAttr(kNumStages, b.getI32IntegerAttr(options.numStages));
  module->setAttr(kWarpSpecialize, b.getBoolAttr(options.warpSpecialize));
  module->setAttr(kTma, b.getBoolAttr(options.tma));
  module->setAttr(kPersistentLaunch, b.getBoolAttr(options.persistentLaunch));
  if (options.maxRegisters)
    module->setAttr(kMaxRegisters, b.getI32IntegerAttr(options.maxRegisters));
  if (options.clusterSize != 1)
    module->setAttr(kClusterSize, b.getI32IntegerAttr(options.clusterSize));
}

std::optional<CompileOptions> moduleOptions(ModuleOp module, std::string &error) {
  CompileOptions o;
  o.target = Target{};
  if (Attribute a = module->getAttr(kTarget)) {
    auto s = dyn_cast<StringAttr>(a);
    std::optional<Target> t = s ? Target::parse(s.str()) : std::nullopt;
    if (!t) {
      error = std::string(kTarget) + " must be a target name such as \"sm_90a\"";
      return std::nullopt;
    }
    o.target = *t;
  }
  auto readInt = [&](const char *name, int &out) {
    if (Attribute a = module->getAttr(name)) {
      auto i = dyn_cast<IntegerAttr>(a);
      if (!i) {
        error = std::string(name) + " must be an integer";
        return false;
      }
      out = int(i.getInt());
    }
    return true;
  };
  auto readBool = [&](const char *name, bool &out) {
    if (Attribute a = module->getAttr(name)) {
      auto v = dyn_cast<BoolAttr>(a);
      if (!v) {
        error = std::string(name) + " must be true or false";
        return false;
      }
      out = v.getValue();
    }
    return true;
  };
  if (!readInt(kNumWarps, o.numWarps) || !readInt(kNumStages, o.numStages) ||
      !readBool(kWarpSpecialize, o.warpSpecialize) || !readBool(kTma, o.tma) ||
      !readBool(kPersistentLaunch, o.persistentLaunch) ||
      !readInt(kMaxRegisters, o.maxRegisters) || !readInt(kClusterSize, o.clusterSize))
    return std::nullopt;
  if (std::string why = o.validate(); !why.empty()) {
    error = why;
    return std::nullopt;
  }
  return o;
}

} // namespace tessera::analysis
