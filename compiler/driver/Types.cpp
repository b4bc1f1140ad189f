// Implementations of the helpers declared in tessera/Types.h.
#include "tessera/Types.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tessera {

const char *scalarTypeName(ScalarType t) {
  switch (t) {
  case ScalarType::i1: return "i1";
  case ScalarType::i8: return "i8";
  case ScalarType::u8: return "u8";
  case ScalarType::u16: return "u16";
  case ScalarType::u32: return "u32";
  case ScalarType::u64: return "u64";
  case ScalarType::i16: return "i16";
  case ScalarType::i32: return "i32";
  case ScalarType::i64: return "i64";
  case ScalarType::f16: return "f16";
  case ScalarType::bf16: return "bf16";
  case ScalarType::f32: return "f32";
  case ScalarType::f64: return "f64";
  case ScalarType::f8e4m3: return "f8e4m3";
  case ScalarType::f8e5m2: return "f8e5m2";
  }
  return "<invalid>";
}

std::optional<ScalarType> parseScalarType(const std::string &name) {
  static const ScalarType all[] = {ScalarType::i1,  ScalarType::i8,  ScalarType::u8,
                                   ScalarType::i16, ScalarType::i32, ScalarType::i64,
                                   ScalarType::f16, ScalarType::bf16, ScalarType::f32,
                                   ScalarType::f64, ScalarType::u16, ScalarType::u32,
                                   ScalarType::u64, ScalarType::f8e4m3, ScalarType::f8e5m2};
  for (ScalarType t : all)
    if (name == scalarTypeName(t))
      return t;
  return std::nullopt;
}

unsigned scalarTypeBits(ScalarType t) {
  switch (t) {
  case ScalarType::i1: return 1;
  case ScalarType::i8:
  case ScalarType::u8:
  case ScalarType::f8e4m3:
  case ScalarType::f8e5m2: return 8;
  case ScalarType::i16:
  case ScalarType::u16:
  case ScalarType::f16:
  case ScalarType::bf16: return 16;
  case ScalarType::i32:
  case ScalarType::u32:
  case ScalarType::f32: return 32;
  case ScalarType::i64:
  case ScalarType::u64:
  case ScalarType::f64: return 64;
  }
  return 0;
}

bool isFloat(ScalarType t) {
  return t == ScalarType::f16 || t == ScalarType::bf16 || t == ScalarType::f32 ||
         t == ScalarType::f64 || isFloat8(t);
}

bool isFloat8(ScalarType t) { return t == ScalarType::f8e4m3 || t == ScalarType::f8e5m2; }

bool isUnsigned(ScalarType t) {
  return t == ScalarType::u8 || t == ScalarType::u16 || t == ScalarType::u32 ||
         t == ScalarType::u64 || t == ScalarType::i1;
}

std::string DType::str() const {
  std::string s(pointerDepth > 0 ? static_cast<size_t>(pointerDepth) : 0, '*');
  s += scalarTypeName(scalar);
  return s;
}

std::optional<DType> parseDType(const std::string &text) {
  size_t stars = 0;
  while (stars < text.size() && text[stars] == '*')
    ++stars;
  auto scalar = parseScalarType(text.substr(stars));
  if (!scalar)
    return std::nullopt;
  return DType{*scalar, static_cast<int>(stars)};
}

namespace {
// Shortest decimal text that reads back to exactly `d`, always recognisable as
// a float ("1.0", not "1").
std::string doubleToString(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}
} // namespace

char constexprKind(const ConstexprValue &v) {
  switch (v.index()) {
  case 0: return 'i'; // int64_t
  case 1: return 'f'; // double
  case 2: return 'b'; // bool
  case 3: return 't'; // DType
  default: return 's'; // std::string
  }
}

std::string constexprToString(const ConstexprValue &v) {
  if (auto *i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (auto *d = std::get_if<double>(&v))
    return doubleToString(*d);
  if (auto *b = std::get_if<bool>(&v))
    return *b ? "true" : "false";
  if (auto *t = std::get_if<DType>(&v))
    return t->str();
  std::string q = "\"";
  for (char c : std::get<std::string>(v)) {
    if (c == '"' || c == '\\')
      q += '\\';
    q += c;
  }
  return q + "\"";
}

namespace {
// The contents of a string written in quotes ("..." or '...', with
// backslash escapes), or nullopt.
std::optional<std::string> unquote(const std::string &text) {
  if (text.size() < 2 || (text[0] != '"' && text[0] != '\'') || text.back() != text[0])
    return std::nullopt;
  std::string s;
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == '\\') {
      if (i + 2 == text.size())
        return std::nullopt; // the closing quote is escaped
      ++i;
    } else if (text[i] == text[0]) {
      return std::nullopt; // an unescaped quote inside
    }
    s += text[i];
  }
  return s;
}
} // namespace

std::optional<ConstexprValue> parseConstexpr(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  if (auto s = unquote(text))
    return ConstexprValue{*s};
  if (text == "true" || text == "True")
    return ConstexprValue{true};
  if (text == "false" || text == "False")
    return ConstexprValue{false};
  if (auto t = parseDType(text))
    return ConstexprValue{*t};
  if (text == "nan")
    return ConstexprValue{std::nan("")};
  if (text == "inf" || text == "+inf")
    return ConstexprValue{HUGE_VAL};
  if (text == "-inf")
    return ConstexprValue{-HUGE_VAL};
  const char *begin = text.c_str();
  // Reject leading whitespace, which strtoll/strtod would skip.
  if (std::isspace(static_cast<unsigned char>(text[0])))
    return std::nullopt;
  const char *digits = begin + ((text[0] == '-' || text[0] == '+') ? 1 : 0);
  if (*digits == '\0')
    return std::nullopt;
  bool isHex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
  bool looksIntegral = text.find_first_of(isHex ? "." : ".eE") == std::string::npos &&
                       text.find_first_of("nN") == std::string::npos;
  if (looksIntegral) {
    errno = 0;
    char *end = nullptr;
    long long v = std::strtoll(begin, &end, 0);
    if (errno == ERANGE || end != begin + text.size() || end == begin)
      return std::nullopt;
    // strtoll with base 0 reads "012" as octal; we want decimal for leading zeros.
    if (!isHex && digits[0] == '0' && digits[1] != '\0') {
      errno = 0;
      v = std::strtoll(begin, &end, 10);
      if (errno == ERANGE || end != begin + text.size())
        return std::nullopt;
    }
    return ConstexprValue{static_cast<int64_t>(v)};
  }
  if (!std::isdigit(static_cast<unsigned char>(*digits)) && *digits != '.')
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  double d = std::strtod(begin, &end);
  if (end != begin + text.size() || end == begin)
    return std::nullopt;
  // ERANGE: overflow (rejected) or underflow; a subnormal result is exact enough.
  if (errno == ERANGE && (std::isinf(d) || d == 0.0))
    return std::nullopt;
  return ConstexprValue{d};
}

const char *argFactSuffix(ArgFact f) {
  switch (f) {
  case ArgFact::EqualsOne: return "=1";
  case ArgFact::DivisibleBy16: return "%16";
  case ArgFact::None: break;
  }
  return "";
}

} // namespace tessera
