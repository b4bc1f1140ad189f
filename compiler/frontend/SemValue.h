// What an expression evaluates to during IR generation: either a compile-time
// value (constexpr int/float/bool/dtype/string/tuple) or a run-time MLIR value
// together with its front-end type (which keeps signedness that MLIR drops).
#ifndef TESSERA_FRONTEND_SEMVALUE_H
#define TESSERA_FRONTEND_SEMVALUE_H

#include "AST.h"
#include "tessera/Types.h"

#include "mlir/IR/Value.h"

#include <string>
#include <vector>

namespace tessera::fe {

struct ModuleInfo;

/// Front-end type of a run-time value: element type plus tile shape (empty = scalar).
struct TileType {
  DType elem;
  std::vector<int64_t> shape;
  bool isTile() const { return !shape.empty(); }
  bool operator==(const TileType &o) const { return elem == o.elem && shape == o.shape; }
  bool operator!=(const TileType &o) const { return !(*this == o); }
  /// "f32", "*f32[64, 32]"
  std::string str() const;
};

std::string shapeStr(const std::vector<int64_t> &shape); // "(64, 32)"

/// Whether the integer `v` is a value of the integer type `d` (true for floats).
bool fitsIn(int64_t v, DType d);

struct SemValue {
  enum Kind { Invalid, Int, Float, Bool, DTypeV, Str, None, Tuple, Slice, Runtime, Func, BlockPtr };
  Kind kind = Invalid;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  DType dtype;                 // DTypeV
  std::string s;               // Str
  std::vector<SemValue> elems; // Tuple
  mlir::Value value;           // Runtime
  TileType type;               // Runtime
  const FunctionDef *fn = nullptr; // Func
  const ModuleInfo *fnModule = nullptr;
  // BlockPtr: a block pointer (make_block_ptr) or, with `descriptor`, a
  // tensor descriptor (make_tensor_descriptor). `elems` holds its numbers:
  // the base pointer, then `rank` extents, `rank` strides and (block pointer
  // only) `rank` offsets; `block` is the block shape. A descriptor keeps its
  // padding ("zero" or "nan") in `s`.
  std::vector<int64_t> block;
  bool descriptor = false;

  static SemValue invalid() { return {}; }
  static SemValue ofInt(int64_t v) { SemValue r; r.kind = Int; r.i = v; return r; }
  static SemValue ofFloat(double v) { SemValue r; r.kind = Float; r.f = v; return r; }
  static SemValue ofBool(bool v) { SemValue r; r.kind = Bool; r.b = v; return r; }
  static SemValue ofDType(DType d) { SemValue r; r.kind = DTypeV; r.dtype = d; return r; }
  static SemValue ofStr(std::string v) { SemValue r; r.kind = Str; r.s = std::move(v); return r; }
  static SemValue none() { SemValue r; r.kind = None; return r; }
  static SemValue ofTuple(std::vector<SemValue> e) { SemValue r; r.kind = Tuple; r.elems = std::move(e); return r; }
  static SemValue ofRuntime(mlir::Value v, TileType t) { SemValue r; r.kind = Runtime; r.value = v; r.type = std::move(t); return r; }

  bool ok() const { return kind != Invalid; }
  bool isConst() const { return kind == Int || kind == Float || kind == Bool; }
  bool isRuntime() const { return kind == Runtime; }
  bool isTile() const { return kind == Runtime && type.isTile(); }
  /// A value made of other values, whose numbers a loop carries one by one.
  bool isCompound() const { return kind == Tuple || kind == BlockPtr; }
  // The parts of a BlockPtr.
  size_t rank() const { return block.size(); }
  const SemValue &bpBase() const { return elems[0]; }
  const SemValue &bpShape(size_t d) const { return elems[1 + d]; }
  const SemValue &bpStride(size_t d) const { return elems[1 + rank() + d]; }
  const SemValue &bpOffset(size_t d) const { return elems[1 + 2 * rank() + d]; }
  /// Describes the value for diagnostics: "constexpr int 3", "f32[64]", "tuple of 2".
  std::string describe() const;
};

/// Whether two values are the same: equal constants, the same SSA value.
bool sameSem(const SemValue &a, const SemValue &b);
/// The numbers (constants and run-time values) inside a compound value,
/// depth first: what a loop carries, or an `if` merges, one by one.
void numericLeaves(SemValue &v, std::vector<SemValue *> &out);
/// Whether `a` and `b` differ at most in their numbers: same kinds, tuple
/// lengths, block shapes and non-numeric parts.
bool sameStructure(const SemValue &a, const SemValue &b);

} // namespace tessera::fe

#endif
