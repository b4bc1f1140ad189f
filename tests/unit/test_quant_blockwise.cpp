// tessera::quant (include/tessera/quant/Blockwise.h): the dynamic map against
// the values the specification lists; quantize_blockwise's codes bit for bit
// against the CPU reference of the specified search (tests/support), for
// every block size and input type, on fresh random inputs with a ragged last
// block, an all-zero block and values at exactly +-absmax; dequantize equal to
// code[q] * absmax in the input's type; the argument errors. In the
// interpreter (CI) and, when there is one, on the GPU.
#include "GpuTestSupport.h"
#include "TestSupport.h"
#include "support/BlockwiseReference.h"
#include "../kernels_dsl/quant/CodeBuckets.h"

#include "tessera/KernelLibrary.h"
#include "tessera/quant/Blockwise.h"
#include "tessera/tessera.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace tessera;
using namespace tessera::testing;

namespace {

const int kBlocksizes[] = {64, 128, 256, 512, 1024, 2048, 4096};

TunedKernelOptions firstConfig() {
  TunedKernelOptions o;
  o.onMiss = MissPolicy::FirstConfig;  // no tuning in unit tests (the tuner has its own)
  return o;
}

// Inputs for one block size: random blocks, one all zero, one holding its
// absmax with both signs; `count` is ragged (not a multiple of the block).
std::vector<float> makeInput(Seeded &rng, int blocksize, size_t count) {
  std::vector<float> x = rng.uniform(count, -3.0f, 3.0f);
  const size_t bs = size_t(blocksize);
  for (size_t i = bs; i < std::min(count, 2 * bs); ++i)
    x[i] = 0.0f;  // block 1: all zeros
  x[0] = 2.5f, x[1] = -2.5f, x[2] = 1.25f;  // block 0: +-absmax exactly, and half of it
  for (size_t i = 3; i < std::min(count, bs); ++i)
    x[i] = std::max(-2.5f, std::min(2.5f, x[i]));
  return x;
}

template <class T> std::vector<T> convert(const std::vector<float> &x) {
  std::vector<T> out;
  for (float v : x)
    out.push_back(T(v));
  return out;
}
template <class T> float asFloat(T v) { return float(v); }

template <class T> void checkRoundTrip(Context &ctx, int blocksize, Seeded &rng) {
  const size_t count = size_t(2 * blocksize + rng.range(1, blocksize - 1));
  std::vector<T> hx = convert<T>(makeInput(rng, blocksize, count));
  std::vector<float> xf;
  for (T v : hx)
    xf.push_back(asFloat(v));
  const std::vector<float> code = quant::create_dynamic_map(true);

  std::vector<uint8_t> refQ;
  std::vector<float> refAbsmax;
  quantizeBlockwiseRef(xf, blocksize, code, refQ, refAbsmax);

  quant::BlockwiseQuantizer quantizer(ctx, firstConfig());
  DeviceBuffer<T> x = ctx.upload(hx);
  DeviceBuffer<float> dcode = ctx.upload(code);
  DeviceBuffer<uint8_t> q = ctx.alloc<uint8_t>(count);
  DeviceBuffer<float> absmax = ctx.alloc<float>(refAbsmax.size());
  quantizer.quantize(ctx.stream(), x, dcode, q, absmax, blocksize);
  DeviceBuffer<T> y = ctx.alloc<T>(count);
  quantizer.dequantize(ctx.stream(), q, dcode, absmax, y, blocksize);
  ctx.synchronize();

  const std::vector<uint8_t> gotQ = q.toHost();
  const std::vector<float> gotAbsmax = absmax.toHost();
  const std::vector<T> gotY = y.toHost();
  const std::string type = DType{ScalarTypeOf<T>::value, 0}.str();
  INFO("seed " << rng.seed << ", block size " << blocksize << ", " << count << " elements, "
               << type);
  size_t wrongQ = 0, firstWrong = count, wrongY = 0;
  for (size_t i = 0; i < count; ++i) {
    if (gotQ[i] != refQ[i] && wrongQ++ == 0)
      firstWrong = i;
    // Dequantize: code[q] * absmax, rounded to the input's type.
    T want = T(code[gotQ[i]] * gotAbsmax[i / size_t(blocksize)]);
    if (std::memcmp(&want, &gotY[i], sizeof(T)) != 0)
      ++wrongY;
  }
  const int gotFirst = firstWrong < count ? int(gotQ[firstWrong]) : -1;
  const int wantFirst = firstWrong < count ? int(refQ[firstWrong]) : -1;
  INFO("first wrong code at " << firstWrong << ": got " << gotFirst << ", want " << wantFirst);
  CHECK(wrongQ == 0);
  CHECK(wrongY == 0);
  CHECK(gotAbsmax == refAbsmax);
  CHECK(gotAbsmax[1] == 0.0f);    // the all-zero block
  CHECK(gotQ[0] == 255);          // +absmax is code 1.0
  CHECK(refQ[blocksize] == 0);    // an all-zero block maps to code 0 (NaN compares false)
}

void checkAllTypes(Context &ctx) {
  Seeded rng;
  for (int bs : kBlocksizes) {
    checkRoundTrip<float>(ctx, bs, rng);
    checkRoundTrip<f16>(ctx, bs, rng);
    checkRoundTrip<bf16>(ctx, bs, rng);
  }
}

// Values where a search can go wrong: every code, the midpoints between
// neighbours (as the search computes them), the floats next to both, the
// decade edges 10^e and 1 itself, padded with random values. 1.0 is in every
// block, so absmax = 1 and the kernel searches these very values.
std::vector<float> edgeValues(const std::vector<float> &code, Seeded &rng, size_t bs) {
  std::vector<float> v;
  auto around = [&](float c) {
    v.push_back(c);
    v.push_back(std::nextafter(c, 2.0f));
    v.push_back(std::nextafter(c, -2.0f));
  };
  for (size_t k = 0; k < code.size(); ++k) {
    around(code[k]);
    around(-code[k]);
    if (k + 1 < code.size())
      around((code[k] + code[k + 1]) * 0.5f);
  }
  for (int e = -8; e <= 0; ++e) {
    around(float(std::pow(10.0, e)));
    around(-float(std::pow(10.0, e)));
  }
  std::vector<float> r = rng.uniform(bs - v.size() % bs + 3, -1.0f, 1.0f);  // a ragged end
  v.insert(v.end(), r.begin(), r.end());
  for (size_t b = 0; b < v.size(); b += bs)
    v[b] = 1.0f;
  return v;
}

// quantize_blockwise with search MAP over `code`, against the reference search.
void checkSearch(Context &ctx, const std::vector<float> &code, int map, int bs, Seeded &rng,
                 int prefetch = 0) {
  const std::vector<float> x = edgeValues(code, rng, size_t(bs));
  std::vector<uint8_t> refQ;
  std::vector<float> refAbsmax;
  quantizeBlockwiseRef(x, bs, code, refQ, refAbsmax);
  Kernel k = compile(ctx, kernelLibraryPath("quant/blockwise_quant.tile"), "quantize_blockwise",
                     quant::withBucketShape({{"BLOCKSIZE", int64_t(bs)}, {"TILE", int64_t(2048)},
                                             {"MAP", int64_t(map)}, {"PREFETCH", int64_t(prefetch)}}));
  DeviceBuffer<float> dx = ctx.upload(x), dcode = ctx.upload(code);
  quant::CodeBuckets buckets(ctx);
  buckets.build(ctx.stream(), dcode);
  DeviceBuffer<uint8_t> q = ctx.alloc<uint8_t>(x.size());
  DeviceBuffer<float> absmax = ctx.alloc<float>(refAbsmax.size());
  // Three programs, so that each takes several steps (the programs are persistent).
  k.launch(ctx.stream(), Grid::of(3), dx, dcode, q, absmax, buckets.buckets(), buckets.bad(),
           int32_t(x.size()));
  ctx.synchronize();
  const std::vector<uint8_t> got = q.toHost();
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (got[i] != refQ[i] && wrong++ == 0)
      first = i;
  INFO("seed " << rng.seed << ", MAP " << map << ", PREFETCH " << prefetch << ", block size " << bs << ", " << wrong << " wrong of " << x.size()
               << "; first: x = " << x[first] << " got " << int(got[first]) << " want "
               << int(refQ[first]));
  CHECK(wrong == 0);
}

// Whether the bucket tables of `code` hold (else the kernels fall back to the search).
bool bucketsHold(Context &ctx, const std::vector<float> &code) {
  quant::CodeBuckets buckets(ctx);
  buckets.build(ctx.stream(), ctx.upload(code));
  ctx.synchronize();
  for (int32_t bad : buckets.bad().toHost())
    if (bad)
      return false;
  return true;
}

void checkSearches(Context &ctx) {
  Seeded rng;
  const std::vector<float> sig = quant::create_dynamic_map(true), uns = quant::create_dynamic_map(false);
  // The tables hold for both dynamic maps (the fast path is the one taken),
  // and not for a book with codes closer than a bucket, which the kernels
  // then quantize with the binary search.
  CHECK(bucketsHold(ctx, sig));
  CHECK(bucketsHold(ctx, uns));
  std::vector<float> dense(256);
  for (size_t i = 0; i < 256; ++i)
    dense[i] = 0.5f + float(i) * 1e-4f;
  CHECK_FALSE(bucketsHold(ctx, dense));
  for (int map : {0, 1}) {
    // Block sizes 256 (several blocks a step), 2048 (one) and 4096 (two chunks).
    for (int bs : {256, 2048, 4096}) {
      checkSearch(ctx, sig, map, bs, rng);
      checkSearch(ctx, uns, map, bs, rng);
    }
  }
  checkSearch(ctx, dense, 1, 2048, rng);
  // Loading the next step ahead (whole-block steps: block sizes up to TILE).
  for (int bs : {256, 2048}) {
    checkSearch(ctx, sig, 1, bs, rng, 1);
    checkSearch(ctx, uns, 1, bs, rng, 1);
  }
}

} // namespace

