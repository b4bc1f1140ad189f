// Builtins written with other builtins, as Triton's standard library writes
// them: sigmoid, softmax and clamp. Each runs the handlers of the builtins it
// is made of (invoke), so it promotes, broadcasts, folds and reports errors
// exactly as they do.
#include "BuiltinCall.h"

namespace tessera::fe::builtins {

SemValue BuiltinCall::invoke(const std::string &other, std::vector<SemValue> pos,
                             std::vector<std::pair<std::string, SemValue>> named) {
  std::vector<Arg> as;
  for (SemValue &v : pos)
    as.push_back(Arg{std::move(v), L, nullptr, true});
  Kws ks;
  for (auto &[n, v] : named)
    ks.push_back({n, Arg{std::move(v), L, nullptr, true}});
  BuiltinCall sub(g, other, call, as, ks);
  return (sub.*handlerFor(other))();
}

// sigmoid(x) = 1 / (1 + exp(-x)), computed in f32 for 16-bit floats and
// integers (as exp is), in x's float type otherwise.
SemValue BuiltinCall::onSigmoid() {
  if (!bind({{"x"}, 1}))
    return SemValue::invalid();
  SemValue x = a[0].value;
  SemValue negX = binary(BinOp::Sub, SemValue::ofFloat(0.0), x, L);
  SemValue e = negX.ok() ? invoke("exp", {negX}) : negX;
  SemValue den = e.ok() ? binary(BinOp::Add, SemValue::ofFloat(1.0), e, L) : e;
  return den.ok() ? binary(BinOp::Div, SemValue::ofFloat(1.0), den, L) : den;
}

// softmax(x, dim=None, keep_dims=False, ieee_rounding=False): exp(x - max)
// over `dim` (Triton's default: axis 0), divided by its sum with fdiv. The
// result has x's shape; keep_dims is accepted for Triton's signature.
SemValue BuiltinCall::onSoftmax() {
  if (!bind({{"x", "dim", "keep_dims", "ieee_rounding"}, 1}) || !requireTile(a[0]))
    return SemValue::invalid();
  const SemValue &x = a[0].value;
  int64_t dim = 0;
  if (!isNone(a[1])) {
    auto d = axisArg(a[1], x.type.shape.size());
    if (!d)
      return SemValue::invalid();
    dim = *d;
  }
  SemValue ieee = isNone(a[3]) ? SemValue::ofBool(false) : a[3].value;
  SemValue m = invoke("max", {x, SemValue::ofInt(dim)}, {{"keep_dims", SemValue::ofBool(true)}});
  SemValue z = m.ok() ? binary(BinOp::Sub, x, m, L) : m;
  SemValue num = z.ok() ? invoke("exp", {z}) : z;
  SemValue den = num.ok() ? invoke("sum", {num, SemValue::ofInt(dim)},
                                   {{"keep_dims", SemValue::ofBool(true)}})
                          : num;
  return den.ok() ? invoke("fdiv", {num, den}, {{"ieee_rounding", ieee}}) : den;
}

// clamp(x, min, max, propagate_nan=False): minimum(maximum(x, min), max),
// whose NaN-ignoring maximum maps a NaN x to min; with propagate_nan=True a
// NaN x stays NaN, as Triton's PropagateNan.ALL.
SemValue BuiltinCall::onClamp() {
  if (!bind({{"x", "min", "max", "propagate_nan"}, 3}))
    return SemValue::invalid();
  bool propagate = false;
  if (!isNone(a[3])) {
    if (a[3].value.kind != SemValue::Bool)
      return fail(a[3].loc, "clamp() propagate_nan must be True or False, got " +
                                a[3].value.describe());
    propagate = a[3].value.b;
  }
  SemValue lo = invoke("maximum", {a[0].value, a[1].value});
  SemValue r = lo.ok() ? invoke("minimum", {lo, a[2].value}) : lo;
  if (!r.ok() || !propagate)
    return r;
  SemValue nan = binary(BinOp::Ne, a[0].value, a[0].value, L);
  return nan.ok() ? invoke("where", {nan, a[0].value, r}) : nan;
}

} // namespace tessera::fe::builtins
