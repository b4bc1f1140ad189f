// The CPU interpreter as a runtime backend: DSL kernels compiled and launched
// through the public JIT API exactly as on a GPU (Context, upload, compile,
// Kernel::launch, toHost), against fp64 references on fresh random inputs at
// ragged sizes; launch checking; out-of-bounds reports naming the .tile line;
// memory, streams and events; and selection with TESSERA_INTERPRET=1.
#include <catch2/catch.hpp>

#include "TestSupport.h"
#include "support/Reference.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

using tessera::testing::EnvGuard;
using tessera::testing::errorOf;
using tessera::testing::Seeded;
using tessera::testing::matmulRef;
using tessera::testing::relErrL2;
using tessera::testing::softmaxRef;

namespace {

const std::string kBasics = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics";



bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}


unsigned cdivu(int64_t a, int64_t b) { return unsigned((a + b - 1) / b); }

// Line 5 masks with <= instead of <: the last program reads X[n].
const char *kOobSource = "@kernel\n"
                         "def oob(X: *f32, Y: *f32, n: i32, B: constexpr = 128):\n"
                         "    offs = program_id(0) * B + arange(0, B)\n"
                         "    ok = offs < n\n"
                         "    x = load(X + offs, mask=offs <= n)\n"
                         "    store(Y + offs, x, mask=ok)\n";

} // namespace

TEST_CASE("interpreter backend: device info and selection", "[interp-backend]") {
  Context ctx(createInterpreterBackend());
  CHECK(ctx.isInterpreter());
  CHECK(ctx.backend().kind() == BackendKind::Interpreter);
  CHECK(ctx.deviceName() == "Tessera CPU interpreter");
  CHECK(ctx.target() == "interp");
  CHECK(ctx.smCount() >= 1);
  // One backend while anyone holds it, like a device.
  CHECK(createInterpreterBackend().get() == &ctx.backend());
  Context other(createInterpreterBackend());
  CHECK(&other.backend() == &ctx.backend());
}

