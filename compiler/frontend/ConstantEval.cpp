#include "ConstantEval.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace tessera::fe {

namespace {

using Value = ConstexprValue;

std::optional<double> asDouble(const Value &v) {
  if (auto *i = std::get_if<int64_t>(&v))
    return double(*i);
  if (auto *b = std::get_if<bool>(&v))
    return double(*b);
  if (auto *f = std::get_if<double>(&v))
    return *f;
  return std::nullopt;
}

/// Booleans as 0/1, as the language does in arithmetic.
Value numeric(const Value &v) {
  if (auto *b = std::get_if<bool>(&v))
    return int64_t(*b);
  return v;
}

bool isMinMaxOrCdiv(const Expr &callee) {
  return callee.kind == ExprKind::Name &&
         (callee.str == "min" || callee.str == "max" || callee.str == "cdiv");
}

class Evaluator {
public:
  Evaluator(const ConstantNames &names, ConstantError *error) : names_(names), error_(error) {}

  std::optional<Value> eval(const Expr &e) {
    switch (e.kind) {
    case ExprKind::IntLit: return Value(e.intValue);
    case ExprKind::FloatLit: return Value(e.floatValue);
    case ExprKind::BoolLit: return Value(e.boolValue);
    case ExprKind::Name: return name(e);
    case ExprKind::Unary: return unary(e);
    case ExprKind::Binary: return binary(e);
    case ExprKind::Call: return call(e);
    case ExprKind::IfExp: {
      auto c = eval(*e.operands[1]);
      if (!c)
        return c;
      return eval(constantTruthy(*c) ? *e.operands[0] : *e.operands[2]);
    }
    case ExprKind::StringLit: return Value(e.str);
    case ExprKind::NoneLit: return fail(e.loc, "None is not a compile-time value here");
    default:
      return fail(startLoc(e), "only numbers, booleans, types, names, operators and calls of "
                               "min, max and cdiv can be used here");
    }
  }

private:
  const ConstantNames &names_;
  ConstantError *error_;

  std::optional<Value> fail(Loc l, std::string msg) {
    if (error_)
      *error_ = ConstantError{l, std::move(msg)};
    return std::nullopt;
  }
  std::optional<Value> overflow(Loc l) {
    return fail(l, "integer overflow in constant expression");
  }
  std::optional<Value> divisionByZero(Loc l) {
    return fail(l, "division by zero in constant expression");
  }

  std::optional<Value> name(const Expr &e) {
    if (auto v = names_(e.str))
      return v;
    if (auto s = parseScalarType(e.str))
      return Value(DType{*s, 0});
    return fail(e.loc, "unknown name '" + e.str + "'");
  }

  std::optional<Value> unary(const Expr &e) {
    auto v = eval(*e.operands[0]);
    if (!v)
      return v;
    switch (e.unOp) {
    case UnOp::Not: return Value(!constantTruthy(*v));
    case UnOp::Pos:
      if (std::holds_alternative<int64_t>(*v) || std::holds_alternative<double>(*v))
        return v;
      return fail(e.loc, "unary '+' needs a number, got " + describeConstant(*v));
    case UnOp::Neg: {
      Value n = numeric(*v);
      if (auto *i = std::get_if<int64_t>(&n)) {
        if (*i == std::numeric_limits<int64_t>::min())
          return overflow(e.loc);
        return Value(-*i);
      }
      if (auto *f = std::get_if<double>(&n))
        return Value(-*f);
      return fail(e.loc, "unary '-' needs a number, got " + describeConstant(*v));
    }
    case UnOp::Invert:
      if (auto *i = std::get_if<int64_t>(&*v))
        return Value(~*i);
      return fail(e.loc, "'~' needs an integer, got " + describeConstant(*v));
    }
    return std::nullopt;
  }

