// tessera::roast beyond ROAST-MM's numerics: the lookup (Embedding) against a
// gather / scatter-add reference with and without the sign hash, global
// memory sharing (layers accumulate into one dM), the deterministic schedule
// (TileWaves), the memory array's initialisation and SGD step, the host
// hashes against the formulas, and the argument errors.
#include "RoastTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/KernelLibrary.h"
#include "tessera/roast/Roast.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using namespace tessera;
using namespace tessera::roast;
using namespace tessera::testing;

namespace {

std::array<int32_t, 6> randomRL(Seeded &s) {
  std::array<int32_t, 6> RL{};
  for (size_t i = 0; i < 6; ++i) {
    RL[i] = s.range(1, 2038074742);
    if (i < 3 && RL[i] % 2 == 0)
      RL[i] -= 1;
  }
  return RL;
}

} // namespace

TEST_CASE("roast Embedding: forward and backward match gather / scatter-add", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  for (auto &t : roastref::targets())
    for (bool sign : {false, true}) {
      const int64_t rows = 50 + s.range(0, 500), dim = 20 + s.range(0, 60), Z = 1 + s.range(0, 16),
                    H = 700 + s.range(0, 300), T = 40 + s.range(0, 40);
      INFO(t.name << " sign " << sign << " rows " << rows << " dim " << dim << " Z " << Z << " H "
                  << H << " T " << T);
      MemoryArray M(*t.ctx, s.uniform(size_t(H)));
      EmbeddingOptions o;
      o.sign = sign;
      o.lambda = 0.5f + float(s.range(0, 100)) / 50.0f;
      Embedding emb(M, rows, dim, Z, LookupHash::fromValues(randomRL(s)), o);
      roastref::Lookup ref{rows, dim, Z, H, emb.hash().RL, sign, double(*o.lambda)};
      // Repeated rows (their gradients collide) and two rows out of range.
      std::vector<int32_t> idx(static_cast<size_t>(T));
      for (auto &i : idx)
        i = s.range(0, int(rows) - 1);
      idx[1] = idx[0];
      idx[2] = -1;
      idx[3] = int32_t(rows);
      std::vector<float> mem = M.values().toHost(), dout = s.uniform(size_t(T * dim));
      auto I = t.ctx->upload(idx);
      auto dOut = t.ctx->upload(dout);
      auto out = t.ctx->alloc<float>(size_t(T * dim));
      out.memsetBytes(0xFF);
      emb.forward(t.ctx->stream(), I, out, T);
      M.grad().zero();
      emb.backward(t.ctx->stream(), I, dOut, T);
      t.ctx->synchronize();
      std::vector<double> y(size_t(T * dim), 0.0), dm(size_t(H), 0.0);
      for (int64_t r = 0; r < T; ++r) {
        int64_t row = idx[size_t(r)];
        if (row < 0 || row >= rows)
          continue;
        for (int64_t c = 0; c < dim; ++c) {
          double g = ref.signOf(row, c) * ref.lambda;
          y[size_t(r * dim + c)] = g * mem[size_t(ref.index(row, c))];
          dm[size_t(ref.index(row, c))] += g * dout[size_t(r * dim + c)];
        }
      }
      double eY = relErrL2(out.toHost(), y), eM = relErrL2(M.grad().toHost(), dm);
      INFO("relative errors: forward " << eY << ", dM " << eM);
      CHECK(eY < 1e-6);
      CHECK(eM < 1e-6);
      // The host index map and sign agree with the formulas.
      int64_t r = s.range(0, int(rows) - 1), c = s.range(0, int(dim) - 1);
      CHECK(emb.indexOf(r, c) == ref.index(r, c));
      CHECK(double(emb.signOf(r, c)) == ref.signOf(r, c));
      if (sign) { // the sign hash is not constant
        int minus = 0;
        for (int64_t rr = 0; rr < rows; ++rr)
          minus += emb.signOf(rr, 0) < 0;
        CHECK(minus > 0);
        CHECK(minus < rows);
      }
    }
}

