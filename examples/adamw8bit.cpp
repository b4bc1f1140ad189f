// adamw8bit: a linear least-squares regression (Y = X W + b) trained with
// tessera::optim::AdamW8bit and, side by side, with a plain 32-bit AdamW on
// the host; the gradients are computed on the host. Prints both losses per
// epoch and fails unless the 8-bit loss tracks the 32-bit one. W (64 x 80)
// takes the 8-bit path, b (80) the f32 path of small tensors. Runs on the GPU
// or in the CPU interpreter (TESSERA_INTERPRET=1).
//
//   example_adamw8bit [epochs]
#include <tessera/optim/AdamW8bit.h>
#include <tessera/tessera.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

constexpr int kSamples = 256, kIn = 64, kOut = 80;

struct Problem {
  std::vector<float> x, y;  // kSamples x kIn, kSamples x kOut
};

Problem makeProblem() {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Problem p;
  std::vector<float> w(kIn * kOut), b(kOut);
  for (auto &v : w) v = nd(rng) * 0.5f;
  for (auto &v : b) v = nd(rng);
  p.x.resize(kSamples * kIn);
  for (auto &v : p.x) v = nd(rng);
  p.y.resize(kSamples * kOut);
  for (int s = 0; s < kSamples; ++s)
    for (int o = 0; o < kOut; ++o) {
      double acc = b[o] + 0.01 * nd(rng);
      for (int i = 0; i < kIn; ++i)
        acc += double(p.x[s * kIn + i]) * w[i * kOut + o];
      p.y[s * kOut + o] = float(acc);
    }
  return p;
}

// Mean squared error and its gradient with respect to W and b.
double lossAndGrad(const Problem &p, const std::vector<float> &w, const std::vector<float> &b,
                   std::vector<float> &gw, std::vector<float> &gb) {
  gw.assign(w.size(), 0.0f), gb.assign(b.size(), 0.0f);
  double loss = 0;
  std::vector<float> r(kOut);
  for (int s = 0; s < kSamples; ++s) {
    for (int o = 0; o < kOut; ++o) {
      double acc = b[o];
      for (int i = 0; i < kIn; ++i)
        acc += double(p.x[s * kIn + i]) * w[i * kOut + o];
      r[o] = float(acc - p.y[s * kOut + o]);
      loss += double(r[o]) * r[o];
    }
    const float scale = 2.0f / float(kSamples * kOut);
    for (int i = 0; i < kIn; ++i)
      for (int o = 0; o < kOut; ++o)
        gw[i * kOut + o] += scale * p.x[s * kIn + i] * r[o];
    for (int o = 0; o < kOut; ++o)
      gb[o] += scale * r[o];
  }
  return loss / (kSamples * kOut);
}

// The 32-bit AdamW the 8-bit one is compared with (decoupled decay after the update).
struct HostAdamW {
  tessera::optim::AdamOptions o;
  std::vector<float> m, v;
  int t = 0;
  void step(std::vector<float> &p, const std::vector<float> &g) {
    if (m.empty())
      m.assign(p.size(), 0.0f), v.assign(p.size(), 0.0f);
    const float c1 = 1.0f - std::pow(o.beta1, float(t + 1));
    const float c2 = std::sqrt(1.0f - std::pow(o.beta2, float(t + 1)));
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
      p[i] += -o.lr * (c2 / c1) * m[i] / (std::sqrt(v[i]) + c2 * o.eps);
      p[i] *= 1 - o.lr * o.weightDecay;
    }
  }
};

} // namespace

int main(int argc, char **argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 120;
  try {
    tessera::Context ctx = tessera::Context::gpuOrInterpreter();
    const Problem prob = makeProblem();
    std::vector<float> w32(kIn * kOut, 0.0f), b32(kOut, 0.0f), w8 = w32, b8 = b32, gw, gb;
    auto dw = ctx.upload(w8), db = ctx.upload(b8);
    auto dgw = ctx.alloc<float>(w8.size()), dgb = ctx.alloc<float>(b8.size());
    tessera::optim::AdamOptions options;
    options.lr = 0.05f;
    tessera::optim::AdamW8bit opt8(
        ctx, {tessera::optim::ParamGrad::of(dw, dgw), tessera::optim::ParamGrad::of(db, dgb)},
        options);
    HostAdamW opt32w{options}, opt32b{options};

    double first8 = 0, last8 = 0, last32 = 0;
    std::printf("on %s; W: %d x %d (8-bit state), b: %d (f32 state); %zu bytes of 8-bit optimizer state\n",
                ctx.deviceName().c_str(), kIn, kOut, kOut, opt8.stateBytes());
    std::printf("epoch   loss 32-bit AdamW   loss 8-bit AdamW\n");
    for (int e = 0; e < epochs; ++e) {
      last32 = lossAndGrad(prob, w32, b32, gw, gb);
      opt32w.step(w32, gw);
      opt32b.step(b32, gb);

      dw.copyToHost(w8), db.copyToHost(b8);
      last8 = lossAndGrad(prob, w8, b8, gw, gb);
      if (e == 0)
        first8 = last8;
      dgw.copyFromHost(gw), dgb.copyFromHost(gb);
      opt8.step(ctx.stream());
      ctx.synchronize();
      if (e % 10 == 0 || e == epochs - 1)
        std::printf("%5d   %18.6f   %16.6f\n", e, last32, last8);
    }
    // Tracking: the 8-bit loss fell by 100x and stays within 2x (plus the
    // noise floor) of the 32-bit loss.
    const bool ok = last8 < first8 / 100 && last8 <= 2 * last32 + 1e-3;
    std::printf("first loss %.4f; final: 32-bit %.6f, 8-bit %.6f: %s\n", first8, last32, last8,
                ok ? "ok" : "FAILED (the 8-bit loss does not track the 32-bit one)");
    return ok ? 0 : 1;
  } catch (const tessera::Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
