// The builtins for hints, casts, compile-time checks and printing: one handler
// per builtin or family of builtins (BuiltinCall.h), dispatched by
// IRGen::callBuiltin (Builtins.cpp).
#include "BuiltinCall.h"

#include "tile/TileDialect.h"

#include <cctype>
#include <cmath>

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::fe::builtins {

// multiple_of, max_contiguous
SemValue BuiltinCall::onHint() {
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

// cast, bitcast
SemValue BuiltinCall::onCast() {
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

// float, int: compile-time conversions: float("-inf"), int(2.7)
SemValue BuiltinCall::onFloatInt() {
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

SemValue BuiltinCall::onStaticAssert() {
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

// device_assert(cond, msg="", mask=None): Triton's tl.device_assert. Lanes
// where mask is false pass; a compile-time true condition emits nothing.
SemValue BuiltinCall::onDeviceAssert() {
  if (!bind({{"cond", "msg", "mask"}, 1}))
    return SemValue::invalid();
  std::string msg;
  if (!isNone(a[1])) {
    if (a[1].value.kind != SemValue::Str)
      return fail(a[1].loc, "device_assert() msg must be a string, got " + a[1].value.describe());
    msg = a[1].value.s;
  }
  SemValue cond = a[0].value;
  if (cond.isConst() && isNone(a[2])) {
    bool truth = cond.kind == SemValue::Bool ? cond.b
                 : cond.kind == SemValue::Int ? cond.i != 0
                 : cond.kind == SemValue::Float ? cond.f != 0.0 : true;
    if (truth)
      return SemValue::none();
  }
  SemValue c = castTo(cond.isConst() ? materialize(cond, a[0].loc) : cond, DType{ScalarType::i1, 0},
                      a[0].loc);
  if (!c.ok())
    return c;
  if (!isNone(a[2])) {
    SemValue m;
    if (!maskArg(a[2], m))
      return SemValue::invalid();
    SemValue off = binary(BinOp::Eq, m, SemValue::ofBool(false), L);
    c = off.ok() ? binary(BinOp::BitOr, c, off, L) : off;
    if (!c.ok())
      return c;
  }
  tile::AssertOp::create(b_, ml, c.value, b_.getStringAttr(msg));
  return SemValue::none();
}

SemValue BuiltinCall::onDevicePrint() {
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

} // namespace tessera::fe::builtins

namespace tessera::fe::builtins {

// inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
// Triton's. The arguments broadcast to one shape; the result has `dtype` and
// that shape. With pack P, one asm handles P elements, narrow types packed
// into 32-bit registers (tile.inline_asm). GPU only.
SemValue BuiltinCall::onInlineAsm() {
  if (!bind({{"asm", "constraints", "args", "dtype", "is_pure", "pack"}, 4}))
    return SemValue::invalid();
  for (int k = 0; k < 2; ++k)
    if (a[k].value.kind != SemValue::Str)
      return fail(a[k].loc, std::string("inline_asm_elementwise() ") + (k ? "constraints" : "asm") +
                                " must be a string");
  auto dt = g.dtypeArg(a[3], fn);
  if (!dt)
    return SemValue::invalid();
  std::optional<bool> pure = flagArg(a[4], "is_pure", true);
  if (!pure)
    return SemValue::invalid();
  int64_t packed = 1;
  if (!isNone(a[5])) {
    auto pack = intArg(a[5], fn, "pack");
    if (!pack)
      return SemValue::invalid();
    if (*pack < 1 || *pack > 16 || (*pack & (*pack - 1)))
      return fail(a[5].loc, "inline_asm_elementwise() pack must be a power of two from 1 to 16, got " +
                                std::to_string(*pack));
    packed = *pack;
  }
  std::vector<SemValue> ins = a[2].value.kind == SemValue::Tuple ? a[2].value.elems
                                                                  : std::vector<SemValue>{a[2].value};
  std::vector<int64_t> shape;
  for (SemValue &v : ins) {
    if (v.isConst())
      v = g.materialize(v, a[2].loc);
    if (!v.ok() || !v.isRuntime())
      return fail(a[2].loc, "inline_asm_elementwise() args must be numbers or tiles");
    if (v.type.isTile()) {
      auto b = shape.empty() ? std::optional<std::vector<int64_t>>(v.type.shape)
                             : g.broadcastShapes(shape, v.type.shape, a[2].loc);
      if (!b)
        return SemValue::invalid();
      shape = *b;
    }
  }
  std::vector<Value> operands;
  for (SemValue &v : ins) {
    if (!shape.empty()) {
      v = broadcastTo(v, shape, a[2].loc);
      if (!v.ok())
        return v;
    }
    operands.push_back(v.value);
  }
  TileType rt{*dt, shape};
  // Packed registers hold whole elements: each type's bits times pack must
  // fill 32-bit registers (or the type be 32 bits or wider).
  if (packed > 1) {
    std::vector<DType> types{*dt};
    for (const SemValue &v : ins)
      types.push_back(v.type.elem);
    for (DType t : types) {
      unsigned bits = t.isPointer() ? 64 : scalarTypeBits(t.scalar);
      if (bits < 32 && (bits * packed) % 32)
        return fail(a[5].loc, "inline_asm_elementwise() pack=" + std::to_string(packed) + " packs " +
                                  t.str() + " elements into 32-bit registers: pack * " +
                                  std::to_string(bits) + " bits must be a multiple of 32");
    }
  }
  auto op = tile::InlineAsmOp::create(b_, ml, toMlir(rt), operands, a[0].value.s, a[1].value.s, *pure,
                                      packed);
  return SemValue::ofRuntime(op.getResult(), rt);
}

} // namespace tessera::fe::builtins
