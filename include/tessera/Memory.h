// Device memory: DeviceMemory (untyped bytes) and DeviceBuffer<T> (typed
// elements). Both own their allocation, are move-only, and free it on
// destruction. Copies check bounds and throw tessera::Error on overflow.
// Copies and memsets without a Stream are synchronous; those taking a Stream
// are queued on it (the host memory must then stay alive until the stream
// is synchronized).
#ifndef TESSERA_MEMORY_H
#define TESSERA_MEMORY_H

#include "tessera/Backend.h"
#include "tessera/LaunchArgs.h"
#include "tessera/Stream.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace tessera {

class Context;

class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(const Context &ctx, size_t bytes);
  DeviceMemory(std::shared_ptr<Backend> backend, size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory &&other) noexcept;
  DeviceMemory &operator=(DeviceMemory &&other) noexcept;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  DeviceAddress address() const { return address_; }
  size_t size() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  Backend *backend() const { return backend_.get(); }
  /// The address `byteOffset` bytes in, typed (for kernel arguments).
  template <class T> DevicePtr<T> as(size_t byteOffset = 0) const {
    return DevicePtr<T>{address_ + byteOffset};
  }

  void copyFromHost(const void *src, size_t bytes, size_t offset = 0);
  void copyFromHost(const void *src, size_t bytes, size_t offset, const Stream &stream);
  void copyToHost(void *dst, size_t bytes, size_t offset = 0) const;
  void copyToHost(void *dst, size_t bytes, size_t offset, const Stream &stream) const;
  /// Device-to-device copy of `bytes` from `src` (at srcOffset) to this (at dstOffset).
  void copyFrom(const DeviceMemory &src, size_t bytes, size_t dstOffset = 0,
                size_t srcOffset = 0);
  void copyFrom(const DeviceMemory &src, size_t bytes, size_t dstOffset, size_t srcOffset,
                const Stream &stream);
  /// Sets `count` bytes from `offset` (all of it by default) to `value`.
  void memset(uint8_t value, size_t offset = 0, size_t count = SIZE_MAX);
  void memset(uint8_t value, const Stream &stream);
  /// Sets `count` 32-bit words from byte `offset` (4-aligned) to `value`.
  void memset32(uint32_t value, size_t offset, size_t count);
  void memset32(uint32_t value, size_t offset, size_t count, const Stream &stream);

  /// Frees the memory now.
  void reset() noexcept;

private:
  void checkRange(const char *what, size_t offset, size_t bytes) const;
  Backend &requireBackend() const;
  std::shared_ptr<Backend> backend_;
  DeviceAddress address_ = 0;
  size_t bytes_ = 0;
};

template <class T> class DeviceBuffer {
  static_assert(std::is_trivially_copyable<T>::value,
                "DeviceBuffer<T>: T must be trivially copyable");

public:
  DeviceBuffer() = default;
  DeviceBuffer(const Context &ctx, size_t count) : memory_(ctx, count * sizeof(T)), count_(count) {}
  DeviceBuffer(std::shared_ptr<Backend> backend, size_t count)
      : memory_(std::move(backend), count * sizeof(T)), count_(count) {}

  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }
  DeviceAddress address() const { return memory_.address(); }
  DevicePtr<T> ptr(size_t elementOffset = 0) const {
    return DevicePtr<T>{memory_.address() + elementOffset * sizeof(T)};
  }
  DeviceMemory &memory() { return memory_; }
  const DeviceMemory &memory() const { return memory_; }

  /// Copies `count` elements from `src` to elements [offset, offset + count).
  void copyFromHost(const T *src, size_t count, size_t offset = 0) {
    memory_.copyFromHost(src, count * sizeof(T), offset * sizeof(T));
  }
  void copyFromHost(const T *src, size_t count, size_t offset, const Stream &stream) {
    memory_.copyFromHost(src, count * sizeof(T), offset * sizeof(T), stream);
  }
  /// Copies all of `v` to the start of the buffer (v.size() <= size()).
  void copyFromHost(const std::vector<T> &v) { copyFromHost(v.data(), v.size()); }
  void copyFromHost(const std::vector<T> &v, const Stream &stream) {
    copyFromHost(v.data(), v.size(), 0, stream);
  }
  void copyToHost(T *dst, size_t count, size_t offset = 0) const {
    memory_.copyToHost(dst, count * sizeof(T), offset * sizeof(T));
  }
  void copyToHost(T *dst, size_t count, size_t offset, const Stream &stream) const {
    memory_.copyToHost(dst, count * sizeof(T), offset * sizeof(T), stream);
  }
  /// Resizes `out` to size() and copies the whole buffer into it.
  void copyToHost(std::vector<T> &out) const {
    out.resize(count_);
    copyToHost(out.data(), count_);
  }
  std::vector<T> toHost() const {
    std::vector<T> out(count_);
    copyToHost(out.data(), count_);
    return out;
  }
  void copyFrom(const DeviceBuffer &src) {
    memory_.copyFrom(src.memory_, std::min(bytes(), src.bytes()));
  }
  /// Sets every byte to `value`.
  void memsetBytes(uint8_t value) { memory_.memset(value); }
  void memsetBytes(uint8_t value, const Stream &stream) { memory_.memset(value, stream); }
  void zero() { memory_.memset(0); }
  /// Sets every element to `value`.
  void fill(const T &value) {
    if constexpr (sizeof(T) == 1) {
      uint8_t b;
      std::memcpy(&b, &value, 1);
      memory_.memset(b);
    } else if constexpr (sizeof(T) == 4) {
      uint32_t w;
      std::memcpy(&w, &value, 4);
      memory_.memset32(w, 0, count_);
    } else {
      std::vector<T> host(count_, value);
      copyFromHost(host);
    }
  }
  void reset() noexcept {
    memory_.reset();
    count_ = 0;
  }

private:
  DeviceMemory memory_;
  size_t count_ = 0;
};

template <class T> struct ArgTraits<DeviceBuffer<T>> {
  static_assert(ScalarTypeOf<T>::supported,
                "DeviceBuffer<T> as a kernel argument: T must be a Tessera scalar type");
  static ArgValue make(const DeviceBuffer<T> &b) {
    return ArgValue::pointer(ScalarTypeOf<T>::value, b.address());
  }
};

} // namespace tessera

#endif