  std::optional<Value> binary(const Expr &e) {
    auto a = eval(*e.operands[0]);
    if (!a)
      return a;
    if (e.binOp == BinOp::And || e.binOp == BinOp::Or) {
      bool t = constantTruthy(*a);
      if ((e.binOp == BinOp::And && !t) || (e.binOp == BinOp::Or && t))
        return a;
      return eval(*e.operands[1]);
    }
    auto b = eval(*e.operands[1]);
    if (!b)
      return b;
    return apply(e.binOp, *a, *b, e.loc);
  }

  std::optional<Value> apply(BinOp op, const Value &a, const Value &b, Loc l) {
    if (op == BinOp::Eq || op == BinOp::Ne) {
      auto da = asDouble(a), db = asDouble(b);
      bool eq = da && db ? *da == *db
                         : (!asDouble(a) && !asDouble(b) && a == b); // types, strings
      return Value(op == BinOp::Eq ? eq : !eq);
    }
    if (std::holds_alternative<DType>(a) || std::holds_alternative<DType>(b) ||
        std::holds_alternative<std::string>(a) || std::holds_alternative<std::string>(b))
      return fail(l, std::string("operator '") + spelling(op) + "' cannot be applied to " +
                         describeConstant(a) + " and " + describeConstant(b));
    Value x = numeric(a), y = numeric(b);
    if (std::holds_alternative<int64_t>(x) && std::holds_alternative<int64_t>(y))
      return integer(op, std::get<int64_t>(x), std::get<int64_t>(y), l);
    return floating(op, *asDouble(x), *asDouble(y), l, a, b);
  }

  std::optional<Value> integer(BinOp op, int64_t x, int64_t y, Loc l) {
    int64_t r = 0;
    switch (op) {
    case BinOp::Add: return __builtin_add_overflow(x, y, &r) ? overflow(l) : Value(r);
    case BinOp::Sub: return __builtin_sub_overflow(x, y, &r) ? overflow(l) : Value(r);
    case BinOp::Mul: return __builtin_mul_overflow(x, y, &r) ? overflow(l) : Value(r);
    case BinOp::Div:
      if (y == 0)
        return divisionByZero(l);
      return Value(double(x) / double(y));
    case BinOp::FloorDiv:
    case BinOp::Mod: {
      if (y == 0)
        return divisionByZero(l);
      if (x == std::numeric_limits<int64_t>::min() && y == -1)
        return overflow(l);
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) { // Python floors
        q -= 1;
        m += y;
      }
      return Value(op == BinOp::FloorDiv ? q : m);
    }
    case BinOp::Pow: {
      if (y < 0)
        return Value(std::pow(double(x), double(y)));
      int64_t acc = 1;
      for (int64_t k = 0; k < y; ++k) {
        if (__builtin_mul_overflow(acc, x, &acc))
          return overflow(l);
        if (acc == 0 || acc == 1)
          break;
      }
      return Value(acc);
    }
    case BinOp::BitAnd: return Value(x & y);
    case BinOp::BitOr: return Value(x | y);
    case BinOp::BitXor: return Value(x ^ y);
    case BinOp::Shl:
    case BinOp::Shr:
      if (y < 0 || y > 63)
        return fail(l, "shift count " + std::to_string(y) + " is out of range");
      return Value(op == BinOp::Shl ? int64_t(uint64_t(x) << y) : x >> y);
    case BinOp::Lt: return Value(x < y);
    case BinOp::Le: return Value(x <= y);
    case BinOp::Gt: return Value(x > y);
    case BinOp::Ge: return Value(x >= y);
    default: // and, or, == and != are handled before
      return fail(l, std::string("operator '") + spelling(op) + "' is not supported here");
    }
  }

  std::optional<Value> floating(BinOp op, double x, double y, Loc l, const Value &a,
                                const Value &b) {
    switch (op) {
    case BinOp::Add: return Value(x + y);
    case BinOp::Sub: return Value(x - y);
    case BinOp::Mul: return Value(x * y);
    case BinOp::Div: return y == 0 ? divisionByZero(l) : Value(x / y);
    case BinOp::FloorDiv: return y == 0 ? divisionByZero(l) : Value(std::floor(x / y));
    case BinOp::Mod: return y == 0 ? divisionByZero(l) : Value(x - std::floor(x / y) * y);
    case BinOp::Pow: return Value(std::pow(x, y));
    case BinOp::Lt: return Value(x < y);
    case BinOp::Le: return Value(x <= y);
    case BinOp::Gt: return Value(x > y);
    case BinOp::Ge: return Value(x >= y);
    default:
      return fail(l, std::string("operator '") + spelling(op) + "' needs integer operands, got " +
                         describeConstant(a) + " and " + describeConstant(b));
    }
  }

