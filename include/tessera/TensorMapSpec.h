// TensorMapSpec: how the runtime builds, at launch, one TMA tensor map that a
// compiled kernel reads (cp.async.bulk.tensor on sm_90a). The compiler
// appends one 128-byte `__grid_constant__` parameter per map after the
// kernel's own arguments; its extents and row stride are linear forms over
// the integer arguments of the launch, its base address a pointer argument.
// A map has columns and rows, and up to three outer dimensions beyond them
// (FlashAttention's heads and batch: a kernel moves along those by
// coordinates that stay fixed over its loop).
// Free of MLIR, and of exceptions, so that the compiler, the kernel cache and
// the runtime share it.
#ifndef TESSERA_TENSORMAPSPEC_H
#define TESSERA_TENSORMAPSPEC_H

#include <cstdint>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

struct TensorMapSpec {
  /// c + sum(coef * argument[index]) over the launch's integer arguments.
  struct Form {
    int64_t c = 0;
    std::vector<std::pair<int, int64_t>> terms; // (argument index, coef)
  };
  int pointerArg = 0;    // the argument that holds the base address
  int elementBytes = 2;  // 1, 2 or 4
  int dataType = 0;      // CUtensorMapDataType
  Form cols, rows;       // extents in elements; past them TMA reads zeros
  Form rowStride;        // elements between rows
  int boxCols = 0, boxRows = 0; // one copy: boxRows rows of boxCols elements
  int swizzleBytes = 0;  // 0, 32, 64 or 128
  /// Dimensions past the rows (a box spans one element of each).
  struct Outer {
    Form extent, stride; // in elements
  };
  std::vector<Outer> outer; // at most kMaxOuter
  static constexpr size_t kMaxOuter = 3;
  /// Integer arguments that must not be negative (the runtime checks them):
  /// the coordinates along dimensions no mask bounds are not negative only
  /// if they are not.
  std::vector<int> nonNegativeArgs;
};

inline std::string formatTensorMapForm(const TensorMapSpec::Form &f) {
  std::string s = std::to_string(f.c);
  for (auto [i, k] : f.terms)
    s += "+" + std::to_string(k) + "*a" + std::to_string(i);
  return s;
}

/// " outer=EXTENT:STRIDE;EXTENT:STRIDE" for outer dimensions, "" without.
inline std::string formatOuterDims(const std::vector<TensorMapSpec::Outer> &outer) {
  std::string s;
  for (size_t i = 0; i < outer.size(); ++i)
    s += (i ? ";" : " outer=") + formatTensorMapForm(outer[i].extent) + ":" +
         formatTensorMapForm(outer[i].stride);
  return s;
}

/// " nonneg=a10,a11" for arguments the runtime checks, "" without.
inline std::string formatNonNegativeArgs(const std::vector<int> &args) {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i)
    s += (i ? ",a" : " nonneg=a") + std::to_string(args[i]);
  return s;
}

/// "ptr=0 type=9 eb=2 box=64x128 swizzle=128 cols=0+1*a5 rows=0+1*a3 stride=0+1*a6"
inline std::string formatTensorMapSpec(const TensorMapSpec &m) {
  return "ptr=" + std::to_string(m.pointerArg) + " type=" + std::to_string(m.dataType) +
         " eb=" + std::to_string(m.elementBytes) + " box=" + std::to_string(m.boxCols) + "x" +
         std::to_string(m.boxRows) + " swizzle=" + std::to_string(m.swizzleBytes) +
         " cols=" + formatTensorMapForm(m.cols) + " rows=" + formatTensorMapForm(m.rows) +
         " stride=" + formatTensorMapForm(m.rowStride) + formatOuterDims(m.outer) +
         formatNonNegativeArgs(m.nonNegativeArgs);
}

inline std::optional<TensorMapSpec::Form> parseTensorMapForm(const std::string &s) {
  TensorMapSpec::Form f;
  const char *p = s.c_str();
  long long c = 0;
  int n = 0;
  if (std::sscanf(p, "%lld%n", &c, &n) != 1)
    return std::nullopt;
  f.c = c;
  p += n;
  while (*p) {
    long long k = 0;
    int i = 0;
    if (std::sscanf(p, "+%lld*a%d%n", &k, &i, &n) != 2 || i < 0)
      return std::nullopt;
    f.terms.push_back({i, k});
    p += n;
  }
  return f;
}

inline bool parseOuterDims(const std::string &s, std::vector<TensorMapSpec::Outer> &out) {
  size_t at = 0;
  while (true) {
    size_t semi = s.find(';', at), colon = s.find(':', at);
    std::string dim = s.substr(at, semi == std::string::npos ? std::string::npos : semi - at);
    if (colon == std::string::npos || colon - at >= dim.size())
      return false;
    std::optional<TensorMapSpec::Form> e = parseTensorMapForm(dim.substr(0, colon - at)),
                                       st = parseTensorMapForm(dim.substr(colon - at + 1));
    if (!e || !st || out.size() == TensorMapSpec::kMaxOuter)
      return false;
    out.push_back({*e, *st});
    if (semi == std::string::npos)
      return true;
    at = semi + 1;
  }
}

inline bool parseNonNegativeArgs(const std::string &s, std::vector<int> &out) {
  const char *p = s.c_str();
  while (true) {
    int i = 0, n = 0;
    if (std::sscanf(p, "a%d%n", &i, &n) != 1 || i < 0)
      return false;
    out.push_back(i);
    p += n;
    if (!*p)
      return true;
    if (*p++ != ',')
      return false;
  }
}

/// The spec formatTensorMapSpec wrote, or nothing for any other text.
inline std::optional<TensorMapSpec> parseTensorMapSpec(const std::string &text) {
  TensorMapSpec m;
  std::istringstream in(text);
  std::string tok;
  int seen = 0, outer = 0, nonneg = 0;
  while (in >> tok) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos)
      return std::nullopt;
    std::string key = tok.substr(0, eq), val = tok.substr(eq + 1);
    auto num = [&](int &out) {
      int n = 0;
      return std::sscanf(val.c_str(), "%d%n", &out, &n) == 1 && size_t(n) == val.size();
    };
    bool ok = true;
    if (key == "ptr")
      ok = num(m.pointerArg) && m.pointerArg >= 0;
    else if (key == "type")
      ok = num(m.dataType);
    else if (key == "eb")
      ok = num(m.elementBytes) && (m.elementBytes == 1 || m.elementBytes == 2 || m.elementBytes == 4);
    else if (key == "swizzle")
      ok = num(m.swizzleBytes);
    else if (key == "box")
      ok = std::sscanf(val.c_str(), "%dx%d", &m.boxCols, &m.boxRows) == 2 && m.boxCols > 0 &&
           m.boxRows > 0 && m.boxCols <= 256 && m.boxRows <= 256;
    else if (key == "cols" || key == "rows" || key == "stride") {
      std::optional<TensorMapSpec::Form> f = parseTensorMapForm(val);
      ok = f.has_value();
      if (ok)
        (key == "cols" ? m.cols : key == "rows" ? m.rows : m.rowStride) = *f;
    } else if (key == "outer" && !outer++) {
      ok = parseOuterDims(val, m.outer);
      --seen; // optional
    } else if (key == "nonneg" && !nonneg++) {
      ok = parseNonNegativeArgs(val, m.nonNegativeArgs);
      --seen; // optional
    } else {
      ok = false;
    }
    if (!ok)
      return std::nullopt;
    ++seen;
  }
  if (seen != 8)
    return std::nullopt;
  return m;
}

} // namespace tessera

#endif
