// Builtins written with other builtins, as Triton's standard library writes
// them: sigmoid, softmax and clamp; and the shape operations flip, join,
// split, interleave and cat, as gathers and selects. Each runs the handlers of the builtins it
// is made of (invoke), so it promotes, broadcasts, folds and reports errors
// exactly as they do.
#include "BuiltinCall.h"

#include <algorithm>

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

namespace {
SemValue shapeTuple(const std::vector<int64_t> &shape) {
  std::vector<SemValue> e;
  for (int64_t d : shape)
    e.push_back(SemValue::ofInt(d));
  return SemValue::ofTuple(std::move(e));
}
} // namespace

// An i32 tile of `shape` whose elements are their coordinate along `axis`.
SemValue BuiltinCall::coordinate(const std::vector<int64_t> &shape, size_t axis) {
  SemValue r = invoke("arange", {SemValue::ofInt(0), SemValue::ofInt(shape[axis])});
  for (size_t d = 0; r.ok() && d < shape.size(); ++d)
    if (d != axis)
      r = invoke("expand_dims", {r, SemValue::ofInt(int64_t(d))});
  return r.ok() ? broadcastTo(r, shape, L) : r;
}

// flip(x, dim=None): x reversed along dim (the last by default), a gather
// at N - 1 - i.
SemValue BuiltinCall::onFlip() {
  if (!bind({{"x", "dim"}, 1}) || !requireTile(a[0]))
    return SemValue::invalid();
  const SemValue &x = a[0].value;
  size_t rank = x.type.shape.size();
  int64_t dim = int64_t(rank) - 1;
  if (!isNone(a[1])) {
    auto d = axisArg(a[1], rank);
    if (!d)
      return SemValue::invalid();
    dim = *d;
  }
  SemValue i = coordinate(x.type.shape, size_t(dim));
  SemValue rev = i.ok() ? binary(BinOp::Sub, SemValue::ofInt(x.type.shape[size_t(dim)] - 1), i, L) : i;
  return rev.ok() ? invoke("gather", {x, rev, SemValue::ofInt(dim)}) : rev;
}

// join(a, b): a and b (broadcast together) side by side in a new minor
// dimension of size 2.
SemValue BuiltinCall::onJoin() {
  if (!bind({{"a", "b"}, 2}))
    return SemValue::invalid();
  SemValue x = a[0].value, y = a[1].value;
  if (!x.isTile() && !y.isTile())
    return fail(L, "join() needs a tile, got " + x.describe() + " and " + y.describe());
  if (!broadcastAll({&x, &y}))
    return SemValue::invalid();
  std::vector<int64_t> shape = x.type.shape;
  SemValue xe = invoke("expand_dims", {x, SemValue::ofInt(int64_t(shape.size()))});
  SemValue ye = invoke("expand_dims", {y, SemValue::ofInt(int64_t(shape.size()))});
  shape.push_back(2);
  if (!xe.ok() || !ye.ok())
    return SemValue::invalid();
  SemValue k = coordinate(shape, shape.size() - 1);
  SemValue first = k.ok() ? binary(BinOp::Eq, k, SemValue::ofInt(0), L) : k;
  return first.ok() ? invoke("where", {first, xe, ye}) : first;
}

// split(x): the two halves of a last dimension of size 2, as a tuple.
SemValue BuiltinCall::onSplit() {
  if (!bind({{"x"}, 1}) || !requireTile(a[0]))
    return SemValue::invalid();
  const SemValue &x = a[0].value;
  std::vector<int64_t> shape = x.type.shape;
  if (shape.back() != 2)
    return fail(L, "split() needs a last dimension of size 2, got " + x.type.str());
  std::vector<int64_t> one = shape, out(shape.begin(), shape.end() - 1);
  one.back() = 1;
  std::vector<SemValue> halves;
  for (int64_t h = 0; h < 2; ++h) {
    SemValue idx = broadcastTo(materialize(SemValue::ofInt(h), L), one, L);
    SemValue g = idx.ok() ? invoke("gather", {x, idx, SemValue::ofInt(int64_t(shape.size()) - 1)}) : idx;
    if (!g.ok())
      return g;
    halves.push_back(out.empty() ? invoke("reshape", {g, shapeTuple({1})})
                                 : invoke("reshape", {g, shapeTuple(out)}));
    if (!halves.back().ok())
      return halves.back();
  }
  return SemValue::ofTuple(std::move(halves));
}

// interleave(a, b): a[..., 0], b[..., 0], a[..., 1], ... along the last dimension.
SemValue BuiltinCall::onInterleave() {
  if (!bind({{"a", "b"}, 2}))
    return SemValue::invalid();
  SemValue j = invoke("join", {a[0].value, a[1].value});
  if (!j.ok())
    return j;
  std::vector<int64_t> shape(j.type.shape.begin(), j.type.shape.end() - 1);
  shape.back() *= 2;
  return invoke("reshape", {j, shapeTuple(shape)});
}

// cat(a, b, can_reorder=False): a then b along dimension 0 (which must
// total a power of two); the order is kept, whatever can_reorder says.
SemValue BuiltinCall::onCat() {
  if (!bind({{"input", "other", "can_reorder"}, 2}) || !requireTile(a[0]) || !requireTile(a[1]))
    return SemValue::invalid();
  SemValue x = a[0].value, y = a[1].value;
  if (x.type.shape.size() != y.type.shape.size() ||
      !std::equal(x.type.shape.begin() + 1, x.type.shape.end(), y.type.shape.begin() + 1))
    return fail(L, "cat() needs tiles that differ only in dimension 0, got " + x.type.str() +
                       " and " + y.type.str());
  int64_t na = x.type.shape[0], nb = y.type.shape[0];
  std::vector<int64_t> shape = x.type.shape;
  shape[0] = na + nb;
  if ((shape[0] & (shape[0] - 1)) != 0)
    return fail(L, "cat() gives " + std::to_string(shape[0]) +
                       " rows, which is not a power of two (tile sizes are)");
  SemValue i = coordinate(shape, 0);
  if (!i.ok())
    return i;
  SemValue ia = invoke("minimum", {i, SemValue::ofInt(na - 1)});
  SemValue ib0 = binary(BinOp::Sub, i, SemValue::ofInt(na), L);
  SemValue ib = ib0.ok() ? invoke("maximum", {ib0, SemValue::ofInt(0)}) : ib0;
  SemValue ga = ia.ok() ? invoke("gather", {x, ia, SemValue::ofInt(0)}) : ia;
  SemValue gb = ib.ok() ? invoke("gather", {y, ib, SemValue::ofInt(0)}) : ib;
  SemValue first = binary(BinOp::Lt, i, SemValue::ofInt(na), L);
  if (!ga.ok() || !gb.ok() || !first.ok())
    return SemValue::invalid();
  return invoke("where", {first, ga, gb});
}

} // namespace tessera::fe::builtins
