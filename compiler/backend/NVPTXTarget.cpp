#include "NVPTXTarget.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/OptimizationLevel.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <mutex>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

namespace tessera {

namespace {

/// "sm_90a" -> 90; 0 when the name is not sm_<digits>[suffix].
int smNumber(const std::string &arch) {
  if (arch.rfind("sm_", 0) != 0)
    return 0;
  int n = 0;
  size_t i = 3;
  for (; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i)
    n = n * 10 + (arch[i] - '0');
  return i == 3 ? 0 : n;
}

} // namespace

int ptxVersionFor(const TargetOptions &options) {
  if (options.ptxVersion > 0)
    return options.ptxVersion;
  // 8.5 (CUDA 12.5) covers sm_80..sm_90a; newer archs need newer ISAs.
  int sm = smNumber(options.arch);
  int v = 85;
  if (sm >= 100)
    v = 86;
  if (sm == 120)
    v = 87;
  if (sm == 103 || sm == 121)
    v = 88;
  if (sm >= 110 && sm != 120 && sm != 121)
    v = 90;
  if (!options.arch.empty() && options.arch.back() == 'f' && v < 88)
    v = 88;
  return v;
}

namespace detail {

static void initNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

std::unique_ptr<llvm::TargetMachine> createNVPTXTargetMachine(const TargetOptions &options,
                                                              std::string &error) {
  initNVPTX();
  llvm::Triple triple(kNVPTXTriple);
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target) {
    error = "NVPTX target not available: " + lookupError;
    return nullptr;
  }
  int ptx = ptxVersionFor(options);
  std::string features = "+ptx" + std::to_string(ptx);
  {
    // Probe with a known CPU: creating one for an unknown CPU prints a warning.
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(triple, "sm_80", features));
    if (!sti || !sti->isCPUStringValid(options.arch)) {
      error = "unknown GPU architecture '" + options.arch + "' (expected e.g. sm_80, sm_90, sm_90a)";
      return nullptr;
    }
    if (!sti->checkFeatures(features)) {
      error = "PTX ISA version " + std::to_string(ptx / 10) + "." + std::to_string(ptx % 10) +
              " is not supported by this LLVM";
      return nullptr;
    }
  }
  llvm::TargetOptions llvmOptions;
  llvmOptions.AllowFPOpFusion =
      options.fpContract ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  llvm::CodeGenOptLevel level = options.optLevel <= 0   ? llvm::CodeGenOptLevel::None
                                : options.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                : options.optLevel == 2 ? llvm::CodeGenOptLevel::Default
                                                        : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, options.arch, features, llvmOptions, std::nullopt, std::nullopt, level));
  if (!tm)
    error = "cannot create the NVPTX target machine for " + options.arch;
  return tm;
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &tm, int optLevel) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // The constructor applies tm.registerPassBuilderCallbacks (NVVMReflect,
  // NVPTX alias analysis, address-space inference).
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (optLevel <= 0) {
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else {
    llvm::OptimizationLevel level = optLevel == 1   ? llvm::OptimizationLevel::O1
                                    : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                    : llvm::OptimizationLevel::O3;
    mpm = pb.buildPerModuleDefaultPipeline(level);
  }
  mpm.run(module, mam);
}

bool generatePTX(llvm::Module &module, llvm::TargetMachine &tm, std::string &ptx,
                 std::string &error) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile)) {
    error = "the NVPTX target cannot emit assembly";
    return false;
  }
  pm.run(module);
  ptx.assign(buffer.begin(), buffer.end());
  return true;
}

} // namespace detail
} // namespace tessera
