// Recursive-descent parser for `.tile` files.
//
// Grammar (precedence from low to high):
//   testlist   := test (',' test)* [',']          bare tuple where allowed
//   test       := or_test ['if' or_test 'else' test]
//   or_test    := and_test ('or' and_test)*
//   and_test   := not_test ('and' not_test)*
//   not_test   := 'not' not_test | comparison
//   comparison := bitor [compop bitor]              (no chaining)
//   bitor / bitxor / bitand / shift / arith / term  left-associative loops
//   factor     := ('-' | '+' | '~') factor | power
//   power      := postfix ['**' factor]
//   postfix    := atom ( '(' args ')' | '[' indices ']' | '.' NAME )*
//   atom       := NAME | INT | FLOAT | STRING+ | True | False | None
//               | '(' ')' | '(' test ')' | '(' test ',' [test (',' test)* [',']] ')'
//               | '[' [test (',' test)* [',']] ']'     (in decorator arguments only)
//   decorator  := '@' NAME ['(' args ')'] NEWLINE
//
// Errors are thrown as ParseError and turned into the single diagnostic that
// parseModule reports. "expected X, found Y" messages are generic: the ':' of
// every compound statement reports "expected ':', found ..." (Y as given by
// describeToken: "'foo'", "')'", "end of line", "end of file", ...).
//
// Robustness limits: recursion through nested expressions is capped at
// kMaxNesting levels, the height of an expression tree (which also grows
// through operator chains such as 1+1+...+1) at kMaxTreeHeight, and nested
// blocks / `elif` chains at kMaxNesting; exceeding one is an error, never a
// crash.
#include "AST.h"
#include "Lexer.h"

#include <algorithm>
#include <exception>
#include <new>
#include <unordered_map>
#include <unordered_set>

namespace tessera::fe {

namespace {

constexpr int kMaxNesting = 200;
constexpr int kMaxTreeHeight = 1000;

struct ParseError {
  Loc loc;
  std::string msg;
};

class Parser {
public:
  Parser(std::vector<Token> toks, uint32_t file) : toks_(std::move(toks)), file_(file) {
    heights_.reserve(toks_.size()); // at most about one node per token
  }

  std::unique_ptr<Module> parseModule() {
    auto m = std::make_unique<Module>();
    m->file = file_;
    while (!at(Tok::EndOfFile))
      parseTopLevel(*m);
    return m;
  }

  /// One expression filling the file. Leading spaces lex as an INDENT, and
  /// the end of the text as NEWLINE and DEDENTs; all are skipped.
  ExprPtr parseWholeExpression() {
    accept(Tok::Indent);
    ExprPtr e = parseTest();
    accept(Tok::Newline);
    while (accept(Tok::Dedent)) {
    }
    if (!at(Tok::EndOfFile))
      failExpected("the end of the expression");
    return e;
  }

private:
  std::vector<Token> toks_;
  uint32_t file_;
  size_t p_ = 0;
  int depth_ = 0;      // expression recursion
  int stmtDepth_ = 0;  // nested blocks and elif chains
  std::unordered_map<const Expr *, int> heights_;

  // ---------------------------------------------------------------- tokens
  [[noreturn]] void fail(Loc loc, std::string msg) { throw ParseError{loc, std::move(msg)}; }

  /// The current token. Reaching the lexer's error token reports that error.
  const Token &cur() {
    const Token &t = toks_[p_];
    if (t.kind == Tok::Error)
      fail(t.loc, t.value);
    return t;
  }
  /// Lookahead that never reports anything (for decisions only).
  Tok peekKind(size_t k) const { return toks_[std::min(p_ + k, toks_.size() - 1)].kind; }
  bool at(Tok k) { return cur().kind == k; }
  const Token &take() {
    const Token &t = cur();
    if (t.kind != Tok::EndOfFile)
      ++p_;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k))
      return false;
    ++p_;
    return true;
  }
  [[noreturn]] void failExpected(const std::string &what) {
    const Token &t = cur();
    if (t.kind == Tok::Indent)
      fail(t.loc, "unexpected indentation");
    fail(t.loc, "expected " + what + ", found " + describeToken(t));
  }
  const Token &expect(Tok k, const char *what) {
    if (!at(k))
      failExpected(what);
    return toks_[p_++];
  }
  void expectEndOfLine() { expect(Tok::Newline, "end of line"); }

