// create_dynamic_map (KERNELS.md section 4): the 256-entry code book of the
// 8-bit formats. Every step is fp32, as the specification's linspace is, so
// that the codes (and the codes quantized against them) match the reference.
#include "tessera/Error.h"
#include "tessera/quant/Blockwise.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace tessera::quant {

namespace {

// linspace(start, end, n) in fp32: the first half counts up from start and the
// second half down from end, so that both ends are exact.
std::vector<float> linspaceF32(float start, float end, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  const float step = (end - start) / float(n - 1);
  const int half = n / 2;
  for (int i = 0; i < n; ++i)
    v[size_t(i)] = i < half ? start + step * float(i) : end - step * float(n - 1 - i);
  return v;
}

} // namespace

std::vector<float> create_dynamic_map(bool signed_, int max_exponent_bits, int total_bits) {
  if (max_exponent_bits != 7 || total_bits != 8)
    throw Error("create_dynamic_map: only max_exponent_bits = 7 and total_bits = 8 are "
                "specified (256 codes); got max_exponent_bits = " +
                std::to_string(max_exponent_bits) + ", total_bits = " + std::to_string(total_bits));
  std::vector<float> data;
  for (int i = 0; i < max_exponent_bits; ++i) {
    const int n = signed_ ? (1 << i) + 1 : (1 << (i + 1)) + 1;
    std::vector<float> b = linspaceF32(0.1f, 1.0f, n);
    // The decade of this exponent, rounded to fp32 before it scales the means.
    const float scale = float(std::pow(10.0, double(i - (max_exponent_bits - 1))));
    for (int k = 0; k + 1 < n; ++k) {
      const float mean = (b[size_t(k)] + b[size_t(k) + 1]) / 2.0f;
      data.push_back(scale * mean);
      if (signed_)
        data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  if (data.size() != size_t(1) << total_bits)
    throw Error("create_dynamic_map: built " + std::to_string(data.size()) +
                " codes instead of 256 (internal error)");
  return data;
}

bool isSupportedBlocksize(int blocksize) {
  return blocksize >= 64 && blocksize <= 4096 && (blocksize & (blocksize - 1)) == 0;
}

void checkDequantizeType(const QuantizedTensor &q, ScalarType wanted) {
  if (q.dtype != wanted)
    throw Error("dequantize_blockwise: the tensor was quantized from " +
                DType{q.dtype, 0}.str() + ", asked to dequantize to " + DType{wanted, 0}.str() +
                " (dequantize returns the input's type)");
}

} // namespace tessera::quant
