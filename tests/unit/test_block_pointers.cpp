// Block pointers (make_block_ptr, advance, load/store with boundary_check and
// padding_option) and tensor descriptors (make_tensor_descriptor,
// desc.load/desc.store), and the loops and `if`s that carry them (and tuples)
// number by number: run in the CPU interpreter on fresh random inputs against
// C++ references written here, and matmuls through both on the GPU against
// fp64. Bad uses are errors at their line. GPU cases skip visibly without a GPU.
#include "GpuTestSupport.h"
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tessera;
using namespace tessera::testing;

namespace {

// A BR x BC block of a rows x cols tensor (strides sr, sc) at (o0, o1),
// loaded with the dimensions CHECK names checked (bit 0: dimension 0,
// bit 1: dimension 1) and stored densely into Y.
const char *kBlockCopy = R"(
@kernel
def block_copy(X: *f32, Y: *f32, rows: i32, cols: i32, sr: i32, sc: i32, o0: i32, o1: i32,
               BR: constexpr = 8, BC: constexpr = 16, CHECK: constexpr = 3,
               PAD: constexpr = "zero"):
    bp = make_block_ptr(X, (rows, cols), (sr, sc), (o0, o1), (BR, BC), (1, 0))
    if CHECK == 3:
        x = load(bp, boundary_check=(0, 1), padding_option=PAD)
    elif CHECK == 1:
        x = load(bp, boundary_check=(0,), padding_option=PAD)
    elif CHECK == 2:
        x = load(bp, boundary_check=(1,), padding_option=PAD)
    else:
        x = load(bp)
    out = make_block_ptr(base=Y, shape=(BR, BC), strides=(BC, 1), offsets=(0, 0),
                         block_shape=(BR, BC), order=(1, 0))
    store(out, x)
)";

// Writes i * 100 + j at element (i, j) of the block at (o0, o1) of a rows x
// cols row-major Y, clipped to Y.
const char *kBlockStore = R"(
@kernel
def block_store(Y: *f32, rows: i32, cols: i32, o0: i32, o1: i32,
                BR: constexpr = 8, BC: constexpr = 16, DESC: constexpr = False):
    v = (arange(0, BR)[:, None] * 100 + arange(0, BC)[None, :]).to(f32)
    if DESC:
        d = make_tensor_descriptor(Y, [rows, cols], [cols, 1], [BR, BC])
        d.store([o0, o1], v)
    else:
        bp = make_block_ptr(Y, (rows, cols), (cols, 1), (o0, o1), (BR, BC), (1, 0))
        store(bp, v, boundary_check=(0, 1))
)";

// Row sums of a rows x cols row-major X by blocks that advance along the
// row; then the last block again, reached by stepping back from where the
// loop left the pointer. MODE 0: range(0, cols, BC); 1: a counted loop with
// a constant advance; 2: a counted loop advancing by a run-time amount.
const char *kRowSums = R"(
@kernel
def row_sums(X: *f32, S: *f32, Last: *f32, rows: i32, cols: i32, step: i32,
             BR: constexpr = 4, BC: constexpr = 16, MODE: constexpr = 0):
    r0 = program_id(0) * BR
    bp = make_block_ptr(X, (rows, cols), (cols, 1), (r0, 0), (BR, BC), (1, 0))
    acc = zeros((BR,), f32)
    if MODE == 0:
        for c in range(0, cols, BC):
            acc += sum(load(bp, boundary_check=(0, 1)), 1)
            bp = advance(bp, (0, BC))
        bp = advance(bp, (0, -BC))
    elif MODE == 1:
        for i in range(0, cdiv(cols, BC)):
            acc += sum(load(bp, boundary_check=(0, 1)), 1)
            bp = advance(bp, (0, BC))
        bp = advance(bp, [0, -BC])
    else:
        for i in range(0, cdiv(cols, step)):
            acc += sum(load(bp, boundary_check=(0, 1)), 1)
            bp = advance(bp, (0, step))
        bp = advance(bp, (0, -step))
    out = make_block_ptr(S, (rows,), (1,), (r0,), (BR,), (0,))
    store(out, acc, boundary_check=(0,))
    last = make_block_ptr(Last, (rows,), (1,), (r0,), (BR,), (0,))
    store(last, sum(load(bp, boundary_check=(0, 1)), 1), boundary_check=[0])
)";

