// The builtin functions of the language: argument binding, the checks the
// builtins share, and the table from a builtin's name to its handler. The
// handlers (type checks with clear messages, and the IR each builtin emits)
// are in builtins/*.cpp; builtins/BuiltinCall.h lists them.
#include "IRGen.h"
#include "builtins/BuiltinCall.h"

#include <unordered_map>

using namespace mlir;

namespace tessera::fe {

namespace builtins {
namespace {
// Binds positional and keyword arguments to `sig.params`; reports errors Python-style.
bool bindArgs(IRGen &g, const std::string &fn, const Signature &sig, const Expr &call,
              std::vector<Arg> &args, Kws &kws, std::vector<Arg> &out) {
  size_t n = sig.params.size();
  out.assign(n, Arg{});
  if (!sig.variadic && args.size() > n) {
    std::string range = sig.required == n ? std::to_string(n)
                                          : std::to_string(sig.required) + " to " + std::to_string(n);
    g.fail(args[n].loc, fn + "() takes " + range + " argument" + (n == 1 ? "" : "s") + " but " +
                            std::to_string(args.size()) + " were given");
    return false;
  }
  for (size_t i = 0; i < args.size() && i < n; ++i)
    out[i] = args[i];
  for (auto &[name, arg] : kws) {
    size_t i = 0;
    while (i < n && name != sig.params[i])
      ++i;
    if (i == n) {
      g.fail(arg.loc, fn + "() got an unexpected keyword argument '" + name + "'");
      return false;
    }
    if (out[i].present) {
      g.fail(arg.loc, fn + "() got multiple values for argument '" + name + "'");
      return false;
    }
    out[i] = arg;
  }
  for (size_t i = 0; i < sig.required; ++i)
    if (!out[i].present) {
      g.fail(call.loc, fn + "() missing required argument '" + std::string(sig.params[i]) + "'");
      return false;
    }
  return true;
}
} // namespace

bool BuiltinCall::bind(Signature sig) { return bindArgs(g, name, sig, call, args, kws, a); }

bool BuiltinCall::requireRuntime(const Arg &x, const char *what) {
  if (x.value.isRuntime())
    return true;
  fail(x.loc, name + "() " + what + ", got " + x.value.describe());
  return false;
}

bool BuiltinCall::requireTile(const Arg &x) {
  if (x.value.isTile())
    return true;
  fail(x.loc, name + "() needs a tile, got " + x.value.describe());
  return false;
}

std::optional<int64_t> BuiltinCall::axisArg(const Arg &x, size_t rank) {
  auto ax = intArg(x, fn, "axis");
  if (!ax)
    return std::nullopt;
  int64_t v = *ax < 0 ? *ax + int64_t(rank) : *ax;
  if (v < 0 || v >= int64_t(rank)) {
    fail(x.loc, "axis " + std::to_string(*ax) + " is out of range for a tile of rank " +
                    std::to_string(rank));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> BuiltinCall::flagArg(const Arg &x, const char *param, bool dflt) {
  if (isNone(x))
    return dflt;
  if (x.value.kind != SemValue::Bool) {
    fail(x.loc, name + "() " + param + " must be True or False");
    return std::nullopt;
  }
  return x.value.b;
}

std::optional<std::vector<SemValue>> BuiltinCall::tilesOfOneShape(const Arg &x) {
  std::vector<SemValue> ins = x.value.kind == SemValue::Tuple ? x.value.elems
                                                               : std::vector<SemValue>{x.value};
  for (const SemValue &v : ins)
    if (!v.isTile() || v.type.elem.isPointer()) {
      fail(x.loc, name + "() needs tiles of numbers, got " + v.describe());
      return std::nullopt;
    }
  for (const SemValue &v : ins)
    if (v.type.shape != ins[0].type.shape) {
      fail(x.loc, name + "() needs tiles of one shape, got " + ins[0].type.str() + " and " +
                      v.type.str());
      return std::nullopt;
    }
  return ins;
}

bool BuiltinCall::pointerArg(const Arg &x) {
  if (x.value.isRuntime() && x.value.type.elem.isPointer())
    return true;
  fail(x.loc, name + "() needs a pointer or a tile of pointers, got " + x.value.describe());
  return false;
}

bool BuiltinCall::maskArg(const Arg &x, SemValue &out) {
  const SemValue &m = x.value;
  bool ok = m.kind == SemValue::Bool ||
            (m.isRuntime() && m.type.elem == DType{ScalarType::i1, 0});
  if (!ok) {
    fail(x.loc, name + "() mask must be a boolean tile or scalar, got " + m.describe());
    return false;
  }
  out = m.kind == SemValue::Bool ? materialize(m, x.loc) : m;
  return out.ok();
}

// Broadcasts every present value in `vals` to their common shape.
bool BuiltinCall::broadcastWithMask(std::vector<SemValue *> vals, const Arg &x, SemValue &mask) {
  if (!isNone(x)) {
    if (!maskArg(x, mask))
      return false;
    vals.push_back(&mask);
  }
  return broadcastAll(std::move(vals));
}

bool BuiltinCall::broadcastAll(std::vector<SemValue *> vals) {
  std::vector<int64_t> shape;
  for (SemValue *v : vals) {
    auto s = broadcastShapes(shape, v->isRuntime() ? v->type.shape : std::vector<int64_t>{}, L);
    if (!s)
      return false;
    shape = *s;
  }
  for (SemValue *v : vals) {
    *v = broadcastTo(*v, shape, L);
    if (!v->ok())
      return false;
  }
  return true;
}

BuiltinCall::Handler BuiltinCall::handlerFor(const std::string &name) {
  using B = BuiltinCall;
  static const std::unordered_map<std::string, Handler> table = {
      // grid
      {"program_id", &B::onProgramId},
      {"num_programs", &B::onProgramId},
      {"cluster_size", &B::onClusterSize},
      // construction
      {"arange", &B::onArange},
      {"zeros", &B::onZerosOrFull},
      {"full", &B::onZerosOrFull},
      {"zeros_like", &B::onZerosLike},
      {"broadcast_to", &B::onBroadcastTo},
      {"reshape", &B::onReshape},
      {"trans", &B::onTrans},
      {"permute", &B::onTrans},
      {"expand_dims", &B::onExpandDims},
      {"gather", &B::onGather},
      // memory
      {"load", &B::onLoad},
      {"store", &B::onStore},
      {"atomic_add", &B::onAtomicRMW},
      {"atomic_max", &B::onAtomicRMW},
      {"atomic_min", &B::onAtomicRMW},
      {"atomic_and", &B::onAtomicRMW},
      {"atomic_or", &B::onAtomicRMW},
      {"atomic_xor", &B::onAtomicRMW},
      {"atomic_xchg", &B::onAtomicRMW},
      {"atomic_cas", &B::onAtomicCAS},
      {"make_block_ptr", &B::onMakeBlockPtr},
      {"advance", &B::onAdvance},
      {"make_tensor_descriptor", &B::onMakeTensorDescriptor},
      {"load_tensor_descriptor", &B::onLoadTensorDescriptor},
      {"store_tensor_descriptor", &B::onStoreTensorDescriptor},
      // dot
      {"dot", &B::onDot},
      // reductions (max and min of two compile-time numbers are Python's)
      {"sum", &B::onReduce},
      {"max", &B::onMaxMin},
      {"min", &B::onMaxMin},
      {"argmax", &B::onReduce},
      {"argmin", &B::onReduce},
      {"reduce", &B::onCustomReduce},
      {"cumsum", &B::onCumulative},
      {"cumprod", &B::onCumulative},
      {"associative_scan", &B::onAssociativeScan},
      {"sort", &B::onSort},
      {"argsort", &B::onSort},
      {"topk", &B::onTopk},
      {"inline_asm_elementwise", &B::onInlineAsm},
      {"fdiv", &B::onFdiv},
      {"debug_barrier", &B::onStatementOp<tile::BarrierOp>},
      {"grid_dependency_wait", &B::onStatementOp<tile::GridDependencyWaitOp>},
      {"launch_dependents", &B::onStatementOp<tile::LaunchDependentsOp>},
      {"device_assert", &B::onDeviceAssert},
      {"sigmoid", &B::onSigmoid},
      {"softmax", &B::onSoftmax},
      {"clamp", &B::onClamp},
      {"flip", &B::onFlip},
      {"join", &B::onJoin},
      {"split", &B::onSplit},
      {"interleave", &B::onInterleave},
      {"cat", &B::onCat},
      {"div_rn", &B::onFdiv},
      // elementwise math
      {"exp", &B::onUnaryMath},
      {"exp2", &B::onUnaryMath},
      {"log", &B::onUnaryMath},
      {"log2", &B::onUnaryMath},
      {"sqrt", &B::onUnaryMath},
      {"rsqrt", &B::onUnaryMath},
      {"sin", &B::onUnaryMath},
      {"cos", &B::onUnaryMath},
      {"tanh", &B::onUnaryMath},
      {"erf", &B::onUnaryMath},
      {"floor", &B::onUnaryMath},
      {"ceil", &B::onUnaryMath},
      {"abs", &B::onUnaryMath},
      {"fma", &B::onFma},
      {"where", &B::onWhere},
      {"maximum", &B::onMaximumMinimum},
      {"minimum", &B::onMaximumMinimum},
      {"cdiv", &B::onCdiv},
      {"umulhi", &B::onUmulhi},
      // random numbers (Philox-4x32-10, as Triton's)
      {"rand", &B::onRandom},
      {"randn", &B::onRandom},
      {"randint", &B::onRandom},
      {"randint4x", &B::onRandom},
      {"rand4x", &B::onRandom},
      {"randn4x", &B::onRandom},
      // hints, casts, compile-time checks, printing
      {"multiple_of", &B::onHint},
      {"max_contiguous", &B::onHint},
      {"cast", &B::onCast},
      {"bitcast", &B::onCast},
      {"float", &B::onFloatInt},
      {"int", &B::onFloatInt},
      {"static_assert", &B::onStaticAssert},
      {"device_print", &B::onDevicePrint},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}
} // namespace builtins

std::optional<int64_t> IRGen::intArg(const Arg &a, const char *fn, const char *what) {
  if (a.value.kind == SemValue::Int)
    return a.value.i;
  if (a.value.kind == SemValue::Bool)
    return int64_t(a.value.b);
  fail(a.loc, std::string(fn) + "() " + what + " must be a constexpr integer, got " +
                  a.value.describe());
  return std::nullopt;
}

std::optional<DType> IRGen::dtypeArg(const Arg &a, const char *fn) {
  if (a.value.kind == SemValue::DTypeV)
    return a.value.dtype;
  fail(a.loc, std::string(fn) + "() expects a type such as f32, got " + a.value.describe());
  return std::nullopt;
}

std::optional<std::vector<int64_t>> IRGen::shapeArg(const Arg &a, const char *fn) {
  std::vector<int64_t> shape;
  if (a.value.kind == SemValue::Int) {
    shape.push_back(a.value.i);
  } else if (a.value.kind == SemValue::Tuple) {
    for (const SemValue &d : a.value.elems) {
      if (d.kind != SemValue::Int) {
        fail(a.loc, std::string(fn) + "() shape must be a tuple of constexpr integers, got " +
                        d.describe() + " inside it");
        return std::nullopt;
      }
      shape.push_back(d.i);
    }
  } else {
    fail(a.loc, std::string(fn) + "() shape must be a constexpr integer or tuple, got " +
                    a.value.describe());
    return std::nullopt;
  }
  if (shape.empty()) {
    fail(a.loc, std::string(fn) + "() shape must not be empty");
    return std::nullopt;
  }
  if (!checkTileShape(shape, a.loc))
    return std::nullopt;
  return shape;
}

SemValue IRGen::callBuiltin(const std::string &name, const Expr &call, std::vector<Arg> &args,
                            std::vector<std::pair<std::string, Arg>> &kws) {
  builtins::BuiltinCall::Handler handler = builtins::BuiltinCall::handlerFor(name);
  if (!handler)
    return fail(call.loc, "builtin '" + name + "' is not implemented");
  builtins::BuiltinCall c(*this, name, call, args, kws);
  return (c.*handler)();
}

} // namespace tessera::fe
