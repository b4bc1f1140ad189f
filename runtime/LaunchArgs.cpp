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

namespace tessera {
Grid Grid::of(int64_t x, int64_t y, int64_t z) {
  const int64_t limit = (int64_t(1) << 31) - 1;
  const char *names[3] = {"x", "y", "z"};
  int64_t v[3] = {x, y, z};
  for (int i = 0; i < 3; ++i)
    if (v[i] < 1 || v[i] > limit)
      throw Error("grid." + std::string(names[i]) + " = " + std::to_string(v[i]) +
                  " is out of range (1 to 2^31 - 1)");
  return Grid{unsigned(x), unsigned(y), unsigned(z)};
}
} // namespace tessera
