// One call of a builtin function: its name and arguments, the argument checks
// that the builtins share, and one handler per builtin or family of builtins.
// IRGen::callBuiltin (Builtins.cpp) looks the name up in a table of handlers
// and runs the one it finds; the handlers live in builtins/*.cpp:
//   Shape.cpp      program_id, num_programs, arange, zeros, full, zeros_like,
//                  broadcast_to, reshape, trans, expand_dims, gather
//   Memory.cpp     load, store, atomic_*
//   BlockPointer.cpp  make_block_ptr, advance, make_tensor_descriptor,
//                  load/store_tensor_descriptor (and load/store through them)
//   DotReduce.cpp  dot, sum, max, min, argmax, argmin, reduce
//   Math.cpp       exp ... ceil, abs, fma, where, maximum, minimum, cdiv,
//                  fdiv, div_rn
//   Misc.cpp       multiple_of, max_contiguous, cast, bitcast, float, int,
//                  static_assert, device_print, device_assert
//   (this header)  debug_barrier, grid_dependency_wait, launch_dependents
//   Composite.cpp  sigmoid, softmax, clamp, flip, join, split, interleave,
//                  cat (written with the builtins above)
// A handler returns the call's value, or SemValue::invalid() after reporting
// a diagnostic. It uses only IRGen's public interface for the builtins.
#ifndef TESSERA_FRONTEND_BUILTINS_BUILTINCALL_H
#define TESSERA_FRONTEND_BUILTINS_BUILTINCALL_H

#include "IRGen.h"
#include "tile/TileDialect.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera::fe::builtins {

using Arg = IRGen::Arg;
using Kws = std::vector<std::pair<std::string, Arg>>;

struct Signature {
  std::vector<const char *> params;
  size_t required;
  bool variadic = false; // extra positional arguments allowed (device_print)
};

inline bool isNone(const Arg &a) { return !a.present || a.value.kind == SemValue::None; }

inline bool isIntegerValue(const SemValue &v) {
  return v.kind == SemValue::Int || v.kind == SemValue::Bool ||
         (v.isRuntime() && !v.type.elem.isPointer() && !isFloat(v.type.elem.scalar));
}

class BuiltinCall {
public:
  using Handler = SemValue (BuiltinCall::*)();

  BuiltinCall(IRGen &g, const std::string &name, const Expr &call, std::vector<Arg> &args,
              Kws &kws)
      : g(g), name(name), call(call), args(args), kws(kws), L(call.loc), ml(g.loc(L)),
        fn(name.c_str()), b_(g.builder()), ctx_(*g.builder().getContext()) {}

  /// The handler of builtin `name`, or null if there is none.
  static Handler handlerFor(const std::string &name);

  // ---- the handlers -------------------------------------------------------
  // Shape.cpp
  SemValue onProgramId(); // program_id, num_programs
  SemValue onClusterSize();
  SemValue onArange();
  SemValue onZerosOrFull(); // zeros, full
  SemValue onZerosLike();
  SemValue onBroadcastTo();
  SemValue onReshape();
  SemValue onTrans();
  SemValue onExpandDims();
  SemValue onGather();
  // Memory.cpp
  SemValue onLoad();
  SemValue onStore();
  SemValue onAtomicRMW(); // atomic_add, _max, _min, _and, _or, _xor, _xchg
  bool memoryHints(size_t first, bool isLoad, mlir::StringAttr &cop, mlir::StringAttr &evict);
  bool addressingArgs(const std::vector<std::pair<size_t, const char *>> &pointerOnly,
                      const std::vector<std::pair<size_t, const char *>> &blockOnly);
  // BlockPointer.cpp
  SemValue onMakeBlockPtr();
  SemValue onMakeTensorDescriptor();
  SemValue onAdvance();
  SemValue onLoadTensorDescriptor();
  SemValue onStoreTensorDescriptor();
  SemValue makeBlock(bool descriptor);
  std::optional<std::vector<SemValue>> integerTuple(const Arg &x, const char *what, size_t rank);
  SemValue offsetValue(const SemValue &v);
  std::optional<std::string> paddingArg(const Arg &x);
  std::optional<std::vector<bool>> boundaryCheckArg(const Arg &x, size_t rank);
  std::vector<SemValue> blockOffsets(const SemValue &bp);
  std::optional<std::vector<SemValue>> offsetsArg(const Arg &offsets, size_t rank);
  bool requireDescriptor(const Arg &x);
  bool blockAddresses(const SemValue &bp, const std::vector<SemValue> &offsets,
                      const std::vector<bool> &checked, SemValue &ptrs, SemValue &mask);
  SemValue loadBlock(const SemValue &bp, const std::vector<SemValue> &offsets,
                     const std::vector<bool> &checked, const std::string &padding, bool isVolatile,
                     mlir::StringAttr cop, mlir::StringAttr evict);
  SemValue storeBlock(const SemValue &bp, const std::vector<SemValue> &offsets,
                      const std::vector<bool> &checked, const SemValue &value, Loc valueLoc,
                      mlir::StringAttr cop, mlir::StringAttr evict);
  bool atomicOrdering(size_t first, tile::MemSem &sem, tile::MemScope &scope);
  bool userCombine(mlir::Region &region, const std::vector<SemValue> &ins, const Arg &fn);
  SemValue onInlineAsm(); // Misc.cpp
  // Sort.cpp
  SemValue onSort(); // sort, argsort
  SemValue onTopk();
  std::optional<std::pair<SemValue, SemValue>> sortOf(const SemValue &x, const Arg &dim,
                                                      bool descending, int64_t &axis);
  // Scan.cpp
  SemValue onCumulative(); // cumsum, cumprod
  SemValue onAssociativeScan();
  SemValue scanOf(std::vector<SemValue> ins, int64_t axis, bool reverse,
                  const std::function<bool(mlir::Region &)> &combine);
  SemValue onAtomicCAS();
  // DotReduce.cpp
  SemValue onDot();
  SemValue onMaxMin(); // Python's max/min of two constants, else a reduction
  SemValue onPythonMaxMin();
  SemValue onReduce(); // sum, max, min, argmax, argmin
  SemValue onCustomReduce(); // reduce(input, axis, combine_fn, keep_dims)
  // Math.cpp
  SemValue onUnaryMath(); // exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, erf, floor, ceil, abs
  SemValue onFma();
  SemValue onWhere();
  SemValue onMaximumMinimum(); // maximum, minimum
  SemValue onCdiv();
  SemValue onFdiv(); // fdiv, div_rn
  SemValue onUmulhi();
  // Random.cpp
  SemValue onRandom(); // rand, randn, randint, randint4x, rand4x, randn4x
  // Misc.cpp
  SemValue onHint(); // multiple_of, max_contiguous
  SemValue onCast(); // cast, bitcast
  SemValue onFloatInt(); // float, int
  SemValue onStaticAssert();
  SemValue onDevicePrint();
  /// A builtin of no arguments that is one tile op: debug_barrier()
  /// (tile.barrier, Triton's tl.debug_barrier), grid_dependency_wait() and
  /// launch_dependents() (CUDA's programmatic dependent launch).
  template <class Op> SemValue onStatementOp() {
    if (!bind({{}, 0}))
      return SemValue::invalid();
    Op::create(b_, ml);
    return SemValue::none();
  }
  SemValue onDeviceAssert();
  // Composite.cpp
  SemValue onSigmoid();
  SemValue onSoftmax();
  SemValue onClamp();
  SemValue onFlip();
  SemValue onJoin();
  SemValue onSplit();
  SemValue onInterleave();
  SemValue onCat();

private:
  IRGen &g;
  const std::string &name;
  const Expr &call;
  std::vector<Arg> &args; // as written
  Kws &kws;
  std::vector<Arg> a; // bound to the signature by bind()
  Loc L;
  mlir::Location ml;
  const char *fn;
  mlir::OpBuilder &b_;
  mlir::MLIRContext &ctx_;

