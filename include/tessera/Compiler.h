// The compiler's public entry points: a .tile source -> tile IR, layout IR,
// GPU IR, LLVM IR or PTX, through one pass pipeline (compiler/driver/Pipeline.cpp).
// Errors come back as rendered diagnostics, never as crashes.
#ifndef TESSERA_COMPILER_H
#define TESSERA_COMPILER_H

#include "tessera/CompileOptions.h"
#include "tessera/TensorMapSpec.h"
#include "tessera/Types.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tessera {

struct ConfigSpace; // tessera/Autotune.h (not included: its short names would
                    // clash in programs that say `using namespace tessera;`)

struct CompileResult {
  bool ok = false;
  /// Rendered diagnostics ("file:line:col: error: ..." with source line and caret).
  std::string diagnostics;
  /// Textual tile IR (an MLIR module holding one func.func per kernel).
  std::string tileIR;
  /// One entry per kernel compiled, in source order.
  std::vector<KernelSignature> kernels;
  /// The target the code was generated for (CompileOptions::resolvedTarget()).
  Target target;
  /// From Stage::Layout on: the tile IR after layout assignment and the
  /// removal of needless conversions (tgpu encodings and convert_layout).
  std::string layoutIR;
  /// From Stage::GpuIR on: the module after lowering to scalar arith/scf plus
  /// the llvm and nvvm dialects.
  std::string gpuIR;
  /// Stage::LLVMIR: optimized LLVM IR for NVPTX.
  std::string llvmIR;
  /// Stage::PTX: the PTX of every compiled kernel, in one module.
  std::string ptx;
  /// From Stage::GpuIR on: one "file:line:col: remark: ..." line per loop that
  /// computes a `dot`, saying how it was pipelined or why not.
  std::vector<std::string> remarks;
  /// From Stage::Layout on, per kernel: one line per loop that carries tiles,
  /// naming them with the registers a thread needs for each (what is live
  /// across the loop; `tessera compile --emit=resources` prints it when the
  /// kernel spills).
  std::map<std::string, std::vector<std::string>> loopCarried;
  /// From Stage::GpuIR on: dynamic shared memory each kernel needs at launch, by name.
  std::map<std::string, int64_t> sharedBytes;
  /// From Stage::GpuIR on, per kernel: the warps its block is launched with.
  /// More than num_warps when a dot loop is warp-specialized (a producer
  /// warpgroup is added).
  std::map<std::string, int64_t> blockWarps;
  /// From Stage::GpuIR on, per kernel: the tensor-map parameters the lowering
  /// appended after the kernel's arguments (TMA loads), in order.
  std::map<std::string, std::vector<TensorMapSpec>> tensorMaps;
  /// From Stage::GpuIR on: the kernels lowered persistent
  /// (CompileOptions::persistentLaunch). Each takes the launched grid's x size
  /// as an i32 after its arguments, and runs correctly with any count of
  /// blocks along x; tessera::Kernel launches at most as many as fit at once.
  std::set<std::string> persistentKernels;
  /// (path, text) of the main file and every file it imports (for cache keys).
  std::vector<std::pair<std::string, std::string>> sources;
  /// The config space of every compiled kernel that has an @autotune
  /// decorator, by kernel name (from Stage::Tile on). Its `prune` evaluates
  /// the decorator's prune= expression with the config's constexprs and
  /// switches over the kernel's other constexprs as this compile had them. Include
  /// tessera/Autotune.h to use it.
  std::map<std::string, std::shared_ptr<const ConfigSpace>> configSpaces;
};

/// Compiles kernel `kernel` (every kernel in the file when empty) of `path`
/// up to `stage`; the result holds every output up to that stage.
CompileResult compileFile(const std::string &path, const std::string &kernel,
                          const CompileOptions &options = {}, Stage stage = Stage::Tile);
/// Same, from a string; `virtualPath` names it in diagnostics and anchors imports.
CompileResult compileSource(const std::string &source, const std::string &virtualPath,
                            const std::string &kernel, const CompileOptions &options = {},
                            Stage stage = Stage::Tile);

/// Names of the @kernel functions in a file, in source order (empty + error on bad syntax).
std::vector<std::string> listKernels(const std::string &path, std::string *diagnostics = nullptr);

/// The `tessera-opt` tool: MLIR's opt driver with Tessera's dialects and passes.
int optMain(int argc, char **argv);

/// Compiler version string, part of every cache key.
const char *compilerVersion();

} // namespace tessera

#endif
