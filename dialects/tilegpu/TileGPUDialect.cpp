#include "tilegpu/TileGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tessera::tgpu;

#include "tilegpu/TileGPUDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tilegpu/TileGPUAttrs.cpp.inc"

namespace {
// Short aliases (#mma, #opA, #opB, #rows) keep printed tiles readable.
struct TileGPUAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<MmaEncodingAttr>(attr)) {
      os << "mma";
      return AliasResult::OverridableAlias;
    }
    if (auto d = dyn_cast<DotOperandEncodingAttr>(attr)) {
      os << (d.getOpIdx() == 0 ? "opA" : "opB");
      return AliasResult::OverridableAlias;
    }
    if (auto sl = dyn_cast<SliceEncodingAttr>(attr)) {
      os << (sl.getDim() == 1 ? "rows" : "cols");
      return AliasResult::OverridableAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void TileGPUDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tilegpu/TileGPUAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tilegpu/TileGPUOps.cpp.inc"
      >();
  addInterfaces<TileGPUAsmInterface>();
}

Operation *TileGPUDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                               Location loc) {
  return tessera::tile::materializeArithConstant(builder, value, type, loc);
}

LogicalResult MmaEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                      unsigned version, unsigned warps, bool transposed) {
  if (version != 2 && version != 3)
    return emitError() << "mma version must be 2 (mma.sync) or 3 (wgmma), got " << version;
  if (warps == 0 || (warps & (warps - 1)))
    return emitError() << "mma warps must be a power of two, got " << warps;
  if (version == 3 && warps % 4)
    return emitError() << "wgmma needs whole warpgroups (warps a multiple of 4), got " << warps;
  if (transposed && version != 3)
    return emitError() << "only the wgmma layout (version 3) has a transposed form";
  return success();
}

LogicalResult DotOperandEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                             unsigned opIdx, MmaEncodingAttr parent) {
  if (opIdx > 1)
    return emitError() << "dot operand index must be 0 (A) or 1 (B), got " << opIdx;
  if (!parent)
    return emitError() << "dot operand needs its dot's mma layout";
  return success();
}

LogicalResult SliceEncodingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                        unsigned dim, MmaEncodingAttr parent) {
  if (dim > 1)
    return emitError() << "a slice of a 2-D mma layout removes dim 0 (a column vector) or 1 (a "
                          "row vector), got dim " << dim;
  if (!parent || parent.getVersion() != 3 || parent.getTransposed())
    return emitError() << "a slice needs a wgmma (version 3, not transposed) parent layout";
  return success();
}
