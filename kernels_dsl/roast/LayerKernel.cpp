#include "LayerKernel.h"

#include "tessera/Compiler.h"
#include "tessera/Error.h"
#include "tessera/KernelLibrary.h"

namespace tessera::roast::detail {

std::unique_ptr<TunedKernel> layerKernel(Context &ctx, const std::string &file,
                                         const std::string &kernel,
                                         const std::map<std::string, ConstexprValue> &constexprs,
                                         const std::map<std::string, ConstexprValue> &probe,
                                         const std::function<bool(const Config &)> &fits,
                                         const TunedKernelOptions &tuning) {
  std::string path = kernelLibraryPath(file);
  CompileOptions front;
  front.constexprs = constexprs;
  for (const auto &[name, value] : probe)
    front.constexprs[name] = value;
  CompileResult r = compileFile(path, kernel, front);
  auto it = r.configSpaces.find(kernel);
  if (!r.ok || it == r.configSpaces.end())
    throw Error("roast: cannot read the @autotune space of " + kernel + " in " + path + "\n" +
                r.diagnostics);
  ConfigSpace space = *it->second;
  std::vector<Config> kept;
  for (const Config &c : space.configs)
    if (fits(c))
      kept.push_back(c);
  if (kept.empty())
    throw Error("roast: no config of " + kernel + " fits the layer's hash tile");
  space.configs = std::move(kept);
  // Every config sets the probed names, so the probe only serves the front end.
  return std::make_unique<TunedKernel>(ctx, path, kernel, std::move(space), front.constexprs,
                                       JitOptions{}, tuning);
}

} // namespace tessera::roast::detail
