// cuBLAS as a peer inside a benchmark process, so that a peer and a Tessera
// kernel can be timed in alternation on the same stream, under the same clocks.
// The GPU's clocks drift over a run (torch.matmul's 8192^3 f16 measured 1.43 ms
// before a tutorials_bench run and 1.61 ms after it), so figures taken minutes
// apart compare the clocks as much as the kernels.
//
// The library is loaded with dlopen from the path in TESSERA_BENCH_CUBLAS
// (bench/tutorials_peers.py passes the libcublas of torch's nvidia-cublas
// wheel, the one torch.matmul calls). The call is the one torch.matmul makes
// for 2-D f16 tensors: cublasGemmEx, f16 operands and result, f32 compute, the
// default tensor-op algorithm, with a 32 MiB workspace like torch's on sm_90.
#ifndef TESSERA_BENCH_CUBLASPEER_H
#define TESSERA_BENCH_CUBLASPEER_H

#include "tessera/tessera.h"

#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace tessera::bench {

class CublasPeer {
public:
  /// Loads cuBLAS from TESSERA_BENCH_CUBLAS; nullopt when the variable is
  /// unset. Throws when the library is named but cannot be used.
  static std::optional<CublasPeer> fromEnvironment(Context &ctx) {
    const char *path = std::getenv("TESSERA_BENCH_CUBLAS");
    if (!path || !*path)
      return std::nullopt;
    return CublasPeer(ctx, path);
  }

  CublasPeer(CublasPeer &&) = default;

  /// Row-major C[m, n] = A[m, k] B[k, n] in f16 with f32 accumulation, on the
  /// default stream. cuBLAS is column-major, so it computes C^T = B^T A^T.
  void matmulF16(DeviceAddress a, DeviceAddress b, DeviceAddress c, int m, int n, int k) const {
    const float one = 1.0f, zero = 0.0f;
    check(gemmEx_(handle_.get(), kOpN, kOpN, n, m, k, &one, addr(b), kR16F, n, addr(a), kR16F, k, &zero,
                  addr(c), kR16F, n, kCompute32F, kDefaultTensorOp),
          "cublasGemmEx");
  }

private:
  // The values of the cuBLAS and CUDA enums this call uses (cublas_api.h, library_types.h).
  static constexpr int kOpN = 0, kR16F = 2, kCompute32F = 68, kDefaultTensorOp = 99;
  using Handle = void *;
  using CreateFn = int (*)(Handle *);
  using DestroyFn = int (*)(Handle);
  using SetStreamFn = int (*)(Handle, void *);
  using SetWorkspaceFn = int (*)(Handle, void *, size_t);
  using GemmExFn = int (*)(Handle, int, int, int, int, int, const void *, const void *, int, int, const void *,
                           int, int, const void *, void *, int, int, int, int);

  CublasPeer(Context &ctx, const std::string &path) {
    void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw std::runtime_error("cannot load cuBLAS from TESSERA_BENCH_CUBLAS=" + path + ": " + dlerror());
    auto create = symbol<CreateFn>(lib, "cublasCreate_v2");
    auto destroy = symbol<DestroyFn>(lib, "cublasDestroy_v2");
    gemmEx_ = symbol<GemmExFn>(lib, "cublasGemmEx");
    Handle h = nullptr;
    check(create(&h), "cublasCreate");
    handle_ = std::shared_ptr<void>(h, [destroy](Handle p) { destroy(p); });
    check(symbol<SetStreamFn>(lib, "cublasSetStream_v2")(h, nullptr), "cublasSetStream");
    workspace_ = std::make_shared<DeviceMemory>(ctx.allocBytes(kWorkspaceBytes));
    check(symbol<SetWorkspaceFn>(lib, "cublasSetWorkspace_v2")(h, addr(workspace_->address()), kWorkspaceBytes),
          "cublasSetWorkspace");
  }

  template <typename Fn> static Fn symbol(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p)
      throw std::runtime_error(std::string("cuBLAS has no symbol ") + name);
    return reinterpret_cast<Fn>(p);
  }
  static void check(int status, const char *what) {
    if (status != 0)
      throw std::runtime_error(std::string(what) + " failed with cuBLAS status " + std::to_string(status));
  }
  static void *addr(DeviceAddress a) { return reinterpret_cast<void *>(static_cast<uintptr_t>(a)); }

  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;
  std::shared_ptr<DeviceMemory> workspace_; // outlives the handle
  std::shared_ptr<void> handle_;
  GemmExFn gemmEx_ = nullptr;
};

} // namespace tessera::bench

#endif
