// Runtime tests: types, launch-argument checking, the backend-neutral
// layer (through an in-process host backend), the CUDA driver loader's error
// paths, and GPU tests that run for real when a GPU is present and are
// skipped visibly (WARN) when not.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include "tessera/Runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace tessera;

using tessera::testing::EnvGuard;
using tessera::testing::errorOf;

namespace {



bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

KernelSignature vaddSignature() {
  KernelSignature sig;
  sig.name = "vadd";
  sig.params = {{"X", DType{ScalarType::f32, 1}},
                {"Y", DType{ScalarType::f32, 1}},
                {"Out", DType{ScalarType::f32, 1}},
                {"N", DType{ScalarType::i32, 0}}};
  return sig;
}

// ---------------------------------------------------------------------------
// A Backend on host memory: checks that the backend-neutral layer (Context,
// DeviceBuffer, Module, Kernel) works with a non-CUDA backend, and records
// launches.
struct HostBackend final : Backend {
  DeviceInfo info;
  int liveAllocations = 0;
  int liveStreams = 0;
  int liveEvents = 0;
  int liveModules = 0;
  int launches = 0;
  std::string lastName;
  Grid lastGrid;
  Block lastBlock;
  size_t lastShared = 0;
  StreamHandle lastStream = nullptr;
  std::vector<ArgValue> lastArgs;
  size_t maxDynamicShared = 0;

  HostBackend() {
    info.name = "host test backend";
    info.computeCapabilityMajor = 9;
    info.smCount = 1;
    info.maxSharedMemoryPerBlockOptin = 227 * 1024;
  }
  BackendKind kind() const override { return BackendKind::Other; }
  const DeviceInfo &deviceInfo() const override { return info; }
  DeviceAddress alloc(size_t bytes) override {
    if (bytes == 0)
      return 0;
    ++liveAllocations;
    return reinterpret_cast<DeviceAddress>(std::malloc(bytes));
  }
  void free(DeviceAddress a) noexcept override {
    if (a) {
      --liveAllocations;
      std::free(reinterpret_cast<void *>(a));
    }
  }
  static void *p(DeviceAddress a) { return reinterpret_cast<void *>(a); }
  void copyHostToDevice(DeviceAddress d, const void *s, size_t n, StreamHandle) override {
    if (n)
      std::memcpy(p(d), s, n);
  }
  void copyDeviceToHost(void *d, DeviceAddress s, size_t n, StreamHandle) override {
    if (n)
      std::memcpy(d, p(s), n);
  }
  void copyDeviceToDevice(DeviceAddress d, DeviceAddress s, size_t n, StreamHandle) override {
    if (n)
      std::memmove(p(d), p(s), n);
  }
  void memset8(DeviceAddress d, uint8_t v, size_t n, StreamHandle) override {
    if (n)
      std::memset(p(d), v, n);
  }
  void memset32(DeviceAddress d, uint32_t v, size_t n, StreamHandle) override {
    auto *w = static_cast<uint32_t *>(p(d));
    for (size_t i = 0; i < n; ++i)
      w[i] = v;
  }
  StreamHandle createStream() override {
    ++liveStreams;
    return reinterpret_cast<StreamHandle>(new int(0));
  }
  void destroyStream(StreamHandle s) noexcept override {
    --liveStreams;
    delete reinterpret_cast<int *>(s);
  }
  void synchronizeStream(StreamHandle) override {}
  void synchronize() override {}
  EventHandle createEvent() override {
    ++liveEvents;
    return reinterpret_cast<EventHandle>(new int(0));
  }
  void destroyEvent(EventHandle e) noexcept override {
    --liveEvents;
    delete reinterpret_cast<int *>(e);
  }
  void recordEvent(EventHandle e, StreamHandle) override { *reinterpret_cast<int *>(e) = launches; }
  void synchronizeEvent(EventHandle) override {}
  float elapsedMilliseconds(EventHandle a, EventHandle b) override {
    return float(*reinterpret_cast<int *>(b) - *reinterpret_cast<int *>(a));
  }
  ModuleHandle loadModule(const ModuleImage &image, std::string *log) override {
    if (image.data == "bad")
      throw Error("cannot load module: bad image");
    if (log)
      *log = "host: loaded " + std::to_string(image.data.size()) + " bytes";
    ++liveModules;
    return reinterpret_cast<ModuleHandle>(new std::string(image.data));
  }
  void unloadModule(ModuleHandle m) noexcept override {
    --liveModules;
    delete reinterpret_cast<std::string *>(m);
  }
  FunctionHandle getFunction(ModuleHandle m, const std::string &name) override {
    if (reinterpret_cast<std::string *>(m)->find(name) == std::string::npos)
      throw Error("kernel '" + name + "' not found in module");
    return reinterpret_cast<FunctionHandle>(m);
  }
  FunctionAttributes functionAttributes(FunctionHandle) override {
    FunctionAttributes a;
    a.numRegisters = 32;
    return a;
  }
  void setMaxDynamicSharedMemory(FunctionHandle, size_t bytes) override {
    maxDynamicShared = bytes;
  }
  void launch(FunctionHandle, const std::string &name, Grid grid, Block block, size_t shared,
              StreamHandle stream, const std::vector<ArgValue> &args,
              const std::vector<TensorMapSpec> &, const LaunchOptions &) override {
    ++launches;
    lastName = name;
    lastGrid = grid;
    lastBlock = block;
    lastShared = shared;
    lastStream = stream;
    lastArgs = args;
    // Run "vadd" for real, reading the packed parameters as a driver would.
    if (name == "vadd") {
      std::vector<void *> params = kernelParamPointers(args);
      float *x = reinterpret_cast<float *>(*static_cast<uint64_t *>(params[0]));
      float *y = reinterpret_cast<float *>(*static_cast<uint64_t *>(params[1]));
      float *out = reinterpret_cast<float *>(*static_cast<uint64_t *>(params[2]));
      int32_t n = *static_cast<int32_t *>(params[3]);
      for (int32_t i = 0; i < n; ++i)
        out[i] = x[i] + y[i];
    }
  }
};

} // namespace

