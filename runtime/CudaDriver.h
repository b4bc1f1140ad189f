// Private: the CUDA driver API, loaded at run time with dlopen. Every entry
// point is resolved through cuGetProcAddress with an explicit CUDA version
// (12000), so the ABI each pointer has is the CUDA 12.0 one whatever driver
// is installed. <cuda.h> is used only for its types and enums; libcuda is
// never linked.
#ifndef TESSERA_RUNTIME_CUDADRIVER_H
#define TESSERA_RUNTIME_CUDADRIVER_H

#include <cuda.h>

#include <cstddef>
#include <string>

namespace tessera {
namespace cuda {

/// The CUDA version whose entry points we ask for.
constexpr int kApiVersion = 12000;

struct DriverApi {
  std::string path; // what was dlopen'ed
  int driverVersion = 0;

  CUresult (*cuInit)(unsigned int flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int *version) = nullptr;
  CUresult (*cuGetErrorName)(CUresult error, const char **str) = nullptr;
  CUresult (*cuGetErrorString)(CUresult error, const char **str) = nullptr;

  CUresult (*cuDeviceGetCount)(int *count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *pi, CUdevice_attribute attrib, CUdevice dev) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *pctx, CUdevice dev) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuCtxGetCurrent)(CUcontext *pctx) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;

  CUresult (*cuMemAlloc)(CUdeviceptr *dptr, size_t bytesize) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr dptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream) = nullptr;
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t n) = nullptr;
  CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned int value, size_t n) = nullptr;
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t n,
                              CUstream stream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned int value, size_t n,
                               CUstream stream) = nullptr;

  CUresult (*cuStreamCreate)(CUstream *stream, unsigned int flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuEventCreate)(CUevent *event, unsigned int flags) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end) = nullptr;

  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned int numOptions,
                                 CUjit_option *options, void **optionValues) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name) = nullptr;
  CUresult (*cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction fn) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction fn, CUfunction_attribute attrib, int value) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX,
                             unsigned int blockDimY, unsigned int blockDimZ,
                             unsigned int sharedMemBytes, CUstream stream, void **kernelParams,
                             void **extra) = nullptr;
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *tensorMap, CUtensorMapDataType dataType,
                                     cuuint32_t rank, void *globalAddress,
                                     const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
                                     const cuuint32_t *boxDim, const cuuint32_t *elementStrides,
                                     CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                     CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill) = nullptr;

  /// "CUDA_ERROR_INVALID_VALUE" (or "CUresult 123" when the driver does not know it).
  std::string errorName(CUresult r) const;
  /// The driver's description ("invalid argument"), possibly empty.
  std::string errorString(CUresult r) const;
  /// Throws tessera::Error("<what>: <name> (<description>)") unless r == CUDA_SUCCESS.
  void check(CUresult r, const std::string &what) const;
};

/// The library to load: $TESSERA_LIBCUDA if set, else "libcuda.so.1".
std::string driverLibraryPath();

/// Loads the driver (once per library path, thread-safe), resolves every
/// entry point and calls cuInit(0). Throws tessera::Error:
///   no CUDA driver found (libcuda.so.1 could not be loaded: <dlerror>)
///   no CUDA-capable GPU found: CUDA_ERROR_NO_DEVICE (...)
///   the CUDA driver in <path> is too old (...)
const DriverApi &driver();

} // namespace cuda
} // namespace tessera

#endif