TEST_CASE("interpreter backend: vector_add through the JIT at ragged sizes",
          "[interp-backend][dsl]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context ctx(createInterpreterBackend());
  auto k = compile(ctx, kBasics + "/vector_add.tile", "vector_add", {{"BLOCK", int64_t(256)}});
  CHECK(k.signature().name == "vector_add");
  for (int n : {1, 255, 257, s.range(1000, 5000), s.range(5000, 20000) | 1}) {
    INFO("n = " << n);
    std::vector<float> hx = s.uniform(size_t(n)), hy = s.uniform(size_t(n));
    auto x = ctx.upload(hx);
    auto y = ctx.upload(hy);
    auto z = ctx.alloc<float>(size_t(n)); // exact sizes: an overrun would be reported
    k.launch(ctx.stream(), Grid{cdivu(n, 256)}, x.ptr(), y.ptr(), z.ptr(), int32_t(n));
    std::vector<double> ref(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      ref[size_t(i)] = double(hx[size_t(i)]) + double(hy[size_t(i)]);
    CHECK(relErrL2(z.toHost(), ref) < 1e-5);
  }
  // DeviceBuffers are accepted directly too, on a second stream.
  Stream st = ctx.createStream();
  auto a = ctx.upload(std::vector<float>{1, 2, 3});
  auto b = ctx.upload(std::vector<float>{10, 20, 30});
  auto c = ctx.alloc<float>(3);
  k.launch(st, Grid{1}, a, b, c, int32_t(3));
  st.synchronize();
  CHECK(c.toHost() == std::vector<float>{11, 22, 33});
}

TEST_CASE("interpreter backend: softmax and softmax_online through the JIT",
          "[interp-backend][dsl]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context ctx(createInterpreterBackend());
  const int rows = s.range(3, 17), cols = s.range(100, 500);
  const int xStride = cols + s.range(0, 7), yStride = cols + s.range(0, 7);
  INFO("rows " << rows << " cols " << cols << " strides " << xStride << ", " << yStride);
  std::vector<float> hx = s.uniform(size_t(rows) * xStride, -4, 4);
  // In X's layout: 0 past `cols` in each row.
  std::vector<double> ref = softmaxRef(hx, size_t(rows), size_t(cols), size_t(xStride));
  auto x = ctx.upload(hx);
  auto gather = [&](const std::vector<float> &y) { // Y's rows in X's layout
    std::vector<float> out(size_t(rows) * xStride, 0.0f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        out[size_t(r) * xStride + c] = y[size_t(r) * yStride + c];
    return out;
  };
  {
    auto k = compile(ctx, kBasics + "/softmax.tile", "softmax", {{"BLOCK", int64_t(512)}});
    auto y = ctx.alloc<float>(size_t(rows) * yStride);
    y.zero();
    k.launch(ctx.stream(), Grid{unsigned(rows)}, x.ptr(), y.ptr(), int32_t(xStride),
             int32_t(yStride), int32_t(cols));
    CHECK(relErrL2(gather(y.toHost()), ref) < 1e-5);
  }
  {
    auto k = compile(ctx, kBasics + "/softmax.tile", "softmax_online", {{"BLOCK", int64_t(64)}});
    auto y = ctx.alloc<float>(size_t(rows) * yStride);
    y.zero();
    k.launch(ctx.stream(), Grid{unsigned(rows)}, x, y, int32_t(xStride), int32_t(yStride),
             int32_t(cols));
    CHECK(relErrL2(gather(y.toHost()), ref) < 1e-5);
  }
}

TEST_CASE("interpreter backend: matmul through the JIT at ragged shapes",
          "[interp-backend][dsl]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context ctx(createInterpreterBackend());
  const int64_t BM = 32, BN = 32, BK = 16;
  auto k = compile(ctx, kBasics + "/matmul.tile", "matmul",
                   {{"BM", BM}, {"BN", BN}, {"BK", BK}, {"GROUP", int64_t(4)}});
  for (int rep = 0; rep < 2; ++rep) {
    const int M = s.range(1, 150), N = s.range(1, 150), K = s.range(1, 100);
    INFO("M " << M << " N " << N << " K " << K);
    std::vector<float> ha = s.uniform(size_t(M) * K), hb = s.uniform(size_t(K) * N);
    std::vector<double> ref = matmulRef(ha, hb, size_t(M), size_t(N), size_t(K));
    auto a = ctx.upload(ha);
    auto b = ctx.upload(hb);
    auto c = ctx.alloc<float>(size_t(M) * N);
    Grid grid{cdivu(M, BM) * cdivu(N, BN)};
    k.launch(ctx.stream(), grid, a.ptr(), b.ptr(), c.ptr(), int32_t(M), int32_t(N), int32_t(K),
             int32_t(K), int32_t(1), int32_t(N), int32_t(1), int32_t(N), int32_t(1));
    // The interpreter computes tf32 dots in full fp32 (the reference for the GPU).
    CHECK(relErrL2(c.toHost(), ref) < 1e-5);
  }
}

TEST_CASE("interpreter backend: wrong launch arguments are rejected before running",
          "[interp-backend]") {
  Context ctx(createInterpreterBackend());
  auto k = compile(ctx, kBasics + "/vector_add.tile", "vector_add", {{"BLOCK", int64_t(256)}});
  auto x = ctx.alloc<float>(10), y = ctx.alloc<float>(10), z = ctx.alloc<float>(10);
  auto xi = ctx.alloc<int32_t>(10);
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, x, y, z, int64_t(10)); }) ==
        "argument 4 ('n') of kernel 'vector_add' must be i32, got i64");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, x, y, z); }) ==
        "kernel 'vector_add' expects 4 arguments, got 3");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, xi, y, z, int32_t(10)); }) ==
        "argument 1 ('X') of kernel 'vector_add' must be *f32, got *i32");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, x, int32_t(3), z, int32_t(10)); }) ==
        "argument 2 ('Y') of kernel 'vector_add' must be a pointer (*f32), got a scalar i32");
  CHECK(contains(errorOf([&] { k.launch(ctx.stream(), Grid{0}, x, y, z, int32_t(10)); }),
                 "cannot launch kernel 'vector_add': grid 0x1x1 has a zero dimension"));
  // Unchecked launches still go through the interpreter's own argument check.
  CHECK(errorOf([&] {
          k.function().launch(ctx.stream(), Grid{1}, k.block(), 0, makeArgs(x, y, z));
        }) == "kernel 'vector_add' expects 4 arguments, got 3");
  // A kernel name the module lacks, and a kernel the file lacks.
  CHECK(contains(errorOf([&] { compile(ctx, kBasics + "/vector_add.tile", "nope"); }),
                 "no @kernel named 'nope'"));
}

