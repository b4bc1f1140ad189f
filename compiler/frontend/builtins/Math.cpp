// The elementwise math builtins: one handler per builtin or family of builtins
// (BuiltinCall.h), dispatched by IRGen::callBuiltin (Builtins.cpp).
#include "BuiltinCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;

namespace tessera::fe::builtins {

// exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, erf, floor, ceil, abs
SemValue BuiltinCall::onUnaryMath() {
  if (!bind({{"x"}, 1}))
    return SemValue::invalid();
  SemValue x = a[0].value;
  if (x.isConst()) { // fold on compile-time numbers
    double v = x.kind == SemValue::Int ? double(x.i) : x.kind == SemValue::Bool ? x.b : x.f;
    if (name == "abs")
      return x.kind == SemValue::Float ? SemValue::ofFloat(std::fabs(v))
                                       : SemValue::ofInt(int64_t(std::fabs(v)));
    double r = name == "exp" ? std::exp(v) : name == "exp2" ? std::exp2(v)
             : name == "log" ? std::log(v) : name == "log2" ? std::log2(v)
             : name == "sqrt" ? std::sqrt(v) : name == "rsqrt" ? 1.0 / std::sqrt(v)
             : name == "sin" ? std::sin(v) : name == "cos" ? std::cos(v)
             : name == "tanh" ? std::tanh(v) : name == "erf" ? std::erf(v)
             : name == "floor" ? std::floor(v) : std::ceil(v);
    return SemValue::ofFloat(r);
  }
  if (!x.isRuntime() || x.type.elem.isPointer())
    return fail(a[0].loc, name + "() needs a number or a tile of numbers, got " + x.describe());
  DType et = x.type.elem;
  if (name == "abs" && !isFloat(et.scalar)) {
    if (isUnsigned(et.scalar))
      return x;
    return SemValue::ofRuntime(math::AbsIOp::create(b_, ml, x.value), x.type);
  }
  if (name == "abs")
    return SemValue::ofRuntime(math::AbsFOp::create(b_, ml, x.value), x.type);
  // Integers compute in f32; f16/bf16 compute in f32 and round back.
  DType work = et.scalar == ScalarType::f64 ? et : DType{ScalarType::f32, 0};
  DType out = isFloat(et.scalar) ? et : work;
  SemValue w = castTo(x, work, L);
  if (!w.ok())
    return w;
  Value v = w.value, r;
  if (name == "exp") r = math::ExpOp::create(b_, ml, v);
  else if (name == "exp2") r = math::Exp2Op::create(b_, ml, v);
  else if (name == "log") r = math::LogOp::create(b_, ml, v);
  else if (name == "log2") r = math::Log2Op::create(b_, ml, v);
  else if (name == "sqrt") r = math::SqrtOp::create(b_, ml, v);
  else if (name == "rsqrt") r = math::RsqrtOp::create(b_, ml, v);
  else if (name == "sin") r = math::SinOp::create(b_, ml, v);
  else if (name == "cos") r = math::CosOp::create(b_, ml, v);
  else if (name == "tanh") r = math::TanhOp::create(b_, ml, v);
  else if (name == "erf") r = math::ErfOp::create(b_, ml, v);
  else if (name == "floor") r = math::FloorOp::create(b_, ml, v);
  else r = math::CeilOp::create(b_, ml, v);
  return castTo(SemValue::ofRuntime(r, w.type), out, L);
}

SemValue BuiltinCall::onFma() {
  if (!bind({{"a", "b", "c"}, 3}))
    return SemValue::invalid();
  SemValue x = a[0].value, y = a[1].value, z = a[2].value;
  if (!x.isRuntime() && !y.isRuntime() && !z.isRuntime()) {
    SemValue p = binary(BinOp::Mul, x, y, L);
    return p.ok() ? binary(BinOp::Add, p, z, L) : p;
  }
  if (!unify(x, y, L, "fma") || !unify(x, z, L, "fma") || !unify(y, z, L, "fma"))
    return SemValue::invalid();
  if (!isFloat(x.type.elem.scalar))
    return fail(L, "fma() needs floating-point operands, got " + x.type.str());
  return SemValue::ofRuntime(math::FmaOp::create(b_, ml, x.value, y.value, z.value), x.type);
}

SemValue BuiltinCall::onWhere() {
  if (!bind({{"cond", "x", "y"}, 3}))
    return SemValue::invalid();
  // A number or a pointer condition is true where it is nonzero (non-null), as in Triton.
  SemValue c = a[0].value;
  bool truthValue = c.isRuntime() && c.type.elem != DType{ScalarType::i1, 0};
  if (truthValue)
    c = castTo(c, DType{ScalarType::i1, 0}, a[0].loc);
  else if (!maskArg(a[0], c))
    return SemValue::invalid();
  if (!c.ok())
    return c;
  SemValue x = a[1].value, y = a[2].value;
  if (!x.isRuntime() && !y.isRuntime())
    x = materialize(x, a[1].loc);
  if (!x.ok())
    return x;
  bool ptrs = x.isRuntime() && y.isRuntime() && x.type.elem.isPointer() && x.type.elem == y.type.elem;
  if (x.isRuntime() && y.isRuntime() && x.type.elem.isPointer() && y.type.elem.isPointer() && !ptrs)
    return fail(L, "where() needs two pointers of the same type, got " + x.type.elem.str() +
                       " and " + y.type.elem.str());
  if (!ptrs && !unify(x, y, L, "where"))
    return SemValue::invalid();
  if (!broadcastAll({&c, &x, &y}))
    return SemValue::invalid();
  return SemValue::ofRuntime(arith::SelectOp::create(b_, ml, c.value, x.value, y.value), x.type);
}

// maximum, minimum (and max, min of two scalars)
SemValue BuiltinCall::onMaximumMinimum() {
  if (!bind({{"x", "y"}, 2}))
    return SemValue::invalid();
  SemValue x = a[0].value, y = a[1].value;
  bool mx = name == "maximum" || name == "max";
  if (!x.isRuntime() && !y.isRuntime()) {
    SemValue lt = binary(BinOp::Lt, x, y, L);
    if (!lt.ok())
      return lt;
    return (mx ? lt.b : !lt.b) ? y : x;
  }
  if (!unify(x, y, L, name.c_str()))
    return SemValue::invalid();
  DType t = x.type.elem;
  Value r;
  if (isFloat(t.scalar))
    r = mx ? Value(arith::MaxNumFOp::create(b_, ml, x.value, y.value))
           : Value(arith::MinNumFOp::create(b_, ml, x.value, y.value));
  else if (isUnsigned(t.scalar))
    r = mx ? Value(arith::MaxUIOp::create(b_, ml, x.value, y.value))
           : Value(arith::MinUIOp::create(b_, ml, x.value, y.value));
  else
    r = mx ? Value(arith::MaxSIOp::create(b_, ml, x.value, y.value))
           : Value(arith::MinSIOp::create(b_, ml, x.value, y.value));
  return SemValue::ofRuntime(r, x.type);
}

// fdiv(x, y, ieee_rounding=False): Triton's tl.fdiv. x / y, and without
// ieee_rounding the division may be approximate (LLVM's afn: NVPTX's
// div.approx.f32, within 2 ulp, a few instructions instead of the
// correctly rounded division's dozen). div_rn(x, y) is x / y, rounded.
SemValue BuiltinCall::onFdiv() {
  bool rn = name == "div_rn";
  if (!bind({rn ? std::vector<const char *>{"x", "y"} : std::vector<const char *>{"x", "y", "ieee_rounding"}, 2}))
    return SemValue::invalid();
  bool ieee = rn;
  if (!rn && !isNone(a[2])) {
    if (a[2].value.kind != SemValue::Bool)
      return fail(a[2].loc, "fdiv() ieee_rounding must be True or False, got " + a[2].value.describe());
    ieee = a[2].value.b;
  }
  SemValue q = binary(BinOp::Div, a[0].value, a[1].value, L);
  if (!q.ok() || !q.isRuntime() || ieee)
    return q;
  if (auto d = q.value.getDefiningOp<arith::DivFOp>())
    d.setFastmath(arith::FastMathFlags::afn);
  return q;
}

SemValue BuiltinCall::onCdiv() {
  if (!bind({{"x", "y"}, 2}))
    return SemValue::invalid();
  for (const Arg &x : a)
    if (!isIntegerValue(x.value) || x.value.isTile())
      return fail(x.loc, "cdiv() needs integer scalars, got " + x.value.describe());
  SemValue ym1 = binary(BinOp::Sub, a[1].value, SemValue::ofInt(1), L);
  SemValue sum = ym1.ok() ? binary(BinOp::Add, a[0].value, ym1, L) : ym1;
  return sum.ok() ? binary(BinOp::FloorDiv, sum, a[1].value, L) : sum;
}

// umulhi(x, y): the high half of the unsigned product. Both operands are
// integers of one type (after promotion); the result keeps that type.
SemValue BuiltinCall::onUmulhi() {
  if (!bind({{"x", "y"}, 2}))
    return SemValue::invalid();
  SemValue x = a[0].value, y = a[1].value;
  if (!x.isRuntime() && !y.isRuntime())
    return fail(L, "umulhi() needs a run-time integer operand, got " + x.describe() + " and " +
                       y.describe());
  if (!unify(x, y, L, "umulhi"))
    return SemValue::invalid();
  DType t = x.type.elem;
  if (t.isPointer() || isFloat(t.scalar) || t.scalar == ScalarType::i1)
    return fail(L, "umulhi() needs integer operands, got " + x.type.str());
  return SemValue::ofRuntime(emitMulHiUnsigned(b_, ml, x.value, y.value), x.type);
}

Value emitMulHiUnsigned(OpBuilder &b, Location l, Value x, Value y) {
  auto et = cast<IntegerType>(getElementTypeOrSelf(x.getType()));
  unsigned w = et.getWidth();
  auto like = [&](Type elem) -> Type {
    if (auto rt = dyn_cast<RankedTensorType>(x.getType()))
      return RankedTensorType::get(rt.getShape(), elem);
    return elem;
  };
  auto splatCst = [&](Type t, int64_t v) -> Value {
    auto attr = b.getIntegerAttr(getElementTypeOrSelf(t), v);
    if (auto rt = dyn_cast<RankedTensorType>(t))
      return arith::ConstantOp::create(b, l, DenseElementsAttr::get(rt, attr));
    return arith::ConstantOp::create(b, l, attr);
  };
  if (w < 64) { // widen, multiply, keep the high half (mul.hi on the GPU)
    Type wide = like(b.getIntegerType(2 * w));
    Value p = arith::MulIOp::create(b, l, arith::ExtUIOp::create(b, l, wide, x),
                                    arith::ExtUIOp::create(b, l, wide, y));
    Value hi = arith::ShRUIOp::create(b, l, p, splatCst(wide, w));
    return arith::TruncIOp::create(b, l, x.getType(), hi);
  }
  // 64 bits: schoolbook on 32-bit halves, each partial product exact in 64 bits.
  Type t = x.getType();
  Value s32 = splatCst(t, 32), lo32 = splatCst(t, 0xffffffffLL);
  auto lo = [&](Value v) { return Value(arith::AndIOp::create(b, l, v, lo32)); };
  auto hi = [&](Value v) { return Value(arith::ShRUIOp::create(b, l, v, s32)); };
  auto mul = [&](Value p, Value q) { return Value(arith::MulIOp::create(b, l, p, q)); };
  auto add = [&](Value p, Value q) { return Value(arith::AddIOp::create(b, l, p, q)); };
  Value x0 = lo(x), x1 = hi(x), y0 = lo(y), y1 = hi(y);
  Value p00 = mul(x0, y0), p01 = mul(x0, y1), p10 = mul(x1, y0), p11 = mul(x1, y1);
  Value mid = add(add(hi(p00), lo(p01)), lo(p10)); // < 3 * 2^32: no overflow
  return add(add(add(p11, hi(p01)), hi(p10)), hi(mid));
}

} // namespace tessera::fe::builtins
