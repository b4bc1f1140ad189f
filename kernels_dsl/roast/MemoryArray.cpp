// The shared ROAST parameter array (include/tessera/roast/MemoryArray.h).
#include "tessera/roast/MemoryArray.h"

#include "Checks.h"

#include "tessera/Error.h"
#include "tessera/KernelLibrary.h"
#include "tessera/TunedKernel.h"
#include "tessera/roast/Options.h"

#include <cmath>
#include <random>

namespace tessera::roast {
namespace {

std::vector<float> uniformInit(int64_t size, float C, uint64_t seed) {
  detail::checkCount("roast::MemoryArray", "size", size);
  if (!std::isfinite(C) || !(C > 0))
    throw Error("roast::MemoryArray: C must be finite and > 0, got " + std::to_string(C));
  std::mt19937_64 rng(seed);
  std::vector<float> v(static_cast<size_t>(size));
  for (auto &x : v) {
    double u = double(rng() >> 40) / double(1 << 24); // 24 random bits: exact in f32
    x = float((2.0 * u - 1.0) / double(C));
  }
  return v;
}

} // namespace

MemoryArray::MemoryArray(Context &ctx, int64_t size, float C, uint64_t seed)
    : MemoryArray(ctx, uniformInit(size, C, seed), C) {}

MemoryArray::MemoryArray(Context &ctx, const std::vector<float> &values, float C)
    : ctx_(&ctx), size_(int64_t(values.size())), c_(C) {
  detail::checkCount("roast::MemoryArray", "size", size_);
  if (!std::isfinite(C) || !(C > 0))
    throw Error("roast::MemoryArray: C must be finite and > 0, got " + std::to_string(C));
  values_ = ctx.upload(values);
  grad_ = ctx.alloc<float>(values.size());
  grad_.zero();
}

MemoryArray::~MemoryArray() = default;

void MemoryArray::zeroGrad(const Stream &stream) { grad_.memsetBytes(0, stream); }

void MemoryArray::sgdStep(const Stream &stream, float lr, bool zeroGrad) {
  if (!std::isfinite(lr))
    throw Error("roast::MemoryArray::sgdStep: lr must be finite, got " + std::to_string(lr));
  auto &k = sgd_[zeroGrad ? 1 : 0];
  if (!k)
    k = std::make_unique<TunedKernel>(*ctx_, kernelLibraryPath("roast/roast_sgd.tile"),
                                      "roast_sgd",
                                      std::map<std::string, ConstexprValue>{{"ZERO_GRAD", zeroGrad}},
                                      JitOptions{}, tuningFor(*ctx_, {}));
  const int64_t n = size_;
  k->launch(stream, [n](const Config &c) { return Grid::of(cdiv(n, c.get("BLOCK"))); }, values_,
            grad_, int32_t(n), lr);
}

} // namespace tessera::roast
