// rand, randn, randint, randint4x, rand4x, randn4x: counter-based random numbers, Philox-4x32
// (or 4x64 for 64-bit offsets) with 10 rounds, laid out as Triton's are, so
// that the same seed and offsets give the same bits. The generator is emitted
// inline as integer IR (umulhi, multiplies, xors); the interpreter and the GPU
// both run it as ordinary arithmetic.
//
// Counter (c0, c1, c2, c3) = (offset, 0, 0, 0); key (k0, k1) = (low and high
// 32 bits of the seed) for 32-bit offsets, (seed, 0) for 64-bit ones. A round:
//   c0' = umulhi(B, c2) ^ c1 ^ k0     c1' = B * c2
//   c2' = umulhi(A, c0) ^ c3 ^ k1     c3' = A * c0
//   then k0 += KEY_A, k1 += KEY_B.
#include "BuiltinCall.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace tessera::fe::builtins {

namespace {
struct PhiloxConstants {
  uint64_t roundA, roundB, keyA, keyB;
};
// The Weyl increments are the golden ratio and sqrt(3) - 1 in fixed point;
// the round multipliers are Salmon et al.'s (Philox, SC'11).
constexpr PhiloxConstants kPhilox4x32{0xD2511F53u, 0xCD9E8D57u, 0x9E3779B9u, 0xBB67AE85u};
constexpr PhiloxConstants kPhilox4x64{0xD2E7470EE14C6C93ull, 0xCA5A826395121157ull,
                                      0x9E3779B97F4A7C15ull, 0xBB67AE8584CAA73Bull};
constexpr int64_t kDefaultRounds = 10;
} // namespace

