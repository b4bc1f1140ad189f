// The inside of AdamW8bit (include/tessera/optim/AdamW8bit.h): where each
// tensor's state lives and the launch groups of a step. Shared by
// AdamW8bit.cpp (construction, step) and StateFile.cpp (save, load).
#ifndef TESSERA_KERNELS_OPTIM_OPTIMIZERSTATE_H
#define TESSERA_KERNELS_OPTIM_OPTIMIZERSTATE_H

#include "CodeBuckets.h"  // kernels_dsl/quant: the 8-bit step shares the quantizer's tables
#include "tessera/optim/AdamW8bit.h"

#include <memory>
#include <optional>
#include <vector>

namespace tessera::optim {

/// Where one tensor's state is: m8/v8 (or m32/v32) from element `offset`,
/// absmax1/absmax2 from block `offset / kStateBlocksize` (8-bit tensors).
struct TensorSlot {
  ParamGrad tensor;
  bool eightBit = false;
  size_t offset = 0;
  size_t blocks() const { return (tensor.count + kStateBlocksize - 1) / kStateBlocksize; }
};

/// The device buffers of all states. Every 8-bit tensor starts at a multiple
/// of 256 elements, so that its blocks are its own.
struct StateBuffers {
  DeviceBuffer<uint8_t> m8, v8;
  DeviceBuffer<float> absmax1, absmax2;
  DeviceBuffer<float> m32, v32;
  size_t bytes() const {
    return m8.bytes() + v8.bytes() + absmax1.bytes() + absmax2.bytes() + m32.bytes() +
           v32.bytes();
  }
};

/// The tensors that one launch steps: one path (8-bit or f32 states), one
/// (parameter, gradient) type pair, and the tables of kernels_dsl/optim/adam8bit.tile.
struct LaunchGroup {
  bool eightBit = false;
  ScalarType paramType = ScalarType::f32, gradType = ScalarType::f32;
  std::vector<size_t> tensors;
  DeviceBuffer<int64_t> params, grads;           // the tensors' addresses
  DeviceBuffer<int32_t> owner, vstart, qstart, count;
  int32_t vtotal = 0;                            // program space: a multiple of 4096
  std::unique_ptr<TunedKernel> kernel;
  bool configChosen = false;                     // tuned (on scratch copies) already
};

struct AdamW8bit::State {
  Context *ctx = nullptr;
  AdamOptions options;
  TunedKernelOptions tuning;
  int64_t step = 0;
  std::vector<TensorSlot> tensors;
  StateBuffers buffers;
  DeviceBuffer<float> code1, code2;  // signed and unsigned dynamic maps
  std::optional<quant::CodeBuckets> buckets1, buckets2;  // their bucket tables (8-bit tensors only)
  std::vector<LaunchGroup> groups;
};

/// The state file (StateFile.cpp): the image of `state`'s states, step and
/// options, and its parse, which checks everything against `state` and
/// returns new buffers without touching `state`.
std::string encodeStateFile(const AdamW8bit::State &state);
struct DecodedState {
  int64_t step = 0;
  AdamOptions options;
  StateBuffers buffers;
};
DecodedState decodeStateFile(const AdamW8bit::State &state, const std::string &bytes,
                             const std::string &path);

/// Tensor i's state, copied to the host (synchronizes).
TensorState readTensorState(const AdamW8bit::State &state, size_t i);

/// Allocates the state buffers for `tensors` (offsets must be set), zeroed
/// the way a fresh optimizer starts: codes for 0 (127 for m, 0 for v), absmax 0.
StateBuffers allocateStates(const Context &ctx, const std::vector<TensorSlot> &tensors);

} // namespace tessera::optim

#endif
