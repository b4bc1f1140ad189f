// The integer expressions of `tessera autotune` (compiler/tools/int_expr.h):
// precedence, the functions, C division, names, and the error phrases the
// command line shows.
#include "int_expr.h"

#include <catch2/catch.hpp>

#include <limits>

using namespace tessera::cli;

namespace {

int64_t value(const std::string &text, const IntNames &names = {}) {
  std::string error;
  std::optional<int64_t> v = evalIntExpr(text, names, error);
  INFO(text << ": " << error);
  REQUIRE(v);
  CHECK(error.empty());
  return *v;
}

std::string failure(const std::string &text, const IntNames &names = {}) {
  std::string error;
  std::optional<int64_t> v = evalIntExpr(text, names, error);
  INFO(text);
  CHECK_FALSE(v);
  return error;
}

} // namespace

TEST_CASE("int expr: literals, operators and precedence", "[cli][intexpr]") {
  CHECK(value("42") == 42);
  CHECK(value(" 7 ") == 7);
  CHECK(value("1+2*3") == 7);
  CHECK(value("(1+2)*3") == 9);
  CHECK(value("10-4-3") == 3); // left to right
  CHECK(value("100/10/5") == 2);
  CHECK(value("2*3%4") == 2); // (2*3)%4
  CHECK(value("-3+5") == 2);
  CHECK(value("--3") == 3);
  CHECK(value("+4") == 4);
  CHECK(value("-(2+3)*2") == -10);
  CHECK(value("((((8))))") == 8);
  CHECK(value("9223372036854775807") == std::numeric_limits<int64_t>::max());
}

TEST_CASE("int expr: division truncates toward zero, cdiv rounds up", "[cli][intexpr]") {
  CHECK(value("7/2") == 3);
  CHECK(value("-7/2") == -3);
  CHECK(value("7%3") == 1);
  CHECK(value("-7%3") == -1);
  CHECK(value("cdiv(7,2)") == 4);
  CHECK(value("cdiv(8,2)") == 4);
  CHECK(value("cdiv(0,64)") == 0);
  CHECK(value("cdiv(1,64)") == 1);
  CHECK(value("cdiv(-7,2)") == -3);
  CHECK(value("cdiv(-7,-2)") == 4);
  CHECK(value("min(3,1,2)") == 1);
  CHECK(value("max(3, 1, 2)") == 3);
  CHECK(value("min(max(1,5),4)") == 4);
}

TEST_CASE("int expr: names of a shape and a config", "[cli][intexpr]") {
  IntNames names = {{"M", 1000}, {"N", 8192}, {"BM", 128}, {"BN", 256}, {"_x1", 3}};
  CHECK(value("M*N", names) == 8192000);
  CHECK(value("cdiv(M,BM)*cdiv(N,BN)", names) == 8 * 32);
  CHECK(value("cdiv(M, BM) * cdiv(N, BN)", names) == 256);
  CHECK(value("_x1*2", names) == 6);
  std::string error;
  std::optional<IntExpr> e = IntExpr::parse("cdiv(M,BM)*cdiv(N,BN)+M", error);
  REQUIRE(e);
  CHECK(e->names() == std::vector<std::string>{"M", "BM", "N", "BN"});
  CHECK(e->text() == "cdiv(M,BM)*cdiv(N,BN)+M");
  // One parse, many evaluations.
  CHECK(e->eval({{"M", 256}, {"BM", 128}, {"N", 256}, {"BN", 256}}, error) == 2 + 256);
  CHECK(e->eval({{"M", 1}, {"BM", 1}, {"N", 1}}, error) == std::nullopt);
  CHECK(error == "unknown name 'BN'");
}

TEST_CASE("int expr: errors say what and where", "[cli][intexpr]") {
  CHECK(failure("cdiv(M,Q)", {{"M", 4}}) == "unknown name 'Q'");
  CHECK(failure("") == "empty expression");
  CHECK(failure("   ") == "empty expression");
  CHECK(failure("1+") == "expected a number, a name or '(' at the end of '1+'");
  CHECK(failure("cdiv(M,") == "expected a number, a name or '(' at the end of 'cdiv(M,'");
  CHECK(failure("(1+2") == "expected ')' at the end of '(1+2'");
  CHECK(failure("1+2)") == "unexpected ')' after '1+2'");
  CHECK(failure("2 3") == "unexpected '3' after '2 '");
  CHECK(failure("1.5") == "'1.' is not an integer");
  CHECK(failure("4k") == "'4k' is not an integer");
  CHECK(failure("a#b") == "unexpected '#' after 'a'");
  CHECK(failure("pow(2,3)") == "unknown function 'pow' (there are cdiv, min and max)");
  CHECK(failure("cdiv(1,2,3)") == "cdiv takes 2 arguments, got 3 in 'cdiv(1,2,3)'");
  CHECK(failure("min(1)") == "min takes at least 2 arguments, got 1 in 'min(1)'");
  CHECK(failure("99999999999999999999") == "integer literal '9999999999999999999...' is too large");
  CHECK(failure("M/0", {{"M", 4}}) == "division by zero in 'M/0'");
  CHECK(failure("cdiv(M,BM-64)", {{"M", 4}, {"BM", 64}}) ==
        "division by zero in 'cdiv(M,BM-64)'");
  CHECK(failure("5%(1-1)") == "division by zero in '5%(1-1)'");
  CHECK(failure("M*M", {{"M", int64_t(1) << 40}}) == "integer overflow in 'M*M'");
  CHECK(failure("9223372036854775807+1") == "integer overflow in '9223372036854775807+1'");
  CHECK(failure("-M-2", {{"M", std::numeric_limits<int64_t>::max()}}) ==
        "integer overflow in '-M-2'");
}

TEST_CASE("int expr: splitting --grid and --shape at top-level commas", "[cli][intexpr]") {
  CHECK(splitTopLevel("cdiv(M,BM),4") == std::vector<std::string>{"cdiv(M,BM)", "4"});
  CHECK(splitTopLevel("a,b,c") == std::vector<std::string>{"a", "b", "c"});
  CHECK(splitTopLevel("max(a,min(b,c))") == std::vector<std::string>{"max(a,min(b,c))"});
  CHECK(splitTopLevel("") == std::vector<std::string>{""});
  CHECK(splitTopLevel("x,") == std::vector<std::string>{"x", ""});
}
