// The grid, construction and shape builtins: one handler per builtin or family
// of builtins (BuiltinCall.h), dispatched by IRGen::callBuiltin (Builtins.cpp).
#include "BuiltinCall.h"

#include "tile/TileDialect.h"

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::fe::builtins {

// program_id, num_programs
SemValue BuiltinCall::onProgramId() {
  if (!bind({{"axis"}, 0}))
    return SemValue::invalid();
  int64_t axis = 0;
  if (a[0].present) {
    auto ax = intArg(a[0], fn, "axis");
    if (!ax)
      return SemValue::invalid();
    axis = *ax;
  }
  if (axis < 0 || axis > 2)
    return fail(a[0].loc, name + "() axis must be 0, 1 or 2, got " + std::to_string(axis));
  TileType t{{ScalarType::i32, 0}, {}};
  Value v = name == "program_id"
                ? Value(tile::ProgramIdOp::create(b_, ml, b_.getI32Type(), int32_t(axis)))
                : Value(tile::NumProgramsOp::create(b_, ml, b_.getI32Type(), int32_t(axis)));
  return SemValue::ofRuntime(v, t);
}

// cluster_size(): the programs of this program's cluster (a run-time i32, 1
// without clusters and in the interpreter).
SemValue BuiltinCall::onClusterSize() {
  if (!bind({{}, 0}))
    return SemValue::invalid();
  Value v = tile::ClusterSizeOp::create(b_, ml, b_.getI32Type());
  return SemValue::ofRuntime(v, TileType{{ScalarType::i32, 0}, {}});
}

SemValue BuiltinCall::onArange() {
  if (!bind({{"start", "end"}, 2}))
    return SemValue::invalid();
  for (const Arg &x : a)
    if (x.value.kind != SemValue::Int)
      return fail(x.loc, "arange() bounds must be constexpr integers, got " + x.value.describe());
  int64_t lo = a[0].value.i, hi = a[1].value.i;
  if (hi <= lo)
    return fail(L, "arange() needs end > start, got arange(" + std::to_string(lo) + ", " +
                       std::to_string(hi) + ")");
  if (lo < INT32_MIN || hi > INT32_MAX)
    return fail(L, "arange() bounds must fit in i32");
  int64_t n = hi - lo;
  if ((n & (n - 1)) != 0)
    return fail(L, "arange() length " + std::to_string(n) + " is not a power of two");
  if (!checkTileShape({n}, L))
    return SemValue::invalid();
  TileType t{{ScalarType::i32, 0}, {n}};
  return SemValue::ofRuntime(tile::MakeRangeOp::create(b_, ml, toMlir(t), int32_t(lo), int32_t(hi)), t);
}

// zeros, full
SemValue BuiltinCall::onZerosOrFull() {
  bool isFull = name == "full";
  if (!bind(isFull ? Signature{{"shape", "value", "dtype"}, 2} : Signature{{"shape", "dtype"}, 1}))
    return SemValue::invalid();
  auto shape = shapeArg(a[0], fn);
  if (!shape)
    return SemValue::invalid();
  const Arg &dt = a[isFull ? 2 : 1];
  SemValue value = isFull ? a[1].value : SemValue::ofInt(0);
  DType t{ScalarType::f32, 0};
  if (!isNone(dt)) {
    auto d = dtypeArg(dt, fn);
    if (!d)
      return SemValue::invalid();
    t = *d;
  } else if (isFull) {
    if (value.isRuntime())
      t = value.type.elem;
    else if (value.kind == SemValue::Int)
      t = DType{ScalarType::i32, 0};
    else if (value.kind == SemValue::Bool)
      t = DType{ScalarType::i1, 0};
  }
  if (isFull && value.isTile())
    return fail(a[1].loc, "full() value must be a scalar, got " + value.describe());
  SemValue s = castTo(value, t, isFull ? a[1].loc : L);
  if (!s.ok())
    return s;
  return broadcastTo(s, *shape, L);
}

SemValue BuiltinCall::onZerosLike() {
  if (!bind({{"x", "dtype"}, 1}) || !requireRuntime(a[0], "needs a tile"))
    return SemValue::invalid();
  DType t = a[0].value.type.elem;
  if (!isNone(a[1])) {
    auto d = dtypeArg(a[1], fn);
    if (!d)
      return SemValue::invalid();
    t = *d;
  }
  SemValue z = castTo(SemValue::ofInt(0), t, L);
  return z.ok() ? broadcastTo(z, a[0].value.type.shape, L) : z;
}

SemValue BuiltinCall::onBroadcastTo() {
  if (!bind({{"x", "shape"}, 2}))
    return SemValue::invalid();
  auto shape = shapeArg(a[1], fn);
  if (!shape)
    return SemValue::invalid();
  return broadcastTo(a[0].value, *shape, a[0].loc);
}

SemValue BuiltinCall::onReshape() {
  if (!bind({{"x", "shape"}, 2}) || !requireRuntime(a[0], "needs a tile"))
    return SemValue::invalid();
  auto shape = shapeArg(a[1], fn);
  if (!shape)
    return SemValue::invalid();
  int64_t have = 1, want = 1;
  for (int64_t d : a[0].value.type.shape)
    have *= d;
  for (int64_t d : *shape)
    want *= d;
  if (have != want)
    return fail(L, "reshape() cannot turn " + shapeStr(a[0].value.type.shape) + " (" +
                       std::to_string(have) + " elements) into " + shapeStr(*shape) + " (" +
                       std::to_string(want) + " elements)");
  SemValue src = a[0].value;
  if (!src.type.isTile())
    return broadcastTo(src, *shape, L);
  TileType t{src.type.elem, *shape};
  return SemValue::ofRuntime(tile::ReshapeOp::create(b_, ml, toMlir(t), src.value), t);
}

// trans(x, order=None) and permute(x, order): order a tuple, or the axes
// given one by one (permute(x, 2, 0, 1)), as Triton takes *dims.
SemValue BuiltinCall::onTrans() {
  if (args.size() > 2 || (args.size() == 2 && args[1].value.kind == SemValue::Int)) {
    std::vector<SemValue> dims;
    for (size_t i = 1; i < args.size(); ++i)
      dims.push_back(args[i].value);
    Arg order{SemValue::ofTuple(std::move(dims)), args[1].loc, args[1].expr, true};
    args.resize(1);
    args.push_back(order);
  }
  if (!bind({{"x", "order"}, name == "permute" ? size_t(2) : size_t(1)}) || !requireTile(a[0]))
    return SemValue::invalid();
  const SemValue &src = a[0].value;
  size_t rank = src.type.shape.size();
  std::vector<int32_t> order;
  if (isNone(a[1])) {
    if (rank != 2)
      return fail(L, "trans() without an order needs a 2-D tile, got " + src.type.str());
    order = {1, 0};
  } else {
    if (a[1].value.kind != SemValue::Tuple)
      return fail(a[1].loc, name + "() order must be a tuple of axes");
    std::vector<bool> seen(rank, false);
    for (const SemValue &d : a[1].value.elems) {
      if (d.kind != SemValue::Int || d.i < 0 || d.i >= int64_t(rank) || seen[size_t(d.i)])
        return fail(a[1].loc, name + "() order must be a permutation of 0.." + std::to_string(rank - 1));
      seen[size_t(d.i)] = true;
      order.push_back(int32_t(d.i));
    }
    if (order.size() != rank)
      return fail(a[1].loc, name + "() order must name all " + std::to_string(rank) + " axes");
  }
  std::vector<int64_t> shape;
  for (int32_t d : order)
    shape.push_back(src.type.shape[size_t(d)]);
  TileType t{src.type.elem, shape};
  return SemValue::ofRuntime(tile::TransOp::create(b_, ml, toMlir(t), src.value,
                                                   b_.getDenseI32ArrayAttr(order)), t);
}

// gather(src, index, axis): Triton's tl.gather (src and index of one rank,
// equal off the axis), and a rank-1 src read as a table by an index of any
// shape. On the GPU src is staged in shared memory once, where it is defined.
SemValue BuiltinCall::onGather() {
  if (!bind({{"src", "index", "axis"}, 2}) || !requireTile(a[0]) || !requireTile(a[1]))
    return SemValue::invalid();
  const SemValue &src = a[0].value, &idx = a[1].value;
  if (idx.type.elem.isPointer() || isFloat(idx.type.elem.scalar))
    return fail(a[1].loc, "gather() indices must be integers, got " + idx.type.str());
  size_t rank = src.type.shape.size();
  int64_t axis = 0;
  if (!isNone(a[2])) {
    auto ax = axisArg(a[2], rank);
    if (!ax)
      return SemValue::invalid();
    axis = *ax;
  }
  if (rank != 1) {
    if (idx.type.shape.size() != rank)
      return fail(L, "gather() of a rank-" + std::to_string(rank) + " tile needs indices of the same rank, got " +
                         idx.type.str());
    for (size_t d = 0; d < rank; ++d)
      if (int64_t(d) != axis && src.type.shape[d] != idx.type.shape[d])
        return fail(L, "gather() src " + src.type.str() + " and indices " + idx.type.str() +
                           " differ in dimension " + std::to_string(d) + ", which is not the axis");
  }
  // The op reads indices as signed: widen unsigned ones (u8 codes 128..255).
  SemValue index = idx;
  if (isUnsigned(idx.type.elem.scalar) && scalarTypeBits(idx.type.elem.scalar) < 32) {
    index = castTo(idx, DType{ScalarType::i32, 0}, a[1].loc);
    if (!index.ok())
      return index;
  }
  TileType t{src.type.elem, idx.type.shape};
  return SemValue::ofRuntime(tile::GatherOp::create(b_, ml, toMlir(t), src.value, index.value,
                                                    b_.getI32IntegerAttr(int32_t(axis))), t);
}

SemValue BuiltinCall::onExpandDims() {
  if (!bind({{"x", "axis"}, 2}) || !requireRuntime(a[0], "needs a tile"))
    return SemValue::invalid();
  SemValue src = a[0].value;
  auto ax = intArg(a[1], fn, "axis");
  if (!ax)
    return SemValue::invalid();
  int64_t rank = int64_t(src.type.shape.size());
  int64_t axis = *ax < 0 ? *ax + rank + 1 : *ax;
  if (axis < 0 || axis > rank)
    return fail(a[1].loc, "axis " + std::to_string(*ax) + " is out of range for expand_dims of a rank-" +
                              std::to_string(rank) + " tile");
  if (!src.type.isTile())
    return broadcastTo(src, {1}, L);
  std::vector<int64_t> shape = src.type.shape;
  shape.insert(shape.begin() + axis, 1);
  if (!checkTileShape(shape, L))
    return SemValue::invalid();
  TileType t{src.type.elem, shape};
  return SemValue::ofRuntime(tile::ExpandDimsOp::create(b_, ml, toMlir(t), src.value,
                                                        b_.getI32IntegerAttr(int32_t(axis))), t);
}

} // namespace tessera::fe::builtins
