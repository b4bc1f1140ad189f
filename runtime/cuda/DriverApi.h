// Private: the part of the CUDA Driver API that the runtime uses, declared
// here so that Tessera builds without a CUDA toolkit (no <cuda.h>).
//
// These are our own declarations of the subset we call, nothing more: the
// function signatures, type sizes, struct layouts and enum values are ABI facts
// of the CUDA Driver API (as of CUDA 12.0, the version whose entry points
// CudaDriver.cpp asks cuGetProcAddress for). Names follow cuda.h so the code
// reads like the driver's documentation, but everything lives in namespace
// tessera::cuda, so this header and <cuda.h> can be included together.
// tests/unit/test_driver_api.cpp checks every declaration here against cuda.h
// when the toolkit is present at build time.
//
// To use another driver function or value: add it here, with the value or
// signature copied from the Driver API documentation, and add its check to
// tests/unit/test_driver_api.cpp.
#ifndef TESSERA_RUNTIME_CUDA_DRIVERAPI_H
#define TESSERA_RUNTIME_CUDA_DRIVERAPI_H

#include <cstddef>
#include <cstdint>

namespace tessera {
namespace cuda {

// --- Scalar and handle types ------------------------------------------------

using cuuint32_t = std::uint32_t;
using cuuint64_t = std::uint64_t;

/// A device address (64 bits on every platform Tessera supports).
using CUdeviceptr = unsigned long long;
/// A device ordinal as the driver numbers it.
using CUdevice = int;

// Opaque handles: pointers to driver-owned structs that are never defined.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;

// The enums below are unscoped with an explicit `unsigned int` underlying type:
// the type a C compiler gives cuda.h's enums (all their values are
// non-negative), so arguments and results pass exactly as the driver expects,
// and any value the driver returns (not only the ones named here) is valid.

// --- Results ----------------------------------------------------------------

enum CUresult : unsigned int {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_NOT_FOUND = 500,
};

// --- Flags and attributes ----------------------------------------------------

enum CUstream_flags : unsigned int {
  CU_STREAM_DEFAULT = 0x0,
};

enum CUevent_flags : unsigned int {
  CU_EVENT_DEFAULT = 0x0,
};

enum CUdevice_attribute : unsigned int {
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

enum CUfunction_attribute : unsigned int {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

enum CUjit_option : unsigned int {
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_LOG_VERBOSE = 12,
};

// --- cuGetProcAddress ---------------------------------------------------------

enum CUdriverProcAddress_flags : unsigned int {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
};

enum CUdriverProcAddressQueryResult : unsigned int {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

// --- Tensor maps (TMA) ---------------------------------------------------------

/// An encoded tensor map: 128 opaque bytes. The driver needs 64-byte
/// alignment; CUDA 12's cuda.h declares alignas(64), CUDA 13's alignas(128).
/// We take the stricter one, which satisfies both.
struct alignas(128) CUtensorMap {
  cuuint64_t opaque[16];
};

/// Only the element types the compiler emits (tessera::TensorMapSpec::dataType
/// holds one of these values; see compiler/lowering/TmaCopies.cpp).
enum CUtensorMapDataType : unsigned int {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
};

enum CUtensorMapInterleave : unsigned int {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
};

enum CUtensorMapSwizzle : unsigned int {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B = 1,
  CU_TENSOR_MAP_SWIZZLE_64B = 2,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
};

enum CUtensorMapL2promotion : unsigned int {
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
};

enum CUtensorMapFloatOOBfill : unsigned int {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
};

// --- Entry points ---------------------------------------------------------------
// One pointer type per function we resolve, with the signature of the version
// that cuGetProcAddress returns for CUDA 12.0 (e.g. "cuMemAlloc" is the _v2
// entry point with a 64-bit CUdeviceptr). The driver's functions use the
// platform's C calling convention (CUDAAPI is empty on Linux).

using PFN_cuGetProcAddress_v2 = CUresult (*)(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult *symbolStatus);
/// The 4-argument cuGetProcAddress of CUDA 11.3-11.8 drivers.
using PFN_cuGetProcAddress_v1 = CUresult (*)(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags);

using PFN_cuInit = CUresult (*)(unsigned int flags);
using PFN_cuDriverGetVersion = CUresult (*)(int *driverVersion);
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char **pStr);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char **pStr);

using PFN_cuDeviceGetCount = CUresult (*)(int *count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice *device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char *name, int len, CUdevice dev);
using PFN_cuDeviceGetAttribute = CUresult (*)(int *pi, CUdevice_attribute attrib, CUdevice dev);
using PFN_cuDeviceTotalMem = CUresult (*)(size_t *bytes, CUdevice dev);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext *pctx, CUdevice dev);
using PFN_cuDevicePrimaryCtxRelease = CUresult (*)(CUdevice dev);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuCtxGetCurrent = CUresult (*)(CUcontext *pctx);
using PFN_cuCtxSynchronize = CUresult (*)();

using PFN_cuMemAlloc = CUresult (*)(CUdeviceptr *dptr, size_t bytesize);
using PFN_cuMemFree = CUresult (*)(CUdeviceptr dptr);
using PFN_cuMemcpyHtoD = CUresult (*)(CUdeviceptr dstDevice, const void *srcHost,
                                      size_t ByteCount);
using PFN_cuMemcpyDtoH = CUresult (*)(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
using PFN_cuMemcpyDtoD = CUresult (*)(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount);
using PFN_cuMemcpyHtoDAsync = CUresult (*)(CUdeviceptr dstDevice, const void *srcHost,
                                           size_t ByteCount, CUstream hStream);
using PFN_cuMemcpyDtoHAsync = CUresult (*)(void *dstHost, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream);
using PFN_cuMemcpyDtoDAsync = CUresult (*)(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream);
using PFN_cuMemsetD8 = CUresult (*)(CUdeviceptr dstDevice, unsigned char uc, size_t N);
using PFN_cuMemsetD32 = CUresult (*)(CUdeviceptr dstDevice, unsigned int ui, size_t N);
using PFN_cuMemsetD8Async = CUresult (*)(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                         CUstream hStream);
using PFN_cuMemsetD32Async = CUresult (*)(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                          CUstream hStream);

using PFN_cuStreamCreate = CUresult (*)(CUstream *phStream, unsigned int Flags);
using PFN_cuStreamDestroy = CUresult (*)(CUstream hStream);
using PFN_cuStreamSynchronize = CUresult (*)(CUstream hStream);
using PFN_cuEventCreate = CUresult (*)(CUevent *phEvent, unsigned int Flags);
using PFN_cuEventDestroy = CUresult (*)(CUevent hEvent);
using PFN_cuEventRecord = CUresult (*)(CUevent hEvent, CUstream hStream);
using PFN_cuEventSynchronize = CUresult (*)(CUevent hEvent);
using PFN_cuEventElapsedTime = CUresult (*)(float *pMilliseconds, CUevent hStart, CUevent hEnd);

using PFN_cuModuleLoadDataEx = CUresult (*)(CUmodule *module, const void *image,
                                            unsigned int numOptions, CUjit_option *options,
                                            void **optionValues);
using PFN_cuModuleUnload = CUresult (*)(CUmodule hmod);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction *hfunc, CUmodule hmod, const char *name);
using PFN_cuFuncGetAttribute = CUresult (*)(int *pi, CUfunction_attribute attrib,
                                            CUfunction hfunc);
using PFN_cuFuncSetAttribute = CUresult (*)(CUfunction hfunc, CUfunction_attribute attrib,
                                            int value);
using PFN_cuLaunchKernel = CUresult (*)(CUfunction f, unsigned int gridDimX,
                                        unsigned int gridDimY, unsigned int gridDimZ,
                                        unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes,
                                        CUstream hStream, void **kernelParams, void **extra);
// cuLaunchKernelEx's launch configuration, for the one attribute Tessera
// sets: programmatic stream serialization (CUDA's programmatic dependent
// launch, sm_90). The attribute's value is a 64-byte union; an id of 4 bytes
// is padded to 8 before it.
enum CUlaunchAttributeID : int {
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
};
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[4];
  union {
    char bytes[64];
    unsigned int programmaticStreamSerializationAllowed;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes in the driver's ABI");
struct CUlaunchConfig {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
};
using PFN_cuLaunchKernelEx = CUresult (*)(const CUlaunchConfig *config, CUfunction f,
                                          void **kernelParams, void **extra);
using PFN_cuTensorMapEncodeTiled = CUresult (*)(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides,
    const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill);

} // namespace cuda
} // namespace tessera

#endif
