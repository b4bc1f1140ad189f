// The pipeline driver: one PassManager list from tile IR to GPU IR, then the
// PTX back end, stopping at the stage asked for.
//
//   front end (Frontend.h)            source -> verified tile IR
//   tessera-widen-float8              arithmetic on 8-bit floats in f32
//   tessera-substitute-induction-variables, canonicalize, CSE,
//   LICM (CompileOptions::optimize)
//   [tile IR snapshot]
//   tessera-set-options               the options as module attributes
//   tessera-assign-layouts            tgpu encodings on tensor-core dots
//   tessera-remove-layout-conversions
//   [layout IR snapshot]
//   tessera-lower-to-nvvm             per-thread arith/scf/llvm/nvvm code
//   [GPU IR snapshot, kernel metadata]
//   back end (compiler/backend)       LLVM IR, PTX
//
// The options reach every later pass as module attributes
// (analysis/ModuleOptions.h), written once by tessera-set-options. Each snapshot prints the module as it is at that point
// in the same run; nothing is printed and parsed again.
#include "Frontend.h"
#include "Passes.h"
#include "analysis/LoopCarried.h"
#include "analysis/TensorMapAttr.h"
#include "backend/PTXEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tessera {
namespace {

/// Prints the module into `out` when it runs: the output of one stage.
struct SnapshotPass : PassWrapper<SnapshotPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SnapshotPass)
  SnapshotPass(std::string *out, bool debugInfo) : out_(out), debugInfo_(debugInfo) {}
  void runOnOperation() override {
    llvm::raw_string_ostream os(*out_);
    OpPrintingFlags flags;
    if (debugInfo_)
      flags.enableDebugInfo();
    getOperation()->print(os, flags);
  }
  std::string *out_;
  bool debugInfo_;
};

/// Records what each kernel's loops carry (analysis/LoopCarried.h).
struct LoopCarriedPass : PassWrapper<LoopCarriedPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LoopCarriedPass)
  LoopCarriedPass(CompileResult *r, int64_t numWarps) : r_(r), numWarps_(numWarps) {}
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      std::vector<std::string> lines = analysis::loopCarriedReport(fn, numWarps_);
      if (!lines.empty())
        r_->loopCarried[fn.getName().str()] = std::move(lines);
    }
  }
  CompileResult *r_;
  int64_t numWarps_;
};

/// The passes from verified tile IR to `stage` (at most GPU IR), with a
/// snapshot of each stage's output into `r`.
void buildPipeline(PassManager &pm, const CompileOptions &options, Stage stage,
                   CompileResult &r) {
  pm.addPass(createTesseraWidenFloat8()); // both back ends compute on f8 in f32
  if (options.optimize) {
    // Integers advanced by a fixed step (block pointers' offsets) as
    // functions of the induction variable, before canonicalization drops
    // the values the loops no longer carry.
    pm.addPass(createTesseraSubstituteInductionVariables());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    // Loop-invariant index math (e.g. `BK * stride_bk`) leaves the loop, so
    // the software pipeliner sees uniform pointer steps.
    pm.addPass(createLoopInvariantCodeMotionPass());
  }
  pm.addPass(std::make_unique<SnapshotPass>(&r.tileIR, options.debugInfo));
  if (stage == Stage::Tile)
    return;
  TesseraSetOptionsOptions set;
  set.target = options.resolvedTarget().name();
  set.numWarps = options.numWarps;
  set.numStages = options.numStages;
  set.warpSpecialize = options.warpSpecialize;
  set.tma = options.tma;
  set.persistentLaunch = options.persistentLaunch;
  set.maxRegisters = options.maxRegisters;
  set.clusterSize = options.clusterSize;
  pm.addPass(createTesseraSetOptions(set));
  pm.addPass(createTesseraAssignLayouts());
  pm.addPass(createTesseraRemoveLayoutConversions());
  pm.addPass(std::make_unique<SnapshotPass>(&r.layoutIR, false));
  pm.addPass(std::make_unique<LoopCarriedPass>(&r, options.numWarps));
  if (stage == Stage::Layout)
    return;
  pm.addPass(createTesseraLowerToNVVMWithRemarks(&r.remarks));
  if (options.optimize)
    pm.addPass(createTesseraSinkThreadIndexMath());
}