// rand(seed, offset, n_rounds=10) and the rest. `seed` is an integer scalar;
// `offset` an integer scalar or tile, whose shape the result has.
SemValue BuiltinCall::onRandom() {
  if (!bind({{"seed", "offset", "n_rounds"}, 2}))
    return SemValue::invalid();
  auto isInt = [](const SemValue &v) {
    return v.kind == SemValue::Int ||
           (v.isRuntime() && !v.type.elem.isPointer() && !isFloat(v.type.elem.scalar) &&
            v.type.elem.scalar != ScalarType::i1);
  };
  SemValue seed = a[0].value, off = a[1].value;
  if (!isInt(seed) || seed.isTile())
    return fail(a[0].loc, name + "() seed must be an integer scalar, got " + seed.describe());
  if (!isInt(off))
    return fail(a[1].loc, name + "() offset must be an integer scalar or tile, got " +
                              off.describe());
  int64_t rounds = kDefaultRounds;
  if (a[2].present) {
    auto r = intArg(a[2], fn, "n_rounds");
    if (!r)
      return SemValue::invalid();
    if (*r < 1 || *r > 64)
      return fail(a[2].loc, name + "() n_rounds must be from 1 to 64, got " + std::to_string(*r));
    rounds = *r;
  }
  // A constant seed is read as a 64-bit signed integer; every seed then
  // becomes u64, sign-extending a signed one (Triton's seed.to(uint64)).
  if (seed.kind == SemValue::Int)
    seed = g.constant(DType{ScalarType::i64, 0}, {}, 0, seed.i, a[0].loc);
  seed = castTo(seed, DType{ScalarType::u64, 0}, a[0].loc);
  // Offsets of up to 32 bits run Philox-4x32 on their u32 bits, 64-bit ones Philox-4x64.
  if (off.kind == SemValue::Int)
    off = g.materialize(off, a[1].loc);
  if (!seed.ok() || !off.ok())
    return SemValue::invalid();
  bool wide = scalarTypeBits(off.type.elem.scalar) == 64;
  DType ut{wide ? ScalarType::u64 : ScalarType::u32, 0};
  if (scalarTypeBits(off.type.elem.scalar) < 32)
    off = castTo(off, DType{ScalarType::i32, 0}, a[1].loc);
  off = castTo(off, ut, a[1].loc); // same width: the bits, read as unsigned
  if (!off.ok())
    return off;
  const PhiloxConstants &pc = wide ? kPhilox4x64 : kPhilox4x32;
  std::vector<int64_t> shape = off.type.shape;
  auto cst = [&](uint64_t v, const std::vector<int64_t> &s) {
    return g.constant(ut, s, 0, int64_t(v), L);
  };
  SemValue k0 = wide ? seed : castTo(seed, ut, L);
  SemValue k1 = wide ? cst(0, {}) : castTo(binary(BinOp::Shr, seed, SemValue::ofInt(32), L), ut, L);
  SemValue c[4] = {off, cst(0, shape), cst(0, shape), cst(0, shape)};
  SemValue A = cst(pc.roundA, shape), B = cst(pc.roundB, shape);
  SemValue keyA = cst(pc.keyA, {}), keyB = cst(pc.keyB, {});
  auto mulhi = [&](const SemValue &x, const SemValue &y) {
    return SemValue::ofRuntime(emitMulHiUnsigned(b_, ml, x.value, y.value), x.type);
  };
  auto x3 = [&](const SemValue &p, const SemValue &q, const SemValue &r) {
    return binary(BinOp::BitXor, binary(BinOp::BitXor, p, q, L), r, L);
  };
  // Both halves of a 32-bit round product from one widened multiply: the GPU
  // then issues one IMAD.WIDE.U32 instead of an IMAD.HI and an IMAD, which
  // halves the multiplier work that bounds dropout-style kernels.
  auto mulBoth = [&](const SemValue &x, const SemValue &y) -> std::pair<SemValue, SemValue> {
    if (wide)
      return {mulhi(x, y), binary(BinOp::Mul, x, y, L)};
    DType u64{ScalarType::u64, 0};
    SemValue p = binary(BinOp::Mul, castTo(x, u64, L), castTo(y, u64, L), L);
    SemValue hi = binary(BinOp::Shr, p, SemValue::ofInt(32), L);
    return {castTo(hi, ut, L), castTo(p, ut, L)};
  };
  for (int64_t i = 0; i < rounds; ++i) {
    auto [hiB, loB] = mulBoth(B, c[2]);
    auto [hiA, loA] = mulBoth(A, c[0]);
    c[0] = x3(hiB, c[1], k0);
    c[2] = x3(hiA, c[3], k1);
    c[1] = loB;
    c[3] = loA;
    k0 = binary(BinOp::Add, k0, keyA, L);
    k1 = binary(BinOp::Add, k1, keyB, L);
    for (const SemValue &v : c)
      if (!v.ok())
        return SemValue::invalid();
  }
  if (name == "randint")
    return c[0];
  if (name == "randint4x")
    return SemValue::ofTuple({c[0], c[1], c[2], c[3]});

  // A uniform float in [0, 1): the bits read as signed, negatives folded onto
  // the non-negatives (x < 0 -> -x - 1), times the largest scale that keeps
  // the result below 1 after rounding to f32.
  auto uniform = [&](const SemValue &u) {
    DType st{wide ? ScalarType::i64 : ScalarType::i32, 0};
    SemValue x = castTo(u, st, L);
    SemValue folded = binary(BinOp::BitXor, x, SemValue::ofInt(-1), L); // -x - 1
    SemValue neg = binary(BinOp::Lt, x, SemValue::ofInt(0), L);
    if (!folded.ok() || !neg.ok())
      return SemValue::invalid();
    SemValue nonneg =
        SemValue::ofRuntime(arith::SelectOp::create(b_, ml, neg.value, folded.value, x.value), x.type);
    double scale = wide ? 1.0842020432385337e-19 : 4.6566127342e-10;
    return binary(BinOp::Mul, nonneg, SemValue::ofFloat(scale), L);
  };
  if (name == "rand4x") {
    std::vector<SemValue> us;
    for (const SemValue &ci : c) {
      us.push_back(uniform(ci));
      if (!us.back().ok())
        return SemValue::invalid();
    }
    return SemValue::ofTuple(us);
  }
  SemValue u1 = uniform(c[0]);
  if (name == "rand" || !u1.ok())
    return u1;
  // randn: Box-Muller on a pair of uniforms, Triton's pair_uniform_to_normal:
  // r = sqrt(-2 log(max(u1, 1e-7))), th = 2 pi u2, (r cos th, r sin th);
  // randn keeps the cosine of the first pair, randn4x both values of both.
  auto normalPair = [&](const SemValue &a, const SemValue &bq, bool both) -> std::vector<SemValue> {
    TileType ft = a.type;
    Value floor = g.constant(DType{ScalarType::f32, 0}, shape, 1.0e-7, 0, L).value;
    Value ac = arith::MaxNumFOp::create(b_, ml, floor, a.value);
    SemValue th = binary(BinOp::Mul, SemValue::ofFloat(6.283185307179586), bq, L);
    SemValue lg = binary(BinOp::Mul, SemValue::ofFloat(-2.0),
                         SemValue::ofRuntime(math::LogOp::create(b_, ml, ac), ft), L);
    if (!th.ok() || !lg.ok())
      return {};
    SemValue r = SemValue::ofRuntime(math::SqrtOp::create(b_, ml, lg.value), ft);
    std::vector<SemValue> out{
        binary(BinOp::Mul, r, SemValue::ofRuntime(math::CosOp::create(b_, ml, th.value), ft), L)};
    if (both)
      out.push_back(binary(BinOp::Mul, r, SemValue::ofRuntime(math::SinOp::create(b_, ml, th.value), ft), L));
    for (const SemValue &v : out)
      if (!v.ok())
        return {};
    return out;
  };
  SemValue u2 = uniform(c[1]);
  if (!u2.ok())
    return u2;
  bool four = name == "randn4x";
  std::vector<SemValue> n = normalPair(u1, u2, four);
  if (n.empty())
    return SemValue::invalid();
  if (!four)
    return n[0];
  SemValue u3 = uniform(c[2]), u4 = uniform(c[3]);
  if (!u3.ok() || !u4.ok())
    return SemValue::invalid();
  std::vector<SemValue> m = normalPair(u3, u4, true);
  if (m.empty())
    return SemValue::invalid();
  return SemValue::ofTuple({n[0], n[1], m[0], m[1]});
}

} // namespace tessera::fe::builtins
