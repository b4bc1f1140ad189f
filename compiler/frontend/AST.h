// Syntax tree of a `.tile` file, as the parser builds it. Nothing here knows
// about types or MLIR; semantic analysis happens in IRGen.
#ifndef TESSERA_FRONTEND_AST_H
#define TESSERA_FRONTEND_AST_H

#include "Diagnostics.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tessera::fe {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

enum class BinOp {
  Add, Sub, Mul, Div, FloorDiv, Mod, Pow, // arithmetic
  BitAnd, BitOr, BitXor, Shl, Shr,        // bitwise (also logical on i1 tiles)
  And, Or,                                // `and` / `or` (scalars and constexprs)
  Eq, Ne, Lt, Le, Gt, Ge                  // comparisons (never chained)
};
enum class UnOp { Neg, Pos, Not, Invert }; // -x, +x, not x, ~x

const char *spelling(BinOp op); // "+", "//", "and", "<=", ...
const char *spelling(UnOp op);

enum class ExprKind {
  IntLit, FloatLit, BoolLit, StringLit, NoneLit,
  Name,      // x
  Attribute, // base.name            (x.to, x.shape, tile.dtype)
  Call,      // callee(args, kw=...)
  Subscript, // base[i0, i1, ...]
  Slice,     // `:` or `lo:hi` inside a subscript (lo/hi may be null)
  Binary, Unary,
  Tuple,     // (a, b) or a, b
  IfExp,     // a if cond else b
  List,      // [a, b]: only in decorator arguments (@autotune(configs=[...]))
};

struct Keyword {
  Loc loc;          // location of the keyword name
  std::string name;
  ExprPtr value;
};

struct Expr {
  ExprKind kind;
  // Where the node is (1-based line and column; columns count bytes):
  //   Name, literals, Unary, Call:  first character of the expression (Call:
  //                                 first character of the callee)
  //   Binary (incl. and/or, comparisons): the operator token
  //   Attribute: the '.'     Subscript: the '['     Slice: the ':'
  //   IfExp: the `if` keyword     List: the '['
  //   Tuple: the '(' when parenthesized; for a bare `a, b` the first character
  //          of its first element
  // Enclosing parentheses are not part of a node: in `(a + b)` the Binary is
  // at '+'. startLoc(e) gives the first character of any expression.
  Loc loc;
  // Literals.
  int64_t intValue = 0;   // IntLit (always >= 0; negation is a Unary)
  double floatValue = 0;  // FloatLit
  bool boolValue = false; // BoolLit
  std::string str;        // StringLit contents, Name identifier, Attribute member name
  /// StringLit: where each byte of `str` is in the source, then the closing
  /// quote of the last piece (Token::valueLocs, across adjacent literals).
  std::vector<Loc> strLocs;
  // Operators.
  BinOp binOp = BinOp::Add;
  UnOp unOp = UnOp::Neg;
  // Children. Meaning by kind:
  //   Attribute: operands[0] = base
  //   Call:      operands[0] = callee, args = positional arguments, keywords
  //   Subscript: operands[0] = base, args = indices (Slice, NoneLit or any expression)
  //   Slice:     operands[0] = lo or null, operands[1] = hi or null
  //   Binary:    operands[0] lhs, operands[1] rhs
  //   Unary:     operands[0]
  //   Tuple:     args
  //   List:      args
  //   IfExp:     operands[0] = value if true, operands[1] = condition, operands[2] = else
  std::vector<ExprPtr> operands;
  std::vector<ExprPtr> args;
  std::vector<Keyword> keywords;

  Expr(ExprKind k, Loc l) : kind(k), loc(l) {}
};

/// Parameter annotation: `i32`, `*f32`, `**i8`, `constexpr`.
struct TypeAnnot {
  Loc loc;
  int pointerDepth = 0; // one per '*': `**i8` is 2 (the lexer's `**` token counts twice)
  std::string name; // scalar type name or "constexpr" (any identifier, or "None")
};