// ===========================================================================
// Types.h helpers
// ===========================================================================

TEST_CASE("scalar type names, bits and parsing", "[runtime][types]") {
  const ScalarType all[] = {ScalarType::i1,  ScalarType::i8,  ScalarType::u8,  ScalarType::i16,
                            ScalarType::i32, ScalarType::i64, ScalarType::f16, ScalarType::bf16,
                            ScalarType::f32, ScalarType::f64};
  const unsigned bits[] = {1, 8, 8, 16, 32, 64, 16, 16, 32, 64};
  for (size_t i = 0; i < 10; ++i) {
    REQUIRE(parseScalarType(scalarTypeName(all[i])) == all[i]);
    CHECK(scalarTypeBits(all[i]) == bits[i]);
  }
  CHECK(std::string(scalarTypeName(ScalarType::bf16)) == "bf16");
  CHECK_FALSE(parseScalarType("f8"));
  CHECK_FALSE(parseScalarType(""));
  CHECK(isFloat(ScalarType::bf16));
  CHECK_FALSE(isFloat(ScalarType::i32));
  CHECK(isUnsigned(ScalarType::u8));
  CHECK(isUnsigned(ScalarType::i1));
  CHECK_FALSE(isUnsigned(ScalarType::i8));
}

TEST_CASE("DType text", "[runtime][types]") {
  CHECK(DType{ScalarType::f32, 1}.str() == "*f32");
  CHECK(DType{ScalarType::i32, 0}.str() == "i32");
  auto t = parseDType("**u8");
  REQUIRE(t);
  CHECK(*t == DType{ScalarType::u8, 2});
  CHECK_FALSE(parseDType("*"));
  CHECK_FALSE(parseDType("f32*"));
  CHECK_FALSE(parseDType(" f32"));
}

TEST_CASE("constexpr values print and parse back", "[runtime][types]") {
  CHECK(constexprToString(ConstexprValue{int64_t(64)}) == "64");
  CHECK(constexprToString(ConstexprValue{-3.0}) == "-3.0");
  CHECK(constexprToString(ConstexprValue{1e-3}) == "0.001");
  CHECK(constexprToString(ConstexprValue{true}) == "true");
  CHECK(constexprToString(ConstexprValue{DType{ScalarType::bf16, 1}}) == "*bf16");

  auto i = parseConstexpr("64");
  REQUIRE(i);
  CHECK(std::get<int64_t>(*i) == 64);
  auto neg = parseConstexpr("-12");
  REQUIRE(neg);
  CHECK(std::get<int64_t>(*neg) == -12);
  auto lead = parseConstexpr("010");
  REQUIRE(lead);
  CHECK(std::get<int64_t>(*lead) == 10);
  auto hex = parseConstexpr("0x10");
  REQUIRE(hex);
  CHECK(std::get<int64_t>(*hex) == 16);
  auto d = parseConstexpr("1e-3");
  REQUIRE(d);
  CHECK(std::get<double>(*d) == 1e-3);
  auto b = parseConstexpr("false");
  REQUIRE(b);
  CHECK(std::get<bool>(*b) == false);
  auto ty = parseConstexpr("f16");
  REQUIRE(ty);
  CHECK(std::get<DType>(*ty) == DType{ScalarType::f16, 0});
  for (const char *bad : {"", "abc", "1.2.3", "12x", " 1", "99999999999999999999", "-", "*"})
    CHECK_FALSE(parseConstexpr(bad));

  // Round trips, including doubles that need all 17 digits.
  std::vector<ConstexprValue> values = {int64_t(0), int64_t(-9223372036854775807LL - 1),
                                        0.1, 1.0 / 3.0, 1e300, -0.0, 5e-324, true,
                                        DType{ScalarType::i8, 2}};
  for (const ConstexprValue &v : values) {
    auto back = parseConstexpr(constexprToString(v));
    REQUIRE(back);
    CHECK(back->index() == v.index());
    CHECK(constexprToString(*back) == constexprToString(v));
  }
}

// ===========================================================================
// f16 / bf16
// ===========================================================================

TEST_CASE("f16 and bf16 conversions round to nearest even", "[runtime][half]") {
  CHECK(f16(1.0f).bits == 0x3C00);
  CHECK(f16(-2.0f).bits == 0xC000);
  CHECK(f16(65504.0f).bits == 0x7BFF);
  CHECK(f16(65519.0f).bits == 0x7BFF);
  CHECK(f16(65520.0f).bits == 0x7C00); // rounds to infinity
  CHECK(f16(1.0f / 3.0f).bits == 0x3555);
  CHECK(f16(std::ldexp(1.0f, -24)).bits == 0x0001); // smallest subnormal
  CHECK(f16(std::ldexp(1.0f, -25)).bits == 0x0000); // tie -> even (zero)
  CHECK(f16(std::ldexp(1.5f, -25)).bits == 0x0001);
  CHECK(f16(std::ldexp(1.0f, -14)).bits == 0x0400); // smallest normal
  CHECK(f16(1.0f + std::ldexp(1.0f, -11)).bits == 0x3C00); // tie -> even
  CHECK(f16(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3C02);
  CHECK(f16(INFINITY).bits == 0x7C00);
  CHECK(std::isnan(f16(NAN).toFloat()));
  CHECK(f16::fromBits(0x3555).toFloat() == Approx(1.0f / 3.0f).epsilon(1e-3));
  CHECK(f16::fromBits(0x0001).toFloat() == std::ldexp(1.0f, -24));
  CHECK(f16::fromBits(0x8000).toFloat() == 0.0f);
  // Every finite half converts to float and back exactly.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7C00) == 0x7C00)
      continue;
    uint16_t h = static_cast<uint16_t>(b);
    if (f16(f16::toFloat(h)).bits != h) {
      FAIL("f16 round trip failed for bits " << b);
    }
  }

  CHECK(bf16(1.0f).bits == 0x3F80);
  CHECK(bf16(3.14159265f).bits == 0x4049);
  CHECK(bf16(-0.0f).bits == 0x8000);
  CHECK(bf16(INFINITY).bits == 0x7F80);
  CHECK(std::isnan(bf16(NAN).toFloat()));
  CHECK(bf16::fromBits(0x4049).toFloat() == 3.140625f);
  CHECK(bf16(1.0f + std::ldexp(1.0f, -8)).bits == 0x3F80); // tie -> even
  CHECK(bf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits == 0x3F82);
}

