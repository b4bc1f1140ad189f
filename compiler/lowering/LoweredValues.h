// The lowered form of every tile-IR value of one kernel (Lowered: a scalar,
// registers in a layout, or a virtual tile recomputed per element), and the
// scoped memo of per-element values: an element computed inside a region
// (a loop body, a branch) is reused only within it.
#ifndef TESSERA_LOWERING_LOWEREDVALUES_H
#define TESSERA_LOWERING_LOWEREDVALUES_H

#include "analysis/Layout.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace tessera::lowering::detail {
using namespace mlir;
using analysis::Layout;

struct Lowered {
  // Offset: a tile of pointers equal to `base` (a Virtual tile) advanced by the
  // uniform element offset `scalar`; how pipelined loops carry pointer tiles.
  enum Kind { None, Scalar, Dist, Virtual, Offset } kind = None;
  Value scalar;                // Scalar; Offset: the element offset
  Value base;                  // Offset
  SmallVector<Value> regs;     // Dist: one per slot
  RankedTensorType type;       // tiles
  std::optional<Layout> layout; // Dist: when not the canonical blocked layout
};

class LoweredValues {
public:
  /// The lowered form of `v` (None until bound).
  Lowered &operator[](Value v) { return vals_[v]; }

  /// A memoized value: the source value and the coordinates it was taken at.
  using MemoKey = std::pair<void *, std::vector<void *>>;
  /// The innermost scope's value for `key`, or null.
  Value recall(const MemoKey &key) const {
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it)
      if (auto f = it->find(key); f != it->end())
        return f->second;
    return Value();
  }
  /// Remembers `v` for `key` in the current scope.
  void remember(MemoKey key, Value v) { memo_.back()[std::move(key)] = v; }
  void pushScope() { memo_.emplace_back(); }
  void popScope() { memo_.pop_back(); }

private:
  DenseMap<Value, Lowered> vals_;
  std::vector<std::map<MemoKey, Value>> memo_;
};

} // namespace tessera::lowering::detail

#endif
