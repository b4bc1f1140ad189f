#include "tessera/Compiler.h"

#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"
#include "Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int tessera::optMain(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<tessera::tile::TileDialect, tessera::tgpu::TileGPUDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::scf::SCFDialect, mlir::func::FuncDialect,
                  mlir::cf::ControlFlowDialect, mlir::LLVM::LLVMDialect, mlir::NVVM::NVVMDialect>();
  mlir::func::registerInlinerExtension(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  tessera::registerTesseraPasses();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessera optimizer driver\n", registry));
}
