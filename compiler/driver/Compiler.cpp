#include "Frontend.h"

#include "IRGen.h"
#include "lowering/Lowering.h"
#include "ModuleLoader.h"
#include "tile/TileDialect.h"
#include "tessera_build_id.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace tessera {
namespace detail {

void loadTileDialects(MLIRContext &ctx) {
  ctx.loadDialect<tile::TileDialect, tgpu::TileGPUDialect, arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                  func::FuncDialect, cf::ControlFlowDialect>();
}

static bool isKernel(const fe::FunctionDef &fn) {
  for (const fe::Decorator &d : fn.decorators)
    if (d.name == "kernel")
      return true;
  return false;
}

// Maps an MLIR location back to a front-end location for diagnostics.
static fe::Loc toFeLoc(const fe::SourceManager &sm, Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc)) {
    for (uint32_t i = 0; i < sm.numFiles(); ++i)
      if (sm.file(i).path == fl.getFilename().str())
        return fe::Loc{i, fl.getLine(), fl.getColumn()};
  }
  return fe::Loc{};
}

FrontendResult runFrontend(MLIRContext &ctx, const std::string &path, const std::string *text,
                           const std::string &kernel, const CompileOptions &options) {
  FrontendResult res;
  fe::SourceManager sm;
  fe::DiagnosticEngine diags(sm);
  auto finish = [&]() {
    res.diagnostics = diags.render();
    res.ok = !diags.hasErrors();
    if (!res.ok)
      res.module = nullptr;
  };

  fe::ModuleLoader loader(sm, diags, options.importPaths);
  const fe::ModuleInfo *mod = loader.loadMain(path, text);
  for (const auto &m : loader.modules())
    for (uint32_t i = 0; i < sm.numFiles(); ++i)
      if (sm.file(i).path == m->path) {
        res.sources.emplace_back(m->path, sm.file(i).text);
        break;
      }
  if (!mod)
    return finish(), std::move(res);

  std::vector<const fe::FunctionDef *> kernels;
  for (const auto &fn : mod->ast->functions)
    if (isKernel(*fn) && (kernel.empty() || fn->name == kernel))
      kernels.push_back(fn.get());
  fe::Loc fileLoc{0, 0, 0};
  if (kernels.empty()) {
    if (!kernel.empty())
      diags.error(fileLoc, "no @kernel named '" + kernel + "' in this file");
    else
      diags.error(fileLoc, "this file defines no @kernel functions");
    return finish(), std::move(res);
  }
  // Every -D must name a constexpr parameter of some kernel being compiled.
  for (auto &[name, v] : options.constexprs) {
    bool used = false;
    for (const fe::FunctionDef *k : kernels)
      for (const fe::Param &p : k->params)
        used |= p.name == name && p.annot.name == "constexpr";
    if (!used) {
      diags.error(fileLoc, "-D " + name + " does not name a constexpr parameter of " +
                               (kernel.empty() ? std::string("any kernel in this file")
                                               : "kernel '" + kernel + "'"));
      return finish(), std::move(res);
    }
  }

  // Every fact must name a runtime parameter (IRGen checks its type).
  for (auto &[name, fact] : options.argFacts) {
    bool runtime = false, isConstexpr = false;
    for (const fe::FunctionDef *k : kernels)
      for (const fe::Param &p : k->params)
        if (p.name == name)
          (p.annot.name == "constexpr" && p.annot.pointerDepth == 0 ? isConstexpr : runtime) = true;
    if (runtime)
      continue;
    std::string where = kernel.empty() ? std::string("any kernel in this file")
                                       : "kernel '" + kernel + "'";
    diags.error(fileLoc, "cannot assume '" + name + argFactSuffix(fact) + "': " +
                             (isConstexpr ? "'" + name + "' is a constexpr parameter (use -D)"
                                         : "no parameter named '" + name + "' in " + where));
    return finish(), std::move(res);
  }

  loadTileDialects(ctx);
  // MLIR diagnostics (verifier failures) become front-end diagnostics; they
  // would mean a front-end bug, so say so.
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && !diags.hasErrors())
      diags.error(toFeLoc(sm, d.getLocation()),
                  "internal compiler error: generated IR is invalid: " + d.str());
    return success();
  });

  OpBuilder b(&ctx);
  res.module = ModuleOp::create(FileLineColLoc::get(&ctx, path, 1, 1));
  fe::IRGen gen(ctx, sm, diags);
  for (const fe::FunctionDef *k : kernels) {
    std::map<std::string, ConstexprValue> mine;
    for (const fe::Param &p : k->params)
      if (auto it = options.constexprs.find(p.name); it != options.constexprs.end())
        mine.insert(*it);
    KernelSignature sig;
    if (!gen.genKernel(*res.module, *mod, *k, mine, sig, options.argFacts))
      return finish(), std::move(res);
    res.kernels.push_back(std::move(sig));
  }
  if (failed(verify(*res.module))) {
    if (!diags.hasErrors())
      diags.error(fileLoc, "internal compiler error: generated IR failed to verify");
    return finish(), std::move(res);
  }
  if (options.optimize) {
    PassManager pm(&ctx);
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    // Loop-invariant index math (e.g. `BK * stride_bk`) leaves the loop, so
    // the software pipeliner sees uniform pointer steps.
    pm.addPass(createLoopInvariantCodeMotionPass());
    if (failed(pm.run(*res.module)) && !diags.hasErrors())
      diags.error(fileLoc, "internal compiler error: tile-level optimization failed");
  }
  return finish(), std::move(res);
}

} // namespace detail

