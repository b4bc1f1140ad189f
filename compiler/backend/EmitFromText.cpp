// tessera/CodeGen.h's text entry points: parse the MLIR, then PTXEmitter.
#include "PTXEmitter.h"

#include "tile/TileDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tessera {

namespace {

enum class Output { LLVMIR, PTX };

bool emitFromText(const std::string &text, const std::string &bufferName,
                  const TargetOptions &options, Output what, std::string &out,
                  std::string &error) {
  DialectRegistry registry;
  detail::registerBackendDialects(registry);
  // tile ops parse, so that a module the tile lowering left half-done gets
  // "failed to legalize 'tile.x'" rather than a parse error.
  registry.insert<tile::TileDialect>();
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);

  std::string parseErrors;
  OwningOpRef<ModuleOp> module;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      llvm::raw_string_ostream os(parseErrors);
      if (!parseErrors.empty())
        os << "\n";
      os << detail::formatLocation(d.getLocation()) << "error: " << d.str();
      return success();
    });
    // Verification waits until the kernels' marker attributes are read:
    // `nvvm.kernel` on a func.func (what the tile lowering emits) would fail it.
    module = parseSourceString<ModuleOp>(text, ParserConfig(&ctx, /*verifyAfterParse=*/false),
                                         bufferName);
  }
  if (!module) {
    error = parseErrors.empty() ? "cannot parse the MLIR input" : parseErrors;
    return false;
  }
  return what == Output::PTX ? detail::emitPTX(*module, options, out, error)
                             : detail::emitLLVMIR(*module, options, out, error);
}

} // namespace

bool emitLLVMIR(const std::string &mlirText, const TargetOptions &options, std::string &out,
                std::string &error, const std::string &bufferName) {
  return emitFromText(mlirText, bufferName, options, Output::LLVMIR, out, error);
}

bool emitPTX(const std::string &mlirText, const TargetOptions &options, std::string &out,
             std::string &error, const std::string &bufferName) {
  return emitFromText(mlirText, bufferName, options, Output::PTX, out, error);
}

} // namespace tessera
