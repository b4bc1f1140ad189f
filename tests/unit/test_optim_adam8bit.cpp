// tessera::optim::AdamW8bit (include/tessera/optim/AdamW8bit.h) against the
// fp64 reference of the specified rule (tests/support/BlockwiseReference.h):
// the first step and a step from a non-zero 8-bit state, NaN/Inf gradients,
// the f32 path of small tensors, f16/bf16 parameters and gradients, a list of
// mixed sizes against each tensor alone, tuning on scratch copies, and the
// state file (round trip, and each kind of bad file leaving the optimizer as
// it was). Interpreter (CI) and GPU when present.
#include "GpuTestSupport.h"
#include "TestSupport.h"
#include "support/BlockwiseReference.h"
#include "../kernels_dsl/quant/CodeBuckets.h"

#include "tessera/KernelLibrary.h"
#include "tessera/optim/AdamW8bit.h"
#include "tessera/quant/Blockwise.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

using namespace tessera;
using namespace tessera::testing;
using optim::AdamW8bit;
using optim::ParamGrad;

namespace {

TunedKernelOptions firstConfig() {
  TunedKernelOptions o;
  o.onMiss = MissPolicy::FirstConfig;
  return o;
}

std::vector<double> toDouble(const std::vector<float> &v) { return {v.begin(), v.end()}; }

// Everything a step's check needs from the optimizer: p and the state of tensor i.
struct Snapshot {
  std::vector<float> p;
  optim::TensorState s;
};

Snapshot snap(const AdamW8bit &opt, const DeviceBuffer<float> &p, size_t i) {
  return Snapshot{p.toHost(), opt.stateOf(i)};
}

// One 8-bit step of the optimizer against the fp64 reference from `before`.
void checkStepAgainstReference(const Snapshot &before, const Snapshot &after,
                               const std::vector<float> &g, int64_t t, const std::string &what) {
  const std::vector<float> code1 = quant::create_dynamic_map(true);
  const std::vector<float> code2 = quant::create_dynamic_map(false);
  std::vector<double> p = toDouble(before.p), a1 = toDouble(before.s.absmax1),
                      a2 = toDouble(before.s.absmax2);
  std::vector<uint8_t> m8 = before.s.m8, v8 = before.s.v8;
  adam8bitStepRef(AdamRef{}, t, code1, code2, toDouble(g), p, m8, v8, a1, a2);

  double worstP = 0, worstA = 0;
  size_t codeOff = 0, codeFar = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    double err = std::fabs(double(after.p[i]) - p[i]);
    // Relative to |p|, or to lr (the update's scale) where p is near 0.
    worstP = std::max(worstP, err / std::max(std::fabs(p[i]), 1e-3));
    for (auto [got, want] : {std::pair<int, int>{after.s.m8[i], m8[i]}, {after.s.v8[i], v8[i]}}) {
      int d = std::abs(got - want);
      codeOff += d == 1;
      codeFar += d > 1 && d != 255;  // 255: the all-zero block's wrap, checked below
    }
  }
  for (size_t b = 0; b < a1.size(); ++b) {
    worstA = std::max(worstA, std::fabs(after.s.absmax1[b] - a1[b]) / std::max(a1[b], 1e-30));
    worstA = std::max(worstA, std::fabs(after.s.absmax2[b] - a2[b]) / std::max(a2[b], 1e-30));
  }
  INFO(what << ": parameters' max relative error " << worstP << ", absmax " << worstA << ", "
            << codeOff << " of " << 2 * p.size() << " codes off by one, " << codeFar
            << " further");
  CHECK(worstP < 1e-6);
  CHECK(worstA < 1e-6);
  CHECK(codeFar == 0);
  CHECK(codeOff <= p.size() / 100);  // only values at a midpoint, within fp32 rounding
}

void checkTwoSteps(Context &ctx, TunedKernelOptions tuning) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const size_t n = size_t(rng.range(8192, 12000));  // ragged last block
  auto p = ctx.upload(rng.uniform(n));
  auto g = ctx.alloc<float>(n);
  AdamW8bit opt(ctx, {ParamGrad::of(p, g)}, {}, tuning);
  REQUIRE(opt.stateOf(0).eightBit);
  for (int64_t t = 1; t <= 3; ++t) {
    std::vector<float> hg = rng.uniform(n, -0.1f, 0.1f);
    g.copyFromHost(hg);
    Snapshot before = snap(opt, p, 0);
    opt.step(ctx.stream());
    ctx.synchronize();
    checkStepAgainstReference(before, snap(opt, p, 0), hg, t, "step " + std::to_string(t));
  }
  CHECK(opt.stepCount() == 3);
}

} // namespace

