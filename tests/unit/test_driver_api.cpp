// runtime/cuda/DriverApi.h (our declaration of the CUDA driver API subset the
// runtime uses) checked against the CUDA toolkit's cuda.h: every enum value,
// the enums' underlying types, the sizes and alignment of the types, and the
// signature of every entry point. Only when cuda.h is available at build time
// (tests/CMakeLists.txt adds the toolkit's include directory when it finds
// one); otherwise the case warns that it was skipped and checks nothing.
#include <catch2/catch.hpp>

// Ours first: cuda.h #defines many entry-point names (cuMemAlloc ->
// cuMemAlloc_v2), which must not rename anything in our header.
#include "cuda/DriverApi.h"

#if __has_include(<cuda.h>)
#include <cuda.h>
#define TESSERA_HAVE_CUDA_H 1
#endif

#ifdef TESSERA_HAVE_CUDA_H

#include <type_traits>

namespace {

namespace ours = tessera::cuda;

// Theirs<T>::type is T with each of our types replaced by cuda.h's, so that an
// entry point's signature can be compared with cuda.h's declaration.
template <class T> struct Theirs { using type = T; };
template <class T> struct Theirs<T *> { using type = typename Theirs<T>::type *; };
template <class T> struct Theirs<const T> { using type = const typename Theirs<T>::type; };
template <class R, class... A> struct Theirs<R(A...)> {
  using type = typename Theirs<R>::type(typename Theirs<A>::type...);
};
#define TESSERA_THEIRS(T)                                                                          \
  template <> struct Theirs<ours::T> { using type = ::T; };
TESSERA_THEIRS(CUresult)
TESSERA_THEIRS(CUstream_flags)
TESSERA_THEIRS(CUevent_flags)
TESSERA_THEIRS(CUdevice_attribute)
TESSERA_THEIRS(CUfunction_attribute)
TESSERA_THEIRS(CUjit_option)
TESSERA_THEIRS(CUdriverProcAddress_flags)
TESSERA_THEIRS(CUdriverProcAddressQueryResult)
TESSERA_THEIRS(CUtensorMap)
TESSERA_THEIRS(CUtensorMapDataType)
TESSERA_THEIRS(CUtensorMapInterleave)
TESSERA_THEIRS(CUtensorMapSwizzle)
TESSERA_THEIRS(CUtensorMapL2promotion)
TESSERA_THEIRS(CUtensorMapFloatOOBfill)
TESSERA_THEIRS(CUctx_st)
TESSERA_THEIRS(CUmod_st)
TESSERA_THEIRS(CUfunc_st)
TESSERA_THEIRS(CUstream_st)
TESSERA_THEIRS(CUevent_st)
#undef TESSERA_THEIRS

template <class Ours, class Theirs> constexpr bool sameEnum() {
  return sizeof(Ours) == sizeof(Theirs) &&
         std::is_same<std::underlying_type_t<Ours>, std::underlying_type_t<Theirs>>::value;
}

// --- Types ---------------------------------------------------------------------
static_assert(std::is_same<ours::cuuint32_t, ::cuuint32_t>::value, "cuuint32_t");
static_assert(std::is_same<ours::cuuint64_t, ::cuuint64_t>::value, "cuuint64_t");
static_assert(std::is_same<ours::CUdeviceptr, ::CUdeviceptr>::value, "CUdeviceptr");
static_assert(std::is_same<ours::CUdevice, ::CUdevice>::value, "CUdevice");
static_assert(std::is_same<Theirs<ours::CUcontext>::type, ::CUcontext>::value, "CUcontext");
static_assert(std::is_same<Theirs<ours::CUmodule>::type, ::CUmodule>::value, "CUmodule");
static_assert(std::is_same<Theirs<ours::CUfunction>::type, ::CUfunction>::value, "CUfunction");
static_assert(std::is_same<Theirs<ours::CUstream>::type, ::CUstream>::value, "CUstream");
static_assert(std::is_same<Theirs<ours::CUevent>::type, ::CUevent>::value, "CUevent");

static_assert(sizeof(ours::CUtensorMap) == sizeof(::CUtensorMap), "CUtensorMap size");
static_assert(sizeof(ours::CUtensorMap) == 128, "CUtensorMap size");
// CUDA 12's cuda.h aligns CUtensorMap to 64 bytes, CUDA 13's to 128; ours is
// 128, a multiple of either.
static_assert(alignof(ours::CUtensorMap) % alignof(::CUtensorMap) == 0, "CUtensorMap alignment");
static_assert(alignof(ours::CUtensorMap) >= 64, "the driver needs 64-byte aligned tensor maps");

static_assert(sameEnum<ours::CUresult, ::CUresult>(), "CUresult");
static_assert(sameEnum<ours::CUstream_flags, ::CUstream_flags>(), "CUstream_flags");
static_assert(sameEnum<ours::CUevent_flags, ::CUevent_flags>(), "CUevent_flags");
static_assert(sameEnum<ours::CUdevice_attribute, ::CUdevice_attribute>(), "CUdevice_attribute");
static_assert(sameEnum<ours::CUfunction_attribute, ::CUfunction_attribute>(),
              "CUfunction_attribute");
static_assert(sameEnum<ours::CUjit_option, ::CUjit_option>(), "CUjit_option");
static_assert(sameEnum<ours::CUdriverProcAddress_flags, ::CUdriverProcAddress_flags>(),
              "CUdriverProcAddress_flags");
static_assert(sameEnum<ours::CUdriverProcAddressQueryResult, ::CUdriverProcAddressQueryResult>(),
              "CUdriverProcAddressQueryResult");
static_assert(sameEnum<ours::CUtensorMapDataType, ::CUtensorMapDataType>(),
              "CUtensorMapDataType");
static_assert(sameEnum<ours::CUtensorMapInterleave, ::CUtensorMapInterleave>(),
              "CUtensorMapInterleave");
static_assert(sameEnum<ours::CUtensorMapSwizzle, ::CUtensorMapSwizzle>(), "CUtensorMapSwizzle");
static_assert(sameEnum<ours::CUtensorMapL2promotion, ::CUtensorMapL2promotion>(),
              "CUtensorMapL2promotion");
static_assert(sameEnum<ours::CUtensorMapFloatOOBfill, ::CUtensorMapFloatOOBfill>(),
              "CUtensorMapFloatOOBfill");

// --- Entry points ----------------------------------------------------------------
// `::fn` goes through cuda.h's macros to the newest entry point of that name
// (cuMemAlloc -> cuMemAlloc_v2); each of the ones below has the signature of
// the CUDA 12.0 version that CudaDriver.cpp asks cuGetProcAddress for. The
// 4-argument cuGetProcAddress (PFN_cuGetProcAddress_v1) is not declared by
// CUDA 12+'s cuda.h and is not checked.
#define TESSERA_SAME_SIGNATURE(fn)                                                                 \
  static_assert(std::is_same<Theirs<std::remove_pointer_t<ours::PFN_##fn>>::type,                 \
                             decltype(::fn)>::value,                                               \
                #fn)
TESSERA_SAME_SIGNATURE(cuGetProcAddress_v2);
TESSERA_SAME_SIGNATURE(cuInit);
TESSERA_SAME_SIGNATURE(cuDriverGetVersion);
TESSERA_SAME_SIGNATURE(cuGetErrorName);
TESSERA_SAME_SIGNATURE(cuGetErrorString);
TESSERA_SAME_SIGNATURE(cuDeviceGetCount);
TESSERA_SAME_SIGNATURE(cuDeviceGet);
TESSERA_SAME_SIGNATURE(cuDeviceGetName);
TESSERA_SAME_SIGNATURE(cuDeviceGetAttribute);
TESSERA_SAME_SIGNATURE(cuDeviceTotalMem);
TESSERA_SAME_SIGNATURE(cuDevicePrimaryCtxRetain);
TESSERA_SAME_SIGNATURE(cuDevicePrimaryCtxRelease);
TESSERA_SAME_SIGNATURE(cuCtxSetCurrent);
TESSERA_SAME_SIGNATURE(cuCtxGetCurrent);
TESSERA_SAME_SIGNATURE(cuCtxSynchronize);
TESSERA_SAME_SIGNATURE(cuMemAlloc);
TESSERA_SAME_SIGNATURE(cuMemFree);
TESSERA_SAME_SIGNATURE(cuMemcpyHtoD);
TESSERA_SAME_SIGNATURE(cuMemcpyDtoH);
TESSERA_SAME_SIGNATURE(cuMemcpyDtoD);
TESSERA_SAME_SIGNATURE(cuMemcpyHtoDAsync);
TESSERA_SAME_SIGNATURE(cuMemcpyDtoHAsync);
TESSERA_SAME_SIGNATURE(cuMemcpyDtoDAsync);
TESSERA_SAME_SIGNATURE(cuMemsetD8);
TESSERA_SAME_SIGNATURE(cuMemsetD32);
TESSERA_SAME_SIGNATURE(cuMemsetD8Async);
TESSERA_SAME_SIGNATURE(cuMemsetD32Async);
TESSERA_SAME_SIGNATURE(cuStreamCreate);
TESSERA_SAME_SIGNATURE(cuStreamDestroy);
TESSERA_SAME_SIGNATURE(cuStreamSynchronize);
TESSERA_SAME_SIGNATURE(cuEventCreate);
TESSERA_SAME_SIGNATURE(cuEventDestroy);
TESSERA_SAME_SIGNATURE(cuEventRecord);
TESSERA_SAME_SIGNATURE(cuEventSynchronize);
TESSERA_SAME_SIGNATURE(cuEventElapsedTime);
TESSERA_SAME_SIGNATURE(cuModuleLoadDataEx);
TESSERA_SAME_SIGNATURE(cuModuleUnload);
TESSERA_SAME_SIGNATURE(cuModuleGetFunction);
TESSERA_SAME_SIGNATURE(cuFuncGetAttribute);
TESSERA_SAME_SIGNATURE(cuFuncSetAttribute);
TESSERA_SAME_SIGNATURE(cuLaunchKernel);
TESSERA_SAME_SIGNATURE(cuTensorMapEncodeTiled);
#undef TESSERA_SAME_SIGNATURE

} // namespace

// The values, at run time so that a mismatch prints both numbers.
#define TESSERA_SAME_VALUE(name)                                                                   \
  CHECK(static_cast<long long>(ours::name) == static_cast<long long>(::name))

TEST_CASE("driver API: our declarations match cuda.h", "[runtime][driver]") {
  INFO("cuda.h CUDA_VERSION " << CUDA_VERSION);
  TESSERA_SAME_VALUE(CUDA_SUCCESS);
  TESSERA_SAME_VALUE(CUDA_ERROR_NO_DEVICE);
  TESSERA_SAME_VALUE(CUDA_ERROR_NOT_FOUND);

  TESSERA_SAME_VALUE(CU_STREAM_DEFAULT);
  TESSERA_SAME_VALUE(CU_EVENT_DEFAULT);

  TESSERA_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  TESSERA_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  TESSERA_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  TESSERA_SAME_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  TESSERA_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);

  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_NUM_REGS);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  TESSERA_SAME_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);

  TESSERA_SAME_VALUE(CU_JIT_INFO_LOG_BUFFER);
  TESSERA_SAME_VALUE(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
  TESSERA_SAME_VALUE(CU_JIT_ERROR_LOG_BUFFER);
  TESSERA_SAME_VALUE(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
  TESSERA_SAME_VALUE(CU_JIT_LOG_VERBOSE);

  TESSERA_SAME_VALUE(CU_GET_PROC_ADDRESS_DEFAULT);
  TESSERA_SAME_VALUE(CU_GET_PROC_ADDRESS_SUCCESS);
  TESSERA_SAME_VALUE(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  TESSERA_SAME_VALUE(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

  TESSERA_SAME_VALUE(CU_TENSOR_MAP_DATA_TYPE_UINT8);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_INTERLEAVE_NONE);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_SWIZZLE_NONE);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_SWIZZLE_32B);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_SWIZZLE_64B);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_SWIZZLE_128B);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  TESSERA_SAME_VALUE(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  CHECK(CU_TENSOR_MAP_NUM_QWORDS * sizeof(::cuuint64_t) == sizeof(ours::CUtensorMap));
}
#undef TESSERA_SAME_VALUE

#else

TEST_CASE("driver API: our declarations match cuda.h", "[runtime][driver]") {
  WARN("driver API check skipped: cuda.h not available at build time (install the CUDA toolkit "
       "and reconfigure to compare runtime/cuda/DriverApi.h with it)");
}

#endif
