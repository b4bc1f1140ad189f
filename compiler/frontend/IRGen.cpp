// IR generation for statements and expressions. Builtin functions live in
// Builtins.cpp; this file holds the language's core semantics: names, scopes,
// operators and type promotion, control flow, helper inlining.
#include "IRGen.h"

#include "tile/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cctype>
#include <cmath>
#include <limits>

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::fe {

namespace {
constexpr int kMaxInlineDepth = 64;

bool hasDecorator(const FunctionDef &fn, const char *name) {
  for (const Decorator &d : fn.decorators)
    if (d.name == name)
      return true;
  return false;
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Python truthiness of a compile-time value.
bool constTruthy(const SemValue &v) {
  switch (v.kind) {
  case SemValue::Int: return v.i != 0;
  case SemValue::Float: return v.f != 0.0;
  case SemValue::Bool: return v.b;
  case SemValue::None: return false;
  case SemValue::Tuple: return !v.elems.empty();
  case SemValue::Str: return !v.s.empty();
  default: return true;
  }
}

// Common element type of two run-time operands (C-like promotion).
DType promote(DType a, DType b) {
  if (a == b)
    return a;
  bool fa = isFloat(a.scalar), fb = isFloat(b.scalar);
  if (fa && fb) {
    unsigned wa = scalarTypeBits(a.scalar), wb = scalarTypeBits(b.scalar);
    if (wa == wb) // f16 with bf16
      return DType{ScalarType::f32, 0};
    return wa > wb ? a : b;
  }
  if (fa)
    return a;
  if (fb)
    return b;
  if (a.scalar == ScalarType::i1)
    return b;
  if (b.scalar == ScalarType::i1)
    return a;
  unsigned wa = scalarTypeBits(a.scalar), wb = scalarTypeBits(b.scalar);
  if (wa != wb)
    return wa > wb ? a : b;
  return isUnsigned(a.scalar) ? a : b;
}
} // namespace

//===----------------------------------------------------------------------===//
// Basic helpers
//===----------------------------------------------------------------------===//

Location IRGen::loc(Loc l) {
  if (!l.valid() || l.file >= sm_.numFiles())
    return UnknownLoc::get(&ctx_);
  return FileLineColLoc::get(&ctx_, sm_.file(l.file).path, l.line, l.col);
}

SemValue IRGen::fail(Loc l, const std::string &msg) {
  if (!diags_.hasErrors())
    diags_.error(l, msg);
  return SemValue::invalid();
}

Type IRGen::toMlir(DType d) {
  Type t;
  switch (d.scalar) {
  case ScalarType::i1: t = b_.getI1Type(); break;
  case ScalarType::i8:
  case ScalarType::u8: t = b_.getI8Type(); break;
  case ScalarType::i16:
  case ScalarType::u16: t = b_.getI16Type(); break;
  case ScalarType::i32:
  case ScalarType::u32: t = b_.getI32Type(); break;
  case ScalarType::i64:
  case ScalarType::u64: t = b_.getI64Type(); break;
  case ScalarType::f16: t = b_.getF16Type(); break;
  case ScalarType::bf16: t = b_.getBF16Type(); break;
  case ScalarType::f32: t = b_.getF32Type(); break;
  case ScalarType::f64: t = b_.getF64Type(); break;
  case ScalarType::f8e4m3: t = b_.getType<Float8E4M3FNType>(); break;
  case ScalarType::f8e5m2: t = b_.getType<Float8E5M2Type>(); break;
  }
  for (int k = 0; k < d.pointerDepth; ++k)
    t = tile::PtrType::get(&ctx_, t);
  return t;
}

Type IRGen::toMlir(const TileType &t) {
  Type e = toMlir(t.elem);
  if (t.shape.empty())
    return e;
  return RankedTensorType::get(t.shape, e);
}

bool IRGen::checkTileShape(const std::vector<int64_t> &shape, Loc l) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d <= 0 || (d & (d - 1)) != 0) {
      fail(l, "tile dimension " + std::to_string(d) + " is not a power of two");
      return false;
    }
    total *= d;
    if (total > (int64_t(1) << 20)) {
      fail(l, "tile " + shapeStr(shape) + " has more than 2^20 elements");
      return false;
    }
  }
  if (shape.size() > 4) {
    fail(l, "tiles have at most 4 dimensions, got " + std::to_string(shape.size()));
    return false;
  }
  return true;
}

SemValue IRGen::constant(DType d, const std::vector<int64_t> &shape, double fv, int64_t iv,
                         Loc l) {
  Type et = toMlir(d);
  TypedAttr attr;
  if (isFloat(d.scalar))
    attr = b_.getFloatAttr(et, fv);
  else
    attr = b_.getIntegerAttr(et, APInt(et.getIntOrFloatBitWidth(), uint64_t(iv),
                                       /*isSigned=*/false, /*implicitTrunc=*/true));
  TileType tt{d, shape};
  Value v;
  if (shape.empty())
    v = arith::ConstantOp::create(b_, loc(l), attr);
  else
    v = arith::ConstantOp::create(
        b_, loc(l), DenseElementsAttr::get(RankedTensorType::get(shape, et), attr));
  return SemValue::ofRuntime(v, tt);
}

SemValue IRGen::materialize(const SemValue &v, Loc l, std::optional<DType> want) {
  switch (v.kind) {
  case SemValue::Runtime:
    return v;
  case SemValue::Int: {
    DType t = want && !want->isPointer() ? *want
              : fitsIn(v.i, DType{ScalarType::i32, 0}) ? DType{ScalarType::i32, 0}
                                                       : DType{ScalarType::i64, 0};
    if (isFloat(t.scalar))
      return constant(t, {}, double(v.i), 0, l);
    if (!fitsIn(v.i, t))
      return fail(l, "integer " + std::to_string(v.i) + " does not fit in " + t.str());
    return constant(t, {}, 0, v.i, l);
  }
  case SemValue::Float: {
    DType t = want && isFloat(want->scalar) && !want->isPointer() ? *want
                                                                  : DType{ScalarType::f32, 0};
    return constant(t, {}, v.f, 0, l);
  }
  case SemValue::Bool:
    return constant(DType{ScalarType::i1, 0}, {}, 0, v.b ? 1 : 0, l);
  default:
    return fail(l, "expected a number or a tile, got " + v.describe());
  }
}

SemValue IRGen::castTo(const SemValue &v0, DType to, Loc l) {
  SemValue v = v0;
  if (v.isConst()) {
    std::optional<DType> want;
    if (!to.isPointer() && !(v.kind == SemValue::Float && !isFloat(to.scalar)) &&
        !(v.kind == SemValue::Int && to.scalar == ScalarType::i1))
      want = to;
    v = materialize(v, l, want);
  }
  if (!v.ok())
    return v;
  if (!v.isRuntime())
    return fail(l, "cannot convert " + v.describe() + " to " + to.str());
  DType from = v.type.elem;
  if (from == to)
    return v;
  TileType rt{to, v.type.shape};
  Type mt = toMlir(rt);
  Location ml = loc(l);
  Value x = v.value;
  auto result = [&](Value r) { return SemValue::ofRuntime(r, rt); };

  if (from.isPointer() || to.isPointer()) {
    if (from.isPointer() && to.isPointer())
      return result(tile::BitcastOp::create(b_, ml, mt, x));
    if (from.isPointer() && !isFloat(to.scalar)) {
      Value i = tile::PtrToIntOp::create(b_, ml, toMlir(TileType{{ScalarType::i64, 0}, rt.shape}), x);
      return castTo(SemValue::ofRuntime(i, TileType{{ScalarType::i64, 0}, rt.shape}), to, l);
    }
    return fail(l, "cannot convert " + v.type.str() + " to " + to.str());
  }
  bool ff = isFloat(from.scalar), tf = isFloat(to.scalar);
  unsigned fw = scalarTypeBits(from.scalar), tw = scalarTypeBits(to.scalar);
  // 8-bit floats convert to and from f32 only (one cvt on the GPU); every
  // other conversion goes through f32, which holds each of their values.
  DType f32{ScalarType::f32, 0};
  if ((isFloat8(from.scalar) || isFloat8(to.scalar)) && from != f32 && to != f32)
    return castTo(castTo(v, f32, l), to, l);
  if (to.scalar == ScalarType::i1) {
    if (ff) {
      SemValue z = constant(from, rt.shape, 0.0, 0, l);
      return result(arith::CmpFOp::create(b_, ml, arith::CmpFPredicate::UNE, x, z.value));
    }
    SemValue z = constant(from, rt.shape, 0, 0, l);
    return result(arith::CmpIOp::create(b_, ml, arith::CmpIPredicate::ne, x, z.value));
  }
  if (!ff && !tf) {
    if (fw == tw)
      return result(x); // i32 <-> u32: same bits, new signedness
    if (fw < tw) {
      if (isUnsigned(from.scalar))
        return result(arith::ExtUIOp::create(b_, ml, mt, x));
      return result(arith::ExtSIOp::create(b_, ml, mt, x));
    }
    return result(arith::TruncIOp::create(b_, ml, mt, x));
  }
  if (!ff && tf) {
    if (isUnsigned(from.scalar))
      return result(arith::UIToFPOp::create(b_, ml, mt, x));
    return result(arith::SIToFPOp::create(b_, ml, mt, x));
  }
  if (ff && !tf) {
    if (isUnsigned(to.scalar))
      return result(arith::FPToUIOp::create(b_, ml, mt, x));
    return result(arith::FPToSIOp::create(b_, ml, mt, x));
  }
  // float -> float
  if (fw == tw) { // f16 <-> bf16 through f32
    SemValue mid = castTo(v, DType{ScalarType::f32, 0}, l);
    return castTo(mid, to, l);
  }
  if (fw < tw)
    return result(arith::ExtFOp::create(b_, ml, mt, x));
  return result(arith::TruncFOp::create(b_, ml, mt, x));
}

