// TMA boxes around an analysed tensor map; see TmaBoxes.h.
#include "TmaBoxes.h"

namespace tessera::lowering::detail {

namespace {
// CUtensorMapDataType values (cuda.h); the map only needs the element size
// right, and tf32 operands are copied as the f32 bits they are.
constexpr int kTmaUint8 = 0, kTmaFloat16 = 6, kTmaFloat32 = 7, kTmaBfloat16 = 9;

TensorMapSpec::Form specForm(const LinearForm &f) {
  TensorMapSpec::Form o;
  o.c = f.c;
  for (auto [v, k] : f.terms)
    o.terms.push_back({int(cast<BlockArgument>(v).getArgNumber()), k});
  return o;
}
} // namespace

TensorMapSpec tensorMapSpecOf(const TensorMapOperand &m, Type elem, int64_t boxCols, int64_t boxRows,
                              int64_t swizzleBytes) {
  TensorMapSpec s;
  int64_t eb = elem.getIntOrFloatBitWidth() / 8;
  s.pointerArg = int(m.pointerArg);
  s.elementBytes = int(eb);
  s.dataType = eb == 1 ? kTmaUint8 : elem.isBF16() ? kTmaBfloat16 : elem.isF16() ? kTmaFloat16 : kTmaFloat32;
  s.cols = specForm(m.cols);
  s.rows = specForm(m.rows);
  s.rowStride = specForm(m.rowStride);
  s.boxCols = int(boxCols);
  s.boxRows = int(boxRows);
  s.swizzleBytes = int(swizzleBytes);
  for (const TensorMapOperand::OuterDim &o : m.outer)
    s.outer.push_back({TensorMapSpec::Form{kUnboundedExtent, {}}, specForm(o.stride)});
  s.nonNegativeArgs.assign(m.nonNegativeArgs.begin(), m.nonNegativeArgs.end());
  return s;
}

Value materializeForm(KernelLowering &kl, OpBuilder &b, Location loc, const LinearForm &f) {
  Type i32 = b.getI32Type();
  Value v = kl.i32c(f.c, loc);
  for (auto [x, k] : f.terms) {
    Value s = kl.scalarOf(x);
    if (s.getType() != i32)
      s = arith::TruncIOp::create(b, loc, i32, s);
    v = arith::AddIOp::create(b, loc, v, arith::MulIOp::create(b, loc, s, kl.i32c(k, loc)));
  }
  return v;
}

void issueTensorBox(KernelLowering &kl, Location loc, Value dst, Value map, ArrayRef<Value> coords,
                    Value bar, int64_t multicastMask) {
  std::string text = "cp.async.bulk.tensor." + std::to_string(coords.size()) +
                     "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" +
                     (multicastMask ? ".multicast::cluster" : "") + " [$0], [$1, {";
  std::string cons = "r,l";
  for (size_t i = 0; i < coords.size(); ++i) {
    text += (i ? ", $" : "$") + std::to_string(i + 2);
    cons += ",r";
  }
  text += "}], [$" + std::to_string(coords.size() + 2) + "]";
  SmallVector<Value> operands{dst, map};
  operands.append(coords.begin(), coords.end());
  operands.push_back(bar);
  cons += ",r";
  if (multicastMask) {
    // The same box lands at `dst` in every CTA of the mask (a 16-bit
    // operand), each CTA's mbarrier at `bar`'s offset counting its bytes.
    text = "{\n.reg .b16 mask;\nmov.b16 mask, " + std::to_string(multicastMask) + ";\n" + text +
           ", mask;\n}";
  } else {
    text += ";";
  }
  kl.sideEffectAsm({}, operands, text, cons + ",~{memory}", loc);
}

} // namespace tessera::lowering::detail
