// ROAST-MM through tessera::roast::Linear against fp64 references that build
// W = lambda * M[IDX] explicitly (RoastTestSupport.h): the identity check of
// KERNELS.md, forward, dX and dM (atomic and deterministic) on ragged shapes
// for both mappings, and the deterministic dM bit-identical run to run. In
// the interpreter (CI) and on the GPU when there is one.
#include "GpuTestSupport.h"
#include "RoastTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/KernelLibrary.h"
#include "tessera/roast/Roast.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace tessera;
using namespace tessera::roast;
using namespace tessera::testing;
using roastref::MmLayer;
using roastref::randomR;

namespace {

MmLayer refOf(const Linear &l) {
  return {l.in(), l.out(), l.tile().k, l.tile().n, l.memory().size(), l.hash().R,
          l.mapping() == Mapping::Aligned, double(l.lambda())};
}

} // namespace

// M = arange(H) / lambda and X = I: Y is the index map itself. Small integers
// times a power-of-two lambda are exact in fp32 and tf32 (H < 2048), so the
// comparison is exact; so is dM, a scatter-add of lambda * dY with integer dY.
TEST_CASE("roast Linear: the identity check gives the index map, both mappings", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  for (auto &t : roastref::targets())
    for (Mapping m : {Mapping::RzLinear, Mapping::Aligned}) {
      INFO(t.name << " mapping " << mappingName(m));
      const int64_t K = 40 + s.range(0, 20), N = 50 + s.range(0, 30), H = 1500 + s.range(0, 500);
      const float lam = 0.5f;
      std::vector<float> mem(static_cast<size_t>(H));
      for (int64_t i = 0; i < H; ++i)
        mem[size_t(i)] = float(i) / lam;
      MemoryArray M(*t.ctx, mem);
      LinearOptions o;
      o.mapping = m;
      o.tile = {16, 16};
      o.lambda = lam;
      Linear fc(M, K, N, TileHash::fromValues(randomR(s)), o);
      std::vector<float> eye(size_t(K * K), 0.0f);
      for (int64_t k = 0; k < K; ++k)
        eye[size_t(k * K + k)] = 1.0f;
      auto X = t.ctx->upload(eye);
      auto Y = t.ctx->alloc<float>(size_t(K * N));
      Y.memsetBytes(0xFF);
      fc.forward(t.ctx->stream(), X, Y, K);
      t.ctx->synchronize();
      std::vector<float> y = Y.toHost();
      std::vector<int64_t> idx = refOf(fc).indexMap();
      int64_t wrong = 0;
      for (size_t i = 0; i < idx.size(); ++i)
        wrong += y[i] != float(idx[i]);
      CHECK(wrong == 0);
      // The layer's own index map agrees.
      CHECK(fc.indexOf(K - 1, N - 1) == idx.back());

      // dM for dY integer in [-4, 4]: lambda * dY[k, n] added at IDX[k, n].
      std::vector<float> dy(static_cast<size_t>(K * N));
      for (auto &v : dy)
        v = float(s.range(-4, 4));
      auto dY = t.ctx->upload(dy);
      auto dX = t.ctx->alloc<float>(size_t(K * K));
      for (bool det : {false, true}) {
        M.grad().zero();
        fc.backward(t.ctx->stream(), X, dY, dX, K, det);
        t.ctx->synchronize();
        std::vector<double> ref(size_t(H), 0.0);
        for (size_t i = 0; i < idx.size(); ++i)
          ref[size_t(idx[i])] += lam * dy[i];
        std::vector<float> got = M.grad().toHost();
        int64_t bad = 0;
        for (int64_t i = 0; i < H; ++i)
          bad += double(got[size_t(i)]) != ref[size_t(i)];
        INFO("deterministic " << det);
        CHECK(bad == 0);
      }
    }
}