std::optional<std::vector<int64_t>> IRGen::broadcastShapes(const std::vector<int64_t> &a,
                                                           const std::vector<int64_t> &b, Loc l) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      fail(l, "shapes " + shapeStr(a) + " and " + shapeStr(b) + " do not broadcast");
      return std::nullopt;
    }
    out[i] = std::max(da, db);
  }
  return out;
}

SemValue IRGen::broadcastTo(const SemValue &v0, const std::vector<int64_t> &shape, Loc l) {
  SemValue v = v0.isConst() ? materialize(v0, l) : v0;
  if (!v.ok())
    return v;
  if (!v.isRuntime())
    return fail(l, "expected a number or a tile, got " + v.describe());
  if (v.type.shape == shape)
    return v;
  Location ml = loc(l);
  Type elemTy = toMlir(v.type.elem);
  if (!v.type.isTile()) {
    TileType rt{v.type.elem, shape};
    return SemValue::ofRuntime(tile::SplatOp::create(b_, ml, toMlir(rt), v.value), rt);
  }
  if (v.type.shape.size() > shape.size())
    return fail(l, "cannot broadcast a tile of shape " + shapeStr(v.type.shape) + " to " +
                       shapeStr(shape));
  std::vector<int64_t> cur = v.type.shape;
  Value x = v.value;
  while (cur.size() < shape.size()) {
    cur.insert(cur.begin(), 1);
    x = tile::ExpandDimsOp::create(b_, ml, RankedTensorType::get(cur, elemTy), x,
                                   b_.getI32IntegerAttr(0));
  }
  for (size_t i = 0; i < cur.size(); ++i)
    if (cur[i] != shape[i] && cur[i] != 1)
      return fail(l, "cannot broadcast a tile of shape " + shapeStr(v.type.shape) + " to " +
                         shapeStr(shape));
  if (cur != shape)
    x = tile::BroadcastOp::create(b_, ml, RankedTensorType::get(shape, elemTy), x);
  return SemValue::ofRuntime(x, TileType{v.type.elem, shape});
}

bool IRGen::unify(SemValue &a, SemValue &b, Loc l, const char *what, Loc la, Loc lb) {
  if (!la.valid())
    la = l;
  if (!lb.valid())
    lb = l;
  for (SemValue *v : {&a, &b})
    if (!v->isConst() && !v->isRuntime()) {
      fail(l, std::string("operator '") + what + "' cannot be applied to " + v->describe());
      return false;
    }
  DType common;
  if (a.isRuntime() && b.isRuntime()) {
    common = promote(a.type.elem, b.type.elem);
  } else {
    SemValue &rt = a.isRuntime() ? a : b;
    SemValue &ct = a.isRuntime() ? b : a;
    DType r = rt.type.elem;
    if (ct.kind == SemValue::Float && !isFloat(r.scalar))
      common = DType{ScalarType::f32, 0};
    else if (ct.kind == SemValue::Int && r.scalar == ScalarType::i1)
      common = DType{ScalarType::i32, 0};
    else
      common = r;
  }
  if (common.isPointer()) {
    fail(l, std::string("operator '") + what + "' is not defined for pointers");
    return false;
  }
  a = castTo(a, common, la);
  if (!a.ok())
    return false;
  b = castTo(b, common, lb);
  if (!b.ok())
    return false;
  auto shape = broadcastShapes(a.type.shape, b.type.shape, l);
  if (!shape)
    return false;
  a = broadcastTo(a, *shape, l);
  if (!a.ok())
    return false;
  b = broadcastTo(b, *shape, l);
  return b.ok();
}

