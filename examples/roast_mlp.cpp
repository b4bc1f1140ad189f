// roast_mlp: trains a two-layer ROAST MLP, Linear -> ReLU -> Linear, whose
// weights both live in one shared memory array (global memory sharing), with
// plain SGD on that array, to fit synthetic data from a fixed random dense
// teacher of the same shape. Prints the mean squared error per epoch and exits
// non-zero unless it fell. The ROAST layers are tessera::roast::Linear
// (docs/kernels/roast.md); ReLU and the loss gradient are the small kernels
// of roast_mlp.tile. Neither layer ever stores its weight matrix: the model's
// parameters are the memory array alone, here about 1/4 of the dense count.
//
// Runs on the GPU at a larger size, or in the CPU interpreter
// (TESSERA_INTERPRET=1, as in CI, or no GPU) at a small one in a few seconds.
//
//   example_roast_mlp [--small | --large] [--epochs N] [--lr X] [--reproducible]
//
// --reproducible: the same losses to the last bit on every run
// (LinearOptions::reproducible: no split-K forward; dM by waves, not atomics).
#include <tessera/roast/Roast.h>
#include <tessera/tessera.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace {

struct Size {
  int64_t batch, in, hidden, out, memory, epochs;
  tessera::roast::HashTile tile;
  float lr;
};

// The teacher: y = relu(x @ A) @ B, dense, A and B ~ U(-1, 1) / sqrt(fan-in).
std::vector<float> teacherOutputs(const std::vector<float> &x, const Size &s, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> A(size_t(s.in * s.hidden)), B(size_t(s.hidden * s.out));
  for (auto &v : A)
    v = u(rng) / std::sqrt(float(s.in));
  for (auto &v : B)
    v = u(rng) / std::sqrt(float(s.hidden));
  std::vector<float> y(size_t(s.batch * s.out), 0.0f);
  std::vector<float> h(static_cast<size_t>(s.hidden));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t j = 0; j < s.hidden; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < s.in; ++i)
        acc += double(x[size_t(b * s.in + i)]) * A[size_t(i * s.hidden + j)];
      h[size_t(j)] = float(std::max(acc, 0.0));
    }
    for (int64_t o = 0; o < s.out; ++o) {
      double acc = 0;
      for (int64_t j = 0; j < s.hidden; ++j)
        acc += double(h[size_t(j)]) * B[size_t(j * s.out + o)];
      y[size_t(b * s.out + o)] = float(acc);
    }
  }
  return y;
}

double meanSquaredError(const std::vector<float> &y, const std::vector<float> &t) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i)
    s += (double(y[i]) - t[i]) * (double(y[i]) - t[i]);
  return s / double(y.size());
}

} // namespace

int main(int argc, char **argv) {
  using namespace tessera;
  using namespace tessera::roast;
  int force = 0; // 1 small, 2 large
  int64_t epochs = -1;
  float lr = -1;
  bool reproducible = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--small"))
      force = 1;
    else if (!std::strcmp(argv[i], "--large"))
      force = 2;
    else if (!std::strcmp(argv[i], "--epochs") && i + 1 < argc)
      epochs = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--lr") && i + 1 < argc)
      lr = float(std::atof(argv[++i]));
    else if (!std::strcmp(argv[i], "--reproducible"))
      reproducible = true;
    else {
      std::cerr << "usage: example_roast_mlp [--small | --large] [--epochs N] [--lr X] "
                   "[--reproducible]\n";
      return 2;
    }
  }
  try {
    Context ctx = Context::gpuOrInterpreter();
    bool large = force ? force == 2 : !ctx.isInterpreter();
    // The memory array holds about a quarter of the weights of the two layers.
    Size s = large ? Size{512, 512, 1024, 128, 163840, 100, {32, 64}, 400.0f}
                   : Size{64, 32, 64, 16, 768, 25, {16, 16}, 20.0f};
    if (epochs > 0)
      s.epochs = epochs;
    if (lr > 0)
      s.lr = lr;
    std::cout << "ROAST MLP on " << ctx.deviceName() << ": batch " << s.batch << ", " << s.in
              << " -> " << s.hidden << " -> " << s.out << ", one memory array of " << s.memory
              << " values for " << s.in * s.hidden + s.hidden * s.out << " weights\n";

    std::mt19937 rng(2024);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> hx(size_t(s.batch * s.in));
    for (auto &v : hx)
      v = u(rng);
    std::vector<float> target = teacherOutputs(hx, s, rng);

    MemoryArray mem(ctx, s.memory, /*C=*/1.0f, /*seed=*/7);
    LinearOptions opt;
    opt.tile = s.tile;
    opt.reproducible = reproducible;
    Linear fc1(mem, s.in, s.hidden, TileHash::fromSeed(1), opt);
    Linear fc2(mem, s.hidden, s.out, TileHash::fromSeed(2), opt);

    const std::string ops = std::string(TESSERA_SOURCE_DIR) + "/examples/roast_mlp.tile";
    Kernel relu = compile(ctx, ops, "relu_fwd"), reluBack = compile(ctx, ops, "relu_bwd"),
           mseGrad = compile(ctx, ops, "mse_grad");
    auto grid = [](int64_t n) { return Grid::of(cdiv(n, int64_t(1024))); };

    const int64_t nh = s.batch * s.hidden, ny = s.batch * s.out;
    auto x = ctx.upload(hx), t = ctx.upload(target);
    auto a1 = ctx.alloc<float>(size_t(nh)), h1 = ctx.alloc<float>(size_t(nh));
    auto dh1 = ctx.alloc<float>(size_t(nh)), y = ctx.alloc<float>(size_t(ny));
    auto dy = ctx.alloc<float>(size_t(ny));
    const Stream &st = ctx.stream();

    std::vector<double> losses;
    for (int64_t epoch = 0; epoch <= s.epochs; ++epoch) {
      fc1.forward(st, x, a1, s.batch);
      relu.launch(st, grid(nh), a1, h1, int32_t(nh));
      fc2.forward(st, h1, y, s.batch);
      losses.push_back(meanSquaredError(y.toHost(), target));
      std::printf("epoch %3lld  loss %.6f\n", (long long)epoch, losses.back());
      if (epoch == s.epochs)
        break; // the last line reports the trained model
      mseGrad.launch(st, grid(ny), y, t, dy, int32_t(ny), float(2.0 / double(ny)));
      fc2.backward(st, h1, dy, dh1, s.batch, /*deterministic=*/reproducible);
      reluBack.launch(st, grid(nh), a1, dh1, dh1, int32_t(nh));
      fc1.backwardMemory(st, x, dh1, s.batch, /*deterministic=*/reproducible);
      mem.sgdStep(st, s.lr);
    }
    bool fell = std::isfinite(losses.back()) && losses.back() < 0.75 * losses.front();
    std::cout << "loss " << losses.front() << " -> " << losses.back() << ": "
              << (fell ? "fell" : "DID NOT FALL (expected below 3/4 of the first)") << "\n";
    return fell ? 0 : 1;
  } catch (const Error &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