  /// Runs builtin `other` on these arguments, at this call's location (the
  /// composites of Composite.cpp).
  SemValue invoke(const std::string &other, std::vector<SemValue> pos,
                  std::vector<std::pair<std::string, SemValue>> named = {});
  /// An i32 tile of `shape` holding each element's coordinate along `axis`.
  SemValue coordinate(const std::vector<int64_t> &shape, size_t axis);

  // ---- checks shared by the builtins (Builtins.cpp) -------------------------
  /// Binds `args` and `kws` to `sig.params` in `a`; reports errors Python-style.
  bool bind(Signature sig);
  bool requireRuntime(const Arg &x, const char *what);
  bool requireTile(const Arg &x);
  std::optional<int64_t> axisArg(const Arg &x, size_t rank);
  /// A True/False argument; `dflt` when absent or None.
  std::optional<bool> flagArg(const Arg &x, const char *param, bool dflt);
  /// A tile of numbers, or a tuple of them of one shape (reduce, scan inputs).
  std::optional<std::vector<SemValue>> tilesOfOneShape(const Arg &x);
  bool pointerArg(const Arg &x);
  bool maskArg(const Arg &x, SemValue &out);
  bool broadcastAll(std::vector<SemValue *> vals);
  /// broadcastAll(vals + the mask), the mask read from `x` unless it is None
  /// (store and the atomics: a pointer, a value and an optional mask).
  bool broadcastWithMask(std::vector<SemValue *> vals, const Arg &x, SemValue &mask);

  // ---- IRGen's interface for the builtins ----------------------------------
  SemValue fail(Loc l, const std::string &msg) { return g.fail(l, msg); }
  mlir::Type toMlir(DType d) { return g.toMlir(d); }
  mlir::Type toMlir(const TileType &t) { return g.toMlir(t); }
  SemValue materialize(const SemValue &v, Loc l) { return g.materialize(v, l); }
  SemValue castTo(const SemValue &v, DType to, Loc l) { return g.castTo(v, to, l); }
  SemValue broadcastTo(const SemValue &v, const std::vector<int64_t> &shape, Loc l) {
    return g.broadcastTo(v, shape, l);
  }
  std::optional<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t> &x,
                                                      const std::vector<int64_t> &y, Loc l) {
    return g.broadcastShapes(x, y, l);
  }
  SemValue binary(BinOp op, const SemValue &lhs, const SemValue &rhs, Loc l) {
    return g.binary(op, lhs, rhs, l);
  }
  bool unify(SemValue &x, SemValue &y, Loc l, const char *what) { return g.unify(x, y, l, what); }
  bool checkTileShape(const std::vector<int64_t> &shape, Loc l) { return g.checkTileShape(shape, l); }
  std::optional<std::vector<int64_t>> shapeArg(const Arg &x, const char *f) { return g.shapeArg(x, f); }
  std::optional<int64_t> intArg(const Arg &x, const char *f, const char *what) {
    return g.intArg(x, f, what);
  }
  std::optional<DType> dtypeArg(const Arg &x, const char *f) { return g.dtypeArg(x, f); }
};

/// The high half of the full product of two integers of one type (scalars or
/// tiles), read as unsigned: `(zext(x) * zext(y)) >> bits`.
mlir::Value emitMulHiUnsigned(mlir::OpBuilder &b, mlir::Location l, mlir::Value x, mlir::Value y);

} // namespace tessera::fe::builtins

#endif
