// Private: the CUDA driver API, loaded at run time with dlopen. Every entry
// point is resolved through cuGetProcAddress with an explicit CUDA version
// (12000), so the ABI each pointer has is the CUDA 12.0 one whatever driver
// is installed. The types, enums and signatures come from cuda/DriverApi.h,
// our own declaration of the subset we use; neither <cuda.h> nor libcuda is
// needed to build.
#ifndef TESSERA_RUNTIME_CUDADRIVER_H
#define TESSERA_RUNTIME_CUDADRIVER_H

#include "cuda/DriverApi.h"

#include <cstddef>
#include <string>

namespace tessera {
namespace cuda {

/// The CUDA version whose entry points we ask for.
constexpr int kApiVersion = 12000;

struct DriverApi {
  std::string path; // what was dlopen'ed
  int driverVersion = 0;

  PFN_cuInit cuInit = nullptr;
  PFN_cuDriverGetVersion cuDriverGetVersion = nullptr;
  PFN_cuGetErrorName cuGetErrorName = nullptr;
  PFN_cuGetErrorString cuGetErrorString = nullptr;

  PFN_cuDeviceGetCount cuDeviceGetCount = nullptr;
  PFN_cuDeviceGet cuDeviceGet = nullptr;
  PFN_cuDeviceGetName cuDeviceGetName = nullptr;
  PFN_cuDeviceGetAttribute cuDeviceGetAttribute = nullptr;
  PFN_cuDeviceTotalMem cuDeviceTotalMem = nullptr;
  PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain = nullptr;
  PFN_cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease = nullptr;
  PFN_cuCtxSetCurrent cuCtxSetCurrent = nullptr;
  PFN_cuCtxGetCurrent cuCtxGetCurrent = nullptr;
  PFN_cuCtxSynchronize cuCtxSynchronize = nullptr;

  PFN_cuMemAlloc cuMemAlloc = nullptr;
  PFN_cuMemFree cuMemFree = nullptr;
  PFN_cuMemcpyHtoD cuMemcpyHtoD = nullptr;
  PFN_cuMemcpyDtoH cuMemcpyDtoH = nullptr;
  PFN_cuMemcpyDtoD cuMemcpyDtoD = nullptr;
  PFN_cuMemcpyHtoDAsync cuMemcpyHtoDAsync = nullptr;
  PFN_cuMemcpyDtoHAsync cuMemcpyDtoHAsync = nullptr;
  PFN_cuMemcpyDtoDAsync cuMemcpyDtoDAsync = nullptr;
  PFN_cuMemsetD8 cuMemsetD8 = nullptr;
  PFN_cuMemsetD32 cuMemsetD32 = nullptr;
  PFN_cuMemsetD8Async cuMemsetD8Async = nullptr;
  PFN_cuMemsetD32Async cuMemsetD32Async = nullptr;

  PFN_cuStreamCreate cuStreamCreate = nullptr;
  PFN_cuStreamDestroy cuStreamDestroy = nullptr;
  PFN_cuStreamSynchronize cuStreamSynchronize = nullptr;
  PFN_cuEventCreate cuEventCreate = nullptr;
  PFN_cuEventDestroy cuEventDestroy = nullptr;
  PFN_cuEventRecord cuEventRecord = nullptr;
  PFN_cuEventSynchronize cuEventSynchronize = nullptr;
  PFN_cuEventElapsedTime cuEventElapsedTime = nullptr;

  PFN_cuModuleLoadDataEx cuModuleLoadDataEx = nullptr;
  PFN_cuModuleUnload cuModuleUnload = nullptr;
  PFN_cuModuleGetFunction cuModuleGetFunction = nullptr;
  PFN_cuFuncGetAttribute cuFuncGetAttribute = nullptr;
  PFN_cuFuncSetAttribute cuFuncSetAttribute = nullptr;
  PFN_cuLaunchKernel cuLaunchKernel = nullptr;
  PFN_cuLaunchKernelEx cuLaunchKernelEx = nullptr;
  PFN_cuTensorMapEncodeTiled cuTensorMapEncodeTiled = nullptr;

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
