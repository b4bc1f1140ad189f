// The front end's entry point (source -> verified tile IR), listKernels and
// the compiler's version. compileFile/compileSource are in Pipeline.cpp.
#include "Frontend.h"

#include "AutotuneDecorator.h"
#include "IRGen.h"
#include "analysis/WrittenParams.h"
#include "ModuleLoader.h"
#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"
#include "tessera_build_id.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
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

// Flags the parameters a store's or atomic's address derives from, and a
// load's or atomic's. The kernel's
// function arguments are its runtime parameters, in order.
static void markWrittenParams(ModuleOp module, KernelSignature &sig) {
  auto fn = module.lookupSymbol<func::FuncOp>(sig.name);
  if (!fn || fn.getNumArguments() != sig.params.size())
    return;
  std::vector<bool> written = analysis::writtenPointerArguments(fn);
  std::vector<bool> read = analysis::readPointerArguments(fn);
  for (size_t i = 0; i < sig.params.size(); ++i) {
    sig.params[i].written = written[i];
    sig.params[i].read = read[i];
  }
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
    std::unique_ptr<fe::AutotuneDecl> autotune;
    if (!fe::readAutotune(*k, options, diags, autotune))
      return finish(), std::move(res);
    std::map<std::string, ConstexprValue> mine;
    for (const fe::Param &p : k->params)
      if (auto it = options.constexprs.find(p.name); it != options.constexprs.end())
        mine.insert(*it);
    if (autotune) // given values and defaults first, then the first config's
      fe::fillFromFirstConfig(*autotune, mine);
    KernelSignature sig;
    if (!gen.genKernel(*res.module, *mod, *k, mine, sig, options.argFacts))
      return finish(), std::move(res);
    markWrittenParams(*res.module, sig);
    if (autotune) {
      auto space = fe::finishAutotune(*autotune, sig, options, diags);
      if (!space)
        return finish(), std::move(res);
      res.configSpaces[k->name] = std::move(space);
    }
    res.kernels.push_back(std::move(sig));
  }
  if (failed(verify(*res.module))) {
    if (!diags.hasErrors())
      diags.error(fileLoc, "internal compiler error: generated IR failed to verify");
    return finish(), std::move(res);
  }
  return finish(), std::move(res);
}

} // namespace detail

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