// ===========================================================================
// Launch arguments
// ===========================================================================

TEST_CASE("C++ argument types map to Tessera types", "[runtime][args]") {
  auto check = [](const ArgValue &a, const char *type, size_t size) {
    CHECK(a.str() == type);
    CHECK(a.size() == size);
  };
  check(toArgValue(int8_t(-5)), "i8", 1);
  check(toArgValue(uint8_t(200)), "u8", 1);
  check(toArgValue(int16_t(-300)), "i16", 2);
  check(toArgValue(int32_t(7)), "i32", 4);
  check(toArgValue(7), "i32", 4);
  check(toArgValue(int64_t(7)), "i64", 8);
  check(toArgValue(7L), "i64", 8);
  check(toArgValue(7LL), "i64", 8);
  check(toArgValue(1.5f), "f32", 4);
  check(toArgValue(1.5), "f64", 8);
  check(toArgValue(true), "i1", 1);
  check(toArgValue(f16(1.0f)), "f16", 2);
  check(toArgValue(bf16(1.0f)), "bf16", 2);
  check(toArgValue(DevicePtr<float>{0x1000}), "*f32", 8);
  check(toArgValue(DevicePtr<bf16>{0x1000}), "*bf16", 8);

  ArgValue p = toArgValue(DevicePtr<int32_t>{0x1000} + 3);
  CHECK(p.isPointer);
  CHECK(p.address() == 0x100C);
  CHECK_FALSE(toArgValue(3).isPointer);

  // Scalars sit at the start of the 8-byte storage at their natural size.
  ArgValue i16v = toArgValue(int16_t(-2));
  CHECK(i16v.storage[0] == 0xFE);
  CHECK(i16v.storage[1] == 0xFF);
  CHECK(i16v.storage[2] == 0);
  CHECK(toArgValue(true).storage[0] == 1);
  CHECK(toArgValue(2.5f).as<float>() == 2.5f);
  CHECK(toArgValue(-2.25).as<double>() == -2.25);
  CHECK(toArgValue(f16(1.0f)).as<uint16_t>() == 0x3C00);

  std::vector<ArgValue> args = makeArgs(DevicePtr<float>{0x10}, 3, 2.0);
  std::vector<void *> params = kernelParamPointers(args);
  REQUIRE(params.size() == 3);
  CHECK(*static_cast<uint64_t *>(params[0]) == 0x10);
  CHECK(*static_cast<int32_t *>(params[1]) == 3);
  CHECK(*static_cast<double *>(params[2]) == 2.0);
}

TEST_CASE("checkLaunchArgs reports wrong arguments exactly", "[runtime][args]") {
  KernelSignature sig = vaddSignature();
  DevicePtr<float> f{0x1000};
  DevicePtr<int32_t> i{0x2000};

  CHECK_NOTHROW(checkLaunchArgs(sig, makeArgs(f, f, f, 10)));

  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, f, f)); }) ==
        "kernel 'vadd' expects 4 arguments, got 3");
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, f, f, 1, 2)); }) ==
        "kernel 'vadd' expects 4 arguments, got 5");
  CHECK(errorOf([&] { checkLaunchArgs(sig, {}); }) == "kernel 'vadd' expects 4 arguments, got 0");
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, 3, f, 10)); }) ==
        "argument 2 ('Y') of kernel 'vadd' must be a pointer (*f32), got a scalar i32");
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, f, f, 10.0)); }) ==
        "argument 4 ('N') of kernel 'vadd' must be i32, got f64");
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(i, f, f, 10)); }) ==
        "argument 1 ('X') of kernel 'vadd' must be *f32, got *i32");
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, f, f, f)); }) ==
        "argument 4 ('N') of kernel 'vadd' must be a scalar i32, got a pointer *f32");
  // An int64_t is not silently truncated to i32: users cast explicitly.
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, f, f, int64_t(10))); }) ==
        "argument 4 ('N') of kernel 'vadd' must be i32, got i64");
  CHECK_NOTHROW(checkLaunchArgs(sig, makeArgs(f, f, f, int32_t(int64_t(10)))));
  CHECK(errorOf([&] { checkLaunchArgs(sig, makeArgs(f, f, f, 10u == 10u)); }) ==
        "argument 4 ('N') of kernel 'vadd' must be i32, got i1");

  KernelSignature one;
  one.name = "k";
  one.params = {{"A", DType{ScalarType::bf16, 1}}};
  CHECK(errorOf([&] { checkLaunchArgs(one, {}); }) == "kernel 'k' expects 1 argument, got 0");
  CHECK(errorOf([&] { checkLaunchArgs(one, makeArgs(DevicePtr<f16>{1})); }) ==
        "argument 1 ('A') of kernel 'k' must be *bf16, got *f16");
  CHECK_NOTHROW(checkLaunchArgs(one, makeArgs(DevicePtr<bf16>{1})));
}

// ===========================================================================
// The backend-neutral layer, on a host backend
// ===========================================================================