TEST_CASE("roast Linear: forward, dX and dM match fp64 on ragged shapes", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  struct Case {
    Mapping m;
    HashTile tile;
  };
  for (auto &t : roastref::targets())
    for (Case c : {Case{Mapping::RzLinear, {32, 64}}, Case{Mapping::Aligned, {32, 64}},
                   Case{Mapping::RzLinear, {16, 32}}, Case{Mapping::Aligned, {64, 16}}}) {
      // Not multiples of any tile; the memory array holds ~1/3 of K x N, so tiles collide.
      const int64_t B = 17 + s.range(0, 30), K = 70 + s.range(0, 60), N = 90 + s.range(0, 70);
      const int64_t H = K * N / 3 + s.range(0, 999);
      INFO(t.name << " " << mappingName(c.m) << " tile " << c.tile.k << "x" << c.tile.n << " B "
                  << B << " K " << K << " N " << N << " H " << H);
      MemoryArray M(*t.ctx, s.uniform(size_t(H)));
      LinearOptions o;
      o.mapping = c.m;
      o.tile = c.tile;
      o.lambda = 0.25f + float(s.range(0, 100)) / 100.0f;
      Linear fc(M, K, N, TileHash::fromValues(randomR(s)), o);
      MmLayer ref = refOf(fc);
      std::vector<float> x = s.uniform(size_t(B * K)), dy = s.uniform(size_t(B * N));
      std::vector<float> mem = M.values().toHost();
      auto X = t.ctx->upload(x), dY = t.ctx->upload(dy);
      auto Y = t.ctx->alloc<float>(size_t(B * N)), dX = t.ctx->alloc<float>(size_t(B * K));
      Y.memsetBytes(0xFF);
      dX.memsetBytes(0xFF);
      fc.forward(t.ctx->stream(), X, Y, B);
      M.grad().zero();
      fc.backward(t.ctx->stream(), X, dY, dX, B, /*deterministic=*/false);
      t.ctx->synchronize();
      // X^T for dM lived in dX's buffer, and the hash parameters are kernel
      // arguments: the layer owns no device memory.
      CHECK(fc.deviceBytes() == 0);
      double eY = relErrL2(Y.toHost(), ref.forward(x, mem, B));
      double eX = relErrL2(dX.toHost(), ref.inputGrad(dy, mem, B));
      std::vector<double> dm(size_t(H), 0.0);
      ref.addMemoryGrad(x, dy, B, dm);
      double eM = relErrL2(M.grad().toHost(), dm);
      M.grad().zero();
      fc.backwardMemory(t.ctx->stream(), X, dY, B, /*deterministic=*/true);
      t.ctx->synchronize();
      double eMd = relErrL2(M.grad().toHost(), dm);
      INFO("relative errors: Y " << eY << ", dX " << eX << ", dM atomic " << eM
                                 << ", dM deterministic " << eMd << " (" << fc.waves().waves()
                                 << " waves)");
      CHECK(eY < t.tol);
      CHECK(eX < t.tol);
      CHECK(eM < t.tol);
      CHECK(eMd < t.tol);
    }
}

TEST_CASE("roast Linear: the deterministic dM is bit-identical run to run", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  for (auto &t : roastref::targets()) {
    INFO(t.name);
    // A small memory array: every element is covered by several tiles, so
    // the order of the adds matters.
    const int64_t B = 33, K = 96 + s.range(0, 40), N = 100 + s.range(0, 60), H = 3001;
    MemoryArray M(*t.ctx, H, 1.0f, s.seed);
    LinearOptions o;
    o.tile = {16, 16};
    Linear fc(M, K, N, TileHash::fromSeed(s.seed), o);
    REQUIRE(fc.waves().waves() > 1);
    auto X = t.ctx->upload(s.uniform(size_t(B * K))), dY = t.ctx->upload(s.uniform(size_t(B * N)));
    std::vector<float> first;
    int differing = 0;
    for (int run = 0; run < 3; ++run) {
      M.grad().zero();
      fc.backwardMemory(t.ctx->stream(), X, dY, B, true);
      t.ctx->synchronize();
      std::vector<float> g = M.grad().toHost();
      if (run == 0)
        first = g;
      else
        differing += std::memcmp(g.data(), first.data(), g.size() * sizeof(float)) != 0;
    }
    CHECK(differing == 0);
  }
}