struct Param {
  Loc loc;
  std::string name;
  bool hasAnnot = false;
  TypeAnnot annot;
  ExprPtr defaultValue; // may be null
};

enum class StmtKind {
  Expr,      // value
  Assign,    // targets[0] = value        (targets[i] is a Name, a Tuple of Names, or a Subscript)
  AugAssign, // targets[0] op= value        (a Name or a Subscript; augOp is any arithmetic or
             //                            bitwise BinOp, Pow for `**=`)
  If,        // if cond: body else: orelse  (`elif` nests an If in orelse)
  For,       // for targets[0] in iter: body  (targets[0] is a Name or a Tuple of Names)
  While,     // while cond: body
  Return,    // return value (value may be null)
  Pass, Break, Continue,
};

struct Stmt {
  StmtKind kind;
  Loc loc; // the statement's first token
  std::vector<ExprPtr> targets;
  ExprPtr value; // Expr/Assign/AugAssign/Return value; For iterable
  ExprPtr cond;  // If/While condition
  BinOp augOp = BinOp::Add;
  Block body;
  Block orelse;

  Stmt(StmtKind k, Loc l) : kind(k), loc(l) {}
};

struct Decorator {
  Loc loc;          // the '@'
  std::string name; // "kernel", "func" or "autotune" (the parser accepts any identifier)
  /// `@name(...)`: a Call whose callee is the name and whose arguments are the
  /// decorator's; null for a bare `@name`.
  ExprPtr call;
};

struct FunctionDef {
  Loc loc; // the `def` keyword
  Loc nameLoc;
  std::string name;
  std::vector<Decorator> decorators;
  std::vector<Param> params;
  bool hasReturnAnnot = false;
  TypeAnnot returnAnnot;
  Block body;
  uint32_t file = 0;
};

struct ImportName {
  Loc loc;
  std::string name;
  std::string alias; // empty when no `as`
};

/// from "path" import a, b as c
struct ImportDecl {
  Loc loc;
  Loc pathLoc;
  std::string path;
  std::vector<ImportName> names;
};

/// Top-level `NAME = constant-expression`.
struct GlobalConst {
  Loc loc;
  std::string name;
  ExprPtr value;
};

struct Module {
  uint32_t file = 0;
  std::vector<ImportDecl> imports;
  std::vector<std::unique_ptr<FunctionDef>> functions;
  std::vector<GlobalConst> globals;
};

/// The first character of `e` (ignoring enclosing parentheses): for Binary,
/// Attribute, Subscript, IfExp and Slice-with-lo that is where the leftmost
/// operand starts; for every other kind it is `e.loc`.
Loc startLoc(const Expr &e);

/// Whether `block` holds a `kind` statement (Break or Continue) that leaves
/// the loop around the block: one not nested in an inner `for` or `while`.
bool hasLoopExit(const Block &block, StmtKind kind);
/// Whether `s` is, or holds, a break or continue of the loop around it.
bool mayExitLoop(const Stmt &s);

/// Debug renderings as S-expressions, e.g. `(+ a (* b 2))`,
/// `(call f x (kw axis 0))`, `(sub x (: _ _) None)`; a module renders one
/// declaration or statement per line with nested blocks indented.
std::string dump(const Expr &e);
std::string dump(const Module &m);

/// Parses one file. On a syntax error, reports it to `diags` and returns null.
/// Exactly one error is reported (the first in source order); nothing throws.
/// Purely syntactic rules are checked here (assignment targets, argument and
/// parameter order, duplicate parameters / keyword arguments, no chained
/// comparisons, nesting limits); names, types, decorators, duplicate
/// definitions and import paths are left to later stages.
std::unique_ptr<Module> parseModule(const SourceManager &sm, uint32_t file,
                                    DiagnosticEngine &diags);

/// Parses a file that holds one expression (`test` of the grammar) and
/// nothing else; surrounding spaces are allowed. Reports one error like
/// parseModule and returns null on a syntax error. Used for expressions
/// written inside string literals (@autotune's prune=).
ExprPtr parseExpression(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags);

} // namespace tessera::fe

#endif