TEST_CASE("optim: 8-bit AdamW steps match the fp64 reference (interpreter)", "[optim]") {
  Context ctx{createInterpreterBackend()};
  checkTwoSteps(ctx, firstConfig());
}

TEST_CASE("optim: 8-bit AdamW steps match the fp64 reference (GPU)", "[optim][gpu]") {
  if (auto ctx = gpuOrSkip())
    checkTwoSteps(*ctx, {});
}

TEST_CASE("optim: NaN and Inf gradients zero the states and keep p", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  const size_t n = 6000;
  auto p = ctx.upload(rng.uniform(n));
  auto g = ctx.alloc<float>(n);
  AdamW8bit opt(ctx, {ParamGrad::of(p, g)}, {}, firstConfig());
  g.copyFromHost(rng.uniform(n, -0.1f, 0.1f));
  opt.step(ctx.stream());  // a non-zero state first
  std::vector<float> hg = rng.uniform(n, -0.1f, 0.1f);
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  std::vector<size_t> bad;
  for (int k = 0; k < 30; ++k)
    bad.push_back(size_t(rng.range(0, int(n) - 1)));
  for (size_t k = 0; k < bad.size(); ++k)
    hg[bad[k]] = k % 3 == 0 ? nan : k % 3 == 1 ? inf : -inf;
  for (size_t i = 512; i < 768; ++i)  // block 2 entirely NaN
    hg[i] = nan, bad.push_back(i);
  g.copyFromHost(hg);
  Snapshot before = snap(opt, p, 0);
  opt.step(ctx.stream());
  Snapshot after = snap(opt, p, 0);
  const std::vector<float> code1 = quant::create_dynamic_map(true);
  const std::vector<float> code2 = quant::create_dynamic_map(false);
  for (size_t i : bad) {
    INFO("element " << i << ", gradient " << hg[i]);
    CHECK(after.p[i] == before.p[i]);
    CHECK(code1[after.s.m8[i]] * after.s.absmax1[i / 256] == 0.0f);
    CHECK(code2[after.s.v8[i]] * after.s.absmax2[i / 256] == 0.0f);
  }
  CHECK(after.s.absmax1[2] == 0.0f);
  CHECK(after.s.absmax2[2] == 0.0f);
  checkStepAgainstReference(before, after, hg, 2, "NaN/Inf step");
  // The other elements moved.
  size_t moved = 0;
  for (size_t i = 0; i < n; ++i)
    moved += after.p[i] != before.p[i];
  CHECK(moved >= n - bad.size() - n / 100);
}

TEST_CASE("optim: tensors under 4096 elements take the f32 path", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  const size_t n = size_t(rng.range(100, 4095));
  auto p = ctx.upload(rng.uniform(n));
  auto g = ctx.alloc<float>(n);
  AdamW8bit opt(ctx, {ParamGrad::of(p, g)}, {}, firstConfig());
  REQUIRE_FALSE(opt.stateOf(0).eightBit);
  CHECK(opt.stateBytes() == 8 * ((n + 63) / 64 * 64));
  std::vector<double> rp = toDouble(p.toHost()), rm(n, 0.0), rv(n, 0.0);
  const AdamRef h;
  for (int64_t t = 1; t <= 3; ++t) {
    std::vector<float> hg = rng.uniform(n, -0.1f, 0.1f);
    hg[size_t(t)] = std::numeric_limits<float>::infinity();
    g.copyFromHost(hg);
    opt.step(ctx.stream());
    const double c1 = 1 - std::pow(h.beta1, double(t)), c2 = std::sqrt(1 - std::pow(h.beta2, double(t)));
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(hg[i])) {
        rm[i] = rv[i] = 0;
        continue;
      }
      rm[i] = h.beta1 * rm[i] + (1 - h.beta1) * hg[i];
      rv[i] = h.beta2 * rv[i] + (1 - h.beta2) * double(hg[i]) * hg[i];
      rp[i] += -h.lr * (c2 / c1) * rm[i] / (std::sqrt(rv[i]) + c2 * h.eps);
      rp[i] *= 1 - h.lr * h.wd;
    }
  }
  std::vector<float> gp = p.toHost();
  optim::TensorState s = opt.stateOf(0);
  // p relative to |p| (or lr near 0); m and v relative to their largest
  // magnitude (m cancels towards 0, where an element's relative error means nothing).
  double worstP = 0, worstM = 0, worstV = 0, maxM = 0, maxV = 0;
  for (size_t i = 0; i < n; ++i)
    maxM = std::max(maxM, std::fabs(rm[i])), maxV = std::max(maxV, rv[i]);
  for (size_t i = 0; i < n; ++i) {
    worstP = std::max(worstP, std::fabs(gp[i] - rp[i]) / std::max(std::fabs(rp[i]), 1e-3));
    worstM = std::max(worstM, std::fabs(s.m32[i] - rm[i]) / maxM);
    worstV = std::max(worstV, std::fabs(s.v32[i] - rv[i]) / maxV);
  }
  INFO("max relative error: p " << worstP << ", m " << worstM << ", v " << worstV);
  CHECK(worstP < 1e-6);
  CHECK(worstM < 1e-6);
  CHECK(worstV < 1e-6);
}

