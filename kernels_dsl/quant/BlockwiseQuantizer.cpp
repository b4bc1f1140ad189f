// BlockwiseQuantizer: argument checks and tuned launches of
// kernels_dsl/quant/blockwise_quant.tile. One TunedKernel per (kernel,
// element type, block size): the block size is a constexpr of the format,
// fixed by the caller, while the tuner picks TILE and num_warps per count.
#include "CodeBuckets.h"

#include "tessera/Error.h"
#include "tessera/KernelLibrary.h"
#include "tessera/quant/Blockwise.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace tessera::quant {

namespace {

size_t elementBytes(ScalarType t) { return t == ScalarType::f32 ? 4 : 2; }

void checkDType(const char *what, ScalarType t) {
  if (t != ScalarType::f32 && t != ScalarType::f16 && t != ScalarType::bf16)
    throw Error(std::string(what) + ": element type " + DType{t, 0}.str() +
                " is not supported (f32, f16 or bf16)");
}

void checkBlocksize(const char *what, int blocksize) {
  if (!isSupportedBlocksize(blocksize))
    throw Error(std::string(what) + ": block size " + std::to_string(blocksize) +
                " is not supported (64, 128, 256, 512, 1024, 2048 or 4096)");
}

void checkSize(const char *what, const char *buffer, size_t have, size_t need,
               const char *unit) {
  if (have < need)
    throw Error(std::string(what) + ": " + buffer + " holds " + std::to_string(have) + " " +
                unit + ", needs " + std::to_string(need));
}

void checkCommon(const char *what, size_t count, const DeviceBuffer<float> &code,
                 const DeviceBuffer<uint8_t> &q, const DeviceBuffer<float> &absmax,
                 int blocksize) {
  checkBlocksize(what, blocksize);
  if (count > size_t(INT32_MAX))
    throw Error(std::string(what) + ": " + std::to_string(count) +
                " elements is more than the kernels' 32-bit indices allow (2^31 - 1)");
  if (code.size() != 256)
    throw Error(std::string(what) + ": the code book must hold 256 floats, got " +
                std::to_string(code.size()));
  checkSize(what, "the u8 codes buffer", q.size(), count, "bytes");
  checkSize(what, "the absmax buffer", absmax.size(),
            (count + size_t(blocksize) - 1) / size_t(blocksize), "floats (one per block)");
}

} // namespace

// Steps each persistent program of quantize_blockwise takes (its STEPS default).
constexpr int64_t kStepsPerProgram = 8;

// The kernel's type and block size; quantize's also the bucket tables' shape.
static std::map<std::string, ConstexprValue> tableConstexprs(const char *typeParam, ScalarType t,
                                                             int blocksize) {
  std::map<std::string, ConstexprValue> c{{typeParam, DType{t, 0}},
                                          {"BLOCKSIZE", int64_t(blocksize)}};
  return std::string(typeParam) == "DT" ? withBucketShape(std::move(c)) : c;
}

struct BlockwiseQuantizer::State {
  Context *ctx = nullptr;
  std::optional<CodeBuckets> buckets;  // made on the first quantize
  TunedKernelOptions tuning;
  std::string path = kernelLibraryPath("quant/blockwise_quant.tile");
  std::map<std::tuple<std::string, ScalarType, int>, TunedKernel> kernels;

  TunedKernel &kernel(const std::string &name, const char *typeParam, ScalarType t,
                      int blocksize) {
    auto key = std::make_tuple(name, t, blocksize);
    auto it = kernels.find(key);
    if (it == kernels.end())
      it = kernels
               .emplace(key, TunedKernel(*ctx, path, name,
                                         tableConstexprs(typeParam, t, blocksize),
                                         {}, tuning))
               .first;
    return it->second;
  }
};

