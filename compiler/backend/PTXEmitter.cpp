#include "PTXEmitter.h"

#include "FatalErrorGuard.h"
#include "Libdevice.h"
#include "LowerToLLVMDialect.h"
#include "NVPTXTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <cstdlib>

using namespace mlir;

namespace tessera {

std::string libdevicePathFor(const TargetOptions &options) {
  if (!options.libdevicePath.empty())
    return options.libdevicePath;
  if (const char *env = std::getenv("TESSERA_LIBDEVICE"); env && *env)
    return env;
  return detail::kDefaultLibdevicePath;
}

namespace detail {

void registerBackendDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, math::MathDialect, scf::SCFDialect, cf::ControlFlowDialect,
                  func::FuncDialect, index::IndexDialect, ub::UBDialect, vector::VectorDialect,
                  gpu::GPUDialect, LLVM::LLVMDialect, NVVM::NVVMDialect>();
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

std::string formatLocation(Location loc) {
  auto fl = loc->findInstanceOf<FileLineColLoc>();
  if (!fl || fl.getLine() == 0)
    return "";
  return (fl.getFilename().getValue() + ":" + llvm::Twine(fl.getLine()) + ":" +
          llvm::Twine(fl.getColumn()) + ": ")
      .str();
}

namespace {

/// Collects MLIR errors (with their notes) as "file:line:col: error: msg".
class MLIRErrorCollector {
public:
  explicit MLIRErrorCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error)
            append(d, "error");
          return success();
        }) {}

  std::string take(const char *fallback) {
    return text.empty() ? std::string(fallback) : std::move(text);
  }

private:
  void append(Diagnostic &d, const char *kind) {
    llvm::raw_string_ostream os(text);
    if (!text.empty())
      os << "\n";
    os << formatLocation(d.getLocation()) << kind << ": " << d.str();
    for (Diagnostic &note : d.getNotes()) {
      std::string msg = note.str();
      // MLIR's "see current operation: <generic dump>" notes are noise here.
      if (llvm::StringRef(msg).starts_with("see current operation"))
        continue;
      os << "\n" << formatLocation(note.getLocation()) << "note: " << msg;
    }
  }

  std::string text;
  ScopedDiagnosticHandler handler;
};

/// The LLVM side of one compilation. Leaked, not destroyed, when LLVM
/// crashes half-way (its state is then unknown).
struct LLVMState {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::Module> module;
  std::string errors;

  LLVMState() {
    context.setDiagnosticHandlerCallBack(
        [](const llvm::DiagnosticInfo *di, void *self) {
          if (di->getSeverity() != llvm::DS_Error)
            return;
          std::string &errs = static_cast<LLVMState *>(self)->errors;
          llvm::raw_string_ostream os(errs);
          if (!errs.empty())
            os << "\n";
          llvm::DiagnosticPrinterRawOStream printer(os);
          di->print(printer);
        },
        this);
  }
};

/// MLIR -> llvm/nvvm dialects -> llvm::Module, on a clone of `input`.
bool lowerAndTranslate(ModuleOp input, const TargetOptions &options, LLVMState &state,
                       std::string &error) {
  MLIRContext *ctx = input.getContext();
  DialectRegistry registry;
  registerBackendDialects(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();

  MLIRErrorCollector errors(ctx);
  OwningOpRef<ModuleOp> module(input.clone());
  if (failed(lowerToLLVMDialect(*module, options))) {
    error = errors.take("lowering to the LLVM dialect failed");
    return false;
  }
  state.module = translateModuleToLLVMIR(*module, state.context, "tessera");
  if (!state.module) {
    error = errors.take("translation to LLVM IR failed");
    return false;
  }
  return true;
}

bool isKernel(const llvm::Function &f) { return f.getCallingConv() == llvm::CallingConv::PTX_Kernel; }

/// Target setup, libdevice, internalization and the optimization pipeline.
bool prepareAndOptimize(LLVMState &state, const TargetOptions &options, std::string &error) {
  llvm::Module &m = *state.module;
  m.setTargetTriple(state.tm->getTargetTriple());
  m.setDataLayout(state.tm->createDataLayout());
  // __nvvm_reflect("__CUDA_FTZ") in libdevice reads this flag.
  m.addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", options.flushDenormals ? 1 : 0);
  if (options.flushDenormals)
    for (llvm::Function &f : m)
      if (!f.isDeclaration())
        f.addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");

  if (needsLibdevice(m)) {
    if (!linkLibdevice(m, libdevicePathFor(options), error))
      return false;
    resolvePrecSqrtReflect(m, /*precise=*/true);
  }
  // Only kernels are entry points: everything else (helpers, libdevice) may
  // be inlined and dropped. Globals keep their linkage (host-visible data).
  llvm::internalizeModule(m, [](const llvm::GlobalValue &gv) {
    if (auto *f = llvm::dyn_cast<llvm::Function>(&gv))
      return isKernel(*f);
    return true;
  });

  std::string verifyErrors;
  llvm::raw_string_ostream vos(verifyErrors);
  if (llvm::verifyModule(m, &vos)) {
    error = "internal compiler error: invalid LLVM IR: " + verifyErrors;
    return false;
  }
  optimizeModule(m, *state.tm, options.optLevel);
  if (!state.errors.empty()) {
    error = state.errors;
    return false;
  }
  return true;
}

bool compile(ModuleOp module, const TargetOptions &options, bool wantPTX, std::string &out,
             std::string &error) {
  auto state = std::make_unique<LLVMState>();
  state->tm = createNVPTXTargetMachine(options, error);
  if (!state->tm)
    return false;
  if (!lowerAndTranslate(module, options, *state, error))
    return false;

  bool ok = false;
  std::string result;
  bool survived = runGuarded(
      [&] {
        if (!prepareAndOptimize(*state, options, error))
          return;
        if (!wantPTX) {
          llvm::raw_string_ostream os(result);
          state->module->print(os, nullptr);
          ok = true;
          return;
        }
        if (!generatePTX(*state->module, *state->tm, result, error))
          return;
        if (!state->errors.empty()) {
          error = state->errors;
          return;
        }
        ok = true;
      },
      error);
  if (!survived) {
    (void)state.release();
    return false;
  }
  if (ok)
    out = std::move(result);
  return ok;
}

} // namespace

bool emitLLVMIR(ModuleOp module, const TargetOptions &options, std::string &out,
                std::string &error) {
  return compile(module, options, /*wantPTX=*/false, out, error);
}

bool emitPTX(ModuleOp module, const TargetOptions &options, std::string &out, std::string &error) {
  return compile(module, options, /*wantPTX=*/true, out, error);
}

} // namespace detail
} // namespace tessera
