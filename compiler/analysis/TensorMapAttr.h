// A TensorMapSpec as an MLIR attribute: how the lowering records, on each
// kernel (`tessera.tensor_maps`, one entry per tensor-map parameter), the
// maps the runtime encodes at launch, and how the driver reads them back into
// CompileResult::tensorMaps. A dictionary of integers:
//   {ptr = 0, type = 9, eb = 2, box = array<i64: 64, 128>, swizzle = 128,
//    cols = array<i64: c, arg, coef, arg, coef, ...>, rows = ..., stride = ...}
// where box is (columns, rows) and each extent is the linear form
// c + sum(coef * argument[arg]).
#ifndef TESSERA_ANALYSIS_TENSORMAPATTR_H
#define TESSERA_ANALYSIS_TENSORMAPATTR_H

#include "tessera/TensorMapSpec.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include <optional>

namespace tessera::analysis {

mlir::DictionaryAttr tensorMapAttr(mlir::MLIRContext *ctx, const TensorMapSpec &spec);
/// Nothing when `attr` is not a well-formed tensor-map dictionary.
std::optional<TensorMapSpec> tensorMapFromAttr(mlir::Attribute attr);

} // namespace tessera::analysis

#endif
