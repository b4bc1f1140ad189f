#include "Lexer.h"

#include <charconv>
#include <cstdio>
#include <limits>
#include <system_error>
#include <utility>

namespace tessera::fe {

namespace {

struct LexError {
  Loc loc;
  std::string msg;
};

bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

int digitValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return 99;
}

/// `'$'` for printable ASCII, `'\xNN'` for anything else.
std::string quoteChar(unsigned char c) {
  if (c >= 0x21 && c <= 0x7e)
    return std::string("'") + char(c) + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "'\\x%02x'", unsigned(c));
  return buf;
}

struct Keyword {
  const char *text;
  Tok kind;
};
const Keyword kKeywords[] = {
    {"def", Tok::KwDef},       {"from", Tok::KwFrom},     {"import", Tok::KwImport},
    {"as", Tok::KwAs},         {"if", Tok::KwIf},         {"elif", Tok::KwElif},
    {"else", Tok::KwElse},     {"for", Tok::KwFor},       {"in", Tok::KwIn},
    {"while", Tok::KwWhile},   {"return", Tok::KwReturn}, {"pass", Tok::KwPass},
    {"break", Tok::KwBreak},   {"continue", Tok::KwContinue}, {"and", Tok::KwAnd},
    {"or", Tok::KwOr},         {"not", Tok::KwNot},       {"True", Tok::KwTrue},
    {"False", Tok::KwFalse},   {"None", Tok::KwNone},
};

struct Operator {
  const char *text;
  Tok kind;
};
// Longest spellings first so that the first match is the longest one.
const Operator kOperators[] = {
    {"//=", Tok::DoubleSlashEq}, {"<<=", Tok::ShlEq}, {">>=", Tok::ShrEq},
    {"**=", Tok::DoubleStarEq},
    {"//", Tok::DoubleSlash}, {"**", Tok::DoubleStar}, {"<<", Tok::Shl}, {">>", Tok::Shr},
    {"==", Tok::EqEq},        {"!=", Tok::NotEq},      {"<=", Tok::LessEq},
    {">=", Tok::GreaterEq},   {"+=", Tok::PlusEq},     {"-=", Tok::MinusEq},
    {"*=", Tok::StarEq},      {"/=", Tok::SlashEq},    {"%=", Tok::PercentEq},
    {"&=", Tok::AmpEq},       {"|=", Tok::PipeEq},     {"^=", Tok::CaretEq},
    {"->", Tok::Arrow},
    {"+", Tok::Plus},   {"-", Tok::Minus},  {"*", Tok::Star},     {"/", Tok::Slash},
    {"%", Tok::Percent}, {"&", Tok::Amp},   {"|", Tok::Pipe},     {"^", Tok::Caret},
    {"~", Tok::Tilde},  {"<", Tok::Less},   {">", Tok::Greater},  {"=", Tok::Assign},
    {"(", Tok::LParen}, {")", Tok::RParen}, {"[", Tok::LBracket}, {"]", Tok::RBracket},
    {",", Tok::Comma},  {":", Tok::Colon},  {".", Tok::Dot},      {"@", Tok::At},
};

class LexerImpl {
public:
  LexerImpl(const std::string &src, uint32_t file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    try {
      // A UTF-8 byte order mark is skipped (columns still count its bytes).
      if (src_.compare(0, 3, "\xEF\xBB\xBF") == 0)
        pos_ = 3;
      loop();
    } catch (const LexError &e) {
      Token t;
      t.kind = Tok::Error;
      t.loc = e.loc;
      t.value = e.msg;
      toks_.push_back(std::move(t));
    }
    return std::move(toks_);
  }

private:
  const std::string &src_;
  uint32_t file_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t lineStart_ = 0;
  std::vector<Token> toks_;
  std::vector<std::pair<char, Loc>> brackets_; // open brackets, innermost last
  std::vector<uint32_t> indents_{0};
  Loc lastEnd_;           // just past the last real token
  int lineTokens_ = 0;    // real tokens on the current logical line
  bool atLineStart_ = true;

