// Lexer and parser tests: AST shape, locations, and the exact text of every
// syntax error the front end reports.
#include "AST.h"
#include "Diagnostics.h"
#include "Lexer.h"

#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tessera::fe;

namespace {

struct Parsed {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  uint32_t file = 0;
  std::unique_ptr<Module> module;
};

std::unique_ptr<Parsed> parseText(const std::string &src) {
  auto r = std::make_unique<Parsed>();
  r->file = r->sm.addBuffer("t.tile", src);
  r->module = parseModule(r->sm, r->file, r->diags);
  return r;
}

/// Parses `src`, which must be valid, and returns the module dump.
std::string dumpOf(const std::string &src) {
  auto r = parseText(src);
  INFO(r->diags.render());
  REQUIRE(r->module);
  REQUIRE_FALSE(r->diags.hasErrors());
  return dump(*r->module);
}

/// Parses `src`, which must be invalid, and returns the rendered diagnostic.
std::string errorOf(const std::string &src) {
  auto r = parseText(src);
  REQUIRE_FALSE(r->module);
  REQUIRE(r->diags.diagnostics().size() == 1);
  return r->diags.render();
}

/// Just the "line:col: message" part of the (single) error.
std::string briefErrorOf(const std::string &src) {
  auto r = parseText(src);
  REQUIRE_FALSE(r->module);
  REQUIRE(r->diags.diagnostics().size() == 1);
  const Diagnostic &d = r->diags.diagnostics()[0];
  return std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + d.message;
}

/// Dump of the expression `e` parsed as the value of a top-level constant.
std::string expr(const std::string &e) {
  auto r = parseText("X = " + e + "\n");
  INFO(e << "\n" << r->diags.render());
  REQUIRE(r->module);
  REQUIRE(r->module->globals.size() == 1);
  return dump(*r->module->globals[0].value);
}

std::string at(Loc l) { return std::to_string(l.line) + ":" + std::to_string(l.col); }

std::vector<Tok> kindsOf(const std::string &src) {
  SourceManager sm;
  uint32_t id = sm.addBuffer("t.tile", src);
  std::vector<Tok> out;
  for (const Token &t : tokenize(sm, id))
    out.push_back(t.kind);
  return out;
}

std::vector<Token> tokensOf(const std::string &src) {
  static SourceManager sm; // tokens do not refer to the manager after lexing
  uint32_t id = sm.addBuffer("t.tile", src);
  return tokenize(sm, id);
}

const char *kSample = R"(from "lib/hash.tile" import roast_tile_offset, other as alias

P = 45007            # top-level constant: GlobalConst

@kernel
def roast_mm_fwd(X: *f32, Mem: *f32, Y: *f32, B: i32, lam: f32, pp: **i8,
                 BM: constexpr, BN: constexpr = 64, GROUP: constexpr = 8):
    pid_m, pid_n = grouped_pid(program_id(0), cdiv(B, BM), 4, GROUP)
    rm = pid_m * BM + arange(0, BM)
    acc = zeros((BM, BN), f32)
    for kb in range(0, cdiv(K, BK)):
        a = load(X + rm[:, None] * K + k[None, :], mask=(rm[:, None] < B) & (k[None, :] < K), other=0.0)
        acc = dot(a, w, acc)
        acc += 1.0
    if x > 0 and not y:
        pass
    elif z:
        x = 1 if c else 2
    else:
        while i < 10:
            i = i + 1
    y = x.to(bf16)
    store(Y + rm, acc * lam, mask=rm < B)

@func
def helper(a, b: i32) -> i32:
    return a * b
)";

} // namespace

// ===================================================================== lexer

TEST_CASE("lexer: layout tokens", "[lexer]") {
  using T = Tok;
  CHECK(kindsOf("") == std::vector<Tok>{T::EndOfFile});
  CHECK(kindsOf("\n\n  # only a comment\n   \n") == std::vector<Tok>{T::EndOfFile});
  CHECK(kindsOf("x = 1") ==
        std::vector<Tok>{T::Name, T::Assign, T::Int, T::Newline, T::EndOfFile});
  CHECK(kindsOf("if a:\n  b\n\n  # c\n      \n  c\nd\n") ==
        std::vector<Tok>{T::KwIf, T::Name, T::Colon, T::Newline, T::Indent, T::Name, T::Newline,
                         T::Name, T::Newline, T::Dedent, T::Name, T::Newline, T::EndOfFile});
  // Two blocks closed at once, and blocks still open at end of file.
  CHECK(kindsOf("a:\n b:\n   c\nd:\n e") ==
        std::vector<Tok>{T::Name, T::Colon, T::Newline, T::Indent, T::Name, T::Colon, T::Newline,
                         T::Indent, T::Name, T::Newline, T::Dedent, T::Dedent, T::Name, T::Colon,
                         T::Newline, T::Indent, T::Name, T::Newline, T::Dedent, T::EndOfFile});
  // Newlines and indentation inside brackets are ignored; so is a backslash-newline.
  CHECK(kindsOf("f(a,\n      b,\n\n b)[\n1]\nx = 1 + \\\n    2\n") ==
        std::vector<Tok>{T::Name, T::LParen, T::Name, T::Comma, T::Name, T::Comma, T::Name,
                         T::RParen, T::LBracket, T::Int, T::RBracket, T::Newline, T::Name,
                         T::Assign, T::Int, T::Plus, T::Int, T::Newline, T::EndOfFile});
  // CRLF line endings.
  CHECK(kindsOf("a:\r\n  b\r\n\r\nc\r\n") ==
        std::vector<Tok>{T::Name, T::Colon, T::Newline, T::Indent, T::Name, T::Newline,
                         T::Dedent, T::Name, T::Newline, T::EndOfFile});
}

TEST_CASE("lexer: keywords, operators and longest match", "[lexer]") {
  using T = Tok;
  CHECK(kindsOf("def from import as if elif else for in while return pass break continue "
                "and or not True False None kernel constexpr") ==
        std::vector<Tok>{T::KwDef, T::KwFrom, T::KwImport, T::KwAs, T::KwIf, T::KwElif,
                         T::KwElse, T::KwFor, T::KwIn, T::KwWhile, T::KwReturn, T::KwPass,
                         T::KwBreak, T::KwContinue, T::KwAnd, T::KwOr, T::KwNot, T::KwTrue,
                         T::KwFalse, T::KwNone, T::Name, T::Name, T::Newline, T::EndOfFile});
  CHECK(kindsOf("+ - * / // % ** & | ^ ~ << >> == != < <= > >= = += -= *= /= //= %= &= |= ^= "
                "<<= >>= **= ( ) [ ] , : . @ ->") ==
        std::vector<Tok>{T::Plus, T::Minus, T::Star, T::Slash, T::DoubleSlash, T::Percent,
                         T::DoubleStar, T::Amp, T::Pipe, T::Caret, T::Tilde, T::Shl, T::Shr,
                         T::EqEq, T::NotEq, T::Less, T::LessEq, T::Greater, T::GreaterEq,
                         T::Assign, T::PlusEq, T::MinusEq, T::StarEq, T::SlashEq,
                         T::DoubleSlashEq, T::PercentEq, T::AmpEq, T::PipeEq, T::CaretEq,
                         T::ShlEq, T::ShrEq, T::DoubleStarEq, T::LParen, T::RParen, T::LBracket,
                         T::RBracket, T::Comma, T::Colon, T::Dot, T::At, T::Arrow, T::Newline,
                         T::EndOfFile});
  CHECK(kindsOf("a<<=b**c//d->e") ==
        std::vector<Tok>{T::Name, T::ShlEq, T::Name, T::DoubleStar, T::Name, T::DoubleSlash,
                         T::Name, T::Arrow, T::Name, T::Newline, T::EndOfFile});
}