TEST_CASE("buffers on a custom backend", "[runtime][memory]") {
  auto backend = std::make_shared<HostBackend>();
  {
    Context ctx(backend);
    CHECK(ctx.deviceName() == "host test backend");
    CHECK(ctx.target() == "sm_90");
    CHECK_FALSE(ctx.isInterpreter());

    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> host(1000);
    for (float &x : host)
      x = dist(rng);

    auto buf = ctx.upload(host);
    CHECK(buf.size() == 1000);
    CHECK(buf.bytes() == 4000);
    CHECK(buf.toHost() == host);
    CHECK(backend->liveAllocations == 1);

    // Partial copies with offsets.
    std::vector<float> part = {1, 2, 3};
    buf.copyFromHost(part.data(), 3, 997);
    std::vector<float> tail(3);
    buf.copyToHost(tail.data(), 3, 997);
    CHECK(tail == part);

    // Bounds are checked.
    CHECK(errorOf([&] { buf.copyFromHost(part.data(), 3, 998); }) ==
          "copy from host of 12 bytes at offset 3992 is outside the device buffer of 4000 bytes");
    std::vector<float> tooBig(1001);
    CHECK(startsWith(errorOf([&] { buf.copyFromHost(tooBig); }), "copy from host of 4004 bytes"));
    CHECK(startsWith(errorOf([&] { buf.copyToHost(tooBig.data(), 1001); }),
                     "copy to host of 4004 bytes"));

    buf.memsetBytes(0);
    CHECK(buf.toHost() == std::vector<float>(1000, 0.0f));
    buf.fill(2.5f);
    CHECK(buf.toHost() == std::vector<float>(1000, 2.5f));
    auto bytes = ctx.alloc<uint8_t>(5);
    bytes.fill(7);
    CHECK(bytes.toHost() == std::vector<uint8_t>(5, 7));
    auto wide = ctx.alloc<double>(4);
    wide.fill(-1.5);
    CHECK(wide.toHost() == std::vector<double>(4, -1.5));

    // Device-to-device, and async copies on a stream.
    auto copy = ctx.alloc<float>(1000);
    copy.copyFrom(buf);
    CHECK(copy.toHost() == std::vector<float>(1000, 2.5f));
    Stream s = ctx.createStream();
    CHECK(backend->liveStreams == 1);
    copy.copyFromHost(host, s);
    s.synchronize();
    std::vector<float> back(1000);
    copy.copyToHost(back.data(), 1000, 0, s);
    s.synchronize();
    CHECK(back == host);

    // Zero-sized buffers allocate nothing and copy nothing.
    auto empty = ctx.alloc<float>(0);
    CHECK(empty.address() == 0);
    CHECK(empty.toHost().empty());

    // Moves transfer ownership.
    DeviceBuffer<float> moved = std::move(copy);
    CHECK(copy.address() == 0);
    CHECK(moved.size() == 1000);
    CHECK(startsWith(errorOf([&] { copy.toHost(); }), "use of an empty"));
    moved.reset();
    CHECK(backend->liveAllocations == 3); // buf, bytes, wide
  }
  CHECK(backend->liveAllocations == 0);
  CHECK(backend->liveStreams == 0);
}

TEST_CASE("typed kernel launch on a custom backend", "[runtime][launch]") {
  auto backend = std::make_shared<HostBackend>();
  Context ctx(backend);
  Module module = ctx.loadModule(ModuleImage{ModuleFormat::TileIR, "func vadd"});
  CHECK(module.infoLog() == "host: loaded 9 bytes");
  CHECK(startsWith(errorOf([&] { module.function("missing"); }), "kernel 'missing' not found"));
  CHECK(errorOf([&] { ctx.loadModule(ModuleImage{ModuleFormat::TileIR, "bad"}); }) ==
        "cannot load module: bad image");

  Kernel k(module.function("vadd"), vaddSignature(), LaunchConfig{8, 1024});
  CHECK(k.block().x == 256);
  CHECK(k.function().attributes().numRegisters == 32);

  std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  auto X = ctx.upload(x), Y = ctx.upload(y);
  auto Out = ctx.alloc<float>(4);
  k.launch(ctx.stream(), Grid{1}, X, Y, Out, int32_t(4));
  CHECK(Out.toHost() == std::vector<float>{11, 22, 33, 44});
  CHECK(backend->launches == 1);
  CHECK(backend->lastName == "vadd");
  CHECK(backend->lastBlock.x == 256);
  CHECK(backend->lastShared == 1024);
  CHECK(backend->lastStream == nullptr);
  REQUIRE(backend->lastArgs.size() == 4);
  CHECK(backend->lastArgs[0].address() == X.address());
  CHECK(backend->lastArgs[2].address() == Out.address());

  // DevicePtr offsets and a user stream.
  Stream s(ctx);
  k.launch(s, Grid{2, 3, 4}, X.ptr(1), Y.ptr(1), Out.ptr(1), int32_t(3));
  CHECK(backend->lastStream == s.handle());
  CHECK(backend->lastGrid.y == 3);
  CHECK(Out.toHost() == std::vector<float>{11, 22, 33, 44});

  // Wrong arguments never reach the backend.
  auto I = ctx.alloc<int32_t>(4);
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, X, Y, Out); }) ==
        "kernel 'vadd' expects 4 arguments, got 3");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, X, 5, Out, 4); }) ==
        "argument 2 ('Y') of kernel 'vadd' must be a pointer (*f32), got a scalar i32");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, X, Y, Out, 4.0); }) ==
        "argument 4 ('N') of kernel 'vadd' must be i32, got f64");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, I, Y, Out, 4); }) ==
        "argument 1 ('X') of kernel 'vadd' must be *f32, got *i32");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1}, X, Y, Out, int64_t(4)); }) ==
        "argument 4 ('N') of kernel 'vadd' must be i32, got i64");
  CHECK(backend->launches == 2);

  // Launch geometry.
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{0}, X, Y, Out, 4); }) ==
        "cannot launch kernel 'vadd': grid 0x1x1 has a zero dimension");
  CHECK(errorOf([&] { k.launch(ctx.stream(), Grid{1, 70000}, X, Y, Out, 4); }) ==
        "cannot launch kernel 'vadd': grid.y = 70000 exceeds the limit 65535");
  CHECK(startsWith(errorOf([&] {
                     module.function("vadd").launch(ctx.stream(), Grid{1}, Block{33, 32}, 0, {});
                   }),
                   "cannot launch kernel 'vadd': block 33x32x1 exceeds the limit of 1024 threads"));
  CHECK(startsWith(errorOf([] { Kernel(Function(), vaddSignature(), LaunchConfig{0}); }),
                   "kernel 'vadd': num_warps must be between 1 and 32"));

  // A stream of another context is refused.
  Context other(std::make_shared<HostBackend>());
  CHECK(errorOf([&] { k.launch(other.stream(), Grid{1}, X, Y, Out, 4); }) ==
        "cannot launch kernel 'vadd': the stream belongs to a different context");

  // Events.
  Event a(ctx), b(ctx);
  a.record(s);
  k.launch(s, Grid{1}, X, Y, Out, 4);
  b.record(s);
  b.synchronize();
  CHECK(Event::elapsedMs(a, b) == 1.0f);

  // The module stays loaded while a Function or Kernel refers to it.
  Function f = module.function("vadd");
  { Module gone = std::move(module); }
  CHECK(backend->liveModules == 1);
  k = Kernel();
  f = Function();
  CHECK(backend->liveModules == 0);
}

