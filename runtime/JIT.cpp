#include "tessera/JIT.h"

#include "tessera/Compiler.h"
#include "tessera/Error.h"
#include "tessera/KernelCache.h"

#include <cstdlib>
#include <iostream>

namespace tessera {

namespace {

void throwDiagnostics(const CompileResult &r, const std::string &kernel) {
  std::string msg = r.diagnostics.empty() ? "compilation of '" + kernel + "' failed" : r.diagnostics;
  while (!msg.empty() && msg.back() == '\n') // like every other tessera::Error
    msg.pop_back();
  throw Error(msg);
}

/// What a GPU variant build needs; shared by the Kernel's variant table.
struct GpuBuild {
  std::shared_ptr<Backend> backend;
  std::string path, kernel;
  /// The main file's text as compile() read it, so that every variant is
  /// built from the same source (imports are read again).
  std::string mainText;
  std::vector<std::pair<std::string, std::string>> sources;
  KernelSignature signature;
  CompileOptions options; // target resolved, constexprs set
  bool useCache = true;
};

detail::KernelVariant buildVariant(const GpuBuild &g, const ArgFacts &facts) {
  // The facts of this variant's launch arguments, over those the caller
  // promised for every launch (JitOptions::argFacts).
  CompileOptions co = g.options;
  for (const auto &[name, fact] : facts)
    co.argFacts[name] = fact;
  auto build = [&]() {
    CompileResult r = compileSource(g.mainText, g.path, g.kernel, co, Stage::PTX);
    if (!r.ok)
      throwDiagnostics(r, g.kernel);
    // How each dot loop was lowered; printed when a variant is built (a cache
    // hit builds nothing).
    if (const char *e = std::getenv("TESSERA_REMARKS"); e && *e == '1')
      for (const std::string &line : r.remarks)
        std::cerr << line << "\n";
    CacheEntry e;
    e.kernelName = g.kernel;
    e.signature = g.signature;
    e.target = r.target.name();
    e.sharedMemoryBytes = uint64_t(r.sharedBytes[g.kernel]);
    // The block's warps: num_warps plus any producer warps the lowering added.
    auto bw = r.blockWarps.find(g.kernel);
    e.numWarps = unsigned(bw != r.blockWarps.end() ? bw->second : co.numWarps);
    e.tensorMaps = r.tensorMaps[g.kernel];
    e.persistentGrid = r.persistentKernels.count(g.kernel) > 0;
    e.payloadFormat = "ptx";
    e.payload = std::move(r.ptx);
    return e;
  };
  std::shared_ptr<const CacheEntry> entry;
  if (g.useCache) {
    CacheKeyInputs in;
    in.sources = g.sources;
    in.kernelName = g.kernel;
    in.constexprs = g.signature.constexprs;
    for (const auto &[name, value] : co.cacheFields())
      in.options[name] = value;
    in.options["emit"] = "ptx";
    in.compilerVersion = compilerVersion();
    in.target = co.resolvedTarget().name();
    CacheStatus status;
    entry = KernelCache::global().getOrBuild(cacheKey(in), build, &status);
    for (const std::string &w : status.warnings)
      std::cerr << w << "\n";
  } else {
    entry = std::make_shared<const CacheEntry>(build());
  }
  Module m(g.backend, ModuleImage{ModuleFormat::Ptx, entry->payload});
  detail::KernelVariant v{m.function(g.kernel), size_t(entry->sharedMemoryBytes), entry->numWarps,
                          entry->tensorMaps};
  if (entry->persistentGrid)
    v.residentBlocks = detail::residentBlocks(v.function, entry->numWarps * 32u, v.sharedMemoryBytes);
  return v;
}

Kernel compileImpl(Context &ctx, const std::string &path, const std::string *text,
                   const std::string &kernel,
                   const std::map<std::string, ConstexprValue> &constexprs,
                   const JitOptions &options) {
  if (kernel.empty())
    throw Error("tessera::compile needs a kernel name");
  // Checked here, before anything runs, so that the interpreter and the GPU
  // accept the same options.
  if (std::string why = options.validate(); !why.empty())
    throw Error(why);
  bool gpu = ctx.backend().kind() == BackendKind::Cuda;
  CompileOptions co = options; // the CompileOptions part of the JitOptions
  co.constexprs = constexprs;
  // sm_90a code runs only on compute capability 9.0 exactly, which is what the
  // context's device is: take it, so that dot can use wgmma.
  if (!co.target && gpu) {
    std::optional<Target> device = Target::parse(ctx.target());
    if (!device)
      throw Error("the device's target '" + ctx.target() + "' is not an sm_NN name");
    if (device->sm == 90 && !device->familySpecific)
      device->archSpecific = true;
    co.target = device;
  }
  // The interpreter reads the tile IR text; keep its locations so that its
  // reports (out-of-bounds accesses) name .tile source lines.
  co.debugInfo = !gpu;
  // On a GPU the front end only (no lowering): it reports source errors now,
  // gives the signature and the sources of the cache key, and is cheap. In
  // the interpreter with checkTargetResources, on to the lowering for the
  // target (no PTX, so no libdevice): what the GPU would reject (shared memory
  // beyond the block's limit) is reported before anything runs.
  bool checkTarget = !gpu && options.checkTargetResources;
  Stage stage = checkTarget ? Stage::GpuIR : Stage::Tile;
  CompileResult r = text ? compileSource(*text, path, kernel, co, stage)
                         : compileFile(path, kernel, co, stage);
  if (!r.ok && checkTarget && !r.tileIR.empty()) // the front end passed; the lowering did not
    throw Error("kernel '" + kernel + "' would not run on the GPU (" + co.resolvedTarget().name() +
                "), so the interpreter does not run it either "
                "(JitOptions::checkTargetResources, tessera run --no-target-check):\n" +
                r.diagnostics);
  if (!r.ok)
    throwDiagnostics(r, kernel);
  if (r.kernels.size() != 1)
    throw Error("expected one kernel named '" + kernel + "' in " + path);
  const KernelSignature &sig = r.kernels[0];
  LaunchConfig config;
  config.numWarps = unsigned(options.numWarps);
  config.clusterSize = unsigned(options.clusterSize);

  if (!gpu) { // the interpreter runs tile IR directly, and ignores facts
    Module m = ctx.loadModule(ModuleImage{ModuleFormat::TileIR, r.tileIR});
    return Kernel(m.function(kernel), sig, config);
  }
  auto g = std::make_shared<GpuBuild>();
  g->backend = ctx.sharedBackend();
  g->path = path;
  g->kernel = kernel;
  g->mainText = r.sources.empty() ? (text ? *text : std::string()) : r.sources[0].second;
  g->sources = r.sources;
  g->signature = sig;
  g->options = co;
  g->options.debugInfo = false;
  g->useCache = options.useCache;
  if (!options.specialize) {
    detail::KernelVariant v = buildVariant(*g, {});
    config.sharedMemoryBytes = v.sharedMemoryBytes;
    config.tensorMaps = v.tensorMaps;
    config.residentBlocks = v.residentBlocks;
    if (v.blockWarps) // producer warps of a warp-specialized loop
      config.numWarps = v.blockWarps;
    return Kernel(std::move(v.function), sig, config);
  }
  // Variants are built at the first launch that needs them (also the one
  // without facts), as Triton does: compile() does no lowering.
  auto table = std::make_shared<detail::VariantTable>(
      sig, [g](const ArgFacts &facts) { return buildVariant(*g, facts); });
  return Kernel(std::move(table), sig, config);
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