// Tuples carried by a loop and merged by a run-time `if`; a block pointer
// moved in one branch of a run-time `if`.
const char *kCompound = R"(
@kernel
def compound(X: *i32, Out: *i32, n: i32):
    t = (0, 1)
    for i in range(0, n):
        t = (t[1], t[0] + t[1])
    store(Out, t[0])
    store(Out + 1, t[1])
    p = (n, 2 * n)
    if n % 2 == 0:
        p = (p[1], p[0] + 1)
    store(Out + 2, p[0])
    store(Out + 3, p[1])
    bp = make_block_ptr(X, (4, 4), (4, 1), (0, 0), (1, 4), (1, 0))
    if n % 3 == 0:
        bp = advance(bp, (2, 0))
    store(Out + 4 + arange(0, 4), reshape(load(bp), (4,)))
)";

const char *kMatmuls = R"(
@kernel
def mm_block_ptr(A: *DT, B: *DT, C: *f32, M: i32, N: i32, K: i32,
                 stride_am: i32, stride_ak: i32, stride_bk: i32, stride_bn: i32,
                 stride_cm: i32, stride_cn: i32,
                 BM: constexpr = 64, BN: constexpr = 64, BK: constexpr = 32, DT: constexpr = f32):
    pid_m = program_id(0)
    pid_n = program_id(1)
    a_bp = make_block_ptr(A, shape=(M, K), strides=(stride_am, stride_ak),
                          offsets=(pid_m * BM, 0), block_shape=(BM, BK), order=(1, 0))
    b_bp = make_block_ptr(B, (K, N), (stride_bk, stride_bn), (0, pid_n * BN), (BK, BN), (1, 0))
    acc = zeros((BM, BN), f32)
    for k in range(0, K, BK):
        a = load(a_bp, boundary_check=(0, 1))
        b = load(b_bp, boundary_check=(0, 1))
        acc += dot(a, b)
        a_bp = advance(a_bp, (0, BK))
        b_bp = advance(b_bp, (BK, 0))
    c_bp = make_block_ptr(C, (M, N), (stride_cm, stride_cn), (pid_m * BM, pid_n * BN),
                          (BM, BN), (1, 0))
    store(c_bp, acc, boundary_check=(0, 1))

@kernel
def mm_descriptor(A: *DT, B: *DT, C: *f32, M: i32, N: i32, K: i32,
                  BM: constexpr = 64, BN: constexpr = 64, BK: constexpr = 32, DT: constexpr = f32):
    a_d = make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_d = make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_d = make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m = program_id(0) * BM
    off_n = program_id(1) * BN
    acc = zeros((BM, BN), f32)
    for k in range(0, K, BK):
        acc = dot(a_d.load([off_m, k]), b_d.load([k, off_n]), acc)
    c_d.store([off_m, off_n], acc)
)";

/// ||C - A @ B|| / ||A @ B|| for a row-major matmul through block pointers
/// or descriptors, in `ctx` (the interpreter or a GPU).
double matmulError(Context &ctx, bool descriptor, const std::string &dt, int64_t M, int64_t N,
                   int64_t K, int64_t bm, int64_t bn, int64_t bk, int warps, uint32_t seed) {
  std::mt19937 rng(seed);
  DeviceOperand a = uploadOperand(ctx, rng, dt, size_t(M * K));
  DeviceOperand b = uploadOperand(ctx, rng, dt, size_t(K * N));
  DeviceMemory dc = ctx.allocBytes(size_t(M * N) * 4);
  dc.memset(0xFF);
  JitOptions o;
  o.numWarps = warps;
  std::map<std::string, ConstexprValue> cx = {
      {"BM", bm}, {"BN", bn}, {"BK", bk}, {"DT", *parseDType(dt)}};
  Kernel k = compileString(ctx, kMatmuls, "mm.tile", descriptor ? "mm_descriptor" : "mm_block_ptr",
                           cx, o);
  std::vector<int32_t> ints = {int32_t(M), int32_t(N), int32_t(K)};
  if (!descriptor) // row-major strides
    ints.insert(ints.end(), {int32_t(K), 1, int32_t(N), 1, int32_t(N), 1});
  std::vector<uint8_t> hc =
      launchMatmul(ctx, k, Grid::of(cdiv(M, bm), cdiv(N, bn)), a.device, b.device, dc, ints);
  auto ref = [&](int64_t i, int64_t j) { return rowMajorProduct(a.host, b.host, K, N, i, j); };
  return relErrL2(M, N, ref, [&](int64_t i, int64_t j) { return resultAt(hc, size_t(i * N + j), false); });
}

