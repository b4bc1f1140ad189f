// The CPU interpreter backend: a Backend whose "device" is the host.
//
//   - Memory is host memory (aligned_alloc, 256-byte aligned like cuMemAlloc).
//     Every live allocation is kept in a registry with its exact size, and the
//     registry is handed to the interpreter on every launch
//     (InterpOptions::buffers), so an access outside every allocation stops
//     the launch with a report naming the .tile line.
//   - Copies and memsets are memcpy/memset; streams and events are
//     synchronous (an event records a host timestamp).
//   - Modules are tile IR text (ModuleFormat::TileIR); getFunction prepares
//     the named kernel for the interpreter once per module and name.
//   - launch runs the whole grid before returning; a report from the
//     interpreter becomes a tessera::Error carrying it.
//
// The interpreter itself is built without exceptions and with MLIR; this
// file only uses its MLIR-free header.
#include "tessera/Backend.h"
#include "tessera/Error.h"

#include "tessera/Interpreter.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tessera {

namespace {

constexpr size_t kAlignment = 256;

std::string bytesText(size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

std::string hexAddress(DeviceAddress a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

// The objects behind the opaque handles.
struct HostStream {
  int unused = 0; // distinct, non-null handles
};
struct HostEvent {
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
};
struct HostFunction {
  std::string name;
  std::shared_ptr<InterpProgram> program;
};
struct HostModule {
  std::string tileIR;
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<HostFunction>> functions; // prepared on first use
};

HostStream *host(StreamHandle s) { return reinterpret_cast<HostStream *>(s); }
HostEvent *host(EventHandle e) { return reinterpret_cast<HostEvent *>(e); }
HostModule *host(ModuleHandle m) { return reinterpret_cast<HostModule *>(m); }
HostFunction *host(FunctionHandle f) { return reinterpret_cast<HostFunction *>(f); }

size_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && pageSize > 0 ? size_t(pages) * size_t(pageSize) : 0;
}

// The interpreter's report, for a runtime user: the buffers it names are the
// backend's live allocations, not an InterpOptions list the user never saw.
std::string userReport(std::string report) {
  const std::string tag = " (InterpOptions::buffers[";
  for (size_t at = report.find(tag); at != std::string::npos; at = report.find(tag, at)) {
    size_t close = report.find("])", at + tag.size());
    if (close == std::string::npos)
      break;
    report.erase(at, close + 2 - at);
  }
  while (!report.empty() && report.back() == '\n')
    report.pop_back();
  return report;
}

class InterpreterBackend final : public Backend {
public:
  explicit InterpreterBackend(int ordinal) {
    info_.ordinal = ordinal;
    info_.name = "Tessera CPU interpreter";
    info_.targetName = "interp";
    unsigned hw = std::thread::hardware_concurrency();
    info_.smCount = hw ? int(hw) : 1; // worker threads, the interpreter's "multiprocessors"
    // The interpreter has no shared memory; these are informational and
    // mirror an H100 so that code printing or comparing them behaves.
    info_.maxSharedMemoryPerBlock = 48 * 1024;
    info_.maxSharedMemoryPerBlockOptin = 227 * 1024;
    info_.totalMemoryBytes = physicalMemory();
  }

  ~InterpreterBackend() override {
    // Memory still registered belongs to buffers that outlived every holder
    // of the backend, which cannot happen through the public API (buffers
    // hold the backend); free it anyway.
    for (auto &[address, bytes] : live_)
      std::free(reinterpret_cast<void *>(address));
  }

  BackendKind kind() const override { return BackendKind::Interpreter; }
  const DeviceInfo &deviceInfo() const override { return info_; }

  // ---- memory ------------------------------------------------------------

  DeviceAddress alloc(size_t bytes) override {
    if (bytes == 0)
      return 0;
    if (bytes > SIZE_MAX - kAlignment)
      throw Error("interpreter: allocation of " + bytesText(bytes) + " is too large");
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void *p = std::aligned_alloc(kAlignment, rounded);
    if (!p)
      throw Error("interpreter: out of host memory allocating " + bytesText(bytes));
    auto address = static_cast<DeviceAddress>(reinterpret_cast<uintptr_t>(p));
    std::lock_guard<std::mutex> lock(memoryMutex_);
    live_[address] = bytes; // the exact size, so that an off-by-one is caught
    return address;
  }

  void free(DeviceAddress address) noexcept override {
    if (address == 0)
      return;
    {
      std::lock_guard<std::mutex> lock(memoryMutex_);
      auto it = live_.find(address);
      if (it == live_.end())
        return; // not ours, or already freed: never hand it to std::free
      live_.erase(it);
    }
    std::free(reinterpret_cast<void *>(address));
  }

  void copyHostToDevice(DeviceAddress dst, const void *src, size_t bytes, StreamHandle) override {
    if (bytes == 0)
      return;
    checkRange(dst, bytes, "copy from host to device");
    std::memcpy(pointer(dst), src, bytes);
  }
  void copyDeviceToHost(void *dst, DeviceAddress src, size_t bytes, StreamHandle) override {
    if (bytes == 0)
      return;
    checkRange(src, bytes, "copy from device to host");
    std::memcpy(dst, pointer(src), bytes);
  }
  void copyDeviceToDevice(DeviceAddress dst, DeviceAddress src, size_t bytes,
                          StreamHandle) override {
    if (bytes == 0)
      return;
    checkRange(src, bytes, "copy from device to device (source)");
    checkRange(dst, bytes, "copy from device to device (destination)");
    std::memmove(pointer(dst), pointer(src), bytes);
  }
  void memset8(DeviceAddress dst, uint8_t value, size_t count, StreamHandle) override {
    if (count == 0)
      return;
    checkRange(dst, count, "memset");
    std::memset(pointer(dst), value, count);
  }
  void memset32(DeviceAddress dst, uint32_t value, size_t count, StreamHandle) override {
    if (count == 0)
      return;
    if (count > SIZE_MAX / 4)
      throw Error("interpreter: memset of " + std::to_string(count) + " 32-bit words is too large");
    checkRange(dst, count * 4, "memset");
    unsigned char *p = static_cast<unsigned char *>(pointer(dst));
    for (size_t i = 0; i < count; ++i)
      std::memcpy(p + 4 * i, &value, 4);
  }

  // ---- streams and events: everything has finished when the call returns ----

  StreamHandle createStream() override { return reinterpret_cast<StreamHandle>(new HostStream); }
  void destroyStream(StreamHandle stream) noexcept override { delete host(stream); }
  void synchronizeStream(StreamHandle) override {}
  void synchronize() override {}
  EventHandle createEvent() override { return reinterpret_cast<EventHandle>(new HostEvent); }
  void destroyEvent(EventHandle event) noexcept override { delete host(event); }
  void recordEvent(EventHandle event, StreamHandle) override {
    HostEvent *e = requireEvent(event, "record");
    e->time = std::chrono::steady_clock::now();
    e->recorded = true;
  }
  void synchronizeEvent(EventHandle event) override { requireEvent(event, "synchronize"); }
  float elapsedMilliseconds(EventHandle start, EventHandle end) override {
    HostEvent *s = requireEvent(start, "time"), *e = requireEvent(end, "time");
    if (!s->recorded || !e->recorded)
      throw Error("interpreter: elapsed time between events that were not both recorded");
    return std::chrono::duration<float, std::milli>(e->time - s->time).count();
  }

  // ---- modules and kernels ------------------------------------------------

  ModuleHandle loadModule(const ModuleImage &image, std::string *infoLog) override {
    if (image.format != ModuleFormat::TileIR)
      throw Error("the interpreter runs tile IR; PTX and cubin modules need a GPU");
    if (image.data.empty())
      throw Error("cannot load an empty module image");
    if (infoLog)
      infoLog->clear();
    auto m = std::make_unique<HostModule>();
    m->tileIR = image.data;
    return reinterpret_cast<ModuleHandle>(m.release());
  }
  void unloadModule(ModuleHandle module) noexcept override { delete host(module); }

  FunctionHandle getFunction(ModuleHandle module, const std::string &name) override {
    HostModule *m = host(module);
    if (!m)
      throw Error("interpreter: getFunction on a null module");
    if (name.empty())
      throw Error("interpreter: getFunction needs a kernel name");
    std::lock_guard<std::mutex> lock(m->mutex);
    auto it = m->functions.find(name);
    if (it != m->functions.end())
      return reinterpret_cast<FunctionHandle>(it->second.get());
    std::string diag;
    std::shared_ptr<InterpProgram> program = prepareInterpreterIR(m->tileIR, name, diag);
    if (!program) {
      while (!diag.empty() && diag.back() == '\n')
        diag.pop_back();
      throw Error("kernel '" + name + "' cannot be run by the interpreter: " + diag);
    }
    auto f = std::make_unique<HostFunction>();
    f->name = name;
    f->program = std::move(program);
    HostFunction *raw = f.get();
    m->functions.emplace(name, std::move(f));
    return reinterpret_cast<FunctionHandle>(raw);
  }

  FunctionAttributes functionAttributes(FunctionHandle) override {
    FunctionAttributes fa;
    fa.maxThreadsPerBlock = 1024;
    return fa;
  }
  void setMaxDynamicSharedMemory(FunctionHandle, size_t) override {} // no shared memory

  void launch(FunctionHandle function, const std::string &name, Grid grid, Block,
              size_t /*dynamicSharedBytes*/, StreamHandle,
              const std::vector<ArgValue> &args,
              const std::vector<TensorMapSpec> &tensorMaps, const LaunchOptions &) override {
    // One launch runs to its end before the next: nothing to overlap.
    if (!tensorMaps.empty()) // only GPU lowerings add them
      throw Error("interpreter: kernel '" + name + "' takes TMA tensor maps");
    HostFunction *f = host(function);
    if (!f || !f->program)
      throw Error("interpreter: launch of kernel '" + name + "' with a null function");
    std::vector<InterpArg> iargs;
    iargs.reserve(args.size());
    for (const ArgValue &a : args) {
      InterpArg ia;
      ia.isPointer = a.isPointer;
      if (a.isPointer) {
        ia.bits = a.address();
      } else {
        // Same bytes: the scalar at its natural size, little endian, zero above.
        size_t n = a.size();
        std::memcpy(&ia.bits, a.storage, n < 8 ? n : 8);
      }
      iargs.push_back(ia);
    }
    InterpOptions opts;
    {
      std::lock_guard<std::mutex> lock(memoryMutex_);
      opts.buffers.reserve(live_.size());
      for (const auto &[address, bytes] : live_)
        opts.buffers.emplace_back(uintptr_t(address), bytes);
    }
    std::string report = runInterpreter(*f->program, grid.x, grid.y, grid.z, iargs, opts);
    if (!report.empty())
      throw Error(userReport(std::move(report)));
  }

private:
  static void *pointer(DeviceAddress a) { return reinterpret_cast<void *>(uintptr_t(a)); }

  static HostEvent *requireEvent(EventHandle event, const char *what) {
    if (!event)
      throw Error(std::string("interpreter: cannot ") + what + " a null event");
    return host(event);
  }

  // Throws unless [address, address + bytes) lies inside one live allocation.
  void checkRange(DeviceAddress address, size_t bytes, const char *what) const {
    std::lock_guard<std::mutex> lock(memoryMutex_);
    auto it = live_.upper_bound(address);
    if (it != live_.begin()) {
      --it;
      if (address - it->first <= it->second && bytes <= it->second - (address - it->first))
        return;
    }
    throw Error(std::string("interpreter: ") + what + " of " + bytesText(bytes) + " at " +
                hexAddress(address) + " is outside every live allocation");
  }

  DeviceInfo info_;
  mutable std::mutex memoryMutex_;
  std::map<DeviceAddress, size_t> live_; // start -> exact size in bytes
};

} // namespace

std::shared_ptr<Backend> createInterpreterBackend(int ordinal) {
  // One backend per ordinal while anyone holds it, as with CUDA devices, so
  // that every Context sees (and bounds-checks against) the same memory.
  static std::mutex mutex;
  static auto *live = new std::map<int, std::weak_ptr<Backend>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = (*live)[ordinal].lock())
    return existing;
  auto backend = std::make_shared<InterpreterBackend>(ordinal);
  (*live)[ordinal] = backend;
  return backend;
}

} // namespace tessera
