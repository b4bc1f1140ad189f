// AdamW8bit: the tensor list, the state layout, the launch groups and the
// step (kernels_dsl/optim/adam8bit.tile).
#include "OptimizerState.h"

#include "tessera/Error.h"
#include "tessera/KernelLibrary.h"
#include "tessera/quant/Blockwise.h"

#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace tessera::optim {

namespace {

constexpr size_t kGranule = 4096;  // adam8bit.tile's GRANULE

size_t roundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

size_t elementBytes(ScalarType t) { return t == ScalarType::f32 ? 4 : 2; }

void checkTensor(const ParamGrad &t, size_t i, std::set<DeviceAddress> &seen) {
  std::string which = "AdamW8bit: tensor " + std::to_string(i) + ": ";
  if (!t.param || !t.grad)
    throw Error(which + "null parameter or gradient buffer");
  if (t.count == 0)
    throw Error(which + "has no elements");
  for (ScalarType s : {t.paramType, t.gradType})
    if (s != ScalarType::f32 && s != ScalarType::f16 && s != ScalarType::bf16)
      throw Error(which + "element type " + DType{s, 0}.str() +
                  " is not supported (f32, f16 or bf16)");
  if (t.paramBytes < t.count * elementBytes(t.paramType))
    throw Error(which + "the parameter buffer holds " + std::to_string(t.paramBytes) +
                " bytes, " + std::to_string(t.count) + " elements need " +
                std::to_string(t.count * elementBytes(t.paramType)));
  if (t.gradBytes < t.count * elementBytes(t.gradType))
    throw Error(which + "the gradient buffer holds " + std::to_string(t.gradBytes) +
                " bytes, " + std::to_string(t.count) + " elements need " +
                std::to_string(t.count * elementBytes(t.gradType)));
  if (!seen.insert(t.param).second)
    throw Error(which + "its parameter buffer is already in the list");
}

void checkOptions(const AdamOptions &o) {
  auto bad = [](const std::string &what) { throw Error("AdamW8bit: " + what); };
  if (!(o.lr >= 0.0f) || !std::isfinite(o.lr))
    bad("lr must be a finite number >= 0, got " + std::to_string(o.lr));
  if (!(o.beta1 >= 0.0f && o.beta1 < 1.0f) || !(o.beta2 >= 0.0f && o.beta2 < 1.0f))
    bad("betas must lie in [0, 1), got (" + std::to_string(o.beta1) + ", " +
        std::to_string(o.beta2) + ")");
  if (!(o.eps >= 0.0f) || !(o.weightDecay >= 0.0f))
    bad("eps and weight decay must be >= 0");
}

// Each tensor's state offset: 8-bit tensors on 256-element boundaries in the
// code buffers, small tensors on 64-element boundaries in the f32 buffers.
void layOut(std::vector<TensorSlot> &tensors) {
  size_t eight = 0, small = 0;
  for (TensorSlot &s : tensors) {
    s.eightBit = s.tensor.count >= kMinEightBitElements;
    size_t &next = s.eightBit ? eight : small;
    s.offset = next;
    next += roundUp(s.tensor.count, s.eightBit ? kStateBlocksize : 64);
  }
  if (eight > size_t(INT32_MAX) - kGranule || small > size_t(INT32_MAX) - kGranule)
    throw Error("AdamW8bit: more than 2^31 state elements; the kernels index them with 32 bits");
}

// The tables of one launch: addresses, program-space starts (multiples of
// 4096), state offsets, counts, and the owner of each 4096-element granule.
void buildTables(const Context &ctx, const std::vector<TensorSlot> &tensors, LaunchGroup &g) {
  std::vector<int64_t> params, grads;
  std::vector<int32_t> owner, vstart, qstart, count;
  size_t v = 0;
  for (size_t k = 0; k < g.tensors.size(); ++k) {
    const TensorSlot &s = tensors[g.tensors[k]];
    params.push_back(int64_t(s.tensor.param));
    grads.push_back(int64_t(s.tensor.grad));
    vstart.push_back(int32_t(v));
    qstart.push_back(int32_t(s.offset));
    count.push_back(int32_t(s.tensor.count));
    size_t span = roundUp(s.tensor.count, kGranule);
    owner.insert(owner.end(), span / kGranule, int32_t(k));
    v += span;
  }
  if (v > size_t(INT32_MAX) - kGranule)
    throw Error("AdamW8bit: more than 2^31 elements in one launch");
  g.vtotal = int32_t(v);
  g.params = ctx.upload(params);
  g.grads = ctx.upload(grads);
  g.owner = ctx.upload(owner);
  g.vstart = ctx.upload(vstart);
  g.qstart = ctx.upload(qstart);
  g.count = ctx.upload(count);
}

} // namespace

StateBuffers allocateStates(const Context &ctx, const std::vector<TensorSlot> &tensors) {
  size_t eight = 0, small = 0;
  for (const TensorSlot &s : tensors) {
    if (s.eightBit)
      eight = std::max(eight, s.offset + roundUp(s.tensor.count, kStateBlocksize));
    else
      small = std::max(small, s.offset + roundUp(s.tensor.count, 64));
  }
  StateBuffers b;
  if (eight) {
    b.m8 = ctx.alloc<uint8_t>(eight);
    b.v8 = ctx.alloc<uint8_t>(eight);
    b.absmax1 = ctx.alloc<float>(eight / kStateBlocksize);
    b.absmax2 = ctx.alloc<float>(eight / kStateBlocksize);
    b.m8.memsetBytes(127);  // code1[127] = 0
    b.v8.zero();            // code2[0] = 0
    b.absmax1.zero();
    b.absmax2.zero();
  }
  if (small) {
    b.m32 = ctx.alloc<float>(small);
    b.v32 = ctx.alloc<float>(small);
    b.m32.zero();
    b.v32.zero();
  }
  return b;
}