TEST_CASE("optim: f16 and bf16 parameters and gradients", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  const size_t n = 5000;
  std::vector<float> hp = rng.uniform(n), hg = rng.uniform(n, -0.1f, 0.1f);
  std::vector<bf16> p16;
  std::vector<f16> g16;
  for (size_t i = 0; i < n; ++i)
    p16.push_back(bf16(hp[i])), g16.push_back(f16(hg[i]));
  auto p = ctx.upload(p16);
  auto g = ctx.upload(g16);
  optim::AdamOptions o;
  o.lr = 0.05f;  // a step larger than bf16's rounding, so that p visibly moves
  AdamW8bit opt(ctx, {ParamGrad::of(p, g)}, o, firstConfig());
  opt.step(ctx.stream());
  std::vector<bf16> got = p.toHost();
  // The reference from the rounded inputs, rounded to bf16 at the end.
  std::vector<double> rp, rg;
  for (size_t i = 0; i < n; ++i)
    rp.push_back(float(p16[i])), rg.push_back(float(g16[i]));
  std::vector<uint8_t> m8(n, 127), v8(n, 0);
  std::vector<double> a1(20, 0.0), a2(20, 0.0);
  AdamRef h;
  h.lr = double(0.05f);
  adam8bitStepRef(h, 1, quant::create_dynamic_map(true), quant::create_dynamic_map(false), rg, rp,
                  m8, v8, a1, a2);
  size_t off = 0, moved = 0;
  for (size_t i = 0; i < n; ++i) {
    const float want = float(bf16(float(rp[i])));
    // One bf16 ulp of slack: fp32 rounding before the final rounding.
    off += std::fabs(float(got[i]) - want) > std::ldexp(std::fabs(want), -7);
    moved += got[i] != p16[i];
  }
  INFO(off << " of " << n << " parameters more than one bf16 ulp from the reference");
  CHECK(off == 0);
  CHECK(moved > n / 2);
}

TEST_CASE("optim: a list of mixed tensors steps as each tensor alone", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  const std::vector<size_t> sizes = {5000, 300, size_t(rng.range(4096, 9000)), 4096, 4095, 1,
                                     8192};
  std::vector<DeviceBuffer<float>> ps, gs, ps1, gs1;
  std::vector<ParamGrad> list;
  for (size_t n : sizes) {
    std::vector<float> hp = rng.uniform(n), hg = rng.uniform(n, -0.1f, 0.1f);
    ps.push_back(ctx.upload(hp)), gs.push_back(ctx.upload(hg));
    ps1.push_back(ctx.upload(hp)), gs1.push_back(ctx.upload(hg));
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    list.push_back(ParamGrad::of(ps[i], gs[i]));
  AdamW8bit all(ctx, list, {}, firstConfig());
  all.step(ctx.stream());
  all.step(ctx.stream());
  size_t bytes = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("tensor " << i << " of " << sizes[i] << " elements");
    AdamW8bit one(ctx, {ParamGrad::of(ps1[i], gs1[i])}, {}, firstConfig());
    one.step(ctx.stream());
    one.step(ctx.stream());
    bytes += one.stateBytes();
    CHECK(ps[i].toHost() == ps1[i].toHost());
    optim::TensorState a = all.stateOf(i), b = one.stateOf(0);
    CHECK(a.eightBit == (sizes[i] >= 4096));
    CHECK(a.m8 == b.m8);
    CHECK(a.v8 == b.v8);
    CHECK(a.absmax1 == b.absmax1);
    CHECK(a.absmax2 == b.absmax2);
    CHECK(a.m32 == b.m32);
    CHECK(a.v32 == b.v32);
  }
  CHECK(all.stateBytes() == bytes);
}

