// The elementwise math builtins: one handler per builtin or family of builtins
// (BuiltinCall.h), dispatched by IRGen::callBuiltin (Builtins.cpp).
#include "BuiltinCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

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

} // namespace tessera::fe::builtins