TEST_CASE("quant: the dynamic map has the specified values", "[quant]") {
  const std::vector<float> s = quant::create_dynamic_map();
  REQUIRE(s.size() == 256);
  CHECK(s[127] == 0.0f);
  CHECK(s[0] == -0.99296875f);
  CHECK(s[255] == 1.0f);
  CHECK(std::find(s.begin(), s.end(), -1.0f) == s.end());
  CHECK(std::is_sorted(s.begin(), s.end()));
  CHECK(std::adjacent_find(s.begin(), s.end()) == s.end());  // strictly increasing
  size_t negatives = size_t(std::count_if(s.begin(), s.end(), [](float v) { return v < 0; }));
  CHECK(negatives == 127);

  const std::vector<float> u = quant::create_dynamic_map(false);
  REQUIRE(u.size() == 256);
  CHECK(u[0] == 0.0f);
  CHECK(u[255] == 1.0f);
  CHECK(std::is_sorted(u.begin(), u.end()));
  CHECK(std::adjacent_find(u.begin(), u.end()) == u.end());
  CHECK(u[1] > 0.0f);

  CHECK(errorOf([] { quant::create_dynamic_map(true, 5, 8); })
            .find("only max_exponent_bits = 7 and total_bits = 8") != std::string::npos);
}

