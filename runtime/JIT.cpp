#include "tessera/JIT.h"

#include "tessera/CodeGen.h"
#include "tessera/Compiler.h"
#include "tessera/Error.h"
#include "tessera/KernelCache.h"

#include <iostream>

namespace tessera {

namespace {
Kernel compileImpl(Context &ctx, const std::string &path, const std::string *text,
                   const std::string &kernel,
                   const std::map<std::string, ConstexprValue> &constexprs,
                   const JitOptions &options) {
  if (kernel.empty())
    throw Error("tessera::compile needs a kernel name");
  // Checked here so that the interpreter and the GPU accept the same options.
  if (options.numWarps < 1 || options.numWarps > 32 || (options.numWarps & (options.numWarps - 1)))
    throw Error("num_warps must be a power of two from 1 to 32, got " +
                std::to_string(options.numWarps));
  bool gpu = ctx.backend().kind() == BackendKind::Cuda;
  // sm_90a code runs only on compute capability 9.0 exactly, which is what the
  // context's device is: take it, so that dot can use wgmma.
  std::string target = options.arch;
  if (target.empty() && gpu)
    target = ctx.target() == "sm_90" ? "sm_90a" : ctx.target();
  CompileOptions co;
  co.constexprs = constexprs;
  co.importPaths = options.importPaths;
  co.lowerToGPU = gpu;
  co.arch = target;
  co.numWarps = options.numWarps;
  co.numStages = options.numStages;
  if (options.numStages < 1 || options.numStages > 8)
    throw Error("num_stages must be from 1 to 8, got " + std::to_string(options.numStages));
  // The interpreter reads the tile IR text; keep its locations so that its
  // reports (out-of-bounds accesses) name .tile source lines.
  co.debugInfo = !gpu;
  CompileResult r = text ? compileSource(*text, path, kernel, co) : compileFile(path, kernel, co);
  if (!r.ok) {
    std::string msg = r.diagnostics.empty() ? "compilation of '" + kernel + "' failed" : r.diagnostics;
    while (!msg.empty() && msg.back() == '\n') // like every other tessera::Error
      msg.pop_back();
    throw Error(msg);
  }
  if (r.kernels.size() != 1)
    throw Error("expected one kernel named '" + kernel + "' in " + path);
  const KernelSignature &sig = r.kernels[0];
  LaunchConfig config;
  config.numWarps = unsigned(options.numWarps);

  if (!gpu) { // the interpreter runs tile IR directly
    Module m = ctx.loadModule(ModuleImage{ModuleFormat::TileIR, r.tileIR});
    return Kernel(m.function(kernel), sig, config);
  }
  config.sharedMemoryBytes = size_t(r.sharedBytes[kernel]);
  TargetOptions to;
  to.arch = target;
  to.numWarps = options.numWarps;
  auto build = [&]() {
    CacheEntry e;
    std::string ptx, error;
    if (!emitPTX(r.gpuIR, to, ptx, error, path))
      throw Error("PTX generation for kernel '" + kernel + "' failed:\n" + error);
    e.kernelName = kernel;
    e.signature = sig;
    e.target = target;
    e.sharedMemoryBytes = config.sharedMemoryBytes;
    e.numWarps = config.numWarps;
    e.payloadFormat = "ptx";
    e.payload = std::move(ptx);
    return e;
  };
  std::shared_ptr<const CacheEntry> entry;
  if (options.useCache) {
    CacheKeyInputs in;
    in.sources = r.sources;
    in.kernelName = kernel;
    in.constexprs = sig.constexprs;
    in.options = {{"num_warps", std::to_string(options.numWarps)},
                  {"num_stages", std::to_string(options.numStages)},
                  {"emit", "ptx"}};
    in.compilerVersion = compilerVersion();
    in.target = target;
    CacheStatus status;
    entry = KernelCache::global().getOrBuild(cacheKey(in), build, &status);
    for (const std::string &w : status.warnings)
      std::cerr << w << "\n";
  } else {
    entry = std::make_shared<const CacheEntry>(build());
  }
  Module m = ctx.loadPTX(entry->payload);
  return Kernel(m.function(kernel), sig, config);
}
} // namespace

Kernel compile(Context &ctx, const std::string &path, const std::string &kernel,
               const std::map<std::string, ConstexprValue> &constexprs, const JitOptions &options) {
  return compileImpl(ctx, path, nullptr, kernel, constexprs, options);
}

Kernel compileString(Context &ctx, const std::string &source, const std::string &virtualPath,
                     const std::string &kernel,
                     const std::map<std::string, ConstexprValue> &constexprs,
                     const JitOptions &options) {
  return compileImpl(ctx, virtualPath, &source, kernel, constexprs, options);
}

} // namespace tessera
