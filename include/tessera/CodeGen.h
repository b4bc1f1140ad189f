// The PTX back end's public entry points: an MLIR module of per-thread scalar
// code (func.func kernels over arith/math/scf/cf/llvm/nvvm ops) -> LLVM IR ->
// PTX, and PTX -> cubin through ptxas. No MLIR or LLVM types appear here, so
// tools and tests that link only libtessera.so can include it.
//
// Input contract (what the tile -> scalar lowering produces):
//  - a builtin.module holding one `func.func` per kernel, marked with the unit
//    attribute `tessera.kernel` (preferred), `nvvm.kernel` or `gpu.kernel`.
//    Note: the NVVM verifier rejects `nvvm.kernel` on a func.func, so a module
//    carrying it fails mlir::verify and prints in generic form; the back end
//    removes it before verifying. Arguments are scalars (i1..i64, f16, bf16,
//    f32, f64) and `!llvm.ptr<1>` (global) pointers; no results.
//  - dynamic shared memory is an external zero-length llvm.mlir.global in
//    address space 3; `tessera.shared_bytes` is left for the runtime.
//  - `tessera.num_warps = N : i32` on the kernel or on the module gives the
//    block size: the kernel gets `.reqntid 32*N`.
//  - bodies use arith, math, scf, cf, func, index, ub, vector, gpu index ops,
//    llvm and nvvm ops.
#ifndef TESSERA_CODEGEN_H
#define TESSERA_CODEGEN_H

#include <string>
#include <vector>

namespace tessera {

struct TargetOptions {
  /// NVPTX processor: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100a, ...
  std::string arch = "sm_90";
  /// Warps per block when neither the kernel nor the module carries
  /// `tessera.num_warps`; <= 0 emits no block-size directive.
  int numWarps = 4;
  /// LLVM optimization level, 0..3.
  int optLevel = 3;
  /// PTX ISA version times ten (85 = PTX 8.5); 0 picks one for the arch
  /// (8.5 for sm_8x/sm_90/sm_90a, higher where an arch needs it).
  int ptxVersion = 0;
  /// Fuse mul+add into fma (nvcc's default --fmad=true).
  bool fpContract = true;
  /// Flush f32 denormals to zero (nvcc's default is off: __CUDA_FTZ = 0).
  bool flushDenormals = false;
  /// libdevice bitcode; empty = $TESSERA_LIBDEVICE, else
  /// /usr/local/cuda/nvvm/libdevice/libdevice.10.bc. Only read when the
  /// module calls a libdevice (__nv_*) function.
  std::string libdevicePath;
};

/// Lowers `mlirText` (the input contract above) to LLVM IR text for NVPTX,
/// with libdevice linked and the module optimized at `optLevel`. On failure
/// returns false and sets `error` (MLIR diagnostics with locations, or
/// LLVM's message); never aborts the process. `bufferName` names the text in
/// diagnostics ("name:line:col: error: ...").
bool emitLLVMIR(const std::string &mlirText, const TargetOptions &options, std::string &out,
                std::string &error, const std::string &bufferName = "<mlir>");
/// Same as emitLLVMIR, then NVPTX code generation: `out` is PTX text.
bool emitPTX(const std::string &mlirText, const TargetOptions &options, std::string &out,
             std::string &error, const std::string &bufferName = "<mlir>");

/// The PTX ISA version (times ten) used for `options` (resolves ptxVersion = 0).
int ptxVersionFor(const TargetOptions &options);
/// The libdevice path `options` resolves to (option, $TESSERA_LIBDEVICE, default).
std::string libdevicePathFor(const TargetOptions &options);

/// ptxas: $TESSERA_PTXAS, then /usr/local/cuda/bin/ptxas, then `ptxas` on
/// PATH. Empty when none is found.
std::string findPtxas();

/// Assembles `ptx` for `arch` (e.g. "sm_90") with `ptxas -v` in a temporary
/// directory. Returns false (cubin empty) when ptxas is missing or rejects
/// the PTX. `log` gets ptxas's output either way (the -v resource report on
/// success, the errors on failure).
bool assembleCubin(const std::string &ptx, const std::string &arch, std::string &cubin,
                   std::string &log, int optLevel = 3);

/// One kernel's resources from `ptxas -v`.
struct PtxasKernelInfo {
  std::string name;
  int registers = 0;
  int spillStores = 0; ///< bytes
  int spillLoads = 0;  ///< bytes
  int sharedBytes = 0; ///< static shared memory
  int stackBytes = 0;  ///< stack frame
  int barriers = 0;
  /// Why ptxas serialized the kernel's wgmma instructions (its "Potential
  /// Performance Loss" info: a call in the kernel, too few registers for the
  /// wgmma pipeline, ...); empty when it did not.
  std::string wgmmaSerialized;
};
/// Parses the `ptxas -v` report: one entry per entry function, in order.
std::vector<PtxasKernelInfo> parsePtxasLog(const std::string &log);

} // namespace tessera

#endif
