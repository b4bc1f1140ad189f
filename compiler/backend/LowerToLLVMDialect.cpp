#include "LowerToLLVMDialect.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace tessera {
namespace detail {

namespace {

/// Kernels found in the input: name -> threads per block (0 = unknown).
using KernelMap = llvm::StringMap<int>;

/// Reads `tessera.num_warps` (an integer attribute) from `op` into `warps`.
LogicalResult readNumWarps(Operation *op, int &warps) {
  Attribute a = op->getAttr(kNumWarpsAttrName);
  if (!a)
    return success();
  auto ia = dyn_cast<IntegerAttr>(a);
  if (!ia || ia.getInt() < 1 || ia.getInt() > 32)
    return op->emitError() << "'" << kNumWarpsAttrName
                           << "' must be an integer in [1, 32] (at most 1024 threads per block)";
  warps = static_cast<int>(ia.getInt());
  return success();
}

/// Finds the kernels, checks their signatures and strips the input-contract
/// attributes (they mean nothing to the LLVM translation).
LogicalResult collectKernels(ModuleOp module, const TargetOptions &options, KernelMap &kernels) {
  int moduleWarps = options.numWarps;
  if (failed(readNumWarps(module, moduleWarps)))
    return failure();
  module->removeAttr(kNumWarpsAttrName);
  for (Operation &op : module.getBody()->getOperations()) {
    auto fn = dyn_cast<FunctionOpInterface>(&op);
    if (!fn)
      continue;
    // `nvvm.kernel` is only valid on llvm.func (the NVVM verifier rejects it
    // elsewhere); on a func.func it is accepted here and removed before the
    // module is verified.
    bool isKernel = op.hasAttr(kKernelAttrName) ||
                    op.hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) ||
                    op.hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName());
    if (!isKernel) {
      if (op.hasAttr(kNumWarpsAttrName))
        return op.emitError() << "'" << kNumWarpsAttrName << "' on a function that is not a kernel";
      continue;
    }
    if (fn.isExternal())
      return op.emitError() << "kernel '" << fn.getName() << "' has no body";
    if (!fn.getResultTypes().empty())
      return op.emitError() << "kernel '" << fn.getName() << "' must not return values";
    int warps = moduleWarps;
    if (failed(readNumWarps(&op, warps)))
      return failure();
    op.removeAttr(kKernelAttrName);
    op.removeAttr(kNumWarpsAttrName);
    op.removeAttr(gpu::GPUDialect::getKernelFuncAttrName());
    op.removeAttr(kSharedBytesAttrName);
    op.removeAttr(kTensorMapsAttrName);
    if (!isa<LLVM::LLVMFuncOp>(op))
      op.removeAttr(NVVM::NVVMDialect::getKernelFuncAttrName());
    kernels[fn.getName()] = warps > 0 ? warps * 32 : 0;
  }
  if (kernels.empty())
    return module.emitError() << "module has no kernel: mark kernel functions with the unit "
                                 "attribute '"
                              << kKernelAttrName << "'";
  return success();
}

/// The approximate f32 ops as one instruction each, flushing denormals (as
/// CUDA's fast-math intrinsics and Triton, whose libdevice calls run with
/// __CUDA_FTZ set): rsqrt as rsqrt.approx.ftz.f32, a division marked afn
/// (fdiv without ieee_rounding) as a * rcp.approx.ftz.f32(b). Without ftz
/// each takes about five instructions to rescale denormal operands. exp2 as
/// ex2.approx.ftz.f32 (one MUFU.EX2): libdevice's __nv_exp2f is
/// ex2.approx.f32 without ftz, four instructions, a quarter of flash
/// attention's inner loop. Both are within 2 ulp; results below 2^-126 flush.
///
/// A unary f32 op as the one intrinsic named at its registration.
template <class Op> struct F32ToIntrinsic : OpConversionPattern<Op> {
  F32ToIntrinsic(const TypeConverter &converter, MLIRContext *ctx, StringRef intrinsic)
      : OpConversionPattern<Op>(converter, ctx, /*benefit=*/20), intrinsic(intrinsic) {}
  LogicalResult matchAndRewrite(Op op, typename Op::Adaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (!op.getType().isF32())
      return failure();
    rw.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(op, op.getType(), rw.getStringAttr(intrinsic),
                                                 ValueRange{a.getOperand()});
    return success();
  }
  StringRef intrinsic;
};

