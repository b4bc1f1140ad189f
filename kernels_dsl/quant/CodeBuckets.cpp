// CodeBuckets: one launch of build_code_buckets (code_buckets.tile).
#include "CodeBuckets.h"

#include "tessera/JIT.h"
#include "tessera/KernelLibrary.h"

namespace tessera::quant {

CodeBuckets::CodeBuckets(Context &ctx)
    : ctx_(&ctx), buckets_(ctx.alloc<uint8_t>(kBucketCount)),
      bad_(ctx.alloc<int32_t>(kBucketCount / kBucketPrep)) {}

void CodeBuckets::build(const Stream &stream, const DeviceBuffer<float> &code) {
  if (!kernel_)
    kernel_.emplace(compile(*ctx_, kernelLibraryPath("quant/code_buckets.tile"),
                            "build_code_buckets", withBucketShape({})));
  kernel_->launch(stream, Grid::of(int64_t(kBucketCount / kBucketPrep)), code, buckets_, bad_);
}

} // namespace tessera::quant