  std::optional<Value> call(const Expr &e) {
    const Expr &callee = *e.operands[0];
    if (!isMinMaxOrCdiv(callee))
      return fail(startLoc(callee), "only min, max and cdiv can be called here");
    if (!e.keywords.empty() || e.args.size() != 2)
      return fail(e.loc, callee.str + "() takes two arguments here");
    auto a = eval(*e.args[0]);
    if (!a)
      return a;
    auto b = eval(*e.args[1]);
    if (!b)
      return b;
    if (callee.str == "cdiv") {
      for (size_t i = 0; i < 2; ++i)
        if (!std::holds_alternative<int64_t>(i ? *b : *a))
          return fail(startLoc(*e.args[i]),
                      "cdiv() needs integers, got " + describeConstant(i ? *b : *a));
      auto bm1 = apply(BinOp::Sub, *b, Value(int64_t(1)), e.loc);
      auto sum = bm1 ? apply(BinOp::Add, *a, *bm1, e.loc) : bm1;
      return sum ? apply(BinOp::FloorDiv, *sum, *b, e.loc) : sum;
    }
    auto less = apply(BinOp::Lt, *a, *b, e.loc);
    if (!less)
      return less;
    bool pickB = callee.str == "max" ? std::get<bool>(*less) : !std::get<bool>(*less);
    return pickB ? b : a;
  }
};

const Expr *firstUnknown(const Expr &e, const ConstantNames &names) {
  if (e.kind == ExprKind::Name)
    return names(e.str) || parseScalarType(e.str) ? nullptr : &e;
  bool skipCallee = e.kind == ExprKind::Call && isMinMaxOrCdiv(*e.operands[0]);
  // Children in source order: `a if c else b` keeps c in operands[1].
  std::vector<const Expr *> children;
  if (e.kind == ExprKind::IfExp) {
    children = {e.operands[0].get(), e.operands[1].get(), e.operands[2].get()};
  } else {
    for (size_t i = skipCallee ? 1 : 0; i < e.operands.size(); ++i)
      children.push_back(e.operands[i].get());
    for (const ExprPtr &a : e.args)
      children.push_back(a.get());
    for (const Keyword &k : e.keywords)
      children.push_back(k.value.get());
  }
  for (const Expr *c : children)
    if (c)
      if (const Expr *u = firstUnknown(*c, names))
        return u;
  return nullptr;
}

} // namespace

std::optional<ConstexprValue> evalConstant(const Expr &e, const ConstantNames &names,
                                           ConstantError *error) {
  return Evaluator(names, error).eval(e);
}

const Expr *findUnknownName(const Expr &e, const ConstantNames &names) {
  return firstUnknown(e, names);
}

bool constantTruthy(const ConstexprValue &v) {
  if (auto d = asDouble(v))
    return *d != 0.0;
  if (auto *s = std::get_if<std::string>(&v))
    return !s->empty();
  return true;
}

std::string describeConstant(const ConstexprValue &v) {
  if (auto *i = std::get_if<int64_t>(&v))
    return "constexpr int " + std::to_string(*i);
  if (auto *f = std::get_if<double>(&v)) {
    std::ostringstream os;
    os << "constexpr float " << *f;
    return os.str();
  }
  if (auto *b = std::get_if<bool>(&v))
    return std::string("constexpr bool ") + (*b ? "True" : "False");
  if (auto *s = std::get_if<std::string>(&v))
    return "constexpr string " + constexprToString(v);
  return "type " + std::get<DType>(v).str();
}

} // namespace tessera::fe