BlockwiseQuantizer::BlockwiseQuantizer(Context &ctx, TunedKernelOptions tuning)
    : state_(std::make_unique<State>()) {
  state_->ctx = &ctx;
  state_->tuning = tuning;
}
BlockwiseQuantizer::~BlockwiseQuantizer() = default;
BlockwiseQuantizer::BlockwiseQuantizer(BlockwiseQuantizer &&) noexcept = default;
BlockwiseQuantizer &BlockwiseQuantizer::operator=(BlockwiseQuantizer &&) noexcept = default;

void checkCodeBook(const std::vector<float> &code) {
  for (size_t i = 1; i < code.size(); ++i)
    if (!(code[i - 1] < code[i]))
      throw Error("quantize_blockwise: the code book must be strictly increasing (code[" +
                  std::to_string(i - 1) + "] = " + std::to_string(code[i - 1]) + ", code[" +
                  std::to_string(i) + "] = " + std::to_string(code[i]) + ")");
}

void BlockwiseQuantizer::quantizeRaw(const Stream &stream, const DeviceMemory &x,
                                     ScalarType dtype, size_t count,
                                     const DeviceBuffer<float> &code, DeviceBuffer<uint8_t> &q,
                                     DeviceBuffer<float> &absmax, int blocksize) {
  const char *what = "quantize_blockwise";
  checkDType(what, dtype);
  checkCommon(what, count, code, q, absmax, blocksize);
  checkSize(what, "the input", x.size(), count * elementBytes(dtype), "bytes");
  if (count == 0)
    return;
  const int32_t n = int32_t(count);
  // The book is the caller's buffer, which may change between calls: its
  // bucket tables are rebuilt on the same stream, ahead of the launch.
  State &st = *state_;
  if (!st.buckets)
    st.buckets.emplace(*st.ctx);
  st.buckets->build(stream, code);
  TunedKernel &k = st.kernel("quantize_blockwise", "DT", dtype, blocksize);
  // Persistent programs, STEPS steps each (a step is a block, or TILE
  // elements when TILE holds several blocks): the tables are staged once a
  // program, and the hardware balances the programs.
  auto grid = [&](const Config &c) {
    int64_t steps = cdiv(int64_t(n), std::max(int64_t(blocksize), c.get("TILE")));
    return Grid::of(cdiv(steps, c.getOr("STEPS", kStepsPerProgram)));
  };
  const CodeBuckets &b = *st.buckets;
  k.launchWithArgs(stream, grid,
                   {ArgValue::pointer(dtype, x.address()), toArgValue(code), toArgValue(q),
                    toArgValue(absmax), toArgValue(b.buckets()), toArgValue(b.bad()),
                    toArgValue(n)},
                   {&x, &code.memory(), &q.memory(), &absmax.memory(), &b.buckets().memory(),
                    &b.bad().memory(), nullptr});
}

void BlockwiseQuantizer::dequantizeRaw(const Stream &stream, const DeviceBuffer<uint8_t> &q,
                                       const DeviceBuffer<float> &code,
                                       const DeviceBuffer<float> &absmax, DeviceMemory &y,
                                       ScalarType dtype, size_t count, int blocksize) {
  const char *what = "dequantize_blockwise";
  checkDType(what, dtype);
  checkCommon(what, count, code, q, absmax, blocksize);
  checkSize(what, "the output", y.size(), count * elementBytes(dtype), "bytes");
  if (count == 0)
    return;
  const int32_t n = int32_t(count);
  TunedKernel &k = state_->kernel("dequantize_blockwise", "OUT", dtype, blocksize);
  auto grid = [&](const Config &c) { return Grid::of(cdiv(int64_t(n), c.get("TILE"))); };
  k.launchWithArgs(stream, grid,
                   {toArgValue(q), toArgValue(code), toArgValue(absmax),
                    ArgValue::pointer(dtype, y.address()), toArgValue(n)},
                   {&q.memory(), &code.memory(), &absmax.memory(), &y, nullptr});
}

} // namespace tessera::quant
