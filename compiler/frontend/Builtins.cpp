// The builtin functions of the language: argument binding, type checks with
// clear messages, and the IR each one emits.
#include "IRGen.h"

#include "tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cctype>
#include <cmath>
#include <functional>

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::fe {

namespace {
using Arg = IRGen::Arg;
using Kws = std::vector<std::pair<std::string, Arg>>;

struct Signature {
  std::vector<const char *> params;
  size_t required;
  bool variadic = false; // extra positional arguments allowed (device_print)
};

// Binds positional and keyword arguments to `sig.params`; reports errors Python-style.
bool bindArgs(IRGen &g, const std::string &fn, const Signature &sig, const Expr &call,
              std::vector<Arg> &args, Kws &kws, std::vector<Arg> &out) {
  size_t n = sig.params.size();
  out.assign(n, Arg{});
  if (!sig.variadic && args.size() > n) {
    std::string range = sig.required == n ? std::to_string(n)
                                          : std::to_string(sig.required) + " to " + std::to_string(n);
    g.fail(args[n].loc, fn + "() takes " + range + " argument" + (n == 1 ? "" : "s") + " but " +
                            std::to_string(args.size()) + " were given");
    return false;
  }
  for (size_t i = 0; i < args.size() && i < n; ++i)
    out[i] = args[i];
  for (auto &[name, arg] : kws) {
    size_t i = 0;
    while (i < n && name != sig.params[i])
      ++i;
    if (i == n) {
      g.fail(arg.loc, fn + "() got an unexpected keyword argument '" + name + "'");
      return false;
    }
    if (out[i].present) {
      g.fail(arg.loc, fn + "() got multiple values for argument '" + name + "'");
      return false;
    }
    out[i] = arg;
  }
  for (size_t i = 0; i < sig.required; ++i)
    if (!out[i].present) {
      g.fail(call.loc, fn + "() missing required argument '" + std::string(sig.params[i]) + "'");
      return false;
    }
  return true;
}

bool isNone(const Arg &a) { return !a.present || a.value.kind == SemValue::None; }

bool isIntegerValue(const SemValue &v) {
  return v.kind == SemValue::Int || v.kind == SemValue::Bool ||
         (v.isRuntime() && !v.type.elem.isPointer() && !isFloat(v.type.elem.scalar));
}
} // namespace

std::optional<int64_t> IRGen::intArg(const Arg &a, const char *fn, const char *what) {
  if (a.value.kind == SemValue::Int)
    return a.value.i;
  if (a.value.kind == SemValue::Bool)
    return int64_t(a.value.b);
  fail(a.loc, std::string(fn) + "() " + what + " must be a constexpr integer, got " +
                  a.value.describe());
  return std::nullopt;
}

std::optional<DType> IRGen::dtypeArg(const Arg &a, const char *fn) {
  if (a.value.kind == SemValue::DTypeV)
    return a.value.dtype;
  fail(a.loc, std::string(fn) + "() expects a type such as f32, got " + a.value.describe());
  return std::nullopt;
}

std::optional<std::vector<int64_t>> IRGen::shapeArg(const Arg &a, const char *fn) {
  std::vector<int64_t> shape;
  if (a.value.kind == SemValue::Int) {
    shape.push_back(a.value.i);
  } else if (a.value.kind == SemValue::Tuple) {
    for (const SemValue &d : a.value.elems) {
      if (d.kind != SemValue::Int) {
        fail(a.loc, std::string(fn) + "() shape must be a tuple of constexpr integers, got " +
                        d.describe() + " inside it");
        return std::nullopt;
      }
      shape.push_back(d.i);
    }
  } else {
    fail(a.loc, std::string(fn) + "() shape must be a constexpr integer or tuple, got " +
                    a.value.describe());
    return std::nullopt;
  }
  if (shape.empty()) {
    fail(a.loc, std::string(fn) + "() shape must not be empty");
    return std::nullopt;
  }
  if (!checkTileShape(shape, a.loc))
    return std::nullopt;
  return shape;
}

SemValue IRGen::callBuiltin(const std::string &name, const Expr &call, std::vector<Arg> &args,
                            Kws &kws) {
  std::vector<Arg> a;
  Loc L = call.loc;
  Location ml = loc(L);
  const char *fn = name.c_str();
  auto bind = [&](Signature sig) { return bindArgs(*this, name, sig, call, args, kws, a); };
  auto requireRuntime = [&](const Arg &x, const char *what) -> bool {
    if (x.value.isRuntime())
      return true;
    fail(x.loc, name + "() " + what + ", got " + x.value.describe());
    return false;
  };
  auto requireTile = [&](const Arg &x) -> bool {
    if (x.value.isTile())
      return true;
    fail(x.loc, name + "() needs a tile, got " + x.value.describe());
    return false;
  };
  auto axisArg = [&](const Arg &x, size_t rank) -> std::optional<int64_t> {
    auto ax = intArg(x, fn, "axis");
    if (!ax)
      return std::nullopt;
    int64_t v = *ax < 0 ? *ax + int64_t(rank) : *ax;
    if (v < 0 || v >= int64_t(rank)) {
      fail(x.loc, "axis " + std::to_string(*ax) + " is out of range for a tile of rank " +
                      std::to_string(rank));
      return std::nullopt;
    }
    return v;
  };

  // ---- grid ---------------------------------------------------------------
  if (name == "program_id" || name == "num_programs") {
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

  // ---- construction --------------------------------------------------------
  if (name == "arange") {
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
  if (name == "zeros" || name == "full") {
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
  if (name == "zeros_like") {
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
  if (name == "broadcast_to") {
    if (!bind({{"x", "shape"}, 2}))
      return SemValue::invalid();
    auto shape = shapeArg(a[1], fn);
    if (!shape)
      return SemValue::invalid();
    return broadcastTo(a[0].value, *shape, a[0].loc);
  }
  if (name == "reshape") {
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
  if (name == "trans") {
    if (!bind({{"x", "order"}, 1}) || !requireTile(a[0]))
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
        return fail(a[1].loc, "trans() order must be a tuple of axes");
      std::vector<bool> seen(rank, false);
      for (const SemValue &d : a[1].value.elems) {
        if (d.kind != SemValue::Int || d.i < 0 || d.i >= int64_t(rank) || seen[size_t(d.i)])
          return fail(a[1].loc, "trans() order must be a permutation of 0.." + std::to_string(rank - 1));
        seen[size_t(d.i)] = true;
        order.push_back(int32_t(d.i));
      }
      if (order.size() != rank)
        return fail(a[1].loc, "trans() order must name all " + std::to_string(rank) + " axes");
    }
    std::vector<int64_t> shape;
    for (int32_t d : order)
      shape.push_back(src.type.shape[size_t(d)]);
    TileType t{src.type.elem, shape};
    return SemValue::ofRuntime(tile::TransOp::create(b_, ml, toMlir(t), src.value,
                                                     b_.getDenseI32ArrayAttr(order)), t);
  }
  if (name == "expand_dims") {
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

  // ---- memory ---------------------------------------------------------------
  auto pointerArg = [&](const Arg &x) -> bool {
    if (x.value.isRuntime() && x.value.type.elem.isPointer())
      return true;
    fail(x.loc, name + "() needs a pointer or a tile of pointers, got " + x.value.describe());
    return false;
  };
  auto maskArg = [&](const Arg &x, SemValue &out) -> bool {
    const SemValue &m = x.value;
    bool ok = m.kind == SemValue::Bool ||
              (m.isRuntime() && m.type.elem == DType{ScalarType::i1, 0});
    if (!ok) {
      fail(x.loc, name + "() mask must be a boolean tile or scalar, got " + m.describe());
      return false;
    }
    out = m.kind == SemValue::Bool ? materialize(m, x.loc) : m;
    return out.ok();
  };
  // Broadcasts every present value in `vals` to their common shape.
  auto broadcastAll = [&](std::vector<SemValue *> vals) -> bool {
    std::vector<int64_t> shape;
    for (SemValue *v : vals) {
      auto s = broadcastShapes(shape, v->isRuntime() ? v->type.shape : std::vector<int64_t>{}, L);
      if (!s)
        return false;
      shape = *s;
    }
    for (SemValue *v : vals) {
      *v = broadcastTo(*v, shape, L);
      if (!v->ok())
        return false;
    }
    return true;
  };

  if (name == "load") {
    if (!bind({{"ptr", "mask", "other", "volatile"}, 1}) || !pointerArg(a[0]))
      return SemValue::invalid();
    SemValue ptr = a[0].value, mask, other;
    std::vector<SemValue *> vals{&ptr};
    if (!isNone(a[1])) {
      if (!maskArg(a[1], mask))
        return SemValue::invalid();
      vals.push_back(&mask);
    }
    if (!isNone(a[2])) {
      if (isNone(a[1]))
        return fail(a[2].loc, "load() 'other' needs a 'mask' (it fills the masked-off lanes)");
      other = castTo(a[2].value, ptr.type.elem.pointee(), a[2].loc);
      if (!other.ok())
        return other;
      vals.push_back(&other);
    }
    bool isVolatile = false;
    if (a[3].present) {
      if (a[3].value.kind != SemValue::Bool)
        return fail(a[3].loc, "load() 'volatile' must be True or False");
      isVolatile = a[3].value.b;
    }
    if (!broadcastAll(vals))
      return SemValue::invalid();
    TileType t{ptr.type.elem.pointee(), ptr.type.shape};
    auto op = tile::LoadOp::create(b_, ml, toMlir(t), ptr.value, mask.ok() ? mask.value : Value(),
                                   other.ok() ? other.value : Value(), isVolatile);
    return SemValue::ofRuntime(op.getResult(), t);
  }
  if (name == "store") {
    if (!bind({{"ptr", "value", "mask"}, 2}) || !pointerArg(a[0]))
      return SemValue::invalid();
    SemValue ptr = a[0].value, mask;
    SemValue value = castTo(a[1].value, ptr.type.elem.pointee(), a[1].loc);
    if (!value.ok())
      return value;
    std::vector<SemValue *> vals{&ptr, &value};
    if (!isNone(a[2])) {
      if (!maskArg(a[2], mask))
        return SemValue::invalid();
      vals.push_back(&mask);
    }
    if (!broadcastAll(vals))
      return SemValue::invalid();
    tile::StoreOp::create(b_, ml, ptr.value, value.value, mask.ok() ? mask.value : Value());
    return SemValue::none();
  }
  if (name.rfind("atomic_", 0) == 0 && name != "atomic_cas") {
    if (!bind({{"ptr", "val", "mask"}, 2}) || !pointerArg(a[0]))
      return SemValue::invalid();
    std::string k = name.substr(7);
    tile::RMWKind kind = k == "add" ? tile::RMWKind::add
                         : k == "max" ? tile::RMWKind::max
                         : k == "min" ? tile::RMWKind::min
                         : k == "and" ? tile::RMWKind::and_
                         : k == "or"  ? tile::RMWKind::or_
                         : k == "xor" ? tile::RMWKind::xor_
                                      : tile::RMWKind::xchg;
    SemValue ptr = a[0].value, mask;
    DType elem = ptr.type.elem.pointee();
    if (elem.isPointer() || scalarTypeBits(elem.scalar) < 16)
      return fail(a[0].loc, name + "() on " + elem.str() +
                                " elements is not supported; atomics need 16-, 32- or 64-bit numbers");
    bool bitwise = k == "and" || k == "or" || k == "xor";
    if (bitwise && isFloat(elem.scalar))
      return fail(a[0].loc, name + "() needs integer elements, got " + elem.str());
    SemValue value = castTo(a[1].value, elem, a[1].loc);
    if (!value.ok())
      return value;
    std::vector<SemValue *> vals{&ptr, &value};
    if (!isNone(a[2])) {
      if (!maskArg(a[2], mask))
        return SemValue::invalid();
      vals.push_back(&mask);
    }
    if (!broadcastAll(vals))
      return SemValue::invalid();
    auto op = tile::AtomicRMWOp::create(b_, ml, value.value.getType(), kind, ptr.value,
                                        value.value, mask.ok() ? mask.value : Value());
    return SemValue::ofRuntime(op.getResult(), value.type);
  }
  if (name == "atomic_cas") {
    if (!bind({{"ptr", "cmp", "val"}, 3}) || !pointerArg(a[0]))
      return SemValue::invalid();
    SemValue ptr = a[0].value;
    DType elem = ptr.type.elem.pointee();
    if (elem.isPointer() || scalarTypeBits(elem.scalar) < 32)
      return fail(a[0].loc, "atomic_cas() needs 32- or 64-bit elements, got " + elem.str());
    SemValue cmp = castTo(a[1].value, elem, a[1].loc);
    SemValue val = cmp.ok() ? castTo(a[2].value, elem, a[2].loc) : cmp;
    if (!val.ok() || !broadcastAll({&ptr, &cmp, &val}))
      return SemValue::invalid();
    auto op = tile::AtomicCASOp::create(b_, ml, val.value.getType(), ptr.value, cmp.value, val.value);
    return SemValue::ofRuntime(op.getResult(), val.type);
  }

  // ---- dot ---------------------------------------------------------------
  if (name == "dot") {
    if (!bind({{"a", "b", "acc", "input_precision"}, 2}))
      return SemValue::invalid();
    for (int k = 0; k < 2; ++k)
      if (!a[k].value.isTile() || a[k].value.type.shape.size() != 2)
        return fail(a[k].loc, std::string("dot() operand ") + (k ? "b" : "a") +
                                  " must be a 2-D tile, got " + a[k].value.describe());
    SemValue x = a[0].value, y = a[1].value;
    auto &xs = x.type.shape, &ys = y.type.shape;
    if (xs[1] != ys[0])
      return fail(L, "dot() inner dimensions differ: a is " + std::to_string(xs[0]) + "x" +
                         std::to_string(xs[1]) + ", b is " + std::to_string(ys[0]) + "x" +
                         std::to_string(ys[1]));
    for (int64_t d : {xs[0], xs[1], ys[1]})
      if (d < 16)
        return fail(L, "dot() needs every dimension to be at least 16, got a " +
                           std::to_string(xs[0]) + "x" + std::to_string(xs[1]) + " by " +
                           std::to_string(ys[0]) + "x" + std::to_string(ys[1]) + " product");
    DType ea = x.type.elem, eb = y.type.elem;
    if (ea != eb)
      return fail(L, "dot() operands must have the same element type, got " + ea.str() +
                         " and " + eb.str() + "; convert one with .to()");
    DType accT;
    switch (ea.isPointer() ? ScalarType::i1 : ea.scalar) {
    case ScalarType::f32: case ScalarType::f16: case ScalarType::bf16:
      accT = DType{ScalarType::f32, 0}; break;
    case ScalarType::f64: accT = DType{ScalarType::f64, 0}; break;
    case ScalarType::i8: accT = DType{ScalarType::i32, 0}; break;
    default:
      return fail(L, "dot() supports f32, f16, bf16, f64 and i8 operands, got " + ea.str());
    }
    SemValue acc;
    if (isNone(a[2])) {
      acc = broadcastTo(castTo(SemValue::ofInt(0), accT, L), {xs[0], ys[1]}, L);
    } else {
      acc = a[2].value;
      if (!acc.isTile() || acc.type.shape != std::vector<int64_t>{xs[0], ys[1]})
        return fail(a[2].loc, "dot() accumulator must be a " + std::to_string(xs[0]) + "x" +
                                  std::to_string(ys[1]) + " tile, got " + acc.describe());
      bool okAcc = acc.type.elem == accT ||
                   (ea.scalar == ScalarType::f16 && acc.type.elem == DType{ScalarType::f16, 0});
      if (!okAcc)
        return fail(a[2].loc, "dot() of " + ea.str() + " operands accumulates in " + accT.str() +
                                  ", got an accumulator of " + acc.type.elem.str());
    }
    if (!acc.ok())
      return acc;
    tile::InputPrecision prec = tile::InputPrecision::tf32;
    if (a[3].present) {
      if (a[3].value.kind != SemValue::Str ||
          (a[3].value.s != "tf32" && a[3].value.s != "ieee"))
        return fail(a[3].loc, "dot() input_precision must be \"tf32\" or \"ieee\"");
      if (a[3].value.s == "ieee")
        prec = tile::InputPrecision::ieee;
    }
    auto op = tile::DotOp::create(b_, ml, acc.value.getType(), x.value, y.value, acc.value,
                                  tile::InputPrecisionAttr::get(&ctx_, prec));
    return SemValue::ofRuntime(op.getResult(), acc.type);
  }

  // ---- reductions ------------------------------------------------------------
  bool minmaxPython = (name == "max" || name == "min") && args.size() >= 2 &&
                      !args[0].value.isRuntime() && !args[1].value.isRuntime();
  if (minmaxPython) { // max(a, b) on compile-time numbers
    if (!bind({{"a", "b"}, 2}))
      return SemValue::invalid();
    SemValue lt = binary(BinOp::Lt, a[0].value, a[1].value, L);
    if (!lt.ok())
      return lt;
    bool pickB = name == "max" ? lt.b : !lt.b;
    return pickB ? a[1].value : a[0].value;
  }
  if (name == "sum" || name == "max" || name == "min" || name == "argmax" || name == "argmin") {
    bool isArg = name == "argmax" || name == "argmin";
    if (!bind({{"x", "axis", "keep_dims"}, isArg ? size_t(2) : size_t(1)}) || !requireTile(a[0]))
      return SemValue::invalid();
    SemValue x = a[0].value;
    if (x.type.elem.isPointer())
      return fail(a[0].loc, name + "() cannot reduce pointers");
    bool keep = false;
    if (a[2].present) {
      if (a[2].value.kind != SemValue::Bool)
        return fail(a[2].loc, name + "() keep_dims must be True or False");
      keep = a[2].value.b;
    }
    std::vector<int64_t> origShape = x.type.shape;
    int64_t axis;
    bool all = isNone(a[1]);
    if (all) {
      int64_t n = 1;
      for (int64_t d : origShape)
        n *= d;
      if (origShape.size() != 1) {
        TileType flat{x.type.elem, {n}};
        x = SemValue::ofRuntime(tile::ReshapeOp::create(b_, ml, toMlir(flat), x.value), flat);
      }
      axis = 0;
    } else {
      auto ax = axisArg(a[1], origShape.size());
      if (!ax)
        return SemValue::invalid();
      axis = *ax;
    }
    DType et = x.type.elem;
    bool fp = isFloat(et.scalar), uns = isUnsigned(et.scalar);
    if (name == "sum") { // small types accumulate in 32 bits, as users expect
      DType acc = et;
      if (!fp && scalarTypeBits(et.scalar) < 32)
        acc = DType{ScalarType::i32, 0};
      else if (fp && scalarTypeBits(et.scalar) < 32)
        acc = DType{ScalarType::f32, 0};
      x = castTo(x, acc, L);
      if (!x.ok())
        return x;
      et = acc;
      fp = isFloat(et.scalar);
      uns = false;
    }
    std::vector<int64_t> rshape = x.type.shape;
    rshape.erase(rshape.begin() + axis);
    Type elemTy = toMlir(et);
    std::vector<Value> srcs{x.value};
    std::vector<Type> resTys{rshape.empty() ? elemTy : Type(RankedTensorType::get(rshape, elemTy))};
    TileType idxT{{ScalarType::i32, 0}, x.type.shape};
    if (isArg) {
      int64_t n = x.type.shape[size_t(axis)];
      TileType r{{ScalarType::i32, 0}, {n}};
      SemValue range = SemValue::ofRuntime(
          tile::MakeRangeOp::create(b_, ml, toMlir(r), 0, int32_t(n)), r);
      // Put the range along `axis`, then broadcast to the full shape.
      std::vector<int64_t> shp(x.type.shape.size(), 1);
      shp[size_t(axis)] = n;
      if (shp.size() > 1) {
        TileType rs{{ScalarType::i32, 0}, shp};
        range = SemValue::ofRuntime(tile::ReshapeOp::create(b_, ml, toMlir(rs), range.value), rs);
      }
      range = broadcastTo(range, x.type.shape, L);
      if (!range.ok())
        return range;
      srcs.push_back(range.value);
      resTys.push_back(rshape.empty() ? Type(b_.getI32Type())
                                      : Type(RankedTensorType::get(rshape, b_.getI32Type())));
    }
    auto red = tile::ReduceOp::create(b_, ml, resTys, srcs, int32_t(axis));
    mlir::Block *body = new mlir::Block();
    red.getCombine().push_back(body);
    std::vector<Type> argTys;
    for (int k = 0; k < 2; ++k) {
      argTys.push_back(elemTy);
      if (isArg)
        argTys.push_back(b_.getI32Type());
    }
    for (Type t : argTys)
      body->addArgument(t, ml);
    {
      OpBuilder::InsertionGuard guard(b_);
      b_.setInsertionPointToStart(body);
      std::vector<Value> outs;
      if (!isArg) {
        Value l = body->getArgument(0), r = body->getArgument(1), v;
        if (name == "sum")
          v = fp ? Value(arith::AddFOp::create(b_, ml, l, r)) : Value(arith::AddIOp::create(b_, ml, l, r));
        else if (name == "max")
          v = fp ? Value(arith::MaxNumFOp::create(b_, ml, l, r))
                 : uns ? Value(arith::MaxUIOp::create(b_, ml, l, r)) : Value(arith::MaxSIOp::create(b_, ml, l, r));
        else
          v = fp ? Value(arith::MinNumFOp::create(b_, ml, l, r))
                 : uns ? Value(arith::MinUIOp::create(b_, ml, l, r)) : Value(arith::MinSIOp::create(b_, ml, l, r));
        outs.push_back(v);
      } else {
        // (value, index) pairs: keep the better value; ties go to the smaller index.
        Value lv = body->getArgument(0), li = body->getArgument(1);
        Value rv = body->getArgument(2), ri = body->getArgument(3);
        bool mx = name == "argmax";
        Value better, equal;
        if (fp) {
          better = arith::CmpFOp::create(b_, ml, mx ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, lv, rv);
          equal = arith::CmpFOp::create(b_, ml, arith::CmpFPredicate::OEQ, lv, rv);
        } else {
          auto pred = mx ? (uns ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
                         : (uns ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt);
          better = arith::CmpIOp::create(b_, ml, pred, lv, rv);
          equal = arith::CmpIOp::create(b_, ml, arith::CmpIPredicate::eq, lv, rv);
        }
        Value lower = arith::CmpIOp::create(b_, ml, arith::CmpIPredicate::slt, li, ri);
        Value tie = arith::AndIOp::create(b_, ml, equal, lower);
        Value takeL = arith::OrIOp::create(b_, ml, better, tie);
        outs.push_back(arith::SelectOp::create(b_, ml, takeL, lv, rv));
        outs.push_back(arith::SelectOp::create(b_, ml, takeL, li, ri));
      }
      tile::ReduceReturnOp::create(b_, ml, outs);
    }
    SemValue result = SemValue::ofRuntime(red.getResult(isArg ? 1 : 0),
                                          TileType{isArg ? DType{ScalarType::i32, 0} : et, rshape});
    if (keep) {
      std::vector<int64_t> kshape = all ? std::vector<int64_t>(origShape.size(), 1) : origShape;
      if (!all)
        kshape[size_t(axis)] = 1;
      TileType kt{result.type.elem, kshape};
      Value v = result.type.isTile()
                    ? Value(tile::ReshapeOp::create(b_, ml, toMlir(kt), result.value))
                    : Value(tile::SplatOp::create(b_, ml, toMlir(kt), result.value));
      result = SemValue::ofRuntime(v, kt);
    }
    return result;
  }

  // ---- elementwise math -------------------------------------------------------
  static const char *const unaryMath[] = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin",
                                          "cos", "tanh", "erf", "floor", "ceil"};
  bool isUnaryMath = false;
  for (const char *m : unaryMath)
    isUnaryMath |= name == m;
  if (isUnaryMath || name == "abs") {
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
  if (name == "fma") {
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
  if (name == "where") {
    if (!bind({{"cond", "x", "y"}, 3}))
      return SemValue::invalid();
    SemValue c;
    if (!maskArg(a[0], c))
      return SemValue::invalid();
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
  if (name == "maximum" || name == "minimum") {
    if (!bind({{"x", "y"}, 2}))
      return SemValue::invalid();
    SemValue x = a[0].value, y = a[1].value;
    bool mx = name == "maximum";
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
  if (name == "cdiv") {
    if (!bind({{"x", "y"}, 2}))
      return SemValue::invalid();
    for (const Arg &x : a)
      if (!isIntegerValue(x.value) || x.value.isTile())
        return fail(x.loc, "cdiv() needs integer scalars, got " + x.value.describe());
    SemValue ym1 = binary(BinOp::Sub, a[1].value, SemValue::ofInt(1), L);
    SemValue sum = ym1.ok() ? binary(BinOp::Add, a[0].value, ym1, L) : ym1;
    return sum.ok() ? binary(BinOp::FloorDiv, sum, a[1].value, L) : sum;
  }

  // ---- hints, casts, compile-time checks, printing ------------------------------
  if (name == "multiple_of" || name == "max_contiguous") {
    if (!bind({{"x", "values"}, 2}))
      return SemValue::invalid();
    SemValue x = a[0].value;
    if (!x.isRuntime() || isFloat(x.type.elem.scalar) && !x.type.elem.isPointer())
      return fail(a[0].loc, name + "() applies to integer or pointer values, got " + x.describe());
    size_t rank = std::max<size_t>(1, x.type.shape.size());
    std::vector<int32_t> vals;
    if (a[1].value.kind == SemValue::Int) {
      vals.assign(rank, int32_t(a[1].value.i));
      if (a[1].value.i <= 0 || a[1].value.i > (1 << 30))
        return fail(a[1].loc, name + "() value must be a positive power of two");
    } else if (a[1].value.kind == SemValue::Tuple) {
      for (const SemValue &v : a[1].value.elems) {
        if (v.kind != SemValue::Int || v.i <= 0 || v.i > (1 << 30))
          return fail(a[1].loc, name + "() values must be positive constexpr integers");
        vals.push_back(int32_t(v.i));
      }
      if (vals.size() != rank)
        return fail(a[1].loc, name + "() needs " + std::to_string(rank) + " values, one per dimension");
    } else {
      return fail(a[1].loc, name + "() value must be a constexpr integer or tuple");
    }
    for (int32_t v : vals)
      if ((v & (v - 1)) != 0)
        return fail(a[1].loc, name + "() values must be powers of two, got " + std::to_string(v));
    auto attr = b_.getDenseI32ArrayAttr(vals);
    auto op = tile::HintOp::create(b_, ml, x.value, name == "multiple_of" ? attr : nullptr,
                                   name == "max_contiguous" ? attr : nullptr);
    return SemValue::ofRuntime(op.getResult(), x.type);
  }
  if (name == "cast" || name == "bitcast") {
    if (!bind({{"x", "dtype", "bitcast"}, 2}))
      return SemValue::invalid();
    auto to = dtypeArg(a[1], fn);
    if (!to)
      return SemValue::invalid();
    bool bits = name == "bitcast";
    if (a[2].present) {
      if (a[2].value.kind != SemValue::Bool)
        return fail(a[2].loc, "'bitcast' must be True or False");
      bits = bits || a[2].value.b;
    }
    if (!bits)
      return castTo(a[0].value, *to, a[0].loc);
    SemValue x = a[0].value.isConst() ? materialize(a[0].value, a[0].loc) : a[0].value;
    if (!x.ok())
      return x;
    if (!x.isRuntime())
      return fail(a[0].loc, "bitcast() needs a number or a tile, got " + x.describe());
    unsigned fw = x.type.elem.isPointer() ? 64 : scalarTypeBits(x.type.elem.scalar);
    unsigned tw = to->isPointer() ? 64 : scalarTypeBits(to->scalar);
    if (fw != tw)
      return fail(L, "bitcast() needs types of the same width, got " + x.type.elem.str() + " (" +
                         std::to_string(fw) + " bits) and " + to->str() + " (" +
                         std::to_string(tw) + " bits)");
    TileType t{*to, x.type.shape};
    if (toMlir(t) == x.value.getType())
      return SemValue::ofRuntime(x.value, t);
    return SemValue::ofRuntime(tile::BitcastOp::create(b_, ml, toMlir(t), x.value), t);
  }
  if (name == "float" || name == "int") { // compile-time conversions: float("-inf"), int(2.7)
    if (!bind({{"x"}, 1}))
      return SemValue::invalid();
    const SemValue &x = a[0].value;
    if (name == "float" && x.kind == SemValue::Str) {
      std::string t = x.s;
      for (char &c : t)
        c = char(std::tolower(static_cast<unsigned char>(c)));
      if (t == "inf" || t == "+inf" || t == "infinity")
        return SemValue::ofFloat(INFINITY);
      if (t == "-inf" || t == "-infinity")
        return SemValue::ofFloat(-INFINITY);
      if (t == "nan")
        return SemValue::ofFloat(NAN);
      return fail(a[0].loc, "float() accepts \"inf\", \"-inf\" or \"nan\", got \"" + x.s + "\"");
    }
    if (!x.isConst())
      return fail(a[0].loc, name + "() converts compile-time numbers; use .to() for run-time values, got " +
                                x.describe());
    double v = x.kind == SemValue::Int ? double(x.i) : x.kind == SemValue::Bool ? double(x.b) : x.f;
    if (name == "float")
      return SemValue::ofFloat(v);
    if (!std::isfinite(v) || std::fabs(v) > 9.2e18)
      return fail(a[0].loc, "int() of " + x.describe() + " is out of range");
    return x.kind == SemValue::Int ? x : SemValue::ofInt(int64_t(v));
  }
  if (name == "static_assert") {
    if (!bind({{"cond", "msg"}, 1}))
      return SemValue::invalid();
    if (a[0].value.isRuntime())
      return fail(a[0].loc, "static_assert() condition must be known at compile time");
    std::string msg;
    if (a[1].present) {
      if (a[1].value.kind != SemValue::Str)
        return fail(a[1].loc, "static_assert() message must be a string");
      msg = a[1].value.s;
    }
    bool ok = a[0].value.kind == SemValue::Bool ? a[0].value.b
              : a[0].value.kind == SemValue::Int ? a[0].value.i != 0
              : a[0].value.kind == SemValue::Float ? a[0].value.f != 0.0
                                                    : a[0].value.kind != SemValue::None;
    if (!ok)
      return fail(L, "static assertion failed" + (msg.empty() ? std::string() : ": " + msg));
    return SemValue::none();
  }
  if (name == "device_print") {
    if (!bind({{"prefix"}, 1, /*variadic=*/true}))
      return SemValue::invalid();
    if (a[0].value.kind != SemValue::Str)
      return fail(a[0].loc, "device_print() needs a string prefix first");
    std::vector<Value> vals;
    for (size_t i = 1; i < args.size(); ++i) {
      SemValue v = args[i].value.isConst() ? materialize(args[i].value, args[i].loc) : args[i].value;
      if (!v.ok())
        return v;
      if (!v.isRuntime())
        return fail(args[i].loc, "device_print() can print numbers and tiles, got " + v.describe());
      vals.push_back(v.value);
    }
    tile::PrintOp::create(b_, ml, b_.getStringAttr(a[0].value.s), vals);
    return SemValue::none();
  }
  return fail(L, "builtin '" + name + "' is not implemented");
}

} // namespace tessera::fe