TEST_CASE("roast GMS: two layers and an embedding share one memory array and accumulate dM",
          "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  for (auto &t : roastref::targets()) {
    INFO(t.name);
    const int64_t B = 19, K1 = 45, N1 = 60, N2 = 33, H = 2500 + s.range(0, 500);
    MemoryArray M(*t.ctx, H, 2.0f, s.seed);
    LinearOptions o1, o2;
    o1.tile = {16, 32};
    o2.tile = {32, 16};
    o2.mapping = Mapping::Aligned;
    Linear a(M, K1, N1, TileHash::fromSeed(s.seed + 1), o1);
    Linear b(M, N1, N2, TileHash::fromSeed(s.seed + 2), o2);
    Embedding e(M, 30, 24, 8, LookupHash::fromSeed(s.seed + 3));
    CHECK(a.lambda() == Approx(2.0 / std::sqrt(45.0)));
    CHECK(b.lambda() == Approx(2.0 / std::sqrt(60.0)));
    CHECK(e.lambda() == 2.0f);
    std::vector<float> x1 = s.uniform(size_t(B * K1)), g1 = s.uniform(size_t(B * N1)),
                       g2 = s.uniform(size_t(B * N2)), ge = s.uniform(size_t(5 * 24));
    std::vector<int32_t> idx{3, 7, 3, 29, 0};
    auto X1 = t.ctx->upload(x1), G1 = t.ctx->upload(g1), G2 = t.ctx->upload(g2),
         GE = t.ctx->upload(ge);
    auto I = t.ctx->upload(idx);
    auto dX2 = t.ctx->alloc<float>(size_t(B * N1));
    M.zeroGrad(t.ctx->stream());
    for (bool det : {false, true}) {
      M.zeroGrad(t.ctx->stream());
      a.backwardMemory(t.ctx->stream(), X1, G1, B, det);
      // Layer b's input is x2 = G1 here (any B x N1 values do).
      b.backward(t.ctx->stream(), G1, G2, dX2, B, det);
      e.backward(t.ctx->stream(), I, GE, 5);
      t.ctx->synchronize();
      std::vector<double> dm(size_t(H), 0.0);
      roastref::MmLayer ra{K1, N1, 16, 32, H, a.hash().R, false, double(a.lambda())};
      roastref::MmLayer rb{N1, N2, 32, 16, H, b.hash().R, true, double(b.lambda())};
      ra.addMemoryGrad(x1, g1, B, dm);
      rb.addMemoryGrad(g1, g2, B, dm);
      roastref::Lookup re{30, 24, 8, H, e.hash().RL, false, double(e.lambda())};
      for (size_t r = 0; r < idx.size(); ++r)
        for (int64_t c = 0; c < 24; ++c)
          dm[size_t(re.index(idx[r], c))] += re.lambda * ge[r * 24 + size_t(c)];
      double err = relErrL2(M.grad().toHost(), dm);
      INFO("deterministic " << det << ": relative error of the shared dM " << err);
      CHECK(err < t.tol);
    }
  }
}

TEST_CASE("roast TileWaves: every tile once, no overlap inside a wave, optimal wave count",
          "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  const int64_t tilesK = 1 + s.range(0, 30), tilesN = 1 + s.range(0, 30), span = 1 + s.range(0, 200),
                range = 1 + s.range(0, 3000);
  std::map<std::pair<int64_t, int64_t>, int64_t> off;
  for (int64_t kb = 0; kb < tilesK; ++kb)
    for (int64_t nb = 0; nb < tilesN; ++nb)
      off[{kb, nb}] = s.range(0, int(range) - 1);
  TileWaves w = TileWaves::build(tilesK, tilesN, span,
                                 [&](int64_t kb, int64_t nb) { return off.at({kb, nb}); });
  std::vector<int> seen(size_t(tilesK * tilesN), 0);
  for (size_t i = 0; i < w.waves(); ++i) {
    std::vector<int64_t> starts;
    for (size_t j = w.starts[i]; j < w.starts[i + 1]; ++j) {
      int32_t id = w.tiles[j];
      ++seen[size_t(id)];
      starts.push_back(off.at({id / tilesN, id % tilesN}));
    }
    std::sort(starts.begin(), starts.end());
    for (size_t j = 1; j < starts.size(); ++j)
      CHECK(starts[j] >= starts[j - 1] + span);
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == tilesK * tilesN);
  // The deepest point of the runs: no schedule can use fewer waves.
  std::vector<int> depth(size_t(range + span), 0);
  for (auto &[k, o] : off)
    for (int64_t e = o; e < o + span; ++e)
      ++depth[size_t(e)];
  CHECK(int64_t(w.waves()) == *std::max_element(depth.begin(), depth.end()));
}

