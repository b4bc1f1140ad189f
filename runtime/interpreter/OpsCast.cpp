// Casts between element kinds: integer extension/truncation (signedness from
// the op), int <-> float with one correct rounding, float <-> float.
#include "Numerics.h"

namespace tessera {
namespace interp {
namespace {

template <EK K> constexpr bool isIntK() { return K <= EK::I64; }

// int -> int. ins.flag: zero-extend (extui) instead of sign-extend.
template <EK S, EK D> bool intToInt(Exec &e, const Instr &ins) {
  using TS = IT<S>;
  using TD = IT<D>;
  int64_t n = N(e, ins);
  auto *d = P<typename TD::S>(e, ins.dst);
  const auto *a = P<typename TS::S>(e, ins.a);
  if (ins.flag) {
    for (int64_t i = 0; i < n; ++i)
      d[i] = TD::from(TS::u(a[i]));
  } else {
    for (int64_t i = 0; i < n; ++i)
      d[i] = TD::from(uint64_t(TS::s(a[i])));
  }
  return true;
}

template <EK D> typename FT<D>::S fromInt(int64_t s, uint64_t u, bool isUnsigned) {
  if constexpr (D == EK::F64)
    return isUnsigned ? double(u) : double(s);
  else if constexpr (D == EK::F32)
    return isUnsigned ? float(u) : float(s); // correctly rounded by the C++ conversion
  else {
    double v = isUnsigned ? stickyU64ToDouble(u)
                          : (s < 0 ? -stickyU64ToDouble(uint64_t(0) - uint64_t(s))
                                   : stickyU64ToDouble(uint64_t(s)));
    return FT<D>::fromDouble(v);
  }
}

// int -> float. ins.flag: unsigned source (uitofp).
template <EK S, EK D> bool intToFloat(Exec &e, const Instr &ins) {
  using TS = IT<S>;
  int64_t n = N(e, ins);
  auto *d = P<typename FT<D>::S>(e, ins.dst);
  const auto *a = P<typename TS::S>(e, ins.a);
  bool uns = ins.flag;
  for (int64_t i = 0; i < n; ++i)
    d[i] = fromInt<D>(TS::s(a[i]), TS::u(a[i]), uns);
  return true;
}

// float -> int, truncating toward zero and saturating like PTX cvt.rzi
// (NaN -> 0). ins.flag: unsigned destination (fptoui).
template <EK S, EK D> bool floatToInt(Exec &e, const Instr &ins) {
  using TD = IT<D>;
  int64_t n = N(e, ins);
  auto *d = P<typename TD::S>(e, ins.dst);
  const auto *a = P<typename FT<S>::S>(e, ins.a);
  constexpr int W = TD::bits;
  bool uns = ins.flag;
  // Bounds as doubles: [lo, hi] are the representable values.
  double lo, hi;
  if (uns) {
    lo = 0;
    hi = W == 64 ? 18446744073709551615.0 : double((uint64_t(1) << W) - 1);
  } else {
    lo = W == 64 ? -9223372036854775808.0 : -double(uint64_t(1) << (W - 1));
    hi = W == 64 ? 9223372036854775807.0 : double((uint64_t(1) << (W - 1)) - 1);
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = double(FT<S>::ld(a[i]));
    uint64_t r;
    if (std::isnan(v))
      r = 0;
    else {
      v = std::trunc(v);
      if (uns) {
        if (v <= lo)
          r = 0;
        else if (v >= hi)
          r = W == 64 ? ~uint64_t(0) : (uint64_t(1) << W) - 1;
        else
          r = uint64_t(v);
      } else {
        if (v <= lo)
          r = uint64_t(W == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (W - 1)));
        else if (v >= hi)
          r = W == 64 ? uint64_t(std::numeric_limits<int64_t>::max())
                      : (uint64_t(1) << (W - 1)) - 1;
        else
          r = uint64_t(int64_t(v));
      }
    }
    if constexpr (D == EK::I1)
      d[i] = uint8_t(r & 1);
    else
      d[i] = TD::from(r);
  }
  return true;
}

// float -> float: through double (exact for every source), rounded once.
template <EK S, EK D> bool floatToFloat(Exec &e, const Instr &ins) {
  int64_t n = N(e, ins);
  auto *d = P<typename FT<D>::S>(e, ins.dst);
  const auto *a = P<typename FT<S>::S>(e, ins.a);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr ((S == EK::F16 || S == EK::BF16) && D == EK::F32)
      d[i] = FT<S>::ld(a[i]);
    else if constexpr (S == EK::F32 && (D == EK::F16 || D == EK::BF16))
      d[i] = FT<D>::st(a[i]);
    else
      d[i] = FT<D>::fromDouble(double(FT<S>::ld(a[i])));
  }
  return true;
}

template <template <EK, EK> class F> struct Pick2 {
  template <class KS, class KD> static OpFn get(KS, KD) {
    return &F<KS::value, KD::value>::run;
  }
};

template <EK S, EK D> struct IntToIntF { static bool run(Exec &e, const Instr &i) { return intToInt<S, D>(e, i); } };
template <EK S, EK D> struct IntToFloatF { static bool run(Exec &e, const Instr &i) { return intToFloat<S, D>(e, i); } };
template <EK S, EK D> struct FloatToIntF { static bool run(Exec &e, const Instr &i) { return floatToInt<S, D>(e, i); } };
template <EK S, EK D> struct FloatToFloatF { static bool run(Exec &e, const Instr &i) { return floatToFloat<S, D>(e, i); } };

} // namespace

bool resolveCast(Instr &ins, std::string &err) {
  EK s = ins.kind2, d = ins.kind;
  bool si = ekIsInt(s) || s == EK::Ptr, di = ekIsInt(d) || d == EK::Ptr;
  bool sf = ekIsFloat(s), df = ekIsFloat(d);
  switch (ins.op) {
  case Op::ExtSI: case Op::ExtUI: case Op::TruncI:
    if (!si || !di)
      break;
    ins.flag = ins.op == Op::ExtUI;
    ins.fn = dispatchInt(s, [&](auto KS) {
      return dispatchInt(d, [&](auto KD) -> OpFn { return Pick2<IntToIntF>::get(KS, KD); });
    });
    return true;
  case Op::SIToFP: case Op::UIToFP:
    if (!si || !df)
      break;
    ins.flag = ins.op == Op::UIToFP;
    ins.fn = dispatchInt(s, [&](auto KS) {
      return dispatchFloat(d, [&](auto KD) -> OpFn { return Pick2<IntToFloatF>::get(KS, KD); });
    });
    return true;
  case Op::FPToSI: case Op::FPToUI:
    if (!sf || !di)
      break;
    ins.flag = ins.op == Op::FPToUI;
    ins.fn = dispatchFloat(s, [&](auto KS) {
      return dispatchInt(d, [&](auto KD) -> OpFn { return Pick2<FloatToIntF>::get(KS, KD); });
    });
    return true;
  case Op::FloatCast:
    if (!sf || !df)
      break;
    ins.fn = dispatchFloat(s, [&](auto KS) {
      return dispatchFloat(d, [&](auto KD) -> OpFn { return Pick2<FloatToFloatF>::get(KS, KD); });
    });
    return true;
  default:
    break;
  }
  err = std::string(opName(ins.op)) + " from " + ekName(s) + " to " + ekName(d) +
        " is not supported";
  return false;
}

} // namespace interp
} // namespace tessera