TEST_CASE("quant: the reference search picks the nearest code", "[quant]") {
  // The reference itself, against a linear scan for the nearest code on
  // random values. The search compares with the f32 midpoint of the two
  // codes, which may be half an ulp off the exact one: an x that close to
  // it may get the other code, whose distance then differs by at most an ulp.
  Seeded rng;
  INFO("seed " << rng.seed);
  for (bool sgn : {true, false}) {
    const std::vector<float> code = quant::create_dynamic_map(sgn);
    for (float x : rng.uniform(20000, sgn ? -1.0f : 0.0f, 1.0f)) {
      size_t best = 0;
      for (size_t i = 1; i < 256; ++i)
        if (std::fabs(code[i] - x) < std::fabs(code[best] - x))
          best = i;
      int got = nearestCodeIndex<float>(code, x);
      const float dg = std::fabs(code[size_t(got)] - x), db = std::fabs(code[best] - x);
      const float ulp = std::numeric_limits<float>::epsilon() *
                        std::max(std::fabs(code[size_t(got)]), std::fabs(code[best]));
      INFO("x " << x << " got code " << got << " nearest " << best);
      CHECK(dg - db <= ulp);
    }
  }
}

TEST_CASE("quant: codes are bit-exact for every block size and dtype (interpreter)", "[quant]") {
  Context ctx{createInterpreterBackend()};
  checkAllTypes(ctx);
}

TEST_CASE("quant: codes are bit-exact for every block size and dtype (GPU)", "[quant][gpu]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkAllTypes(*ctx);
}

