// Launch geometry and typed kernel arguments.
//
// Every C++ argument of Kernel::launch becomes a tagged ArgValue, which is
// checked against the kernel's signature before anything reaches the driver.
// The C++ -> Tessera type mapping is exact, with no implicit conversions:
//
//   int8_t -> i8    uint8_t -> u8    int16_t -> i16   int32_t -> i32
//   int64_t -> i64  float -> f32     double -> f64    bool -> i1
//   tessera::f16 -> f16   tessera::bf16 -> bf16
//   tessera::f8e4m3 -> f8e4m3   tessera::f8e5m2 -> f8e5m2 (element types of buffers)
//   DeviceBuffer<T>, DevicePtr<T> -> *T   (T one of the types above)
//
// So an int64_t (or a `1L` literal) passed to an i32 parameter is an error,
// not a silent truncation, and a double passed to an f32 parameter is an
// error: cast explicitly (`int32_t(n)`, `2.0f`). Unsigned types other than
// uint8_t (size_t, unsigned) have no Tessera type and do not compile.
#ifndef TESSERA_LAUNCHARGS_H
#define TESSERA_LAUNCHARGS_H

#include "tessera/Float8.h"
#include "tessera/Half.h"
#include "tessera/Types.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace tessera {

/// Number of blocks in each dimension.
struct Grid {
  unsigned x = 1, y = 1, z = 1;
  /// A grid from signed or 64-bit counts; throws tessera::Error when a count is
  /// not in [1, 2^31 - 1] instead of silently wrapping: Grid::of(cdiv(n, 1024)).
  static Grid of(int64_t x, int64_t y = 1, int64_t z = 1);
};
/// Threads per block in each dimension.
struct Block {
  unsigned x = 1, y = 1, z = 1;
};

/// How a launch relates to the kernel before it on the same stream.
struct LaunchOptions {
  /// CUDA's programmatic dependent launch (sm_90 and newer): the kernel may
  /// start while the previous kernel on the stream still runs, and its
  /// grid_dependency_wait() waits for that kernel to finish and for its
  /// writes. Code before the wait must not read what that kernel writes.
  /// Without a GPU that has it (the interpreter, sm_80) launches follow one
  /// another as usual and the wait returns at once.
  bool overlapPrevious = false;
};

/// An address in the memory of a backend: a CUdeviceptr for CUDA, a host
/// pointer for a CPU interpreter. Opaque to users.
using DeviceAddress = uint64_t;

/// A typed, non-owning device address (an element offset into a buffer, for example).
template <class T> struct DevicePtr {
  DeviceAddress address = 0;
  DevicePtr operator+(std::ptrdiff_t elements) const {
    return DevicePtr{address + static_cast<DeviceAddress>(elements * static_cast<std::ptrdiff_t>(sizeof(T)))};
  }
  explicit operator bool() const { return address != 0; }
};

/// ScalarTypeOf<T>::value: the Tessera element type of a C++ type.
template <class T, class = void> struct ScalarTypeOf { static constexpr bool supported = false; };
#define TESSERA_SCALAR_TYPE_OF(CxxType, Scalar)                                                  \
  template <> struct ScalarTypeOf<CxxType> {                                                     \
    static constexpr bool supported = true;                                                      \
    static constexpr ScalarType value = ScalarType::Scalar;                                      \
  };
TESSERA_SCALAR_TYPE_OF(bool, i1)
TESSERA_SCALAR_TYPE_OF(int8_t, i8)
TESSERA_SCALAR_TYPE_OF(uint8_t, u8)
TESSERA_SCALAR_TYPE_OF(int16_t, i16)
TESSERA_SCALAR_TYPE_OF(uint16_t, u16)
TESSERA_SCALAR_TYPE_OF(uint32_t, u32)
TESSERA_SCALAR_TYPE_OF(uint64_t, u64)
TESSERA_SCALAR_TYPE_OF(int32_t, i32)
TESSERA_SCALAR_TYPE_OF(int64_t, i64)
TESSERA_SCALAR_TYPE_OF(f16, f16)
TESSERA_SCALAR_TYPE_OF(bf16, bf16)
TESSERA_SCALAR_TYPE_OF(f8e4m3, f8e4m3)
TESSERA_SCALAR_TYPE_OF(f8e5m2, f8e5m2)
TESSERA_SCALAR_TYPE_OF(float, f32)
TESSERA_SCALAR_TYPE_OF(double, f64)
#undef TESSERA_SCALAR_TYPE_OF
// `long long` is a distinct type from int64_t (`long`) on LP64 Linux; it is 64 bits too.
template <class T>
struct ScalarTypeOf<T, std::enable_if_t<std::is_same<T, long long>::value &&
                                        !std::is_same<long long, int64_t>::value>> {
  static constexpr bool supported = true;
  static constexpr ScalarType value = ScalarType::i64;
};

