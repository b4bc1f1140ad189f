#include "CudaDriver.h"

#include "tessera/Error.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace tessera {
namespace cuda {

namespace {

// cuGetProcAddress_v2 (CUDA 12.0+) and the older 4-argument cuGetProcAddress.
using GetProcAddressV2 = PFN_cuGetProcAddress_v2;
using GetProcAddressV1 = PFN_cuGetProcAddress_v1;

struct Resolver {
  const std::string &path;
  GetProcAddressV2 v2 = nullptr;
  GetProcAddressV1 v1 = nullptr;

  // Resolves `symbol` as it was in CUDA `kApiVersion`; returns the CUresult.
  CUresult lookup(const char *symbol, void **out) const {
    *out = nullptr;
    CUresult r;
    if (v2) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      r = v2(symbol, out, kApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status);
      if (r == CUDA_SUCCESS && status != CU_GET_PROC_ADDRESS_SUCCESS)
        r = CUDA_ERROR_NOT_FOUND;
    } else {
      r = v1(symbol, out, kApiVersion, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    if (r == CUDA_SUCCESS && *out == nullptr)
      r = CUDA_ERROR_NOT_FOUND;
    return r;
  }

  template <class Fn> void resolve(const DriverApi &api, Fn &fn, const char *symbol) const {
    void *p = nullptr;
    CUresult r = lookup(symbol, &p);
    if (r != CUDA_SUCCESS)
      throw Error("the CUDA driver in " + path + " does not provide " + symbol + " for CUDA " +
                      std::to_string(kApiVersion / 1000) + "." +
                      std::to_string(kApiVersion % 1000 / 10) + " (cuGetProcAddress)",
                  r, api.errorName(r), api.errorString(r));
    fn = reinterpret_cast<Fn>(p);
  }
};

std::unique_ptr<DriverApi> load(const std::string &path) {
  auto api = std::make_unique<DriverApi>();
  api->path = path;

  dlerror();
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    throw Error("no CUDA driver found (" + path + " could not be loaded: " +
                (why ? why : "unknown error") + ")");
  }
  // The handle is never closed: the driver stays loaded for the life of the
  // process, so handles destroyed during exit still find it.

  Resolver res{path};
  res.v2 = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!res.v2)
    res.v1 = reinterpret_cast<GetProcAddressV1>(dlsym(lib, "cuGetProcAddress"));
  if (!res.v2 && !res.v1)
    throw Error("the CUDA driver in " + path +
                " is too old: it has no cuGetProcAddress (Tessera needs a driver for CUDA " +
                "12.0 or newer)");

  // Error reporting first, so later failures have names.
  void *p = nullptr;
  if (res.lookup("cuGetErrorName", &p) == CUDA_SUCCESS)
    api->cuGetErrorName = reinterpret_cast<decltype(api->cuGetErrorName)>(p);
  if (res.lookup("cuGetErrorString", &p) == CUDA_SUCCESS)
    api->cuGetErrorString = reinterpret_cast<decltype(api->cuGetErrorString)>(p);

  res.resolve(*api, api->cuDriverGetVersion, "cuDriverGetVersion");
  res.resolve(*api, api->cuInit, "cuInit");
  int version = 0;
  api->check(api->cuDriverGetVersion(&version), "cuDriverGetVersion failed");
  api->driverVersion = version;
  if (version < kApiVersion)
    throw Error("the CUDA driver in " + path + " is too old: it supports CUDA " +
                std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) +
                ", Tessera needs 12.0 or newer");

  CUresult r = api->cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE)
    throw Error("no CUDA-capable GPU found", r, api->errorName(r), api->errorString(r));
  api->check(r, "cuInit failed");