TEST_CASE("lexer: number and string literals", "[lexer]") {
  auto toks = tokensOf("0 7 1_000 0x_Ff 0XFF 0b1010 0B1_1 9223372036854775807 0x7fffffffffffffff");
  std::vector<int64_t> ints{0, 7, 1000, 255, 255, 10, 3, INT64_MAX, INT64_MAX};
  REQUIRE(toks.size() == ints.size() + 2);
  for (size_t i = 0; i < ints.size(); ++i) {
    CHECK(toks[i].kind == Tok::Int);
    CHECK(toks[i].intValue == ints[i]);
  }
  CHECK(toks[2].text == "1_000");

  toks = tokensOf("1.0 1. .5 1e-5 2.5E+3 1_0.2_5 1.e2 0.0 1e-400");
  std::vector<double> floats{1.0, 1.0, 0.5, 1e-5, 2500.0, 10.25, 100.0, 0.0, 0.0};
  REQUIRE(toks.size() == floats.size() + 2);
  for (size_t i = 0; i < floats.size(); ++i) {
    CHECK(toks[i].kind == Tok::Float);
    CHECK(toks[i].floatValue == floats[i]);
  }

  toks = tokensOf(R"(x.y 'a\'b' "q\"\n\t\\" '' "it's")");
  REQUIRE(toks.size() == 9);
  CHECK(toks[1].kind == Tok::Dot);
  CHECK(toks[3].kind == Tok::String);
  CHECK(toks[3].value == "a'b");
  CHECK(toks[4].value == "q\"\n\t\\");
  CHECK(toks[5].value.empty());
  CHECK(toks[6].value == "it's");
  CHECK(describeToken(toks[6]) == "a string literal");
  CHECK(describeToken(toks[0]) == "'x'");
}

TEST_CASE("lexer: token locations", "[lexer]") {
  auto toks = tokensOf("def f(a):  # comment\n    return a**2\n");
  // def f ( a ) : NEWLINE INDENT return a ** 2 NEWLINE DEDENT EOF
  REQUIRE(toks.size() == 15);
  CHECK(at(toks[0].loc) == "1:1");
  CHECK(at(toks[1].loc) == "1:5");
  CHECK(at(toks[5].loc) == "1:9");
  CHECK(toks[6].kind == Tok::Newline);
  CHECK(at(toks[6].loc) == "1:10"); // just past the ':'
  CHECK(toks[7].kind == Tok::Indent);
  CHECK(at(toks[7].loc) == "2:5");
  CHECK(at(toks[8].loc) == "2:5");
  CHECK(toks[10].kind == Tok::DoubleStar);
  CHECK(at(toks[10].loc) == "2:13");
  CHECK(at(toks[12].loc) == "2:16");
  CHECK(toks[13].kind == Tok::Dedent);
  CHECK(at(toks[13].loc) == "2:16");
  CHECK(toks[14].kind == Tok::EndOfFile);
  CHECK(at(toks[14].loc) == "2:16");
}

TEST_CASE("lexer: errors are a single final token", "[lexer]") {
  auto toks = tokensOf("x = 1\ny = $\nz = 2\n");
  REQUIRE(toks.size() == 7);
  CHECK(toks.back().kind == Tok::Error);
  CHECK(toks.back().value == "unexpected character '$'");
  CHECK(at(toks.back().loc) == "2:5");
}

// ==================================================================== parser

