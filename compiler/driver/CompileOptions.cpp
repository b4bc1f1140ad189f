// CompileOptions: parsing of targets, the one validation of the options, and
// the fields the kernel cache and the autotuner key on.
#include "tessera/CompileOptions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <cctype>

namespace tessera {

std::optional<Target> Target::parse(const std::string &name) {
  if (name.rfind("sm_", 0) != 0)
    return std::nullopt;
  size_t i = 3;
  int sm = 0;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i)
    sm = sm * 10 + (name[i] - '0');
  size_t digits = i - 3;
  if (digits < 2 || digits > 3)
    return std::nullopt;
  Target t;
  t.sm = sm;
  if (i < name.size()) {
    if (i + 1 != name.size() || (name[i] != 'a' && name[i] != 'f'))
      return std::nullopt;
    (name[i] == 'a' ? t.archSpecific : t.familySpecific) = true;
  }
  return t;
}

int64_t Target::maxSharedBytesPerBlock() const {
  switch (sm) {
  case 70: case 72: return 96 * 1024;
  case 75: return 64 * 1024;
  case 80: case 87: return 163 * 1024;
  case 86: case 89: case 120: case 121: return 99 * 1024;
  default: break;
  }
  // Hopper and the datacenter Blackwells; anything older than Volta gets 48 KB.
  return sm >= 90 ? 227 * 1024 : 48 * 1024;
}

std::string Target::name() const {
  return "sm_" + std::to_string(sm) + (archSpecific ? "a" : familySpecific ? "f" : "");
}

const char *stageName(Stage s) {
  switch (s) {
  case Stage::Tile: return "tile";
  case Stage::Layout: return "layout";
  case Stage::GpuIR: return "gpu-ir";
  case Stage::LLVMIR: return "llvm";
  case Stage::PTX: return "ptx";
  }
  return "?";
}

std::string CompileOptions::validate() const {
  if (numWarps < 1 || numWarps > 32 || (numWarps & (numWarps - 1)))
    return "num_warps must be a power of two from 1 to 32, got " + std::to_string(numWarps);
  if (numStages < 1 || numStages > 8)
    return "num_stages must be from 1 to 8, got " + std::to_string(numStages);
  if (maxRegisters != 0 && (maxRegisters < 16 || maxRegisters > 255))
    return "maxnreg must be 0 (no cap) or from 16 to 255, got " + std::to_string(maxRegisters);
  if (clusterSize != 1 && clusterSize != 2 && clusterSize != 4)
    return "cluster_size must be 1, 2 or 4, got " + std::to_string(clusterSize);
  return "";
}

std::vector<std::pair<std::string, std::string>> CompileOptions::cacheFields() const {
  std::vector<std::pair<std::string, std::string>> f = {
      {"target", resolvedTarget().name()},
      {"num_warps", std::to_string(numWarps)},
      {"num_stages", std::to_string(numStages)},
      {"warp_specialize", warpSpecialize ? "1" : "0"},
      {"tma", tma ? "1" : "0"},
      {"persistent_launch", persistentLaunch ? "1" : "0"},
      {"optimize", optimize ? "1" : "0"},
  };
  if (maxRegisters) // listed only when set: the keys of uncapped kernels stay as they were
    f.push_back({"max_registers", std::to_string(maxRegisters)});
  if (clusterSize != 1) // likewise
    f.push_back({"cluster_size", std::to_string(clusterSize)});
  for (const auto &[name, v] : constexprs) // std::map: sorted by name
    f.push_back({"constexpr:" + name, constexprToString(v)});
  for (const auto &[name, fact] : argFacts) // None compiles as no fact at all
    if (fact != ArgFact::None)
      f.push_back({"fact:" + name, argFactSuffix(fact)});
  return f;
}

std::string CompileOptions::hash() const {
  // Length-prefixed fields: no two lists serialize to the same bytes.
  std::string text;
  for (const auto &[k, v] : cacheFields())
    text += std::to_string(k.size()) + ":" + k + std::to_string(v.size()) + ":" + v;
  auto digest = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

} // namespace tessera
