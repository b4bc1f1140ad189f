// Conversions between the other floats and the 8-bit ones (f8e4m3, f8e5m2), whose
// values live in i8 registers (KernelLowering::convertElem). Each is one
// cvt on sm_89 and later: e4m3x2/e5m2x2 -> f16x2 (exact: every 8-bit value
// is an f16) then f16 -> f32 (exact); f32 -> a pair with round to nearest
// even and saturation to the largest finite value (satfinite), the lane
// in the low byte. tessera/Float8.h rounds the same way on the host.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

namespace {
const char *ptxName(Type t) { return isa<Float8E4M3FNType>(t) ? "e4m3x2" : "e5m2x2"; }

// Pure inline PTX: no side effects, so LLVM may hoist or merge it.
Value pureAsm(OpBuilder &b, Location loc, Type result, ValueRange operands, StringRef text,
              StringRef constraints) {
  return LLVM::InlineAsmOp::create(b, loc, result, operands, text, constraints,
                                   /*has_side_effects=*/false, /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                                   ArrayAttr())
      .getResult(0);
}
} // namespace

Value KernelLowering::float8ToF32(Type f8, Value x, Location loc) {
  Value h = arith::ExtUIOp::create(b_, loc, b_.getI16Type(), x);
  return pureAsm(b_, loc, b_.getF32Type(), {h},
                 std::string("{\n.reg .b32 w;\n.reg .b16 lo, hi;\ncvt.rn.f16x2.") + ptxName(f8) +
                     " w, $1;\nmov.b32 {lo, hi}, w;\ncvt.f32.f16 $0, lo;\n}",
                 "=f,h");
}

Value KernelLowering::convertFloat8(Operation *op, Value x, Location loc) {
  Type from = getElementTypeOrSelf(op->getOperand(0).getType());
  Type to = getElementTypeOrSelf(op->getResult(0).getType());
  Type i16 = b_.getI16Type();
  auto poison = [&](std::string why) -> Value {
    fail(op, why);
    return LLVM::PoisonOp::create(b_, loc, convertElem(to));
  };
  if (!target_.hasFloat8())
    return poison("8-bit float conversions need sm_89 or later (cvt with e4m3x2/e5m2x2); the "
                  "target is " + target_.name());
  // The front end converts through f32, but canonicalization may fold
  // extf/truncf pairs around it (f16 -> f32 -> f8 into f16 -> f8): the
  // other float types reach f32 first, exactly except from f64.
  Type f32 = b_.getF32Type();
  if (isFloat8Type(from) && !isFloat8Type(to)) {
    Value w = float8ToF32(from, x, loc);
    if (to.getIntOrFloatBitWidth() < 32)
      return arith::TruncFOp::create(b_, loc, to, w);
    return to.isF32() ? w : Value(arith::ExtFOp::create(b_, loc, to, w));
  }
  if (!from.isF32() && !isFloat8Type(from) && isFloat8Type(to))
    x = from.getIntOrFloatBitWidth() < 32 ? Value(arith::ExtFOp::create(b_, loc, f32, x))
                                          : Value(arith::TruncFOp::create(b_, loc, f32, x));
  if (isFloat8Type(to) && !isFloat8Type(from)) {
    Value pair = pureAsm(b_, loc, i16, {x},
                         std::string("{\n.reg .f32 z;\nmov.f32 z, 0f00000000;\ncvt.rn.satfinite.") +
                             ptxName(to) + ".f32 $0, z, $1;\n}",
                         "=h,f");
    return arith::TruncIOp::create(b_, loc, b_.getI8Type(), pair);
  }
  return poison("no conversion between the two 8-bit float types (convert through f32)");
}

} // namespace tessera::lowering::detail
