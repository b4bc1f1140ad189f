// CompileOptions: the one description of how a kernel is compiled. The CLI,
// the JIT, the pipeline driver, every pass (through module attributes, see
// docs/architecture.md), the kernel cache and the autotuner all read this
// struct; it is validated in one place (validate()) and keyed in one place
// (cacheFields() / hash()). Free of MLIR and of exceptions.
#ifndef TESSERA_COMPILEOPTIONS_H
#define TESSERA_COMPILEOPTIONS_H

#include "tessera/Types.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

/// An NVPTX target, parsed once from its name: sm_80, sm_90, sm_90a, sm_100f.
struct Target {
  /// Compute capability times ten (90 for sm_90a).
  int sm = 90;
  /// The `a` suffix: instructions of exactly this capability (sm_90a's wgmma,
  /// setmaxnreg, TMA as the lowering uses it).
  bool archSpecific = false;
  /// The `f` suffix: the family-specific feature set (sm_100f).
  bool familySpecific = false;

  /// "sm_NN", "sm_NNN", optionally followed by `a` or `f`; nothing otherwise.
  static std::optional<Target> parse(const std::string &name);
  /// The name LLVM and ptxas use ("sm_90a").
  std::string name() const;

  /// cp.async and mma.sync with bf16 (sm_80 and later).
  bool hasCpAsync() const { return sm >= 80; }
  /// wgmma, TMA tensor copies and mbarrier transaction counts, as lowered.
  bool hasWgmma() const { return sm == 90 && archSpecific; }
  /// cvt between f32 / f16 and the 8-bit floats e4m3 and e5m2 (sm_89 and later).
  bool hasFloat8() const { return sm >= 89; }
  /// The most dynamic shared memory one block may opt into on this
  /// capability (the CUDA programming guide's table): sm_90/sm_100 232,448 B,
  /// sm_80/sm_87 166,912, sm_86/sm_89/sm_120 101,376, sm_75 65,536, sm_70 98,304.
  /// The lowering plans within it; at launch the device's own attribute rules.
  int64_t maxSharedBytesPerBlock() const;

  bool operator==(const Target &o) const {
    return sm == o.sm && archSpecific == o.archSpecific && familySpecific == o.familySpecific;
  }
  bool operator!=(const Target &o) const { return !(*this == o); }
};

/// How far the pipeline driver takes a kernel (compileFile, compileSource).
enum class Stage {
  Tile,   ///< verified, canonicalized tile IR
  Layout, ///< tile IR with GPU layouts (tgpu encodings, convert_layout)
  GpuIR,  ///< per-thread IR over arith/scf/llvm/nvvm
  LLVMIR, ///< optimized LLVM IR for NVPTX, libdevice linked
  PTX,    ///< PTX assembly
};
/// "tile", "layout", "gpu-ir", "llvm", "ptx".
const char *stageName(Stage s);

struct CompileOptions {
  // --- What the kernel is: specialization of the source. ---
  /// Values for constexpr parameters, overriding the kernels' defaults.
  std::map<std::string, ConstexprValue> constexprs;
  /// Facts assumed about integer (i32/i64) runtime parameters, by name
  /// (specialization, see docs/api.md). EqualsOne replaces the parameter's
  /// uses by the constant 1; DivisibleBy16 lets the axis analysis treat it as
  /// a multiple of 16. Parameters stay in the signature either way. A fact on
  /// a name that no compiled kernel has, or on a non-integer parameter, is an
  /// error.
  std::map<std::string, ArgFact> argFacts;

  // --- How it is compiled: the code-generation switches. ---
  /// The GPU to generate code for. Unset: the context's device in the JIT
  /// (sm_90a on a Hopper GPU, so that `dot` can use wgmma), sm_90 elsewhere.
  std::optional<Target> target;
  /// Warps per program instance on the GPU (a power of two, 1..32).
  int numWarps = 4;
  /// Shared-memory stages of the software pipeline for loops that load the
  /// operands of `dot` (1 = no pipelining, at most 8). An upper bound: fewer
  /// (down to 3) are used when they do not fit in shared memory.
  int numStages = 4;
  /// On sm_90a, let a pipelined dot loop run its copies in a producer
  /// warpgroup added to the block (warp specialization), with the num_warps
  /// warps only waiting on mbarriers and issuing wgmma. Used when the loop's
  /// copies need no element-wise path and nothing before it touches memory;
  /// the remark says so. false: every warp copies and multiplies.
  bool warpSpecialize = true;
  /// Load dot operands with TMA where possible (sm_90a): in warp-specialized
  /// dot loops, and in staged dot loops whose two warpgroups take turns
  /// (FlashAttention's forward), where thread 0 then issues every copy.
  bool tma = true;
  /// On sm_90a, a kernel that is one output tile (index arithmetic, a
  /// warp-specialized dot loop on 16- or 8-bit operands, stores; tf32 dots
  /// measured slower so) is launched persistent: one block per
  /// SM walks the grid's x programs, its producers copying the next tile while
  /// the consumers store the last. The lowered kernel then takes the launched
  /// grid's x size as an extra i32 after its arguments (before any tensor
  /// maps); tessera::Kernel launches it so (CompileResult::persistentKernels).
  bool persistentLaunch = true;
  /// Registers a thread may use (PTX `.maxnreg`; Triton's `maxnreg`): 0 for
  /// ptxas's choice, else 16 to 255. A lower cap trades spills for blocks per
  /// SM (occupancy). Warp-specialized dot loops split registers themselves
  /// and ignore it.
  int maxRegisters = 0;
  /// Programs per thread-block cluster along the grid's x axis (PTX
  /// `.reqnctapercluster`; sm_90+): 1 (no clusters), 2 or 4. The grid's x size
  /// must then be a multiple of it. A warp-specialized dot loop whose operand
  /// A is loaded with `multicast=True` then copies A once per cluster, each
  /// program a slice, multicast to all (docs/performance.md, "Clusters").
  int clusterSize = 1;
  /// Run canonicalize + CSE + loop-invariant code motion after IR generation.
  bool optimize = true;

  // --- Where the source comes from and what comes out (not part of the key). ---
  /// Directories searched for `from "x.tile" import ...` after the importing
  /// file's own directory.
  std::vector<std::string> importPaths;
  /// Print CompileResult::tileIR with its source locations (`loc(...)`), so
  /// that a consumer of the text (the interpreter) can name .tile lines.
  bool debugInfo = false;

  /// The target the compiler uses: `target`, else sm_90.
  Target resolvedTarget() const { return target.value_or(Target{}); }
  /// Empty when the options are valid; else one sentence naming the option
  /// and the value, e.g. "num_warps must be a power of two from 1 to 32, got 3".
  std::string validate() const;
  /// Every field that changes generated code, as (name, value) text pairs in a
  /// fixed order: the code-generation switches, the target, then constexprs
  /// and argument facts (other than None) sorted by name. The kernel cache
  /// keys on these.
  std::vector<std::pair<std::string, std::string>> cacheFields() const;
  /// A digest of cacheFields() (64 hex digits): equal options, equal hash.
  std::string hash() const;
};

} // namespace tessera

#endif
