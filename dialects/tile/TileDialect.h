// The `tile` dialect: Tessera's tile-level IR.
#ifndef TESSERA_DIALECT_TILE_TILEDIALECT_H
#define TESSERA_DIALECT_TILE_TILEDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tile/TileDialect.h.inc"
#include "tile/TileEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "tile/TileTypes.h.inc"

#define GET_OP_CLASSES
#include "tile/TileOps.h.inc"

namespace tessera::tile {
/// Shape of a tile; empty for a scalar.
llvm::ArrayRef<int64_t> getShapeOrEmpty(mlir::Type t);
/// `elem` with the shape of `like` (a tile) or `elem` alone (a scalar).
mlir::Type withElementType(mlir::Type like, mlir::Type elem);
/// True for !tile.ptr and tiles of them.
bool isPointerLike(mlir::Type t);
/// The values a load's (isLoad) or store's cacheModifier may take: PTX's
/// cache operators for ld (".ca", ".cg", ".cv") or st (".wb", ".cg", ".cs", ".wt").
llvm::ArrayRef<llvm::StringRef> cacheModifiers(bool isLoad);
/// The values of evictionPolicy: "evict_first", "evict_last", "evict_normal".
llvm::ArrayRef<llvm::StringRef> evictionPolicies();
/// True for the 8-bit float element types, f8E4M3FN and f8E5M2 (the
/// language's f8e4m3 and f8e5m2).
inline bool isFloat8Type(mlir::Type t) { return mlir::isa<mlir::Float8E4M3FNType, mlir::Float8E5M2Type>(t); }
/// An arith.constant for a folded value (both tile dialects' constant
/// materializer), or null when arith cannot hold it.
mlir::Operation *materializeArithConstant(mlir::OpBuilder &builder, mlir::Attribute value,
                                          mlir::Type type, mlir::Location loc);
} // namespace tessera::tile

#endif