bool IRGen::truthy(const SemValue &v, Loc l, Value &out) {
  if (!v.isRuntime()) {
    SemValue m = materialize(SemValue::ofBool(constTruthy(v)), l);
    out = m.value;
    return m.ok();
  }
  if (v.type.isTile()) {
    fail(l, "condition must be a scalar, got a tile of shape " + shapeStr(v.type.shape));
    return false;
  }
  if (v.type.elem.isPointer()) {
    fail(l, "condition must be a number or a boolean, got " + v.type.str());
    return false;
  }
  SemValue c = castTo(v, DType{ScalarType::i1, 0}, l);
  out = c.value;
  return c.ok();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

static SemValue fromConstexpr(const ConstexprValue &v) {
  if (auto *i = std::get_if<int64_t>(&v))
    return SemValue::ofInt(*i);
  if (auto *f = std::get_if<double>(&v))
    return SemValue::ofFloat(*f);
  if (auto *b = std::get_if<bool>(&v))
    return SemValue::ofBool(*b);
  if (auto *s = std::get_if<std::string>(&v))
    return SemValue::ofStr(*s);
  return SemValue::ofDType(std::get<DType>(v));
}

static std::optional<ConstexprValue> toConstexpr(const SemValue &v) {
  switch (v.kind) {
  case SemValue::Int: return ConstexprValue(v.i);
  case SemValue::Float: return ConstexprValue(v.f);
  case SemValue::Bool: return ConstexprValue(v.b);
  case SemValue::DTypeV: return ConstexprValue(v.dtype);
  case SemValue::Str: return ConstexprValue(v.s);
  default: return std::nullopt;
  }
}

// @kernel(do_not_specialize=["name", ...]) (the list's form is checked by
// ModuleLoader): each name must be an i32 or i64 parameter; the JIT then does
// not specialize on its value.
bool IRGen::markUnspecialized(const FunctionDef &fn, KernelSignature &sig) {
  for (const Decorator &d : fn.decorators) {
    if (d.name != "kernel" || !d.call)
      continue;
    for (const Keyword &kw : d.call->keywords)
      for (const ExprPtr &e : kw.value->args) {
        auto it = std::find_if(sig.params.begin(), sig.params.end(),
                               [&](const KernelParam &p) { return p.name == e->str; });
        if (it == sig.params.end() || !takesArgFacts(it->type)) {
          fail(e->loc, "do_not_specialize: '" + e->str + "' is " +
                           (it == sig.params.end() ? std::string("not a runtime parameter")
                                                   : "a " + it->type.str() + " parameter") +
                           " of kernel '" + fn.name +
                           "'; only i32 and i64 parameters are specialized");
          return false;
        }
        it->specialize = false;
      }
  }
  return true;
}

bool IRGen::genKernel(ModuleOp module, const ModuleInfo &mod, const FunctionDef &fn,
                      const std::map<std::string, ConstexprValue> &constexprs,
                      KernelSignature &sig, const std::map<std::string, ArgFact> &argFacts) {
  sig = KernelSignature{};
  sig.name = fn.name;
  frames_.clear();
  frames_.push_back(Frame{&mod, &fn, {}, false, {}, 0, {}});

  // Constexpr parameters first: runtime parameter annotations may name them (`X: *T`).
  for (const Param &p : fn.params) {
    if (!p.hasAnnot) {
      fail(p.loc, "parameter '" + p.name + "' of kernel '" + fn.name +
                      "' needs a type annotation such as *f32, i32 or constexpr");
      return false;
    }
    if (p.annot.name != "constexpr" || p.annot.pointerDepth != 0)
      continue;
    SemValue v;
    if (auto it = constexprs.find(p.name); it != constexprs.end()) {
      v = fromConstexpr(it->second);
    } else if (p.defaultValue) {
      v = genExpr(*p.defaultValue); // earlier constexprs are in scope
      if (!v.ok())
        return false;
    } else {
      fail(p.loc, "kernel '" + fn.name + "' needs a value for constexpr parameter '" + p.name +
                      "' (give it a default or pass -D " + p.name + "=...)");
      return false;
    }
    auto cv = toConstexpr(v);
    if (!cv) {
      fail(p.defaultValue ? p.defaultValue->loc : p.loc,
           "constexpr parameter '" + p.name + "' must be a number, a boolean or a type, got " +
               v.describe());
      return false;
    }
    sig.constexprs[p.name] = *cv;
    frame().vars[p.name] = v;
  }

  std::vector<Type> argTypes;
  std::vector<const Param *> runtimeParams;
  for (const Param &p : fn.params) {
    if (p.annot.name == "constexpr" && p.annot.pointerDepth == 0)
      continue;
    if (p.defaultValue) {
      fail(p.defaultValue->loc, "only constexpr parameters can have default values");
      return false;
    }
    DType t;
    if (auto s = parseScalarType(p.annot.name)) {
      t = DType{*s, p.annot.pointerDepth};
    } else if (auto it = frame().vars.find(p.annot.name);
               it != frame().vars.end() && it->second.kind == SemValue::DTypeV) {
      t = it->second.dtype;
      t.pointerDepth += p.annot.pointerDepth;
    } else if (auto it = frame().vars.find(p.annot.name); it != frame().vars.end()) {
      fail(p.annot.loc, "'" + p.annot.name + "' is " + it->second.describe() + ", not a type");
      return false;
    } else {
      fail(p.annot.loc, "unknown type '" + p.annot.name + "'");
      return false;
    }
    if (!t.isPointer() && isFloat8(t.scalar)) {
      fail(p.annot.loc, "parameter '" + p.name + "': " + t.str() +
                            " is a storage type for buffers; pass the scalar as f32 and convert "
                            "with .to(" + t.str() + ")");
      return false;
    }
    sig.params.push_back(KernelParam{p.name, t});
    argTypes.push_back(toMlir(t));
    runtimeParams.push_back(&p);
  }
  if (!markUnspecialized(fn, sig))
    return false;

  b_.setInsertionPointToEnd(module.getBody());
  auto funcTy = b_.getFunctionType(argTypes, {});
  auto func = func::FuncOp::create(b_, loc(fn.nameLoc), fn.name, funcTy);
  func->setAttr("tile.kernel", b_.getUnitAttr());
  std::vector<NamedAttribute> cattrs;
  for (auto &[name, v] : sig.constexprs) {
    Attribute a;
    if (auto *i = std::get_if<int64_t>(&v))
      a = b_.getI64IntegerAttr(*i);
    else if (auto *f = std::get_if<double>(&v))
      a = b_.getF64FloatAttr(*f);
    else if (auto *bv = std::get_if<bool>(&v))
      a = b_.getBoolAttr(*bv);
    else // a type ("f16") or a quoted string ("\"relu\""), as parseConstexpr reads them
      a = b_.getStringAttr(constexprToString(v));
    cattrs.push_back(b_.getNamedAttr(name, a));
  }
  func->setAttr("tile.constexprs", b_.getDictionaryAttr(cattrs));
  std::vector<Attribute> sigAttr;
  for (const KernelParam &p : sig.params)
    sigAttr.push_back(b_.getStringAttr(p.name + ":" + p.type.str()));
  func->setAttr("tile.signature", b_.getArrayAttr(sigAttr));

  mlir::Block *entry = func.addEntryBlock();
  b_.setInsertionPointToStart(entry);
  for (size_t i = 0; i < runtimeParams.size(); ++i) {
    Value v = entry->getArgument(i);
    const KernelParam &kp = sig.params[i];
    auto fact = argFacts.find(kp.name);
    if (fact != argFacts.end() && fact->second != ArgFact::None) {
      if (!takesArgFacts(kp.type)) {
        fail(runtimeParams[i]->loc, "cannot assume '" + kp.name + argFactSuffix(fact->second) +
                                        "': only i32 and i64 parameters can be specialized, '" +
                                        kp.name + "' is " + kp.type.str());
        return false;
      }
      if (fact->second == ArgFact::EqualsOne) {
        // The parameter stays in the signature (launch arguments do not
        // change); its uses see the constant, which canonicalization folds.
        v = arith::ConstantOp::create(b_, loc(runtimeParams[i]->loc),
                                      b_.getIntegerAttr(toMlir(kp.type), 1));
      } else {
        func.setArgAttr(unsigned(i), "tile.divisibility", b_.getI64IntegerAttr(16));
      }
    }
    frame().vars[kp.name] = SemValue::ofRuntime(v, TileType{kp.type, {}});
  }
  bool ok = genBlock(fn.body) && !failed();
  if (ok && frame().returnValue.ok() && frame().returnValue.kind != SemValue::None) {
    fail(fn.loc, "a @kernel cannot return a value");
    ok = false;
  }
  b_.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b_, loc(fn.loc));
  frames_.clear();
  return ok;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool IRGen::genStmt(const Stmt &s) {
  switch (s.kind) {
  case StmtKind::Expr:
    return genExpr(*s.value).ok();
  case StmtKind::Assign: {
    SemValue v = genExpr(*s.value);
    if (!v.ok())
      return false;
    for (const ExprPtr &t : s.targets)
      if (!genAssign(*t, v, t->loc))
        return false;
    return true;
  }
  case StmtKind::AugAssign: {
    const Expr &t = *s.targets[0];
    if (t.kind != ExprKind::Name) {
      fail(t.loc, "augmented assignment needs a plain name on the left");
      return false;
    }
    SemValue cur = genName(t);
    if (!cur.ok())
      return false;
    SemValue rhs = genExpr(*s.value);
    if (!rhs.ok())
      return false;
    SemValue v = binary(s.augOp, cur, rhs, s.loc);
    return v.ok() && genAssign(t, v, t.loc);
  }
  case StmtKind::If:
    return genIf(s);
  case StmtKind::For:
    return genFor(s);
  case StmtKind::While:
    return genWhile(s);
  case StmtKind::Return: {
    if (frame().runtimeControlDepth > 0) {
      fail(s.loc, "'return' inside a loop or a run-time 'if' is not supported; "
                  "compute the value in a variable and return it at the end");
      return false;
    }
    bool isKernel = callStack_.empty();
    SemValue v = SemValue::none();
    if (s.value) {
      if (isKernel) {
        fail(s.loc, "a @kernel cannot return a value");
        return false;
      }
      v = genExpr(*s.value);
      if (!v.ok())
        return false;
    }
    frame().returned = true;
    frame().returnValue = v;
    return true;
  }
  case StmtKind::Pass:
    return true;
  case StmtKind::Break:
  case StmtKind::Continue:
    return genLoopExit(s);
  }
  return false;
}

bool IRGen::genAssign(const Expr &target, SemValue value, Loc l) {
  switch (target.kind) {
  case ExprKind::Name:
    if (value.kind == SemValue::Func) {
      fail(l, "functions cannot be stored in variables");
      return false;
    }
    frame().vars[target.str] = std::move(value);
    return true;
  case ExprKind::Tuple: {
    if (value.kind != SemValue::Tuple) {
      fail(l, "cannot unpack " + value.describe() + " into " +
                  std::to_string(target.args.size()) + " names");
      return false;
    }
    if (value.elems.size() != target.args.size()) {
      fail(l, "cannot unpack " + std::to_string(value.elems.size()) + " values into " +
                  std::to_string(target.args.size()) + " names");
      return false;
    }
    for (size_t i = 0; i < target.args.size(); ++i)
      if (!genAssign(*target.args[i], value.elems[i], target.args[i]->loc))
        return false;
    return true;
  }
  case ExprKind::Subscript:
    fail(l, "cannot assign to a subscript; tiles are values (use store() to write memory)");
    return false;
  default:
    fail(l, "cannot assign to this expression");
    return false;
  }
}

void IRGen::collectAssigned(const Block &block, std::set<std::string> &out) {
  std::function<void(const Expr &)> targets = [&](const Expr &e) {
    if (e.kind == ExprKind::Name)
      out.insert(e.str);
    else if (e.kind == ExprKind::Tuple)
      for (const ExprPtr &a : e.args)
        targets(*a);
  };
  for (const StmtPtr &s : block) {
    for (const ExprPtr &t : s->targets)
      targets(*t);
    collectAssigned(s->body, out);
    collectAssigned(s->orelse, out);
  }
}

SemValue IRGen::toCarried(const SemValue &v, Loc l) {
  if (v.isConst())
    return materialize(v, l);
  return v;
}

bool IRGen::genIf(const Stmt &s) {
  SemValue c = genExpr(*s.cond);
  if (!c.ok())
    return false;
  if (!c.isRuntime()) // compile-time condition: only the taken branch exists
    return genBlock(constTruthy(c) ? s.body : s.orelse);

  Value cond;
  if (!truthy(c, s.cond->loc, cond))
    return false;
  return genRuntimeIf(cond, s.loc, [&] { return genBlock(s.body); },
                      [&] { return genBlock(s.orelse); });
}

bool IRGen::genRuntimeIf(Value cond, Loc l, const std::function<bool()> &genThen,
                         const std::function<bool()> &genElse) {
  Location ml = loc(l);
  Scope before = frame().vars;
  auto ifOp = scf::IfOp::create(b_, ml, TypeRange{}, cond, /*addThenBlock=*/true,
                                /*addElseBlock=*/true);
  mlir::Block *blocks[2] = {&ifOp.getThenRegion().front(), &ifOp.getElseRegion().front()};
  Scope after[2];
  OpBuilder::InsertionGuard guard(b_);
  frame().runtimeControlDepth++;
  for (int k = 0; k < 2; ++k) {
    if (!blocks[k]->empty() && blocks[k]->back().hasTrait<mlir::OpTrait::IsTerminator>())
      blocks[k]->back().erase();
    b_.setInsertionPointToEnd(blocks[k]);
    frame().vars = before;
    if (!(k == 0 ? genThen : genElse)())
      return false;
    after[k] = frame().vars;
  }
  frame().runtimeControlDepth--;

  // Names visible after the `if`: those that existed before, plus those both branches define.
  std::vector<std::string> names;
  for (auto &[name, v] : after[0])
    if (before.count(name) || after[1].count(name))
      names.push_back(name);
  // What differs between the branches: numbers, and the numbers inside
  // tuples and block pointers of one structure (`leaf` their index in
  // numericLeaves, -1 for a plain number).
  struct Differing {
    std::string name;
    int leaf;
    SemValue t, e;
  };
  std::vector<Differing> differing;
  Scope merged = before;
  for (const std::string &name : names) {
    SemValue t = after[0].at(name), e = after[1].at(name);
    merged[name] = t;
    if (sameSem(t, e))
      continue;
    if ((t.isConst() || t.isRuntime()) && (e.isConst() || e.isRuntime())) {
      differing.push_back({name, -1, t, e});
      continue;
    }
    if (!t.isCompound() || !sameStructure(t, e)) {
      fail(l, "variable '" + name + "' holds " + t.describe() + " in one branch and " +
                      e.describe() + " in the other; only numbers, tiles and the numbers "
                      "inside tuples and block pointers can differ between branches of a "
                      "run-time 'if'");
      return false;
    }
    std::vector<SemValue *> tn, en;
    numericLeaves(t, tn);
    numericLeaves(e, en);
    for (size_t k = 0; k < tn.size(); ++k)
      if (!sameSem(*tn[k], *en[k]))
        differing.push_back({name, int(k), *tn[k], *en[k]});
  }
  std::vector<SemValue> yields[2];
  std::vector<Type> types;
  for (const Differing &d : differing) {
    const std::string &name = d.name;
    SemValue tv = d.t, ev = d.e;
    // Both sides take one common type: a run-time side decides, except that a
    // float constant makes an integer side float (as Python would).
    DType common;
    std::vector<int64_t> shape;
    if (tv.isRuntime() && ev.isRuntime()) {
      common = tv.type.elem;
      shape = tv.type.shape;
    } else if (tv.isRuntime() || ev.isRuntime()) {
      const SemValue &rt = tv.isRuntime() ? tv : ev, &ct = tv.isRuntime() ? ev : tv;
      common = rt.type.elem;
      shape = rt.type.shape;
      if (ct.kind == SemValue::Float && !common.isPointer() && !isFloat(common.scalar))
        common = DType{ScalarType::f32, 0};
    } else {
      bool anyFloat = tv.kind == SemValue::Float || ev.kind == SemValue::Float;
      bool anyInt = tv.kind == SemValue::Int || ev.kind == SemValue::Int;
      common = anyFloat ? DType{ScalarType::f32, 0}
               : anyInt ? DType{ScalarType::i32, 0} : DType{ScalarType::i1, 0};
      for (const SemValue *v : {&tv, &ev})
        if (anyInt && !anyFloat && v->kind == SemValue::Int && !fitsIn(v->i, common))
          common = DType{ScalarType::i64, 0};
    }
    for (int k = 0; k < 2; ++k) {
      SemValue &mine = k == 0 ? tv : ev;
      b_.setInsertionPointToEnd(blocks[k]);
      if (mine.isConst() || (mine.isRuntime() && !mine.type.isTile() && !shape.empty())) {
        mine = castTo(mine, common, l);
        if (mine.ok())
          mine = broadcastTo(mine, shape, l);
      } else if (!(tv.isRuntime() && ev.isRuntime()) && mine.type.elem != common &&
                 !mine.type.elem.isPointer()) {
        mine = castTo(mine, common, l); // an int side meeting a float constant
      }
      if (!mine.ok())
        return false;
    }
    if (tv.type != ev.type) {
      fail(l, "variable '" + name + "' is " + tv.type.str() + " after the 'if' branch but " +
                      ev.type.str() + " after the 'else' branch");
      return false;
    }
    yields[0].push_back(tv);
    yields[1].push_back(ev);
    types.push_back(toMlir(tv.type));
  }
  for (int k = 0; k < 2; ++k) {
    b_.setInsertionPointToEnd(blocks[k]);
    std::vector<Value> vals;
    for (auto &v : yields[k])
      vals.push_back(v.value);
    scf::YieldOp::create(b_, ml, vals);
  }
  b_.setInsertionPoint(ifOp);
  auto newIf = scf::IfOp::create(b_, ml, types, cond, /*addThenBlock=*/false,
                                 /*addElseBlock=*/false);
  newIf.getThenRegion().takeBody(ifOp.getThenRegion());
  newIf.getElseRegion().takeBody(ifOp.getElseRegion());
  ifOp.erase();
  for (size_t i = 0; i < differing.size(); ++i) {
    SemValue r = SemValue::ofRuntime(newIf.getResult(i), yields[0][i].type);
    SemValue &var = merged[differing[i].name];
    std::vector<SemValue *> numbers;
    if (differing[i].leaf >= 0)
      numericLeaves(var, numbers);
    (differing[i].leaf < 0 ? var : *numbers[size_t(differing[i].leaf)]) = r;
  }
  for (int k = 0; k < 2; ++k)
    for (auto &[name, v] : after[k])
      if (!merged.count(name))
        frame().scopedOut[name] = l;
  frame().vars = merged;
  return true;
}

bool IRGen::carriedYields(const RuntimeLoop &loop, Loc l, std::vector<Value> &yields) {
  const std::vector<std::string> &carried = loop.carried;
  const std::vector<TileType> &types = loop.types;
  for (size_t i = 0; i < carried.size(); ++i) {
    SemValue v = frame().vars.at(carried[i]);
    if (loop.leaf[i] >= 0) { // one number of a tuple or block pointer
      const SemValue &start = loop.before.at(carried[i]);
      if (!sameStructure(start, v)) {
        fail(l, "loop-carried variable '" + carried[i] + "' holds " + start.describe() +
                    " before the loop and " + v.describe() + " after an iteration");
        return false;
      }
      std::vector<SemValue *> numbers;
      numericLeaves(v, numbers);
      v = *numbers[size_t(loop.leaf[i])];
    }
    if (v.isConst()) { // a constant assigned in the body takes the carried type
      v = castTo(v, types[i].elem, l);
      if (v.ok())
        v = broadcastTo(v, types[i].shape, l);
      if (!v.ok())
        return false;
    }
    if (!v.isRuntime() || v.type != types[i]) {
      fail(l, "loop-carried variable '" + carried[i] + "' changes type inside the loop: " +
                  types[i].str() + " before the loop, " +
                  (v.isRuntime() ? v.type.str() : v.describe()) + " after an iteration");
      return false;
    }
    yields.push_back(v.value);
  }
  return true;
}

bool IRGen::closeLoop(const RuntimeLoop &loop, ValueRange results, Loc l) {
  // Values with no number to carry (types, strings) must not change.
  for (const std::string &name : loop.assigned) {
    auto it = loop.before.find(name);
    if (it == loop.before.end() || llvm::is_contained(loop.carried, name))
      continue;
    if (!sameSem(it->second, frame().vars.at(name))) {
      fail(l, "variable '" + name + "' holds " + it->second.describe() +
                  ", which cannot change inside a run-time loop");
      return false;
    }
  }
  Scope inside = frame().vars;
  frame().vars = loop.before;
  bindCarried(loop, results);
  for (auto &[name, v] : inside)
    if (!loop.before.count(name))
      frame().scopedOut[name] = l;
  return true;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

SemValue IRGen::genExpr(const Expr &e) {
  if (failed())
    return SemValue::invalid();
  switch (e.kind) {
  case ExprKind::IntLit: return SemValue::ofInt(e.intValue);
  case ExprKind::FloatLit: return SemValue::ofFloat(e.floatValue);
  case ExprKind::BoolLit: return SemValue::ofBool(e.boolValue);
  case ExprKind::StringLit: return SemValue::ofStr(e.str);
  case ExprKind::NoneLit: return SemValue::none();
  case ExprKind::Name: return genName(e);
  case ExprKind::Attribute: return genAttribute(e);
  case ExprKind::Call: return genCall(e);
  case ExprKind::Subscript: return genSubscript(e);
  case ExprKind::Slice: return fail(e.loc, "':' is only allowed inside a subscript");
  case ExprKind::Binary: return genBinary(e);
  case ExprKind::Unary: return genUnary(e);
  case ExprKind::IfExp: return genIfExp(e);
  case ExprKind::List: // a list is a tuple here: shapes such as zeros([BLOCK], f32)
  case ExprKind::Tuple: {
    std::vector<SemValue> elems;
    for (const ExprPtr &a : e.args) {
      elems.push_back(genExpr(*a));
      if (!elems.back().ok())
        return SemValue::invalid();
    }
    return SemValue::ofTuple(std::move(elems));
  }
  }
  return fail(e.loc, "unsupported expression");
}

static const char *const kBuiltinNames[] = {
    "program_id", "num_programs", "cluster_size", "arange", "zeros", "zeros_like", "full", "broadcast_to",
    "reshape", "trans", "expand_dims", "gather", "load", "store", "atomic_add", "atomic_max",
    "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg", "atomic_cas", "dot",
    "sum", "max", "min", "argmax", "argmin", "exp", "exp2", "log", "log2", "sqrt", "rsqrt",
    "sin", "cos", "tanh", "erf", "floor", "ceil", "abs", "fma", "where", "maximum", "minimum",
    "cdiv", "reduce", "permute", "cumsum", "cumprod", "associative_scan", "sort", "argsort", "topk", "inline_asm_elementwise", "fdiv", "div_rn", "sigmoid", "softmax", "clamp", "debug_barrier", "grid_dependency_wait", "launch_dependents", "device_assert", "flip", "join", "split", "interleave", "cat", "multiple_of", "max_contiguous", "static_assert", "device_print", "cast", "bitcast",
    "float", "int", "range", "static_range", "umulhi", "rand", "randn", "randint", "randint4x", "rand4x", "randn4x",
    "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor"};

static bool isBuiltin(const std::string &name) {
  for (const char *b : kBuiltinNames)
    if (name == b)
      return true;
  return false;
}

SemValue IRGen::evalGlobalConst(const ModuleInfo &mod, const GlobalConst &g) {
  if (auto it = globalCache_.find(&g); it != globalCache_.end())
    return it->second;
  if (globalsInProgress_.count(&g))
    return fail(g.loc, "constant '" + g.name + "' is defined in terms of itself");
  globalsInProgress_.insert(&g);
  frames_.push_back(Frame{&mod, nullptr, {}, false, {}, 0, {}});
  SemValue v = genExpr(*g.value);
  frames_.pop_back();
  globalsInProgress_.erase(&g);
  if (!v.ok())
    return v;
  if (v.isRuntime())
    return fail(g.value->loc, "top-level constant '" + g.name + "' must be known at compile time");
  globalCache_[&g] = v;
  return v;
}

SemValue IRGen::lookupGlobal(const ModuleInfo &mod, const std::string &name, Loc l, int depth) {
  if (depth > 32)
    return fail(l, "import chain for '" + name + "' is too long or circular");
  if (auto it = mod.globals.find(name); it != mod.globals.end())
    return evalGlobalConst(mod, *it->second);
  if (auto it = mod.functions.find(name); it != mod.functions.end()) {
    SemValue f;
    f.kind = SemValue::Func;
    f.fn = it->second;
    f.fnModule = &mod;
    return f;
  }
  if (auto it = mod.imports.find(name); it != mod.imports.end())
    return lookupGlobal(*it->second.module, it->second.name, l, depth + 1);
  if (auto s = parseScalarType(name))
    return SemValue::ofDType(DType{*s, 0});
  return SemValue::invalid();
}

SemValue IRGen::genName(const Expr &e) {
  if (auto it = frame().vars.find(e.str); it != frame().vars.end())
    return it->second;
  SemValue g = lookupGlobal(*frame().module, e.str, e.loc);
  if (g.ok() || failed())
    return g;
  if (isBuiltin(e.str))
    return fail(e.loc, "builtin '" + e.str + "' can only be called");
  if (auto it = frame().scopedOut.find(e.str); it != frame().scopedOut.end())
    return fail(e.loc, "'" + e.str + "' is only defined inside the block at line " +
                           std::to_string(it->second.line) +
                           "; assign it before that block to use it afterwards");
  // Suggest the closest visible name.
  std::string best;
  size_t bestD = 3;
  auto lower = [](std::string x) {
    for (char &ch : x)
      ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return x;
  };
  auto consider = [&](const std::string &cand) {
    // Same name in another case beats any other near miss.
    size_t d = lower(cand) == lower(e.str) ? 0 : editDistance(e.str, cand);
    if (d < bestD && d < std::max<size_t>(2, e.str.size() / 2)) {
      bestD = d;
      best = cand;
    }
  };
  for (auto &[n, v] : frame().vars)
    consider(n);
  for (auto &[n, v] : frame().module->functions)
    if (!hasDecorator(*v, "kernel"))
      consider(n);
  for (auto &[n, v] : frame().module->globals)
    consider(n);
  for (auto &[n, v] : frame().module->imports)
    consider(n);
  for (const char *b : kBuiltinNames)
    consider(b);
  std::string msg = "unknown name '" + e.str + "'";
  if (!best.empty())
    msg += "; did you mean '" + best + "'?";
  return fail(e.loc, msg);
}

SemValue IRGen::genIfExp(const Expr &e) {
  SemValue c = genExpr(*e.operands[1]);
  if (!c.ok())
    return c;
  if (!c.isRuntime())
    return genExpr(constTruthy(c) ? *e.operands[0] : *e.operands[2]);
  SemValue a = genExpr(*e.operands[0]);
  if (!a.ok())
    return a;
  SemValue b = genExpr(*e.operands[2]);
  if (!b.ok())
    return b;
  if (!unify(a, b, e.loc, "if-else"))
    return SemValue::invalid();
  SemValue cc = castTo(c, DType{ScalarType::i1, 0}, e.loc);
  if (!cc.ok())
    return cc;
  auto shape = broadcastShapes(cc.type.shape, a.type.shape, e.loc);
  if (!shape)
    return SemValue::invalid();
  cc = broadcastTo(cc, *shape, e.loc);
  a = broadcastTo(a, *shape, e.loc);
  b = broadcastTo(b, *shape, e.loc);
  if (!cc.ok() || !a.ok() || !b.ok())
    return SemValue::invalid();
  return SemValue::ofRuntime(arith::SelectOp::create(b_, loc(e.loc), cc.value, a.value, b.value),
                             a.type);
}

SemValue IRGen::genUnary(const Expr &e) {
  SemValue v = genExpr(*e.operands[0]);
  if (!v.ok())
    return v;
  Location ml = loc(e.loc);
  switch (e.unOp) {
  case UnOp::Pos:
    if (v.kind == SemValue::Int || v.kind == SemValue::Float ||
        (v.isRuntime() && !v.type.elem.isPointer()))
      return v;
    return fail(e.loc, "unary '+' needs a number, got " + v.describe());
  case UnOp::Neg:
    if (v.kind == SemValue::Int) {
      if (v.i == std::numeric_limits<int64_t>::min())
        return fail(e.loc, "integer overflow in constant expression");
      return SemValue::ofInt(-v.i);
    }
    if (v.kind == SemValue::Bool)
      return SemValue::ofInt(-int64_t(v.b));
    if (v.kind == SemValue::Float)
      return SemValue::ofFloat(-v.f);
    if (v.isRuntime() && !v.type.elem.isPointer()) {
      if (isFloat(v.type.elem.scalar))
        return SemValue::ofRuntime(arith::NegFOp::create(b_, ml, v.value), v.type);
      return binary(BinOp::Sub, SemValue::ofInt(0), v, e.loc);
    }
    return fail(e.loc, "unary '-' needs a number, got " + v.describe());
  case UnOp::Not:
    if (!v.isRuntime())
      return SemValue::ofBool(!constTruthy(v));
    if (v.type.elem.isPointer())
      return fail(e.loc, "'not' needs a number or a boolean, got " + v.type.str());
    {
      SemValue c = castTo(v, DType{ScalarType::i1, 0}, e.loc);
      if (!c.ok())
        return c;
      SemValue t = constant(DType{ScalarType::i1, 0}, c.type.shape, 0, 1, e.loc);
      return SemValue::ofRuntime(arith::XOrIOp::create(b_, ml, c.value, t.value), c.type);
    }
  case UnOp::Invert:
    if (v.kind == SemValue::Int)
      return SemValue::ofInt(~v.i);
    if (v.isRuntime() && !v.type.elem.isPointer() && !isFloat(v.type.elem.scalar)) {
      SemValue ones = constant(v.type.elem, v.type.shape, 0, -1, e.loc);
      return SemValue::ofRuntime(arith::XOrIOp::create(b_, ml, v.value, ones.value), v.type);
    }
    return fail(e.loc, "'~' needs an integer, got " + v.describe());
  }
  return SemValue::invalid();
}

SemValue IRGen::genBinary(const Expr &e) {
  SemValue a = genExpr(*e.operands[0]);
  if (!a.ok())
    return a;
  // `and` / `or` on compile-time values short-circuit like Python.
  if ((e.binOp == BinOp::And || e.binOp == BinOp::Or) && !a.isRuntime()) {
    bool t = constTruthy(a);
    if ((e.binOp == BinOp::And && !t) || (e.binOp == BinOp::Or && t))
      return a;
    return genExpr(*e.operands[1]);
  }
  SemValue b = genExpr(*e.operands[1]);
  if (!b.ok())
    return b;
  return binary(e.binOp, a, b, e.loc, startLoc(*e.operands[0]), startLoc(*e.operands[1]));
}

static std::optional<double> asDouble(const SemValue &v) {
  if (v.kind == SemValue::Int)
    return double(v.i);
  if (v.kind == SemValue::Bool)
    return double(v.b);
  if (v.kind == SemValue::Float)
    return v.f;
  return std::nullopt;
}

SemValue IRGen::constBinary(BinOp op, const SemValue &a0, const SemValue &b0, Loc l) {
  // Equality works on every compile-time value.
  if (op == BinOp::Eq || op == BinOp::Ne) {
    bool eq;
    auto da = asDouble(a0), db = asDouble(b0);
    if (da && db)
      eq = *da == *db;
    else
      eq = sameSem(a0, b0);
    return SemValue::ofBool(op == BinOp::Eq ? eq : !eq);
  }
  if (op == BinOp::Add && a0.kind == SemValue::Str && b0.kind == SemValue::Str)
    return SemValue::ofStr(a0.s + b0.s); // messages built from string constexprs
  if (!a0.isConst() || !b0.isConst())
    return fail(l, std::string("operator '") + spelling(op) + "' cannot be applied to " +
                       a0.describe() + " and " + b0.describe());
  SemValue a = a0.kind == SemValue::Bool ? SemValue::ofInt(a0.b) : a0;
  SemValue b = b0.kind == SemValue::Bool ? SemValue::ofInt(b0.b) : b0;
  bool bothInt = a.kind == SemValue::Int && b.kind == SemValue::Int;
  if (op == BinOp::And || op == BinOp::Or) // only reached with a constant lhs handled above
    return op == BinOp::And ? (constTruthy(a0) ? b0 : a0) : (constTruthy(a0) ? a0 : b0);
  if (bothInt) {
    int64_t x = a.i, y = b.i, r = 0;
    auto overflow = [&]() { return fail(l, "integer overflow in constant expression"); };
    switch (op) {
    case BinOp::Add: if (__builtin_add_overflow(x, y, &r)) return overflow(); return SemValue::ofInt(r);
    case BinOp::Sub: if (__builtin_sub_overflow(x, y, &r)) return overflow(); return SemValue::ofInt(r);
    case BinOp::Mul: if (__builtin_mul_overflow(x, y, &r)) return overflow(); return SemValue::ofInt(r);
    case BinOp::Div:
      if (y == 0) return fail(l, "division by zero in constant expression");
      return SemValue::ofFloat(double(x) / double(y));
    case BinOp::FloorDiv:
    case BinOp::Mod: {
      if (y == 0) return fail(l, "division by zero in constant expression");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) return overflow();
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) { q -= 1; m += y; } // Python floors
      return SemValue::ofInt(op == BinOp::FloorDiv ? q : m);
    }
    case BinOp::Pow: {
      if (y < 0) return SemValue::ofFloat(std::pow(double(x), double(y)));
      int64_t acc = 1;
      for (int64_t k = 0; k < y; ++k) {
        if (__builtin_mul_overflow(acc, x, &acc)) return overflow();
        if (acc == 0 || acc == 1) break;
      }
      return SemValue::ofInt(acc);
    }
    case BinOp::BitAnd: return SemValue::ofInt(x & y);
    case BinOp::BitOr: return SemValue::ofInt(x | y);
    case BinOp::BitXor: return SemValue::ofInt(x ^ y);
    case BinOp::Shl:
      if (y < 0 || y > 63) return fail(l, "shift count " + std::to_string(y) + " is out of range");
      return SemValue::ofInt(int64_t(uint64_t(x) << y));
    case BinOp::Shr:
      if (y < 0 || y > 63) return fail(l, "shift count " + std::to_string(y) + " is out of range");
      return SemValue::ofInt(x >> y);
    case BinOp::Lt: return SemValue::ofBool(x < y);
    case BinOp::Le: return SemValue::ofBool(x <= y);
    case BinOp::Gt: return SemValue::ofBool(x > y);
    case BinOp::Ge: return SemValue::ofBool(x >= y);
    default: break;
    }
  }
  double x = *asDouble(a), y = *asDouble(b);
  switch (op) {
  case BinOp::Add: return SemValue::ofFloat(x + y);
  case BinOp::Sub: return SemValue::ofFloat(x - y);
  case BinOp::Mul: return SemValue::ofFloat(x * y);
  case BinOp::Div:
    if (y == 0) return fail(l, "division by zero in constant expression");
    return SemValue::ofFloat(x / y);
  case BinOp::FloorDiv:
    if (y == 0) return fail(l, "division by zero in constant expression");
    return SemValue::ofFloat(std::floor(x / y));
  case BinOp::Mod:
    if (y == 0) return fail(l, "division by zero in constant expression");
    return SemValue::ofFloat(x - std::floor(x / y) * y);
  case BinOp::Pow: return SemValue::ofFloat(std::pow(x, y));
  case BinOp::Lt: return SemValue::ofBool(x < y);
  case BinOp::Le: return SemValue::ofBool(x <= y);
  case BinOp::Gt: return SemValue::ofBool(x > y);
  case BinOp::Ge: return SemValue::ofBool(x >= y);
  default:
    return fail(l, std::string("operator '") + spelling(op) + "' needs integer operands, got " +
                       a0.describe() + " and " + b0.describe());
  }
}

