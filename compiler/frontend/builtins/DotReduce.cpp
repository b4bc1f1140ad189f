// The dot and reduction builtins: one handler per builtin or family of builtins
// (BuiltinCall.h), dispatched by IRGen::callBuiltin (Builtins.cpp).
#include "BuiltinCall.h"

#include "tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::fe::builtins {

// dot(a, b, acc=None, input_precision="tf32", out_dtype=None): Triton's
// tl.dot. out_dtype: f16 operands accumulate in f16 when it is f16 (the
// tensor cores' f16 form); any other narrower out_dtype accumulates in the
// operands' accumulator type and rounds at the end. input_precision="tf32x3"
// splits each f32 operand into a tf32 high part and the remainder and adds
// three tf32 products (lo*hi + hi*lo + hi*hi): close to fp32 accuracy.
SemValue BuiltinCall::onDot() {
  if (!bind({{"a", "b", "acc", "input_precision", "out_dtype"}, 2}))
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
  // Two 8-bit float types may mix (e4m3 x e5m2, as wgmma allows).
  bool float8 = !ea.isPointer() && !eb.isPointer() && isFloat8(ea.scalar) && isFloat8(eb.scalar);
  if (ea != eb && !float8)
    return fail(L, "dot() operands must have the same element type, got " + ea.str() +
                       " and " + eb.str() + "; convert one with .to()");
  DType accT;
  switch (ea.isPointer() ? ScalarType::i1 : ea.scalar) {
  case ScalarType::f32: case ScalarType::f16: case ScalarType::bf16:
  case ScalarType::f8e4m3: case ScalarType::f8e5m2:
    accT = DType{ScalarType::f32, 0}; break;
  case ScalarType::f64: accT = DType{ScalarType::f64, 0}; break;
  case ScalarType::i8: accT = DType{ScalarType::i32, 0}; break;
  default:
    return fail(L, "dot() supports f32, f16, bf16, f8e4m3, f8e5m2, f64 and i8 operands, got " + ea.str());
  }
  // The result type: out_dtype, else the accumulator's type.
  DType outT = accT;
  if (!isNone(a[4])) {
    auto d = g.dtypeArg(a[4], fn);
    if (!d)
      return SemValue::invalid();
    if (d->isPointer() || isFloat(d->scalar) != isFloat(accT.scalar))
      return fail(a[4].loc, "dot() of " + ea.str() + " operands cannot produce " + d->str() +
                                "; out_dtype must be " +
                                (isFloat(accT.scalar) ? "a float" : "an integer") + " type");
    outT = *d;
  } else if (!isNone(a[2]) && a[2].value.isTile()) {
    outT = a[2].value.type.elem; // the accumulator's type, checked below
  }
  bool f16Acc = ea.scalar == ScalarType::f16 && outT == DType{ScalarType::f16, 0};
  if (f16Acc)
    accT = outT; // the tensor cores accumulate f16 products in f16
  SemValue acc;
  if (isNone(a[2])) {
    acc = broadcastTo(castTo(SemValue::ofInt(0), accT, L), {xs[0], ys[1]}, L);
  } else {
    acc = a[2].value;
    if (!acc.isTile() || acc.type.shape != std::vector<int64_t>{xs[0], ys[1]})
      return fail(a[2].loc, "dot() accumulator must be a " + std::to_string(xs[0]) + "x" +
                                std::to_string(ys[1]) + " tile, got " + acc.describe());
    bool okAcc = acc.type.elem == accT || (acc.type.elem == outT && !isNone(a[4]));
    if (!okAcc)
      return fail(a[2].loc, "dot() of " + ea.str() + " operands accumulates in " + accT.str() +
                                ", got an accumulator of " + acc.type.elem.str());
    if (acc.type.elem != accT)
      acc = castTo(acc, accT, a[2].loc);
  }
  if (!acc.ok())
    return acc;
  tile::InputPrecision prec = tile::InputPrecision::tf32;
  bool x3 = false;
  if (a[3].present) {
    const SemValue &p = a[3].value;
    if (p.kind != SemValue::Str || (p.s != "tf32" && p.s != "ieee" && p.s != "tf32x3"))
      return fail(a[3].loc, "dot() input_precision must be \"tf32\", \"tf32x3\" or \"ieee\"");
    if (p.s == "ieee")
      prec = tile::InputPrecision::ieee;
    x3 = p.s == "tf32x3";
    if (x3 && ea.scalar != ScalarType::f32)
      return fail(a[3].loc, "dot() input_precision=\"tf32x3\" needs f32 operands, got " + ea.str());
  }
  auto dotOf = [&](const SemValue &l, const SemValue &r, const SemValue &c) {
    auto op = tile::DotOp::create(b_, ml, c.value.getType(), l.value, r.value, c.value,
                                  tile::InputPrecisionAttr::get(&ctx_, prec));
    return SemValue::ofRuntime(op.getResult(), c.type);
  };
  SemValue result;
  if (x3) {
    // hi: the f32 value with its low 13 mantissa bits cleared (exactly a
    // tf32); lo: the rest, exact in f32.
    auto split = [&](const SemValue &v) -> std::pair<SemValue, SemValue> {
      SemValue bits = invoke("bitcast", {v, SemValue::ofDType(DType{ScalarType::i32, 0})});
      SemValue masked = bits.ok() ? binary(BinOp::BitAnd, bits, SemValue::ofInt(int64_t(int32_t(0xffffe000u))), L) : bits;
      SemValue hi = masked.ok() ? invoke("bitcast", {masked, SemValue::ofDType(DType{ScalarType::f32, 0})}) : masked;
      SemValue lo = hi.ok() ? binary(BinOp::Sub, v, hi, L) : hi;
      return {hi, lo};
    };
    auto [xh, xl] = split(x);
    auto [yh, yl] = split(y);
    if (!xl.ok() || !yl.ok())
      return SemValue::invalid();
    result = dotOf(xh, yh, dotOf(xh, yl, dotOf(xl, yh, acc)));
  } else {
    result = dotOf(x, y, acc);
  }
  if (result.type.elem != outT)
    result = castTo(result, outT, L);
  return result;
}

