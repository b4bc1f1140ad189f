// Integer expressions of `tessera autotune` (int_expr.h): a recursive-descent
// parser to a small tree, and a checked evaluator.
#include "int_expr.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace tessera::cli {

struct IntExpr::Node {
  enum Kind { Literal, Name, Negate, Add, Sub, Mul, Div, Mod, Cdiv, Min, Max } kind = Literal;
  int64_t value = 0;                         // Literal
  std::string name;                          // Name
  std::vector<std::shared_ptr<const Node>> operands;
  std::string text;                          // the source of this node, for messages
};

namespace {

using NodePtr = std::shared_ptr<const IntExpr::Node>;
using Node = IntExpr::Node;

bool isNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
public:
  explicit Parser(const std::string &text) : s_(text) {}

  NodePtr parseAll(std::string &error) {
    NodePtr n = expression();
    skipSpace();
    if (error_.empty() && pos_ < s_.size())
      fail("unexpected '" + std::string(1, s_[pos_]) + "' after '" + s_.substr(0, pos_) + "'");
    error = error_;
    return error_.empty() ? n : nullptr;
  }

private:
  // expression := term (('+' | '-') term)*
  NodePtr expression() {
    size_t begin = pos_;
    NodePtr left = term();
    while (error_.empty()) {
      char op = peek();
      if (op != '+' && op != '-')
        break;
      ++pos_;
      left = binary(op == '+' ? Node::Add : Node::Sub, left, term(), begin);
    }
    return left;
  }

  // term := unary (('*' | '/' | '%') unary)*
  NodePtr term() {
    size_t begin = pos_;
    NodePtr left = unary();
    while (error_.empty()) {
      char op = peek();
      if (op != '*' && op != '/' && op != '%')
        break;
      ++pos_;
      Node::Kind k = op == '*' ? Node::Mul : op == '/' ? Node::Div : Node::Mod;
      left = binary(k, left, unary(), begin);
    }
    return left;
  }

  // unary := ('-' | '+') unary | primary
  NodePtr unary() {
    size_t begin = pos_;
    char c = peek();
    if (c == '+') {
      ++pos_;
      return unary();
    }
    if (c == '-') {
      ++pos_;
      auto n = std::make_shared<Node>();
      n->kind = Node::Negate;
      n->operands.push_back(unary());
      n->text = slice(begin);
      return n;
    }
    return primary();
  }

  // primary := INTEGER | NAME | NAME '(' expression (',' expression)* ')' | '(' expression ')'
  NodePtr primary() {
    char c = peek();
    size_t begin = pos_;
    if (c == '(') {
      ++pos_;
      NodePtr inner = expression();
      expect(')');
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)))
      return literal();
    if (isNameChar(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      while (pos_ < s_.size() && isNameChar(s_[pos_]))
        ++pos_;
      std::string name = s_.substr(begin, pos_ - begin);
      if (peek() == '(')
        return call(name, begin);
      auto n = std::make_shared<Node>();
      n->kind = Node::Name;
      n->name = name;
      n->text = name;
      return n;
    }
    if (pos_ >= s_.size())
      fail(s_.find_first_not_of(" \t") == std::string::npos
               ? "empty expression"
               : "expected a number, a name or '(' at the end of '" + s_ + "'");
    else
      fail("unexpected '" + std::string(1, c) + "' after '" + s_.substr(0, pos_) + "'");
    return nullptr;
  }

  NodePtr literal() {
    size_t begin = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int digit = s_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        fail("integer literal '" + slice(begin) + "...' is too large");
        return nullptr;
      }
      v = v * 10 + digit;
    }
    if (pos_ < s_.size() && (isNameChar(s_[pos_]) || s_[pos_] == '.')) {
      fail("'" + slice(begin) + s_[pos_] + "' is not an integer");
      return nullptr;
    }
    auto n = std::make_shared<Node>();
    n->value = v;
    n->text = slice(begin);
    return n;
  }

  NodePtr call(const std::string &name, size_t begin) {
    auto n = std::make_shared<Node>();
    if (name == "cdiv")
      n->kind = Node::Cdiv;
    else if (name == "min")
      n->kind = Node::Min;
    else if (name == "max")
      n->kind = Node::Max;
    else {
      fail("unknown function '" + name + "' (there are cdiv, min and max)");
      return nullptr;
    }
    ++pos_; // '('
    n->operands.push_back(expression());
    while (error_.empty() && peek() == ',') {
      ++pos_;
      n->operands.push_back(expression());
    }
    expect(')');
    if (!error_.empty())
      return nullptr;
    size_t count = n->operands.size();
    if (n->kind == Node::Cdiv && count != 2)
      fail("cdiv takes 2 arguments, got " + std::to_string(count) + " in '" + slice(begin) + "'");
    else if (count < 2)
      fail(name + " takes at least 2 arguments, got " + std::to_string(count) + " in '" +
           slice(begin) + "'");
    n->text = slice(begin);
    return n;
  }

  NodePtr binary(Node::Kind k, NodePtr a, NodePtr b, size_t begin) {
    auto n = std::make_shared<Node>();
    n->kind = k;
    n->operands = {std::move(a), std::move(b)};
    n->text = slice(begin);
    return n;
  }

  void expect(char c) {
    if (!error_.empty())
      return;
    if (peek() == c) {
      ++pos_;
      return;
    }
    if (pos_ >= s_.size())
      fail("expected '" + std::string(1, c) + "' at the end of '" + s_ + "'");
    else
      fail("expected '" + std::string(1, c) + "' after '" + s_.substr(0, pos_) + "'");
  }

  char peek() {
    skipSpace();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  std::string slice(size_t begin) const {
    std::string t = s_.substr(begin, pos_ - begin);
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())))
      t.pop_back();
    return t;
  }
  void fail(const std::string &why) {
    if (error_.empty())
      error_ = why;
  }

  const std::string &s_;
  size_t pos_ = 0;
  std::string error_;
};