/// One kernel argument: its type tag and up to 8 bytes of value. Scalars are
/// stored at their natural size at the start of `storage` (little endian,
/// bool as one byte 0/1); pointers as an 8-byte DeviceAddress.
struct ArgValue {
  bool isPointer = false;
  DType type;                              // pointers: pointerDepth 1, scalar = pointee
  alignas(8) unsigned char storage[8] = {}; // the value as the kernel parameter holds it

  template <class T> static ArgValue scalar(T value) {
    static_assert(ScalarTypeOf<T>::supported, "not a Tessera scalar type");
    static_assert(sizeof(T) <= 8, "scalar too large");
    ArgValue a;
    a.type = DType{ScalarTypeOf<T>::value, 0};
    if constexpr (std::is_same<T, bool>::value) {
      a.storage[0] = value ? 1 : 0;
    } else {
      std::memcpy(a.storage, &value, sizeof(T));
    }
    return a;
  }
  static ArgValue pointer(ScalarType pointee, DeviceAddress address) {
    ArgValue a;
    a.isPointer = true;
    a.type = DType{pointee, 1};
    std::memcpy(a.storage, &address, sizeof address);
    return a;
  }
  /// Reads the stored value back (T must have the size of the stored type).
  template <class T> T as() const {
    static_assert(sizeof(T) <= 8, "too large");
    T v;
    std::memcpy(&v, storage, sizeof(T));
    return v;
  }
  DeviceAddress address() const { return as<DeviceAddress>(); }
  /// Bytes the kernel parameter occupies: 8 for pointers, the natural size
  /// of a scalar (1 for i1).
  size_t size() const;
  /// "*f32" or "i32".
  std::string str() const { return type.str(); }
};

/// How a C++ value becomes an ArgValue. Memory.h adds DeviceBuffer<T>.
template <class T, class = void> struct ArgTraits {
  static_assert(sizeof(T) == 0,
                "tessera: unsupported kernel argument type. Pass int8_t, uint8_t, int16_t, "
                "int32_t, int64_t, float, double, bool, tessera::f16 or tessera::bf16 scalars, "
                "or DeviceBuffer<T> / DevicePtr<T>; cast other types (size_t, unsigned, char) "
                "explicitly.");
};
template <class T> struct ArgTraits<T, std::enable_if_t<ScalarTypeOf<T>::supported>> {
  static ArgValue make(T value) { return ArgValue::scalar<T>(value); }
};
template <class T> struct ArgTraits<DevicePtr<T>> {
  static_assert(ScalarTypeOf<T>::supported, "DevicePtr<T>: T must be a Tessera scalar type");
  static ArgValue make(const DevicePtr<T> &p) {
    return ArgValue::pointer(ScalarTypeOf<T>::value, p.address);
  }
};
template <> struct ArgTraits<ArgValue> {
  static ArgValue make(const ArgValue &a) { return a; }
};

template <class T> ArgValue toArgValue(const T &value) {
  return ArgTraits<std::decay_t<T>>::make(value);
}
template <class... Args> std::vector<ArgValue> makeArgs(const Args &...args) {
  std::vector<ArgValue> v;
  v.reserve(sizeof...(Args));
  (v.push_back(toArgValue(args)), ...);
  return v;
}

/// Throws tessera::Error unless `args` matches the parameters of `signature`
/// exactly (count, pointer vs scalar, element type). Arguments are numbered from 1:
///   kernel 'vadd' expects 4 arguments, got 3
///   argument 2 ('Y') of kernel 'vadd' must be a pointer (*f32), got a scalar i32
///   argument 4 ('N') of kernel 'vadd' must be a scalar i32, got a pointer *f32
///   argument 4 ('N') of kernel 'vadd' must be i32, got f64
///   argument 1 ('X') of kernel 'vadd' must be *f32, got *i32
void checkLaunchArgs(const KernelSignature &signature, const std::vector<ArgValue> &args);

/// The `kernelParams` array for cuLaunchKernel: one pointer per argument,
/// pointing into that ArgValue's storage (so `args` must outlive the result).
std::vector<void *> kernelParamPointers(const std::vector<ArgValue> &args);

} // namespace tessera

#endif
