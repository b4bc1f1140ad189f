// Exact emulation of the element types: storage <-> compute conversions with
// round-to-nearest-even, integer views at the type's width.
#ifndef TESSERA_INTERP_NUMERICS_H
#define TESSERA_INTERP_NUMERICS_H

#include "Program.h"
#include "tessera/Float8.h"
#include "tessera/Half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessera {
namespace interp {

template <class To, class From> inline To bitCast(From f) {
  static_assert(sizeof(To) == sizeof(From), "width");
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}

/// A double rounded (once, to nearest even) to a binary format with `mbits`
/// stored mantissa bits and `ebits` exponent bits (f16: 10/5, bf16: 7/8).
inline uint16_t doubleToSmall(double d, int mbits, int ebits) {
  uint64_t x = bitCast<uint64_t>(d);
  uint16_t sign = uint16_t((x >> 63) << 15);
  uint32_t expAll = (1u << ebits) - 1;
  if (std::isnan(d))
    return uint16_t(sign | (expAll << mbits) | (1u << (mbits - 1)) |
                    uint32_t((x >> (52 - mbits)) & ((1u << (mbits - 1)) - 1)));
  double a = std::fabs(d);
  if (std::isinf(a))
    return uint16_t(sign | (expAll << mbits));
  if (a == 0)
    return sign;
  int bias = (1 << (ebits - 1)) - 1;
  int emin = 1 - bias;
  int ex;
  std::frexp(a, &ex); // a = f * 2^ex, f in [0.5, 1)
  int E = ex - 1;
  int q = (E < emin ? emin : E) - mbits; // quantum exponent
  double r = std::nearbyint(std::ldexp(a, -q));
  uint64_t m = uint64_t(r);
  uint64_t bits;
  if (E < emin)
    bits = m; // subnormal (m == 2^mbits becomes the smallest normal)
  else
    bits = (uint64_t(E + bias) << mbits) + (m - (uint64_t(1) << mbits));
  if ((bits >> mbits) >= expAll)
    return uint16_t(sign | (expAll << mbits));
  return uint16_t(sign | bits);
}

inline uint16_t floatToHalf(float f) { return f16::fromFloat(f); }
inline float halfToFloat(uint16_t h) { return f16::toFloat(h); }
inline uint16_t floatToBF16(float f) { return bf16::fromFloat(f); }
inline float bf16ToFloat(uint16_t h) { return bf16::toFloat(h); }

/// Integer magnitude to double keeping a sticky bit, so that a later
/// rounding to <= 51 bits of precision is correct.
inline double stickyU64ToDouble(uint64_t m) {
  if (m < (uint64_t(1) << 53))
    return double(m);
  int lz = __builtin_clzll(m);
  int s = 64 - lz - 53;
  uint64_t kept = m >> s;
  if (m & ((uint64_t(1) << s) - 1))
    kept |= 1;
  return std::ldexp(double(kept), s);
}

/// Tensor-core tf32: 10 mantissa bits, round to nearest, ties away from zero.
inline float roundTF32(float f) {
  uint32_t x = bitCast<uint32_t>(f);
  if ((x & 0x7f800000u) == 0x7f800000u)
    return f; // inf / NaN unchanged
  x = (x + 0x1000u) & ~0x1fffu;
  return bitCast<float>(x);
}

//===----------------------------------------------------------------------===//
// Float kinds: storage S, compute type C (float for f16/bf16/f32).
template <EK K> struct FT;
template <> struct FT<EK::F32> {
  using S = float;
  using C = float;
  static C ld(S s) { return s; }
  static S st(C c) { return c; }
  static S fromDouble(double d) { return float(d); }
};
template <> struct FT<EK::F64> {
  using S = double;
  using C = double;
  static C ld(S s) { return s; }
  static S st(C c) { return c; }
  static S fromDouble(double d) { return d; }
};
template <> struct FT<EK::F16> {
  using S = uint16_t;
  using C = float;
  static C ld(S s) { return halfToFloat(s); }
  static S st(C c) { return floatToHalf(c); }
  static S fromDouble(double d) { return doubleToSmall(d, 10, 5); }
};
template <> struct FT<EK::BF16> {
  using S = uint16_t;
  using C = float;
  static C ld(S s) { return bf16ToFloat(s); }
  static S st(C c) { return floatToBF16(c); }
  static S fromDouble(double d) { return doubleToSmall(d, 7, 8); }
};

// 8-bit floats (host type H: f8e4m3, f8e5m2) compute in float; a double
// rounds through float, as the GPU's conversion (from f32 only) does.
template <class H> struct Float8FT {
  using S = uint8_t;
  using C = float;
  static C ld(S s) { return H::toFloat(s); }
  static S st(C c) { return H::fromFloat(c); }
  static S fromDouble(double d) { return H::fromFloat(float(d)); }
};
template <> struct FT<EK::F8E4M3> : Float8FT<f8e4m3> {};
template <> struct FT<EK::F8E5M2> : Float8FT<f8e5m2> {};

//===----------------------------------------------------------------------===//
// Integer kinds: storage S; s() sign-extends, u() zero-extends to 64 bits;
// from() truncates a 64-bit result to the width.
template <EK K> struct IT;
template <> struct IT<EK::I1> {
  using S = uint8_t;
  static constexpr int bits = 1;
  static int64_t s(S v) { return v ? -1 : 0; }
  static uint64_t u(S v) { return v & 1; }
  static S from(uint64_t v) { return S(v & 1); }
};
#define TESSERA_INT_TRAIT(K, T, UT, B)                                                        \
  template <> struct IT<EK::K> {                                                               \
    using S = T;                                                                               \
    static constexpr int bits = B;                                                             \
    static int64_t s(S v) { return int64_t(v); }                                               \
    static uint64_t u(S v) { return uint64_t(UT(v)); }                                         \
    static S from(uint64_t v) { return S(UT(v)); }                                             \
  };
TESSERA_INT_TRAIT(I8, int8_t, uint8_t, 8)
TESSERA_INT_TRAIT(I16, int16_t, uint16_t, 16)
TESSERA_INT_TRAIT(I32, int32_t, uint32_t, 32)
TESSERA_INT_TRAIT(I64, int64_t, uint64_t, 64)
#undef TESSERA_INT_TRAIT

/// Unsigned storage type of a given byte size (for copies).
template <unsigned B> struct UBytes;
template <> struct UBytes<1> { using T = uint8_t; };
template <> struct UBytes<2> { using T = uint16_t; };
template <> struct UBytes<4> { using T = uint32_t; };
template <> struct UBytes<8> { using T = uint64_t; };

/// Calls f(std::integral_constant<EK, K>) for the runtime kind k.
template <class F> inline auto dispatchFloat(EK k, F &&f) {
  switch (k) {
  case EK::F16: return f(std::integral_constant<EK, EK::F16>());
  case EK::BF16: return f(std::integral_constant<EK, EK::BF16>());
  case EK::F8E4M3: return f(std::integral_constant<EK, EK::F8E4M3>());
  case EK::F8E5M2: return f(std::integral_constant<EK, EK::F8E5M2>());
  case EK::F64: return f(std::integral_constant<EK, EK::F64>());
  default: return f(std::integral_constant<EK, EK::F32>());
  }
}
template <class F> inline auto dispatchInt(EK k, F &&f) {
  switch (k) {
  case EK::I1: return f(std::integral_constant<EK, EK::I1>());
  case EK::I8: return f(std::integral_constant<EK, EK::I8>());
  case EK::I16: return f(std::integral_constant<EK, EK::I16>());
  case EK::I64: case EK::Ptr: return f(std::integral_constant<EK, EK::I64>());
  default: return f(std::integral_constant<EK, EK::I32>());
  }
}
template <class F> inline auto dispatchSize(unsigned bytes, F &&f) {
  switch (bytes) {
  case 1: return f(std::integral_constant<unsigned, 1>());
  case 2: return f(std::integral_constant<unsigned, 2>());
  case 4: return f(std::integral_constant<unsigned, 4>());
  default: return f(std::integral_constant<unsigned, 8>());
  }
}

/// Value of element `i` of a slot of kind k as a double (for printing).
inline double elemAsDouble(EK k, const uint8_t *p, int64_t i) {
  switch (k) {
  case EK::I1: return p[i] ? 1 : 0;
  case EK::I8: return reinterpret_cast<const int8_t *>(p)[i];
  case EK::I16: return reinterpret_cast<const int16_t *>(p)[i];
  case EK::I32: return reinterpret_cast<const int32_t *>(p)[i];
  case EK::I64: return double(reinterpret_cast<const int64_t *>(p)[i]);
  case EK::F16: return halfToFloat(reinterpret_cast<const uint16_t *>(p)[i]);
  case EK::BF16: return bf16ToFloat(reinterpret_cast<const uint16_t *>(p)[i]);
  case EK::F32: return reinterpret_cast<const float *>(p)[i];
  case EK::F64: return reinterpret_cast<const double *>(p)[i];
  case EK::Ptr: return double(reinterpret_cast<const uint64_t *>(p)[i]);
  case EK::F8E4M3: return f8e4m3::toFloat(p[i]);
  case EK::F8E5M2: return f8e5m2::toFloat(p[i]);
  }
  return 0;
}

} // namespace interp
} // namespace tessera

#endif
