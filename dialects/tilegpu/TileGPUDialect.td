#ifndef TILEGPU_DIALECT_TD
#define TILEGPU_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TileGPU_Dialect : Dialect {
  let name = "tgpu";
  let cppNamespace = "::tessera::tgpu";
  let summary = "Tile IR with GPU layouts: how each tile is spread over threads";
  let description = [{
    A tile (ranked tensor) without an encoding is in the canonical blocked
    layout: each thread owns contiguous vectors of up to four elements along
    the last dimension, the block's threads cover the tile in row-major order.
    Encodings name the other layouts, and `tgpu.convert_layout` moves a tile
    between layouts (through shared memory when the registers must move).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::tessera::tile::TileDialect", "::mlir::arith::ArithDialect"];
}

#endif
