// The bucket tables that let the quantizing kernels find the nearest code in
// two shared-memory reads (nearest_code_bucketed in blockwise_quant.tile),
// built on the device from any 256-entry code book by code_buckets.tile.
// Shared by BlockwiseQuantizer (rebuilt each call: the book is the caller's
// device buffer) and AdamW8bit (built once: its books are its own).
#ifndef TESSERA_KERNELS_QUANT_CODEBUCKETS_H
#define TESSERA_KERNELS_QUANT_CODEBUCKETS_H

#include "tessera/Context.h"
#include "tessera/Kernel.h"
#include "tessera/Memory.h"

#include <map>
#include <optional>
#include <string>

namespace tessera::quant {

/// Mantissa bits per binade and the first binade's biased exponent: 32
/// binades of 128 buckets from 2^-23, which hold the dynamic maps' codes
/// with at most one threshold a bucket (blockwise_quant.md).
constexpr int kBucketBits = 7;
constexpr int kBucketExpLo = 104;
/// Buckets each program of build_code_buckets fills.
constexpr int kBucketPrep = 256;
/// Both halves (negative and positive x).
constexpr size_t kBucketCount = size_t(2) * (size_t(32) << kBucketBits);

/// The tables' shape as the constexprs of the kernels that build or read
/// them (BITS, ELO, PREP), added to `c`.
inline std::map<std::string, ConstexprValue> withBucketShape(std::map<std::string, ConstexprValue> c) {
  c["BITS"] = int64_t(kBucketBits);
  c["ELO"] = int64_t(kBucketExpLo);
  c["PREP"] = int64_t(kBucketPrep);
  return c;
}

class CodeBuckets {
public:
  explicit CodeBuckets(Context &ctx);
  /// Fills the tables from `code` (256 floats) on `stream`. Where they do not
  /// hold (a book with thresholds closer than a bucket), `bad()` says so to
  /// the kernels, which then take the binary search.
  void build(const Stream &stream, const DeviceBuffer<float> &code);
  const DeviceBuffer<uint8_t> &buckets() const { return buckets_; }
  const DeviceBuffer<int32_t> &bad() const { return bad_; }

private:
  Context *ctx_;
  std::optional<Kernel> kernel_;  // compiled on the first build
  DeviceBuffer<uint8_t> buckets_;
  DeviceBuffer<int32_t> bad_;
};

} // namespace tessera::quant

#endif