// ===========================================================================
// Backend selection
// ===========================================================================

TEST_CASE("TESSERA_INTERPRET selects the interpreter backend", "[runtime][backend]") {
  {
    EnvGuard interp("TESSERA_INTERPRET", "1");
    CHECK(interpreterRequested());
    {
      Context ctx; // the built-in CPU interpreter
      CHECK(ctx.backend().kind() == BackendKind::Interpreter);
      CHECK(ctx.target() == "interp");
    }
    int asked = -1;
    setInterpreterBackendFactory([&](int ordinal) {
      asked = ordinal;
      auto b = std::make_shared<HostBackend>();
      b->info.ordinal = ordinal;
      return b;
    });
    {
      EnvGuard dev("TESSERA_DEVICE", "2");
      Context ctx;
      CHECK(asked == 2);
      CHECK(ctx.ordinal() == 2);
      CHECK(ctx.deviceName() == "host test backend");
    }
    {
      EnvGuard dev("TESSERA_DEVICE", "x");
      CHECK(errorOf([] { Context ctx; }) == "TESSERA_DEVICE='x' is not a device number");
    }
    setInterpreterBackendFactory(nullptr);
  }
  for (const char *off : {"0", "", "false", "OFF", "no"}) {
    EnvGuard interp("TESSERA_INTERPRET", off);
    CHECK_FALSE(interpreterRequested());
  }
  EnvGuard unset("TESSERA_INTERPRET", nullptr);
  CHECK_FALSE(interpreterRequested());
}

// ===========================================================================
// The CUDA driver loader without a usable driver
// ===========================================================================

TEST_CASE("no CUDA driver gives a clear error", "[runtime][driver]") {
  EnvGuard interp("TESSERA_INTERPRET", nullptr);
  EnvGuard lib("TESSERA_LIBCUDA", "/nonexistent/libcuda.so.1");
  std::string msg = errorOf([] { Context ctx; });
  CHECK(startsWith(msg, "no CUDA driver found (/nonexistent/libcuda.so.1 could not be loaded: "));
  CHECK(msg.find("No such file or directory") != std::string::npos);
  CHECK(msg.back() == ')');
  // Every entry point reports it the same way, and nothing is cached.
  CHECK(startsWith(errorOf([] { createCudaBackend(0); }), "no CUDA driver found"));
  CHECK(startsWith(errorOf([] { Context ctx(1); }), "no CUDA driver found"));
}

TEST_CASE("the default driver path gives a clear error or a working context",
          "[runtime][driver]") {
  EnvGuard interp("TESSERA_INTERPRET", nullptr);
  EnvGuard lib("TESSERA_LIBCUDA", nullptr);
  try {
    Context ctx;
    WARN("a CUDA device is present: " << ctx.deviceName() << " (" << ctx.target() << ")");
    CHECK(!ctx.deviceName().empty());
  } catch (const Error &e) {
    std::string msg = e.what();
    INFO(msg);
    bool clear = startsWith(msg, "no CUDA driver found (libcuda.so.1 could not be loaded: ") ||
                 startsWith(msg, "no CUDA-capable GPU found") ||
                 !e.cuResultName().empty();
    CHECK(clear);
  }
}

namespace {
// A stand-in libcuda for the loader's error paths: FAKE_CUDA_MODE picks the
// failure. It refuses entry-point requests for any CUDA version but 12000.
const char *kFakeDriverSource = R"(
#include <stdlib.h>
#include <string.h>
typedef int CUresult;
static int mode(void) { const char *m = getenv("FAKE_CUDA_MODE"); return m ? atoi(m) : 0; }
static CUresult fInit(unsigned f) { (void)f; return mode() == 1 ? 100 : mode() == 4 ? 999 : 0; }
static CUresult fVersion(int *v) { *v = mode() == 3 ? 11040 : 12080; return 0; }
static CUresult fCount(int *c) { *c = 0; return 0; }
static CUresult fName(CUresult e, const char **s) {
  if (e == 100) { *s = "CUDA_ERROR_NO_DEVICE"; return 0; }
  if (e == 999) { *s = "CUDA_ERROR_UNKNOWN"; return 0; }
  return 1;
}
static CUresult fString(CUresult e, const char **s) {
  if (e == 100) { *s = "no CUDA-capable device is detected"; return 0; }
  if (e == 999) { *s = "unknown error"; return 0; }
  return 1;
}
static CUresult fOther(void) { return 801; }
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version,
                             unsigned long long flags, int *status) {
  (void)flags;
  if (version != 12000) return 1;
  if (status) *status = 0;
  if (!strcmp(sym, "cuInit")) *pfn = (void *)fInit;
  else if (!strcmp(sym, "cuDriverGetVersion")) *pfn = (void *)fVersion;
  else if (!strcmp(sym, "cuDeviceGetCount")) *pfn = (void *)fCount;
  else if (!strcmp(sym, "cuGetErrorName")) *pfn = (void *)fName;
  else if (!strcmp(sym, "cuGetErrorString")) *pfn = (void *)fString;
  else if (!strncmp(sym, "cu", 2) && !strchr(sym, '_')) *pfn = (void *)fOther;
  else { *pfn = 0; if (status) *status = 1; }
  return 0;
}
)";

