// Scans: cumsum and cumprod, and associative_scan with a user @func combine
// (Triton's tl.cumsum, tl.cumprod, tl.associative_scan), as one tile.scan
// op whose combiner region both back ends run, like reduce's.
#include "BuiltinCall.h"

#include "tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace tessera::fe::builtins {

// A tile.scan of `ins` (tiles of one shape) along `axis`; the results have
// the inputs' shapes and types. One input gives a tile, several a tuple.
SemValue BuiltinCall::scanOf(std::vector<SemValue> ins, int64_t axis, bool reverse,
                             const std::function<bool(mlir::Region &)> &combine) {
  std::vector<Value> srcs;
  std::vector<Type> resTys;
  for (const SemValue &v : ins) {
    srcs.push_back(v.value);
    resTys.push_back(v.value.getType());
  }
  auto scan = tile::ScanOp::create(b_, ml, resTys, srcs, int32_t(axis), reverse);
  if (!combine(scan.getCombine()))
    return SemValue::invalid();
  std::vector<SemValue> outs;
  for (size_t k = 0; k < ins.size(); ++k)
    outs.push_back(SemValue::ofRuntime(scan.getResult(unsigned(k)), ins[k].type));
  return outs.size() == 1 ? outs[0] : SemValue::ofTuple(std::move(outs));
}

// cumsum(input, axis=0, reverse=False, dtype=None), cumprod(...): inclusive
// running sums and products. Like sum, integers narrower than 32 bits and
// 16-bit floats accumulate in 32 bits unless `dtype` says otherwise.
SemValue BuiltinCall::onCumulative() {
  if (!bind({{"input", "axis", "reverse", "dtype"}, 1}) || !requireTile(a[0]))
    return SemValue::invalid();
  SemValue x = a[0].value;
  if (x.type.elem.isPointer())
    return fail(a[0].loc, name + "() needs a tile of numbers, got " + x.describe());
  int64_t axis = 0;
  if (!isNone(a[1])) {
    auto ax = axisArg(a[1], x.type.shape.size());
    if (!ax)
      return SemValue::invalid();
    axis = *ax;
  }
  std::optional<bool> reverse = flagArg(a[2], "reverse", false);
  if (!reverse)
    return SemValue::invalid();
  DType acc = x.type.elem;
  if (!isNone(a[3])) {
    auto d = g.dtypeArg(a[3], fn);
    if (!d)
      return SemValue::invalid();
    acc = *d;
  } else if (scalarTypeBits(acc.scalar) < 32) {
    acc = DType{isFloat(acc.scalar) ? ScalarType::f32 : ScalarType::i32, 0};
  }
  x = castTo(x, acc, L);
  if (!x.ok())
    return x;
  bool fp = isFloat(acc.scalar), product = name == "cumprod";
  Type et = toMlir(acc);
  return scanOf({x}, axis, *reverse, [&](mlir::Region &region) {
    mlir::Block *body = new mlir::Block();
    region.push_back(body);
    Value l = body->addArgument(et, ml), r = body->addArgument(et, ml);
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(body);
    Value v = product ? (fp ? Value(arith::MulFOp::create(b_, ml, l, r))
                            : Value(arith::MulIOp::create(b_, ml, l, r)))
                      : (fp ? Value(arith::AddFOp::create(b_, ml, l, r))
                            : Value(arith::AddIOp::create(b_, ml, l, r)));
    tile::ReduceReturnOp::create(b_, ml, ValueRange{v});
    return true;
  });
}

// associative_scan(input, axis, combine_fn, reverse=False): element j is
// combine_fn applied over elements 0..j in order (the left argument is the
// earlier prefix), on a tile or a tuple of tiles of one shape. combine_fn
// must be associative; the back ends choose the grouping, not the order.
SemValue BuiltinCall::onAssociativeScan() {
  if (!bind({{"input", "axis", "combine_fn", "reverse"}, 3}))
    return SemValue::invalid();
  if (a[2].value.kind != SemValue::Func)
    return fail(a[2].loc, "associative_scan() combine_fn must be a @func, got " +
                              a[2].value.describe());
  std::optional<std::vector<SemValue>> ins = tilesOfOneShape(a[0]);
  if (!ins)
    return SemValue::invalid();
  auto ax = axisArg(a[1], (*ins)[0].type.shape.size());
  std::optional<bool> reverse = ax ? flagArg(a[3], "reverse", false) : std::nullopt;
  if (!reverse)
    return SemValue::invalid();
  return scanOf(*ins, *ax, *reverse,
                [&](mlir::Region &region) { return userCombine(region, *ins, a[2]); });
}

} // namespace tessera::fe::builtins