/// The diagnostics of `src` (t.tile), which must not compile.
std::string errorsOf(const std::string &src) {
  CompileResult r = compileSource(src, "t.tile", "", CompileOptions{});
  CHECK_FALSE(r.ok);
  CHECK(r.diagnostics.find("internal compiler error") == std::string::npos);
  return r.diagnostics;
}

} // namespace

TEST_CASE("block pointer loads check the named dimensions and pad (interpreter)",
          "[language][interp][block_ptr]") {
  Seeded r;
  INFO("seed " << r.seed);
  Context ctx(createInterpreterBackend());
  const int64_t BR = 8, BC = 16;
  for (int check : {3, 1, 2, 0})
    for (const char *pad : {"zero", "nan"})
      for (bool colMajor : {false, true})
        for (int trial = 0; trial < 4; ++trial) {
          int rows = r.range(1, 30), cols = r.range(1, 40);
          // Offsets may lie outside the tensor along the checked dimensions only.
          auto offset = [&](bool checked, int extent, int64_t block) {
            return checked ? r.range(-int(block) - 2, extent + 2)
                           : r.range(0, std::max(0, extent - int(block)));
          };
          if (!(check & 1))
            rows = std::max<int>(rows, BR);
          if (!(check & 2))
            cols = std::max<int>(cols, BC);
          int o0 = offset(check & 1, rows, BR), o1 = offset(check & 2, cols, BC);
          int sr = colMajor ? 1 : cols, sc = colMajor ? rows : 1;
          std::vector<float> x = r.uniform(size_t(rows * cols));
          Kernel k = compileString(ctx, kBlockCopy, "bp.tile", "block_copy",
                                   {{"CHECK", int64_t(check)}, {"PAD", std::string(pad)}});
          auto xd = ctx.upload(x);
          auto yd = ctx.alloc<float>(size_t(BR * BC));
          k.launch(ctx.stream(), Grid{1}, xd.ptr(), yd.ptr(), rows, cols, sr, sc, o0, o1);
          std::vector<float> y = yd.toHost();
          INFO("check " << check << " pad " << pad << " col-major " << colMajor << " rows "
                        << rows << " cols " << cols << " at (" << o0 << ", " << o1 << ")");
          int bad = 0;
          for (int64_t i = 0; i < BR; ++i)
            for (int64_t j = 0; j < BC; ++j) {
              int64_t gi = o0 + i, gj = o1 + j;
              bool in = gi >= 0 && gi < rows && gj >= 0 && gj < cols;
              float want = in ? x[size_t(gi * sr + gj * sc)] : 0.f;
              float got = y[size_t(i * BC + j)];
              bool ok = in ? got == want
                           : (std::string(pad) == "nan" ? std::isnan(got) : got == 0.f);
              bad += !ok;
            }
          CHECK(bad == 0);
        }
}