TEST_CASE("parser: the sample kernel", "[parser]") {
  auto r = parseText(kSample);
  INFO(r->diags.render());
  REQUIRE(r->module);
  const Module &m = *r->module;
  CHECK(dump(m) ==
        "import \"lib/hash.tile\" roast_tile_offset, other as alias\n"
        "const P = 45007\n"
        "@kernel\n"
        "def roast_mm_fwd(X: *f32, Mem: *f32, Y: *f32, B: i32, lam: f32, pp: **i8, BM: "
        "constexpr, BN: constexpr = 64, GROUP: constexpr = 8)\n"
        "  (tuple pid_m pid_n) = (call grouped_pid (call program_id 0) (call cdiv B BM) 4 "
        "GROUP)\n"
        "  rm = (+ (* pid_m BM) (call arange 0 BM))\n"
        "  acc = (call zeros (tuple BM BN) f32)\n"
        "  for kb in (call range 0 (call cdiv K BK))\n"
        "    a = (call load (+ (+ X (* (sub rm (: _ _) None) K)) (sub k None (: _ _))) (kw mask "
        "(& (< (sub rm (: _ _) None) B) (< (sub k None (: _ _)) K))) (kw other 0.0))\n"
        "    acc = (call dot a w acc)\n"
        "    acc += 1.0\n"
        "  if (and (> x 0) (not y))\n"
        "    pass\n"
        "  else\n"
        "    if z\n"
        "      x = (ifexp c 1 2)\n"
        "    else\n"
        "      while (< i 10)\n"
        "        i = (+ i 1)\n"
        "  y = (call (. x to) bf16)\n"
        "  expr (call store (+ Y rm) (* acc lam) (kw mask (< rm B)))\n"
        "@func\n"
        "def helper(a, b: i32) -> i32\n"
        "  return (* a b)\n");

  // Imports.
  REQUIRE(m.imports.size() == 1);
  const ImportDecl &imp = m.imports[0];
  CHECK(imp.path == "lib/hash.tile");
  CHECK(at(imp.loc) == "1:1");
  CHECK(at(imp.pathLoc) == "1:6");
  REQUIRE(imp.names.size() == 2);
  CHECK(imp.names[0].name == "roast_tile_offset");
  CHECK(imp.names[0].alias.empty());
  CHECK(at(imp.names[0].loc) == "1:29");
  CHECK(imp.names[1].name == "other");
  CHECK(imp.names[1].alias == "alias");
  CHECK(at(imp.names[1].loc) == "1:48");

  // Globals.
  REQUIRE(m.globals.size() == 1);
  CHECK(m.globals[0].name == "P");
  CHECK(at(m.globals[0].loc) == "3:1");
  CHECK(m.globals[0].value->kind == ExprKind::IntLit);
  CHECK(m.globals[0].value->intValue == 45007);
  CHECK(at(m.globals[0].value->loc) == "3:5");

  // The kernel's signature.
  REQUIRE(m.functions.size() == 2);
  const FunctionDef &k = *m.functions[0];
  CHECK(k.name == "roast_mm_fwd");
  CHECK(k.file == r->file);
  CHECK(at(k.loc) == "6:1");
  CHECK(at(k.nameLoc) == "6:5");
  REQUIRE(k.decorators.size() == 1);
  CHECK(k.decorators[0].name == "kernel");
  CHECK(at(k.decorators[0].loc) == "5:1");
  CHECK_FALSE(k.hasReturnAnnot);
  REQUIRE(k.params.size() == 9);
  CHECK(k.params[0].name == "X");
  CHECK(at(k.params[0].loc) == "6:18");
  CHECK(k.params[0].hasAnnot);
  CHECK(k.params[0].annot.pointerDepth == 1);
  CHECK(k.params[0].annot.name == "f32");
  CHECK(at(k.params[0].annot.loc) == "6:21");
  CHECK(k.params[3].annot.pointerDepth == 0);
  CHECK(k.params[3].annot.name == "i32");
  CHECK(k.params[5].name == "pp");
  CHECK(at(k.params[5].loc) == "6:65");
  CHECK(k.params[5].annot.pointerDepth == 2); // `**i8`: the `**` token counts twice
  CHECK(k.params[5].annot.name == "i8");
  CHECK(at(k.params[5].annot.loc) == "6:69");
  CHECK(k.params[6].annot.name == "constexpr");
  CHECK_FALSE(k.params[6].defaultValue);
  CHECK(k.params[7].name == "BN");
  CHECK(at(k.params[7].loc) == "7:33");
  REQUIRE(k.params[7].defaultValue);
  CHECK(k.params[7].defaultValue->intValue == 64);
  CHECK(at(k.params[7].defaultValue->loc) == "7:49");

  // Body statements and expression locations.
  REQUIRE(k.body.size() == 7);
  const Stmt &s0 = *k.body[0];
  CHECK(s0.kind == StmtKind::Assign);
  CHECK(at(s0.loc) == "8:5");
  const Expr &tgt = *s0.targets[0];
  CHECK(tgt.kind == ExprKind::Tuple);
  CHECK(at(tgt.loc) == "8:5"); // bare tuple: its first element
  CHECK(at(tgt.args[1]->loc) == "8:12");
  CHECK(s0.value->kind == ExprKind::Call);
  CHECK(at(s0.value->loc) == "8:20");
  CHECK(at(s0.value->args[0]->loc) == "8:32");

  const Expr &rm = *k.body[1]->value;
  CHECK(rm.kind == ExprKind::Binary);
  CHECK(rm.binOp == BinOp::Add);
  CHECK(at(rm.loc) == "9:21");                 // the '+'
  CHECK(at(rm.operands[0]->loc) == "9:16");    // the '*'
  CHECK(at(startLoc(rm)) == "9:10");           // `pid_m`
  CHECK(at(rm.operands[1]->loc) == "9:23");    // call: the callee

  const Expr &zeros = *k.body[2]->value;
  CHECK(zeros.args[0]->kind == ExprKind::Tuple);
  CHECK(at(zeros.args[0]->loc) == "10:17"); // parenthesized tuple: the '('

  const Stmt &loop = *k.body[3];
  CHECK(loop.kind == StmtKind::For);
  CHECK(at(loop.loc) == "11:5");
  CHECK(loop.targets[0]->kind == ExprKind::Name);
  CHECK(loop.targets[0]->str == "kb");
  REQUIRE(loop.body.size() == 3);
  const Expr &load = *loop.body[0]->value;
  REQUIRE(load.keywords.size() == 2);
  CHECK(load.keywords[0].name == "mask");
  CHECK(at(load.keywords[0].loc) == "12:52");
  CHECK(at(load.keywords[0].value->loc) == "12:75"); // the '&'
  CHECK(load.keywords[1].name == "other");
  CHECK(at(load.keywords[1].loc) == "12:95");
  CHECK(load.keywords[1].value->kind == ExprKind::FloatLit);
  CHECK(load.keywords[1].value->floatValue == 0.0);
  CHECK(at(load.keywords[1].value->loc) == "12:101");
  // X + rm[:, None] * K ...: the innermost subscript is at '[', its slice at ':'.
  const Expr &sub = *load.args[0]->operands[0]->operands[1]->operands[0];
  CHECK(sub.kind == ExprKind::Subscript);
  CHECK(at(sub.loc) == "12:24");
  CHECK(sub.args[0]->kind == ExprKind::Slice);
  CHECK(at(sub.args[0]->loc) == "12:25");
  CHECK_FALSE(sub.args[0]->operands[0]);
  CHECK_FALSE(sub.args[0]->operands[1]);
  CHECK(sub.args[1]->kind == ExprKind::NoneLit);
  const Stmt &aug = *loop.body[2];
  CHECK(aug.kind == StmtKind::AugAssign);
  CHECK(aug.augOp == BinOp::Add);
  CHECK(at(aug.loc) == "14:9");
  CHECK(at(aug.value->loc) == "14:16");

  const Stmt &ifs = *k.body[4];
  CHECK(ifs.kind == StmtKind::If);
  CHECK(at(ifs.loc) == "15:5");
  CHECK(ifs.cond->binOp == BinOp::And);
  CHECK(at(ifs.cond->loc) == "15:14");
  CHECK(at(ifs.cond->operands[0]->loc) == "15:10");
  CHECK(at(ifs.cond->operands[1]->loc) == "15:18");
  CHECK(ifs.cond->operands[1]->unOp == UnOp::Not);
  REQUIRE(ifs.orelse.size() == 1); // elif: a nested If in orelse
  const Stmt &elif = *ifs.orelse[0];
  CHECK(elif.kind == StmtKind::If);
  CHECK(at(elif.loc) == "17:5");
  const Expr &ifexp = *elif.body[0]->value;
  CHECK(ifexp.kind == ExprKind::IfExp);
  CHECK(at(ifexp.loc) == "18:15");
  CHECK(at(startLoc(ifexp)) == "18:13");
  CHECK(ifexp.operands[0]->intValue == 1);
  CHECK(ifexp.operands[1]->str == "c");
  CHECK(ifexp.operands[2]->intValue == 2);
  REQUIRE(elif.orelse.size() == 1);
  CHECK(elif.orelse[0]->kind == StmtKind::While);
  CHECK(at(elif.orelse[0]->loc) == "20:9");
  CHECK(at(elif.orelse[0]->cond->loc) == "20:17");

  const Expr &to = *k.body[5]->value;
  CHECK(to.kind == ExprKind::Call);
  CHECK(at(to.loc) == "22:9");
  CHECK(to.operands[0]->kind == ExprKind::Attribute);
  CHECK(to.operands[0]->str == "to");
  CHECK(at(to.operands[0]->loc) == "22:10");

  CHECK(k.body[6]->kind == StmtKind::Expr);
  CHECK(at(k.body[6]->loc) == "23:5");

  const FunctionDef &h = *m.functions[1];
  CHECK(h.decorators[0].name == "func");
  CHECK(at(h.nameLoc) == "26:5");
  CHECK_FALSE(h.params[0].hasAnnot);
  CHECK(h.params[1].hasAnnot);
  CHECK(h.hasReturnAnnot);
  CHECK(h.returnAnnot.name == "i32");
  CHECK(at(h.returnAnnot.loc) == "26:26");
  CHECK(h.body[0]->kind == StmtKind::Return);
  CHECK(at(h.body[0]->loc) == "27:5");
  CHECK(at(h.body[0]->value->loc) == "27:14");
}

