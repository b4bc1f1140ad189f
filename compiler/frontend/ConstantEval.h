// Evaluation of constant expressions over compile-time values (integers,
// floats, booleans and types) without MLIR: the values of @autotune's configs
// and its prune= condition, which the autotuner evaluates long after the
// compile that parsed it.
//
// The rules are the language's rules for constexprs (IRGen::constBinary):
// booleans count as 0 and 1 in arithmetic, `/` gives a float, `//` and `%`
// round towards negative infinity, `and`/`or` short-circuit and give an
// operand, `==`/`!=` compare numbers by value and anything else by kind and
// value (f16 == f16), integer overflow and division by zero are errors.
#ifndef TESSERA_FRONTEND_CONSTANTEVAL_H
#define TESSERA_FRONTEND_CONSTANTEVAL_H

#include "AST.h"

#include "tessera/Types.h"

#include <functional>
#include <optional>
#include <string>

namespace tessera::fe {

/// Where and why an evaluation failed.
struct ConstantError {
  Loc loc;
  std::string message;
};

/// The value of a name, or nullopt when the name is unknown.
using ConstantNames = std::function<std::optional<ConstexprValue>(const std::string &)>;

/// Evaluates `e`: literals, names (looked up in `names`, else a scalar type
/// such as f16), unary and binary operators, `a if c else b`, and calls of
/// min(a, b), max(a, b) and cdiv(a, b). Nullopt, and `*error` when given,
/// when `e` is something else or an operation fails.
std::optional<ConstexprValue> evalConstant(const Expr &e, const ConstantNames &names,
                                           ConstantError *error = nullptr);

/// The first name `e` reads (in source order) that `names` does not know and
/// that is no scalar type; callees of min, max and cdiv are not reads. Null
/// when there is none. Catches names that evaluation would skip (`x or y`).
const Expr *findUnknownName(const Expr &e, const ConstantNames &names);

/// Python truthiness: zero and False are false, types are true.
bool constantTruthy(const ConstexprValue &v);

/// "constexpr int 64", "constexpr float 0.5", "constexpr bool True", "type f16":
/// the wording of the front end's other messages.
std::string describeConstant(const ConstexprValue &v);

} // namespace tessera::fe

#endif
