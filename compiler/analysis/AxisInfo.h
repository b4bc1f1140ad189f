// Axis-info analysis of tile IR: for every integer or pointer value, per
// dimension, how long the runs of consecutive values are (contiguity), what
// power of two divides each run's first value (divisibility, in bytes for
// pointers) and how long runs of equal values are (constancy). The lowering
// uses it to turn per-element accesses into 16-byte vector accesses.
#ifndef TESSERA_ANALYSIS_AXISINFO_H
#define TESSERA_ANALYSIS_AXISINFO_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::scf {
class ForOp;
class IfOp;
} // namespace mlir::scf

namespace tessera::analysis {

struct AxisInfo {
  llvm::SmallVector<int64_t, 4> contiguity;
  llvm::SmallVector<int64_t, 4> divisibility;
  llvm::SmallVector<int64_t, 4> constancy;
  int64_t rank() const { return int64_t(contiguity.size()); }
  bool operator==(const AxisInfo &o) const {
    return contiguity == o.contiguity && divisibility == o.divisibility &&
           constancy == o.constancy;
  }
};

class AxisInfoAnalysis {
public:
  /// Analyzes every op nested in `root` (a kernel function).
  explicit AxisInfoAnalysis(mlir::Operation *root);
  /// Info for `v`; pessimistic when the analysis knows nothing.
  AxisInfo get(mlir::Value v) const;

  static constexpr int64_t kMaxDivisibility = int64_t(1) << 30;
  /// Byte alignment assumed for pointer arguments of a kernel (checked at launch).
  static constexpr int64_t kArgPointerAlignment = 16;
  /// Argument attribute giving an integer argument's known divisibility
  /// (set by IR generation for CompileOptions::argFacts).
  static constexpr const char *kArgDivisibilityAttr = "tile.divisibility";

private:
  /// Dispatches on the op to its transfer function (AxisInfo.cpp).
  void visit(mlir::Operation *op);
  void visitFor(mlir::scf::ForOp f);
  void visitIf(mlir::scf::IfOp i);
  void visitRegionOps(mlir::Region &r);
  void set(mlir::Value v, AxisInfo info);
  AxisInfo pessimistic(mlir::Value v) const;
  llvm::DenseMap<mlir::Value, AxisInfo> infos_;
};

} // namespace tessera::analysis

#endif
