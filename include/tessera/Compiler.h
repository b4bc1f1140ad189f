// The compiler's public entry points: source file -> tile IR (and, in later
// stages, PTX). Errors come back as rendered diagnostics, never as crashes.
#ifndef TESSERA_COMPILER_H
#define TESSERA_COMPILER_H

#include "tessera/Types.h"

#include <map>
#include <string>
#include <vector>

namespace tessera {

struct CompileOptions {
  /// Values for constexpr parameters, overriding the kernels' defaults.
  std::map<std::string, ConstexprValue> constexprs;
  /// Directories searched for `from "x.tile" import ...` after the importing
  /// file's own directory.
  std::vector<std::string> importPaths;
  /// Run canonicalize + CSE after IR generation.
  bool optimize = true;
  /// Also lower to per-thread GPU IR (CompileResult::gpuIR).
  bool lowerToGPU = false;
  /// Warps per program instance on the GPU (a power of two, 1..32).
  int numWarps = 4;
  /// NVPTX target the lowering may use instructions of ("sm_80", "sm_90",
  /// "sm_90a"). Empty: only what every supported target has (sm_80).
  /// `wgmma` is used only for "sm_90a".
  std::string arch;
  /// Shared-memory stages of the software pipeline for loops that load the
  /// operands of `dot` (1 = no pipelining). An upper bound: fewer (down to 3)
  /// are used when they do not fit in shared memory.
  int numStages = 4;
  /// On sm_90a, let a pipelined dot loop run its copies in a producer
  /// warpgroup added to the block (warp specialization), with the num_warps
  /// warps only waiting on mbarriers and issuing wgmma. Used when the loop's
  /// copies need no element-wise path and nothing before it touches memory;
  /// the remark says so. false: every warp copies and multiplies.
  bool warpSpecialize = true;
  /// Load dot operands of warp-specialized loops with TMA where possible (sm_90a).
  bool tma = true;
  /// Facts assumed about integer (i32/i64) runtime parameters, by name
  /// (specialization, see docs/api.md). EqualsOne replaces the parameter's
  /// uses by the constant 1; DivisibleBy16 lets the axis analysis treat it as
  /// a multiple of 16. Parameters stay in the signature either way. A fact on
  /// a name that no compiled kernel has, or on a non-integer parameter, is an
  /// error.
  std::map<std::string, ArgFact> argFacts;
  /// Print CompileResult::tileIR with its source locations (`loc(...)`), so
  /// that a consumer of the text (the interpreter) can name .tile lines.
  bool debugInfo = false;
};

struct CompileResult {
  bool ok = false;
  /// Rendered diagnostics ("file:line:col: error: ..." with source line and caret).
  std::string diagnostics;
  /// Textual tile IR (an MLIR module holding one func.func per kernel).
  std::string tileIR;
  /// One entry per kernel compiled, in source order.
  std::vector<KernelSignature> kernels;
  /// With CompileOptions::lowerToGPU: the module after lowering to scalar
  /// arith/scf plus the llvm and nvvm dialects.
  std::string gpuIR;
  /// With lowerToGPU: the tile IR after layout assignment and the removal of
  /// needless conversions (tgpu encodings and convert_layout), before lowering.
  std::string layoutIR;
  /// With lowerToGPU: one "file:line:col: remark: ..." line per loop that
  /// computes a `dot`, saying how it was pipelined or why not.
  std::vector<std::string> remarks;
  /// With lowerToGPU: dynamic shared memory each kernel needs at launch, by name.
  std::map<std::string, int64_t> sharedBytes;
  /// Per kernel: the warps its block is launched with. More than num_warps
  /// when a dot loop is warp-specialized (a producer warpgroup is added).
  std::map<std::string, int64_t> blockWarps;
  /// Per kernel: the TensorMapSpec text of each tensor-map parameter the
  /// lowering appended after the kernel's arguments (TMA loads), in order.
  std::map<std::string, std::vector<std::string>> tensorMaps;
  /// (path, text) of the main file and every file it imports (for cache keys).
  std::vector<std::pair<std::string, std::string>> sources;
};

/// Compiles kernel `kernel` (every kernel in the file when empty) of `path`.
CompileResult compileFile(const std::string &path, const std::string &kernel,
                          const CompileOptions &options = {});
/// Same, from a string; `virtualPath` names it in diagnostics and anchors imports.
CompileResult compileSource(const std::string &source, const std::string &virtualPath,
                            const std::string &kernel, const CompileOptions &options = {});

/// Names of the @kernel functions in a file, in source order (empty + error on bad syntax).
std::vector<std::string> listKernels(const std::string &path, std::string *diagnostics = nullptr);

/// The `tessera-opt` tool: MLIR's opt driver with Tessera's dialects and passes.
int optMain(int argc, char **argv);

/// Compiler version string, part of every cache key.
const char *compilerVersion();

} // namespace tessera

#endif