TEST_CASE("parser: operator precedence and associativity", "[parser]") {
  CHECK(expr("a + b * c") == "(+ a (* b c))");
  CHECK(expr("a * b + c") == "(+ (* a b) c)");
  CHECK(expr("a - b - c") == "(- (- a b) c)");
  CHECK(expr("a / b // c % d * e") == "(* (% (// (/ a b) c) d) e)");
  CHECK(expr("a | b ^ c & d << e + f * g") == "(| a (^ b (& c (<< d (+ e (* f g))))))");
  CHECK(expr("a * b + c << d & e ^ f | g") == "(| (^ (& (<< (+ (* a b) c) d) e) f) g)");
  CHECK(expr("a >> b << c") == "(<< (>> a b) c)");
  CHECK(expr("-2**2") == "(- (** 2 2))");
  CHECK(expr("2**-1") == "(** 2 (- 1))");
  CHECK(expr("a ** b ** c") == "(** a (** b c))");
  CHECK(expr("-a * b") == "(* (- a) b)");
  CHECK(expr("~a // b % c") == "(% (// (~ a) b) c)");
  CHECK(expr("- + ~x") == "(- (+ (~ x)))");
  CHECK(expr("-x.to(f32)[0]") == "(- (sub (call (. x to) f32) 0))");
  CHECK(expr("a < b | c") == "(< a (| b c))");
  CHECK(expr("a + 1 == b * 2") == "(== (+ a 1) (* b 2))");
  CHECK(expr("a != b") == "(!= a b)");
  CHECK(expr("a <= b") == "(<= a b)");
  CHECK(expr("a >= b") == "(>= a b)");
  CHECK(expr("not a == b") == "(not (== a b))");
  CHECK(expr("not not a") == "(not (not a))");
  CHECK(expr("a or b and not c") == "(or a (and b (not c)))");
  CHECK(expr("a and b or c and d") == "(or (and a b) (and c d))");
  CHECK(expr("a or b or c") == "(or (or a b) c)");
  CHECK(expr("x if c else y") == "(ifexp c x y)");
  CHECK(expr("x if c else y if d else z") == "(ifexp c x (ifexp d y z))");
  CHECK(expr("a or b if c or d else e and f") == "(ifexp (or c d) (or a b) (and e f))");
  CHECK(expr("(x if c else y) + 1") == "(+ (ifexp c x y) 1)");
  CHECK(expr("(a + b) * c") == "(* (+ a b) c)");
  CHECK(expr("((a))") == "a");
}

TEST_CASE("parser: atoms, tuples, calls and subscripts", "[parser]") {
  CHECK(expr("()") == "(tuple)");
  CHECK(expr("(a,)") == "(tuple a)");
  CHECK(expr("(a, b)") == "(tuple a b)");
  CHECK(expr("(a, b,)") == "(tuple a b)");
  CHECK(expr("1, 2") == "(tuple 1 2)");
  CHECK(expr("1,") == "(tuple 1)");
  CHECK(expr("((1, 2), (3,))") == "(tuple (tuple 1 2) (tuple 3))");
  CHECK(expr("True, False, None") == "(tuple True False None)");
  CHECK(expr(R"("a\tb\n" 'c')") == R"("a\tb\nc")");
  CHECK(expr("1.5") == "1.5");
  CHECK(expr("0x10") == "16");
  CHECK(expr("f()") == "(call f)");
  CHECK(expr("f(a, b,)") == "(call f a b)");
  CHECK(expr("f(a, b=1, c=x + 1)") == "(call f a (kw b 1) (kw c (+ x 1)))");
  CHECK(expr("f(x == 1)") == "(call f (== x 1))");
  CHECK(expr("f(a)(b)") == "(call (call f a) b)");
  CHECK(expr("a.b.c") == "(. (. a b) c)");
  CHECK(expr("x[0][1]") == "(sub (sub x 0) 1)");
  CHECK(expr("x[:, None, 1:, :n, a:b + 1]") ==
        "(sub x (: _ _) None (: 1 _) (: _ n) (: a (+ b 1)))");
  CHECK(expr("x[i,]") == "(sub x i)");
  CHECK(expr("f(\n  a,\n    b=2,\n)") == "(call f a (kw b 2))");

  auto r = parseText("X = f(a,\n      k=(1,\n2))[i:j]\n");
  REQUIRE(r->module);
  const Expr &e = *r->module->globals[0].value;
  CHECK(e.kind == ExprKind::Subscript);
  CHECK(at(e.loc) == "3:4");
  CHECK(at(e.args[0]->loc) == "3:6");
  CHECK(at(startLoc(*e.args[0])) == "3:5");
  const Expr &call = *e.operands[0];
  CHECK(at(call.loc) == "1:5");
  CHECK(at(call.keywords[0].loc) == "2:7");
  CHECK(at(call.keywords[0].value->loc) == "2:9");
  CHECK(at(call.keywords[0].value->args[1]->loc) == "3:1");
}

TEST_CASE("parser: unary minus is not folded into literals", "[parser]") {
  auto r = parseText("X = -5\nY = -1.5\n");
  REQUIRE(r->module);
  const Expr &x = *r->module->globals[0].value;
  CHECK(x.kind == ExprKind::Unary);
  CHECK(x.unOp == UnOp::Neg);
  CHECK(at(x.loc) == "1:5");
  CHECK(x.operands[0]->kind == ExprKind::IntLit);
  CHECK(x.operands[0]->intValue == 5);
  CHECK(at(x.operands[0]->loc) == "1:6");
  const Expr &y = *r->module->globals[1].value;
  CHECK(y.kind == ExprKind::Unary);
  CHECK(y.operands[0]->floatValue == 1.5);
}

