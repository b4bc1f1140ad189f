// Thread-block clusters (CompileOptions::clusterSize) and A multicast in
// warp-specialized dot loops: a tf32 matmul (the lit test's kernel) whose
// programs go in clusters of adjacent column tiles of one row tile, loading A
// with multicast=True, so
// each CTA copies a slice of A's rows into every CTA of its cluster. Checked
// against fp64 at ragged shapes (a cluster reaching past N, a K tail, loops
// shorter than the ring of stages), on the GPU (sm_90a; skips visibly
// without one) and in the interpreter, which runs clusters of one. A grid
// that is not whole clusters is an error on both.
#include "GpuTestSupport.h"
#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {
// The kernel of the lit test tests/lit/lowering/cluster_multicast.tile (its
// PTX is checked there): programs paired by cluster_size(), A multicast.
const std::string kClusterMatmul = std::string(TESSERA_SOURCE_DIR) + "/tests/lit/lowering/cluster_multicast.tile";

struct Shape {
  int64_t M, N, K;
};

/// C = A B at cluster size `cs` (8 warps, 4 stages), relative L2 error against fp64.
double clusterMatmulError(Context &ctx, const Shape &s, int cs, int64_t BM) {
  Seeded rnd;
  INFO("seed " << rnd.seed << " M " << s.M << " N " << s.N << " K " << s.K << " cluster " << cs
               << " BM " << BM);
  std::vector<float> a = rnd.uniform(size_t(s.M * s.K)), b = rnd.uniform(size_t(s.K * s.N));
  JitOptions o;
  o.numWarps = 8;
  o.clusterSize = cs;
  Kernel k = compile(ctx, kClusterMatmul, "mm", {{"BM", BM}}, o);
  auto A = ctx.upload(a), B = ctx.upload(b);
  auto C = ctx.alloc<float>(size_t(s.M * s.N));
  C.memsetBytes(0xFF);
  const int64_t tilesN = cdiv(cdiv(s.N, int64_t(128)), int64_t(cs)) * cs;
  k.launch(ctx.stream(), Grid::of(cdiv(s.M, BM) * tilesN), A, B, C, int32_t(s.M), int32_t(s.N),
           int32_t(s.K));
  ctx.synchronize();
  return relErrL2(C.toHost(), matmulRef(a, b, size_t(s.M), size_t(s.N), size_t(s.K)));
}

void checkClusterMatmuls(Context &ctx, const std::vector<Shape> &shapes, const std::vector<int> &clusters) {
  for (const Shape &s : shapes)
    for (int cs : clusters)
      for (int64_t BM : {128, 256})
        CHECK(clusterMatmulError(ctx, s, cs, BM) < 3e-3);
}

// N = 640: five column tiles, so the last cluster of two reaches past N;
// K = 1000: a tail; K = 64: two iterations for a ring of four stages.
const std::vector<Shape> kShapes = {{300, 640, 1000}, {256, 512, 64}, {77, 384, 4096}};
} // namespace

TEST_CASE("clusters and A multicast: a tf32 matmul matches fp64 (interpreter)",
          "[language][interp][cluster]") {
  Context ctx(createInterpreterBackend());
  checkClusterMatmuls(ctx, {{70, 200, 96}}, {1, 2});
}

TEST_CASE("a cluster launch whose grid is not whole clusters is an error", "[language][interp][cluster]") {
  Context ctx(createInterpreterBackend());
  JitOptions o;
  o.clusterSize = 2;
  Kernel k = compile(ctx, kClusterMatmul, "mm", {}, o);
  auto A = ctx.alloc<float>(128 * 32), B = ctx.alloc<float>(32 * 128), C = ctx.alloc<float>(128 * 128);
  CHECK_THROWS_WITH(k.launch(ctx.stream(), Grid::of(3), A, B, C, int32_t(128), int32_t(128), int32_t(32)),
                    Catch::Contains("runs in clusters of 2 programs along x (cluster_size): the grid's x "
                                    "size 3 must be a multiple of 2"));
}

TEST_CASE("GPU: clusters and A multicast: a tf32 matmul matches fp64", "[gpu][cluster]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  checkClusterMatmuls(*ctx, kShapes, {1, 2, 4});
}