TEST_CASE("block pointer and descriptor stores write only inside the tensor (interpreter)",
          "[language][interp][block_ptr]") {
  Seeded r;
  INFO("seed " << r.seed);
  Context ctx(createInterpreterBackend());
  const int64_t BR = 8, BC = 16;
  for (bool desc : {false, true}) {
    Kernel k = compileString(ctx, kBlockStore, "bp.tile", "block_store", {{"DESC", desc}});
    for (int trial = 0; trial < 12; ++trial) {
      int rows = r.range(1, 20), cols = r.range(1, 30);
      int o0 = r.range(-BR, rows + 1), o1 = r.range(-BC, cols + 1);
      auto yd = ctx.upload(std::vector<float>(size_t(rows * cols), -1.f));
      k.launch(ctx.stream(), Grid{1}, yd.ptr(), rows, cols, o0, o1);
      std::vector<float> y = yd.toHost();
      int bad = 0;
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          int bi = i - o0, bj = j - o1;
          bool written = bi >= 0 && bi < BR && bj >= 0 && bj < BC;
          bad += y[size_t(i * cols + j)] != (written ? float(bi * 100 + bj) : -1.f);
        }
      INFO((desc ? "descriptor" : "block pointer") << " rows " << rows << " cols " << cols
                                                    << " at (" << o0 << ", " << o1 << ")");
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("block pointers advanced in loops, and where the loop leaves them (interpreter)",
          "[language][interp][block_ptr]") {
  Seeded r;
  INFO("seed " << r.seed);
  Context ctx(createInterpreterBackend());
  const int BR = 4, BC = 16;
  for (int mode : {0, 1, 2}) {
    Kernel k = compileString(ctx, kRowSums, "bp.tile", "row_sums", {{"MODE", int64_t(mode)}});
    for (int trial = 0; trial < 6; ++trial) {
      int rows = r.range(1, 13), cols = r.range(1, 70);
      int step = mode == 2 ? r.range(1, 40) : BC;
      // MODE 2 reads blocks of BC columns every `step` columns: overlapping or with gaps.
      std::vector<float> x = r.uniform(size_t(rows * cols));
      auto xd = ctx.upload(x);
      auto sd = ctx.alloc<float>(size_t(rows)), ld = ctx.alloc<float>(size_t(rows));
      k.launch(ctx.stream(), Grid::of(cdiv(int64_t(rows), int64_t(BR))), xd.ptr(), sd.ptr(),
               ld.ptr(), rows, cols, step);
      std::vector<float> s = sd.toHost(), last = ld.toHost();
      int trips = (cols + step - 1) / step;
      double errS = 0, errL = 0;
      for (int i = 0; i < rows; ++i) {
        double want = 0, wantLast = 0;
        for (int t = 0; t < trips; ++t)
          for (int j = t * step; j < std::min(cols, t * step + BC); ++j) {
            want += x[size_t(i * cols + j)];
            if (t == trips - 1)
              wantLast += x[size_t(i * cols + j)];
          }
        errS = std::max(errS, std::abs(s[size_t(i)] - want) / (1 + std::abs(want)));
        errL = std::max(errL, std::abs(last[size_t(i)] - wantLast) / (1 + std::abs(wantLast)));
      }
      INFO("mode " << mode << " rows " << rows << " cols " << cols << " step " << step);
      CHECK(errS < 1e-5);
      CHECK(errL < 1e-5);
    }
  }
}

TEST_CASE("tuples and block pointers carried by loops and merged by ifs (interpreter)",
          "[language][interp][block_ptr]") {
  Context ctx(createInterpreterBackend());
  Kernel k = compileString(ctx, kCompound, "c.tile", "compound");
  std::vector<int32_t> x(16);
  for (int i = 0; i < 16; ++i)
    x[size_t(i)] = 7 * i - 20;
  auto xd = ctx.upload(x);
  for (int n : {0, 1, 2, 3, 6, 9, 20}) {
    auto out = ctx.alloc<int32_t>(8);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), out.ptr(), n);
    std::vector<int32_t> h = out.toHost();
    int32_t f0 = 0, f1 = 1;
    for (int i = 0; i < n; ++i) {
      int32_t t = f0 + f1;
      f0 = f1;
      f1 = t;
    }
    INFO("n " << n);
    CHECK(h[0] == f0);
    CHECK(h[1] == f1);
    CHECK(h[2] == (n % 2 == 0 ? 2 * n : n));
    CHECK(h[3] == (n % 2 == 0 ? n + 1 : 2 * n));
    int row = n % 3 == 0 ? 2 : 0;
    for (int j = 0; j < 4; ++j)
      CHECK(h[size_t(4 + j)] == x[size_t(row * 4 + j)]);
  }
  for (const char *arch : {"sm_80", "sm_90a"}) {
    CompileOptions o;
    o.target = *Target::parse(arch);
    for (const char *kernel : {"compound"}) {
      CompileResult cr = compileSource(kCompound, "c.tile", kernel, o, Stage::PTX);
      INFO(arch << "\n" << cr.diagnostics);
      CHECK(cr.ok);
    }
    for (const char *kernel : {"row_sums", "block_copy"}) {
      CompileResult cr = compileSource(kernel == std::string("row_sums") ? kRowSums : kBlockCopy,
                                       "bp.tile", kernel, o, Stage::PTX);
      INFO(arch << " " << kernel << "\n" << cr.diagnostics);
      CHECK(cr.ok);
    }
  }
}

TEST_CASE("matmuls through block pointers and tensor descriptors match fp64 (interpreter)",
          "[language][interp][block_ptr]") {
  Seeded r;
  INFO("seed " << r.seed);
  Context ctx(createInterpreterBackend());
  for (bool desc : {false, true})
    for (int trial = 0; trial < 2; ++trial) {
      int64_t M = r.range(1, 50), N = r.range(1, 50), K = r.range(1, 70);
      double err = matmulError(ctx, desc, "f32", M, N, K, 16, 16, 16, 4, r.seed + uint32_t(trial));
      INFO((desc ? "descriptor " : "block pointer ") << M << "x" << N << "x" << K << ": rel err "
                                                      << err);
      CHECK(err < 1e-6);
    }
}