/// What the lowering recorded on each kernel: launch metadata for the runtime.
bool collectKernelMetadata(ModuleOp module, CompileResult &r) {
  for (auto fn : module.getOps<func::FuncOp>()) {
    std::string name = fn.getName().str();
    if (auto attr = fn->getAttrOfType<IntegerAttr>("tessera.shared_bytes"))
      r.sharedBytes[name] = attr.getInt();
    if (auto attr = fn->getAttrOfType<IntegerAttr>("tessera.num_warps"))
      r.blockWarps[name] = attr.getInt();
    if (fn->hasAttr("tessera.persistent_grid"))
      r.persistentKernels.insert(name);
    if (auto maps = fn->getAttrOfType<ArrayAttr>("tessera.tensor_maps"))
      for (Attribute a : maps) {
        std::optional<TensorMapSpec> spec = analysis::tensorMapFromAttr(a);
        if (!spec) {
          r.diagnostics = "error: internal compiler error: kernel '" + name +
                          "' has a malformed tensor map\n";
          return false;
        }
        r.tensorMaps[name].push_back(*spec);
      }
  }
  return true;
}

CompileResult compileToStage(const std::string &path, const std::string *text,
                             const std::string &kernel, const CompileOptions &options,
                             Stage stage) {
  CompileResult r;
  if (std::string why = options.validate(); !why.empty()) {
    r.diagnostics = "error: " + why + "\n";
    return r;
  }
  r.target = options.resolvedTarget();
  MLIRContext ctx(MLIRContext::Threading::DISABLED);
  detail::FrontendResult fr = detail::runFrontend(ctx, path, text, kernel, options);
  r.diagnostics = fr.diagnostics;
  r.kernels = fr.kernels;
  r.configSpaces = fr.configSpaces;
  r.sources = fr.sources;
  if (!fr.ok)
    return r;
  ModuleOp module = *fr.module;

  // Errors and remarks of the passes, in the front end's format.
  std::string errors;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        errors += sourcePrefix(d.getLocation()) + "error: " + d.str() + "\n";
      return success();
    });
    PassManager pm(&ctx);
    buildPipeline(pm, options, stage, r);
    if (failed(pm.run(module))) {
      r.diagnostics = errors.empty() ? "error: internal compiler error: a pass failed\n" : errors;
      return r;
    }
    if (stage >= Stage::GpuIR && failed(verify(module))) {
      r.diagnostics = errors.empty() ? "error: GPU lowering produced invalid IR\n" : errors;
      return r;
    }
  }
  if (stage >= Stage::GpuIR) {
    if (!collectKernelMetadata(module, r))
      return r;
    llvm::raw_string_ostream os(r.gpuIR);
    module.print(os);
  }
  if (stage >= Stage::LLVMIR) {
    TargetOptions to;
    to.arch = r.target.name();
    to.numWarps = options.numWarps;
    std::string error;
    bool ok = stage == Stage::LLVMIR ? detail::emitLLVMIR(module, to, r.llvmIR, error)
                                     : detail::emitPTX(module, to, r.ptx, error);
    if (!ok) {
      r.diagnostics = std::string(stage == Stage::LLVMIR ? "LLVM IR" : "PTX") +
                      " generation for " + to.arch + " failed:\n" + error +
                      (error.empty() || error.back() == '\n' ? "" : "\n");
      return r;
    }
  }
  r.ok = true;
  return r;
}

} // namespace

CompileResult compileFile(const std::string &path, const std::string &kernel,
                          const CompileOptions &options, Stage stage) {
  return compileToStage(path, nullptr, kernel, options, stage);
}

CompileResult compileSource(const std::string &source, const std::string &virtualPath,
                            const std::string &kernel, const CompileOptions &options,
                            Stage stage) {
  return compileToStage(virtualPath, &source, kernel, options, stage);
}

} // namespace tessera