struct DivApproxFtz : OpConversionPattern<arith::DivFOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(arith::DivFOp op, OpAdaptor a,
                                ConversionPatternRewriter &rw) const override {
    if (!op.getType().isF32() ||
        !arith::bitEnumContainsAll(op.getFastmath(), arith::FastMathFlags::afn))
      return failure();
    Value r = NVVM::RcpApproxFtzF32Op::create(rw, op.getLoc(), rw.getF32Type(), a.getRhs());
    rw.replaceOpWithNewOp<LLVM::FMulOp>(op, a.getLhs(), r);
    return success();
  }
};

/// The high half of an unsigned product as the frontend writes it (umulhi:
/// trunc(shrui(zext a * zext b, w))) becomes `mul.hi.u32` / `mul.hi.u16`.
/// Left to LLVM, an operand known to fit in w bits loses its zext and the
/// multiply stays 64-bit (`mul.lo.s64` plus the high word); ptxas 12.8 (and
/// the driver's JIT) then rewrote `x - d * hi(x * inv)` inside roast_mm_dx's
/// producer loop into an expression that is always 0. The intrinsic is one
/// instruction and keeps the multiply opaque to both.
struct MulHighToNvvm : OpRewritePattern<arith::TruncIOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncIOp op, PatternRewriter &rw) const override {
    auto narrow = dyn_cast<IntegerType>(op.getType());
    if (!narrow || (narrow.getWidth() != 32 && narrow.getWidth() != 16))
      return failure();
    auto shift = op.getIn().getDefiningOp<arith::ShRUIOp>();
    APInt by;
    if (!shift || !matchPattern(shift.getRhs(), m_ConstantInt(&by)) || by != narrow.getWidth())
      return failure();
    auto mul = shift.getLhs().getDefiningOp<arith::MulIOp>();
    if (!mul || cast<IntegerType>(mul.getType()).getWidth() != 2 * narrow.getWidth())
      return failure();
    auto x = mul.getLhs().getDefiningOp<arith::ExtUIOp>();
    auto y = mul.getRhs().getDefiningOp<arith::ExtUIOp>();
    if (!x || !y || x.getIn().getType() != narrow || y.getIn().getType() != narrow)
      return failure();
    const char *name = narrow.getWidth() == 32 ? "llvm.nvvm.mulhi.ui" : "llvm.nvvm.mulhi.us";
    rw.replaceOpWithNewOp<LLVM::CallIntrinsicOp>(op, narrow, rw.getStringAttr(name),
                                                 ValueRange{x.getIn(), y.getIn()});
    return success();
  }
};

/// arith ops that have no direct LLVM lowering are expanded first.
LogicalResult expandArith(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  arith::populateCeilFloorDivExpandOpsPatterns(patterns);
  patterns.add<MulHighToNvvm>(module.getContext());
  return applyPatternsGreedily(module, std::move(patterns));
}

