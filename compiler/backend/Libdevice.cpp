#include "Libdevice.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

namespace tessera {
namespace detail {

static bool isLibdeviceName(llvm::StringRef name) { return name.starts_with("__nv_"); }

bool needsLibdevice(const llvm::Module &module) {
  for (const llvm::Function &f : module)
    if (f.isDeclaration() && isLibdeviceName(f.getName()))
      return true;
  return false;
}

bool linkLibdevice(llvm::Module &module, const std::string &path, std::string &error) {
  std::string firstUse;
  for (const llvm::Function &f : module)
    if (f.isDeclaration() && isLibdeviceName(f.getName())) {
      firstUse = f.getName().str();
      break;
    }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer) {
    error = "the kernel calls libdevice (" + firstUse + ") but libdevice could not be read from '" +
            path + "': " + buffer.getError().message() +
            " (set TESSERA_LIBDEVICE to libdevice.10.bc)";
    return false;
  }
  llvm::Expected<std::unique_ptr<llvm::Module>> lib =
      llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!lib) {
    error = "cannot parse libdevice '" + path + "': " + llvm::toString(lib.takeError());
    return false;
  }
  // libdevice says nvptx64-nvidia-gpulibs; use the kernel's triple and data
  // layout so the linker does not warn.
  (*lib)->setTargetTriple(module.getTargetTriple());
  (*lib)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded)) {
    error = "linking libdevice '" + path + "' failed";
    return false;
  }
  for (const llvm::Function &f : module)
    if (f.isDeclaration() && isLibdeviceName(f.getName()) && !f.use_empty()) {
      error = "libdevice '" + path + "' has no function '" + f.getName().str() + "'";
      return false;
    }
  return true;
}

void resolvePrecSqrtReflect(llvm::Module &module, bool precise) {
  llvm::Function *reflect = module.getFunction("__nvvm_reflect");
  if (!reflect)
    return;
  llvm::SmallVector<llvm::CallInst *> calls;
  for (llvm::User *u : reflect->users()) {
    auto *call = llvm::dyn_cast<llvm::CallInst>(u);
    if (!call || call->getCalledFunction() != reflect || call->arg_size() != 1)
      continue;
    auto *gv = llvm::dyn_cast<llvm::GlobalVariable>(call->getArgOperand(0)->stripPointerCasts());
    if (!gv || !gv->hasInitializer())
      continue;
    auto *data = llvm::dyn_cast<llvm::ConstantDataSequential>(gv->getInitializer());
    if (data && data->isCString() && data->getAsCString() == "__CUDA_PREC_SQRT")
      calls.push_back(call);
  }
  for (llvm::CallInst *call : calls) {
    call->replaceAllUsesWith(llvm::ConstantInt::get(call->getType(), precise ? 1 : 0));
    call->eraseFromParent();
  }
}

} // namespace detail
} // namespace tessera