  char peek(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }
  bool atEnd(size_t k = 0) const { return pos_ + k >= src_.size(); }
  Loc here() const { return Loc{file_, line_, uint32_t(pos_ - lineStart_ + 1)}; }
  Loc locAt(size_t offset) const { return Loc{file_, line_, uint32_t(offset - lineStart_ + 1)}; }

  [[noreturn]] void fail(Loc loc, std::string msg) { throw LexError{loc, std::move(msg)}; }

  void push(Tok kind, Loc loc, std::string text = {}) {
    Token t;
    t.kind = kind;
    t.loc = loc;
    t.text = std::move(text);
    toks_.push_back(std::move(t));
  }
  // A real token was just pushed and consumed up to pos_.
  void finishReal() {
    ++lineTokens_;
    lastEnd_ = here();
  }
  Loc endLoc() const { return lastEnd_.valid() ? lastEnd_ : Loc{file_, 1, 1}; }

  void newPhysicalLine() {
    ++line_;
    lineStart_ = pos_;
  }

  void loop() {
    for (;;) {
      if (atLineStart_ && brackets_.empty()) {
        if (!startLine())
          break;
        continue;
      }
      if (atEnd())
        break;
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!atEnd() && peek() != '\n')
          ++pos_;
      } else if (c == '\n') {
        if (brackets_.empty()) {
          if (lineTokens_ > 0)
            push(Tok::Newline, endLoc());
          lineTokens_ = 0;
          atLineStart_ = true;
        }
        ++pos_;
        newPhysicalLine();
      } else if (c == '\\') {
        lineContinuation();
      } else {
        lexToken();
      }
    }
    finish();
  }

  void lineContinuation() {
    Loc at = here();
    if (peek(1) == '\n') {
      pos_ += 2;
      newPhysicalLine();
    } else if (peek(1) == '\r' && peek(2) == '\n') {
      pos_ += 3;
      newPhysicalLine();
    } else if (atEnd(1)) {
      fail(at, "unexpected end of file after line continuation character");
    } else {
      fail(locAt(pos_ + 1), "unexpected character after line continuation character");
    }
  }

  /// At the start of a physical line outside brackets: skips blank and comment
  /// lines and emits INDENT / DEDENT. Returns false at end of file.
  bool startLine() {
    for (;;) {
      size_t p = pos_;
      while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\r' ||
                                 src_[p] == '\f'))
        ++p;
      if (p >= src_.size()) {
        pos_ = p;
        return false;
      }
      if (src_[p] == '#' || src_[p] == '\n') {
        // Blank or comment-only line.
        while (p < src_.size() && src_[p] != '\n')
          ++p;
        pos_ = p;
        if (p >= src_.size())
          return false;
        ++pos_;
        newPhysicalLine();
        continue;
      }
      // A line with content: its leading whitespace must be spaces only.
      for (size_t q = pos_; q < p; ++q) {
        if (src_[q] == '\t')
          fail(locAt(q), "tabs are not allowed in indentation; use spaces");
        if (src_[q] != ' ')
          fail(locAt(q), "unexpected character " + quoteChar((unsigned char)src_[q]));
      }
      uint32_t width = uint32_t(p - pos_);
      pos_ = p;
      Loc loc = here();
      if (width > indents_.back()) {
        indents_.push_back(width);
        push(Tok::Indent, loc);
      } else if (width < indents_.back()) {
        bool found = false;
        for (uint32_t w : indents_)
          found |= (w == width);
        if (!found)
          fail(loc, "unindent does not match any outer indentation level");
        while (indents_.back() > width) {
          indents_.pop_back();
          push(Tok::Dedent, loc);
        }
      }
      atLineStart_ = false;
      return true;
    }
  }

  void finish() {
    if (!brackets_.empty()) {
      auto [ch, loc] = brackets_.back();
      fail(loc, std::string("'") + ch + "' was never closed");
    }
    if (lineTokens_ > 0)
      push(Tok::Newline, endLoc());
    lineTokens_ = 0;
    while (indents_.size() > 1) {
      indents_.pop_back();
      push(Tok::Dedent, endLoc());
    }
    push(Tok::EndOfFile, endLoc());
  }

  void lexToken() {
    char c = peek();
    if (isIdentStart(c))
      return lexIdentifier();
    if (isDigit(c) || (c == '.' && isDigit(peek(1))))
      return lexNumber();
    if (c == '"' || c == '\'')
      return lexString();
    Loc loc = here();
    for (const Operator &op : kOperators) {
      if (op.text[0] != c)
        continue;
      size_t n = std::char_traits<char>::length(op.text);
      if (src_.compare(pos_, n, op.text) != 0)
        continue;
      if (op.kind == Tok::LParen || op.kind == Tok::LBracket) {
        brackets_.emplace_back(c, loc);
      } else if (op.kind == Tok::RParen || op.kind == Tok::RBracket) {
        if (brackets_.empty())
          fail(loc, std::string("unmatched '") + c + "'");
        char open = brackets_.back().first;
        if ((open == '(') != (c == ')'))
          fail(loc, std::string("closing '") + c + "' does not match opening '" + open + "'");
        brackets_.pop_back();
      }
      pos_ += n;
      push(op.kind, loc, op.text);
      finishReal();
      return;
    }
    fail(loc, "unexpected character " + quoteChar((unsigned char)c));
  }

  void lexIdentifier() {
    Loc loc = here();
    size_t b = pos_;
    while (!atEnd() && isIdentChar(peek()))
      ++pos_;
    std::string text = src_.substr(b, pos_ - b);
    Tok kind = Tok::Name;
    for (const Keyword &kw : kKeywords)
      if (text == kw.text)
        kind = kw.kind;
    push(kind, loc, std::move(text));
    finishReal();
  }

  // Consumes digits of `base` separated by single underscores ("1_000");
  // returns how many digits were consumed.
  size_t digits(int base) {
    size_t n = 0;
    for (;;) {
      char c = peek();
      if (digitValue(c) < base) {
        ++pos_;
        ++n;
      } else if (c == '_' && n > 0 && digitValue(peek(1)) < base) {
        ++pos_;
      } else {
        return n;
      }
    }
  }

  [[noreturn]] void invalidNumber(Loc loc, size_t b) {
    while (!atEnd() && (isIdentChar(peek()) || peek() == '.'))
      ++pos_;
    fail(loc, "invalid number literal '" + src_.substr(b, pos_ - b) + "'");
  }

  void lexNumber() {
    Loc loc = here();
    size_t b = pos_;
    int base = 10;
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X'))
      base = 16;
    else if (peek() == '0' && (peek(1) == 'b' || peek(1) == 'B'))
      base = 2;
    bool isFloat = false;
    if (base != 10) {
      pos_ += 2;
      if (peek() == '_') // 0x_ff
        ++pos_;
      if (digits(base) == 0)
        invalidNumber(loc, b);
    } else {
      digits(10);
      if (peek() == '.') {
        isFloat = true;
        ++pos_;
        digits(10);
      }
      if (peek() == 'e' || peek() == 'E') {
        size_t k = (peek(1) == '+' || peek(1) == '-') ? 2 : 1;
        if (isDigit(peek(k))) {
          isFloat = true;
          pos_ += k;
          digits(10);
        }
      }
    }
    if (!atEnd() && isIdentChar(peek()))
      invalidNumber(loc, b);
    std::string text = src_.substr(b, pos_ - b);
    std::string clean;
    for (char ch : text)
      if (ch != '_')
        clean += ch;
    Token t;
    t.loc = loc;
    t.text = text;
    if (isFloat) {
      t.kind = Tok::Float;
      t.floatValue = parseFloat(clean, loc);
    } else {
      t.kind = Tok::Int;
      const uint64_t max = uint64_t(std::numeric_limits<int64_t>::max());
      uint64_t v = 0;
      for (size_t i = (base == 10 ? 0 : 2); i < clean.size(); ++i) {
        uint64_t d = uint64_t(digitValue(clean[i]));
        if (v > (max - d) / uint64_t(base))
          fail(loc, "integer literal is too large");
        v = v * uint64_t(base) + d;
      }
      t.intValue = int64_t(v);
    }
    toks_.push_back(std::move(t));
    finishReal();
  }

  // `text` is a well-formed decimal float without underscores.
  double parseFloat(const std::string &text, Loc loc) {
    double v = 0;
    auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (res.ec == std::errc())
      return v;
    // Out of range: an overflow when the value's decimal exponent is positive,
    // else an underflow (which rounds to zero).
    size_t e = text.find_first_of("eE");
    std::string mant = text.substr(0, e);
    size_t point = mant.find('.');
    if (point == std::string::npos)
      point = mant.size();
    size_t first = mant.find_first_of("123456789");
    if (first == std::string::npos)
      return 0.0;
    long long exp10 = first < point ? (long long)(point - first) : -(long long)(first - point - 1);
    long long explicitExp = 0;
    if (e != std::string::npos) {
      for (size_t j = e + 1; j < text.size(); ++j)
        if (isDigit(text[j]) && explicitExp < 1000000)
          explicitExp = explicitExp * 10 + (text[j] - '0');
      if (text[e + 1] == '-')
        explicitExp = -explicitExp;
    }
    if (exp10 + explicitExp > 0)
      fail(loc, "float literal is too large");
    return 0.0;
  }

  void lexString() {
    Loc loc = here();
    size_t b = pos_;
    char quote = peek();
    ++pos_;
    std::string value;
    std::vector<Loc> valueLocs;
    for (;;) {
      if (atEnd() || peek() == '\n')
        fail(loc, "unterminated string literal");
      char c = peek();
      valueLocs.push_back(here());
      if (c == quote) {
        ++pos_;
        break;
      }
      if (c == '\\') {
        if (atEnd(1) || peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n'))
          fail(loc, "unterminated string literal");
        char e = peek(1);
        switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '"': value += '"'; break;
        case '\'': value += '\''; break;
        default: {
          std::string q = quoteChar((unsigned char)e);
          fail(here(), "invalid escape sequence '\\" + q.substr(1));
        }
        }
        pos_ += 2;
        continue;
      }
      value += c;
      ++pos_;
    }
    Token t;
    t.kind = Tok::String;
    t.loc = loc;
    t.text = src_.substr(b, pos_ - b);
    t.value = std::move(value);
    t.valueLocs = std::move(valueLocs);
    toks_.push_back(std::move(t));
    finishReal();
  }
};

} // namespace