/// Everything except llvm/nvvm ops goes to the llvm dialect in one full
/// conversion, so an op without a lowering is an error naming that op.
LogicalResult convertToLLVM(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  LowerToLLVMOptions llvmOptions(ctx, DataLayout(module));
  LLVMTypeConverter converter(ctx, llvmOptions);
  configureGpuToNVVMTypeConverter(converter);

  RewritePatternSet patterns(ctx);
  // libdevice calls outrank the generic math -> llvm.intr.* patterns: NVPTX
  // cannot select llvm.exp/log/sin/... itself, and libdevice matches CUDA's
  // accuracy for the rest.
  populateLibDeviceConversionPatterns(converter, patterns, /*benefit=*/10);
  patterns.add<F32ToIntrinsic<math::RsqrtOp>>(converter, ctx, "llvm.nvvm.rsqrt.approx.ftz.f");
  patterns.add<F32ToIntrinsic<math::Exp2Op>>(converter, ctx, "llvm.nvvm.ex2.approx.ftz.f32");
  patterns.add<DivApproxFtz>(converter, ctx, /*benefit=*/20);
  arith::populateArithToLLVMConversionPatterns(converter, patterns);
  populateMathToLLVMConversionPatterns(converter, patterns);
  cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
  populateFuncToLLVMConversionPatterns(converter, patterns);
  index::populateIndexToLLVMConversionPatterns(converter, patterns);
  ub::populateUBToLLVMConversionPatterns(converter, patterns);
  populateVectorToLLVMConversionPatterns(converter, patterns);
  populateGpuToNVVMConversionPatterns(converter, patterns);

  LLVMConversionTarget target(*ctx);
  target.addLegalDialect<NVVM::NVVMDialect>();
  // NVPTX cannot select these intrinsics (they would become calls to libm);
  // the math dialect's ops lower to libdevice instead.
  target.addIllegalOp<LLVM::CosOp, LLVM::ExpOp, LLVM::Exp10Op, LLVM::LogOp, LLVM::Log10Op,
                      LLVM::Log2Op, LLVM::PowOp, LLVM::SinOp, LLVM::TanOp>();
  target.addLegalOp<ModuleOp>();
  return applyFullConversion(module, target, std::move(patterns));
}

/// Marks kernels for the NVVM translation: `ptx_kernel` calling convention
/// and the block size (`.reqntid`, which also bounds tid.x for LLVM).
LogicalResult markKernels(ModuleOp module, const KernelMap &kernels) {
  MLIRContext *ctx = module.getContext();
  for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
    auto it = kernels.find(fn.getName());
    if (it == kernels.end())
      continue;
    fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
    // TMA tensor maps are byval parameters read in place (`cvta.param`), not
    // copied to local memory; the attribute is only valid on kernels.
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, kGridConstantAttrName)) {
        fn.removeArgAttr(i, StringAttr::get(ctx, kGridConstantAttrName));
        fn.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(), UnitAttr::get(ctx));
      }
    bool hasBlockSize = fn->hasAttr(NVVM::NVVMDialect::getReqntidAttrName()) ||
                        fn->hasAttr(NVVM::NVVMDialect::getMaxntidAttrName());
    if (it->second > 0 && !hasBlockSize)
      fn->setAttr(NVVM::NVVMDialect::getReqntidAttrName(),
                  DenseI32ArrayAttr::get(ctx, {it->second}));
  }
  return success();
}

/// scf-to-cf leaves an scf.for's `llvm.loop_annotation` on the latch branch
/// as a discardable attribute, which the LLVM translation ignores: moved to
/// the branch's own loop_annotation, it becomes the loop's !llvm.loop.
void attachLoopAnnotations(ModuleOp module) {
  module.walk([](LLVM::BrOp br) {
    if (auto a = br->getAttrOfType<LLVM::LoopAnnotationAttr>("llvm.loop_annotation")) {
      br.setLoopAnnotationAttr(a);
      br->removeAttr("llvm.loop_annotation");
    }
  });
}

} // namespace

LogicalResult lowerToLLVMDialect(ModuleOp module, const TargetOptions &options) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();

  KernelMap kernels;
  if (failed(collectKernels(module, options, kernels)))
    return failure();

  if (failed(verify(module)))
    return failure();

  PassManager pre(ctx);
  pre.addPass(createSCFToControlFlowPass());
  if (failed(pre.run(module)) || failed(expandArith(module)) || failed(convertToLLVM(module)) ||
      failed(markKernels(module, kernels)))
    return failure();
  attachLoopAnnotations(module);

  // nvvm ops that are defined by inline PTX (no intrinsic) become
  // llvm.inline_asm; then the casts left by the conversion fold away.
  PassManager post(ctx);
  post.addPass(createConvertNVVMToLLVMPass());
  post.addPass(createReconcileUnrealizedCastsPass());
  return post.run(module);
}

} // namespace detail
} // namespace tessera
