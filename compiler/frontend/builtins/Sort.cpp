// Sorting: sort(x, dim, descending) and topk(x, k, dim) as in Triton, and
// argsort (ours), on one tile.sort op that also yields the original
// positions. Ties keep their order, so every back end gives the same result.
#include "BuiltinCall.h"

#include "tile/TileDialect.h"

using namespace mlir;

namespace tessera::fe::builtins {

// The tile.sort of `x` along `dim` (None: the last axis), and that axis, or
// nothing after a diagnostic.
std::optional<std::pair<SemValue, SemValue>> BuiltinCall::sortOf(const SemValue &x, const Arg &dim,
                                                                 bool descending, int64_t &axis) {
  if (x.type.elem.isPointer() || x.type.elem.scalar == ScalarType::i1) {
    fail(a[0].loc, name + "() sorts numbers, got " + x.type.str());
    return std::nullopt;
  }
  axis = int64_t(x.type.shape.size()) - 1;
  if (!isNone(dim)) {
    auto ax = axisArg(dim, x.type.shape.size());
    if (!ax)
      return std::nullopt;
    axis = *ax;
  }
  TileType idxT{{ScalarType::i32, 0}, x.type.shape};
  // 8-bit floats sort as f32 (exact and order-preserving), then round back exactly.
  SemValue keys = isFloat8(x.type.elem.scalar) ? castTo(x, DType{ScalarType::f32, 0}, L) : x;
  if (!keys.ok())
    return std::nullopt;
  auto op = tile::SortOp::create(b_, ml, keys.value.getType(), toMlir(idxT), keys.value,
                                 int32_t(axis), descending, isUnsigned(x.type.elem.scalar));
  SemValue sorted = SemValue::ofRuntime(op.getSorted(), keys.type);
  if (keys.type.elem != x.type.elem)
    sorted = castTo(sorted, x.type.elem, L);
  return std::make_pair(sorted, SemValue::ofRuntime(op.getIndices(), idxT));
}

// sort(x, dim=None, descending=False) and argsort(x, dim=None, descending=False).
SemValue BuiltinCall::onSort() {
  if (!bind({{"x", "dim", "descending"}, 1}) || !requireTile(a[0]))
    return SemValue::invalid();
  std::optional<bool> descending = flagArg(a[2], "descending", false);
  if (!descending)
    return SemValue::invalid();
  int64_t axis;
  auto sorted = sortOf(a[0].value, a[1], *descending, axis);
  if (!sorted)
    return SemValue::invalid();
  return name == "argsort" ? sorted->second : sorted->first;
}

// topk(x, k, dim=None): the k largest elements along dim, largest first
// (k a compile-time power of two, at most the axis' length).
SemValue BuiltinCall::onTopk() {
  if (!bind({{"x", "k", "dim"}, 2}) || !requireTile(a[0]))
    return SemValue::invalid();
  auto k = intArg(a[1], fn, "k");
  if (!k)
    return SemValue::invalid();
  int64_t axis;
  auto sorted = sortOf(a[0].value, a[2], true, axis);
  if (!sorted)
    return SemValue::invalid();
  const SemValue &x = a[0].value;
  int64_t n = x.type.shape[size_t(axis)];
  if (*k < 1 || *k > n || (*k & (*k - 1)))
    return fail(a[1].loc, "topk() k must be a power of two from 1 to " + std::to_string(n) +
                              ", got " + std::to_string(*k));
  if (*k == n)
    return sorted->first;
  // The first k along the axis: a gather of positions 0..k-1.
  std::vector<int64_t> shape = x.type.shape;
  shape[size_t(axis)] = *k;
  TileType r{{ScalarType::i32, 0}, {*k}};
  SemValue pos = SemValue::ofRuntime(tile::MakeRangeOp::create(b_, ml, toMlir(r), 0, int32_t(*k)), r);
  if (shape.size() > 1) {
    std::vector<int64_t> along(shape.size(), 1);
    along[size_t(axis)] = *k;
    TileType at{{ScalarType::i32, 0}, along};
    pos = SemValue::ofRuntime(tile::ReshapeOp::create(b_, ml, toMlir(at), pos.value), at);
    pos = broadcastTo(pos, shape, L);
    if (!pos.ok())
      return pos;
  }
  TileType t{x.type.elem, shape};
  return SemValue::ofRuntime(tile::GatherOp::create(b_, ml, toMlir(t), sorted->first.value, pos.value,
                                                    b_.getI32IntegerAttr(int32_t(axis))),
                             t);
}

} // namespace tessera::fe::builtins
