// tessera-assign-layouts: records, per tensor-core dot, the accumulator layout
// that the lowering's dot path produces (analysis/DotLayoutPlan.cpp decides),
// and inserts the conversions that make every other use see the blocked
// layout. tessera-remove-layout-conversions then removes the needless ones.
#include "Passes.h"

#include "analysis/ModuleOptions.h"
#include "analysis/DotLayoutPlan.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERAASSIGNLAYOUTS
#include "Passes.h.inc"

namespace {

struct AssignLayoutsPass : impl::TesseraAssignLayoutsBase<AssignLayoutsPass> {
  void runOnOperation() override {
    std::string error;
    std::optional<CompileOptions> opts = analysis::moduleOptions(getOperation(), error);
    if (!opts) {
      getOperation().emitError(error);
      return signalPassFailure();
    }
    // Decide every dot first: the decision looks at the loop around the dot
    // (is it the pipelineable form?), which the conversions would change.
    SmallVector<std::pair<tile::DotOp, tgpu::MmaEncodingAttr>> plan;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      analysis::DotLayoutPlanner planner(fn, *opts);
      fn.walk([&](tile::DotOp dot) {
        if (tgpu::mmaEncodingOf(dot.getType()))
          return; // already assigned
        if (auto enc = planner.choose(dot))
          plan.push_back({dot, enc});
      });
    }
    for (auto [dot, enc] : plan) {
      OpBuilder b(dot);
      Location loc = dot.getLoc();
      auto convert = [&](Value v, Attribute encoding) -> Value {
        auto t = cast<RankedTensorType>(v.getType());
        return tgpu::ConvertLayoutOp::create(b, loc, tgpu::withEncoding(t, encoding), v);
      };
      MLIRContext *ctx = dot.getContext();
      Value a = convert(dot.getA(), tgpu::DotOperandEncodingAttr::get(ctx, 0, enc));
      Value bb = convert(dot.getB(), tgpu::DotOperandEncodingAttr::get(ctx, 1, enc));
      Value acc = convert(dot.getAcc(), enc);
      Operation *mma = b.clone(*dot.getOperation());
      mma->setOperands({a, bb, acc});
      mma->getResult(0).setType(acc.getType());
      Value back = convert(mma->getResult(0), Attribute());
      dot.getResult().replaceAllUsesWith(back);
      dot.erase();
    }
  }
};

} // namespace

} // namespace tessera
