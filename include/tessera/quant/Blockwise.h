// Blockwise 8-bit quantization (docs/kernels/blockwise_quant.md): one u8
// index into a sorted 256-entry code book per element, one f32 absmax per
// block of `blocksize` consecutive elements.
//
//   auto q = tessera::quant::quantize_blockwise(ctx, x);          // x: DeviceBuffer<float>
//   DeviceBuffer<float> y = tessera::quant::dequantize_blockwise<float>(ctx, q);
//
// The kernels are kernels_dsl/quant/blockwise_quant.tile, tuned per element
// count through TunedKernel; the block size is part of the call, not tuned.
// BlockwiseQuantizer keeps its compiled kernels between calls (the free
// functions build one per call).
#ifndef TESSERA_QUANT_BLOCKWISE_H
#define TESSERA_QUANT_BLOCKWISE_H

#include "tessera/Context.h"
#include "tessera/Memory.h"
#include "tessera/TunedKernel.h"
#include "tessera/Types.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tessera::quant {

/// The default block size for tensors (optimizer states use 256).
constexpr int kDefaultBlocksize = 4096;

/// The dynamic map (KERNELS.md section 4), 256 sorted fp32 codes. Signed:
/// code[0] = -0.99296875, code[127] = 0, code[255] = 1 (no -1); unsigned:
/// code[0] = 0, code[255] = 1. Only max_exponent_bits = 7 and total_bits = 8
/// are specified; other values throw tessera::Error.
std::vector<float> create_dynamic_map(bool signed_ = true, int max_exponent_bits = 7,
                                      int total_bits = 8);

/// True for 64, 128, 256, 512, 1024, 2048 and 4096.
bool isSupportedBlocksize(int blocksize);

/// A quantized tensor and what it takes to dequantize it.
struct QuantizedTensor {
  DeviceBuffer<uint8_t> codes;  ///< one per element
  DeviceBuffer<float> absmax;   ///< one per block: cdiv(count, blocksize)
  DeviceBuffer<float> code;     ///< the 256-entry code book used
  size_t count = 0;
  int blocksize = kDefaultBlocksize;
  ScalarType dtype = ScalarType::f32;  ///< the input's element type
};

/// The quantize/dequantize kernels of one context, compiled once per
/// (dtype, block size) and tuned per element count.
class BlockwiseQuantizer {
public:
  explicit BlockwiseQuantizer(Context &ctx, TunedKernelOptions tuning = {});
  ~BlockwiseQuantizer();
  BlockwiseQuantizer(BlockwiseQuantizer &&) noexcept;
  BlockwiseQuantizer &operator=(BlockwiseQuantizer &&) noexcept;

  /// q[i] = nearest code of x[i] / absmax[block]; absmax[b] = max |x| over block b.
  /// `code` holds 256 strictly increasing floats, `q` x.size() bytes, `absmax`
  /// cdiv(x.size(), blocksize). The codes are those of the specified binary
  /// search for any such book; the kernel reads them from bucket tables that
  /// this object rebuilds from `code` on `stream` before each call (one
  /// quantizer's calls must not run on several streams at once), falling
  /// back to the search for a book whose codes are closer than a bucket
  /// (blockwise_quant.md).
  template <class T>
  void quantize(const Stream &stream, const DeviceBuffer<T> &x, const DeviceBuffer<float> &code,
                DeviceBuffer<uint8_t> &q, DeviceBuffer<float> &absmax,
                int blocksize = kDefaultBlocksize) {
    quantizeRaw(stream, x.memory(), ScalarTypeOf<T>::value, x.size(), code, q, absmax, blocksize);
  }
  /// y[i] = code[q[i]] * absmax[i / blocksize], for i < y.size().
  template <class T>
  void dequantize(const Stream &stream, const DeviceBuffer<uint8_t> &q,
                  const DeviceBuffer<float> &code, const DeviceBuffer<float> &absmax,
                  DeviceBuffer<T> &y, int blocksize = kDefaultBlocksize) {
    dequantizeRaw(stream, q, code, absmax, y.memory(), ScalarTypeOf<T>::value, y.size(),
                  blocksize);
  }

  /// The untyped forms: `x`/`y` hold `count` elements of `dtype` (f32, f16, bf16).
  void quantizeRaw(const Stream &stream, const DeviceMemory &x, ScalarType dtype, size_t count,
                   const DeviceBuffer<float> &code, DeviceBuffer<uint8_t> &q,
                   DeviceBuffer<float> &absmax, int blocksize);
  void dequantizeRaw(const Stream &stream, const DeviceBuffer<uint8_t> &q,
                     const DeviceBuffer<float> &code, const DeviceBuffer<float> &absmax,
                     DeviceMemory &y, ScalarType dtype, size_t count, int blocksize);

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Throws tessera::Error unless `code` is strictly increasing (sizes are checked later).
void checkCodeBook(const std::vector<float> &code);
/// Quantizes `x` with the signed dynamic map (or `code`, 256 strictly increasing floats).
template <class T>
QuantizedTensor quantize_blockwise(Context &ctx, const DeviceBuffer<T> &x,
                                   int blocksize = kDefaultBlocksize,
                                   const std::vector<float> &code = create_dynamic_map()) {
  checkCodeBook(code);
  QuantizedTensor out;
  out.code = ctx.upload(code);
  if (code.size() != 256)
    out.code.reset();  // quantizeRaw reports the size
  out.codes = ctx.alloc<uint8_t>(x.size());
  out.count = x.size();
  out.blocksize = blocksize;
  out.dtype = ScalarTypeOf<T>::value;
  if (isSupportedBlocksize(blocksize))
    out.absmax = ctx.alloc<float>((x.size() + size_t(blocksize) - 1) / size_t(blocksize));
  BlockwiseQuantizer(ctx).quantize(ctx.stream(), x, out.code, out.codes, out.absmax, blocksize);
  return out;
}

/// Throws tessera::Error unless `wanted` is q's input type.
void checkDequantizeType(const QuantizedTensor &q, ScalarType wanted);

/// Dequantizes `q` into a new buffer of its input's element type; T must be
/// that type (q.dtype), else tessera::Error.
template <class T> DeviceBuffer<T> dequantize_blockwise(Context &ctx, const QuantizedTensor &q) {
  checkDequantizeType(q, ScalarTypeOf<T>::value);
  DeviceBuffer<T> y = ctx.alloc<T>(q.count);
  BlockwiseQuantizer(ctx).dequantize(ctx.stream(), q.codes, q.code, q.absmax, y, q.blocksize);
  return y;
}

} // namespace tessera::quant

#endif
