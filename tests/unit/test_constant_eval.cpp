// The constant evaluator (compiler/frontend/ConstantEval.h) that @autotune's
// config values and prune= use: the language's constexpr rules, without MLIR.
#include "AST.h"
#include "ConstantEval.h"
#include "Diagnostics.h"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace tessera;
using namespace tessera::fe;

namespace {

const std::map<std::string, ConstexprValue> kNames = {
    {"BM", int64_t(128)}, {"BK", int64_t(64)}, {"EPS", 0.5}, {"FAST", true},
    {"DT", DType{ScalarType::f16, 0}}};

/// Evaluates `text` with kNames; the value as constexprToString gives it with
/// its kind ("i:64"), or "error L:C: message".
std::string eval(const std::string &text) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t id = sm.addBuffer("e", text);
  ExprPtr e = parseExpression(sm, id, diags);
  REQUIRE(e);
  ConstantError error;
  auto names = [](const std::string &n) -> std::optional<ConstexprValue> {
    auto it = kNames.find(n);
    return it == kNames.end() ? std::nullopt : std::optional<ConstexprValue>(it->second);
  };
  auto v = evalConstant(*e, names, &error);
  if (!v)
    return "error " + std::to_string(error.loc.line) + ":" + std::to_string(error.loc.col) +
           ": " + error.message;
  return std::string(1, constexprKind(*v)) + ":" + constexprToString(*v);
}

} // namespace

TEST_CASE("constant evaluation: arithmetic follows the language", "[constant-eval]") {
  CHECK(eval("BM * BK + BK * 2") == "i:8320");
  CHECK(eval("7 // 2") == "i:3");
  CHECK(eval("-7 // 2") == "i:-4"); // floors like Python
  CHECK(eval("-7 % 3") == "i:2");
  CHECK(eval("7 / 2") == "f:3.5"); // '/' gives a float
  CHECK(eval("2 ** 10") == "i:1024");
  CHECK(eval("2 ** -1") == "f:0.5");
  CHECK(eval("EPS * 4") == "f:2.0");
  CHECK(eval("True + 1") == "i:2"); // booleans count as 0/1
  CHECK(eval("-BM") == "i:-128");
  CHECK(eval("~0") == "i:-1");
  CHECK(eval("1 << 4 | 1") == "i:17");
  CHECK(eval("(BM + BK) * 2") == "i:384");
  CHECK(eval("min(BM, BK)") == "i:64");
  CHECK(eval("max(EPS, 2)") == "i:2");
  CHECK(eval("cdiv(BM, 48)") == "i:3");
  CHECK(eval("BM if FAST else BK") == "i:128");
}

TEST_CASE("constant evaluation: comparisons, logic and types", "[constant-eval]") {
  CHECK(eval("BM * BK <= 8192") == "b:true");
  CHECK(eval("BM < BK") == "b:false");
  CHECK(eval("1 == 1.0") == "b:true");
  CHECK(eval("DT == f16") == "b:true");
  CHECK(eval("DT != bf16") == "b:true");
  CHECK(eval("DT == 16") == "b:false");
  CHECK(eval("not FAST") == "b:false");
  CHECK(eval("FAST and BM > 64") == "b:true");
  // and/or give an operand and short-circuit: the unknown name is not read.
  CHECK(eval("0 or BK") == "i:64");
  CHECK(eval("False and UNKNOWN") == "b:false");
}

TEST_CASE("constant evaluation: errors point at the operation", "[constant-eval]") {
  CHECK(eval("BM // (BK - 64)") == "error 1:4: division by zero in constant expression");
  CHECK(eval("EPS % 0") == "error 1:5: division by zero in constant expression");
  CHECK(eval("9223372036854775807 + 1") ==
        "error 1:21: integer overflow in constant expression");
  CHECK(eval("DT + 1") ==
        "error 1:4: operator '+' cannot be applied to type f16 and constexpr int 1");
  CHECK(eval("DT < f32") ==
        "error 1:4: operator '<' cannot be applied to type f16 and type f32");
  CHECK(eval("EPS & 1") ==
        "error 1:5: operator '&' needs integer operands, got constexpr float 0.5 and "
        "constexpr int 1");
  CHECK(eval("-DT") == "error 1:1: unary '-' needs a number, got type f16");
  CHECK(eval("1 << 64") == "error 1:3: shift count 64 is out of range");
  CHECK(eval("N + 1") == "error 1:1: unknown name 'N'");
  CHECK(eval("\"s\" == 1") == "b:false"); // strings compare with == and != only
  CHECK(eval("\"s\" + 1") ==
        "error 1:5: operator '+' cannot be applied to constexpr string \"s\" and constexpr int 1");
  CHECK(eval("foo(1, 2)") == "error 1:1: only min, max and cdiv can be called here");
  CHECK(eval("min(1)") == "error 1:1: min() takes two arguments here");
  CHECK(eval("cdiv(EPS, 2)") == "error 1:6: cdiv() needs integers, got constexpr float 0.5");
  CHECK(eval("(1, 2)") == "error 1:1: only numbers, booleans, types, names, operators and "
                          "calls of min, max and cdiv can be used here");
  CHECK(eval("BM.x") == "error 1:1: only numbers, booleans, types, names, operators and "
                        "calls of min, max and cdiv can be used here");
}

TEST_CASE("constant evaluation: unknown names anywhere in the expression", "[constant-eval]") {
  auto unknownIn = [](const std::string &text) {
    SourceManager sm;
    DiagnosticEngine diags(sm);
    ExprPtr e = parseExpression(sm, sm.addBuffer("e", text), diags);
    REQUIRE(e);
    auto names = [](const std::string &n) -> std::optional<ConstexprValue> {
      auto it = kNames.find(n);
      return it == kNames.end() ? std::nullopt : std::optional<ConstexprValue>(it->second);
    };
    const Expr *u = findUnknownName(*e, names);
    return u ? u->str + "@" + std::to_string(u->loc.col) : std::string("none");
  };
  CHECK(unknownIn("BM * BK <= 16384 and DT == f16") == "none");
  CHECK(unknownIn("False and UNKNOWN") == "UNKNOWN@11");
  CHECK(unknownIn("max(BM, X) + min(Y, 1)") == "X@9");
  CHECK(unknownIn("A if B else C") == "A@1");
  CHECK(unknownIn("BM if B else C") == "B@7");
  CHECK(unknownIn("max + 1") == "max@1"); // only a callee is not a read
}

TEST_CASE("constant evaluation: truthiness and descriptions", "[constant-eval]") {
  CHECK(constantTruthy(ConstexprValue(int64_t(0))) == false);
  CHECK(constantTruthy(ConstexprValue(0.25)) == true);
  CHECK(constantTruthy(ConstexprValue(false)) == false);
  CHECK(constantTruthy(ConstexprValue(DType{ScalarType::f32, 0})) == true);
  CHECK(describeConstant(ConstexprValue(int64_t(64))) == "constexpr int 64");
  CHECK(describeConstant(ConstexprValue(0.5)) == "constexpr float 0.5");
  CHECK(describeConstant(ConstexprValue(true)) == "constexpr bool True");
  CHECK(describeConstant(ConstexprValue(DType{ScalarType::bf16, 1})) == "type *bf16");
}
