// Elementwise arith/math ops over whole slots. Each (op, element kind) pair
// is its own tight loop; the kind dispatch happens once, when decoding.
#include "Numerics.h"

#include <algorithm>
#include <cmath>

namespace tessera {
namespace interp {
namespace {

//===----------------------------------------------------------------------===//
// Floats
//===----------------------------------------------------------------------===//
struct FAdd { template <class C> static C ap(C a, C b) { return a + b; } };
struct FSub { template <class C> static C ap(C a, C b) { return a - b; } };
struct FMul { template <class C> static C ap(C a, C b) { return a * b; } };
struct FDiv { template <class C> static C ap(C a, C b) { return a / b; } };
// maximumf/minimumf: NaN propagates, -0 < +0.
struct FMaximum {
  template <class C> static C ap(C a, C b) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<C>::quiet_NaN();
    if (a == b)
      return std::signbit(a) ? b : a;
    return a > b ? a : b;
  }
};
struct FMinimum {
  template <class C> static C ap(C a, C b) {
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<C>::quiet_NaN();
    if (a == b)
      return std::signbit(a) ? a : b;
    return a < b ? a : b;
  }
};
// maxnumf/minnumf: a NaN operand yields the other one.
struct FMaxNum {
  template <class C> static C ap(C a, C b) {
    if (std::isnan(a))
      return b;
    if (std::isnan(b))
      return a;
    if (a == b)
      return std::signbit(a) ? b : a;
    return a > b ? a : b;
  }
};
struct FMinNum {
  template <class C> static C ap(C a, C b) {
    if (std::isnan(a))
      return b;
    if (std::isnan(b))
      return a;
    if (a == b)
      return std::signbit(a) ? a : b;
    return a < b ? a : b;
  }
};

template <EK K, class F> bool fbin(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  const auto *b = P<typename T::S>(e, ins.b);
  for (int64_t i = 0; i < n; ++i)
    d[i] = T::st(F::ap(T::ld(a[i]), T::ld(b[i])));
  return true;
}

// Binary math through a double function (remf, powf, atan2, copysign): the
// result is rounded once to the element type.
template <EK K> bool fmathBin(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  const auto *b = P<typename T::S>(e, ins.b);
  auto f = ins.binary;
  for (int64_t i = 0; i < n; ++i)
    d[i] = T::fromDouble(f(double(T::ld(a[i])), double(T::ld(b[i]))));
  return true;
}

template <EK K> bool fmathUn(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  auto f = ins.unary;
  for (int64_t i = 0; i < n; ++i)
    d[i] = T::fromDouble(f(double(T::ld(a[i]))));
  return true;
}

template <EK K> bool fneg(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (K == EK::F16 || K == EK::BF16)
      d[i] = uint16_t(a[i] ^ 0x8000u);
    else
      d[i] = -a[i];
  }
  return true;
}

template <EK K> bool fabsOp(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (K == EK::F16 || K == EK::BF16)
      d[i] = uint16_t(a[i] & 0x7fffu);
    else
      d[i] = std::fabs(a[i]);
  }
  return true;
}

// fma: rounded once. For f16 the exact a*b+c fits a double; bf16 is rounded
// from the double (a double rounding only in extreme exponent ranges).
template <EK K> bool ffma(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  const auto *b = P<typename T::S>(e, ins.b);
  const auto *c = P<typename T::S>(e, ins.c);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (K == EK::F32)
      d[i] = std::fma(a[i], b[i], c[i]);
    else if constexpr (K == EK::F64)
      d[i] = std::fma(a[i], b[i], c[i]);
    else
      d[i] = T::fromDouble(std::fma(double(T::ld(a[i])), double(T::ld(b[i])),
                                    double(T::ld(c[i]))));
  }
  return true;
}

template <EK K> bool fclassify(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<uint8_t>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  for (int64_t i = 0; i < n; ++i) {
    auto v = T::ld(a[i]);
    d[i] = ins.op == Op::IsNaN ? std::isnan(v) : ins.op == Op::IsInf ? std::isinf(v)
                                                                     : std::isfinite(v);
  }
  return true;
}

