// The passes of Tessera's pipeline (compiler/driver/Pipeline.cpp runs them in
// this order). Every pass after tessera-set-options reads the compile options
// from the module's attributes (tessera.target, tessera.num_warps, ...), so a
// lit test can state them once and run any single pass.
#ifndef TESSERA_PASSES_TD
#define TESSERA_PASSES_TD

include "mlir/Pass/PassBase.td"

def TesseraSetOptions : Pass<"tessera-set-options", "mlir::ModuleOp"> {
  let summary = "Record the compile options on the module, as the driver does";
  let description = [{
    Writes tessera.target, tessera.num_warps, tessera.num_stages,
    tessera.warp_specialize, tessera.tma, tessera.persistent_launch and (when set)
    tessera.max_registers on the module, after validating
    them as CompileOptions::validate() does. The driver sets the same
    attributes from its CompileOptions; this pass lets tessera-opt do it.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90\"",
           "NVPTX target, e.g. sm_80, sm_90a">,
    Option<"numWarps", "num-warps", "int", /*default=*/"4", "warps per block">,
    Option<"numStages", "num-stages", "int", /*default=*/"4",
           "shared-memory stages of dot loops">,
    Option<"warpSpecialize", "warp-specialize", "bool", /*default=*/"true",
           "producer warpgroup for pipelined dot loops (sm_90a)">,
    Option<"tma", "tma", "bool", /*default=*/"true",
           "TMA tensor maps for dot operands (sm_90a)">,
    Option<"persistentLaunch", "persistent-launch", "bool", /*default=*/"true",
           "launch one-tile matmul kernels persistent (sm_90a)">,
    Option<"maxRegisters", "max-registers", "int", /*default=*/"0",
           "registers a thread may use (.maxnreg; 0: no cap)">,
    Option<"clusterSize", "cluster-size", "int", /*default=*/"1",
           "programs per thread-block cluster along x (sm_90+)">,
  ];
}

def TesseraWidenFloat8 : Pass<"tessera-widen-float8", "mlir::ModuleOp"> {
  let summary = "Compute arithmetic on 8-bit floats in f32";
  let description = [{
    f8e4m3 and f8e5m2 are storage types: tensor cores multiply them, and
    the GPU converts them to and from f32 (cvt), but nothing else computes
    on them. Every arith or math op with an 8-bit float operand or result
    (other than the conversions, select and constants) becomes the same op
    on f32, its operands widened (exactly) and a float result rounded back
    to the 8-bit type. Both back ends run the result, so they agree.
  }];
}

def TesseraSubstituteInductionVariables
    : Pass<"tessera-substitute-induction-variables", "mlir::ModuleOp"> {
  let summary = "Write integers that a loop advances by a fixed step as functions of its induction variable";
  let description = [{
    An scf.for with a constant positive step that carries an integer x and
    yields x + d, with d defined outside the loop, reads x in iteration j
    (induction variable lb + j * step) as x0 + j * d. When d is a constant
    multiple of the step, or the step is 1, that is x0 + (iv - lb) * (d /
    step): uses of x in the body take that value, uses of the loop's result
    take x0 + trips * d. The pass then drops every iter_arg the loop passes
    through unchanged (uses read its initial value), keeping the front end's
    names of the carried variables (tile.carried) in step. Block pointers (make_block_ptr, advance)
    produce such values; without them carried, the software pipeliner and
    the TMA analysis see pointer tiles indexed by the induction variable.
  }];
}

def TesseraAssignLayouts : Pass<"tessera-assign-layouts", "mlir::ModuleOp"> {
  let summary = "Give tensor-core dots their mma and dot-operand layouts, with conversions around them";
  let dependentDialects = ["tessera::tgpu::TileGPUDialect"];
}

def TesseraRemoveLayoutConversions
    : Pass<"tessera-remove-layout-conversions", "mlir::ModuleOp"> {
  let summary = "Remove layout conversions that a cheaper form makes needless";
  let dependentDialects = ["tessera::tgpu::TileGPUDialect"];
}

def TesseraLowerToNVVM : Pass<"tessera-lower-to-nvvm", "mlir::ModuleOp"> {
  let summary = "Lower tile kernels with GPU layouts to per-thread arith/scf/llvm/nvvm code";
  let description = [{
    Each tile.kernel function becomes a func.func marked tessera.kernel, with
    tessera.num_warps (the block's warps, producer warps included),
    tessera.shared_bytes (dynamic shared memory) and, for TMA loads,
    tessera.tensor_maps. Layouts that tessera-assign-layouts did not decide
    are chosen here (blocked); remarks say how each dot loop was lowered.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

def TesseraSinkThreadIndexMath
    : Pass<"tessera-sink-thread-index-math", "mlir::ModuleOp"> {
  let summary = "Move per-thread index arithmetic from the kernel's entry down to its first use";
  let description = [{
    The lowering computes layout coordinates once, at the kernel's entry.
    Pure top-level ops that read at most one value other than constants and
    kernel parameters move down to just before the first top-level op that
    uses them, when a loop or 256 ops lie between, so that they are not live
    across code that does not read them.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

#endif