TEST_CASE("interpreter backend: an out-of-bounds access names the .tile line",
          "[interp-backend]") {
  Context ctx(createInterpreterBackend());
  const int n = 1000;
  auto x = ctx.upload(std::vector<float>(n, 1.0f));
  auto y = ctx.alloc<float>(n);
  {
    auto k = compileString(ctx, kOobSource, "bugs/oob.tile", "oob");
    std::string msg = errorOf([&] {
      k.launch(ctx.stream(), Grid{cdivu(n, 128)}, x.ptr(), y.ptr(), int32_t(n));
    });
    INFO(msg);
    CHECK(msg.rfind("out-of-bounds load in kernel 'oob' at bugs/oob.tile:5:", 0) == 0);
    CHECK(contains(msg, "program (7, 0, 0)"));
    CHECK(contains(msg, "element offset 1000 is outside the buffer of 1000 elements"));
    CHECK_FALSE(contains(msg, "InterpOptions")); // the user passed buffers, not options
    // The correct mask runs cleanly on the same buffers.
    k.launch(ctx.stream(), Grid{cdivu(n, 128)}, x.ptr(), y.ptr(), int32_t(n - 1));
  }
  {
    // From a file on disk, the report also quotes the source line.
    char dir[] = "/tmp/tessera-interp-XXXXXX";
    REQUIRE(mkdtemp(dir));
    std::string path = std::string(dir) + "/oob.tile";
    std::ofstream(path) << kOobSource;
    auto k = compile(ctx, path, "oob");
    std::string msg = errorOf([&] {
      k.launch(ctx.stream(), Grid{cdivu(n, 128)}, x.ptr(), y.ptr(), int32_t(n));
    });
    std::remove(path.c_str());
    ::rmdir(dir);
    INFO(msg);
    CHECK(msg.rfind("out-of-bounds load in kernel 'oob' at " + path + ":5:", 0) == 0);
    CHECK(contains(msg, "\n        x = load(X + offs, mask=offs <= n)\n            ^"));
  }
  {
    // A pointer into freed memory is out of bounds too.
    auto k = compile(ctx, kBasics + "/vector_add.tile", "vector_add", {{"BLOCK", int64_t(256)}});
    auto gone = ctx.alloc<float>(16);
    DevicePtr<float> dangling = gone.ptr();
    gone.reset();
    std::string msg = errorOf(
        [&] { k.launch(ctx.stream(), Grid{1}, dangling, dangling, y.ptr(), int32_t(16)); });
    INFO(msg);
    CHECK(msg.rfind("out-of-bounds load in kernel 'vector_add' at ", 0) == 0);
    CHECK(contains(msg, "vector_add.tile:"));
  }
}

TEST_CASE("interpreter backend: tile IR carries source locations with debugInfo",
          "[interp-backend]") {
  CompileOptions co;
  CompileResult plain = compileSource(kOobSource, "bugs/oob.tile", "oob", co);
  REQUIRE(plain.ok);
  CHECK_FALSE(contains(plain.tileIR, "bugs/oob.tile\":5"));
  co.debugInfo = true;
  CompileResult withLocs = compileSource(kOobSource, "bugs/oob.tile", "oob", co);
  REQUIRE(withLocs.ok);
  CHECK(contains(withLocs.tileIR, "loc(\"bugs/oob.tile\":5:"));
}

