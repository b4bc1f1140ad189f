// Integer expressions on the command line of `tessera autotune`: the counts
// and literals of its ARGs and its --grid, over a shape's names and a
// config's constexprs ("M*K", "cdiv(M,BM)*cdiv(N,BN)").
//
// Grammar: + - * / % on 64-bit integers, unary minus, parentheses, integer
// literals, names ([A-Za-z_][A-Za-z0-9_]*) and the functions cdiv(a,b),
// min(a,b,...) and max(a,b,...). `/` and `%` truncate toward zero, as in C;
// cdiv rounds the quotient up. Overflow and division by zero are errors, not
// wrapped values. Errors are phrases ("unknown name 'Q'") for the caller to
// complete with where the expression came from.
#ifndef TESSERA_TOOLS_INT_EXPR_H
#define TESSERA_TOOLS_INT_EXPR_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

/// The values an expression may refer to, by name.
using IntNames = std::map<std::string, int64_t>;

/// A parsed integer expression: parse once (syntax errors at once), evaluate
/// against each shape and config.
class IntExpr {
public:
  /// Nullopt and `error` ("expected ')' after 'cdiv(M,BM'") when `text` is not an expression.
  static std::optional<IntExpr> parse(const std::string &text, std::string &error);

  /// The value for `names`; nullopt and `error` ("unknown name 'Q'",
  /// "division by zero in 'M/0'", "integer overflow in 'M*N'") otherwise.
  std::optional<int64_t> eval(const IntNames &names, std::string &error) const;
  /// The names it refers to, each once, in order of first appearance.
  std::vector<std::string> names() const;
  const std::string &text() const { return text_; }

  struct Node;

private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

/// Parses and evaluates in one step.
std::optional<int64_t> evalIntExpr(const std::string &text, const IntNames &names,
                                   std::string &error);

/// Splits `text` at the commas outside parentheses: "cdiv(M,BM),4" gives
/// {"cdiv(M,BM)", "4"}; "" gives {""}.
std::vector<std::string> splitTopLevel(const std::string &text);

} // namespace tessera::cli

#endif