// Builds the fake driver with the system C compiler; empty when there is none.
std::string buildFakeDriver(const std::string &dir, const std::string &name, const char *source) {
  std::string c = dir + "/" + name + ".c", so = dir + "/" + name + ".so";
  std::ofstream(c) << source;
  std::string cmd = "cc -shared -fPIC -o '" + so + "' '" + c + "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    return {};
  return so;
}
} // namespace

TEST_CASE("driver loader error paths (fake libcuda)", "[runtime][driver]") {
  char tmpl[] = "/tmp/tessera-fakecuda-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  std::string fake = buildFakeDriver(dir, "libfakecuda", kFakeDriverSource);
  std::string ancient = buildFakeDriver(dir, "libancient", "int cuInit(unsigned f) { return 0; }\n");
  if (fake.empty() || ancient.empty()) {
    WARN("fake-driver test skipped: no C compiler (cc) to build a stand-in libcuda");
    std::system(("rm -rf '" + dir + "'").c_str());
    return;
  }
  EnvGuard interp("TESSERA_INTERPRET", nullptr);
  {
    EnvGuard lib("TESSERA_LIBCUDA", fake.c_str());
    {
      EnvGuard m("FAKE_CUDA_MODE", "1");
      Error err("");
      try {
        Context ctx;
      } catch (const Error &e) {
        err = e;
      }
      CHECK(std::string(err.what()) ==
            "no CUDA-capable GPU found: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)");
      CHECK(err.cuResult() == 100);
      CHECK(err.cuResultName() == "CUDA_ERROR_NO_DEVICE");
    }
    {
      EnvGuard m("FAKE_CUDA_MODE", "2");
      CHECK(errorOf([] { Context ctx; }) ==
            "no CUDA-capable GPU found (cuDeviceGetCount reported no devices)");
    }
    {
      EnvGuard m("FAKE_CUDA_MODE", "3");
      CHECK(errorOf([] { Context ctx; }) ==
            "the CUDA driver in " + fake +
                " is too old: it supports CUDA 11.4, Tessera needs 12.0 or newer");
    }
    {
      EnvGuard m("FAKE_CUDA_MODE", "4");
      CHECK(errorOf([] { Context ctx; }) == "cuInit failed: CUDA_ERROR_UNKNOWN (unknown error)");
    }
  }
  {
    EnvGuard lib("TESSERA_LIBCUDA", ancient.c_str());
    CHECK(errorOf([] { Context ctx; }) ==
          "the CUDA driver in " + ancient +
              " is too old: it has no cuGetProcAddress (Tessera needs a driver for CUDA 12.0 or "
              "newer)");
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

// ===========================================================================
// GPU tests: run for real with a GPU, skipped visibly without one.
// ===========================================================================

namespace {

std::optional<Context> gpuContext() {
  try {
    return Context(createCudaBackend(0));
  } catch (const Error &e) {
    WARN("GPU test skipped: no GPU (" << e.what() << ")");
    return std::nullopt;
  }
}

// Hand-written PTX (ISA 7.0, sm_80): vadd, a parameter-packing probe and a
// kernel using dynamic shared memory.
const char *kTestPtx = R"PTX(.version 7.0
.target sm_80
.address_size 64

.visible .entry vadd(
    .param .u64 vadd_X,
    .param .u64 vadd_Y,
    .param .u64 vadd_Out,
    .param .u32 vadd_N)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [vadd_X];
    ld.param.u64 %rd2, [vadd_Y];
    ld.param.u64 %rd3, [vadd_Out];
    ld.param.u32 %r1, [vadd_N];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}

.visible .entry pack(
    .param .u64 pack_out,
    .param .s8 pack_a,
    .param .s16 pack_b,
    .param .s32 pack_c,
    .param .s64 pack_d,
    .param .f32 pack_e,
    .param .f64 pack_f,
    .param .u8 pack_g,
    .param .b16 pack_h,
    .param .u8 pack_i)
{
    .reg .b16 %rs<6>;
    .reg .b32 %r<3>;
    .reg .f32 %f<2>;
    .reg .f64 %fd<2>;
    .reg .b64 %rd<12>;

    ld.param.u64 %rd1, [pack_out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.s8 %rs1, [pack_a];
    cvt.s64.s16 %rd2, %rs1;
    st.global.u64 [%rd1], %rd2;
    ld.param.s16 %rs2, [pack_b];
    cvt.s64.s16 %rd3, %rs2;
    st.global.u64 [%rd1+8], %rd3;
    ld.param.s32 %r1, [pack_c];
    cvt.s64.s32 %rd4, %r1;
    st.global.u64 [%rd1+16], %rd4;
    ld.param.s64 %rd5, [pack_d];
    st.global.u64 [%rd1+24], %rd5;
    ld.param.f32 %f1, [pack_e];
    mov.b32 %r2, %f1;
    cvt.u64.u32 %rd6, %r2;
    st.global.u64 [%rd1+32], %rd6;
    ld.param.f64 %fd1, [pack_f];
    mov.b64 %rd7, %fd1;
    st.global.u64 [%rd1+40], %rd7;
    ld.param.u8 %rs3, [pack_g];
    cvt.u64.u16 %rd8, %rs3;
    st.global.u64 [%rd1+48], %rd8;
    ld.param.b16 %rs4, [pack_h];
    cvt.u64.u16 %rd9, %rs4;
    st.global.u64 [%rd1+56], %rd9;
    ld.param.u8 %rs5, [pack_i];
    cvt.u64.u16 %rd10, %rs5;
    st.global.u64 [%rd1+64], %rd10;
    ret;
}

.extern .shared .align 16 .b8 smem[];

.visible .entry smem_reverse(
    .param .u64 sr_In,
    .param .u64 sr_Out,
    .param .u32 sr_N)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [sr_In];
    ld.param.u64 %rd2, [sr_Out];
    ld.param.u32 %r1, [sr_N];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, smem;
    // phase 1: smem[i] = In[i] for i = tid; i < N; i += ntid
    mov.u32 %r5, %r2;
LOAD:
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra LOADED;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    shl.b32 %r6, %r5, 2;
    add.u32 %r7, %r4, %r6;
    st.shared.f32 [%r7], %f1;
    add.u32 %r5, %r5, %r3;
    bra LOAD;
LOADED:
    bar.sync 0;
    // phase 2: Out[i] = smem[N - 1 - i]
    mov.u32 %r5, %r2;
STORE:
    setp.ge.u32 %p2, %r5, %r1;
    @%p2 bra DONE;
    sub.u32 %r8, %r1, %r5;
    sub.u32 %r8, %r8, 1;
    shl.b32 %r6, %r8, 2;
    add.u32 %r7, %r4, %r6;
    ld.shared.f32 %f1, [%r7];
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.f32 [%rd4], %f1;
    add.u32 %r5, %r5, %r3;
    bra STORE;
DONE:
    ret;
}
)PTX";

} // namespace