TEST_CASE("optim: tuning runs on scratch copies and leaves the step exact", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  TempDir dir{"tessera-adam-tune"};
  TuningCache cache(dir.path);
  TunedKernelOptions tune;
  tune.onMiss = MissPolicy::TuneNow;
  tune.cache = &cache;
  tune.tuning.timing.repeats = 1;
  tune.tuning.timing.flushBytes = 1 << 12;
  tune.tuning.retimeBest = 1;
  tune.tuning.retimeRepeats = 1;
  tune.tuning.compileThreads = 2;
  std::vector<float> hp = rng.uniform(5000), hg = rng.uniform(5000, -0.1f, 0.1f),
                     hq = rng.uniform(700), hh = rng.uniform(700);
  auto p1 = ctx.upload(hp), g1 = ctx.upload(hg), q1 = ctx.upload(hq), h1 = ctx.upload(hh);
  auto p2 = ctx.upload(hp), g2 = ctx.upload(hg), q2 = ctx.upload(hq), h2 = ctx.upload(hh);
  EnvGuard miss("TESSERA_AUTOTUNE_MISS", nullptr);
  AdamW8bit tuned(ctx, {ParamGrad::of(p1, g1), ParamGrad::of(q1, h1)}, {}, tune);
  AdamW8bit plain(ctx, {ParamGrad::of(p2, g2), ParamGrad::of(q2, h2)}, {}, firstConfig());
  tuned.step(ctx.stream());
  plain.step(ctx.stream());
  CHECK(p1.toHost() == p2.toHost());
  CHECK(q1.toHost() == q2.toHost());
  CHECK(tuned.stateOf(0).m8 == plain.stateOf(0).m8);
  CHECK(tuned.stateOf(1).m32 == plain.stateOf(1).m32);
}

TEST_CASE("optim: bad parameter lists are clear errors", "[optim]") {
  Context ctx{createInterpreterBackend()};
  auto p = ctx.alloc<float>(100);
  auto g = ctx.alloc<float>(100);
  auto gShort = ctx.alloc<float>(99);
  auto gInt = ctx.alloc<int32_t>(100);
  CHECK(errorOf([&] { AdamW8bit(ctx, {}); }) == "AdamW8bit: the parameter list is empty");
  CHECK(errorOf([&] { AdamW8bit(ctx, {ParamGrad::of(p, gShort)}); }) ==
        "AdamW8bit: tensor 0: the gradient buffer holds 396 bytes, 100 elements need 400");
  CHECK(errorOf([&] { AdamW8bit(ctx, {ParamGrad::of(p, gInt)}); }) ==
        "AdamW8bit: tensor 0: element type i32 is not supported (f32, f16 or bf16)");
  CHECK(errorOf([&] { AdamW8bit(ctx, {ParamGrad::of(p, g), ParamGrad::of(p, g)}); }) ==
        "AdamW8bit: tensor 1: its parameter buffer is already in the list");
  optim::AdamOptions o;
  o.beta2 = 1.0f;
  CHECK(errorOf([&] { AdamW8bit(ctx, {ParamGrad::of(p, g)}, o); })
            .find("betas must lie in [0, 1)") != std::string::npos);
  CHECK(errorOf([&] { AdamW8bit(ctx, {ParamGrad::of(p, g)}).stateOf(1); }) ==
        "AdamW8bit::stateOf: tensor 1 of 1");
}

