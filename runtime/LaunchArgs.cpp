#include "tessera/LaunchArgs.h"
#include "tessera/Error.h"

namespace tessera {

size_t ArgValue::size() const {
  if (isPointer)
    return sizeof(DeviceAddress);
  return (scalarTypeBits(type.scalar) + 7) / 8;
}

void checkLaunchArgs(const KernelSignature &sig, const std::vector<ArgValue> &args) {
  if (args.size() != sig.params.size())
    throw Error("kernel '" + sig.name + "' expects " + std::to_string(sig.params.size()) +
                (sig.params.size() == 1 ? " argument" : " arguments") + ", got " +
                std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelParam &p = sig.params[i];
    const ArgValue &a = args[i];
    std::string where = "argument " + std::to_string(i + 1) + " ('" + p.name + "') of kernel '" +
                        sig.name + "' must be ";
    bool wantPointer = p.type.isPointer();
    if (wantPointer && !a.isPointer)
      throw Error(where + "a pointer (" + p.type.str() + "), got a scalar " + a.str());
    if (!wantPointer && a.isPointer)
      throw Error(where + "a scalar " + p.type.str() + ", got a pointer " + a.str());
    if (a.type != p.type)
      throw Error(where + p.type.str() + ", got " + a.str());
  }
}

std::vector<void *> kernelParamPointers(const std::vector<ArgValue> &args) {
  std::vector<void *> ptrs;
  ptrs.reserve(args.size());
  for (const ArgValue &a : args)
    ptrs.push_back(const_cast<unsigned char *>(a.storage));
  return ptrs;
}

} // namespace tessera
