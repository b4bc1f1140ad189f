// The dot layout planner: for each dot of a kernel, the accumulator layout
// that its lowering will produce with these options (DotLayoutPlan.cpp says
// how it follows the lowering's order of preference).
#ifndef TESSERA_ANALYSIS_DOTLAYOUTPLAN_H
#define TESSERA_ANALYSIS_DOTLAYOUTPLAN_H

#include "tessera/CompileOptions.h"
#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include <memory>

namespace tessera::analysis {

/// Decides, for the dots of one kernel, the accumulator layout that their
/// lowering produces with these options (DotLayoutPlan.cpp).
class DotLayoutPlanner {
public:
  DotLayoutPlanner(mlir::Operation *kernel, const CompileOptions &options);
  ~DotLayoutPlanner();
  /// Null: FMA in the blocked layout.
  tgpu::MmaEncodingAttr choose(tile::DotOp dot);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tessera::analysis

#endif
