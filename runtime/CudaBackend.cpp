// The CUDA driver backend.
#include "CudaDriver.h"

#include "tessera/Backend.h"
#include "tessera/Error.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tessera {

namespace {

// The driver API's types and enums (cuda/DriverApi.h).
using namespace cuda;

constexpr size_t kDefaultSharedLimit = 48 * 1024;

CUstream cu(StreamHandle s) { return reinterpret_cast<CUstream>(s); }
CUevent cu(EventHandle e) { return reinterpret_cast<CUevent>(e); }
CUmodule cu(ModuleHandle m) { return reinterpret_cast<CUmodule>(m); }
CUfunction cu(FunctionHandle f) { return reinterpret_cast<CUfunction>(f); }

std::string bytesText(size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(int ordinal) : api_(cuda::driver()) {
    int count = 0;
    api_.check(api_.cuDeviceGetCount(&count), "cuDeviceGetCount failed");
    if (ordinal < 0 || ordinal >= count)
      throw Error("CUDA device " + std::to_string(ordinal) + " does not exist (found " +
                  std::to_string(count) + (count == 1 ? " device)" : " devices)"));
    api_.check(api_.cuDeviceGet(&device_, ordinal), "cuDeviceGet failed");
    api_.check(api_.cuDevicePrimaryCtxRetain(&context_, device_),
               "cuDevicePrimaryCtxRetain failed for device " + std::to_string(ordinal));
    try {
      info_.ordinal = ordinal;
      info_.driverVersion = api_.driverVersion;
      char name[256] = {};
      api_.check(api_.cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName failed");
      info_.name = name;
      info_.computeCapabilityMajor =
          attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
      info_.computeCapabilityMinor =
          attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
      info_.smCount = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
      info_.maxSharedMemoryPerBlock = static_cast<size_t>(
          attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block"));
      info_.maxSharedMemoryPerBlockOptin = static_cast<size_t>(attribute(
          CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory"));
      size_t total = 0;
      api_.check(api_.cuDeviceTotalMem(&total, device_), "cuDeviceTotalMem failed");
      info_.totalMemoryBytes = total;
    } catch (...) {
      api_.cuDevicePrimaryCtxRelease(device_);
      throw;
    }
  }

  ~CudaBackend() override { api_.cuDevicePrimaryCtxRelease(device_); }

  BackendKind kind() const override { return BackendKind::Cuda; }
  const DeviceInfo &deviceInfo() const override { return info_; }

  DeviceAddress alloc(size_t bytes) override {
    if (bytes == 0)
      return 0;
    makeCurrent();
    CUdeviceptr p = 0;
    api_.check(api_.cuMemAlloc(&p, bytes), "cuMemAlloc of " + bytesText(bytes) + " failed");
    return static_cast<DeviceAddress>(p);
  }
  void free(DeviceAddress address) noexcept override {
    if (address == 0)
      return;
    if (setCurrentNoThrow())
      api_.cuMemFree(static_cast<CUdeviceptr>(address));
  }
  void copyHostToDevice(DeviceAddress dst, const void *src, size_t bytes,
                        StreamHandle stream) override {
    if (bytes == 0)
      return;
    makeCurrent();
    CUresult r = stream ? api_.cuMemcpyHtoDAsync(dst, src, bytes, cu(stream))
                        : api_.cuMemcpyHtoD(dst, src, bytes);
    api_.check(r, "copy of " + bytesText(bytes) + " from host to device failed");
  }
  void copyDeviceToHost(void *dst, DeviceAddress src, size_t bytes,
                        StreamHandle stream) override {
    if (bytes == 0)
      return;
    makeCurrent();
    CUresult r = stream ? api_.cuMemcpyDtoHAsync(dst, src, bytes, cu(stream))
                        : api_.cuMemcpyDtoH(dst, src, bytes);
    api_.check(r, "copy of " + bytesText(bytes) + " from device to host failed");
  }
  void copyDeviceToDevice(DeviceAddress dst, DeviceAddress src, size_t bytes,
                          StreamHandle stream) override {
    if (bytes == 0)
      return;
    makeCurrent();
    CUresult r = stream ? api_.cuMemcpyDtoDAsync(dst, src, bytes, cu(stream))
                        : api_.cuMemcpyDtoD(dst, src, bytes);
    api_.check(r, "copy of " + bytesText(bytes) + " from device to device failed");
  }
  void memset8(DeviceAddress dst, uint8_t value, size_t count, StreamHandle stream) override {
    if (count == 0)
      return;
    makeCurrent();
    CUresult r = stream ? api_.cuMemsetD8Async(dst, value, count, cu(stream))
                        : api_.cuMemsetD8(dst, value, count);
    api_.check(r, "memset of " + bytesText(count) + " failed");
  }
  void memset32(DeviceAddress dst, uint32_t value, size_t count, StreamHandle stream) override {
    if (count == 0)
      return;
    makeCurrent();
    CUresult r = stream ? api_.cuMemsetD32Async(dst, value, count, cu(stream))
                        : api_.cuMemsetD32(dst, value, count);
    api_.check(r, "memset of " + std::to_string(count) + " 32-bit words failed");
  }

  StreamHandle createStream() override {
    makeCurrent();
    CUstream s = nullptr;
    api_.check(api_.cuStreamCreate(&s, CU_STREAM_DEFAULT), "cuStreamCreate failed");
    return reinterpret_cast<StreamHandle>(s);
  }
  void destroyStream(StreamHandle stream) noexcept override {
    if (stream && setCurrentNoThrow())
      api_.cuStreamDestroy(cu(stream));
  }
  void synchronizeStream(StreamHandle stream) override {
    makeCurrent();
    api_.check(api_.cuStreamSynchronize(cu(stream)), "cuStreamSynchronize failed");
  }
  void synchronize() override {
    makeCurrent();
    api_.check(api_.cuCtxSynchronize(), "cuCtxSynchronize failed");
  }
  EventHandle createEvent() override {
    makeCurrent();
    CUevent e = nullptr;
    api_.check(api_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate failed");
    return reinterpret_cast<EventHandle>(e);
  }
  void destroyEvent(EventHandle event) noexcept override {
    if (event && setCurrentNoThrow())
      api_.cuEventDestroy(cu(event));
  }
  void recordEvent(EventHandle event, StreamHandle stream) override {
    makeCurrent();
    api_.check(api_.cuEventRecord(cu(event), cu(stream)), "cuEventRecord failed");
  }
  void synchronizeEvent(EventHandle event) override {
    makeCurrent();
    api_.check(api_.cuEventSynchronize(cu(event)), "cuEventSynchronize failed");
  }
  float elapsedMilliseconds(EventHandle start, EventHandle end) override {
    makeCurrent();
    float ms = 0;
    api_.check(api_.cuEventElapsedTime(&ms, cu(start), cu(end)), "cuEventElapsedTime failed");
    return ms;
  }

  ModuleHandle loadModule(const ModuleImage &image, std::string *infoLog) override {
    if (image.format == ModuleFormat::TileIR)
      throw Error("the CUDA backend cannot load a tile IR module; compile it to PTX or cubin");
    if (image.data.empty())
      throw Error("cannot load an empty module image");
    makeCurrent();
    std::vector<char> info(64 * 1024, '\0'), errors(64 * 1024, '\0');
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_LOG_VERBOSE};
    void *values[] = {info.data(), reinterpret_cast<void *>(uintptr_t(info.size() - 1)),
                      errors.data(), reinterpret_cast<void *>(uintptr_t(errors.size() - 1)),
                      reinterpret_cast<void *>(uintptr_t(1))};
    CUmodule module = nullptr;
    // std::string keeps a NUL after data(), which PTX images need.
    CUresult r = api_.cuModuleLoadDataEx(&module, image.data.c_str(),
                                         sizeof options / sizeof options[0], options, values);
    std::string infoText(info.data(), strnlen(info.data(), info.size()));
    if (infoLog)
      *infoLog = infoText;
    if (r != CUDA_SUCCESS) {
      std::string log(errors.data(), strnlen(errors.data(), errors.size()));
      if (log.empty())
        log = infoText;
      throw Error(std::string("cuModuleLoadDataEx failed to load ") +
                      (image.format == ModuleFormat::Ptx ? "PTX" : "cubin") + " for " +
                      info_.target(),
                  static_cast<int>(r), api_.errorName(r), api_.errorString(r), log);
    }
    return reinterpret_cast<ModuleHandle>(module);
  }
  void unloadModule(ModuleHandle module) noexcept override {
    if (module && setCurrentNoThrow())
      api_.cuModuleUnload(cu(module));
    // A later module's functions may reuse an unloaded function's handle value:
    // forget every opt-in rather than skip one that a new function needs.
    std::lock_guard<std::mutex> lock(sharedMutex_);
    optedIn_.clear();
  }
  FunctionHandle getFunction(ModuleHandle module, const std::string &name) override {
    makeCurrent();
    CUfunction f = nullptr;
    api_.check(api_.cuModuleGetFunction(&f, cu(module), name.c_str()),
               "kernel '" + name + "' not found in module (cuModuleGetFunction)");
    return reinterpret_cast<FunctionHandle>(f);
  }
  FunctionAttributes functionAttributes(FunctionHandle function) override {
    makeCurrent();
    auto get = [&](CUfunction_attribute a) {
      int v = 0;
      api_.check(api_.cuFuncGetAttribute(&v, a, cu(function)), "cuFuncGetAttribute failed");
      return v;
    };
    FunctionAttributes fa;
    fa.numRegisters = get(CU_FUNC_ATTRIBUTE_NUM_REGS);
    fa.localBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
    fa.staticSharedBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    fa.constBytes = static_cast<size_t>(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
    fa.maxThreadsPerBlock = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    fa.ptxVersion = get(CU_FUNC_ATTRIBUTE_PTX_VERSION);
    fa.binaryVersion = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
    return fa;
  }
  void setMaxDynamicSharedMemory(FunctionHandle function, size_t bytes) override {
    setMaxDynamicShared(cu(function), bytes, "kernel");
  }
  void launch(FunctionHandle function, const std::string &name, Grid grid, Block block,
              size_t dynamicSharedBytes, StreamHandle stream,
              const std::vector<ArgValue> &args,
              const std::vector<TensorMapSpec> &tensorMaps, const LaunchOptions &options) override {
    makeCurrent();
    CUfunction f = cu(function);
    if (dynamicSharedBytes > kDefaultSharedLimit)
      setMaxDynamicShared(f, dynamicSharedBytes, "kernel '" + name + "'");
    std::vector<void *> params = kernelParamPointers(args);
    // The tensor maps follow the arguments, each a 64-byte aligned parameter.
    std::vector<CUtensorMap> maps(tensorMaps.size());
    for (size_t i = 0; i < tensorMaps.size(); ++i) {
      encodeTensorMap(tensorMaps[i], args, name, i, maps[i]);
      params.push_back(&maps[i]);
    }
    void **kernelParams = params.empty() ? nullptr : params.data();
    CUresult r;
    if (options.overlapPrevious && info_.computeCapabilityMajor >= 9) {
      // Programmatic dependent launch: the attribute lets this grid start
      // before the previous kernel on the stream ends; the kernel's
      // griddepcontrol.wait orders what must come after.
      cuda::CUlaunchAttribute overlap{};
      overlap.id = cuda::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      overlap.value.programmaticStreamSerializationAllowed = 1;
      cuda::CUlaunchConfig config{grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                  static_cast<unsigned>(dynamicSharedBytes), cu(stream), &overlap, 1};
      r = api_.cuLaunchKernelEx(&config, f, kernelParams, nullptr);
    } else {
      r = api_.cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                              static_cast<unsigned>(dynamicSharedBytes), cu(stream), kernelParams, nullptr);
    }
    if (r != CUDA_SUCCESS)
      api_.check(r, "launch of kernel '" + name + "' failed (grid " + std::to_string(grid.x) +
                        "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) +
                        ", block " + std::to_string(block.x) + "x" + std::to_string(block.y) +
                        "x" + std::to_string(block.z) + ", " + bytesText(dynamicSharedBytes) +
                        " of dynamic shared memory)");
  }

private:
  /// Builds tensor map `index` of kernel `name` from the launch's arguments.
  void encodeTensorMap(const TensorMapSpec &spec, const std::vector<ArgValue> &args,
                       const std::string &name, size_t index, CUtensorMap &out) {
    std::string what = "kernel '" + name + "': TMA tensor map " + std::to_string(index);
    auto integer = [&](int i) -> int64_t {
      if (i < 0 || size_t(i) >= args.size() || args[size_t(i)].isPointer)
        throw Error(what + " refers to argument " + std::to_string(i) +
                    ", which is not an integer argument");
      const ArgValue &a = args[size_t(i)];
      switch (a.type.scalar) {
      case ScalarType::i64: return a.as<int64_t>();
      case ScalarType::i32: return a.as<int32_t>();
      case ScalarType::i16: return a.as<int16_t>();
      case ScalarType::i8: return a.as<int8_t>();
      case ScalarType::u16: return a.as<uint16_t>();
      case ScalarType::u32: return a.as<uint32_t>();
      case ScalarType::u8:
      case ScalarType::i1: return a.as<uint8_t>();
      default:
        throw Error(what + " refers to argument " + std::to_string(i) + ", which is " + a.str());
      }
    };
    auto eval = [&](const TensorMapSpec::Form &f) {
      int64_t v = f.c;
      for (auto [i, k] : f.terms)
        v += k * integer(i);
      return v;
    };
    if (spec.pointerArg < 0 || size_t(spec.pointerArg) >= args.size() ||
        !args[size_t(spec.pointerArg)].isPointer)
      throw Error(what + ": argument " + std::to_string(spec.pointerArg) + " is not a pointer");
    DeviceAddress base = args[size_t(spec.pointerArg)].address();
    // Along dimensions no mask bounds, the compiler proved the copies'
    // coordinates not negative for arguments that are not (a negative one
    // would read zeros where the kernel as written reads memory).
    for (int i : spec.nonNegativeArgs)
      if (integer(i) < 0)
        throw Error(what + ": argument " + std::to_string(i) + " is " + std::to_string(integer(i)) +
                    "; the kernel's TMA copies assume it is not negative (they read along a "
                    "dimension that no mask bounds). Compile with --no-tma (tma=False) to read "
                    "memory as the kernel is written");
    // An extent below 1 means the kernel reads nothing through this map
    // (an empty loop); the map itself still needs one.
    int64_t cols = std::max<int64_t>(1, eval(spec.cols)), rows = std::max<int64_t>(1, eval(spec.rows));
    int64_t pitch = eval(spec.rowStride) * spec.elementBytes;
    if (base % 16)
      throw Error(what + ": the address passed as argument " + std::to_string(spec.pointerArg) +
                  " is not 16-byte aligned, which TMA needs");
    auto checkStride = [&](int64_t bytes, const std::string &which) {
      if (bytes <= 0 || bytes % 16 || bytes >= (int64_t(1) << 40))
        throw Error(what + ": " + which + " of " + std::to_string(bytes) +
                    " bytes; TMA needs a positive multiple of 16 below 2^40");
    };
    checkStride(pitch, "a row pitch");
    // Outer dimensions (at most three: TMA's rank is five at most).
    if (spec.outer.size() > TensorMapSpec::kMaxOuter)
      throw Error(what + ": " + std::to_string(spec.outer.size()) +
                  " outer dimensions; TMA has room for three past the rows");
    const cuuint32_t rank = cuuint32_t(2 + spec.outer.size());
    cuuint64_t dims[5] = {cuuint64_t(cols), cuuint64_t(rows)};
    cuuint64_t strides[4] = {cuuint64_t(pitch)};
    for (size_t d = 0; d < spec.outer.size(); ++d) {
      int64_t extent = std::max<int64_t>(1, eval(spec.outer[d].extent));
      int64_t stride = eval(spec.outer[d].stride) * spec.elementBytes;
      checkStride(stride, "the stride of dimension " + std::to_string(d + 2));
      dims[d + 2] = cuuint64_t(extent);
      strides[d + 1] = cuuint64_t(stride);
    }
    cuuint32_t box[5] = {cuuint32_t(spec.boxCols), cuuint32_t(spec.boxRows), 1, 1, 1};
    cuuint32_t elementStrides[5] = {1, 1, 1, 1, 1};
    CUtensorMapSwizzle swizzle = spec.swizzleBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                 : spec.swizzleBytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                 : spec.swizzleBytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                           : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUresult r = api_.cuTensorMapEncodeTiled(
        &out, CUtensorMapDataType(spec.dataType), rank, reinterpret_cast<void *>(base), dims,
        strides, box, elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
      std::string shape = std::to_string(cols) + " x " + std::to_string(rows);
      for (size_t d = 2; d < rank; ++d)
        shape += " x " + std::to_string(dims[d]);
      api_.check(r, what + ": cuTensorMapEncodeTiled failed (" + shape + " elements, pitch " +
                        std::to_string(pitch) + " bytes, box " + std::to_string(spec.boxCols) +
                        " x " + std::to_string(spec.boxRows) + ")");
    }
  }

  int attribute(CUdevice_attribute a, const char *what) {
    int v = 0;
    api_.check(api_.cuDeviceGetAttribute(&v, a, device_),
               std::string("cuDeviceGetAttribute (") + what + ") failed");
    return v;
  }

  void makeCurrent() {
    CUcontext current = nullptr;
    CUresult r = api_.cuCtxGetCurrent(&current);
    if (r == CUDA_SUCCESS && current == context_)
      return;
    api_.check(api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent failed");
  }
  bool setCurrentNoThrow() noexcept {
    CUcontext current = nullptr;
    if (api_.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_)
      return true;
    return api_.cuCtxSetCurrent(context_) == CUDA_SUCCESS;
  }

  void setMaxDynamicShared(CUfunction f, size_t bytes, const std::string &what) {
    std::lock_guard<std::mutex> lock(sharedMutex_);
    size_t &current = optedIn_[f];
    if (bytes <= current)
      return;
    if (bytes > info_.maxSharedMemoryPerBlockOptin)
      throw Error(what + " requests " + bytesText(bytes) +
                  " of dynamic shared memory, but " + info_.name + " allows at most " +
                  bytesText(info_.maxSharedMemoryPerBlockOptin) + " per block");
    makeCurrent();
    api_.check(api_.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       static_cast<int>(bytes)),
               "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = " + std::to_string(bytes) +
                   ") failed for " + what);
    current = bytes;
  }

  const cuda::DriverApi &api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  DeviceInfo info_;
  std::mutex sharedMutex_;
  std::unordered_map<CUfunction, size_t> optedIn_;
};

} // namespace

std::shared_ptr<Backend> createCudaBackend(int ordinal) {
  // One backend per device (and driver library) while any user holds it, so
  // that all Contexts of a device share streams, memory and kernels, as they
  // share the device's primary context.
  static std::mutex mutex;
  static auto *live = new std::map<std::pair<std::string, int>, std::weak_ptr<Backend>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(cuda::driverLibraryPath(), ordinal);
  if (auto existing = (*live)[key].lock())
    return existing;
  auto backend = std::make_shared<CudaBackend>(ordinal);
  (*live)[key] = backend;
  return backend;
}

} // namespace tessera