template <EK K> bool fcmp(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<uint8_t>(e, ins.dst);
  const auto *a = P<typename T::S>(e, ins.a);
  const auto *b = P<typename T::S>(e, ins.b);
  auto loop = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) {
      auto x = T::ld(a[i]), y = T::ld(b[i]);
      bool uno = std::isnan(x) || std::isnan(y);
      d[i] = f(x, y, uno) ? 1 : 0;
    }
  };
  switch (ins.pred) {
  case CF_FALSE: loop([](auto, auto, bool) { return false; }); break;
  case CF_OEQ: loop([](auto x, auto y, bool u) { return !u && x == y; }); break;
  case CF_OGT: loop([](auto x, auto y, bool u) { return !u && x > y; }); break;
  case CF_OGE: loop([](auto x, auto y, bool u) { return !u && x >= y; }); break;
  case CF_OLT: loop([](auto x, auto y, bool u) { return !u && x < y; }); break;
  case CF_OLE: loop([](auto x, auto y, bool u) { return !u && x <= y; }); break;
  case CF_ONE: loop([](auto x, auto y, bool u) { return !u && x != y; }); break;
  case CF_ORD: loop([](auto, auto, bool u) { return !u; }); break;
  case CF_UEQ: loop([](auto x, auto y, bool u) { return u || x == y; }); break;
  case CF_UGT: loop([](auto x, auto y, bool u) { return u || x > y; }); break;
  case CF_UGE: loop([](auto x, auto y, bool u) { return u || x >= y; }); break;
  case CF_ULT: loop([](auto x, auto y, bool u) { return u || x < y; }); break;
  case CF_ULE: loop([](auto x, auto y, bool u) { return u || x <= y; }); break;
  case CF_UNE: loop([](auto x, auto y, bool u) { return u || x != y; }); break;
  case CF_UNO: loop([](auto, auto, bool u) { return u; }); break;
  default: loop([](auto, auto, bool) { return true; }); break;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Integers: computed on 64-bit views, truncated to the width (wrapping).
//===----------------------------------------------------------------------===//
template <EK K> struct Ops {
  using T = IT<K>;
  using S = typename T::S;
  static constexpr int W = T::bits;
  static uint64_t allOnes() { return ~uint64_t(0); }
  static int64_t smin() { return W == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (W - 1)); }
};

#define TESSERA_IOP(NAME, EXPR)                                                               \
  struct NAME {                                                                               \
    template <EK K> static typename IT<K>::S ap(typename IT<K>::S x, typename IT<K>::S y) {   \
      using T = IT<K>;                                                                        \
      constexpr int W = T::bits;                                                              \
      (void)W;                                                                                \
      int64_t sa = T::s(x), sb = T::s(y);                                                     \
      uint64_t ua = T::u(x), ub = T::u(y);                                                    \
      (void)sa; (void)sb; (void)ua; (void)ub;                                                 \
      EXPR                                                                                    \
    }                                                                                         \
  };
TESSERA_IOP(IAdd, return T::from(ua + ub);)
TESSERA_IOP(ISub, return T::from(ua - ub);)
TESSERA_IOP(IMul, return T::from(ua * ub);)
TESSERA_IOP(IAnd, return T::from(ua & ub);)
TESSERA_IOP(IOr, return T::from(ua | ub);)
TESSERA_IOP(IXor, return T::from(ua ^ ub);)
TESSERA_IOP(IMaxS, return sa >= sb ? x : y;)
TESSERA_IOP(IMinS, return sa <= sb ? x : y;)
TESSERA_IOP(IMaxU, return ua >= ub ? x : y;)
TESSERA_IOP(IMinU, return ua <= ub ? x : y;)
// Division by zero does not trap on the GPU: it yields all ones (the PTX
// result); the quotient of MIN / -1 wraps to MIN; x % 0 is x.
TESSERA_IOP(IDivS, if (sb == 0) return T::from(~uint64_t(0));
            if (sb == -1) return T::from(uint64_t(0) - ua); return T::from(uint64_t(sa / sb));)
TESSERA_IOP(IDivU, if (ub == 0) return T::from(~uint64_t(0)); return T::from(ua / ub);)
TESSERA_IOP(IRemS, if (sb == 0) return x; if (sb == -1) return T::from(0);
            return T::from(uint64_t(sa % sb));)