std::vector<Token> tokenize(const SourceManager &sm, uint32_t file) {
  if (file >= sm.numFiles()) {
    Token t;
    t.kind = Tok::Error;
    t.loc = Loc{file, 0, 0};
    t.value = "no such source file";
    return {t};
  }
  return LexerImpl(sm.file(file).text, file).run();
}

const char *tokKindName(Tok kind) {
  switch (kind) {
  case Tok::EndOfFile: return "end of file";
  case Tok::Newline: return "end of line";
  case Tok::Indent: return "indentation";
  case Tok::Dedent: return "dedent";
  case Tok::Error: return "invalid token";
  case Tok::Name: return "identifier";
  case Tok::Int: return "integer literal";
  case Tok::Float: return "float literal";
  case Tok::String: return "string literal";
  default: break;
  }
  for (const Keyword &kw : kKeywords)
    if (kw.kind == kind)
      return kw.text;
  for (const Operator &op : kOperators)
    if (op.kind == kind)
      return op.text;
  return "token";
}

std::string describeToken(const Token &tok) {
  switch (tok.kind) {
  case Tok::EndOfFile:
  case Tok::Newline:
  case Tok::Indent:
  case Tok::Dedent:
  case Tok::Error:
    return tokKindName(tok.kind);
  case Tok::String:
    return "a string literal";
  default:
    break;
  }
  std::string text = tok.text;
  if (text.size() > 40)
    text = text.substr(0, 37) + "...";
  return "'" + text + "'";
}

} // namespace tessera::fe