  struct DepthGuard {
    Parser &p;
    explicit DepthGuard(Parser &parser) : p(parser) {
      if (++p.depth_ > kMaxNesting)
        p.fail(p.cur().loc, "expression nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
  };

  // ------------------------------------------------------------ top level
  void parseTopLevel(Module &m) {
    const Token &t = cur();
    switch (t.kind) {
    case Tok::Newline:
      ++p_;
      return;
    case Tok::Indent:
      fail(t.loc, "unexpected indentation");
    case Tok::KwFrom:
      m.imports.push_back(parseImport());
      return;
    case Tok::At:
    case Tok::KwDef:
      m.functions.push_back(parseFunction());
      return;
    case Tok::KwImport:
      fail(t.loc, "imports must be written as 'from \"path\" import name'");
    case Tok::KwElse:
    case Tok::KwElif:
      fail(t.loc, "'" + t.text + "' without a matching 'if'");
    case Tok::Name:
      if (peekKind(1) == Tok::Assign) {
        GlobalConst g;
        g.loc = t.loc;
        g.name = t.text;
        p_ += 2;
        g.value = parseTestList();
        expectEndOfLine();
        m.globals.push_back(std::move(g));
        return;
      }
      break;
    default:
      break;
    }
    fail(t.loc, "only imports, function definitions and constant assignments may appear at "
                "the top level");
  }

  ImportDecl parseImport() {
    ImportDecl d;
    d.loc = take().loc;
    const Token &path = cur();
    if (path.kind != Tok::String)
      fail(path.loc, "import path must be a string literal");
    d.pathLoc = path.loc;
    d.path = path.value;
    ++p_;
    expect(Tok::KwImport, "'import'");
    bool paren = accept(Tok::LParen);
    for (;;) {
      const Token &n = expect(Tok::Name, "a name to import");
      ImportName in;
      in.loc = n.loc;
      in.name = n.text;
      if (accept(Tok::KwAs))
        in.alias = expect(Tok::Name, "a name after 'as'").text;
      d.names.push_back(std::move(in));
      if (!accept(Tok::Comma))
        break;
      if (paren && at(Tok::RParen))
        break;
    }
    if (paren)
      expect(Tok::RParen, "',' or ')'");
    expectEndOfLine();
    return d;
  }

  TypeAnnot parseAnnot() {
    TypeAnnot a;
    a.loc = cur().loc;
    for (;;) {
      if (accept(Tok::Star))
        a.pointerDepth += 1;
      else if (accept(Tok::DoubleStar))
        a.pointerDepth += 2;
      else
        break;
      if (a.pointerDepth > kMaxNesting)
        fail(a.loc, "too many levels of pointers");
    }
    const Token &t = cur();
    if (t.kind != Tok::Name && t.kind != Tok::KwNone)
      failExpected("a type name");
    a.name = t.text;
    ++p_;
    return a;
  }

  std::unique_ptr<FunctionDef> parseFunction() {
    auto f = std::make_unique<FunctionDef>();
    f->file = file_;
    while (at(Tok::At)) {
      Decorator d;
      d.loc = take().loc;
      const Token &name = expect(Tok::Name, "a decorator name");
      d.name = name.text;
      if (at(Tok::LParen)) { // @autotune(configs=[...], ...): arguments as a call
        auto callee = make(ExprKind::Name, name.loc);
        callee->str = name.text;
        d.call = parseCall(seal(std::move(callee)));
      }
      expectEndOfLine();
      f->decorators.push_back(std::move(d));
    }
    f->loc = expect(Tok::KwDef, "'def'").loc;
    const Token &name = expect(Tok::Name, "a function name");
    f->nameLoc = name.loc;
    f->name = name.text;
    expect(Tok::LParen, "'('");
    std::unordered_set<std::string> seen;
    bool sawDefault = false;
    while (!accept(Tok::RParen)) {
      Param prm;
      const Token &pn = expect(Tok::Name, "a parameter name");
      prm.loc = pn.loc;
      prm.name = pn.text;
      if (!seen.insert(prm.name).second)
        fail(pn.loc, "duplicate parameter '" + prm.name + "'");
      if (accept(Tok::Colon)) {
        prm.hasAnnot = true;
        prm.annot = parseAnnot();
      }
      if (accept(Tok::Assign)) {
        prm.defaultValue = parseTest();
        sawDefault = true;
      } else if (sawDefault) {
        fail(prm.loc, "a parameter without a default follows one with a default");
      }
      f->params.push_back(std::move(prm));
      if (accept(Tok::Comma))
        continue;
      expect(Tok::RParen, "',' or ')'");
      break;
    }
    if (accept(Tok::Arrow)) {
      f->hasReturnAnnot = true;
      f->returnAnnot = parseAnnot();
    }
    expect(Tok::Colon, "':'");
    f->body = parseSuite("def");
    return f;
  }

  // ----------------------------------------------------------- statements
  /// The body after `kw ... :` — an indented block, or one simple statement
  /// on the same line.
  Block parseSuite(const char *kw) {
    Block b;
    if (!accept(Tok::Newline)) {
      b.push_back(parseSimpleStatement());
      return b;
    }
    const Token &t = cur();
    if (t.kind != Tok::Indent)
      fail(t.loc, std::string("expected an indented block after '") + kw + "'");
    if (++stmtDepth_ > kMaxNesting)
      fail(t.loc, "too many levels of indentation");
    ++p_;
    do {
      b.push_back(parseStatement());
    } while (!at(Tok::Dedent) && !at(Tok::EndOfFile));
    accept(Tok::Dedent);
    --stmtDepth_;
    return b;
  }

  StmtPtr parseStatement() {
    const Token &t = cur();
    switch (t.kind) {
    case Tok::KwIf: return parseIf();
    case Tok::KwFor: return parseFor();
    case Tok::KwWhile: return parseWhile();
    case Tok::Indent: fail(t.loc, "unexpected indentation");
    case Tok::KwDef:
    case Tok::At: fail(t.loc, "function definitions are only allowed at the top level");
    case Tok::KwFrom:
    case Tok::KwImport: fail(t.loc, "imports are only allowed at the top level");
    case Tok::KwElse:
    case Tok::KwElif: fail(t.loc, "'" + t.text + "' without a matching 'if'");
    default: return parseSimpleStatement();
    }
  }

  static bool augOp(Tok k, BinOp &op) {
    switch (k) {
    case Tok::PlusEq: op = BinOp::Add; return true;
    case Tok::MinusEq: op = BinOp::Sub; return true;
    case Tok::StarEq: op = BinOp::Mul; return true;
    case Tok::SlashEq: op = BinOp::Div; return true;
    case Tok::DoubleSlashEq: op = BinOp::FloorDiv; return true;
    case Tok::PercentEq: op = BinOp::Mod; return true;
    case Tok::DoubleStarEq: op = BinOp::Pow; return true;
    case Tok::AmpEq: op = BinOp::BitAnd; return true;
    case Tok::PipeEq: op = BinOp::BitOr; return true;
    case Tok::CaretEq: op = BinOp::BitXor; return true;
    case Tok::ShlEq: op = BinOp::Shl; return true;
    case Tok::ShrEq: op = BinOp::Shr; return true;
    default: return false;
    }
  }

  /// Assignment targets: a Name, a Subscript (when allowed), or a Tuple of Names.
  void checkTarget(const Expr &e, bool allowTuple, bool allowSubscript) {
    if (e.kind == ExprKind::Name || (allowSubscript && e.kind == ExprKind::Subscript))
      return;
    if (allowTuple && e.kind == ExprKind::Tuple && !e.args.empty()) {
      for (auto &a : e.args)
        if (a->kind != ExprKind::Name)
          fail(startLoc(*a), "cannot assign to this expression");
      return;
    }
    fail(startLoc(e), "cannot assign to this expression");
  }

  StmtPtr parseSimpleStatement() {
    const Token &t = cur();
    Loc loc = t.loc;
    switch (t.kind) {
    case Tok::KwPass:
    case Tok::KwBreak:
    case Tok::KwContinue: {
      StmtKind k = t.kind == Tok::KwPass    ? StmtKind::Pass
                   : t.kind == Tok::KwBreak ? StmtKind::Break
                                            : StmtKind::Continue;
      ++p_;
      expectEndOfLine();
      return std::make_unique<Stmt>(k, loc);
    }
    case Tok::KwReturn: {
      ++p_;
      auto s = std::make_unique<Stmt>(StmtKind::Return, loc);
      if (!at(Tok::Newline))
        s->value = parseTestList();
      expectEndOfLine();
      return s;
    }
    case Tok::KwIf:
    case Tok::KwFor:
    case Tok::KwWhile:
    case Tok::KwDef:
    case Tok::At:
    case Tok::KwFrom:
    case Tok::KwImport:
      failExpected("a simple statement");
    default:
      break;
    }
    ExprPtr e = parseTestList();
    BinOp op;
    if (at(Tok::Assign)) {
      checkTarget(*e, /*allowTuple=*/true, /*allowSubscript=*/true);
      ++p_;
      auto s = std::make_unique<Stmt>(StmtKind::Assign, loc);
      s->targets.push_back(std::move(e));
      s->value = parseTestList();
      expectEndOfLine();
      return s;
    }
    if (augOp(cur().kind, op)) {
      checkTarget(*e, /*allowTuple=*/false, /*allowSubscript=*/true);
      ++p_;
      auto s = std::make_unique<Stmt>(StmtKind::AugAssign, loc);
      s->augOp = op;
      s->targets.push_back(std::move(e));
      s->value = parseTest();
      expectEndOfLine();
      return s;
    }
    auto s = std::make_unique<Stmt>(StmtKind::Expr, loc);
    s->value = std::move(e);
    expectEndOfLine();
    return s;
  }

  StmtPtr parseIf() {
    auto root = std::make_unique<Stmt>(StmtKind::If, take().loc);
    root->cond = parseTest();
    expect(Tok::Colon, "':'");
    root->body = parseSuite("if");
    // `elif` chains nest If statements in orelse; built iteratively.
    Stmt *last = root.get();
    int chain = 0;
    while (at(Tok::KwElif)) {
      Loc l = cur().loc;
      if (++chain + stmtDepth_ >= kMaxNesting) // its body would nest too deeply
        fail(l, "too many 'elif' branches");
      ++p_;
      auto s = std::make_unique<Stmt>(StmtKind::If, l);
      s->cond = parseTest();
      expect(Tok::Colon, "':'");
      stmtDepth_ += chain;
      s->body = parseSuite("elif");
      stmtDepth_ -= chain;
      Stmt *raw = s.get();
      last->orelse.push_back(std::move(s));
      last = raw;
    }
    if (at(Tok::KwElse)) {
      ++p_;
      expect(Tok::Colon, "':'");
      stmtDepth_ += chain;
      last->orelse = parseSuite("else");
      stmtDepth_ -= chain;
    }
    return root;
  }

  StmtPtr parseFor() {
    auto s = std::make_unique<Stmt>(StmtKind::For, take().loc);
    ExprPtr target = parseTestList();
    checkTarget(*target, /*allowTuple=*/true, /*allowSubscript=*/false);
    s->targets.push_back(std::move(target));
    expect(Tok::KwIn, "'in'");
    s->value = parseTest();
    expect(Tok::Colon, "':'");
    s->body = parseSuite("for");
    return s;
  }

  StmtPtr parseWhile() {
    auto s = std::make_unique<Stmt>(StmtKind::While, take().loc);
    s->cond = parseTest();
    expect(Tok::Colon, "':'");
    s->body = parseSuite("while");
    return s;
  }

  // ---------------------------------------------------------- expressions
  ExprPtr make(ExprKind k, Loc loc) { return std::make_unique<Expr>(k, loc); }

  /// Records the height of a finished node; fails when the tree gets too deep.
  ExprPtr seal(ExprPtr e) {
    int h = 0;
    auto visit = [&](const ExprPtr &c) {
      if (c) {
        auto it = heights_.find(c.get());
        h = std::max(h, it == heights_.end() ? 1 : it->second);
      }
    };
    for (auto &c : e->operands)
      visit(c);
    for (auto &c : e->args)
      visit(c);
    for (auto &kw : e->keywords)
      visit(kw.value);
    if (++h > kMaxTreeHeight)
      fail(e->loc, "expression nested too deeply");
    heights_[e.get()] = h;
    return e;
  }

  ExprPtr binary(BinOp op, Loc loc, ExprPtr lhs, ExprPtr rhs) {
    auto e = make(ExprKind::Binary, loc);
    e->binOp = op;
    e->operands.push_back(std::move(lhs));
    e->operands.push_back(std::move(rhs));
    return seal(std::move(e));
  }

  static bool startsExpression(Tok k) {
    switch (k) {
    case Tok::Name: case Tok::Int: case Tok::Float: case Tok::String:
    case Tok::KwTrue: case Tok::KwFalse: case Tok::KwNone: case Tok::KwNot:
    case Tok::LParen: case Tok::Minus: case Tok::Plus: case Tok::Tilde:
      return true;
    default:
      return false;
    }
  }

  /// test (',' test)* [','] — a Tuple when there is a comma.
  ExprPtr parseTestList() {
    ExprPtr first = parseTest();
    if (!at(Tok::Comma))
      return first;
    auto t = make(ExprKind::Tuple, startLoc(*first));
    t->args.push_back(std::move(first));
    while (accept(Tok::Comma) && startsExpression(cur().kind))
      t->args.push_back(parseTest());
    return seal(std::move(t));
  }

  ExprPtr parseTest() {
    DepthGuard g(*this);
    ExprPtr v = parseOr();
    if (!at(Tok::KwIf))
      return v;
    auto e = make(ExprKind::IfExp, take().loc);
    ExprPtr cond = parseOr();
    expect(Tok::KwElse, "'else'");
    ExprPtr other = parseTest();
    e->operands.push_back(std::move(v));
    e->operands.push_back(std::move(cond));
    e->operands.push_back(std::move(other));
    return seal(std::move(e));
  }

  ExprPtr parseOr() {
    ExprPtr lhs = parseAnd();
    while (at(Tok::KwOr)) {
      Loc l = take().loc;
      lhs = binary(BinOp::Or, l, std::move(lhs), parseAnd());
    }
    return lhs;
  }

  ExprPtr parseAnd() {
    ExprPtr lhs = parseNot();
    while (at(Tok::KwAnd)) {
      Loc l = take().loc;
      lhs = binary(BinOp::And, l, std::move(lhs), parseNot());
    }
    return lhs;
  }

  ExprPtr unary(UnOp op, Loc loc, ExprPtr operand) {
    auto e = make(ExprKind::Unary, loc);
    e->unOp = op;
    e->operands.push_back(std::move(operand));
    return seal(std::move(e));
  }

  ExprPtr parseNot() {
    if (!at(Tok::KwNot))
      return parseComparison();
    DepthGuard g(*this);
    Loc l = take().loc;
    return unary(UnOp::Not, l, parseNot());
  }

  static bool compOp(Tok k, BinOp &op) {
    switch (k) {
    case Tok::EqEq: op = BinOp::Eq; return true;
    case Tok::NotEq: op = BinOp::Ne; return true;
    case Tok::Less: op = BinOp::Lt; return true;
    case Tok::LessEq: op = BinOp::Le; return true;
    case Tok::Greater: op = BinOp::Gt; return true;
    case Tok::GreaterEq: op = BinOp::Ge; return true;
    default: return false;
    }
  }

  ExprPtr parseComparison() {
    ExprPtr lhs = parseBinary(0);
    BinOp op;
    if (!compOp(cur().kind, op))
      return lhs;
    Loc l = take().loc;
    ExprPtr e = binary(op, l, std::move(lhs), parseBinary(0));
    if (compOp(cur().kind, op))
      fail(cur().loc, "chained comparisons are not supported; combine them with 'and'");
    return e;
  }

  // Levels: 0 '|', 1 '^', 2 '&', 3 '<<' '>>', 4 '+' '-', 5 '*' '/' '//' '%'.
  static bool binOpAt(int level, Tok k, BinOp &op) {
    switch (level) {
    case 0: if (k == Tok::Pipe) { op = BinOp::BitOr; return true; } return false;
    case 1: if (k == Tok::Caret) { op = BinOp::BitXor; return true; } return false;
    case 2: if (k == Tok::Amp) { op = BinOp::BitAnd; return true; } return false;
    case 3:
      if (k == Tok::Shl) { op = BinOp::Shl; return true; }
      if (k == Tok::Shr) { op = BinOp::Shr; return true; }
      return false;
    case 4:
      if (k == Tok::Plus) { op = BinOp::Add; return true; }
      if (k == Tok::Minus) { op = BinOp::Sub; return true; }
      return false;
    case 5:
      if (k == Tok::Star) { op = BinOp::Mul; return true; }
      if (k == Tok::Slash) { op = BinOp::Div; return true; }
      if (k == Tok::DoubleSlash) { op = BinOp::FloorDiv; return true; }
      if (k == Tok::Percent) { op = BinOp::Mod; return true; }
      return false;
    default: return false;
    }
  }

  ExprPtr parseBinary(int level) {
    if (level > 5)
      return parseUnary();
    ExprPtr lhs = parseBinary(level + 1);
    BinOp op;
    while (binOpAt(level, cur().kind, op)) {
      Loc l = take().loc;
      lhs = binary(op, l, std::move(lhs), parseBinary(level + 1));
    }
    return lhs;
  }

  ExprPtr parseUnary() {
    UnOp op;
    switch (cur().kind) {
    case Tok::Minus: op = UnOp::Neg; break;
    case Tok::Plus: op = UnOp::Pos; break;
    case Tok::Tilde: op = UnOp::Invert; break;
    default: return parsePower();
    }
    DepthGuard g(*this);
    Loc l = take().loc;
    return unary(op, l, parseUnary());
  }

  ExprPtr parsePower() {
    ExprPtr base = parsePostfix();
    if (!at(Tok::DoubleStar))
      return base;
    DepthGuard g(*this);
    Loc l = take().loc;
    return binary(BinOp::Pow, l, std::move(base), parseUnary());
  }

  ExprPtr parsePostfix() {
    ExprPtr e = parseAtom();
    for (;;) {
      if (at(Tok::LParen)) {
        e = parseCall(std::move(e));
      } else if (at(Tok::LBracket)) {
        e = parseSubscript(std::move(e));
      } else if (at(Tok::Dot)) {
        auto a = make(ExprKind::Attribute, take().loc);
        a->str = expect(Tok::Name, "an attribute name").text;
        a->operands.push_back(std::move(e));
        e = seal(std::move(a));
      } else {
        return e;
      }
    }
  }

  ExprPtr parseCall(ExprPtr callee) {
    auto c = make(ExprKind::Call, startLoc(*callee));
    c->operands.push_back(std::move(callee));
    ++p_; // '('
    while (!accept(Tok::RParen)) {
      if (at(Tok::Name) && peekKind(1) == Tok::Assign) {
        Keyword kw;
        const Token &n = take();
        kw.loc = n.loc;
        kw.name = n.text;
        for (auto &other : c->keywords)
          if (other.name == kw.name)
            fail(n.loc, "duplicate keyword argument '" + kw.name + "'");
        ++p_; // '='
        kw.value = parseTest();
        c->keywords.push_back(std::move(kw));
      } else {
        if (!c->keywords.empty() && startsExpression(cur().kind))
          fail(cur().loc, "positional argument follows keyword argument");
        c->args.push_back(parseTest());
      }
      if (accept(Tok::Comma))
        continue;
      expect(Tok::RParen, "',' or ')'");
      break;
    }
    return seal(std::move(c));
  }

  ExprPtr parseSliceRest(ExprPtr lo) {
    auto s = make(ExprKind::Slice, take().loc); // ':'
    s->operands.push_back(std::move(lo));
    if (at(Tok::Comma) || at(Tok::RBracket) || at(Tok::Colon))
      s->operands.push_back(nullptr);
    else
      s->operands.push_back(parseTest());
    if (at(Tok::Colon))
      fail(cur().loc, "slice steps are not supported");
    return seal(std::move(s));
  }

  ExprPtr parseSubscript(ExprPtr base) {
    auto s = make(ExprKind::Subscript, take().loc);
    s->operands.push_back(std::move(base));
    do {
      if (at(Tok::RBracket) && !s->args.empty())
        break; // trailing comma
      if (at(Tok::Colon)) {
        s->args.push_back(parseSliceRest(nullptr));
        continue;
      }
      ExprPtr idx = parseTest();
      if (at(Tok::Colon))
        idx = parseSliceRest(std::move(idx));
      s->args.push_back(std::move(idx));
    } while (accept(Tok::Comma));
    expect(Tok::RBracket, "',' or ']'");
    return seal(std::move(s));
  }

  ExprPtr parseAtom() {
    const Token &t = cur();
    ExprPtr e;
    switch (t.kind) {
    case Tok::Name:
      e = make(ExprKind::Name, t.loc);
      e->str = t.text;
      ++p_;
      break;
    case Tok::Int:
      e = make(ExprKind::IntLit, t.loc);
      e->intValue = t.intValue;
      ++p_;
      break;
    case Tok::Float:
      e = make(ExprKind::FloatLit, t.loc);
      e->floatValue = t.floatValue;
      ++p_;
      break;
    case Tok::String:
      // Adjacent string literals concatenate: "a" "b" == "ab".
      e = make(ExprKind::StringLit, t.loc);
      while (at(Tok::String)) {
        const Token &piece = take();
        e->str += piece.value;
        if (!e->strLocs.empty())
          e->strLocs.pop_back(); // the previous piece's closing quote
        e->strLocs.insert(e->strLocs.end(), piece.valueLocs.begin(), piece.valueLocs.end());
      }
      break;
    case Tok::KwTrue:
    case Tok::KwFalse:
      e = make(ExprKind::BoolLit, t.loc);
      e->boolValue = t.kind == Tok::KwTrue;
      ++p_;
      break;
    case Tok::KwNone:
      e = make(ExprKind::NoneLit, t.loc);
      ++p_;
      break;
    case Tok::LParen: {
      Loc l = take().loc;
      if (accept(Tok::RParen))
        return seal(make(ExprKind::Tuple, l));
      ExprPtr first = parseTest();
      if (accept(Tok::RParen))
        return first; // parenthesized expression
      if (!at(Tok::Comma))
        failExpected("',' or ')'");
      auto tup = make(ExprKind::Tuple, l);
      tup->args.push_back(std::move(first));
      while (accept(Tok::Comma) && !at(Tok::RParen))
        tup->args.push_back(parseTest());
      expect(Tok::RParen, "',' or ')'");
      return seal(std::move(tup));
    }
    case Tok::LBracket: {
      auto list = make(ExprKind::List, take().loc);
      while (!accept(Tok::RBracket)) {
        list->args.push_back(parseTest());
        if (accept(Tok::Comma))
          continue;
        expect(Tok::RBracket, "',' or ']'");
        break;
      }
      return seal(std::move(list));
    }
    default:
      failExpected("an expression");
    }
    return seal(std::move(e));
  }
};

/// Runs `parse` on a Parser of `file`, turning what it throws into one diagnostic.
template <typename Result, typename Parse>
Result parseFile(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags, Parse parse) {
  try {
    Parser parser(tokenize(sm, file), file);
    return parse(parser);
  } catch (const ParseError &e) {
    diags.error(e.loc, e.msg);
  } catch (const std::bad_alloc &) {
    diags.error(Loc{file, 1, 1}, "out of memory while parsing");
  } catch (const std::exception &e) {
    diags.error(Loc{file, 1, 1}, std::string("internal error while parsing: ") + e.what());
  } catch (...) {
    diags.error(Loc{file, 1, 1}, "internal error while parsing");
  }
  return nullptr;
}

} // namespace

std::unique_ptr<Module> parseModule(const SourceManager &sm, uint32_t file,
                                    DiagnosticEngine &diags) {
  return parseFile<std::unique_ptr<Module>>(sm, file, diags,
                                            [](Parser &p) { return p.parseModule(); });
}

ExprPtr parseExpression(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags) {
  return parseFile<ExprPtr>(sm, file, diags, [](Parser &p) { return p.parseWholeExpression(); });
}

} // namespace tessera::fe