#define TESSERA_RESOLVE(name) res.resolve(*api, api->name, #name)
  TESSERA_RESOLVE(cuDeviceGetCount);
  TESSERA_RESOLVE(cuDeviceGet);
  TESSERA_RESOLVE(cuDeviceGetName);
  TESSERA_RESOLVE(cuDeviceGetAttribute);
  TESSERA_RESOLVE(cuDeviceTotalMem);
  TESSERA_RESOLVE(cuDevicePrimaryCtxRetain);
  TESSERA_RESOLVE(cuDevicePrimaryCtxRelease);
  TESSERA_RESOLVE(cuCtxSetCurrent);
  TESSERA_RESOLVE(cuCtxGetCurrent);
  TESSERA_RESOLVE(cuCtxSynchronize);
  TESSERA_RESOLVE(cuMemAlloc);
  TESSERA_RESOLVE(cuMemFree);
  TESSERA_RESOLVE(cuMemcpyHtoD);
  TESSERA_RESOLVE(cuMemcpyDtoH);
  TESSERA_RESOLVE(cuMemcpyDtoD);
  TESSERA_RESOLVE(cuMemcpyHtoDAsync);
  TESSERA_RESOLVE(cuMemcpyDtoHAsync);
  TESSERA_RESOLVE(cuMemcpyDtoDAsync);
  TESSERA_RESOLVE(cuMemsetD8);
  TESSERA_RESOLVE(cuMemsetD32);
  TESSERA_RESOLVE(cuMemsetD8Async);
  TESSERA_RESOLVE(cuMemsetD32Async);
  TESSERA_RESOLVE(cuStreamCreate);
  TESSERA_RESOLVE(cuStreamDestroy);
  TESSERA_RESOLVE(cuStreamSynchronize);
  TESSERA_RESOLVE(cuEventCreate);
  TESSERA_RESOLVE(cuEventDestroy);
  TESSERA_RESOLVE(cuEventRecord);
  TESSERA_RESOLVE(cuEventSynchronize);
  TESSERA_RESOLVE(cuEventElapsedTime);
  TESSERA_RESOLVE(cuModuleLoadDataEx);
  TESSERA_RESOLVE(cuModuleUnload);
  TESSERA_RESOLVE(cuModuleGetFunction);
  TESSERA_RESOLVE(cuFuncGetAttribute);
  TESSERA_RESOLVE(cuFuncSetAttribute);
  TESSERA_RESOLVE(cuLaunchKernel);
  TESSERA_RESOLVE(cuLaunchKernelEx);
  TESSERA_RESOLVE(cuTensorMapEncodeTiled);
#undef TESSERA_RESOLVE

  int count = 0;
  r = api->cuDeviceGetCount(&count);
  if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0))
    throw Error("no CUDA-capable GPU found (cuDeviceGetCount reported no devices)");
  api->check(r, "cuDeviceGetCount failed");
  return api;
}

} // namespace

std::string DriverApi::errorName(CUresult r) const {
  const char *s = nullptr;
  if (cuGetErrorName && cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
    return s;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

std::string DriverApi::errorString(CUresult r) const {
  const char *s = nullptr;
  if (cuGetErrorString && cuGetErrorString(r, &s) == CUDA_SUCCESS && s)
    return s;
  return {};
}

void DriverApi::check(CUresult r, const std::string &what) const {
  if (r != CUDA_SUCCESS)
    throw Error(what, static_cast<int>(r), errorName(r), errorString(r));
}

std::string driverLibraryPath() {
  const char *env = std::getenv("TESSERA_LIBCUDA");
  return env && *env ? env : "libcuda.so.1";
}

const DriverApi &driver() {
  static std::mutex mutex;
  // Drivers that loaded, by path; never destroyed (see load()).
  static auto *loaded = new std::map<std::string, std::unique_ptr<DriverApi>>();
  std::string path = driverLibraryPath();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded->find(path);
  if (it != loaded->end())
    return *it->second;
  // Failures are not remembered: the next call tries again.
  auto api = load(path);
  return *loaded->emplace(path, std::move(api)).first->second;
}

} // namespace cuda
} // namespace tessera