TEST_CASE("parser: statements", "[parser]") {
  CHECK(dumpOf("def f(x, y):\n"
               "    a, b = b, a\n"
               "    (c, d) = t\n"
               "    x[i, :] = 0\n"
               "    a = b,\n"
               "    for i, j in pairs:\n"
               "        continue\n"
               "    while True:\n"
               "        break\n"
               "    return a, b\n") ==
        "def f(x, y)\n"
        "  (tuple a b) = (tuple b a)\n"
        "  (tuple c d) = t\n"
        "  (sub x i (: _ _)) = 0\n"
        "  a = (tuple b)\n"
        "  for (tuple i j) in pairs\n"
        "    continue\n"
        "  while True\n"
        "    break\n"
        "  return (tuple a b)\n");

  CHECK(dumpOf("def f():\n"
               "    a += 1\n    a -= 1\n    a *= 1\n    a /= 1\n    a //= 1\n    a %= 1\n"
               "    a &= 1\n    a |= 1\n    a ^= 1\n    a <<= 1\n    a >>= 1\n    a **= 1\n"
               "    x[0] += y\n"
               "    return\n") ==
        "def f()\n"
        "  a += 1\n  a -= 1\n  a *= 1\n  a /= 1\n  a //= 1\n  a %= 1\n"
        "  a &= 1\n  a |= 1\n  a ^= 1\n  a <<= 1\n  a >>= 1\n  a **= 1\n"
        "  (sub x 0) += y\n"
        "  return\n");

  // if / elif / elif / else: each elif is an If nested in the previous orelse.
  auto r = parseText("def f():\n"
                     "    if a:\n"
                     "        x = 1\n"
                     "    elif b:\n"
                     "        x = 2\n"
                     "    elif c:\n"
                     "        x = 3\n"
                     "    else:\n"
                     "        x = 4\n"
                     "    if d:\n"
                     "        pass\n");
  REQUIRE(r->module);
  CHECK(dump(*r->module) == "def f()\n"
                            "  if a\n"
                            "    x = 1\n"
                            "  else\n"
                            "    if b\n"
                            "      x = 2\n"
                            "    else\n"
                            "      if c\n"
                            "        x = 3\n"
                            "      else\n"
                            "        x = 4\n"
                            "  if d\n"
                            "    pass\n");
  const Block &body = r->module->functions[0]->body;
  REQUIRE(body.size() == 2);
  const Stmt &e1 = *body[0]->orelse[0];
  CHECK(at(e1.loc) == "4:5");
  CHECK(e1.orelse.size() == 1);
  CHECK(at(e1.orelse[0]->loc) == "6:5");
  CHECK(e1.orelse[0]->orelse.size() == 1);
  CHECK(e1.orelse[0]->orelse[0]->kind == StmtKind::Assign);
  CHECK(body[1]->orelse.empty());

  // Bodies on the same line as the ':'.
  CHECK(dumpOf("def f(): return 1\n"
               "def g(x):\n"
               "    if x: return 2\n"
               "    elif y: x = 3\n"
               "    else: pass\n"
               "    for i in r: s += i\n"
               "    while c: c = c - 1\n") ==
        "def f()\n  return 1\n"
        "def g(x)\n"
        "  if x\n    return 2\n  else\n    if y\n      x = 3\n    else\n      pass\n"
        "  for i in r\n    s += i\n"
        "  while c\n    c = (- c 1)\n");
}

TEST_CASE("parser: top level forms", "[parser]") {
  auto r = parseText("# header comment\n"
                     "from 'a.tile' import x\n"
                     "from \"b/c.tile\" import (p as q,\n  r,)\n"
                     "\n"
                     "N = 1 << 10\n"
                     "T = 1, 2\n"
                     "@kernel\n"
                     "@other   # comment\n"
                     "\n"
                     "def k(a, b=2, c: i32 = 3, d: * **i8 = None, e: ***f32 = 0) -> None:\n"
                     "    pass\n"
                     "def plain(): pass");
  INFO(r->diags.render());
  REQUIRE(r->module);
  const Module &m = *r->module;
  CHECK(dump(m) == "import \"a.tile\" x\n"
                   "import \"b/c.tile\" p as q, r\n"
                   "const N = (<< 1 10)\n"
                   "const T = (tuple 1 2)\n"
                   "@kernel\n"
                   "@other\n"
                   "def k(a, b = 2, c: i32 = 3, d: ***i8 = None, e: ***f32 = 0) -> None\n"
                   "  pass\n"
                   "def plain()\n"
                   "  pass\n");
  CHECK(at(m.imports[1].loc) == "3:1");
  CHECK(at(m.imports[1].names[1].loc) == "4:3");
  CHECK(m.functions[0]->decorators.size() == 2);
  CHECK(at(m.functions[0]->decorators[1].loc) == "9:1");
  CHECK(at(m.functions[0]->loc) == "11:1");
  const Param &b = m.functions[0]->params[1];
  CHECK_FALSE(b.hasAnnot);
  REQUIRE(b.defaultValue);
  CHECK(b.defaultValue->intValue == 2);
  CHECK(m.functions[0]->params[3].annot.pointerDepth == 3);
  CHECK(m.functions[0]->params[3].defaultValue->kind == ExprKind::NoneLit);
  CHECK(m.functions[0]->returnAnnot.name == "None");
  CHECK(m.functions[1]->decorators.empty());
  CHECK(m.functions[1]->params.empty());

  // Empty input and comment-only input are valid, empty modules.
  CHECK(dumpOf("") == "");
  CHECK(dumpOf("# nothing\n\n   # here\n") == "");
  // Backslash continuation and CRLF line endings.
  CHECK(dumpOf("X = 1 + \\\n  2\r\nY = (3 *\r\n 4)\r\n") ==
        "const X = (+ 1 2)\nconst Y = (* 3 4)\n");
}

TEST_CASE("parser: decorator arguments and list displays", "[parser]") {
  // Inside the parentheses line breaks do not matter; lists are allowed there.
  auto r = parseText("@autotune(configs=[config(BM=64),\n"
                     "                   config(BM=-128, num_warps=8),],\n"
                     "          key=[\"M\"], key_round=[], prune=\"BM <= 64\")\n"
                     "@kernel\n"
                     "def k(): pass\n");
  INFO(r->diags.render());
  REQUIRE(r->module);
  const FunctionDef &k = *r->module->functions[0];
  REQUIRE(k.decorators.size() == 2);
  const Decorator &d = k.decorators[0];
  CHECK(d.name == "autotune");
  CHECK(at(d.loc) == "1:1");
  REQUIRE(d.call);
  CHECK(at(d.call->loc) == "1:2");
  CHECK(d.call->keywords.size() == 4);
  CHECK(at(d.call->keywords[0].value->loc) == "1:19"); // the '['
  CHECK(at(d.call->keywords[1].loc) == "3:11");
  CHECK_FALSE(k.decorators[1].call);
  CHECK(dump(*r->module) ==
        "@(call autotune (kw configs (list (call config (kw BM 64)) "
        "(call config (kw BM (- 128)) (kw num_warps 8)))) (kw key (list \"M\")) "
        "(kw key_round (list)) (kw prune \"BM <= 64\"))\n"
        "@kernel\n"
        "def k()\n"
        "  pass\n");
  // Lists parse anywhere (they are tuples in kernels); a bad one is an error.
  CHECK(briefErrorOf("def f():\n    x = [1 2]\n") == "2:12: expected ',' or ']', found '2'");
  CHECK(briefErrorOf("@autotune(configs=[1 2])\ndef f(): pass\n") ==
        "1:22: expected ',' or ']', found '2'");
}

TEST_CASE("parser: where the bytes of a string literal are", "[parser]") {
  // One location per byte of the contents (an escape's byte at its
  // backslash), then the closing quote; adjacent literals concatenate.
  auto r = parseText("X = ('a\\tb'\n     \"c\")\n");
  INFO(r->diags.render());
  REQUIRE(r->module);
  const Expr &s = *r->module->globals[0].value;
  REQUIRE(s.kind == ExprKind::StringLit);
  CHECK(s.str == "a\tbc");
  std::vector<std::string> locs;
  for (Loc l : s.strLocs)
    locs.push_back(at(l));
  CHECK(locs == std::vector<std::string>{"1:7", "1:8", "1:10", "2:7", "2:8"});
}

