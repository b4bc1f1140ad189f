// libdevice: NVIDIA's bitcode math library (__nv_expf, ...), linked into the
// kernel module from an explicit path.
#ifndef TESSERA_BACKEND_LIBDEVICE_H
#define TESSERA_BACKEND_LIBDEVICE_H

#include <string>

namespace llvm {
class Module;
}

namespace tessera {
namespace detail {

/// The default location, used when neither the option nor $TESSERA_LIBDEVICE is set.
inline constexpr const char *kDefaultLibdevicePath =
    "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";

/// True when `module` declares (and so calls) some __nv_* function.
bool needsLibdevice(const llvm::Module &module);

/// Links the __nv_* functions `module` uses from the bitcode at `path`.
/// Errors: the file is missing or unreadable, or a called __nv_* function is
/// not in it.
bool linkLibdevice(llvm::Module &module, const std::string &path, std::string &error);

/// libdevice asks `__nvvm_reflect("__CUDA_PREC_SQRT")` whether sqrt must be
/// IEEE-rounded; LLVM's NVVMReflect has no setting for it and answers 0
/// (sqrt.approx). This answers `precise` (nvcc's default -prec-sqrt=true is 1)
/// for every such query in `module`; run it after linking libdevice.
void resolvePrecSqrtReflect(llvm::Module &module, bool precise);

} // namespace detail
} // namespace tessera

#endif
