#include "SemValue.h"

#include <sstream>

namespace tessera::fe {

bool fitsIn(int64_t v, DType d) {
  switch (d.scalar) {
  case ScalarType::i1: return v == 0 || v == 1;
  case ScalarType::i8: return v >= -128 && v <= 127;
  case ScalarType::u8: return v >= 0 && v <= 255;
  case ScalarType::i16: return v >= -32768 && v <= 32767;
  case ScalarType::i32: return v >= INT32_MIN && v <= INT32_MAX;
  case ScalarType::u16: return v >= 0 && v <= 65535;
  case ScalarType::u32: return v >= 0 && v <= int64_t(UINT32_MAX);
  case ScalarType::u64: return v >= 0; // compile-time integers are 64-bit signed
  default: return true;
  }
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1)
    os << ",";
  os << ")";
  return os.str();
}

std::string TileType::str() const {
  std::string s = elem.str();
  if (shape.empty())
    return s;
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string SemValue::describe() const {
  switch (kind) {
  case Invalid: return "<invalid>";
  case Int: return "constexpr int " + std::to_string(i);
  case Float: {
    std::ostringstream os;
    os << "constexpr float " << f;
    return os.str();
  }
  case Bool: return std::string("constexpr bool ") + (b ? "True" : "False");
  case DTypeV: return "type " + dtype.str();
  case Str: return "string \"" + s + "\"";
  case None: return "None";
  case Tuple: return "tuple of " + std::to_string(elems.size());
  case Slice: return "slice";
  case Runtime: return type.isTile() ? "tile " + type.str() : "scalar " + type.str();
  case Func: return "function";
  }
  return "?";
}

} // namespace tessera::fe