TEST_CASE("parser: a file holding one expression", "[parser]") {
  auto parse = [](const std::string &text, std::string *error = nullptr) {
    SourceManager sm;
    DiagnosticEngine diags(sm);
    uint32_t id = sm.addBuffer("e", text);
    ExprPtr e = parseExpression(sm, id, diags);
    if (error && diags.hasErrors()) {
      const Diagnostic &d = diags.diagnostics()[0];
      *error = at(d.loc) + ": " + d.message;
    }
    return e ? dump(*e) : std::string("null");
  };
  CHECK(parse("BM * BK + BK * BN <= 32768") == "(<= (+ (* BM BK) (* BK BN)) 32768)");
  CHECK(parse("  num_warps * 32 <= BM // 2  ") == "(<= (* num_warps 32) (// BM 2))");
  CHECK(parse("a if b else c") == "(ifexp b a c)");
  std::string error;
  CHECK(parse("BM <", &error) == "null");
  CHECK(error == "1:5: expected an expression, found end of line");
  CHECK(parse("BM BK", &error) == "null");
  CHECK(error == "1:4: expected the end of the expression, found 'BK'");
  CHECK(parse("x = 1", &error) == "null");
  CHECK(error == "1:3: expected the end of the expression, found '='");
  CHECK(parse("]", &error) == "null");
  CHECK(error == "1:1: unmatched ']'");
  CHECK(parse("", &error) == "null");
  CHECK(error == "1:1: expected an expression, found end of file");
}

TEST_CASE("AST spelling", "[parser]") {
  CHECK(std::string(spelling(BinOp::FloorDiv)) == "//");
  CHECK(std::string(spelling(BinOp::Pow)) == "**");
  CHECK(std::string(spelling(BinOp::And)) == "and");
  CHECK(std::string(spelling(BinOp::Le)) == "<=");
  CHECK(std::string(spelling(BinOp::Shr)) == ">>");
  CHECK(std::string(spelling(UnOp::Not)) == "not");
  CHECK(std::string(spelling(UnOp::Invert)) == "~");
  CHECK(std::string(spelling(UnOp::Neg)) == "-");
}

// ==================================================================== errors

TEST_CASE("errors: lexical", "[parser][errors]") {
  CHECK(errorOf("X = $\n") ==
        "t.tile:1:5: error: unexpected character '$'\n"
        "    X = $\n"
        "        ^\n");
  CHECK(errorOf("X = 1 ? 2\n") ==
        "t.tile:1:7: error: unexpected character '?'\n"
        "    X = 1 ? 2\n"
        "          ^\n");
  CHECK(errorOf("X = \xc3\xa9\n") ==
        "t.tile:1:5: error: unexpected character '\\xc3'\n"
        "    X = \xc3\xa9\n"
        "        ^\n");
  CHECK(briefErrorOf(std::string("X = 1\0", 6) + "\n") == "1:6: unexpected character '\\x00'");
  CHECK(errorOf("def f():\n    s = \"abc\n") ==
        "t.tile:2:9: error: unterminated string literal\n"
        "        s = \"abc\n"
        "            ^\n");
  CHECK(briefErrorOf("X = 'abc\\'") == "1:5: unterminated string literal");
  CHECK(briefErrorOf("X = 'ab\\\ncd'\n") == "1:5: unterminated string literal");
  CHECK(errorOf("def f():\n\tpass\n") ==
        "t.tile:2:1: error: tabs are not allowed in indentation; use spaces\n"
        "    \tpass\n"
        "    ^\n");
  CHECK(briefErrorOf("def f():\n  \tpass\n") ==
        "2:3: tabs are not allowed in indentation; use spaces");
  CHECK(dumpOf("def f(a,\tb):\n  x =\t1  \t# tabs elsewhere are fine\n\t\n") ==
        "def f(a, b)\n  x = 1\n");
  CHECK(errorOf("def f():\n    if x:\n        pass\n  y = 1\n") ==
        "t.tile:4:3: error: unindent does not match any outer indentation level\n"
        "      y = 1\n"
        "      ^\n");
  CHECK(errorOf("X = 99999999999999999999\n") ==
        "t.tile:1:5: error: integer literal is too large\n"
        "    X = 99999999999999999999\n"
        "        ^\n");
  CHECK(briefErrorOf("X = 9223372036854775808\n") == "1:5: integer literal is too large");
  CHECK(briefErrorOf("X = 0x8000000000000000\n") == "1:5: integer literal is too large");
  CHECK(briefErrorOf("X = 0b" + std::string(64, '1') + "\n") ==
        "1:5: integer literal is too large");
  CHECK(briefErrorOf("X = 1e999\n") == "1:5: float literal is too large");
  CHECK(briefErrorOf("X = 1_\n") == "1:5: invalid number literal '1_'");
  CHECK(briefErrorOf("X = 1__0\n") == "1:5: invalid number literal '1__0'");
  CHECK(briefErrorOf("X = 0x\n") == "1:5: invalid number literal '0x'");
  CHECK(briefErrorOf("X = 0b12\n") == "1:5: invalid number literal '0b12'");
  CHECK(briefErrorOf("X = 12abc\n") == "1:5: invalid number literal '12abc'");
  CHECK(briefErrorOf("X = 1.to\n") == "1:5: invalid number literal '1.to'");
  CHECK(briefErrorOf("X = \"a\\qb\"\n") == "1:7: invalid escape sequence '\\q'");
  CHECK(briefErrorOf("X = 1 + \\ 2\n") ==
        "1:10: unexpected character after line continuation character");
  CHECK(briefErrorOf("X = 1 \\") ==
        "1:7: unexpected end of file after line continuation character");
}

TEST_CASE("errors: brackets", "[parser][errors]") {
  CHECK(errorOf("X = f(1))\n") ==
        "t.tile:1:9: error: unmatched ')'\n"
        "    X = f(1))\n"
        "            ^\n");
  CHECK(briefErrorOf("X = ]\n") == "1:5: unmatched ']'");
  CHECK(errorOf("def f():\n    x = g(1,\n          2\n") ==
        "t.tile:2:10: error: '(' was never closed\n"
        "        x = g(1,\n"
        "             ^\n");
  CHECK(briefErrorOf("X = a[(1 +") == "1:7: '(' was never closed");
  CHECK(briefErrorOf("X = a[1") == "1:6: '[' was never closed");
  CHECK(briefErrorOf("X = (a]\n") == "1:7: closing ']' does not match opening '('");
  // An earlier syntax error wins over the unclosed bracket.
  CHECK(briefErrorOf("X = f(1 2\n") == "1:9: expected ',' or ')', found '2'");
}

