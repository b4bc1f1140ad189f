// The `tgpu` dialect: tile IR with GPU layouts (encodings on tiles and
// tgpu.convert_layout between them).
#ifndef TESSERA_DIALECT_TILEGPU_TILEGPUDIALECT_H
#define TESSERA_DIALECT_TILEGPU_TILEGPUDIALECT_H

#include "tile/TileDialect.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tilegpu/TileGPUDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tilegpu/TileGPUAttrs.h.inc"

#define GET_OP_CLASSES
#include "tilegpu/TileGPUOps.h.inc"

namespace tessera::tgpu {
/// The tile's mma encoding, or null (blocked, or another layout).
inline MmaEncodingAttr mmaEncodingOf(mlir::Type t) {
  auto rt = mlir::dyn_cast<mlir::RankedTensorType>(t);
  return rt ? mlir::dyn_cast_or_null<MmaEncodingAttr>(rt.getEncoding()) : MmaEncodingAttr();
}
inline SliceEncodingAttr sliceEncodingOf(mlir::Type t) {
  auto rt = mlir::dyn_cast<mlir::RankedTensorType>(t);
  return rt ? mlir::dyn_cast_or_null<SliceEncodingAttr>(rt.getEncoding()) : SliceEncodingAttr();
}
/// `t` (a tile) with `encoding` (null: the blocked layout).
inline mlir::RankedTensorType withEncoding(mlir::RankedTensorType t, mlir::Attribute encoding) {
  return mlir::RankedTensorType::get(t.getShape(), t.getElementType(), encoding);
}
} // namespace tessera::tgpu

#endif
