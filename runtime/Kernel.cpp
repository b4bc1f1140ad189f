#include "tessera/Error.h"
#include "tessera/Kernel.h"
#include "tessera/Occupancy.h"

#include <algorithm>
#include <optional>

namespace tessera {

namespace detail {

VariantTable::VariantTable(const KernelSignature &signature, Builder build)
    : build_(std::move(build)) {
  for (size_t i = 0; i < signature.params.size() && params_.size() < 32; ++i) {
    const DType &t = signature.params[i].type;
    if (!takesArgFacts(t) || !signature.params[i].specialize)
      continue;
    params_.push_back(uint32_t(i));
    names_.push_back(signature.params[i].name);
    wide_.push_back(t.scalar == ScalarType::i64);
  }
}

uint64_t VariantTable::keyOf(const std::vector<ArgValue> &args) const {
  uint64_t key = 0;
  for (size_t k = 0; k < params_.size(); ++k) {
    const ArgValue &a = args[params_[k]];
    int64_t v = wide_[k] ? a.as<int64_t>() : int64_t(a.as<int32_t>());
    key |= uint64_t(argFactOf(v)) << (2 * k);
  }
  return key;
}

ArgFacts VariantTable::factsOf(uint64_t key) const {
  ArgFacts facts;
  for (size_t k = 0; k < params_.size(); ++k)
    if (auto f = ArgFact((key >> (2 * k)) & 3); f != ArgFact::None)
      facts[names_[k]] = f;
  return facts;
}

const KernelVariant &VariantTable::get(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = variants_.find(key);
    if (it != variants_.end())
      return it->second;
  }
  // Built outside the lock so that launches of other variants need not wait
  // for a compile; if two threads build the same key, the first one stored wins.
  KernelVariant v = build_(factsOf(key));
  std::lock_guard<std::mutex> lock(mutex_);
  return variants_.emplace(key, std::move(v)).first->second;
}

std::vector<ArgFacts> VariantTable::built() const {
  std::vector<uint64_t> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto &kv : variants_)
      keys.push_back(kv.first);
  }
  std::vector<ArgFacts> out;
  for (uint64_t k : keys)
    out.push_back(factsOf(k));
  return out;
}

} // namespace detail

Kernel::Kernel(Function function, KernelSignature signature, LaunchConfig config)
    : function_(std::move(function)), signature_(std::move(signature)), config_(config) {
  if (config_.numWarps == 0 || config_.numWarps > 32)
    throw Error("kernel '" + signature_.name + "': num_warps must be between 1 and 32, got " +
                std::to_string(config_.numWarps));
}

Kernel::Kernel(std::shared_ptr<detail::VariantTable> variants, KernelSignature signature,
               LaunchConfig config)
    : Kernel(Function(), std::move(signature), config) {
  if (!variants)
    throw Error("kernel '" + signature_.name + "': no variant table");
  variants_ = std::move(variants);
  config_.sharedMemoryBytes = 0;
}

const Function &Kernel::function() const {
  return variants_ ? variants_->get(0).function : function_;
}

detail::KernelVariant Kernel::variantFor(const std::vector<ArgValue> &args) const {
  if (!valid())
    throw Error("launch of an empty Kernel");
  checkLaunchArgs(signature_, args);
  if (!variants_)
    return detail::KernelVariant{function_, config_.sharedMemoryBytes, 0, config_.tensorMaps,
                                 config_.residentBlocks};
  return variants_->get(variants_->keyOf(args));
}

std::vector<ArgFacts> Kernel::builtVariants() const {
  if (!variants_)
    return valid() ? std::vector<ArgFacts>{ArgFacts{}} : std::vector<ArgFacts>{};
  return variants_->built();
}

namespace {
// A persistent kernel's blocks walk the grid's x programs (program_id(0) from
// blockIdx.x in steps of gridDim.x), so about one wave of them is launched
// (with y and z, one wave over all of them); the kernel takes the grid's x
// size after its arguments.
void launchFunction(const Function &f, const Stream &stream, Grid grid, Block block, size_t smem,
                    const std::vector<ArgValue> &args, const std::vector<TensorMapSpec> &maps,
                    unsigned residentBlocks, const LaunchOptions &options) {
  if (!residentBlocks) {
    f.launch(stream, grid, block, smem, args, maps, options);
    return;
  }
  checkLaunchGeometry(f.name(), grid, block);
  std::vector<ArgValue> withGrid = args;
  withGrid.push_back(ArgValue::scalar<int32_t>(int32_t(grid.x)));
  f.launch(stream, detail::persistentGrid(grid, residentBlocks), block, smem, withGrid, maps, options);
}
} // namespace

Grid detail::persistentGrid(Grid grid, unsigned residentBlocks) {
  uint64_t others = uint64_t(grid.y) * grid.z;
  unsigned perX = unsigned(std::max<uint64_t>(1, residentBlocks / std::max<uint64_t>(1, others)));
  grid.x = std::min(grid.x, perX);
  return grid;
}

unsigned detail::residentBlocks(const Function &function, unsigned threads, size_t dynamicSharedBytes) {
  const DeviceInfo &d = function.backend().deviceInfo();
  FunctionAttributes a = function.attributes();
  std::optional<Target> t = Target::parse(d.target());
  int64_t perSM = t ? occupancy(*t, threads, a.numRegisters, int64_t(a.staticSharedBytes + dynamicSharedBytes))
                          .blocksPerSM
                    : 1;
  return unsigned(std::max<int64_t>(1, std::max(1, d.smCount) * std::max<int64_t>(1, perSM)));
}

void Kernel::launchWithArgs(const Stream &stream, Grid grid, const std::vector<ArgValue> &args,
                            const LaunchOptions &options) const {
  if (!valid())
    throw Error("launch of an empty Kernel");
  checkLaunchArgs(signature_, args);
  // The GPU runs whole clusters only; the interpreter says so too.
  if (config_.clusterSize > 1 && grid.x % config_.clusterSize)
    throw Error("kernel '" + signature_.name + "' runs in clusters of " + std::to_string(config_.clusterSize) +
                " programs along x (cluster_size): the grid's x size " + std::to_string(grid.x) +
                " must be a multiple of " + std::to_string(config_.clusterSize));
  if (variants_) {
    const detail::KernelVariant &v = variants_->get(variants_->keyOf(args));
    Block b = v.blockWarps ? Block{v.blockWarps * 32u, 1, 1} : block();
    launchFunction(v.function, stream, grid, b, v.sharedMemoryBytes, args, v.tensorMaps, v.residentBlocks,
                   options);
    return;
  }
  launchFunction(function_, stream, grid, block(), config_.sharedMemoryBytes, args, config_.tensorMaps,
                 config_.residentBlocks, options);
}

} // namespace tessera