TEST_CASE("GPU: device properties", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  const DeviceInfo &d = ctx->device();
  WARN("GPU: " << d.name << ", " << d.target() << ", " << d.smCount << " SMs, "
               << d.maxSharedMemoryPerBlockOptin << " bytes opt-in shared memory, driver "
               << d.driverVersion);
  CHECK(!d.name.empty());
  CHECK(d.computeCapabilityMajor >= 7);
  CHECK(d.smCount > 0);
  CHECK(d.maxSharedMemoryPerBlock == 48 * 1024);
  CHECK(d.maxSharedMemoryPerBlockOptin >= 48 * 1024);
  CHECK(d.totalMemoryBytes > (size_t(1) << 30));
  CHECK(d.driverVersion >= 12000);
  CHECK_NOTHROW(ctx->synchronize());
}

TEST_CASE("GPU: memory round trips", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-100, 100);
  std::vector<float> host(1 << 20);
  for (float &x : host)
    x = dist(rng);

  auto buf = ctx->upload(host);
  CHECK(buf.toHost() == host);

  auto copy = ctx->alloc<float>(host.size());
  copy.copyFrom(buf);
  CHECK(copy.toHost() == host);

  buf.memsetBytes(0xFF);
  std::vector<uint32_t> words(host.size());
  buf.memory().copyToHost(words.data(), words.size() * 4);
  CHECK(words == std::vector<uint32_t>(host.size(), 0xFFFFFFFFu));
  buf.fill(3.25f);
  CHECK(buf.toHost() == std::vector<float>(host.size(), 3.25f));
  buf.zero();
  CHECK(buf.toHost() == std::vector<float>(host.size(), 0.0f));

  // Async copies on a stream.
  Stream s = ctx->createStream();
  std::vector<float> back(host.size());
  buf.copyFromHost(host, s);
  buf.copyToHost(back.data(), back.size(), 0, s);
  s.synchronize();
  CHECK(back == host);

  auto bytes = ctx->alloc<uint8_t>(1001);
  bytes.fill(0x5A);
  CHECK(bytes.toHost() == std::vector<uint8_t>(1001, 0x5A));
  auto none = ctx->alloc<double>(0);
  CHECK(none.toHost().empty());

  std::string oom = errorOf([&] { ctx->alloc<uint8_t>(size_t(1) << 50); });
  CHECK(oom.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
}

TEST_CASE("GPU: load hand-written PTX and launch", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  Module module = ctx->loadPTX(kTestPtx);
  INFO(module.infoLog());
  Kernel vadd(module.function("vadd"), vaddSignature(), LaunchConfig{4, 0});
  FunctionAttributes attrs = vadd.function().attributes();
  CHECK(attrs.numRegisters > 0);
  CHECK(attrs.localBytes == 0);
  CHECK(attrs.ptxVersion == 80); // .target sm_80
  CHECK(attrs.binaryVersion ==
        ctx->device().computeCapabilityMajor * 10 + ctx->device().computeCapabilityMinor);
  CHECK(attrs.maxThreadsPerBlock >= 128);

  const int32_t n = 100000;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(n), y(n);
  for (int32_t i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
  }
  auto X = ctx->upload(x), Y = ctx->upload(y);
  auto Out = ctx->alloc<float>(n);
  Out.zero();

  Stream s = ctx->createStream();
  Event start(*ctx), stop(*ctx);
  start.record(s);
  vadd.launch(s, Grid{unsigned(cdiv(n, 128))}, X, Y, Out, n);
  stop.record(s);
  stop.synchronize();
  CHECK(Event::elapsedMs(start, stop) >= 0.0f);
  std::vector<float> out = Out.toHost();
  int wrong = 0;
  for (int32_t i = 0; i < n; ++i)
    wrong += out[i] != x[i] + y[i];
  CHECK(wrong == 0);

  // Offsets via DevicePtr, on the default stream.
  Out.zero();
  vadd.launch(ctx->stream(), Grid{1}, X.ptr(10), Y.ptr(10), Out.ptr(10), int32_t(5));
  ctx->synchronize();
  out = Out.toHost();
  CHECK(out[9] == 0.0f);
  CHECK(out[10] == x[10] + y[10]);
  CHECK(out[14] == x[14] + y[14]);
  CHECK(out[15] == 0.0f);

  // Wrong arguments are caught before the launch.
  CHECK(errorOf([&] { vadd.launch(s, Grid{1}, X, Y, Out, int64_t(n)); }) ==
        "argument 4 ('N') of kernel 'vadd' must be i32, got i64");

  // Every scalar size is packed at its natural size and alignment.
  Function pack = module.function("pack");
  auto probe = ctx->alloc<int64_t>(9);
  pack.launchArgs(s, Grid{1}, Block{1}, 0, probe, int8_t(-5), int16_t(-300), int32_t(-70000),
                  int64_t(-5000000000LL), 1.5f, -2.25, uint8_t(200), f16(1.0f), true);
  s.synchronize();
  std::vector<int64_t> got = probe.toHost();
  CHECK(got[0] == -5);
  CHECK(got[1] == -300);
  CHECK(got[2] == -70000);
  CHECK(got[3] == -5000000000LL);
  CHECK(uint32_t(got[4]) == 0x3FC00000u);
  double d;
  std::memcpy(&d, &got[5], 8);
  CHECK(d == -2.25);
  CHECK(got[6] == 200);
  CHECK(got[7] == 0x3C00);
  CHECK(got[8] == 1);

  CHECK(errorOf([&] { module.function("nope"); })
            .find("kernel 'nope' not found in module (cuModuleGetFunction): "
                  "CUDA_ERROR_NOT_FOUND") != std::string::npos);
}

