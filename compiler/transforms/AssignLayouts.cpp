// tessera-assign-layouts: records, per tensor-core dot, the accumulator layout
// that the lowering's dot path produces (lowering/DotLayoutPlan.cpp decides),
// and inserts the conversions that make every other use see the blocked
// layout. tessera-remove-layout-conversions then removes the needless ones.
#include "Passes.h"

#include "lowering/Lowering.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace tessera::transforms {
namespace {

struct AssignLayoutsPass : PassWrapper<AssignLayoutsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AssignLayoutsPass)

  AssignLayoutsPass() = default;
  AssignLayoutsPass(const AssignLayoutsPass &other) : PassWrapper(other) {}
  explicit AssignLayoutsPass(const LayoutTarget &t) {
    arch = t.arch;
    numWarps = t.numWarps;
    numStages = t.numStages;
  }

  StringRef getArgument() const override { return "tessera-assign-layouts"; }
  StringRef getDescription() const override {
    return "Give tensor-core dots their mma and dot-operand layouts, with conversions around them";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<tgpu::TileGPUDialect>();
  }

  Option<std::string> arch{*this, "arch", llvm::cl::desc("target, e.g. sm_90a (empty: sm_80)"),
                           llvm::cl::init("")};
  Option<int> numWarps{*this, "num-warps", llvm::cl::desc("warps per block"), llvm::cl::init(4)};
  Option<int> numStages{*this, "num-stages", llvm::cl::desc("pipeline depth of dot loops"),
                        llvm::cl::init(4)};

  void runOnOperation() override {
    lowering::LoweringOptions opts;
    opts.arch = arch;
    opts.numWarps = numWarps;
    opts.numStages = numStages;
    // Decide every dot first: the decision looks at the loop around the dot
    // (is it the pipelineable form?), which the conversions would change.
    SmallVector<std::pair<tile::DotOp, tgpu::MmaEncodingAttr>> plan;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      lowering::DotLayoutPlanner planner(fn, opts);
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

std::unique_ptr<Pass> createAssignLayoutsPass(const LayoutTarget &target) {
  return std::make_unique<AssignLayoutsPass>(target);
}

void registerAssignLayoutsPass() { PassRegistration<AssignLayoutsPass>(); }

} // namespace tessera::transforms
