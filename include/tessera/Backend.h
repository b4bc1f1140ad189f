// The execution backend behind a Context: CUDA (the driver API) today, a CPU
// interpreter later (selected with TESSERA_INTERPRET=1). Everything above
// this interface (Context, Stream, DeviceBuffer, Module, Kernel) is
// backend-neutral. Memory is named by opaque 64-bit DeviceAddresses (device
// pointers for CUDA, host pointers for an interpreter); streams, events,
// modules and functions by opaque handles.
//
// Implementing a backend: subclass Backend, then either register a factory
// with setInterpreterBackendFactory() (picked by createBackend() when
// TESSERA_INTERPRET is set) or hand an instance to Context(std::shared_ptr<Backend>).
//
// The CPU interpreter is built in: `TESSERA_INTERPRET=1` makes every default
// Context use it, and `Context ctx(tessera::createInterpreterBackend())` asks
// for it explicitly.
#ifndef TESSERA_BACKEND_H
#define TESSERA_BACKEND_H

#include "tessera/LaunchArgs.h"
#include "tessera/TensorMapSpec.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

// Opaque handles. A backend casts its own objects to and from these.
struct StreamObject;
struct EventObject;
struct ModuleObject;
struct FunctionObject;
using StreamHandle = StreamObject *;     // nullptr: the backend's default stream
using EventHandle = EventObject *;
using ModuleHandle = ModuleObject *;
using FunctionHandle = FunctionObject *;

enum class BackendKind { Cuda, Interpreter, Other };

struct DeviceInfo {
  int ordinal = 0;
  std::string name;                    // "NVIDIA H100 80GB HBM3"
  int computeCapabilityMajor = 0;      // 9
  int computeCapabilityMinor = 0;      // 0
  int smCount = 0;                     // multiprocessors
  size_t maxSharedMemoryPerBlock = 0;  // without opt-in (48 KB)
  size_t maxSharedMemoryPerBlockOptin = 0;
  size_t totalMemoryBytes = 0;
  int driverVersion = 0;               // 13000 for CUDA 13.0 (0 if not CUDA)
  /// Set by backends that are not a CUDA device ("interp"); target() returns it.
  std::string targetName;
  /// "sm_90": the target for this device's PTX/cubin (the compiler adds "a" as
  /// needed); "interp" for the CPU interpreter.
  std::string target() const {
    if (!targetName.empty())
      return targetName;
    return "sm_" + std::to_string(computeCapabilityMajor) + std::to_string(computeCapabilityMinor);
  }
};

/// What cuFuncGetAttribute reports about a loaded kernel.
struct FunctionAttributes {
  int numRegisters = 0;          // per thread
  size_t localBytes = 0;         // local memory per thread: register spills + stack
  size_t staticSharedBytes = 0;
  size_t constBytes = 0;
  int maxThreadsPerBlock = 0;
  int ptxVersion = 0;            // virtual architecture the PTX targeted: 80 for compute_80
  int binaryVersion = 0;         // architecture of the SASS: 90 for sm_90
};

enum class ModuleFormat { Ptx, Cubin, TileIR };

/// A module image in memory. PTX needs no terminating NUL here (the backend adds one).
struct ModuleImage {
  ModuleFormat format = ModuleFormat::Ptx;
  std::string data;
};

class Backend {
public:
  virtual ~Backend();
  Backend() = default;
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  virtual BackendKind kind() const = 0;
  virtual const DeviceInfo &deviceInfo() const = 0;

