#include "SemValue.h"

#include <cmath>
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
  case BlockPtr:
    return std::string(descriptor ? "tensor descriptor of " : "block pointer to ") +
           TileType{elems[0].type.elem.pointee(), block}.str();
  }
  return "?";
}

bool sameSem(const SemValue &a, const SemValue &b) {
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case SemValue::Int: return a.i == b.i;
  case SemValue::Float: return a.f == b.f || (std::isnan(a.f) && std::isnan(b.f));
  case SemValue::Bool: return a.b == b.b;
  case SemValue::DTypeV: return a.dtype == b.dtype;
  case SemValue::Str: return a.s == b.s;
  case SemValue::None: return true;
  case SemValue::Runtime: return a.value == b.value;
  case SemValue::Func: return a.fn == b.fn;
  case SemValue::BlockPtr:
    if (a.block != b.block || a.descriptor != b.descriptor || a.s != b.s)
      return false;
    [[fallthrough]];
  case SemValue::Tuple:
    if (a.elems.size() != b.elems.size())
      return false;
    for (size_t i = 0; i < a.elems.size(); ++i)
      if (!sameSem(a.elems[i], b.elems[i]))
        return false;
    return true;
  default: return false;
  }
}

void numericLeaves(SemValue &v, std::vector<SemValue *> &out) {
  for (SemValue &e : v.elems) {
    if (e.isCompound())
      numericLeaves(e, out);
    else if (e.isConst() || e.isRuntime())
      out.push_back(&e);
  }
}

bool sameStructure(const SemValue &a, const SemValue &b) {
  auto number = [](const SemValue &v) { return v.isConst() || v.isRuntime(); };
  if (number(a) || number(b))
    return number(a) && number(b);
  if (!a.isCompound())
    return sameSem(a, b);
  if (a.kind != b.kind || a.elems.size() != b.elems.size() || a.block != b.block ||
      a.descriptor != b.descriptor || a.s != b.s)
    return false;
  for (size_t i = 0; i < a.elems.size(); ++i)
    if (!sameStructure(a.elems[i], b.elems[i]))
      return false;
  return true;
}

} // namespace tessera::fe
