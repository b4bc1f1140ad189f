// Block pointers and tensor descriptors, Triton's two ways of naming a
// rectangular block of a strided N-D tensor:
//   make_block_ptr(base, shape, strides, offsets, block_shape, order)
//   advance(block_ptr, offsets)
//   load(block_ptr, boundary_check=(0, 1), padding_option="zero")
//   store(block_ptr, value, boundary_check=(0, 1))
//   make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero")
//   desc.load([o0, o1]) / desc.store([o0, o1], value)
//   (load_tensor_descriptor / store_tensor_descriptor)
// Neither is an IR type. The front end keeps them as compile-time records of
// run-time numbers (SemValue::BlockPtr), and a load or store through one
// becomes the pointer tile and mask a Triton user would write by hand:
//   idx_d  = offset_d + arange(0, B_d), expanded along dimension d
//   ptrs   = base + sum_d idx_d * stride_d
//   mask_d = 0 <= idx_d < shape_d  (the checked dimensions; a descriptor checks all)
// so the interpreter, axis analysis, the software pipeliner and the TMA
// analysis (a dot loop's operands on sm_90a) see the familiar form. A loop
// carries a block pointer's numbers one by one (Loops.cpp), and
// tessera-substitute-induction-variables turns its advancing offsets back
// into functions of the induction variable.
#include "BuiltinCall.h"

#include <limits>

