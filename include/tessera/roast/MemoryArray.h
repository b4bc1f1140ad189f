// The shared parameter array of a ROAST model (docs/kernels/roast.md): one
// 1-D array M of H trainable values on the device and its gradient dM. Every
// ROAST layer of the model reads its weights from M through a hash and adds
// its gradient into dM (global memory sharing, GMS). The layers keep a
// reference to the array: it must outlive them, and it does not move.
//
//   tessera::roast::MemoryArray mem(ctx, 1 << 20, /*C=*/1.0f, /*seed=*/7);
//   tessera::roast::Linear fc1(mem, 512, 256, TileHash::fromSeed(1));
//   ...
//   mem.zeroGrad(stream); fc1.backward(...); mem.sgdStep(stream, 0.01f);
#ifndef TESSERA_ROAST_MEMORYARRAY_H
#define TESSERA_ROAST_MEMORYARRAY_H

#include "tessera/Context.h"
#include "tessera/Memory.h"
#include "tessera/Stream.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tessera {
class TunedKernel;
}

namespace tessera::roast {

class MemoryArray {
public:
  /// H = `size` values drawn from U(-1/C, 1/C): value i is (2u - 1)/C with
  /// u = (std::mt19937_64(seed) draw i >> 40) / 2^24, in [0, 1). dM starts at
  /// zero. Throws tessera::Error unless 0 < size < 2^31 and C is finite and > 0.
  MemoryArray(Context &ctx, int64_t size, float C = 1.0f, uint64_t seed = 0);
  /// Explicit initial values (size() = values.size()).
  MemoryArray(Context &ctx, const std::vector<float> &values, float C = 1.0f);
  ~MemoryArray();
  MemoryArray(const MemoryArray &) = delete;
  MemoryArray &operator=(const MemoryArray &) = delete;

  Context &context() const { return *ctx_; }
  int64_t size() const { return size_; }
  /// The C of the initialisation; layers default to lambda = C / sqrt(fan-in).
  float C() const { return c_; }
  DeviceBuffer<float> &values() { return values_; }
  const DeviceBuffer<float> &values() const { return values_; }
  DeviceBuffer<float> &grad() { return grad_; }
  const DeviceBuffer<float> &grad() const { return grad_; }

  /// dM = 0, queued on `stream`.
  void zeroGrad(const Stream &stream);
  /// M -= lr * dM (plain SGD, kernels_dsl/roast/roast_sgd.tile), then dM = 0
  /// when `zeroGrad`.
  void sgdStep(const Stream &stream, float lr, bool zeroGrad = true);

private:
  Context *ctx_;
  int64_t size_;
  float c_;
  DeviceBuffer<float> values_, grad_;
  std::unique_ptr<TunedKernel> sgd_[2];
};

} // namespace tessera::roast

#endif
