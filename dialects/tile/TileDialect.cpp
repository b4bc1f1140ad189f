#include "tile/TileDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tessera::tile;

#include "tile/TileDialect.cpp.inc"
#include "tile/TileEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "tile/TileTypes.cpp.inc"

void TileDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "tile/TileTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tile/TileOps.cpp.inc"
      >();
}

Operation *TileDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                            Location loc) {
  return materializeArithConstant(builder, value, type, loc);
}

namespace tessera::tile {
ArrayRef<int64_t> getShapeOrEmpty(Type t) {
  if (auto rt = dyn_cast<RankedTensorType>(t))
    return rt.getShape();
  return {};
}

Type withElementType(Type like, Type elem) {
  if (auto rt = dyn_cast<RankedTensorType>(like))
    return RankedTensorType::get(rt.getShape(), elem);
  return elem;
}

bool isPointerLike(Type t) { return isa<PtrType>(mlir::getElementTypeOrSelf(t)); }

Operation *materializeArithConstant(OpBuilder &builder, Attribute value, Type type, Location loc) {
  if (auto typed = dyn_cast<TypedAttr>(value))
    if (arith::ConstantOp::isBuildableWith(typed, type))
      return arith::ConstantOp::create(builder, loc, type, typed);
  return nullptr;
}
} // namespace tessera::tile
