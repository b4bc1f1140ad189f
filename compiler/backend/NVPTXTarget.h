// The LLVM NVPTX target: target machine for an arch, the O0-O3 pipeline
// (with NVPTX's own callbacks, e.g. NVVMReflect), and PTX code generation.
#ifndef TESSERA_BACKEND_NVPTXTARGET_H
#define TESSERA_BACKEND_NVPTXTARGET_H

#include "tessera/CodeGen.h"

#include <memory>
#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace tessera {
namespace detail {

inline constexpr const char *kNVPTXTriple = "nvptx64-nvidia-cuda";

/// A target machine for options.arch with PTX ISA ptxVersionFor(options).
/// Null + `error` for an arch LLVM does not know.
std::unique_ptr<llvm::TargetMachine> createNVPTXTargetMachine(const TargetOptions &options,
                                                              std::string &error);

/// Runs LLVM's default module pipeline at `optLevel` (0..3) on `module`.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &tm, int optLevel);

/// NVPTX code generation. False + `error` when the target cannot emit it.
bool generatePTX(llvm::Module &module, llvm::TargetMachine &tm, std::string &ptx,
                 std::string &error);

} // namespace detail
} // namespace tessera

#endif
