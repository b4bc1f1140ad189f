// 8-bit floating-point storage types for host code, the two of Hopper's
// tensor cores (Triton's float8e4nv and float8e5):
//   tessera::f8e4m3  4 exponent bits (bias 7), 3 mantissa bits, no infinities;
//                    largest 448, 0x7F / 0xFF are NaN ("E4M3FN");
//   tessera::f8e5m2  5 exponent bits (bias 15), 2 mantissa bits, IEEE-like
//                    infinities and NaNs; largest finite 57344.
// Conversion from float rounds to nearest even and saturates: a finite value
// or infinity beyond the largest finite one becomes it (with its sign), as
// the GPU's cvt.rn.satfinite does; NaN becomes 0x7F. Both only store bits
// and convert; they do no arithmetic. DeviceBuffer<f8e4m3> maps to *f8e4m3.
#ifndef TESSERA_FLOAT8_H
#define TESSERA_FLOAT8_H

#include "tessera/Half.h"

#include <cmath>
#include <cstdint>

namespace tessera {

namespace detail {
/// float -> an 8-bit format with `mbits` mantissa and `ebits` exponent bits,
/// whose largest finite encoding (sign cleared) is `maxBits`.
inline uint8_t floatToFloat8(float value, int mbits, int ebits, uint32_t maxBits) {
  uint32_t x = floatBits(value);
  uint8_t sign = static_cast<uint8_t>((x >> 24) & 0x80u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u)
    return 0x7f; // NaN
  if (a == 0x7f800000u)
    return static_cast<uint8_t>(sign | maxBits);
  if (a < 0x00800000u) // zero or an f32 subnormal: far below half the smallest 8-bit subnormal
    return sign;
  int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
  int E = static_cast<int>(a >> 23) - 127;
  uint32_t mant = (a & 0x7fffffu) | 0x800000u; // value = mant * 2^(E - 23)
  int q = (E < emin ? emin : E) - mbits;       // the quantum's exponent
  int shift = q - (E - 23);
  if (shift >= 26) // below a quarter of the quantum
    return sign;
  uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u)))
    ++r; // value ~ r * 2^q
  // A subnormal that rounds up to 2^mbits, or a normal mantissa that rounds
  // up to 2^(mbits+1), carries into the exponent field by itself.
  uint32_t bits = E < emin ? r : (static_cast<uint32_t>(E + bias) << mbits) + (r - (1u << mbits));
  if (bits > maxBits)
    bits = maxBits;
  return static_cast<uint8_t>(sign | bits);
}

/// An 8-bit format's value: (2^mbits + m) * 2^(e - bias - mbits), or
/// subnormal m * 2^(1 - bias - mbits).
inline float float8ToFloat(uint8_t b, int mbits, int ebits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t e = (b >> mbits) & ((1u << ebits) - 1u), m = b & ((1u << mbits) - 1u);
  float v = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - mbits)
                   : std::ldexp(static_cast<float>((1u << mbits) + m),
                                static_cast<int>(e) - bias - mbits);
  return (b & 0x80u) ? -v : v;
}
} // namespace detail

namespace detail {
/// What both 8-bit types share: the bits, and the conversions of `Self`.
template <class Self> struct Float8Bits {
  uint8_t bits = 0;
  static Self fromBits(uint8_t b) {
    Self h;
    h.bits = b;
    return h;
  }
  float toFloat() const { return Self::toFloat(bits); }
  explicit operator float() const { return toFloat(); }
  bool operator==(const Self &o) const { return bits == o.bits; }
  bool operator!=(const Self &o) const { return bits != o.bits; }
};
} // namespace detail

struct f8e4m3 : detail::Float8Bits<f8e4m3> {
  f8e4m3() = default;
  explicit f8e4m3(float value) { bits = fromFloat(value); }
  using Float8Bits::toFloat;

  static constexpr float kMax = 448.0f;
  static uint8_t fromFloat(float value) { return detail::floatToFloat8(value, 3, 4, 0x7e); }
  static float toFloat(uint8_t b) {
    if ((b & 0x7fu) == 0x7fu)
      return NAN;
    return detail::float8ToFloat(b, 3, 4);
  }
};

struct f8e5m2 : detail::Float8Bits<f8e5m2> {
  f8e5m2() = default;
  explicit f8e5m2(float value) { bits = fromFloat(value); }
  using Float8Bits::toFloat;

  static constexpr float kMax = 57344.0f;
  static uint8_t fromFloat(float value) { return detail::floatToFloat8(value, 2, 5, 0x7b); }
  static float toFloat(uint8_t b) {
    if ((b & 0x7cu) == 0x7cu) // exponent all ones
      return (b & 3u) ? NAN : ((b & 0x80u) ? -INFINITY : INFINITY);
    return detail::float8ToFloat(b, 2, 5);
  }
};

static_assert(sizeof(f8e4m3) == 1 && sizeof(f8e5m2) == 1, "8-bit storage types");

} // namespace tessera

#endif
