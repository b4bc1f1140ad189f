// tessera-widen-float8: arithmetic on 8-bit floats runs in f32 (Passes.td).
#include "Passes.h"
#include "tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace tessera {
#define GEN_PASS_DEF_TESSERAWIDENFLOAT8
#include "Passes.h.inc"

namespace {

// A value whose elements (or the scalar itself) are 8-bit floats.
bool isFloat8(Type t) { return tile::isFloat8Type(getElementTypeOrSelf(t)); }

/// `t` (a scalar or a tensor) with f32 elements.
Type withF32(Type t) {
  Type f32 = Float32Type::get(t.getContext());
  if (auto rt = dyn_cast<RankedTensorType>(t))
    return rt.clone(f32);
  return f32;
}

// The ops an 8-bit float passes through unchanged (they compute nothing on it).
bool movesOnly(Operation *op) {
  return isa<arith::ExtFOp, arith::TruncFOp, arith::SelectOp, arith::ConstantOp, arith::BitcastOp>(op);
}

struct WidenFloat8Pass : impl::TesseraWidenFloat8Base<WidenFloat8Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (!isa<arith::ArithDialect, math::MathDialect>(op->getDialect()) || movesOnly(op))
        return;
      if (llvm::any_of(op->getOperandTypes(), isFloat8) || llvm::any_of(op->getResultTypes(), isFloat8))
        work.push_back(op);
    });
    for (Operation *op : work) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      for (OpOperand &o : op->getOpOperands())
        if (isFloat8(o.get().getType()))
          o.set(arith::ExtFOp::create(b, loc, withF32(o.get().getType()), o.get()));
      b.setInsertionPointAfter(op);
      for (OpResult r : op->getResults()) {
        Type t = r.getType();
        if (!isFloat8(t))
          continue;
        r.setType(withF32(t));
        auto back = arith::TruncFOp::create(b, loc, t, r);
        r.replaceAllUsesExcept(back, back);
      }
    }
  }
};

} // namespace
} // namespace tessera