// max and min: Python's max(a, b) on two compile-time numbers; the larger of
// two scalars when one is a run-time value (as Triton maps Python's max to
// maximum); else a reduction of a tile (`max(x, 1)` reduces along axis 1).
SemValue BuiltinCall::onMaxMin() {
  bool minmaxPython = (name == "max" || name == "min") && args.size() >= 2 &&
                      !args[0].value.isRuntime() && !args[1].value.isRuntime();
  if (minmaxPython)
    return onPythonMaxMin();
  bool twoScalars = args.size() == 2 && kws.empty() && !args[0].value.isTile() &&
                    !args[1].value.isTile();
  if (twoScalars)
    return onMaximumMinimum();
  return onReduce();
}

// max(a, b) on compile-time numbers
SemValue BuiltinCall::onPythonMaxMin() {
  if (!bind({{"a", "b"}, 2}))
    return SemValue::invalid();
  SemValue lt = binary(BinOp::Lt, a[0].value, a[1].value, L);
  if (!lt.ok())
    return lt;
  bool pickB = name == "max" ? lt.b : !lt.b;
  return pickB ? a[1].value : a[0].value;
}

// sum, max, min, argmax, argmin
SemValue BuiltinCall::onReduce() {
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
  // 8-bit floats compare in f32 (exact, order-preserving); max/min round
  // back exactly, and sum widens like the other small types below.
  DType float8;
  if (isFloat8(et.scalar) && name != "sum") {
    float8 = et;
    et = DType{ScalarType::f32, 0};
    x = castTo(x, et, L);
    if (!x.ok())
      return x;
  }
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
  if (!isArg && isFloat8(float8.scalar))
    result = castTo(result, float8, L);
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

// The combiner region of a reduce or scan from the user's @func `fn`: two
// elements (or two tuples of elements, one per input tile) in, one out.
bool BuiltinCall::userCombine(mlir::Region &region, const std::vector<SemValue> &ins,
                              const Arg &fn) {
  for (const SemValue &v : ins)
    if (isFloat8(v.type.elem.scalar)) {
      fail(L, name + "() with a combine_fn takes no 8-bit floats (" + v.type.elem.str() +
                  "); convert the input with .to(f32)");
      return false;
    }
  mlir::Block *body = new mlir::Block();
  region.push_back(body);
  for (int side = 0; side < 2; ++side)
    for (const SemValue &v : ins)
      body->addArgument(toMlir(v.type.elem), ml);
  {
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(body);
    std::vector<Arg> cargs;
    for (size_t k = 0; k < 2 * ins.size(); ++k) {
      const SemValue &v = ins[k % ins.size()];
      cargs.push_back(Arg{SemValue::ofRuntime(body->getArgument(unsigned(k)), TileType{v.type.elem, {}}),
                          L, nullptr, true});
    }
    SemValue r = g.callFunction(call, fn.value, cargs);
    if (!r.ok())
      return false;
    std::vector<SemValue> outs = r.kind == SemValue::Tuple ? r.elems : std::vector<SemValue>{r};
    if (outs.size() != ins.size()) {
      fail(fn.loc, name + "() combine_fn must return " + std::to_string(ins.size()) + " value" +
                       (ins.size() == 1 ? "" : "s") + ", got " + std::to_string(outs.size()));
      return false;
    }
    std::vector<Value> vals;
    for (size_t k = 0; k < outs.size(); ++k) {
      SemValue o = outs[k].isConst() ? g.materialize(outs[k], L, ins[k].type.elem) : outs[k];
      if (o.ok() && o.type.elem != ins[k].type.elem)
        o = castTo(o, ins[k].type.elem, L);
      if (!o.ok() || o.isTile()) {
        fail(fn.loc, name + "() combine_fn must return scalars of the input's types");
        return false;
      }
      vals.push_back(o.value);
    }
    tile::ReduceReturnOp::create(b_, ml, vals);
  }
  return true;
}

// reduce(input, axis, combine_fn, keep_dims=False): Triton's tl.reduce with a
// user @func combining two elements (or two tuples of elements, for a tuple
// of tiles) into one. The combine is inlined into the reduce region, which
// both back ends already run for sum and argmax; it must be associative (the
// order of combination is the back end's). axis None reduces every element.
SemValue BuiltinCall::onCustomReduce() {
  if (!bind({{"input", "axis", "combine_fn", "keep_dims"}, 3}))
    return SemValue::invalid();
  if (a[2].value.kind != SemValue::Func)
    return fail(a[2].loc, "reduce() combine_fn must be a @func, got " + a[2].value.describe());
  std::optional<bool> keepArg = flagArg(a[3], "keep_dims", false);
  if (!keepArg)
    return SemValue::invalid();
  bool keep = *keepArg;
  std::optional<std::vector<SemValue>> tiles = tilesOfOneShape(a[0]);
  if (!tiles)
    return SemValue::invalid();
  std::vector<SemValue> ins = std::move(*tiles);
  std::vector<int64_t> origShape = ins[0].type.shape;
  bool all = isNone(a[1]);
  int64_t axis = 0;
  if (all) {
    int64_t n = 1;
    for (int64_t d : origShape)
      n *= d;
    for (SemValue &v : ins)
      if (origShape.size() != 1) {
        TileType flat{v.type.elem, {n}};
        v = SemValue::ofRuntime(tile::ReshapeOp::create(b_, ml, toMlir(flat), v.value), flat);
      }
  } else {
    auto ax = axisArg(a[1], origShape.size());
    if (!ax)
      return SemValue::invalid();
    axis = *ax;
  }
  std::vector<int64_t> rshape = ins[0].type.shape;
  rshape.erase(rshape.begin() + axis);
  std::vector<Value> srcs;
  std::vector<Type> resTys;
  for (const SemValue &v : ins) {
    srcs.push_back(v.value);
    Type et = toMlir(v.type.elem);
    resTys.push_back(rshape.empty() ? et : Type(RankedTensorType::get(rshape, et)));
  }
  auto red = tile::ReduceOp::create(b_, ml, resTys, srcs, int32_t(axis));
  if (!userCombine(red.getCombine(), ins, a[2]))
    return SemValue::invalid();
  std::vector<SemValue> results;
  for (size_t k = 0; k < ins.size(); ++k) {
    SemValue res = SemValue::ofRuntime(red.getResult(unsigned(k)), TileType{ins[k].type.elem, rshape});
    if (keep) {
      std::vector<int64_t> kshape = all ? std::vector<int64_t>(origShape.size(), 1) : origShape;
      if (!all)
        kshape[size_t(axis)] = 1;
      TileType kt{res.type.elem, kshape};
      Value v = res.type.isTile() ? Value(tile::ReshapeOp::create(b_, ml, toMlir(kt), res.value))
                                  : Value(tile::SplatOp::create(b_, ml, toMlir(kt), res.value));
      res = SemValue::ofRuntime(v, kt);
    }
    results.push_back(res);
  }
  return results.size() == 1 ? results[0] : SemValue::ofTuple(std::move(results));
}

} // namespace tessera::fe::builtins