namespace tessera::fe::builtins {

namespace {
const DType kI32{ScalarType::i32, 0};
} // namespace

// A tuple of `rank` run-time or constexpr integer scalars (shape, strides,
// offsets), or nullopt after an error. `rank` 0 takes the tuple's length.
std::optional<std::vector<SemValue>> BuiltinCall::integerTuple(const Arg &x, const char *what,
                                                               size_t rank) {
  if (x.value.kind != SemValue::Tuple) {
    fail(x.loc, name + "() " + what + " must be a tuple of integers, got " + x.value.describe());
    return std::nullopt;
  }
  const std::vector<SemValue> &e = x.value.elems;
  if (rank && e.size() != rank) {
    fail(x.loc, name + "() " + what + " has " + std::to_string(e.size()) + " entr" +
                    (e.size() == 1 ? "y" : "ies") + " but the block has rank " +
                    std::to_string(rank));
    return std::nullopt;
  }
  for (const SemValue &v : e)
    if (!isIntegerValue(v) || v.isTile()) {
      fail(x.loc, name + "() " + what + " must hold integer scalars, got " + v.describe() +
                      " inside it");
      return std::nullopt;
    }
  std::vector<SemValue> out;
  for (const SemValue &v : e)
    out.push_back(v.kind == SemValue::Bool ? SemValue::ofInt(v.b) : v);
  return out;
}

// Offsets are i32, as Triton keeps them; constants stay constants.
SemValue BuiltinCall::offsetValue(const SemValue &v) {
  if (v.isRuntime() && v.type.elem != kI32)
    return castTo(v, kI32, L);
  return v;
}

// make_block_ptr(base, shape, strides, offsets, block_shape, order)
SemValue BuiltinCall::onMakeBlockPtr() {
  if (!bind({{"base", "shape", "strides", "offsets", "block_shape", "order"}, 6}))
    return SemValue::invalid();
  return makeBlock(/*descriptor=*/false);
}

// make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero")
SemValue BuiltinCall::onMakeTensorDescriptor() {
  if (!bind({{"base", "shape", "strides", "block_shape", "padding_option"}, 4}))
    return SemValue::invalid();
  return makeBlock(/*descriptor=*/true);
}

SemValue BuiltinCall::makeBlock(bool descriptor) {
  const Arg &base = a[0];
  if (!base.value.isRuntime() || base.value.isTile() || !base.value.type.elem.isPointer())
    return fail(base.loc, name + "() base must be a pointer scalar, got " + base.value.describe());
  if (base.value.type.elem.pointee().isPointer())
    return fail(base.loc, name + "() base must point to numbers, got " + base.value.describe());
  auto block = shapeArg(a[descriptor ? 3 : 4], fn);
  if (!block)
    return SemValue::invalid();
  size_t rank = block->size();
  auto shape = integerTuple(a[1], "shape", rank);
  auto strides = shape ? integerTuple(a[2], "strides", rank) : std::nullopt;
  if (!strides)
    return SemValue::invalid();
  SemValue r;
  r.kind = SemValue::BlockPtr;
  r.block = *block;
  r.descriptor = descriptor;
  r.elems.push_back(base.value);
  r.elems.insert(r.elems.end(), shape->begin(), shape->end());
  r.elems.insert(r.elems.end(), strides->begin(), strides->end());
  if (descriptor) {
    auto pad = paddingArg(a[4]);
    if (!pad)
      return SemValue::invalid();
    r.s = pad->empty() ? "zero" : *pad;
    return r;
  }
  auto offsets = offsetsArg(a[3], rank);
  if (!offsets)
    return SemValue::invalid();
  r.elems.insert(r.elems.end(), offsets->begin(), offsets->end());
  // order names the dimensions from fastest to slowest varying in memory: a
  // layout hint in Triton, checked here and not needed (the compiler reads
  // contiguity from the strides).
  const Arg &order = a[5];
  std::vector<bool> seen(rank, false);
  bool ok = order.value.kind == SemValue::Tuple && order.value.elems.size() == rank;
  for (size_t i = 0; ok && i < rank; ++i) {
    const SemValue &d = order.value.elems[i];
    ok = d.kind == SemValue::Int && d.i >= 0 && d.i < int64_t(rank) && !seen[size_t(d.i)];
    if (ok)
      seen[size_t(d.i)] = true;
  }
  if (!ok)
    return fail(order.loc, "make_block_ptr() order must be a permutation of the block's " +
                               std::to_string(rank) + " dimensions, such as (1, 0), got " +
                               order.value.describe());
  return r;
}

// advance(base, offsets): the block pointer moved by `offsets` elements.
SemValue BuiltinCall::onAdvance() {
  if (!bind({{"base", "offsets"}, 2}))
    return SemValue::invalid();
  const SemValue &bp = a[0].value;
  if (bp.kind != SemValue::BlockPtr || bp.descriptor)
    return fail(a[0].loc, "advance() needs a block pointer from make_block_ptr(), got " +
                              bp.describe());
  auto delta = integerTuple(a[1], "offsets", bp.rank());
  if (!delta)
    return SemValue::invalid();
  SemValue r = bp;
  for (size_t d = 0; d < bp.rank(); ++d) {
    SemValue &o = r.elems[1 + 2 * bp.rank() + d];
    o = binary(BinOp::Add, o, (*delta)[d], a[1].loc);
    o = o.ok() ? offsetValue(o) : o;
    if (!o.ok())
      return SemValue::invalid();
  }
  return r;
}

// padding_option: "zero" or "nan" ("" when absent).
std::optional<std::string> BuiltinCall::paddingArg(const Arg &x) {
  if (isNone(x))
    return std::string();
  if (x.value.kind != SemValue::Str ||
      !(x.value.s.empty() || x.value.s == "zero" || x.value.s == "nan")) {
    fail(x.loc, name + "() padding_option must be \"zero\" or \"nan\", got " + x.value.describe());
    return std::nullopt;
  }
  return x.value.s;
}

// boundary_check: a dimension of the block, or a tuple of them (negative ones count from the end).
std::optional<std::vector<bool>> BuiltinCall::boundaryCheckArg(const Arg &x, size_t rank) {
  std::vector<bool> checked(rank, false);
  if (isNone(x))
    return checked;
  std::vector<SemValue> dims =
      x.value.kind == SemValue::Tuple ? x.value.elems : std::vector<SemValue>{x.value};
  for (const SemValue &d : dims) {
    if (d.kind != SemValue::Int || d.i < -int64_t(rank) || d.i >= int64_t(rank)) {
      fail(x.loc, name + "() boundary_check must name dimensions of the block (0 to " +
                      std::to_string(rank - 1) + "), got " + d.describe());
      return std::nullopt;
    }
    checked[size_t(d.i < 0 ? d.i + int64_t(rank) : d.i)] = true;
  }
  return checked;
}

// The pointer tile of the block of `bp` at `offsets`, and the mask of its
// elements inside [0, shape) along the `checked` dimensions (invalid when
// none is checked).
bool BuiltinCall::blockAddresses(const SemValue &bp, const std::vector<SemValue> &offsets,
                                 const std::vector<bool> &checked, SemValue &ptrs,
                                 SemValue &mask) {
  size_t rank = bp.rank();
  SemValue sum;
  mask = SemValue::invalid();
  for (size_t d = 0; d < rank; ++d) {
    SemValue idx = invoke("arange", {SemValue::ofInt(0), SemValue::ofInt(bp.block[d])});
    idx = idx.ok() ? binary(BinOp::Add, offsets[d], idx, L) : idx;
    for (size_t e = 0; idx.ok() && e < rank; ++e)
      if (e != d) // idx[:, None] for d = 0 of two, idx[None, :] for d = 1
        idx = invoke("expand_dims", {idx, SemValue::ofInt(int64_t(e))});
    SemValue term = idx.ok() ? binary(BinOp::Mul, idx, bp.bpStride(d), L) : idx;
    sum = !term.ok() || !sum.ok() ? term : binary(BinOp::Add, sum, term, L);
    if (!sum.ok())
      return false;
    if (!checked[d])
      continue;
    SemValue lo = binary(BinOp::Ge, idx, SemValue::ofInt(0), L);
    SemValue hi = lo.ok() ? binary(BinOp::Lt, idx, bp.bpShape(d), L) : lo;
    SemValue in = hi.ok() ? binary(BinOp::BitAnd, lo, hi, L) : hi;
    mask = !in.ok() || !mask.ok() ? in : binary(BinOp::BitAnd, mask, in, L);
    if (!in.ok() || !mask.ok())
      return false;
  }
  ptrs = binary(BinOp::Add, bp.bpBase(), sum, L);
  if (!ptrs.ok())
    return false;
  // A block of one element along some dimensions still has the block's shape.
  if (ptrs.type.shape != bp.block) {
    ptrs = broadcastTo(ptrs, bp.block, L);
    if (!ptrs.ok())
      return false;
  }
  if (mask.ok() && mask.type.shape != bp.block)
    mask = broadcastTo(mask, bp.block, L);
  return ptrs.ok();
}

// load(block_ptr, boundary_check, padding_option, cache_modifier,
// eviction_policy, volatile), the arguments at a[] of onLoad's signature.
SemValue BuiltinCall::loadBlock(const SemValue &bp, const std::vector<SemValue> &offsets,
                                const std::vector<bool> &checked, const std::string &padding,
                                bool isVolatile, mlir::StringAttr cop, mlir::StringAttr evict) {
  SemValue ptrs, mask;
  if (!blockAddresses(bp, offsets, checked, ptrs, mask))
    return SemValue::invalid();
  DType elem = bp.bpBase().type.elem.pointee();
  TileType t{elem, bp.block};
  SemValue other;
  if (mask.ok()) {
    if (padding == "nan" && !isFloat(elem.scalar))
      return fail(L, name + "() padding_option \"nan\" needs floating-point elements, got " +
                         elem.str());
    other = padding == "nan"
                ? g.constant(elem, bp.block, std::numeric_limits<double>::quiet_NaN(), 0, L)
                : g.constant(elem, bp.block, 0.0, 0, L);
    if (!other.ok())
      return other;
  }
  auto op = tile::LoadOp::create(b_, ml, toMlir(t), ptrs.value, mask.ok() ? mask.value : mlir::Value(),
                                 other.ok() ? other.value : mlir::Value(), isVolatile, cop, evict);
  return SemValue::ofRuntime(op.getResult(), t);
}

SemValue BuiltinCall::storeBlock(const SemValue &bp, const std::vector<SemValue> &offsets,
                                 const std::vector<bool> &checked, const SemValue &value,
                                 Loc valueLoc, mlir::StringAttr cop, mlir::StringAttr evict) {
  SemValue ptrs, mask;
  if (!blockAddresses(bp, offsets, checked, ptrs, mask))
    return SemValue::invalid();
  SemValue v = castTo(value, bp.bpBase().type.elem.pointee(), valueLoc);
  if (!v.ok())
    return v;
  if (v.isTile() && v.type.shape != bp.block)
    return fail(valueLoc, name + "() value is " + v.type.str() + " but the block is " +
                              shapeStr(bp.block));
  v = broadcastTo(v, bp.block, valueLoc);
  if (!v.ok())
    return v;
  tile::StoreOp::create(b_, ml, ptrs.value, v.value, mask.ok() ? mask.value : mlir::Value(), cop,
                        evict);
  return SemValue::none();
}

// The offsets of a block pointer.
std::vector<SemValue> BuiltinCall::blockOffsets(const SemValue &bp) {
  return std::vector<SemValue>(bp.elems.begin() + 1 + 2 * bp.rank(), bp.elems.end());
}

// An offsets argument (make_block_ptr, a descriptor's load or store) of
// `rank` entries, as i32 (offsetValue).
std::optional<std::vector<SemValue>> BuiltinCall::offsetsArg(const Arg &offsets, size_t rank) {
  auto o = integerTuple(offsets, "offsets", rank);
  if (!o)
    return std::nullopt;
  for (SemValue &v : *o) {
    v = offsetValue(v);
    if (!v.ok())
      return std::nullopt;
  }
  return o;
}

bool BuiltinCall::requireDescriptor(const Arg &x) {
  if (x.value.kind == SemValue::BlockPtr && x.value.descriptor)
    return true;
  fail(x.loc, name + "() needs a tensor descriptor from make_tensor_descriptor(), got " +
                  x.value.describe());
  return false;
}

// load_tensor_descriptor(desc, offsets), also written desc.load(offsets):
// every dimension is checked, and what lies outside reads as the padding.
SemValue BuiltinCall::onLoadTensorDescriptor() {
  if (!bind({{"desc", "offsets"}, 2}) || !requireDescriptor(a[0]))
    return SemValue::invalid();
  const SemValue &d = a[0].value;
  auto offsets = offsetsArg(a[1], d.rank());
  if (!offsets)
    return SemValue::invalid();
  return loadBlock(d, *offsets, std::vector<bool>(d.rank(), true), d.s, false, {}, {});
}

// store_tensor_descriptor(desc, offsets, value), also desc.store(offsets,
// value): what lies outside the tensor is not written.
SemValue BuiltinCall::onStoreTensorDescriptor() {
  if (!bind({{"desc", "offsets", "value"}, 3}) || !requireDescriptor(a[0]))
    return SemValue::invalid();
  const SemValue &d = a[0].value;
  auto offsets = offsetsArg(a[1], d.rank());
  if (!offsets)
    return SemValue::invalid();
  return storeBlock(d, *offsets, std::vector<bool>(d.rank(), true), a[2].value, a[2].loc, {}, {});
}

} // namespace tessera::fe::builtins
