// AdamW8bit::step: the per-step scalars and one launch per launch group.
// A group's first step picks its config on scratch copies of the parameters
// and states: the tuner runs the in-place kernel many times, and the
// parameters sit behind a pointer table that it cannot restore.
#include "OptimizerState.h"

#include "tessera/Error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::optim {

namespace {

// Chunks each persistent program of adam8bit_step takes (its STEPS default).
constexpr int64_t kStepsPerProgram = 8;

struct StepScalars {
  float beta1, beta2, epsC2, stepSize, decay;
};

// KERNELS.md section 4: c1 = 1 - beta1^t, c2 = sqrt(1 - beta2^t);
// p += -lr * (c2 / c1) * m / (sqrt(v) + c2 * eps); then p *= 1 - lr * wd if wd > 0.
StepScalars scalarsFor(const AdamOptions &o, int64_t t) {
  const double c1 = 1.0 - std::pow(double(o.beta1), double(t));
  const double c2 = std::sqrt(1.0 - std::pow(double(o.beta2), double(t)));
  return StepScalars{o.beta1, o.beta2, float(double(o.eps) * c2),
                     float(-double(o.lr) * c2 / c1),
                     o.weightDecay > 0.0f ? float(1.0 - double(o.lr) * double(o.weightDecay))
                                          : 1.0f};
}

ArgValue table(const DeviceBuffer<int64_t> &addresses, ScalarType pointee) {
  ArgValue a = ArgValue::pointer(pointee, addresses.address());
  a.type.pointerDepth = 2;  // **PT: a table of pointers
  return a;
}

// The launch's arguments and the buffers the tuner may check or restore.
struct Launch {
  std::vector<ArgValue> args;
  std::vector<const DeviceMemory *> buffers;
};

Launch launchFor(const AdamW8bit::State &s, const LaunchGroup &g, const StateBuffers &b,
                 const DeviceBuffer<int64_t> &params, const StepScalars &k) {
  Launch l;
  l.args = {table(params, g.paramType), table(g.grads, g.gradType), toArgValue(g.owner),
            toArgValue(g.vstart), toArgValue(g.qstart), toArgValue(g.count)};
  l.buffers = {&params.memory(), &g.grads.memory(), &g.owner.memory(), &g.vstart.memory(),
               &g.qstart.memory(), &g.count.memory()};
  auto add = [&](const auto &buffer) {
    l.args.push_back(toArgValue(buffer));
    l.buffers.push_back(&buffer.memory());
  };
  if (g.eightBit) {
    add(b.m8), add(b.v8), add(b.absmax1), add(b.absmax2), add(s.code1), add(s.code2);
    add(s.buckets1->buckets()), add(s.buckets1->bad());
    add(s.buckets2->buckets()), add(s.buckets2->bad());
  } else {
    add(b.m32), add(b.v32);
  }
  for (ArgValue a : {toArgValue(g.vtotal), toArgValue(k.beta1), toArgValue(k.beta2),
                     toArgValue(k.epsC2), toArgValue(k.stepSize), toArgValue(k.decay)}) {
    l.args.push_back(a);
    l.buffers.push_back(nullptr);
  }
  return l;
}

template <class T> DeviceBuffer<T> copyOf(const Context &ctx, const DeviceBuffer<T> &b) {
  DeviceBuffer<T> c = ctx.alloc<T>(b.size());
  if (!b.empty())
    c.copyFrom(b);
  return c;
}

// Resolves the group's config (tuning on a miss) with copies of everything
// the kernel writes, so that tuning leaves the optimizer and parameters alone.
void chooseConfigOnScratch(const AdamW8bit::State &s, LaunchGroup &g,
                           const TunedKernel::GridFn &grid, const StepScalars &k) {
  const Context &ctx = *s.ctx;
  std::vector<DeviceMemory> params;
  std::vector<int64_t> addresses;
  for (size_t i : g.tensors) {
    const ParamGrad &t = s.tensors[i].tensor;
    params.emplace_back(ctx, t.paramBytes);
    ctx.backend().copyDeviceToDevice(params.back().address(), t.param, t.paramBytes,
                                     ctx.stream().handle());
    addresses.push_back(int64_t(params.back().address()));
  }
  ctx.synchronize();
  DeviceBuffer<int64_t> table = ctx.upload(addresses);
  StateBuffers b;
  b.m8 = copyOf(ctx, s.buffers.m8), b.v8 = copyOf(ctx, s.buffers.v8);
  b.absmax1 = copyOf(ctx, s.buffers.absmax1), b.absmax2 = copyOf(ctx, s.buffers.absmax2);
  b.m32 = copyOf(ctx, s.buffers.m32), b.v32 = copyOf(ctx, s.buffers.v32);
  Launch l = launchFor(s, g, b, table, k);
  g.kernel->configForArgs(grid, l.args, l.buffers);
  ctx.synchronize();
  g.configChosen = true;
}

} // namespace

void AdamW8bit::step(const Stream &stream) {
  State &s = *state_;
  const StepScalars k = scalarsFor(s.options, s.step + 1);
  for (LaunchGroup &g : s.groups) {
    const int64_t vtotal = g.vtotal;
    // The 8-bit kernel's programs are persistent, STEPS chunks each (each
    // stages its tables in shared memory once); the f32 kernel's take one.
    const bool persistent = g.eightBit;
    TunedKernel::GridFn grid = [vtotal, persistent](const Config &c) {
      int64_t chunks = vtotal / c.get("CHUNK");
      return Grid::of(persistent ? cdiv(chunks, c.getOr("STEPS", kStepsPerProgram)) : chunks);
    };
    if (!g.configChosen)
      chooseConfigOnScratch(s, g, grid, k);
    Launch l = launchFor(s, g, s.buffers, g.params, k);
    g.kernel->launchWithArgs(stream, grid, l.args, l.buffers);
  }
  ++s.step;
}

} // namespace tessera::optim