TEST_CASE("roast MemoryArray: U(-1/C, 1/C) from a seed, and the SGD step", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context ctx(createInterpreterBackend());
  const float C = 0.5f + float(s.range(0, 40)) / 10.0f;
  MemoryArray a(ctx, 20000, C, s.seed), b(ctx, 20000, C, s.seed), c(ctx, 20000, C, s.seed + 1);
  std::vector<float> va = a.values().toHost();
  CHECK(va == b.values().toHost());
  CHECK(va != c.values().toHost());
  double mean = 0, lo = 1e9, hi = -1e9;
  for (float v : va)
    mean += v, lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  mean /= double(va.size());
  INFO("C " << C << " min " << lo << " max " << hi << " mean " << mean);
  CHECK(lo >= -1.0 / C);
  CHECK(hi < 1.0 / C);
  CHECK(lo < -0.99 / C); // the range is covered
  CHECK(hi > 0.99 / C);
  CHECK(std::fabs(mean) < 0.03 / C);
  std::vector<float> g = s.uniform(va.size());
  a.grad().copyFromHost(g);
  a.sgdStep(ctx.stream(), 0.1f);
  ctx.synchronize();
  std::vector<float> after = a.values().toHost(), gradAfter = a.grad().toHost();
  std::vector<double> ref(va.size());
  for (size_t i = 0; i < va.size(); ++i)
    ref[i] = double(va[i]) - 0.1 * double(g[i]);
  CHECK(relErrL2(after, ref) < 1e-6);
  CHECK(std::all_of(gradAfter.begin(), gradAfter.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("roast host hashes follow the formulas", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  TileHash h = TileHash::fromSeed(s.seed);
  CHECK(h.R[0] == 45007);
  for (int i = 0; i < 200; ++i) {
    int64_t kb = s.range(0, 100000), nb = s.range(0, 100000), H = 2049 + s.range(0, 1 << 24);
    for (bool aligned : {false, true}) {
      roastref::MmLayer ref{0, 0, 32, 64, H, h.R, aligned, 1.0};
      CHECK(tileOffset(h, aligned ? Mapping::Aligned : Mapping::RzLinear, {32, 64}, H, kb, nb) ==
            ref.loc(kb, nb));
    }
  }
  LookupHash l = LookupHash::fromSeed(s.seed);
  roastref::Lookup ref{1, 1 << 20, 7, 1 << 20, l.RL, true, 1.0};
  for (int i = 0; i < 200; ++i) {
    int64_t r = s.range(0, 2147483646), c = s.range(0, (1 << 20) - 1);
    CHECK(chunkOffset(l, 1 << 20, 7, r, c / 7) + c % 7 == ref.index(r, c));
    CHECK(double(chunkSign(l, int64_t(r) * ((ref.dim + 6) / 7) + c / 7)) == ref.signOf(r, c));
  }
}

// lib/hash.tile evaluates RzLinear's hash in u32 with a precomputed reciprocal
// for the run-time modulus; checked here against the formula in i64, at random
// and at the edges: the largest kb and nb, r = P - 1, range sizes 1, 2 and
// 2^31 - 1, and sums of hi*P + lo near P^2.
TEST_CASE("roast kernel hash: the u32 evaluation equals the i64 formula at its edges", "[roast]") {
  Seeded s;
  INFO("seed " << s.seed);
  TempDir dir("tessera-roast-hash");
  const std::string path = dir.path + "/hash_probe.tile";
  writeFile(path, "from \"" + kernelLibraryDir() +
                      "/lib/hash.tile\" import roast_tile_offset, roast_range_inverse\n"
                      "@kernel\n"
                      "def probe(KB: *i32, NB: *i32, OUT: *i32, r1: i32, r2: i32, r3: i32, r4: i32,\n"
                      "          r5: i32, r7: i32, range_size: i32, BLOCK: constexpr = 64):\n"
                      "    i = arange(0, BLOCK)\n"
                      "    inv = roast_range_inverse(range_size)\n"
                      "    store(OUT + i, roast_tile_offset(r1, r2, r3, r4, r5, r7, load(KB + i),\n"
                      "                                     load(NB + i), range_size, inv))\n");
  const int64_t P = 45007;
  // On the GPU too: ptxas 12.8 once miscompiled this modulus in a kernel
  // (tests/lit/lowering/umulhi_mul_hi.tile).
  for (auto &t : roastref::targets()) {
    Context &ctx = *t.ctx;
    Kernel k = compile(ctx, path, "probe", {});
    for (int round = 0; round < 12; ++round) {
      std::array<int32_t, 8> R{};
      for (int32_t &r : R)
        r = int32_t(round == 0 ? P - 1 : s.range(0, P - 1));
      const int32_t ranges[] = {1, 2, 3, 2147483647, int32_t(P * P - 1), int32_t(P * P),
                                int32_t(s.range(1, 2147483647))};
      const int32_t range = ranges[round % 7];
      std::vector<int32_t> kb(64), nb(64);
      for (size_t i = 0; i < 64; ++i) {
        kb[i] = i < 4 ? 2147483647 - int32_t(i)
                      : int32_t(s.range(0, i < 32 ? 2147483647 : 5000));
        nb[i] = i % 3 == 0 ? 2147483647 : int32_t(s.range(0, 2147483647));
      }
      auto KB = ctx.upload(kb), NB = ctx.upload(nb);
      auto out = ctx.alloc<int32_t>(64);
      k.launch(ctx.stream(), Grid::of(1), KB, NB, out, R[1], R[2], R[3], R[4], R[5], R[7], range);
      ctx.synchronize();
      std::vector<int32_t> got = out.toHost();
      for (size_t i = 0; i < 64; ++i) {
        const int64_t hi = (int64_t(kb[i]) * R[3] + int64_t(nb[i]) * R[2] + R[1]) % P,
                      lo = (int64_t(kb[i]) * R[7] + int64_t(nb[i]) * R[5] + R[4]) % P;
        INFO(t.name << " round " << round << " range " << range << " kb " << kb[i] << " nb "
                    << nb[i]);
        CHECK(got[i] == (hi * P + lo) % range);
      }
    }
  }
}

TEST_CASE("roast errors: bad arguments are reported clearly", "[roast]") {
  Context ctx(createInterpreterBackend());
  CHECK(errorOf([&] { MemoryArray(ctx, 0); }) == "roast::MemoryArray: size must be in [1, 2^31), got 0");
  CHECK(errorOf([&] { MemoryArray(ctx, 10, -1.0f); }) ==
        "roast::MemoryArray: C must be finite and > 0, got -1.000000");
  MemoryArray M(ctx, 1000);
  TileHash h = TileHash::fromSeed(1);
  CHECK(errorOf([&] { Linear(M, 64, 64, h); }) ==
        "roast::Linear: the memory array (1000 elements) must be larger than one hash tile (32 x "
        "64 = 2048 elements)");
  LinearOptions o;
  o.tile = {16, 24};
  CHECK(errorOf([&] { Linear(M, 64, 64, h, o); }) ==
        "roast::Linear: the hash tile's sides must be powers of two >= 16, got 16 x 24");
  o.tile = {16, 16};
  CHECK(errorOf([&] { Linear(M, 0, 64, h, o); }) == "roast::Linear: in must be in [1, 2^31), got 0");
  CHECK(errorOf([&] { TileHash::fromValues({45006, 1, 2, 3, 4, 5, 6, 7}); }) ==
        "roast::TileHash: R[0] must be P = 45007 (RzLinear's layout), got 45006");
  CHECK(errorOf([&] { TileHash::fromValues({45007, 1, 2, 45007, 4, 5, 6, 7}); }) ==
        "roast::TileHash: R[3] must be in [0, 45007), got 45007");
  CHECK(errorOf([&] { LookupHash::fromValues({3, 4, 5, 1, 1, 1}); }) ==
        "roast::LookupHash: RL[1] (a chunk-hash multiplier) must be odd, got 4");
  CHECK(errorOf([&] { LookupHash::fromValues({3, 5, 0, 1, 1, 1}); }) ==
        "roast::LookupHash: RL[2] must be in [1, 2038074743), got 0");
  o.lambda = std::nanf("");
  CHECK(errorOf([&] { Linear(M, 8, 8, h, o); }) == "roast::Linear: lambda must be finite, got nan");
  o.lambda.reset();

  Linear fc(M, 20, 30, h, o);
  auto small = ctx.alloc<float>(59), X = ctx.alloc<float>(60), Y = ctx.alloc<float>(90);
  CHECK(errorOf([&] { fc.forward(ctx.stream(), small, Y, 3); }) ==
        "roast::Linear::forward: X holds 59 elements, needs 60");
  CHECK(errorOf([&] { fc.forward(ctx.stream(), X, small, 3); }) ==
        "roast::Linear::forward: Y holds 59 elements, needs 90");
  CHECK(errorOf([&] { fc.forward(ctx.stream(), X, Y, 0); }) ==
        "roast::Linear::forward: batch must be in [1, 2^31), got 0");
  CHECK(errorOf([&] { fc.backward(ctx.stream(), X, Y, small, 3); }) ==
        "roast::Linear::backward: dX holds 59 elements, needs 60");
  CHECK(errorOf([&] { fc.backward(ctx.stream(), X, Y, X, int64_t(1) << 27); }) ==
        "roast::Linear::backward: batch * max(in, out) = 4026531840 must stay below 2^31 (the "
        "kernels index with i32)");
  CHECK(errorOf([&] { fc.indexOf(20, 0); }) ==
        "roast::Linear::indexOf: (20, 0) is outside the 20 x 30 weight");

  CHECK(errorOf([&] { Embedding(M, 10, 8, 1001, LookupHash::fromSeed(1)); }) ==
        "roast::Embedding: the chunk (1001 elements) must fit in the memory array (1000 elements)");
  Embedding e(M, 10, 8, 4, LookupHash::fromSeed(1));
  auto idx = ctx.upload(std::vector<int32_t>{1, 9});
  auto out = ctx.alloc<float>(23);
  CHECK(errorOf([&] { e.forward(ctx.stream(), idx, out, 3); }) ==
        "roast::Embedding::forward: indices holds 2 elements, needs 3");
  CHECK(errorOf([&] { e.forward(ctx.stream(), idx, out, 2); }) == "<no tessera::Error thrown>");
  CHECK(errorOf([&] { e.backward(ctx.stream(), idx, small, 2); }) == "<no tessera::Error thrown>");
  auto tiny = ctx.alloc<float>(15);
  CHECK(errorOf([&] { e.backward(ctx.stream(), idx, tiny, 2); }) ==
        "roast::Embedding::backward: dOut holds 15 elements, needs 16");
  CHECK(errorOf([&] { M.sgdStep(ctx.stream(), INFINITY); }) ==
        "roast::MemoryArray::sgdStep: lr must be finite, got inf");
}