TEST_CASE("GPU matmuls through block pointers and tensor descriptors match fp64",
          "[gpu][matmul][block_ptr]") {
  std::unique_ptr<Context> ctx = gpuOrSkip();
  if (!ctx)
    return;
  struct Shape {
    int64_t M, N, K;
  };
  for (const char *dt : {"f16", "bf16", "f32"}) {
    double tol = std::string(dt) == "f32" ? 3e-3 : 1e-5; // tf32 rounds the operands
    for (bool desc : {false, true})
      // Aligned (TMA on sm_90a), then ragged (cp.async with element-wise edges).
      for (Shape s : {Shape{512, 384, 256}, Shape{300, 260, 200}, Shape{77, 45, 33}})
        for (auto [warps, bm, bn, bk] :
             {std::tuple<int, int64_t, int64_t, int64_t>{8, 128, 128, 64}, {4, 64, 128, 32}}) {
          double err = matmulError(*ctx, desc, dt, s.M, s.N, s.K, bm, bn, bk, warps,
                                   uint32_t(s.M * 7 + s.K));
          INFO(dt << (desc ? " descriptor " : " block pointer ") << s.M << "x" << s.N << "x"
                  << s.K << " warps " << warps << " tile " << bm << "x" << bn << "x" << bk
                  << ": rel err " << err);
          CHECK(err <= tol);
        }
  }
}

TEST_CASE("block pointer misuse is an error at its line", "[language][diagnostics][block_ptr]") {
  auto has = [](const std::string &diags, const std::string &want) {
    INFO(diags);
    CHECK(diags.find(want) != std::string::npos);
  };
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n,), (0, 0), (16, 16), (1, 0))
)"),
      "t.tile:3:36: error: make_block_ptr() strides has 1 entry but the block has rank 2");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 16), (0, 0))
)"),
      "t.tile:3:62: error: make_block_ptr() order must be a permutation of the block's 2 "
      "dimensions");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 16), (1, 0))
    x = load(bp, boundary_check=(2,))
)"),
      "t.tile:4:18: error: load() boundary_check must name dimensions of the block (0 to 1)");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 16), (1, 0))
    x = load(bp, mask=n > 0)
)"),
      "t.tile:4:18: error: load() through a block pointer takes boundary_check=, not mask=");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    x = load(X + arange(0, 16), boundary_check=(0,))
)"),
      "t.tile:3:33: error: load() boundary_check= needs a block pointer from make_block_ptr()");
  has(errorsOf(R"(@kernel
def k(X: *i32, n: i32):
    d = make_tensor_descriptor(X, [n], [1], [16], padding_option="nan")
    x = d.load([0])
)"),
      "error: load_tensor_descriptor() padding_option \"nan\" needs floating-point elements, got i32");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    d = make_tensor_descriptor(X, [n], [1], [16])
    x = load(d)
)"),
      "t.tile:4:14: error: load() takes a pointer or a block pointer; load through a tensor "
      "descriptor with desc.load(offsets)");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    d = make_tensor_descriptor(X, [n], [1], [16])
    d = advance(d, (4,))
)"),
      "t.tile:4:17: error: advance() needs a block pointer from make_block_ptr(), got tensor "
      "descriptor of f32[16]");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 16), (1, 0))
    store(bp, zeros((16, 8), f32))
)"),
      "t.tile:4:15: error: store() value is f32[16, 8] but the block is (16, 16)");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 16), (1, 0))
    for i in range(0, n):
        bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 32), (1, 0))
)"),
      "t.tile:4:5: error: loop-carried variable 'bp' holds block pointer to f32[16, 16] before "
      "the loop and block pointer to f32[16, 32] after an iteration");
  has(errorsOf(R"(@kernel
def k(X: *f32, n: i32):
    bp = make_block_ptr(X, (n, n), (n, 1), (0, 0), (16, 16), (1, 0))
    d = make_tensor_descriptor(X, [n, n], [n, 1], [16, 16])
    if n > 0:
        bp = d
)"),
      "t.tile:5:5: error: variable 'bp' holds tensor descriptor of f32[16, 16] in one branch and "
      "block pointer to f32[16, 16] in the other");
}
