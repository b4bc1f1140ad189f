// Semantic analysis and IR generation: walks the syntax tree of one kernel,
// evaluates constexprs, inlines @func helpers, checks types and shapes, and
// emits `tile`/`arith`/`math`/`scf` IR with source locations.
#ifndef TESSERA_FRONTEND_IRGEN_H
#define TESSERA_FRONTEND_IRGEN_H

#include "ModuleLoader.h"
#include "SemValue.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <functional>
#include <map>
#include <optional>
#include <set>

namespace tessera::fe {

class IRGen {
public:
  IRGen(mlir::MLIRContext &ctx, const SourceManager &sm, DiagnosticEngine &diags)
      : ctx_(ctx), sm_(sm), diags_(diags), b_(&ctx) {}

  /// Emits kernel `fn` of `mod`, specialized with `constexprs` and the
  /// facts of `argFacts` that name its runtime parameters, into `module`.
  /// On failure a diagnostic has been reported.
  bool genKernel(mlir::ModuleOp module, const ModuleInfo &mod, const FunctionDef &fn,
                 const std::map<std::string, ConstexprValue> &constexprs,
                 KernelSignature &signature,
                 const std::map<std::string, ArgFact> &argFacts = {});

  // ---- used by the builtins (Builtins.cpp) ----
  struct Arg {
    SemValue value;
    Loc loc;
    const Expr *expr = nullptr;
    bool present = false;
  };
  mlir::Location loc(Loc l);
  SemValue fail(Loc l, const std::string &msg);
  bool failed() const { return diags_.hasErrors(); }
  mlir::OpBuilder &builder() { return b_; }
  mlir::Type toMlir(DType d);
  mlir::Type toMlir(const TileType &t);
  /// Turns a constexpr number/bool into a run-time scalar; `want` picks its type.
  SemValue materialize(const SemValue &v, Loc l, std::optional<DType> want = std::nullopt);
  SemValue castTo(const SemValue &v, DType to, Loc l);
  SemValue broadcastTo(const SemValue &v, const std::vector<int64_t> &shape, Loc l);
  std::optional<std::vector<int64_t>> broadcastShapes(const std::vector<int64_t> &a,
                                                      const std::vector<int64_t> &b, Loc l);
  SemValue constant(DType d, const std::vector<int64_t> &shape, double fv, int64_t iv, Loc l);
  /// `la`/`lb` locate the operands for errors about one of them (default: `l`).
  SemValue binary(BinOp op, const SemValue &lhs, const SemValue &rhs, Loc l, Loc la = {},
                  Loc lb = {});
  /// Bring two operands to a common element type and shape (NumPy rules).
  bool unify(SemValue &a, SemValue &b, Loc l, const char *what, Loc la = {}, Loc lb = {});
  bool checkTileShape(const std::vector<int64_t> &shape, Loc l);
  bool markUnspecialized(const FunctionDef &fn, KernelSignature &sig);
  std::optional<std::vector<int64_t>> shapeArg(const Arg &a, const char *fn);
  std::optional<int64_t> intArg(const Arg &a, const char *fn, const char *what);
  std::optional<DType> dtypeArg(const Arg &a, const char *fn);
  bool truthy(const SemValue &v, Loc l, mlir::Value &out);
  /// Inlines @func `fn` (a Func value) at the builder's insertion point with
  /// positional `args` (a reduce's combine_fn).
  SemValue callFunction(const Expr &call, const SemValue &fn, std::vector<Arg> &args) {
    std::vector<std::pair<std::string, Arg>> kws;
    return callHelper(call, *fn.fn, *fn.fnModule, args, kws);
  }

private:
  using Scope = std::map<std::string, SemValue>;
  struct Frame {
    const ModuleInfo *module = nullptr;
    const FunctionDef *fn = nullptr;
    Scope vars;
    bool returned = false;
    SemValue returnValue;
    int runtimeControlDepth = 0; // nesting of scf regions in this frame
    int loopDepth = 0;           // loops (run-time or static) around the current statement
    std::map<std::string, Loc> scopedOut; // names dropped at the end of a region
  };