SemValue IRGen::binary(BinOp op, const SemValue &lhs, const SemValue &rhs, Loc l, Loc la,
                       Loc lb) {
  if (!lhs.isRuntime() && !rhs.isRuntime())
    return constBinary(op, lhs, rhs, l);
  for (const SemValue *v : {&lhs, &rhs})
    if (!v->isConst() && !v->isRuntime())
      return fail(l, std::string("operator '") + spelling(op) + "' cannot be applied to " +
                         v->describe());
  Location ml = loc(l);
  bool lp = lhs.isRuntime() && lhs.type.elem.isPointer();
  bool rp = rhs.isRuntime() && rhs.type.elem.isPointer();

  // Pointer arithmetic: pointer +/- integer, in units of the pointee.
  if (lp || rp) {
    if (lp && rp) {
      if (op == BinOp::Add)
        return fail(l, "cannot add two pointers (" + lhs.type.str() + " + " + rhs.type.str() + ")");
      if (op == BinOp::Sub)
        return fail(l, "cannot subtract two pointers; keep integer offsets instead");
    }
    bool arith = op == BinOp::Add || (op == BinOp::Sub && lp);
    if (!arith)
      return fail(l, std::string("operator '") + spelling(op) + "' is not defined for pointers");
    const SemValue &ptr = lp ? lhs : rhs;
    SemValue off = lp ? rhs : lhs;
    bool offIsInt = off.kind == SemValue::Int || off.kind == SemValue::Bool ||
                    (off.isRuntime() && !off.type.elem.isPointer() && !isFloat(off.type.elem.scalar));
    if (!offIsInt)
      return fail(l, "pointer offsets must be integers, got " + off.describe());
    if (off.isConst())
      off = materialize(off, l);
    if (!off.ok())
      return off;
    if (op == BinOp::Sub)
      off = binary(BinOp::Sub, SemValue::ofInt(0), off, l);
    // Offsets are signed i32 or i64: narrower ones widen (unsigned ones
    // zero-extend), a u32 widens to i64 so that offsets past 2^31 stay positive.
    ScalarType os = off.type.elem.scalar;
    if (scalarTypeBits(os) < 32)
      off = castTo(off, DType{ScalarType::i32, 0}, l);
    else if (os == ScalarType::u32 || os == ScalarType::u64)
      off = castTo(off, DType{ScalarType::i64, 0}, l);
    if (!off.ok())
      return off;
    auto shape = broadcastShapes(ptr.type.shape, off.type.shape, l);
    if (!shape)
      return SemValue::invalid();
    SemValue p = broadcastTo(ptr, *shape, l);
    off = broadcastTo(off, *shape, l);
    if (!p.ok() || !off.ok())
      return SemValue::invalid();
    return SemValue::ofRuntime(tile::AddPtrOp::create(b_, ml, p.value.getType(), p.value, off.value),
                               p.type);
  }

  SemValue a = lhs, b = rhs;
  // True division always produces floats, as in Python.
  if (op == BinOp::Div) {
    auto isIntLike = [](const SemValue &v) {
      return v.kind == SemValue::Int || v.kind == SemValue::Bool ||
             (v.isRuntime() && !isFloat(v.type.elem.scalar));
    };
    if (isIntLike(a) && isIntLike(b)) {
      a = castTo(a, DType{ScalarType::f32, 0}, l);
      b = castTo(b, DType{ScalarType::f32, 0}, l);
      if (!a.ok() || !b.ok())
        return SemValue::invalid();
    }
  }
  if (!unify(a, b, l, spelling(op), la, lb))
    return SemValue::invalid();
  DType t = a.type.elem;
  bool fp = isFloat(t.scalar), uns = isUnsigned(t.scalar);
  TileType boolTy{DType{ScalarType::i1, 0}, a.type.shape};
  Value x = a.value, y = b.value;
  auto res = [&](Value v) { return SemValue::ofRuntime(v, a.type); };
  auto cmp = [&](arith::CmpFPredicate fpred, arith::CmpIPredicate spred,
                 arith::CmpIPredicate upred) {
    Value r = fp ? Value(arith::CmpFOp::create(b_, ml, fpred, x, y))
                 : Value(arith::CmpIOp::create(b_, ml, uns ? upred : spred, x, y));
    return SemValue::ofRuntime(r, boolTy);
  };
  auto needInt = [&]() {
    return fail(l, std::string("operator '") + spelling(op) +
                       "' needs integer or boolean operands, got " + a.type.str());
  };
  switch (op) {
  case BinOp::Add: return res(fp ? Value(arith::AddFOp::create(b_, ml, x, y)) : Value(arith::AddIOp::create(b_, ml, x, y)));
  case BinOp::Sub: return res(fp ? Value(arith::SubFOp::create(b_, ml, x, y)) : Value(arith::SubIOp::create(b_, ml, x, y)));
  case BinOp::Mul: return res(fp ? Value(arith::MulFOp::create(b_, ml, x, y)) : Value(arith::MulIOp::create(b_, ml, x, y)));
  case BinOp::Div: return res(arith::DivFOp::create(b_, ml, x, y));
  case BinOp::FloorDiv:
    if (fp)
      return res(math::FloorOp::create(b_, ml, arith::DivFOp::create(b_, ml, x, y)));
    return res(uns ? Value(arith::DivUIOp::create(b_, ml, x, y)) : Value(arith::DivSIOp::create(b_, ml, x, y)));
  case BinOp::Mod:
    if (fp) { // Python semantics, consistent with //: a - floor(a / b) * b
      Value q = math::FloorOp::create(b_, ml, arith::DivFOp::create(b_, ml, x, y));
      return res(arith::SubFOp::create(b_, ml, x, arith::MulFOp::create(b_, ml, q, y)));
    }
    return res(uns ? Value(arith::RemUIOp::create(b_, ml, x, y)) : Value(arith::RemSIOp::create(b_, ml, x, y)));
  case BinOp::Pow:
    if (!fp)
      return fail(l, "'**' on run-time integers is not supported; convert to float first");
    return res(math::PowFOp::create(b_, ml, x, y));
  case BinOp::BitAnd: if (fp) return needInt(); return res(arith::AndIOp::create(b_, ml, x, y));
  case BinOp::BitOr: if (fp) return needInt(); return res(arith::OrIOp::create(b_, ml, x, y));
  case BinOp::BitXor: if (fp) return needInt(); return res(arith::XOrIOp::create(b_, ml, x, y));
  case BinOp::Shl: if (fp) return needInt(); return res(arith::ShLIOp::create(b_, ml, x, y));
  case BinOp::Shr:
    if (fp) return needInt();
    return res(uns ? Value(arith::ShRUIOp::create(b_, ml, x, y)) : Value(arith::ShRSIOp::create(b_, ml, x, y)));
  case BinOp::And:
  case BinOp::Or:
    if (t.scalar != ScalarType::i1)
      return fail(l, std::string("'") + spelling(op) + "' needs boolean operands, got " +
                         a.type.str() + "; use '" + (op == BinOp::And ? "&" : "|") +
                         "' for bitwise operations");
    return res(op == BinOp::And ? Value(arith::AndIOp::create(b_, ml, x, y)) : Value(arith::OrIOp::create(b_, ml, x, y)));
  case BinOp::Eq: return cmp(arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq, arith::CmpIPredicate::eq);
  case BinOp::Ne: return cmp(arith::CmpFPredicate::UNE, arith::CmpIPredicate::ne, arith::CmpIPredicate::ne);
  case BinOp::Lt: return cmp(arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt, arith::CmpIPredicate::ult);
  case BinOp::Le: return cmp(arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle, arith::CmpIPredicate::ule);
  case BinOp::Gt: return cmp(arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt, arith::CmpIPredicate::ugt);
  case BinOp::Ge: return cmp(arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge, arith::CmpIPredicate::uge);
  }
  return SemValue::invalid();
}

