// tessera-set-options: records the compile options on the module (the
// attributes analysis/ModuleOptions.h reads). The driver adds it with the
// CompileOptions it was given; tessera-opt users state the options with it.
#include "Passes.h"
#include "analysis/ModuleOptions.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERASETOPTIONS
#include "Passes.h.inc"

namespace {

struct SetOptionsPass : impl::TesseraSetOptionsBase<SetOptionsPass> {
  using TesseraSetOptionsBase::TesseraSetOptionsBase;

  void runOnOperation() override {
    CompileOptions o;
    o.target = Target::parse(target);
    if (!o.target) {
      getOperation().emitError() << "tessera-set-options: '" << target
                                 << "' is not a target (expected e.g. sm_80, sm_90a)";
      return signalPassFailure();
    }
    o.numWarps = numWarps;
    o.numStages = numStages;
    o.warpSpecialize = warpSpecialize;
    o.tma = tma;
    o.persistentLaunch = persistentLaunch;
    o.maxRegisters = maxRegisters;
    o.clusterSize = clusterSize;
    if (std::string why = o.validate(); !why.empty()) {
      getOperation().emitError() << why;
      return signalPassFailure();
    }
    analysis::setModuleOptions(getOperation(), o);
  }
};

} // namespace
} // namespace tessera