TEST_CASE("GPU: dynamic shared memory above 48 KB", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  Module module = ctx->loadPTX(kTestPtx);
  KernelSignature sig;
  sig.name = "smem_reverse";
  sig.params = {{"In", DType{ScalarType::f32, 1}},
                {"Out", DType{ScalarType::f32, 1}},
                {"N", DType{ScalarType::i32, 0}}};
  const int32_t n = 24 * 1024; // 96 KB of floats
  size_t shared = n * sizeof(float);
  REQUIRE(ctx->maxSharedMemoryPerBlockOptin() >= shared);
  Kernel k(module.function("smem_reverse"), sig, LaunchConfig{8, shared});
  std::vector<float> in(n);
  for (int32_t i = 0; i < n; ++i)
    in[i] = float(i);
  auto In = ctx->upload(in);
  auto Out = ctx->alloc<float>(n);
  k.launch(ctx->stream(), Grid{1}, In, Out, n);
  std::vector<float> out = Out.toHost();
  std::vector<float> want(in.rbegin(), in.rend());
  CHECK(out == want);

  size_t tooMuch = ctx->maxSharedMemoryPerBlockOptin() + 1;
  std::string msg = errorOf([&] { k.function().setMaxDynamicSharedMemory(tooMuch); });
  CHECK(msg.find("requests " + std::to_string(tooMuch) +
                 " bytes of dynamic shared memory, but") != std::string::npos);
}

TEST_CASE("GPU: invalid PTX reports the CUresult and the JIT log", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  const char *bad = ".version 7.0\n.target sm_80\n.address_size 64\n"
                    ".visible .entry broken() {\n  frobnicate.u32 %r1;\n  ret;\n}\n";
  try {
    ctx->loadPTX(bad);
    FAIL("invalid PTX loaded");
  } catch (const Error &e) {
    std::string msg = e.what();
    INFO(msg);
    CHECK(e.cuResultName() == "CUDA_ERROR_INVALID_PTX");
    CHECK(!e.jitLog().empty());
    CHECK(msg.find("CUDA_ERROR_INVALID_PTX") != std::string::npos);
    CHECK(msg.find("JIT error log:") != std::string::npos);
    CHECK(msg.find(e.jitLog()) != std::string::npos);
    CHECK(e.jitLog().find("frobnicate") != std::string::npos);
  }
}

TEST_CASE("GPU: contexts, threads and lifetimes", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  CHECK(startsWith(errorOf([] { createCudaBackend(99); }), "CUDA device 99 does not exist (found "));
  CHECK(startsWith(errorOf([] { createCudaBackend(-1); }), "CUDA device -1 does not exist"));

  // Contexts of one device share one backend, so they interoperate; buffers
  // and kernels outlive the Context that made them.
  DeviceBuffer<float> kept;
  Kernel vadd;
  {
    Context second(createCudaBackend(0));
    CHECK(&second.backend() == &ctx->backend());
    kept = second.upload(std::vector<float>{1, 2, 3, 4});
    vadd = Kernel(second.loadPTX(kTestPtx).function("vadd"), vaddSignature());
  }
  CHECK(kept.toHost() == std::vector<float>{1, 2, 3, 4});

  // Work from other threads, which have no current CUDA context of their own.
  auto out = ctx->alloc<float>(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      try {
        Stream s = ctx->createStream();
        vadd.launch(s, Grid{1}, kept.ptr(i), kept.ptr(i), out.ptr(i), int32_t(1));
        s.synchronize();
      } catch (const Error &e) {
        errors[i] = e.what();
      }
    });
  for (auto &t : threads)
    t.join();
  for (const std::string &e : errors)
    CHECK(e == "");
  CHECK(out.toHost() == std::vector<float>{2, 4, 6, 8});
}

TEST_CASE("GPU: load a cubin", "[runtime][gpu]") {
  auto ctx = gpuContext();
  if (!ctx)
    return;
  char tmpl[] = "/tmp/tessera-cubin-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  {
    std::ofstream(dir + "/k.ptx") << kTestPtx;
  }
  std::string cmd = "/usr/local/cuda/bin/ptxas -arch=" + ctx->target() + " -o '" + dir +
                    "/k.cubin' '" + dir + "/k.ptx' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    WARN("cubin test skipped: no ptxas to build a cubin for " << ctx->target());
    std::system(("rm -rf '" + dir + "'").c_str());
    return;
  }
  std::ifstream f(dir + "/k.cubin", std::ios::binary);
  std::string cubin((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::system(("rm -rf '" + dir + "'").c_str());
  Module m = ctx->loadCubin(cubin);
  Kernel vadd(m.function("vadd"), vaddSignature());
  auto X = ctx->upload(std::vector<float>{1, 2, 3});
  auto Out = ctx->alloc<float>(3);
  vadd.launch(ctx->stream(), Grid{1}, X, X, Out, 3);
  CHECK(Out.toHost() == std::vector<float>{2, 4, 6});
}