SemValue IRGen::genSubscript(const Expr &e) {
  SemValue base = genExpr(*e.operands[0]);
  if (!base.ok())
    return base;
  if (base.kind == SemValue::Tuple) {
    if (e.args.size() != 1)
      return fail(e.loc, "tuples take a single index");
    SemValue idx = genExpr(*e.args[0]);
    if (!idx.ok())
      return idx;
    if (idx.kind != SemValue::Int)
      return fail(e.args[0]->loc, "tuple index must be a constexpr integer, got " + idx.describe());
    int64_t n = int64_t(base.elems.size()), i = idx.i < 0 ? idx.i + n : idx.i;
    if (i < 0 || i >= n)
      return fail(e.args[0]->loc, "tuple index " + std::to_string(idx.i) +
                                      " is out of range for a tuple of " + std::to_string(n));
    return base.elems[size_t(i)];
  }
  if (base.isConst())
    base = materialize(base, e.loc);
  if (!base.isRuntime())
    return fail(e.loc, "cannot index " + base.describe());
  size_t rank = base.type.shape.size(), used = 0;
  // Static slices lo:hi per sliced axis (compile-time bounds, Python's
  // negative and omitted ones; the length must be a power of two).
  std::vector<std::pair<size_t, std::pair<int64_t, int64_t>>> cuts;
  for (const ExprPtr &ix : e.args) {
    if (ix->kind == ExprKind::Slice) {
      const Expr *lo = ix->operands.size() > 0 ? ix->operands[0].get() : nullptr;
      const Expr *hi = ix->operands.size() > 1 ? ix->operands[1].get() : nullptr;
      if ((lo || hi) && used < rank) {
        int64_t n = base.type.shape[used], bounds[2] = {0, n};
        const Expr *ends[2] = {lo, hi};
        for (int k = 0; k < 2; ++k) {
          if (!ends[k])
            continue;
          SemValue b = genExpr(*ends[k]);
          if (!b.ok())
            return b;
          if (b.kind != SemValue::Int)
            return fail(ends[k]->loc, "tile slice bounds must be constexpr integers, got " +
                                          b.describe());
          bounds[k] = b.i < 0 ? b.i + n : b.i;
        }
        if (bounds[0] < 0 || bounds[1] > n || bounds[0] >= bounds[1])
          return fail(ix->loc, "slice " + std::to_string(bounds[0]) + ":" + std::to_string(bounds[1]) +
                                   " is empty or outside the " + std::to_string(n) +
                                   " elements of dimension " + std::to_string(used));
        int64_t len = bounds[1] - bounds[0];
        if (len & (len - 1))
          return fail(ix->loc, "a tile slice must have a power-of-two length, got " +
                                   std::to_string(len));
        cuts.push_back({used, {bounds[0], bounds[1]}});
      }
      ++used;
    } else if (ix->kind != ExprKind::NoneLit) {
      return fail(ix->loc, "tiles can only be indexed with slices and None");
    }
  }
  if (used != rank)
    return fail(e.loc, "a tile of rank " + std::to_string(rank) + " needs " +
                           std::to_string(rank) + " ':' in its subscript, got " +
                           std::to_string(used));
  SemValue v = base;
  // Each slice is a gather of the positions lo..hi-1 along its axis.
  for (auto &[axis, b] : cuts) {
    int64_t len = b.second - b.first;
    mlir::Location ml = loc(e.loc);
    TileType r{{ScalarType::i32, 0}, {len}};
    SemValue pos = SemValue::ofRuntime(
        tile::MakeRangeOp::create(b_, ml, toMlir(r), int32_t(b.first), int32_t(b.second)), r);
    std::vector<int64_t> shape = v.type.shape;
    shape[axis] = len;
    if (shape.size() > 1) {
      std::vector<int64_t> along(shape.size(), 1);
      along[axis] = len;
      TileType at{{ScalarType::i32, 0}, along};
      pos = SemValue::ofRuntime(tile::ReshapeOp::create(b_, ml, toMlir(at), pos.value), at);
      pos = broadcastTo(pos, shape, e.loc);
      if (!pos.ok())
        return pos;
    }
    TileType t{v.type.elem, shape};
    v = SemValue::ofRuntime(tile::GatherOp::create(b_, ml, toMlir(t), v.value, pos.value,
                                                   b_.getI32IntegerAttr(int32_t(axis))),
                            t);
  }
  if (!v.type.isTile()) { // scalar[None, None] -> tile of shape (1, 1)
    TileType rt{v.type.elem, std::vector<int64_t>(e.args.size(), 1)};
    return SemValue::ofRuntime(tile::SplatOp::create(b_, loc(e.loc), toMlir(rt), v.value), rt);
  }
  size_t axis = 0;
  for (const ExprPtr &ix : e.args) {
    if (ix->kind == ExprKind::NoneLit) {
      std::vector<int64_t> shape = v.type.shape;
      shape.insert(shape.begin() + axis, 1);
      if (!checkTileShape(shape, ix->loc))
        return SemValue::invalid();
      TileType rt{v.type.elem, shape};
      v = SemValue::ofRuntime(tile::ExpandDimsOp::create(b_, loc(ix->loc), toMlir(rt), v.value,
                                                         b_.getI32IntegerAttr(int32_t(axis))),
                              rt);
    }
    ++axis;
  }
  return v;
}