TEST_CASE("errors: indentation and blocks", "[parser][errors]") {
  CHECK(errorOf("def f():\n    x = 1\n        y = 2\n") ==
        "t.tile:3:9: error: unexpected indentation\n"
        "            y = 2\n"
        "            ^\n");
  CHECK(briefErrorOf("  X = 1\n") == "1:3: unexpected indentation");
  CHECK(briefErrorOf("@kernel\n  def f():\n    pass\n") == "2:3: unexpected indentation");
  CHECK(errorOf("def f():\n    if x:\n    y = 1\n") ==
        "t.tile:3:5: error: expected an indented block after 'if'\n"
        "        y = 1\n"
        "        ^\n");
  CHECK(errorOf("def f():\n    x = 1\ndef g():\n") ==
        "t.tile:3:9: error: expected an indented block after 'def'\n"
        "    def g():\n"
        "            ^\n");
  CHECK(briefErrorOf("def f():\n    for i in r:\n    pass\n") ==
        "3:5: expected an indented block after 'for'");
  CHECK(briefErrorOf("def f():\n    while x:\n\n    # c\ny = 1\n") ==
        "5:1: expected an indented block after 'while'");
  CHECK(briefErrorOf("def f():\n    if x:\n        pass\n    else:\n    pass\n") ==
        "5:5: expected an indented block after 'else'");
  CHECK(briefErrorOf("def f():\n    if x:\n        pass\n    elif y:\n") ==
        "4:12: expected an indented block after 'elif'");
  CHECK(errorOf("def f():\n    else:\n        pass\n") ==
        "t.tile:2:5: error: 'else' without a matching 'if'\n"
        "        else:\n"
        "        ^\n");
  CHECK(briefErrorOf("def f():\n    while x:\n        pass\n    else:\n        pass\n") ==
        "4:5: 'else' without a matching 'if'");
  CHECK(briefErrorOf("else:\n    pass\n") == "1:1: 'else' without a matching 'if'");
  CHECK(briefErrorOf("def f():\n    pass\nelif x:\n    pass\n") ==
        "3:1: 'elif' without a matching 'if'");
  CHECK(briefErrorOf("def f():\n    if x: if y: pass\n") ==
        "2:11: expected a simple statement, found 'if'");
  CHECK(briefErrorOf("def f():\n    def g():\n        pass\n") ==
        "2:5: function definitions are only allowed at the top level");
  CHECK(briefErrorOf("def f():\n    from \"a\" import b\n") ==
        "2:5: imports are only allowed at the top level");
}

TEST_CASE("errors: expected tokens", "[parser][errors]") {
  CHECK(errorOf("def f():\n    if x\n        pass\n") ==
        "t.tile:2:9: error: expected ':', found end of line\n"
        "        if x\n"
        "            ^\n");
  CHECK(briefErrorOf("def f():\n    while x y:\n        pass\n") ==
        "2:13: expected ':', found 'y'");
  CHECK(briefErrorOf("def f()\n    pass\n") == "1:8: expected ':', found end of line");
  CHECK(briefErrorOf("def f() -> i32 pass\n") == "1:16: expected ':', found 'pass'");
  CHECK(briefErrorOf("def f():\n    for i range(3):\n        pass\n") ==
        "2:11: expected 'in', found 'range'");
  CHECK(errorOf("X = f(1, 2") ==
        "t.tile:1:6: error: '(' was never closed\n"
        "    X = f(1, 2\n"
        "         ^\n");
  CHECK(briefErrorOf("X = (1 2)\n") == "1:8: expected ',' or ')', found '2'");
  CHECK(briefErrorOf("X = x[1 2]\n") == "1:9: expected ',' or ']', found '2'");
  CHECK(briefErrorOf("X = x[]\n") == "1:7: expected an expression, found ']'");
  CHECK(briefErrorOf("X = x[1:2:3]\n") == "1:10: slice steps are not supported");
  CHECK(briefErrorOf("X = 1 +\n") == "1:8: expected an expression, found end of line");
  CHECK(briefErrorOf("X = [1,\n") == "1:5: '[' was never closed");
  CHECK(briefErrorOf("X = 1 if c\n") == "1:11: expected 'else', found end of line");
  CHECK(briefErrorOf("X = 1 2\n") == "1:7: expected end of line, found '2'");
  CHECK(briefErrorOf("X = \"s\" x\n") == "1:9: expected end of line, found 'x'");
  CHECK(briefErrorOf("X = a.1\n") == "1:6: expected end of line, found '.1'");
  CHECK(briefErrorOf("X = a.if\n") == "1:7: expected an attribute name, found 'if'");
  CHECK(briefErrorOf("def (x):\n") == "1:5: expected a function name, found '('");
  CHECK(briefErrorOf("def f x:\n") == "1:7: expected '(', found 'x'");
  CHECK(briefErrorOf("def f(1):\n") == "1:7: expected a parameter name, found '1'");
  CHECK(briefErrorOf("def f(a b):\n") == "1:9: expected ',' or ')', found 'b'");
  CHECK(briefErrorOf("def f(a: *):\n") == "1:11: expected a type name, found ')'");
  // A decorator may have arguments (@autotune); ModuleLoader says which may.
  CHECK(briefErrorOf("@kernel(1) x\ndef f():\n") == "1:12: expected end of line, found 'x'");
  CHECK(briefErrorOf("@kernel\nX = 1\n") == "2:1: expected 'def', found 'X'");
  CHECK(briefErrorOf("@kernel\n") == "1:8: expected 'def', found end of file");
  CHECK(briefErrorOf("from \"a\" b\n") == "1:10: expected 'import', found 'b'");
  CHECK(briefErrorOf("from \"a\" import\n") ==
        "1:16: expected a name to import, found end of line");
  CHECK(briefErrorOf("from \"a\" import b as\n") ==
        "1:21: expected a name after 'as', found end of line");
  CHECK(briefErrorOf("def f():\n    return 1,,\n") ==
        "2:14: expected end of line, found ','");
}

TEST_CASE("errors: semantic-ish syntax rules", "[parser][errors]") {
  CHECK(errorOf("def f():\n    return a < b < c\n") ==
        "t.tile:2:18: error: chained comparisons are not supported; combine them with 'and'\n"
        "        return a < b < c\n"
        "                     ^\n");
  CHECK(briefErrorOf("X = a == b != c\n") ==
        "1:12: chained comparisons are not supported; combine them with 'and'");
  CHECK(errorOf("def f():\n    f(x) = 1\n") ==
        "t.tile:2:5: error: cannot assign to this expression\n"
        "        f(x) = 1\n"
        "        ^\n");
  CHECK(errorOf("def f():\n    1 = x\n") ==
        "t.tile:2:5: error: cannot assign to this expression\n"
        "        1 = x\n"
        "        ^\n");
  CHECK(briefErrorOf("def f():\n    a, f(b) = x\n") == "2:8: cannot assign to this expression");
  CHECK(briefErrorOf("def f():\n    a.b = x\n") == "2:5: cannot assign to this expression");
  CHECK(briefErrorOf("def f():\n    a + b = x\n") == "2:5: cannot assign to this expression");
  CHECK(briefErrorOf("def f():\n    () = x\n") == "2:5: cannot assign to this expression");
  CHECK(briefErrorOf("def f():\n    a, b += x\n") == "2:5: cannot assign to this expression");
  CHECK(briefErrorOf("def f():\n    for x[0] in r:\n        pass\n") ==
        "2:9: cannot assign to this expression");
  CHECK(errorOf("X = f(a=1, 2)\n") ==
        "t.tile:1:12: error: positional argument follows keyword argument\n"
        "    X = f(a=1, 2)\n"
        "               ^\n");
  CHECK(briefErrorOf("X = f(a=1, a=2)\n") == "1:12: duplicate keyword argument 'a'");
  CHECK(errorOf("from lib.hash import x\n") ==
        "t.tile:1:6: error: import path must be a string literal\n"
        "    from lib.hash import x\n"
        "         ^\n");
  CHECK(briefErrorOf("from import x\n") == "1:6: import path must be a string literal");
  CHECK(errorOf("print(x)\n") ==
        "t.tile:1:1: error: only imports, function definitions and constant assignments may "
        "appear at the top level\n"
        "    print(x)\n"
        "    ^\n");
  CHECK(briefErrorOf("x += 1\n") == "1:1: only imports, function definitions and constant "
                                    "assignments may appear at the top level");
  CHECK(briefErrorOf("if x:\n    pass\n") == "1:1: only imports, function definitions and "
                                             "constant assignments may appear at the top level");
  CHECK(briefErrorOf("a, b = 1, 2\n") == "1:1: only imports, function definitions and "
                                         "constant assignments may appear at the top level");
  CHECK(briefErrorOf("import foo\n") ==
        "1:1: imports must be written as 'from \"path\" import name'");
  CHECK(errorOf("def f(a=1, b):\n    pass\n") ==
        "t.tile:1:12: error: a parameter without a default follows one with a default\n"
        "    def f(a=1, b):\n"
        "               ^\n");
  CHECK(briefErrorOf("def f(a: i32 = 1, b: i32):\n    pass\n") ==
        "1:19: a parameter without a default follows one with a default");
  CHECK(errorOf("def f(x, y, x: i32):\n    pass\n") ==
        "t.tile:1:13: error: duplicate parameter 'x'\n"
        "    def f(x, y, x: i32):\n"
        "                ^\n");
}

