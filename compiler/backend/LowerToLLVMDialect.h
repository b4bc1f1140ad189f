// Step 1 of PTX emission: per-thread scalar MLIR (arith/math/scf/cf/func/
// index/ub/vector/gpu + llvm/nvvm) -> only the llvm and nvvm dialects, with
// math lowered to libdevice calls and kernels marked for NVVM.
#ifndef TESSERA_BACKEND_LOWERTOLLVMDIALECT_H
#define TESSERA_BACKEND_LOWERTOLLVMDIALECT_H

#include "tessera/CodeGen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace tessera {
namespace detail {

/// Attribute names of the input contract (see tessera/CodeGen.h).
inline constexpr const char *kKernelAttrName = "tessera.kernel";
inline constexpr const char *kNumWarpsAttrName = "tessera.num_warps";
/// Dynamic shared memory a kernel needs at launch (read by the runtime, not here).
inline constexpr const char *kSharedBytesAttrName = "tessera.shared_bytes";
/// On a kernel argument: a `__grid_constant__` byval parameter (a TMA tensor map).
inline constexpr const char *kGridConstantAttrName = "tessera.grid_constant";
/// On a kernel: one TensorMapSpec text per tensor-map parameter, in order.
inline constexpr const char *kTensorMapsAttrName = "tessera.tensor_maps";

/// Converts `module` in place. Kernels get `nvvm.kernel` and, when a block
/// size is known, `nvvm.reqntid`. Failures are reported as MLIR diagnostics
/// on the module's context.
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module, const TargetOptions &options);

} // namespace detail
} // namespace tessera

#endif