std::optional<int64_t> evaluate(const Node &n, const IntNames &names, std::string &error) {
  switch (n.kind) {
  case Node::Literal:
    return n.value;
  case Node::Name: {
    auto it = names.find(n.name);
    if (it == names.end()) {
      error = "unknown name '" + n.name + "'";
      return std::nullopt;
    }
    return it->second;
  }
  default:
    break;
  }
  std::vector<int64_t> v;
  for (const NodePtr &op : n.operands) {
    std::optional<int64_t> x = evaluate(*op, names, error);
    if (!x)
      return std::nullopt;
    v.push_back(*x);
  }
  int64_t r = 0;
  bool overflow = false;
  auto divides = [&] {
    if (v[1] == 0) {
      error = "division by zero in '" + n.text + "'";
      return false;
    }
    overflow = v[0] == std::numeric_limits<int64_t>::min() && v[1] == -1;
    return true;
  };
  switch (n.kind) {
  case Node::Negate: overflow = __builtin_sub_overflow(int64_t(0), v[0], &r); break;
  case Node::Add: overflow = __builtin_add_overflow(v[0], v[1], &r); break;
  case Node::Sub: overflow = __builtin_sub_overflow(v[0], v[1], &r); break;
  case Node::Mul: overflow = __builtin_mul_overflow(v[0], v[1], &r); break;
  case Node::Div:
  case Node::Mod:
  case Node::Cdiv:
    if (!divides())
      return std::nullopt;
    if (overflow)
      break;
    r = n.kind == Node::Mod ? v[0] % v[1] : v[0] / v[1];
    // Round up when the exact quotient is positive and not whole.
    if (n.kind == Node::Cdiv && v[0] % v[1] != 0 && ((v[0] < 0) == (v[1] < 0)))
      ++r;
    break;
  case Node::Min:
  case Node::Max:
    r = v[0];
    for (int64_t x : v)
      r = n.kind == Node::Min ? std::min(r, x) : std::max(r, x);
    break;
  default:
    break;
  }
  if (overflow) {
    error = "integer overflow in '" + n.text + "'";
    return std::nullopt;
  }
  return r;
}

void collectNames(const Node &n, std::vector<std::string> &out) {
  if (n.kind == Node::Name) {
    for (const std::string &s : out)
      if (s == n.name)
        return;
    out.push_back(n.name);
  }
  for (const NodePtr &op : n.operands)
    collectNames(*op, out);
}

} // namespace

std::optional<IntExpr> IntExpr::parse(const std::string &text, std::string &error) {
  Parser p(text);
  NodePtr root = p.parseAll(error);
  if (!root)
    return std::nullopt;
  IntExpr e;
  e.root_ = std::move(root);
  e.text_ = text;
  return e;
}

std::optional<int64_t> IntExpr::eval(const IntNames &names, std::string &error) const {
  return evaluate(*root_, names, error);
}

std::vector<std::string> IntExpr::names() const {
  std::vector<std::string> out;
  collectNames(*root_, out);
  return out;
}

std::optional<int64_t> evalIntExpr(const std::string &text, const IntNames &names,
                                   std::string &error) {
  std::optional<IntExpr> e = IntExpr::parse(text, error);
  return e ? e->eval(names, error) : std::nullopt;
}

std::vector<std::string> splitTopLevel(const std::string &text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

} // namespace tessera::cli
