// Tokenizer for `.tile` files.
//
// The lexer turns a whole file into a token vector up front. Layout follows
// Python: a NEWLINE ends every logical line that holds tokens, INDENT / DEDENT
// bracket indented blocks, line breaks inside (), [] and after a trailing
// backslash are ignored, blank and comment-only lines produce nothing.
//
// The lexer never throws. When it meets a lexical error it appends one
// Tok::Error token (loc = where the error is, `value` = the message) and stops;
// the parser reports that error when (and only when) it reaches the token, so
// the first error in source order is the one reported.
//
// Locations are 1-based; columns count bytes. NEWLINE tokens sit just past the
// last token of their line; INDENT / DEDENT tokens sit on the first token of
// the line that opens / closes the block. The DEDENTs and the EndOfFile at the
// end of the file sit just past the last token of the file (1:1 when empty).
#ifndef TESSERA_FRONTEND_LEXER_H
#define TESSERA_FRONTEND_LEXER_H

#include "Diagnostics.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::fe {

enum class Tok : uint8_t {
  EndOfFile, Newline, Indent, Dedent, Error,
  Name, Int, Float, String,
  // Keywords.
  KwDef, KwFrom, KwImport, KwAs, KwIf, KwElif, KwElse, KwFor, KwIn, KwWhile,
  KwReturn, KwPass, KwBreak, KwContinue, KwAnd, KwOr, KwNot, KwTrue, KwFalse, KwNone,
  // Operators.
  Plus, Minus, Star, Slash, DoubleSlash, Percent, DoubleStar,
  Amp, Pipe, Caret, Tilde, Shl, Shr,
  EqEq, NotEq, Less, LessEq, Greater, GreaterEq,
  Assign, PlusEq, MinusEq, StarEq, SlashEq, DoubleSlashEq, PercentEq, DoubleStarEq,
  AmpEq, PipeEq, CaretEq, ShlEq, ShrEq,
  // Punctuation.
  LParen, RParen, LBracket, RBracket, Comma, Colon, Dot, At, Arrow,
};

struct Token {
  Tok kind = Tok::EndOfFile;
  Loc loc;
  std::string text;  // source spelling (empty for NEWLINE/INDENT/DEDENT/EOF/Error)
  std::string value; // String: decoded contents; Error: the message
  /// String: where each byte of `value` is in the source (an escape's byte is
  /// at its backslash), then the closing quote; lets a caller that parses the
  /// contents (the prune= of @autotune) point into the literal.
  std::vector<Loc> valueLocs;
  int64_t intValue = 0;     // Int (always >= 0)
  double floatValue = 0;    // Float
};

/// Tokenizes file `file` of `sm`. The result always ends with exactly one
/// EndOfFile or Error token.
std::vector<Token> tokenize(const SourceManager &sm, uint32_t file);

/// A short, human-readable name of a token kind: "'+'", "'def'", "identifier",
/// "end of line", ...
const char *tokKindName(Tok kind);

/// How a token is described in "expected X, found Y" messages: "'foo'", "')'",
/// "'12'", "a string literal", "end of line", "end of file", ...
std::string describeToken(const Token &tok);

} // namespace tessera::fe

#endif