AdamW8bit::AdamW8bit(Context &ctx, std::vector<ParamGrad> params, AdamOptions options,
                     TunedKernelOptions tuning)
    : state_(std::make_unique<State>()) {
  State &s = *state_;
  s.ctx = &ctx;
  s.options = options;
  s.tuning = tuning;
  checkOptions(options);
  if (params.empty())
    throw Error("AdamW8bit: the parameter list is empty");
  std::set<DeviceAddress> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    checkTensor(params[i], i, seen);
    s.tensors.push_back(TensorSlot{params[i]});
  }
  layOut(s.tensors);
  s.buffers = allocateStates(ctx, s.tensors);
  s.code1 = ctx.upload(quant::create_dynamic_map(true));
  s.code2 = ctx.upload(quant::create_dynamic_map(false));
  // The books never change: their bucket tables are built once.
  bool anyEightBit = false;
  for (const TensorSlot &t : s.tensors)
    anyEightBit |= t.eightBit;
  if (anyEightBit) {
    s.buckets1.emplace(ctx), s.buckets2.emplace(ctx);
    s.buckets1->build(ctx.stream(), s.code1);
    s.buckets2->build(ctx.stream(), s.code2);
  }

  // One launch per path and type pair, in the order the pairs first appear.
  std::map<std::tuple<bool, ScalarType, ScalarType>, size_t> index;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const TensorSlot &t = s.tensors[i];
    auto key = std::make_tuple(t.eightBit, t.tensor.paramType, t.tensor.gradType);
    auto [it, fresh] = index.emplace(key, s.groups.size());
    if (fresh) {
      s.groups.emplace_back();
      s.groups.back().eightBit = t.eightBit;
      s.groups.back().paramType = t.tensor.paramType;
      s.groups.back().gradType = t.tensor.gradType;
    }
    s.groups[it->second].tensors.push_back(i);
  }
  const std::string path = kernelLibraryPath("optim/adam8bit.tile");
  for (LaunchGroup &g : s.groups) {
    buildTables(ctx, s.tensors, g);
    // Whole 16-byte vectors without a run-time alignment test when every
    // parameter and gradient of the launch starts on 16 bytes (any buffer
    // from Context::alloc does; a view at an odd offset takes the tested path).
    bool aligned = true;
    for (size_t i : g.tensors)
      aligned &= s.tensors[i].tensor.param % 16 == 0 && s.tensors[i].tensor.grad % 16 == 0;
    g.kernel = std::make_unique<TunedKernel>(
        ctx, path, g.eightBit ? "adam8bit_step" : "adam32_step",
        g.eightBit ? quant::withBucketShape({{"PT", DType{g.paramType, 0}},
                                             {"GT", DType{g.gradType, 0}},
                                             {"ALIGNED", int64_t(aligned)}})
                   : std::map<std::string, ConstexprValue>{{"PT", DType{g.paramType, 0}},
                                                           {"GT", DType{g.gradType, 0}}},
        JitOptions{}, tuning);
  }
}

AdamW8bit::~AdamW8bit() = default;
AdamW8bit::AdamW8bit(AdamW8bit &&) noexcept = default;
AdamW8bit &AdamW8bit::operator=(AdamW8bit &&) noexcept = default;

int64_t AdamW8bit::stepCount() const { return state_->step; }
AdamOptions &AdamW8bit::options() { return state_->options; }
const AdamOptions &AdamW8bit::options() const { return state_->options; }
size_t AdamW8bit::stateBytes() const { return state_->buffers.bytes(); }
size_t AdamW8bit::tensorCount() const { return state_->tensors.size(); }

TensorState AdamW8bit::stateOf(size_t i) const {
  if (i >= state_->tensors.size())
    throw Error("AdamW8bit::stateOf: tensor " + std::to_string(i) + " of " +
                std::to_string(state_->tensors.size()));
  return readTensorState(*state_, i);
}

TensorState readTensorState(const AdamW8bit::State &s, size_t i) {
  s.ctx->synchronize();
  const TensorSlot &t = s.tensors[i];
  const size_t n = t.tensor.count;
  TensorState out;
  out.eightBit = t.eightBit;
  if (t.eightBit) {
    out.m8.resize(n), out.v8.resize(n);
    out.absmax1.resize(t.blocks()), out.absmax2.resize(t.blocks());
    s.buffers.m8.copyToHost(out.m8.data(), n, t.offset);
    s.buffers.v8.copyToHost(out.v8.data(), n, t.offset);
    s.buffers.absmax1.copyToHost(out.absmax1.data(), t.blocks(), t.offset / kStateBlocksize);
    s.buffers.absmax2.copyToHost(out.absmax2.data(), t.blocks(), t.offset / kStateBlocksize);
  } else {
    out.m32.resize(n), out.v32.resize(n);
    s.buffers.m32.copyToHost(out.m32.data(), n, t.offset);
    s.buffers.v32.copyToHost(out.v32.data(), n, t.offset);
  }
  return out;
}

} // namespace tessera::optim