TESSERA_IOP(IRemU, if (ub == 0) return x; return T::from(ua % ub);)
TESSERA_IOP(IFloorDivS, if (sb == 0) return T::from(~uint64_t(0));
            if (sb == -1) return T::from(uint64_t(0) - ua);
            int64_t q = sa / sb; if ((sa % sb) != 0 && ((sa < 0) != (sb < 0))) --q;
            return T::from(uint64_t(q));)
TESSERA_IOP(ICeilDivS, if (sb == 0) return T::from(~uint64_t(0));
            if (sb == -1) return T::from(uint64_t(0) - ua);
            int64_t q = sa / sb; if ((sa % sb) != 0 && ((sa < 0) == (sb < 0))) ++q;
            return T::from(uint64_t(q));)
TESSERA_IOP(ICeilDivU, if (ub == 0) return T::from(~uint64_t(0));
            return T::from(ua / ub + (ua % ub != 0 ? 1 : 0));)
// Shifts by >= the width clamp as PTX's do: 0, or the sign for arithmetic right shifts.
TESSERA_IOP(IShl, if (ub >= uint64_t(W)) return T::from(0); return T::from(ua << ub);)
TESSERA_IOP(IShrU, if (ub >= uint64_t(W)) return T::from(0); return T::from(ua >> ub);)
TESSERA_IOP(IShrS, if (ub >= uint64_t(W)) return T::from(sa < 0 ? ~uint64_t(0) : 0);
            return T::from(uint64_t(sa >> ub));)
TESSERA_IOP(IMulHiS, __int128 p = __int128(sa) * __int128(sb);
            return T::from(uint64_t(p >> W));)
TESSERA_IOP(IMulHiU, unsigned __int128 p = (unsigned __int128)(ua) * ub;
            return T::from(uint64_t(p >> W));)
#undef TESSERA_IOP

template <EK K, class F> bool ibin(Exec &e, const Instr &ins) {
  using S = typename IT<K>::S;
  int64_t n = N(e, ins);
  auto *d = P<S>(e, ins.dst);
  const S *a = P<S>(e, ins.a);
  const S *b = P<S>(e, ins.b);
  for (int64_t i = 0; i < n; ++i)
    d[i] = F::template ap<K>(a[i], b[i]);
  return true;
}

template <EK K> bool iunary(Exec &e, const Instr &ins) {
  using T = IT<K>;
  using S = typename T::S;
  int64_t n = N(e, ins);
  auto *d = P<S>(e, ins.dst);
  const S *a = P<S>(e, ins.a);
  constexpr int W = T::bits;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t u = T::u(a[i]);
    int64_t s = T::s(a[i]);
    uint64_t r = 0;
    switch (ins.op) {
    case Op::AbsI: r = s < 0 ? uint64_t(0) - uint64_t(s) : uint64_t(s); break;
    case Op::CtPop: r = uint64_t(__builtin_popcountll(u)); break;
    case Op::Ctlz: r = u == 0 ? W : uint64_t(__builtin_clzll(u) - (64 - W)); break;
    default: r = u == 0 ? W : uint64_t(__builtin_ctzll(u)); break;
    }
    d[i] = T::from(r);
  }
  return true;
}

template <EK K> bool icmp(Exec &e, const Instr &ins) {
  using T = IT<K>;
  using S = typename T::S;
  int64_t n = N(e, ins);
  auto *d = P<uint8_t>(e, ins.dst);
  const S *a = P<S>(e, ins.a);
  const S *b = P<S>(e, ins.b);
  auto sl = [&](auto f) {
    for (int64_t i = 0; i < n; ++i)
      d[i] = f(T::s(a[i]), T::s(b[i])) ? 1 : 0;
  };
  auto ul = [&](auto f) {
    for (int64_t i = 0; i < n; ++i)
      d[i] = f(T::u(a[i]), T::u(b[i])) ? 1 : 0;
  };
  switch (ins.pred) {
  case CI_EQ: ul([](uint64_t x, uint64_t y) { return x == y; }); break;
  case CI_NE: ul([](uint64_t x, uint64_t y) { return x != y; }); break;
  case CI_SLT: sl([](int64_t x, int64_t y) { return x < y; }); break;
  case CI_SLE: sl([](int64_t x, int64_t y) { return x <= y; }); break;
  case CI_SGT: sl([](int64_t x, int64_t y) { return x > y; }); break;
  case CI_SGE: sl([](int64_t x, int64_t y) { return x >= y; }); break;
  case CI_ULT: ul([](uint64_t x, uint64_t y) { return x < y; }); break;
  case CI_ULE: ul([](uint64_t x, uint64_t y) { return x <= y; }); break;
  case CI_UGT: ul([](uint64_t x, uint64_t y) { return x > y; }); break;
  default: ul([](uint64_t x, uint64_t y) { return x >= y; }); break;
  }
  return true;
}