  // Memory. alloc(0) returns 0; free(0) does nothing. Copies and memsets are
  // synchronous when `stream` is nullptr, asynchronous on `stream` otherwise.
  virtual DeviceAddress alloc(size_t bytes) = 0;
  virtual void free(DeviceAddress address) noexcept = 0;
  virtual void copyHostToDevice(DeviceAddress dst, const void *src, size_t bytes,
                                StreamHandle stream) = 0;
  virtual void copyDeviceToHost(void *dst, DeviceAddress src, size_t bytes,
                                StreamHandle stream) = 0;
  virtual void copyDeviceToDevice(DeviceAddress dst, DeviceAddress src, size_t bytes,
                                  StreamHandle stream) = 0;
  virtual void memset8(DeviceAddress dst, uint8_t value, size_t count, StreamHandle stream) = 0;
  virtual void memset32(DeviceAddress dst, uint32_t value, size_t count, StreamHandle stream) = 0;

  // Streams and events.
  virtual StreamHandle createStream() = 0;
  virtual void destroyStream(StreamHandle stream) noexcept = 0;
  virtual void synchronizeStream(StreamHandle stream) = 0;
  virtual void synchronize() = 0; // the whole device
  virtual EventHandle createEvent() = 0;
  virtual void destroyEvent(EventHandle event) noexcept = 0;
  virtual void recordEvent(EventHandle event, StreamHandle stream) = 0;
  virtual void synchronizeEvent(EventHandle event) = 0;
  virtual float elapsedMilliseconds(EventHandle start, EventHandle end) = 0;

  // Modules and kernels. `infoLog` (may be null) receives the JIT info log.
  virtual ModuleHandle loadModule(const ModuleImage &image, std::string *infoLog) = 0;
  virtual void unloadModule(ModuleHandle module) noexcept = 0;
  /// Throws tessera::Error when `name` is not in the module.
  virtual FunctionHandle getFunction(ModuleHandle module, const std::string &name) = 0;
  virtual FunctionAttributes functionAttributes(FunctionHandle function) = 0;
  /// Allows launches of `function` with up to `bytes` of dynamic shared
  /// memory (CUDA needs an opt-in above 48 KB).
  virtual void setMaxDynamicSharedMemory(FunctionHandle function, size_t bytes) = 0;
  /// Launches `function`. The arguments were already checked against the
  /// kernel's signature when one is known; `name` is for error messages.
  /// `tensorMaps`: TMA tensor maps the kernel takes after `args`, built from
  /// the argument values (a backend without TMA throws when there are any).
  /// `options.overlapPrevious` is a request: a backend without programmatic
  /// dependent launch launches as usual.
  virtual void launch(FunctionHandle function, const std::string &name, Grid grid, Block block,
                      size_t dynamicSharedBytes, StreamHandle stream,
                      const std::vector<ArgValue> &args,
                      const std::vector<TensorMapSpec> &tensorMaps,
                      const LaunchOptions &options) = 0;
};

/// The CUDA driver backend for device `ordinal`: the same instance for as long
/// as anyone holds it, so every Context of a device shares it. Throws
/// tessera::Error with a clear message when there is no driver or no GPU.
std::shared_ptr<Backend> createCudaBackend(int ordinal = 0);

/// The CPU interpreter backend (BackendKind::Interpreter): host memory,
/// synchronous streams, kernels run from tile IR by the interpreter with every
/// memory access bounds-checked against the live allocations. The same
/// instance for as long as anyone holds it, like a device. `ordinal` only
/// labels DeviceInfo::ordinal. Never throws for lack of a GPU.
std::shared_ptr<Backend> createInterpreterBackend(int ordinal = 0);

using BackendFactory = std::function<std::shared_ptr<Backend>(int ordinal)>;
/// Replaces the backend createBackend() uses when TESSERA_INTERPRET is set
/// (createInterpreterBackend by default; nullptr restores that).
void setInterpreterBackendFactory(BackendFactory factory);

/// True when TESSERA_INTERPRET is set to anything but "", "0", "false", "off" or "no".
bool interpreterRequested();

/// The backend the environment asks for: the interpreter when
/// interpreterRequested() (the registered factory, else
/// createInterpreterBackend), CUDA otherwise.
std::shared_ptr<Backend> createBackend(int ordinal = 0);

} // namespace tessera

#endif