namespace {

// Two tensors (one 8-bit, one f32), stepped twice.
struct SavedFixture {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  TempDir dir{"tessera-adam-state"};
  std::vector<float> hp = rng.uniform(6000), hq = rng.uniform(500);
  DeviceBuffer<float> p = ctx.upload(hp), g = ctx.alloc<float>(6000);
  DeviceBuffer<float> q = ctx.upload(hq), h = ctx.alloc<float>(500);
  AdamW8bit opt{ctx, {ParamGrad::of(p, g), ParamGrad::of(q, h)}, {}, firstConfig()};
  std::string file = dir.path + "/opt.state";

  void randomGrads() {
    g.copyFromHost(rng.uniform(6000, -0.1f, 0.1f));
    h.copyFromHost(rng.uniform(500, -0.1f, 0.1f));
  }
  SavedFixture() {
    for (int i = 0; i < 2; ++i) {
      randomGrads();
      opt.step(ctx.stream());
    }
    opt.save(file);
  }
  std::string bytes() const {
    std::ifstream f(file, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
};

bool sameState(const AdamW8bit &a, const AdamW8bit &b) {
  bool same = a.stepCount() == b.stepCount() && a.options().lr == b.options().lr;
  for (size_t i = 0; i < a.tensorCount(); ++i) {
    optim::TensorState x = a.stateOf(i), y = b.stateOf(i);
    same = same && x.m8 == y.m8 && x.v8 == y.v8 && x.absmax1 == y.absmax1 &&
           x.absmax2 == y.absmax2 && x.m32 == y.m32 && x.v32 == y.v32;
  }
  return same;
}

} // namespace

TEST_CASE("optim: save, load, step equals stepping on", "[optim]") {
  SavedFixture f;
  INFO("seed " << f.rng.seed);
  // A second optimizer over copies of the parameters as saved, with another lr.
  auto p2 = f.ctx.upload(f.p.toHost()), g2 = f.ctx.alloc<float>(6000);
  auto q2 = f.ctx.upload(f.q.toHost()), h2 = f.ctx.alloc<float>(500);
  optim::AdamOptions other;
  other.lr = 0.5f;
  AdamW8bit restored(f.ctx, {ParamGrad::of(p2, g2), ParamGrad::of(q2, h2)}, other, firstConfig());
  restored.load(f.file);
  CHECK(sameState(restored, f.opt));
  CHECK(restored.options().lr == 1e-3f);
  CHECK(restored.stepCount() == 2);
  f.randomGrads();
  g2.copyFrom(f.g), h2.copyFrom(f.h);
  f.opt.step(f.ctx.stream());
  restored.step(f.ctx.stream());
  CHECK(p2.toHost() == f.p.toHost());
  CHECK(q2.toHost() == f.q.toHost());
  CHECK(sameState(restored, f.opt));
  CHECK(f.p.toHost() != f.hp);  // the steps moved the parameters
}

TEST_CASE("optim: bad state files are clear errors and change nothing", "[optim]") {
  SavedFixture f;
  INFO("seed " << f.rng.seed);
  const std::string good = f.bytes();
  // The optimizer as it is now, to compare after each failed load: a copy
  // through the file itself, loaded into a twin.
  auto p2 = f.ctx.upload(f.p.toHost()), g2 = f.ctx.alloc<float>(6000);
  auto q2 = f.ctx.upload(f.q.toHost()), h2 = f.ctx.alloc<float>(500);
  AdamW8bit twin(f.ctx, {ParamGrad::of(p2, g2), ParamGrad::of(q2, h2)}, {}, firstConfig());
  twin.load(f.file);
  REQUIRE(sameState(twin, f.opt));
  f.randomGrads();
  f.opt.step(f.ctx.stream());  // now differs from the file, so a partial load would show
  g2.copyFrom(f.g), h2.copyFrom(f.h);
  twin.step(f.ctx.stream());
  REQUIRE(sameState(twin, f.opt));

  auto expectError = [&](const std::string &bytes, const std::string &message) {
    writeFile(f.file, bytes);
    std::string err = errorOf([&] { f.opt.load(f.file); });
    INFO("error: " << err);
    CHECK(err.find(message) != std::string::npos);
    CHECK(sameState(twin, f.opt));
  };
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x10;
  expectError(flipped, "checksum mismatch: the file is corrupt");
  expectError(good.substr(0, good.size() - 100), "truncated: " + std::to_string(good.size() - 100) +
                                                     " bytes, expected " +
                                                     std::to_string(good.size()));
  expectError(good.substr(0, 20), "shorter than the header");
  std::string version = good;
  version[8] = 2;
  expectError(version, "state file version 2, this build reads version 1");
  std::string magic = good;
  magic[0] = 'X';
  expectError(magic, "not an AdamW8bit state file (bad magic)");
  expectError(good + "x", "1 bytes past the end of the state");

  // A valid file saved for other shapes.
  auto p3 = f.ctx.upload(f.rng.uniform(7000)), g3 = f.ctx.alloc<float>(7000);
  auto q3 = f.ctx.upload(f.rng.uniform(500)), h3 = f.ctx.alloc<float>(500);
  AdamW8bit otherShapes(f.ctx, {ParamGrad::of(p3, g3), ParamGrad::of(q3, h3)}, {}, firstConfig());
  otherShapes.save(f.file);
  std::string err = errorOf([&] { f.opt.load(f.file); });
  CHECK(err == "AdamW8bit::load('" + f.file +
                   "'): tensor 0: saved with 7000 elements, this optimizer's has 6000");
  CHECK(sameState(twin, f.opt));
  AdamW8bit oneTensor(f.ctx, {ParamGrad::of(p3, g3)}, {}, firstConfig());
  oneTensor.save(f.file);
  CHECK(errorOf([&] { f.opt.load(f.file); })
            .find("saved for 1 tensors, this optimizer has 2") != std::string::npos);
  CHECK(errorOf([&] { f.opt.load(f.dir.path + "/missing"); })
            .find("cannot open the file") != std::string::npos);
  CHECK(sameState(twin, f.opt));
}

TEST_CASE("optim: Adam8bit has no weight decay by default", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  const size_t n = 4500;
  std::vector<float> hp = rng.uniform(n), hg = rng.uniform(n, -0.1f, 0.1f);
  auto p = ctx.upload(hp), g = ctx.upload(hg);
  optim::Adam8bit opt(ctx, {ParamGrad::of(p, g)}, optim::Adam8bit::defaults(), firstConfig());
  CHECK(opt.options().weightDecay == 0.0f);
  Snapshot before{hp, opt.stateOf(0)};
  opt.step(ctx.stream());
  Snapshot after = snap(opt, p, 0);
  std::vector<double> rp = toDouble(hp), a1(18, 0.0), a2(18, 0.0);
  std::vector<uint8_t> m8(n, 127), v8(n, 0);
  AdamRef h;
  h.wd = 0;
  adam8bitStepRef(h, 1, quant::create_dynamic_map(true), quant::create_dynamic_map(false),
                  toDouble(hg), rp, m8, v8, a1, a2);
  double worst = 0;
  for (size_t i = 0; i < n; ++i)
    worst = std::max(worst, std::fabs(after.p[i] - rp[i]) / std::max(std::fabs(rp[i]), 1e-3));
  INFO("max relative error " << worst);
  CHECK(worst < 1e-6);
}

TEST_CASE("optim: moving the buffers' objects keeps the optimizer's tensors", "[optim]") {
  Context ctx{createInterpreterBackend()};
  Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<float> hp = rng.uniform(5000);
  std::vector<DeviceBuffer<float>> held;
  held.push_back(ctx.upload(hp));
  held.push_back(ctx.upload(rng.uniform(5000, -0.1f, 0.1f)));
  AdamW8bit opt(ctx, {ParamGrad::of(held[0], held[1])}, {}, firstConfig());
  held.reserve(64);  // moves the DeviceBuffer objects; the allocations stay
  opt.step(ctx.stream());
  std::vector<float> got = held[0].toHost();
  size_t moved = 0;
  for (size_t i = 0; i < got.size(); ++i)
    moved += got[i] != hp[i];
  CHECK(moved > got.size() / 2);
}

namespace {

// adam8bit_step launched directly on one tensor with persistent programs of
// 1, 3 (starting inside a granule, where the tensor is looked up anew) and 8
// consecutive chunks, with the binary search (MAP 0), and with ALIGNED
// (16-byte vectors untested): the same bits.
void checkStepsAndSearch(Context &ctx) {
  Seeded rng;
  INFO("seed " << rng.seed);
  const int32_t n = int32_t(rng.range(9000, 12000));  // ragged: the last chunk is partial
  const std::vector<float> p0 = rng.uniform(size_t(n)), g0 = rng.uniform(size_t(n), -0.1f, 0.1f);
  const size_t blocks = size_t(n + 255) / 256;
  std::vector<uint8_t> m0(static_cast<size_t>(n)), v0(static_cast<size_t>(n));
  for (size_t i = 0; i < m0.size(); ++i)
    m0[i] = uint8_t(rng.rng() & 255), v0[i] = uint8_t(rng.rng() & 255);
  const std::vector<float> a10 = rng.uniform(blocks, 0.0f, 0.01f), a20 = rng.uniform(blocks, 0.0f, 1e-4f);
  auto code1 = ctx.upload(quant::create_dynamic_map(true));
  auto code2 = ctx.upload(quant::create_dynamic_map(false));
  quant::CodeBuckets b1(ctx), b2(ctx);
  b1.build(ctx.stream(), code1);
  b2.build(ctx.stream(), code2);
  const int32_t vtotal = (n + 4095) / 4096 * 4096;
  struct Out {
    std::vector<float> p, a1, a2;
    std::vector<uint8_t> m, v;
  };
  auto run = [&](int steps, int map, int aligned) {
    auto p = ctx.upload(p0), g = ctx.upload(g0), a1 = ctx.upload(a10), a2 = ctx.upload(a20);
    auto m = ctx.upload(m0), v = ctx.upload(v0);
    auto params = ctx.upload(std::vector<int64_t>{int64_t(p.address())});
    auto grads = ctx.upload(std::vector<int64_t>{int64_t(g.address())});
    auto owner = ctx.upload(std::vector<int32_t>(size_t(vtotal / 4096), 0));
    auto zero = ctx.upload(std::vector<int32_t>{0}), count = ctx.upload(std::vector<int32_t>{n});
    Kernel k = compile(ctx, kernelLibraryPath("optim/adam8bit.tile"), "adam8bit_step",
                       {{"CHUNK", int64_t(1024)}, {"STEPS", int64_t(steps)},
                        {"MAP", int64_t(map)}, {"ALIGNED", int64_t(aligned)}});
    std::vector<ArgValue> args{ArgValue::pointer(ScalarType::f32, params.address()),
                               ArgValue::pointer(ScalarType::f32, grads.address())};
    args[0].type.pointerDepth = args[1].type.pointerDepth = 2;
    for (ArgValue a : {toArgValue(owner), toArgValue(zero), toArgValue(zero), toArgValue(count)})
      args.push_back(a);
    for (ArgValue a : {toArgValue(m), toArgValue(v)})
      args.push_back(a);
    for (ArgValue a : {toArgValue(a1), toArgValue(a2), toArgValue(code1), toArgValue(code2)})
      args.push_back(a);
    for (ArgValue a : {toArgValue(b1.buckets()), toArgValue(b1.bad()), toArgValue(b2.buckets()),
                       toArgValue(b2.bad())})
      args.push_back(a);
    for (ArgValue a : {toArgValue(vtotal), toArgValue(0.9f), toArgValue(0.999f), toArgValue(1e-8f),
                       toArgValue(-1e-3f), toArgValue(0.99999f)})
      args.push_back(a);
    k.launchWithArgs(ctx.stream(), Grid::of(cdiv(int64_t(vtotal / 1024), int64_t(steps))), args);
    ctx.synchronize();
    return Out{p.toHost(), a1.toHost(), a2.toHost(), m.toHost(), v.toHost()};
  };
  const Out base = run(8, 1, 0), one = run(1, 1, 0), three = run(3, 1, 0), search = run(8, 0, 0),
            aligned = run(8, 1, 1);
  for (const Out *o : {&one, &three, &search, &aligned}) {
    CHECK(o->p == base.p);
    CHECK(o->m == base.m);
    CHECK(o->v == base.v);
    CHECK(o->a1 == base.a1);
    CHECK(o->a2 == base.a2);
  }
  CHECK(base.m != m0);  // the step changed the states
}

} // namespace

TEST_CASE("optim: persistent programs, alignment and the bucketed search change no bit", "[optim]") {
  Context ctx{createInterpreterBackend()};
  checkStepsAndSearch(ctx);
}

TEST_CASE("optim: persistent programs, alignment and the bucketed search change no bit (GPU)",
          "[optim][gpu]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkStepsAndSearch(*ctx);
}