  // Statements.
  bool genBlock(const Block &block) { return genBlockFrom(block, 0); }
  /// Statements `first..` of `block`. After a statement that may leave the
  /// iteration (break/continue), the rest runs under a run-time `if`.
  bool genBlockFrom(const Block &block, size_t first);
  bool genStmt(const Stmt &s);
  bool genAssign(const Expr &target, SemValue value, Loc l);
  bool genIf(const Stmt &s);
  /// A run-time `if` on `cond`: each generator fills one branch; the variables
  /// they change are merged after it (yielded by the scf.if).
  bool genRuntimeIf(mlir::Value cond, Loc l, const std::function<bool()> &genThen,
                    const std::function<bool()> &genElse);
  bool genFor(const Stmt &s);
  bool genStaticRange(const Stmt &s, int64_t lo, int64_t hi, int64_t step, Loc iterLoc);
  bool genRangeLoop(const Stmt &s, SemValue lo, SemValue hi, SemValue step, Loc iterLoc);
  /// Iterations of range(lo, hi, step) with a run-time step, as Python counts
  /// them (0 for a zero step), in the type of the bounds.
  SemValue runtimeTripCount(const SemValue &lo, const SemValue &hi, const SemValue &step, Loc l);
  bool genWhile(const Stmt &s);

  // break/continue (LoopExits.cpp). A loop's exits are the frame variables
  // kBreakFlag (carried across iterations) and kContinueFlag (reset each
  // iteration); statements after a possible exit run only while both are false.
  static constexpr const char *kBreakFlag = "%break";
  static constexpr const char *kContinueFlag = "%continue";
  struct OuterLoopExits {
    std::optional<SemValue> brk, cont;
  };
  /// Hides the enclosing loop's exit flags while an inner loop is generated.
  OuterLoopExits enterLoop();
  void exitLoop(const OuterLoopExits &outer);
  bool genLoopExit(const Stmt &s);
  /// True when the current iteration has left (break or continue): a
  /// compile-time bool, or a run-time i1 scalar.
  SemValue iterationLeft(Loc l);
  void collectAssigned(const Block &block, std::set<std::string> &out);
  /// What a run-time `for` or `while` starts from: its exits, the variables
  /// its body assigns (with the break flag; without the induction variable),
  /// the scope before it, and what it carries: the numbers (constant or
  /// run-time) of the variables assigned, in carried form. A variable holding
  /// a tuple or block pointer is carried as its numbers one by one: one entry
  /// per number, `leaf` its index in numericLeaves (-1 for a plain number).
  struct RuntimeLoop {
    bool breaks = false, continues = false;
    OuterLoopExits outer;
    std::set<std::string> assigned;
    Scope before;
    std::vector<std::string> carried;
    std::vector<int> leaf;
    std::vector<mlir::Value> inits;
    std::vector<TileType> types;
  };
  /// After a loop: checks that values with nothing to carry did not change,
  /// restores the scope and binds the carried variables to the loop's results.
  bool closeLoop(const RuntimeLoop &loop, mlir::ValueRange results, Loc l);
  /// Binds the carried variables to `values` (iter_args or loop results).
  void bindCarried(const RuntimeLoop &loop, mlir::ValueRange values);
  /// Enters the loop (enterLoop) and fills `loop`; `inductionVar` (or null)
  /// is not carried. False (after an error) when a carried value cannot be.
  bool openLoop(const Stmt &s, const std::string *inductionVar, RuntimeLoop &loop);
  /// The values a loop body yields for its carried variables, checking their types.
  bool carriedYields(const RuntimeLoop &loop, Loc l, std::vector<mlir::Value> &yields);

  // Expressions.
  SemValue genExpr(const Expr &e);
  SemValue genName(const Expr &e);
  SemValue genUnary(const Expr &e);
  SemValue genBinary(const Expr &e);
  SemValue genCall(const Expr &e);
  SemValue genSubscript(const Expr &e);
  SemValue genAttribute(const Expr &e);
  SemValue genIfExp(const Expr &e);
  SemValue constBinary(BinOp op, const SemValue &a, const SemValue &b, Loc l);
  SemValue callHelper(const Expr &call, const FunctionDef &fn, const ModuleInfo &mod,
                      std::vector<Arg> &args, std::vector<std::pair<std::string, Arg>> &kws);
  SemValue callBuiltin(const std::string &name, const Expr &call, std::vector<Arg> &args,
                       std::vector<std::pair<std::string, Arg>> &kws);
  SemValue lookupGlobal(const ModuleInfo &mod, const std::string &name, Loc l, int depth = 0);
  SemValue evalGlobalConst(const ModuleInfo &mod, const GlobalConst &g);
  /// Ensures a value can live in an scf region result / iter_arg.
  SemValue toCarried(const SemValue &v, Loc l);

  Frame &frame() { return frames_.back(); }

  mlir::MLIRContext &ctx_;
  const SourceManager &sm_;
  DiagnosticEngine &diags_;
  mlir::OpBuilder b_;
  std::vector<Frame> frames_;
  std::vector<const FunctionDef *> callStack_;
  std::map<const GlobalConst *, SemValue> globalCache_;
  std::set<const GlobalConst *> globalsInProgress_;
};

} // namespace tessera::fe

#endif