SemValue IRGen::genAttribute(const Expr &e) {
  SemValue base = genExpr(*e.operands[0]);
  if (!base.ok())
    return base;
  const std::string &name = e.str;
  if (base.isRuntime()) {
    if (name == "shape") {
      std::vector<SemValue> dims;
      for (int64_t d : base.type.shape)
        dims.push_back(SemValue::ofInt(d));
      return SemValue::ofTuple(std::move(dims));
    }
    if (name == "dtype")
      return SemValue::ofDType(base.type.elem);
    if (name == "T") {
      if (base.type.shape.size() != 2)
        return fail(e.loc, ".T needs a 2-D tile, got " + base.type.str());
      TileType rt{base.type.elem, {base.type.shape[1], base.type.shape[0]}};
      return SemValue::ofRuntime(tile::TransOp::create(b_, loc(e.loc), toMlir(rt), base.value,
                                                       b_.getDenseI32ArrayAttr({1, 0})),
                                 rt);
    }
    if (name == "to")
      return fail(e.loc, "'.to' must be called, as in x.to(f16)");
  }
  if (base.kind == SemValue::BlockPtr && (name == "block_shape" || name == "dtype")) {
    if (name == "dtype")
      return SemValue::ofDType(base.bpBase().type.elem.pointee());
    std::vector<SemValue> dims;
    for (int64_t d : base.block)
      dims.push_back(SemValue::ofInt(d));
    return SemValue::ofTuple(std::move(dims));
  }
  if (base.kind == SemValue::DTypeV) {
    if (name == "is_floating")
      return SemValue::ofBool(!base.dtype.isPointer() && isFloat(base.dtype.scalar));
    if (name == "bits")
      return SemValue::ofInt(base.dtype.isPointer() ? 64 : scalarTypeBits(base.dtype.scalar));
  }
  return fail(e.loc, base.describe() + " has no attribute '" + name + "'");
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

SemValue IRGen::genCall(const Expr &e) {
  const Expr &callee = *e.operands[0];
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kws;
  auto evalArgs = [&]() -> bool {
    for (const ExprPtr &a : e.args) {
      SemValue v = genExpr(*a);
      if (!v.ok())
        return false;
      args.push_back(Arg{v, a->loc, a.get(), true});
    }
    for (const Keyword &k : e.keywords) {
      for (auto &[n, prev] : kws)
        if (n == k.name) {
          fail(k.loc, "keyword argument '" + k.name + "' given twice");
          return false;
        }
      SemValue v = genExpr(*k.value);
      if (!v.ok())
        return false;
      kws.emplace_back(k.name, Arg{v, k.loc, k.value.get(), true});
    }
    return true;
  };

  if (callee.kind == ExprKind::Attribute) { // method call: x.to(T)
    SemValue self = genExpr(*callee.operands[0]);
    if (!self.ok())
      return self;
    // desc.load(offsets), desc.store(offsets, value) on a tensor descriptor
    bool descMethod = self.kind == SemValue::BlockPtr && self.descriptor &&
                      (callee.str == "load" || callee.str == "store");
    if (callee.str != "to" && !descMethod)
      return fail(callee.loc, self.describe() + " has no method '" + callee.str + "'");
    if (!evalArgs())
      return SemValue::invalid();
    args.insert(args.begin(), Arg{self, callee.operands[0]->loc, callee.operands[0].get(), true});
    return callBuiltin(descMethod ? callee.str + "_tensor_descriptor" : "cast", e, args, kws);
  }
  if (callee.kind != ExprKind::Name)
    return fail(callee.loc, "only named functions can be called");
  const std::string &name = callee.str;
  if (auto it = frame().vars.find(name); it != frame().vars.end())
    return fail(callee.loc, "'" + name + "' is a variable (" + it->second.describe() +
                                "), not a function");
  SemValue target = lookupGlobal(*frame().module, name, callee.loc);
  if (failed())
    return SemValue::invalid();
  if (target.kind == SemValue::Func) {
    if (!evalArgs())
      return SemValue::invalid();
    return callHelper(e, *target.fn, *target.fnModule, args, kws);
  }
  if (target.ok() && target.kind != SemValue::DTypeV)
    return fail(callee.loc, "'" + name + "' is " + target.describe() + ", not a function");
  if (target.kind == SemValue::DTypeV) { // f16(x) is a cast
    if (!evalArgs())
      return SemValue::invalid();
    if (args.size() != 1 || !kws.empty())
      return fail(e.loc, name + "() takes exactly one argument");
    args.push_back(Arg{target, callee.loc, &callee, true});
    return callBuiltin("cast", e, args, kws);
  }
  if (name == "range" || name == "static_range")
    return fail(callee.loc, name + "() can only be used as the iterable of a for loop");
  if (!isBuiltin(name))
    return genName(callee); // reports the unknown name with a suggestion
  if (!evalArgs())
    return SemValue::invalid();
  return callBuiltin(name, e, args, kws);
}

SemValue IRGen::callHelper(const Expr &call, const FunctionDef &fn, const ModuleInfo &mod,
                           std::vector<Arg> &args,
                           std::vector<std::pair<std::string, Arg>> &kws) {
  if (hasDecorator(fn, "kernel"))
    return fail(call.loc, "cannot call @kernel '" + fn.name +
                              "' from a kernel; only @func helpers can be called");
  for (const FunctionDef *f : callStack_)
    if (f == &fn) {
      fail(call.loc, "recursive call to '" + fn.name +
                         "': @func helpers are inlined, so recursion is not allowed");
      return SemValue::invalid();
    }
  if (callStack_.size() >= size_t(kMaxInlineDepth))
    return fail(call.loc, "helpers are nested more than " + std::to_string(kMaxInlineDepth) +
                              " calls deep");
  if (args.size() > fn.params.size())
    return fail(call.loc, fn.name + "() takes " + std::to_string(fn.params.size()) +
                              " argument" + (fn.params.size() == 1 ? "" : "s") + " but " +
                              std::to_string(args.size()) + " were given");
  std::vector<const Arg *> bound(fn.params.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i)
    bound[i] = &args[i];
  for (auto &[name, arg] : kws) {
    size_t i = 0;
    while (i < fn.params.size() && fn.params[i].name != name)
      ++i;
    if (i == fn.params.size())
      return fail(arg.loc, fn.name + "() has no parameter named '" + name + "'");
    if (bound[i])
      return fail(arg.loc, fn.name + "() got multiple values for argument '" + name + "'");
    bound[i] = &arg;
  }

  // Constexpr (and unannotated) parameters bind first, so that typed ones may
  // name a constexpr type parameter (`P: *DT`).
  Frame callee{&mod, &fn, {}, false, {}, 0, {}};
  auto isConstexprParam = [](const Param &p) {
    return !p.hasAnnot || (p.annot.name == "constexpr" && p.annot.pointerDepth == 0);
  };
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < fn.params.size(); ++i) {
      const Param &p = fn.params[i];
      if (isConstexprParam(p) != (pass == 0))
        continue;
      SemValue v;
      Loc at = call.loc;
      if (bound[i]) {
        v = bound[i]->value;
        at = bound[i]->loc;
      } else if (p.defaultValue) {
        frames_.push_back(Frame{&mod, &fn, callee.vars, false, {}, 0, {}});
        v = genExpr(*p.defaultValue);
        frames_.pop_back();
        if (!v.ok())
          return v;
      } else {
        return fail(call.loc, fn.name + "() missing argument '" + p.name + "'");
      }
      if (p.hasAnnot && p.annot.name == "constexpr" && p.annot.pointerDepth == 0) {
        if (v.isRuntime())
          return fail(at, "argument '" + p.name + "' of " + fn.name +
                              "() must be a constexpr, got " + v.describe());
      } else if (p.hasAnnot) {
        DType want;
        if (auto sc = parseScalarType(p.annot.name)) {
          want = DType{*sc, p.annot.pointerDepth};
        } else if (auto it = callee.vars.find(p.annot.name);
                   it != callee.vars.end() && it->second.kind == SemValue::DTypeV) {
          want = it->second.dtype;
          want.pointerDepth += p.annot.pointerDepth;
        } else {
          return fail(p.annot.loc, "unknown type '" + p.annot.name + "'");
        }
        // Reinterpreting memory must be explicit.
        if (v.isRuntime() && v.type.elem.isPointer() && want.isPointer() && v.type.elem != want)
          return fail(at, "argument '" + p.name + "' of " + fn.name + "() is " +
                              v.type.elem.str() + " but the parameter is " + want.str() +
                              "; convert it explicitly with bitcast()");
        v = castTo(v, want, at);
        if (!v.ok())
          return v;
      }
      callee.vars[p.name] = v;
    }
  frames_.push_back(std::move(callee));
  callStack_.push_back(&fn);
  bool ok = genBlock(fn.body);
  SemValue result = frame().returned ? frame().returnValue : SemValue::none();
  callStack_.pop_back();
  frames_.pop_back();
  if (!ok || failed()) {
    diags_.note(call.loc, "in the call to '" + fn.name + "' here");
    return SemValue::invalid();
  }
  if (fn.hasReturnAnnot && result.kind != SemValue::None) {
    auto s = parseScalarType(fn.returnAnnot.name);
    if (!s)
      return fail(fn.returnAnnot.loc, "unknown type '" + fn.returnAnnot.name + "'");
    result = castTo(result, DType{*s, fn.returnAnnot.pointerDepth}, call.loc);
  }
  return result;
}

} // namespace tessera::fe