TEST_CASE("quant: the free functions round-trip in the input's type", "[quant]") {
  Context ctx{createInterpreterBackend()};
  EnvGuard miss("TESSERA_AUTOTUNE_MISS", "first");
  Seeded rng;
  INFO("seed " << rng.seed);
  std::vector<float> hx = rng.uniform(5000, -4.0f, 4.0f);
  auto x = ctx.upload(convert<f16>(hx));
  quant::QuantizedTensor q = quant::quantize_blockwise(ctx, x, 256);
  CHECK(q.dtype == ScalarType::f16);
  CHECK(q.absmax.size() == 20);
  DeviceBuffer<f16> y = quant::dequantize_blockwise<f16>(ctx, q);
  std::vector<f16> hy = y.toHost();
  // The format's error: half the widest gap of the code times the absmax.
  for (size_t i = 0; i < hx.size(); ++i)
    CHECK(std::fabs(float(hy[i]) - float(f16(hx[i]))) <= 0.05f * 4.0f);
  CHECK(errorOf([&] { quant::dequantize_blockwise<float>(ctx, q); })
            .find("quantized from f16, asked to dequantize to f32") != std::string::npos);
}

TEST_CASE("quant: bad arguments are clear errors", "[quant]") {
  Context ctx{createInterpreterBackend()};
  quant::BlockwiseQuantizer quantizer(ctx, firstConfig());
  auto x = ctx.alloc<float>(1000);
  auto code = ctx.upload(quant::create_dynamic_map());
  auto q = ctx.alloc<uint8_t>(1000);
  auto absmax = ctx.alloc<float>(16);
  std::vector<float> repeated = quant::create_dynamic_map();
  repeated[200] = repeated[199];
  CHECK(errorOf([&] { quant::quantize_blockwise(ctx, x, 4096, repeated); }) ==
        "quantize_blockwise: the code book must be strictly increasing (code[199] = " +
            std::to_string(repeated[199]) + ", code[200] = " + std::to_string(repeated[199]) + ")");
  auto shortCode = ctx.alloc<float>(255);
  auto shortQ = ctx.alloc<uint8_t>(999);
  auto shortAbsmax = ctx.alloc<float>(3);
  auto ints = ctx.alloc<int32_t>(1000);
  const Stream &s = ctx.stream();
  CHECK(errorOf([&] { quantizer.quantize(s, x, code, q, absmax, 100); }) ==
        "quantize_blockwise: block size 100 is not supported (64, 128, 256, 512, 1024, 2048 or "
        "4096)");
  CHECK(errorOf([&] { quantizer.quantize(s, x, code, q, absmax, 8192); }).find("block size 8192") !=
        std::string::npos);
  CHECK(errorOf([&] { quantizer.quantize(s, x, shortCode, q, absmax, 64); }) ==
        "quantize_blockwise: the code book must hold 256 floats, got 255");
  CHECK(errorOf([&] { quantizer.quantize(s, x, code, shortQ, absmax, 64); }) ==
        "quantize_blockwise: the u8 codes buffer holds 999 bytes, needs 1000");
  CHECK(errorOf([&] { quantizer.quantize(s, x, code, q, shortAbsmax, 64); }) ==
        "quantize_blockwise: the absmax buffer holds 3 floats (one per block), needs 16");
  CHECK(errorOf([&] { quantizer.quantizeRaw(s, ints.memory(), ScalarType::i32, 1000, code, q,
                                            absmax, 64); }) ==
        "quantize_blockwise: element type i32 is not supported (f32, f16 or bf16)");
  CHECK(errorOf([&] { quantizer.quantizeRaw(s, x.memory(), ScalarType::f32, 1001, code, q,
                                            absmax, 64); })
            .find("the u8 codes buffer holds 1000 bytes, needs 1001") != std::string::npos);
  auto y = ctx.alloc<f16>(999);
  CHECK(errorOf([&] { quantizer.dequantizeRaw(s, q, code, absmax, y.memory(), ScalarType::f16,
                                              1000, 64); }) ==
        "dequantize_blockwise: the output holds 1998 bytes, needs 2000");
}

TEST_CASE("quant: the bucketed search gives the binary search's codes at every edge", "[quant]") {
  Context ctx{createInterpreterBackend()};
  checkSearches(ctx);
}

TEST_CASE("quant: the bucketed search gives the binary search's codes at every edge (GPU)",
          "[quant][gpu]") {
  auto ctx = gpuOrSkip();
  if (ctx)
    checkSearches(*ctx);
}
