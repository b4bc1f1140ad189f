// 16-bit floating-point storage types for host code: tessera::f16 (IEEE
// binary16) and tessera::bf16 (bfloat16). They only store bits and convert
// to and from float (round to nearest even); they do no arithmetic.
// DeviceBuffer<f16> and DeviceBuffer<bf16> map to *f16 and *bf16 parameters.
#ifndef TESSERA_HALF_H
#define TESSERA_HALF_H

#include <cstdint>
#include <cstring>

namespace tessera {

namespace detail {
inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
inline float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
} // namespace detail

struct f16 {
  uint16_t bits = 0;

  f16() = default;
  explicit f16(float value) : bits(fromFloat(value)) {}
  static f16 fromBits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
  float toFloat() const { return toFloat(bits); }
  explicit operator float() const { return toFloat(); }
  bool operator==(const f16 &o) const { return bits == o.bits; }
  bool operator!=(const f16 &o) const { return bits != o.bits; }

  static uint16_t fromFloat(float value) {
    uint32_t x = detail::floatBits(value);
    uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) // inf or NaN (NaN stays quiet NaN with its top payload bits)
      return sign | 0x7c00u | (a > 0x7f800000u ? (0x200u | ((a >> 13) & 0x3ffu)) : 0u);
    if (a >= 0x477ff000u) // >= 65520 rounds to infinity
      return sign | 0x7c00u;
    if (a < 0x38800000u) { // below 2^-14: a subnormal half or zero
      if (a < 0x33000000u) // below 2^-25: rounds to zero
        return sign;
      uint32_t exp = a >> 23;
      uint32_t mant = (a & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126u - exp; // 14..24
      uint32_t result = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t halfway = 1u << (shift - 1u);
      if (rem > halfway || (rem == halfway && (result & 1u)))
        ++result;
      return static_cast<uint16_t>(sign | result);
    }
    uint32_t result = (a - 0x38000000u) >> 13; // rebias the exponent 127 -> 15
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (result & 1u)))
      ++result;
    return static_cast<uint16_t>(sign | result);
  }

  static float toFloat(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f)
      return detail::bitsFloat(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      float v = static_cast<float>(mant) * (1.0f / 16777216.0f); // mant * 2^-24
      return sign ? -v : v;
    }
    return detail::bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

struct bf16 {
  uint16_t bits = 0;

  bf16() = default;
  explicit bf16(float value) : bits(fromFloat(value)) {}
  static bf16 fromBits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
  float toFloat() const { return toFloat(bits); }
  explicit operator float() const { return toFloat(); }
  bool operator==(const bf16 &o) const { return bits == o.bits; }
  bool operator!=(const bf16 &o) const { return bits != o.bits; }

  static uint16_t fromFloat(float value) {
    uint32_t x = detail::floatBits(value);
    if ((x & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a quiet NaN
      return static_cast<uint16_t>((x >> 16) | 0x40u);
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
  static float toFloat(uint16_t b) { return detail::bitsFloat(static_cast<uint32_t>(b) << 16); }
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "16-bit storage types");

} // namespace tessera

#endif
