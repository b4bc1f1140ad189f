#include "tessera/Context.h"
#include "tessera/Error.h"
#include "tessera/Memory.h"

namespace tessera {

namespace {
Backend &streamBackend(const Stream &s, const Backend &mine) {
  Backend &b = s.backend();
  if (&b != &mine)
    throw Error("the stream belongs to a different context than the memory");
  return b;
}
} // namespace

DeviceMemory::DeviceMemory(const Context &ctx, size_t bytes)
    : DeviceMemory(ctx.sharedBackend(), bytes) {}

DeviceMemory::DeviceMemory(std::shared_ptr<Backend> backend, size_t bytes)
    : backend_(std::move(backend)) {
  if (!backend_)
    throw Error("DeviceMemory: null backend");
  address_ = backend_->alloc(bytes);
  bytes_ = bytes;
}

DeviceMemory::~DeviceMemory() { reset(); }

DeviceMemory::DeviceMemory(DeviceMemory &&o) noexcept
    : backend_(std::move(o.backend_)), address_(o.address_), bytes_(o.bytes_) {
  o.address_ = 0;
  o.bytes_ = 0;
}

DeviceMemory &DeviceMemory::operator=(DeviceMemory &&o) noexcept {
  if (this != &o) {
    reset();
    backend_ = std::move(o.backend_);
    address_ = o.address_;
    bytes_ = o.bytes_;
    o.address_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceMemory::reset() noexcept {
  if (backend_ && address_)
    backend_->free(address_);
  address_ = 0;
  bytes_ = 0;
}

Backend &DeviceMemory::requireBackend() const {
  if (!backend_)
    throw Error("use of an empty (moved-from or default-constructed) device buffer");
  return *backend_;
}

void DeviceMemory::checkRange(const char *what, size_t offset, size_t bytes) const {
  requireBackend();
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(std::string(what) + " of " + std::to_string(bytes) + " bytes at offset " +
                std::to_string(offset) + " is outside the device buffer of " +
                std::to_string(bytes_) + " bytes");
}

void DeviceMemory::copyFromHost(const void *src, size_t bytes, size_t offset) {
  checkRange("copy from host", offset, bytes);
  backend_->copyHostToDevice(address_ + offset, src, bytes, nullptr);
}
void DeviceMemory::copyFromHost(const void *src, size_t bytes, size_t offset,
                                const Stream &stream) {
  checkRange("copy from host", offset, bytes);
  streamBackend(stream, *backend_).copyHostToDevice(address_ + offset, src, bytes,
                                                    stream.handle());
}
void DeviceMemory::copyToHost(void *dst, size_t bytes, size_t offset) const {
  checkRange("copy to host", offset, bytes);
  backend_->copyDeviceToHost(dst, address_ + offset, bytes, nullptr);
}
void DeviceMemory::copyToHost(void *dst, size_t bytes, size_t offset,
                              const Stream &stream) const {
  checkRange("copy to host", offset, bytes);
  streamBackend(stream, *backend_).copyDeviceToHost(dst, address_ + offset, bytes,
                                                    stream.handle());
}
void DeviceMemory::copyFrom(const DeviceMemory &src, size_t bytes, size_t dstOffset,
                            size_t srcOffset) {
  checkRange("device-to-device copy", dstOffset, bytes);
  src.checkRange("device-to-device copy", srcOffset, bytes);
  if (src.backend_ != backend_)
    throw Error("device-to-device copy between buffers of different contexts");
  backend_->copyDeviceToDevice(address_ + dstOffset, src.address_ + srcOffset, bytes, nullptr);
}
void DeviceMemory::copyFrom(const DeviceMemory &src, size_t bytes, size_t dstOffset,
                            size_t srcOffset, const Stream &stream) {
  checkRange("device-to-device copy", dstOffset, bytes);
  src.checkRange("device-to-device copy", srcOffset, bytes);
  if (src.backend_ != backend_)
    throw Error("device-to-device copy between buffers of different contexts");
  streamBackend(stream, *backend_).copyDeviceToDevice(address_ + dstOffset,
                                                      src.address_ + srcOffset, bytes,
                                                      stream.handle());
}
void DeviceMemory::memset(uint8_t value, size_t offset, size_t count) {
  if (count == SIZE_MAX)
    count = offset <= bytes_ ? bytes_ - offset : 0;
  checkRange("memset", offset, count);
  backend_->memset8(address_ + offset, value, count, nullptr);
}
void DeviceMemory::memset(uint8_t value, const Stream &stream) {
  checkRange("memset", 0, bytes_);
  streamBackend(stream, *backend_).memset8(address_, value, bytes_, stream.handle());
}
void DeviceMemory::memset32(uint32_t value, size_t offset, size_t count) {
  if (offset % 4 != 0)
    throw Error("memset32 at offset " + std::to_string(offset) + ", which is not 4-byte aligned");
  if (count > SIZE_MAX / 4)
    throw Error("memset32: count too large");
  checkRange("memset32", offset, count * 4);
  backend_->memset32(address_ + offset, value, count, nullptr);
}
void DeviceMemory::memset32(uint32_t value, size_t offset, size_t count, const Stream &stream) {
  if (offset % 4 != 0)
    throw Error("memset32 at offset " + std::to_string(offset) + ", which is not 4-byte aligned");
  if (count > SIZE_MAX / 4)
    throw Error("memset32: count too large");
  checkRange("memset32", offset, count * 4);
  streamBackend(stream, *backend_).memset32(address_ + offset, value, count, stream.handle());
}

} // namespace tessera