// select: the condition is a tile of i1 or one i1 for the whole tile.
template <unsigned B> bool selectOp(Exec &e, const Instr &ins) {
  using U = typename UBytes<B>::T;
  int64_t n = N(e, ins);
  auto *d = P<U>(e, ins.dst);
  const uint8_t *c = P<uint8_t>(e, ins.a);
  const U *x = P<U>(e, ins.b);
  const U *y = P<U>(e, ins.c);
  if (ins.flag) { // scalar condition
    const U *src = c[0] ? x : y;
    if (d != src)
      std::copy(src, src + n, d);
    return true;
  }
  for (int64_t i = 0; i < n; ++i)
    d[i] = c[i] ? x[i] : y[i];
  return true;
}

template <EK K> bool clampOp(Exec &e, const Instr &ins) {
  using T = FT<K>;
  int64_t n = N(e, ins);
  auto *d = P<typename T::S>(e, ins.dst);
  const auto *x = P<typename T::S>(e, ins.a);
  const auto *lo = P<typename T::S>(e, ins.b);
  const auto *hi = P<typename T::S>(e, ins.c);
  for (int64_t i = 0; i < n; ++i)
    d[i] = T::st(FMinNum::ap(FMaxNum::ap(T::ld(x[i]), T::ld(lo[i])), T::ld(hi[i])));
  return true;
}

template <class F> OpFn pickFloatBin(EK k) {
  return dispatchFloat(k, [](auto K) -> OpFn { return &fbin<decltype(K)::value, F>; });
}
template <class F> OpFn pickIntBin(EK k) {
  return dispatchInt(k, [](auto K) -> OpFn { return &ibin<decltype(K)::value, F>; });
}

} // namespace