// LinearOptions::reproducible: the forward's configs exclude split K (no
// atomics into Y), so a small batch, where the tuner may pick a split, gives
// bit-identical Y run to run, still matching fp64.
TEST_CASE("roast Linear: a reproducible forward never splits K and is bit-identical", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  for (auto &t : roastref::targets()) {
    INFO(t.name);
    const bool gpu = !t.ctx->isInterpreter();
    const int64_t B = 32, K = gpu ? 4096 : 200, N = gpu ? 2048 : 150;
    MemoryArray M(*t.ctx, gpu ? (int64_t(1) << 20) : 20011, 1.0f, s.seed);
    LinearOptions o;
    o.mapping = Mapping::Aligned;
    o.reproducible = true;
    Linear fc(M, K, N, TileHash::fromSeed(s.seed), o);
    std::vector<float> x = s.uniform(size_t(B * K));
    auto X = t.ctx->upload(x);
    auto Y = t.ctx->alloc<float>(size_t(B * N));
    std::vector<float> first;
    int differing = 0;
    for (int run = 0; run < 3; ++run) {
      Y.memsetBytes(0xFF);
      fc.forward(t.ctx->stream(), X, Y, B);
      t.ctx->synchronize();
      std::vector<float> y = Y.toHost();
      if (run == 0)
        first = y;
      else
        differing += std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) != 0;
    }
    CHECK(differing == 0);
    std::string config = fc.chosenConfigs().at("roast_mm_fwd");
    INFO("config " << config);
    CHECK(config.find("SPLIT_K") == std::string::npos);
    double err = relErrL2(first, refOf(fc).forward(x, M.values().toHost(), B));
    INFO("relative error " << err);
    CHECK(err < t.tol);
  }
}

TEST_CASE("roast_mm_fwd: a split K with a non-f32 output is a compile error at the assert",
          "[roast][errors]") {
  CompileOptions o;
  o.constexprs = {{"SPLIT_K", int64_t(2)}, {"OUT", *parseDType("bf16")}};
  CompileResult r = compileFile(kernelLibraryPath("roast/roast_mm.tile"), "roast_mm_fwd", o);
  INFO(r.diagnostics);
  CHECK_FALSE(r.ok);
  CHECK(r.diagnostics.find("roast_mm.tile:") != std::string::npos);
  CHECK(r.diagnostics.find("SPLIT_K > 1 adds into Y with f32 atomics: OUT must be f32") !=
        std::string::npos);
  o.constexprs = {{"SPLIT_K", int64_t(0)}};
  r = compileFile(kernelLibraryPath("roast/roast_mm.tile"), "roast_mm_fwd", o);
  CHECK_FALSE(r.ok);
  CHECK(r.diagnostics.find("SPLIT_K must be at least 1") != std::string::npos);
}

