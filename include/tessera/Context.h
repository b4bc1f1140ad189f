// Context: one device (or, later, the CPU interpreter) and the entry point
// for memory, streams, events and modules.
//
//   tessera::Context ctx;               // device $TESSERA_DEVICE (default 0)
//   auto x = ctx.upload(hostVector);    // DeviceBuffer<float>
//   auto y = ctx.alloc<float>(n);
//
// Without a CUDA driver or GPU the constructor throws tessera::Error with a
// clear message ("no CUDA driver found (...)", "no CUDA-capable GPU found").
#ifndef TESSERA_CONTEXT_H
#define TESSERA_CONTEXT_H

#include "tessera/Backend.h"
#include "tessera/Memory.h"
#include "tessera/Module.h"
#include "tessera/Stream.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

class Context {
public:
  /// The backend and device the environment asks for (fromEnvironment()).
  Context();
  /// Device `ordinal` on the backend the environment asks for
  /// (TESSERA_INTERPRET selects the interpreter, CUDA otherwise).
  explicit Context(int ordinal);
  /// A context on an existing backend (tests, custom backends).
  explicit Context(std::shared_ptr<Backend> backend);
  /// Device $TESSERA_DEVICE (default 0) on the backend createBackend() picks.
  static Context fromEnvironment();
  /// The GPU the environment names when one is usable; otherwise, when there is
  /// no CUDA driver or no GPU, the CPU interpreter (and `*reason` says why).
  /// Any other error (a bad TESSERA_DEVICE, a failing driver) is thrown.
  static Context gpuOrInterpreter(std::string *reason = nullptr);

  Context(Context &&) noexcept = default;
  Context &operator=(Context &&) noexcept = default;
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  Backend &backend() const { return *backend_; }
  const std::shared_ptr<Backend> &sharedBackend() const { return backend_; }
  bool isInterpreter() const { return backend_->kind() == BackendKind::Interpreter; }

  const DeviceInfo &device() const { return backend_->deviceInfo(); }
  int ordinal() const { return device().ordinal; }
  const std::string &deviceName() const { return device().name; }
  /// {major, minor}, e.g. {9, 0}.
  std::pair<int, int> computeCapability() const {
    return {device().computeCapabilityMajor, device().computeCapabilityMinor};
  }
  int smCount() const { return device().smCount; }
  size_t maxSharedMemoryPerBlockOptin() const { return device().maxSharedMemoryPerBlockOptin; }
  /// "sm_90".
  std::string target() const { return device().target(); }

  /// The default stream (never destroyed).
  const Stream &stream() const { return defaultStream_; }
  Stream createStream() const { return Stream(*this); }
  Event createEvent() const { return Event(*this); }

  template <class T> DeviceBuffer<T> alloc(size_t count) const {
    return DeviceBuffer<T>(backend_, count);
  }
  template <class T> DeviceBuffer<T> upload(const std::vector<T> &host) const {
    DeviceBuffer<T> b(backend_, host.size());
    b.copyFromHost(host);
    return b;
  }
  DeviceMemory allocBytes(size_t bytes) const { return DeviceMemory(backend_, bytes); }

  Module loadModule(const ModuleImage &image) const { return Module(backend_, image); }
  Module loadPTX(std::string ptx) const {
    return Module(backend_, ModuleImage{ModuleFormat::Ptx, std::move(ptx)});
  }
  Module loadCubin(std::string cubin) const {
    return Module(backend_, ModuleImage{ModuleFormat::Cubin, std::move(cubin)});
  }

  /// Waits for all work on the device.
  void synchronize() const { backend_->synchronize(); }

private:
  std::shared_ptr<Backend> backend_;
  Stream defaultStream_;
};

} // namespace tessera

#endif
