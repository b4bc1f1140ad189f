// Element types and kernel signatures shared by the compiler, the runtime and
// the interpreter. Free of MLIR so that user code can include it.
#ifndef TESSERA_TYPES_H
#define TESSERA_TYPES_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera {

// New types go at the end: the numeric values are part of serialized signatures.
enum class ScalarType : uint8_t {
  i1, i8, u8, i16, i32, i64, f16, bf16, f32, f64, u16, u32, u64, f8e4m3, f8e5m2
};

const char *scalarTypeName(ScalarType t);          // "f32"
std::optional<ScalarType> parseScalarType(const std::string &name);
unsigned scalarTypeBits(ScalarType t);            // i1 -> 1, bf16 -> 16
bool isFloat(ScalarType t);                       // f8e4m3 ... f64
bool isFloat8(ScalarType t);                      // f8e4m3, f8e5m2
bool isUnsigned(ScalarType t);                    // u8, u16, u32, u64 (and i1)

/// A scalar type or a pointer to one (`pointerDepth` levels of `*`).
struct DType {
  ScalarType scalar = ScalarType::i32;
  int pointerDepth = 0;
  bool isPointer() const { return pointerDepth > 0; }
  DType pointee() const { return DType{scalar, pointerDepth - 1}; }
  DType pointerTo() const { return DType{scalar, pointerDepth + 1}; }
  bool operator==(const DType &o) const {
    return scalar == o.scalar && pointerDepth == o.pointerDepth;
  }
  bool operator!=(const DType &o) const { return !(*this == o); }
  std::string str() const; // "*f32", "i32"
};
std::optional<DType> parseDType(const std::string &text); // "**u8"

/// A compile-time value: a constexpr parameter, a -D define. New kinds go at
/// the end (the index is the kind's identity in serializations).
using ConstexprValue = std::variant<int64_t, double, bool, DType, std::string>;
/// "64", "1.0", "true", "f16"; a string in double quotes with `"` and `\`
/// escaped by a backslash ("\"leaky_relu\""), so that no string reads as a
/// number, a bool or a type.
std::string constexprToString(const ConstexprValue &v);
/// The value's kind as one letter: 'i' (int64_t), 'f' (double), 'b' (bool),
/// 't' (DType), 's' (string). Serializations tag values with it, so that 1 and
/// 1.0 differ.
char constexprKind(const ConstexprValue &v);
/// Parses "64", "1e-3", "true", "f16", "*bf16" or a quoted string as
/// constexprToString writes it ('single quotes' too). Returns nullopt when
/// unparsable (the CLI's -D then takes the bare text as a string).
std::optional<ConstexprValue> parseConstexpr(const std::string &text);

/// One runtime parameter of a compiled kernel.
struct KernelParam {
  std::string name;
  DType type; // pointers have pointerDepth >= 1
  /// A pointer the kernel may store through (a store's or an atomic's address
  /// derives from it): what the autotuner compares between candidates.
  bool written = false;
  /// A pointer the kernel may load through (a load's or an atomic's address).
  bool read = false;
  /// An i32/i64 parameter whose launch values the JIT specializes on (facts
  /// =1, %16); false when the kernel lists it in do_not_specialize.
  bool specialize = true;
};

/// A fact about the value of an integer (i32/i64) kernel argument that a
/// compiled variant may assume (Triton-style specialization): the JIT picks
/// the facts from the values at launch, `tessera compile --assume` sets them.
enum class ArgFact : uint8_t {
  None,          // nothing known
  EqualsOne,     // the value is 1: uses become the constant 1
  DivisibleBy16, // the value is a multiple of 16 (0 included)
};
/// Whether a parameter of type `t` can take argument facts: an i32 or i64 scalar.
inline bool takesArgFacts(const DType &t) {
  return !t.isPointer() && (t.scalar == ScalarType::i32 || t.scalar == ScalarType::i64);
}
/// "=1", "%16" or "" (the --assume spelling, also used in cache keys).
const char *argFactSuffix(ArgFact f);
/// The fact a launch value gives: 1 -> EqualsOne, multiple of 16 -> DivisibleBy16.
inline ArgFact argFactOf(int64_t value) {
  if (value == 1)
    return ArgFact::EqualsOne;
  return value % 16 == 0 ? ArgFact::DivisibleBy16 : ArgFact::None;
}

/// What the runtime needs to check a launch: parameters in order, and the
/// constexpr values the kernel was specialized with.
struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  std::map<std::string, ConstexprValue> constexprs;
};

} // namespace tessera

#endif
