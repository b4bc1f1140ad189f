// 8-bit blockwise Adam and AdamW (docs/kernels/blockwise_quant.md,
// KERNELS.md section 4) over a list of parameter tensors.
//
//   std::vector<tessera::optim::ParamGrad> list = {
//       tessera::optim::ParamGrad::of(w, dw), tessera::optim::ParamGrad::of(b, db)};
//   tessera::optim::AdamW8bit opt(ctx, list);          // lr 1e-3, (0.9, 0.999), 1e-8, wd 1e-2
//   ... compute gradients into dw, db ...
//   opt.step(ctx.stream());
//   opt.save("opt.state");  ...  opt.load("opt.state");
//
// Tensors of 4096 elements or more keep m and v as 8-bit codes (signed and
// unsigned dynamic map) with one f32 absmax per 256 elements; smaller ones
// keep f32 states. A step is one launch for all the 8-bit tensors and one for
// all the small ones (per parameter/gradient type pair). Parameters and
// gradients may be f32, f16 or bf16; the optimizer holds their addresses, so
// the allocations must outlive it.
#ifndef TESSERA_OPTIM_ADAMW8BIT_H
#define TESSERA_OPTIM_ADAMW8BIT_H

#include "tessera/Context.h"
#include "tessera/Memory.h"
#include "tessera/TunedKernel.h"
#include "tessera/Types.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::optim {

/// One parameter tensor and its gradient (same element count), by address:
/// the allocations must outlive the optimizer (moving a DeviceBuffer object
/// is fine, freeing or resizing it is not).
struct ParamGrad {
  DeviceAddress param = 0, grad = 0;
  size_t paramBytes = 0, gradBytes = 0;  ///< the buffers' sizes, for the checks
  size_t count = 0;
  ScalarType paramType = ScalarType::f32;
  ScalarType gradType = ScalarType::f32;

  template <class P, class G>
  static ParamGrad of(const DeviceBuffer<P> &param, const DeviceBuffer<G> &grad) {
    return ParamGrad{param.address(), grad.address(), param.bytes(), grad.bytes(), param.size(),
                     ScalarTypeOf<P>::value, ScalarTypeOf<G>::value};
  }
};

struct AdamOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  /// Decoupled: p *= 1 - lr * wd after the Adam update, when wd > 0.
  float weightDecay = 1e-2f;
};

/// Tensors with fewer elements than this keep f32 states.
constexpr size_t kMinEightBitElements = 4096;
/// Elements per absmax of the 8-bit states.
constexpr size_t kStateBlocksize = 256;

/// One tensor's state as host arrays (tests, inspection).
struct TensorState {
  bool eightBit = false;
  std::vector<uint8_t> m8, v8;           ///< codes (8-bit tensors)
  std::vector<float> absmax1, absmax2;   ///< one per 256 elements (8-bit tensors)
  std::vector<float> m32, v32;           ///< f32 states (small tensors)
};

class AdamW8bit {
public:
  /// Throws tessera::Error for an empty list, a null buffer, mismatched
  /// counts, a buffer smaller than its count, or an unsupported type.
  AdamW8bit(Context &ctx, std::vector<ParamGrad> params, AdamOptions options = {},
            TunedKernelOptions tuning = {});
  virtual ~AdamW8bit();
  AdamW8bit(AdamW8bit &&) noexcept;
  AdamW8bit &operator=(AdamW8bit &&) noexcept;

  /// One step for every tensor (the step count goes up first: the first step is t = 1).
  /// The kernels are queued on `stream`.
  void step(const Stream &stream);

  /// Steps taken so far.
  int64_t stepCount() const;
  AdamOptions &options();
  const AdamOptions &options() const;
  /// Device bytes of optimizer state (codes, absmax, f32 states; not the
  /// launch tables).
  size_t stateBytes() const;
  size_t tensorCount() const;
  /// Tensor i's state, copied to the host (synchronizes).
  TensorState stateOf(size_t i) const;

  /// Writes the step, the hyper-parameters, the tensors' shapes and types and
  /// all states to `path` (a temporary file renamed over it). Synchronizes.
  void save(const std::string &path) const;
  /// Reads a file written by save(). The file is checked completely (magic,
  /// version, length, checksum, the tensor list against this optimizer's)
  /// before anything changes; on any error this throws tessera::Error and the
  /// optimizer is as it was. Restores the step count and hyper-parameters.
  void load(const std::string &path);

  /// The implementation's (kernels_dsl/optim/OptimizerState.h); opaque here.
  struct State;

protected:
  std::unique_ptr<State> state_;
};

/// Adam: the same 8-bit step with no weight decay by default (a weight decay
/// given in `options` is applied as AdamW8bit applies it).
class Adam8bit : public AdamW8bit {
public:
  static AdamOptions defaults() {
    AdamOptions o;
    o.weightDecay = 0.0f;
    return o;
  }
  Adam8bit(Context &ctx, std::vector<ParamGrad> params, AdamOptions options = defaults(),
           TunedKernelOptions tuning = {})
      : AdamW8bit(ctx, std::move(params), options, tuning) {}
};

} // namespace tessera::optim

#endif