bool resolveElementwise(Instr &ins, std::string &err) {
  EK k = ins.kind;
  bool fl = ekIsFloat(k), in = ekIsInt(k);
  auto needF = [&]() {
    if (!fl)
      err = std::string(opName(ins.op)) + " needs float elements, got " + ekName(k);
    return fl;
  };
  auto needI = [&]() {
    if (!in)
      err = std::string(opName(ins.op)) + " needs integer elements, got " + ekName(k);
    return in;
  };
  switch (ins.op) {
  case Op::AddF: return needF() && (ins.fn = pickFloatBin<FAdd>(k));
  case Op::SubF: return needF() && (ins.fn = pickFloatBin<FSub>(k));
  case Op::MulF: return needF() && (ins.fn = pickFloatBin<FMul>(k));
  case Op::DivF: return needF() && (ins.fn = pickFloatBin<FDiv>(k));
  case Op::MaximumF: return needF() && (ins.fn = pickFloatBin<FMaximum>(k));
  case Op::MinimumF: return needF() && (ins.fn = pickFloatBin<FMinimum>(k));
  case Op::MaxNumF: return needF() && (ins.fn = pickFloatBin<FMaxNum>(k));
  case Op::MinNumF: return needF() && (ins.fn = pickFloatBin<FMinNum>(k));
  case Op::MathBinary:
    return needF() && (ins.fn = dispatchFloat(k, [](auto K) -> OpFn { return &fmathBin<decltype(K)::value>; }));
  case Op::MathUnary:
    return needF() && (ins.fn = dispatchFloat(k, [](auto K) -> OpFn { return &fmathUn<decltype(K)::value>; }));
  case Op::NegF:
    return needF() && (ins.fn = dispatchFloat(k, [](auto K) -> OpFn { return &fneg<decltype(K)::value>; }));
  case Op::AbsF:
    return needF() && (ins.fn = dispatchFloat(k, [](auto K) -> OpFn { return &fabsOp<decltype(K)::value>; }));
  case Op::Fma:
    return needF() && (ins.fn = dispatchFloat(k, [](auto K) -> OpFn { return &ffma<decltype(K)::value>; }));
  case Op::Clamp:
    return needF() && (ins.fn = dispatchFloat(k, [](auto K) -> OpFn { return &clampOp<decltype(K)::value>; }));
  case Op::IsNaN: case Op::IsInf: case Op::IsFinite:
    if (!ekIsFloat(ins.kind2)) {
      err = "float classification needs float elements";
      return false;
    }
    ins.fn = dispatchFloat(ins.kind2, [](auto K) -> OpFn { return &fclassify<decltype(K)::value>; });
    return true;
  case Op::CmpF:
    if (!ekIsFloat(ins.kind2)) {
      err = "cmpf needs float operands";
      return false;
    }
    ins.fn = dispatchFloat(ins.kind2, [](auto K) -> OpFn { return &fcmp<decltype(K)::value>; });
    return true;
  case Op::CmpI:
    if (!ekIsInt(ins.kind2) && ins.kind2 != EK::Ptr) {
      err = "cmpi needs integer operands";
      return false;
    }
    ins.fn = dispatchInt(ins.kind2, [](auto K) -> OpFn { return &icmp<decltype(K)::value>; });
    return true;
  case Op::Select:
    ins.fn = dispatchSize(ekSize(k), [](auto B) -> OpFn { return &selectOp<decltype(B)::value>; });
    return true;
  case Op::AddI: return needI() && (ins.fn = pickIntBin<IAdd>(k));
  case Op::SubI: return needI() && (ins.fn = pickIntBin<ISub>(k));
  case Op::MulI: return needI() && (ins.fn = pickIntBin<IMul>(k));
  case Op::DivSI: return needI() && (ins.fn = pickIntBin<IDivS>(k));
  case Op::DivUI: return needI() && (ins.fn = pickIntBin<IDivU>(k));
  case Op::RemSI: return needI() && (ins.fn = pickIntBin<IRemS>(k));
  case Op::RemUI: return needI() && (ins.fn = pickIntBin<IRemU>(k));
  case Op::FloorDivSI: return needI() && (ins.fn = pickIntBin<IFloorDivS>(k));
  case Op::CeilDivSI: return needI() && (ins.fn = pickIntBin<ICeilDivS>(k));
  case Op::CeilDivUI: return needI() && (ins.fn = pickIntBin<ICeilDivU>(k));
  case Op::AndI: return needI() && (ins.fn = pickIntBin<IAnd>(k));
  case Op::OrI: return needI() && (ins.fn = pickIntBin<IOr>(k));
  case Op::XOrI: return needI() && (ins.fn = pickIntBin<IXor>(k));
  case Op::ShLI: return needI() && (ins.fn = pickIntBin<IShl>(k));
  case Op::ShRSI: return needI() && (ins.fn = pickIntBin<IShrS>(k));
  case Op::ShRUI: return needI() && (ins.fn = pickIntBin<IShrU>(k));
  case Op::MaxSI: return needI() && (ins.fn = pickIntBin<IMaxS>(k));
  case Op::MaxUI: return needI() && (ins.fn = pickIntBin<IMaxU>(k));
  case Op::MinSI: return needI() && (ins.fn = pickIntBin<IMinS>(k));
  case Op::MinUI: return needI() && (ins.fn = pickIntBin<IMinU>(k));
  case Op::MulHiSI: return needI() && (ins.fn = pickIntBin<IMulHiS>(k));
  case Op::MulHiUI: return needI() && (ins.fn = pickIntBin<IMulHiU>(k));
  case Op::AbsI: case Op::CtPop: case Op::Ctlz: case Op::Cttz:
    return needI() && (ins.fn = dispatchInt(k, [](auto K) -> OpFn { return &iunary<decltype(K)::value>; }));
  default:
    err = std::string("no elementwise implementation of ") + opName(ins.op);
    return false;
  }
}

} // namespace interp
} // namespace tessera