static CompileResult compileImpl(const std::string &path, const std::string *text,
                                 const std::string &kernel, const CompileOptions &options) {
  MLIRContext ctx(MLIRContext::Threading::DISABLED);
  detail::FrontendResult fr = detail::runFrontend(ctx, path, text, kernel, options);
  CompileResult r;
  r.ok = fr.ok;
  r.diagnostics = fr.diagnostics;
  r.kernels = fr.kernels;
  r.sources = fr.sources;
  if (!fr.ok)
    return r;
  {
    llvm::raw_string_ostream os(r.tileIR);
    OpPrintingFlags flags;
    if (options.debugInfo)
      flags.enableDebugInfo();
    fr.module->print(os, flags);
  }
  if (options.lowerToGPU) {
    std::string error;
    lowering::LoweringOptions lo;
    lo.numWarps = options.numWarps;
    lo.arch = options.arch;
    lo.numStages = options.numStages;
    lo.warpSpecialize = options.warpSpecialize;
    lo.tma = options.tma;
    lo.remarks = &r.remarks;
    lo.layoutIR = &r.layoutIR;
    if (!lowering::lowerTileToNVVM(*fr.module, lo, error) || failed(verify(*fr.module))) {
      r.ok = false;
      r.diagnostics = (error.empty() ? std::string("error: GPU lowering produced invalid IR") : error) + "\n";
      return r;
    }
    for (auto fn : fr.module->getOps<func::FuncOp>()) {
      if (auto attr = fn->getAttrOfType<IntegerAttr>("tessera.shared_bytes"))
        r.sharedBytes[fn.getName().str()] = attr.getInt();
      if (auto attr = fn->getAttrOfType<IntegerAttr>("tessera.num_warps"))
        r.blockWarps[fn.getName().str()] = attr.getInt();
      if (auto maps = fn->getAttrOfType<ArrayAttr>("tessera.tensor_maps"))
        for (Attribute a : maps)
          r.tensorMaps[fn.getName().str()].push_back(cast<StringAttr>(a).str());
    }
    llvm::raw_string_ostream os(r.gpuIR);
    fr.module->print(os);
  }
  return r;
}

CompileResult compileFile(const std::string &path, const std::string &kernel,
                          const CompileOptions &options) {
  return compileImpl(path, nullptr, kernel, options);
}

CompileResult compileSource(const std::string &source, const std::string &virtualPath,
                            const std::string &kernel, const CompileOptions &options) {
  return compileImpl(virtualPath, &source, kernel, options);
}

std::vector<std::string> listKernels(const std::string &path, std::string *diagnostics) {
  fe::SourceManager sm;
  fe::DiagnosticEngine diags(sm);
  uint32_t id;
  std::vector<std::string> names;
  if (!sm.addFile(path, id)) {
    if (diagnostics)
      *diagnostics = path + ": error: cannot open file\n";
    return names;
  }
  auto mod = fe::parseModule(sm, id, diags);
  if (!mod) {
    if (diagnostics)
      *diagnostics = diags.render();
    return names;
  }
  for (const auto &fn : mod->functions)
    if (detail::isKernel(*fn))
      names.push_back(fn->name);
  return names;
}

// The build id changes with any source of the code generator, so that cached
// kernels of an older compiler are never reused (cmake/BuildId.cmake).
const char *compilerVersion() { return "tessera-" TESSERA_VERSION "+" TESSERA_BUILD_ID; }

} // namespace tessera