// The kernels at several tiles each against the reference (the layer uses the
// tuned or first config; here BK and BN below, equal to and above the hash
// tile's sides), straight through tessera::compile in the interpreter.
TEST_CASE("roast kernels: every tile shape around the hash tile matches fp64", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context ctx(createInterpreterBackend());
  const int64_t HK = 32, HN = 32, B = 21 + s.range(0, 20), K = 75 + s.range(0, 30),
                N = 70 + s.range(0, 40), H = 4000 + s.range(0, 999);
  const float lam = 0.7f;
  INFO("B " << B << " K " << K << " N " << N << " H " << H);
  std::array<int32_t, 8> R = randomR(s);
  std::vector<float> x = s.uniform(size_t(B * K)), dy = s.uniform(size_t(B * N)),
                     mem = s.uniform(size_t(H));
  std::vector<float> xt(x.size()); // X^T, K x B: the dM kernels' fast layout
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      xt[size_t(k * B + b)] = x[size_t(b * K + k)];
  auto X = ctx.upload(x), XT = ctx.upload(xt), dY = ctx.upload(dy), Mem = ctx.upload(mem);
  const std::string dir = kernelLibraryDir() + "/roast/";
  for (bool aligned : {false, true}) {
    MmLayer ref{K, N, HK, HN, H, R, aligned, lam};
    std::vector<double> dm(size_t(H), 0.0);
    ref.addMemoryGrad(x, dy, B, dm);
    std::vector<double> y = ref.forward(x, mem, B), dx = ref.inputGrad(dy, mem, B);
    for (auto [bk, bn] : {std::pair<int64_t, int64_t>{16, 16}, {32, 32}, {16, 64}, {64, 128}}) {
      INFO("aligned " << aligned << " BK " << bk << " BN " << bn);
      std::map<std::string, ConstexprValue> cx{{"HK", HK}, {"HN", HN}, {"ALIGNED", aligned},
                                               {"BK", bk}, {"BN", bn}, {"GROUP", int64_t(2)}};
      if (bk <= HK) { // the forward needs BK | HK
        auto c = cx;
        c["BM"] = int64_t(32);
        Kernel k = compile(ctx, dir + "roast_mm.tile", "roast_mm_fwd", c);
        auto Y = ctx.alloc<float>(size_t(B * N));
        Y.memsetBytes(0xFF);
        k.launch(ctx.stream(), Grid::of(cdiv(B, 32) * cdiv(N, bn)), X, Mem, Y, R[1], R[2], R[3], R[4], R[5], R[7], int32_t(B),
                 int32_t(K), int32_t(N), int32_t(H), lam, int32_t(K), int32_t(1), int32_t(N), int32_t(1));
        ctx.synchronize();
        CHECK(relErrL2(Y.toHost(), y) < 2e-5);
        // Split K: SPLIT_K programs per output tile add into a zeroed Y; K
        // is ragged, so the last split's last step is partial or empty.
        for (int64_t split : {int64_t(2), int64_t(3)}) {
          INFO("SPLIT_K " << split);
          auto cs = c;
          cs["SPLIT_K"] = split;
          Kernel ks = compile(ctx, dir + "roast_mm.tile", "roast_mm_fwd", cs);
          Y.memsetBytes(0);
          ks.launch(ctx.stream(), Grid::of(cdiv(B, 32) * cdiv(N, bn), split), X, Mem, Y, R[1], R[2], R[3], R[4], R[5], R[7],
                    int32_t(B), int32_t(K), int32_t(N), int32_t(H), lam, int32_t(K), int32_t(1),
                    int32_t(N), int32_t(1));
          ctx.synchronize();
          CHECK(relErrL2(Y.toHost(), y) < 2e-5);
        }
      }
      {
        auto c = cx;
        c["BM"] = int64_t(16);
        Kernel k = compile(ctx, dir + "roast_mm_dx.tile", "roast_mm_dx", c);
        auto dX = ctx.alloc<float>(size_t(B * K));
        dX.memsetBytes(0xFF);
        k.launch(ctx.stream(), Grid::of(cdiv(B, 16) * cdiv(K, bk)), dY, Mem, dX, R[1], R[2], R[3], R[4], R[5], R[7], int32_t(B),
                 int32_t(K), int32_t(N), int32_t(H), lam, int32_t(N), int32_t(1), int32_t(K), int32_t(1));
        ctx.synchronize();
        CHECK(relErrL2(dX.toHost(), dx) < 2e-5);
      }
      {
        auto c = cx;
        c["BB"] = int64_t(16);
        Kernel k = compile(ctx, dir + "roast_mm_dm.tile", "roast_mm_dm", c);
        auto dM = ctx.alloc<float>(size_t(H));
        dM.zero();
        // Both layouts of X: row-major, and transposed (what the layer passes).
        for (bool transposed : {false, true}) {
          INFO("X transposed " << transposed);
          dM.zero();
          k.launch(ctx.stream(), Grid::of(cdiv(K, bk) * cdiv(N, bn)), transposed ? XT : X, dY, dM,
                   R[1], R[2], R[3], R[4], R[5], R[7], int32_t(B), int32_t(K), int32_t(N), int32_t(H), lam,
                   transposed ? int32_t(1) : int32_t(K), transposed ? int32_t(B) : int32_t(1),
                   int32_t(N), int32_t(1));
          ctx.synchronize();
          CHECK(relErrL2(dM.toHost(), dm) < 2e-5);
        }
      }
      if (bk <= HK && bn <= HN) { // the wave kernel splits hash tiles
        auto c = cx;
        c["BB"] = int64_t(16);
        c.erase("GROUP");
        Kernel k = compile(ctx, dir + "roast_mm_dm.tile", "roast_mm_dm_wave", c);
        TileWaves w = TileWaves::build(cdiv(K, HK), cdiv(N, HN), HK * HN,
                                       [&](int64_t kb, int64_t nb) { return ref.loc(kb, nb); });
        auto tiles = ctx.upload(w.tiles);
        auto dM = ctx.alloc<float>(size_t(H));
        dM.zero();
        for (size_t i = 0; i < w.waves(); ++i)
          k.launch(ctx.stream(),
                   Grid::of(int64_t(w.starts[i + 1] - w.starts[i]) * (HK / bk) * (HN / bn)), XT, dY,
                   dM, R[1], R[2], R[3], R[4], R[5], R[7], tiles, int32_t(w.starts[i]), int32_t(B), int32_t(K), int32_t(N),
                   int32_t(H), lam, int32_t(1), int32_t(B), int32_t(N), int32_t(1));
        ctx.synchronize();
        CHECK(relErrL2(dM.toHost(), dm) < 2e-5);
      }
    }
  }
}