TEST_CASE("interpreter backend: memory, streams, events and modules", "[interp-backend]") {
  Context ctx(createInterpreterBackend());
  Backend &be = ctx.backend();

  auto buf = ctx.alloc<int32_t>(37);
  CHECK(buf.address() % 256 == 0);
  buf.fill(-5);
  CHECK(buf.toHost() == std::vector<int32_t>(37, -5));
  std::vector<int32_t> h(37);
  for (int i = 0; i < 37; ++i)
    h[size_t(i)] = i * i;
  Stream st = ctx.createStream();
  buf.copyFromHost(h, st);
  st.synchronize();
  auto copy = ctx.alloc<int32_t>(37);
  copy.copyFrom(buf);
  CHECK(copy.toHost() == h);
  copy.memsetBytes(0xff);
  CHECK(copy.toHost() == std::vector<int32_t>(37, -1));
  CHECK(errorOf([&] { buf.copyFromHost(h.data(), 38); }) ==
        "copy from host of 152 bytes at offset 0 is outside the device buffer of 148 bytes");
  // The backend itself refuses addresses outside every live allocation.
  CHECK(contains(errorOf([&] { be.copyHostToDevice(buf.address() + 4, h.data(), 37 * 4, nullptr); }),
                 "is outside every live allocation"));
  CHECK(be.alloc(0) == 0);
  be.free(0);

  Event start = ctx.createEvent(), end = ctx.createEvent();
  CHECK(errorOf([&] { Event::elapsedMs(start, end); }) ==
        "interpreter: elapsed time between events that were not both recorded");
  start.record(ctx.stream());
  end.record(st);
  end.synchronize();
  CHECK(Event::elapsedMs(start, end) >= 0.0f);

  CHECK(errorOf([&] { ctx.loadPTX(".version 8.0\n"); }) ==
        "the interpreter runs tile IR; PTX and cubin modules need a GPU");
  CHECK(errorOf([&] { ctx.loadCubin("\x7f" "ELF"); }) ==
        "the interpreter runs tile IR; PTX and cubin modules need a GPU");

  CompileOptions co;
  co.debugInfo = true;
  co.constexprs = {{"BLOCK", int64_t(64)}};
  CompileResult r = compileFile(kBasics + "/vector_add.tile", "vector_add", co);
  REQUIRE(r.ok);
  Module m = ctx.loadModule(ModuleImage{ModuleFormat::TileIR, r.tileIR});
  Function f1 = m.function("vector_add"), f2 = m.function("vector_add");
  CHECK(f1.handle() == f2.handle()); // prepared once per module and name
  CHECK(f1.attributes().maxThreadsPerBlock == 1024);
  f1.setMaxDynamicSharedMemory(100 * 1024); // nothing to opt into
  CHECK(contains(errorOf([&] { m.function("missing"); }),
                 "kernel 'missing' cannot be run by the interpreter: error: no kernel named "
                 "'missing' in the module"));
  auto x = ctx.upload(std::vector<float>{1, 2, 3, 4});
  auto z = ctx.alloc<float>(4);
  f1.launchArgs(ctx.stream(), Grid{1}, Block{128}, 0, x, x, z, int32_t(4));
  CHECK(z.toHost() == std::vector<float>{2, 4, 6, 8});
}

TEST_CASE("interpreter backend: TESSERA_INTERPRET=1 selects it", "[interp-backend]") {
  {
    EnvGuard interp("TESSERA_INTERPRET", "1");
    EnvGuard device("TESSERA_DEVICE", nullptr);
    Context ctx;
    CHECK(ctx.isInterpreter());
    CHECK(ctx.deviceName() == "Tessera CPU interpreter");
    // The program a user writes for the GPU, unchanged.
    const int n = 777;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; ++i) {
      hx[size_t(i)] = float(i);
      hy[size_t(i)] = 0.5f * float(i);
    }
    auto x = ctx.upload(hx), y = ctx.upload(hy);
    auto z = ctx.alloc<float>(n);
    auto k = compile(ctx, kBasics + "/vector_add.tile", "vector_add", {{"BLOCK", int64_t(256)}});
    k.launch(ctx.stream(), Grid{cdivu(n, 256)}, x.ptr(), y.ptr(), z.ptr(), int32_t(n));
    ctx.synchronize();
    std::vector<float> out = z.toHost();
    for (int i = 0; i < n; ++i)
      REQUIRE(out[size_t(i)] == 1.5f * float(i));
    Context c1(3);
    CHECK(c1.isInterpreter());
    CHECK(c1.ordinal() == 3);
  }
  EnvGuard unset("TESSERA_INTERPRET", nullptr);
  CHECK_FALSE(interpreterRequested());
}

TEST_CASE("Context::gpuOrInterpreter falls back only when there is no GPU", "[runtime][backend]") {
  {
    EnvGuard lib("TESSERA_LIBCUDA", "/nonexistent/libcuda.so.1");
    EnvGuard interp("TESSERA_INTERPRET", nullptr);
    std::string why;
    Context ctx = Context::gpuOrInterpreter(&why);
    CHECK(ctx.backend().kind() == BackendKind::Interpreter);
    CHECK(why.rfind("no CUDA driver found (/nonexistent/libcuda.so.1 could not be loaded", 0) == 0);
  }
  {
    // A configuration mistake is not "no GPU": it is reported, not papered over.
    EnvGuard lib("TESSERA_LIBCUDA", "/nonexistent/libcuda.so.1");
    EnvGuard dev("TESSERA_DEVICE", "abc");
    EnvGuard interp("TESSERA_INTERPRET", nullptr);
    CHECK(errorOf([] { Context::gpuOrInterpreter(); }) == "TESSERA_DEVICE='abc' is not a device number");
  }
}