TEST_CASE("errors: the first error in the file is the one reported", "[parser][errors]") {
  CHECK(briefErrorOf("X = f(a=1, 2)\nY = $\n") ==
        "1:12: positional argument follows keyword argument");
  CHECK(briefErrorOf("X = $\nY = f(a=1, 2)\n") == "1:5: unexpected character '$'");
  CHECK(briefErrorOf("X = 1 2 $\n") == "1:7: expected end of line, found '2'");
  CHECK(briefErrorOf("X = 1 $ 2\n") == "1:7: unexpected character '$'");
  CHECK(briefErrorOf("def f(:\n    x = (\n") == "1:7: expected a parameter name, found ':'");
}

// =========================================================== robustness limits

TEST_CASE("nesting limits", "[parser][limits]") {
  auto nest = [](int n) { return "X = " + std::string(size_t(n), '(') + "1" +
                                 std::string(size_t(n), ')') + "\n"; };
  CHECK(parseText(nest(150))->module);
  CHECK(briefErrorOf(nest(300)) == "1:205: expression nested too deeply");
  CHECK(briefErrorOf(nest(100000)) == "1:205: expression nested too deeply");
  CHECK(briefErrorOf("X = " + std::string(5000, '-') + "1\n") ==
        "1:204: expression nested too deeply");
  CHECK(briefErrorOf("X = " + std::string(5000, '~') + "1\n") ==
        "1:204: expression nested too deeply");

  std::string nots = "X = ";
  for (int i = 0; i < 1000; ++i)
    nots += "not ";
  CHECK(briefErrorOf(nots + "x\n").find("expression nested too deeply") != std::string::npos);

  std::string pow = "X = 2";
  for (int i = 0; i < 1000; ++i)
    pow += "**2";
  CHECK(briefErrorOf(pow + "\n").find("expression nested too deeply") != std::string::npos);

  std::string ifexp = "X = 1";
  for (int i = 0; i < 1000; ++i)
    ifexp += " if c else 1";
  CHECK(briefErrorOf(ifexp + "\n").find("expression nested too deeply") != std::string::npos);

  // Long operator chains do not recurse while parsing but build deep trees.
  auto chain = [](const char *op, int n) {
    std::string s = "X = a";
    for (int i = 0; i < n; ++i)
      s += std::string(op) + "a";
    return s + "\n";
  };
  CHECK(parseText(chain("+", 900))->module);
  CHECK(briefErrorOf(chain("+", 5000)) == "1:2004: expression nested too deeply");
  auto repeat = [](const char *piece, int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
      s += piece;
    return s;
  };
  CHECK(parseText("X = a" + repeat(".b", 900) + "\n")->module);
  CHECK(briefErrorOf("X = a" + repeat(".b", 5000) + "\n") ==
        "1:2004: expression nested too deeply");
  CHECK(briefErrorOf("X = f" + repeat("()", 5000) + "\n") ==
        "1:5: expression nested too deeply"); // a Call is located at its callee
  CHECK(briefErrorOf("X = a" + repeat("[0]", 5000) + "\n") ==
        "1:3003: expression nested too deeply");

  // Wide (flat) expressions are fine.
  std::string wide = "X = f(";
  for (int i = 0; i < 20000; ++i)
    wide += "a, ";
  CHECK(parseText(wide + ")\n")->module);

  // Deeply nested blocks: one more space of indentation per level.
  auto blocks = [](int n) {
    std::string s = "def f():\n";
    for (int i = 1; i <= n; ++i)
      s += std::string(size_t(i), ' ') + "if x:\n";
    return s + std::string(size_t(n + 1), ' ') + "pass\n";
  };
  CHECK(parseText(blocks(150))->module);
  CHECK(briefErrorOf(blocks(400)) == "202:202: too many levels of indentation");

  // Long elif chains nest If statements in orelse.
  auto elifs = [](int n) {
    std::string s = "def f():\n    if x:\n        pass\n";
    for (int i = 0; i < n; ++i)
      s += "    elif x:\n        pass\n";
    return s + "    else:\n        pass\n";
  };
  CHECK(parseText(elifs(150))->module);
  CHECK(briefErrorOf(elifs(1000)) == "400:5: too many 'elif' branches");
}

TEST_CASE("robustness: mutated sources never crash", "[parser][fuzz]") {
  const std::string base = kSample;
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : size_t(rng() % n); };
  const std::string alphabet = std::string("()[]:,.=+-*/%<>!&|^~@#\\\"' \t\n\r_aZ09xe") +
                               "\x80\xff" + std::string(1, '\0');
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s = base;
    int edits = 1 + int(pick(4));
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t i = pick(s.size());
      switch (pick(6)) {
      case 0: // delete a character
        s.erase(i, 1);
        break;
      case 1: // insert a character
        s.insert(i, 1, alphabet[pick(alphabet.size())]);
        break;
      case 2: { // duplicate a range
        size_t n = 1 + pick(20);
        s.insert(i, s.substr(i, n));
        break;
      }
      case 3: // swap adjacent characters
        if (i + 1 < s.size())
          std::swap(s[i], s[i + 1]);
        break;
      case 4: // truncate
        s.resize(i);
        break;
      default: // delete a range
        s.erase(i, 1 + pick(10));
        break;
      }
    }
    auto r = parseText(s);
    INFO("iteration " << iter << "\n" << s);
    if (r->module) {
      ++accepted;
      CHECK_FALSE(r->diags.hasErrors());
      continue;
    }
    ++rejected;
    REQUIRE(r->diags.diagnostics().size() == 1);
    const Diagnostic &d = r->diags.diagnostics()[0];
    CHECK_FALSE(d.message.empty());
    CHECK(d.loc.file == r->file);
    REQUIRE(d.loc.line >= 1);
    REQUIRE(d.loc.line <= r->sm.file(r->file).lineStarts.size());
    CHECK(d.loc.col >= 1);
    CHECK(d.loc.col <= r->sm.lineText(d.loc).size() + 2);
    CHECK(r->diags.render().rfind("t.tile:", 0) == 0);
  }
  // Both outcomes are exercised.
  CHECK(accepted > 50);
  CHECK(rejected > 500);
}
