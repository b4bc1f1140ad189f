#include "ModuleLoader.h"

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace tessera::fe {

static std::string canonical(const std::string &p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::path(p), ec);
  return ec ? p : c.string();
}

const ModuleInfo *ModuleLoader::loadMain(const std::string &path, const std::string *text) {
  uint32_t id;
  if (text) {
    id = sm_.addBuffer(path, *text);
  } else if (!sm_.addFile(path, id)) {
    id = sm_.addBuffer(path, "");
    diags_.error(Loc{id, 0, 0}, "cannot open file '" + path + "'");
    return nullptr;
  }
  return load(id, path, 0);
}

bool ModuleLoader::resolveImport(const std::string &fromPath, const std::string &spec,
                                 std::string &out) {
  std::vector<fs::path> candidates;
  if (fs::path(spec).is_absolute()) {
    candidates.push_back(spec);
  } else {
    candidates.push_back(fs::path(fromPath).parent_path() / spec);
    for (const std::string &dir : searchPaths_)
      candidates.push_back(fs::path(dir) / spec);
  }
  for (const fs::path &c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) {
      out = c.string();
      return true;
    }
  }
  return false;
}

// @kernel(do_not_specialize=[...]): a list of parameter names, each a string.
// Whether each names an integer parameter is checked where the types are
// known (IRGen).
bool ModuleLoader::checkKernelArguments(const Decorator &d) {
  const Expr &call = *d.call;
  if (!call.args.empty()) {
    diags_.error(startLoc(*call.args[0]), "@kernel takes only do_not_specialize=[...]");
    return false;
  }
  for (const Keyword &kw : call.keywords) {
    if (kw.name != "do_not_specialize") {
      diags_.error(kw.loc, "@kernel has no argument '" + kw.name +
                               "'; it takes only do_not_specialize=[...]");
      return false;
    }
    if (kw.value->kind != ExprKind::List) {
      diags_.error(startLoc(*kw.value),
                   "do_not_specialize must be a list of parameter names: [\"stride\", ...]");
      return false;
    }
    for (const ExprPtr &e : kw.value->args)
      if (e->kind != ExprKind::StringLit) {
        diags_.error(startLoc(*e), "do_not_specialize lists parameter names as strings");
        return false;
      }
  }
  return true;
}

// @func takes no arguments; @kernel only do_not_specialize=; @autotune takes
// them (AutotuneDecorator.h reads them), at most once, on a @kernel.
bool ModuleLoader::checkDecorators(const FunctionDef &fn) {
  const Decorator *autotune = nullptr;
  bool kernel = false, func = false;
  for (const Decorator &d : fn.decorators) {
    if (d.name != "kernel" && d.name != "func" && d.name != "autotune") {
      diags_.error(d.loc, "unknown decorator '@" + d.name +
                              "'; expected @kernel, @func or @autotune");
      return false;
    }
    kernel |= d.name == "kernel";
    func |= d.name == "func";
    if (d.name == "kernel" && d.call) {
      if (!checkKernelArguments(d))
        return false;
      continue;
    }
    if (d.name != "autotune") {
      if (d.call) {
        diags_.error(d.loc, "@" + d.name + " takes no arguments");
        return false;
      }
      continue;
    }
    if (!d.call) {
      diags_.error(d.loc, "@autotune needs arguments: @autotune(configs=[config(...), ...])");
      return false;
    }
    if (autotune) {
      diags_.error(d.loc, "a kernel can have only one @autotune");
      diags_.note(autotune->loc, "the first @autotune is here");
      return false;
    }
    autotune = &d;
  }
  if (autotune && !kernel) {
    diags_.error(autotune->loc, "@autotune applies to @kernel functions only; '" + fn.name +
                                    (func ? "' is a @func" : "' is not a @kernel"));
    return false;
  }
  return true;
}

const ModuleInfo *ModuleLoader::load(uint32_t file, const std::string &path, int depth) {
  std::string key = canonical(path);
  if (auto it = byPath_.find(key); it != byPath_.end())
    return it->second;

  std::unique_ptr<Module> ast = parseModule(sm_, file, diags_);
  if (!ast)
    return nullptr;
  auto info = std::make_unique<ModuleInfo>();
  info->path = path;
  info->ast = std::move(ast);
  ModuleInfo *self = info.get();
  modules_.push_back(std::move(info));
  byPath_[key] = self;

  for (const auto &fn : self->ast->functions)
    if (!checkDecorators(*fn))
      return nullptr;
  // Every top-level name, in source order: a redefinition is reported at the later one.
  struct Def {
    Loc loc;
    std::string name;
  };
  std::vector<Def> defs;
  for (const auto &fn : self->ast->functions)
    defs.push_back({fn->nameLoc, fn->name});
  for (const GlobalConst &g : self->ast->globals)
    defs.push_back({g.loc, g.name});
  for (const ImportDecl &imp : self->ast->imports)
    for (const ImportName &n : imp.names)
      defs.push_back({n.loc, n.alias.empty() ? n.name : n.alias});
  std::stable_sort(defs.begin(), defs.end(), [](const Def &a, const Def &b) {
    return a.loc.line != b.loc.line ? a.loc.line < b.loc.line : a.loc.col < b.loc.col;
  });
  std::map<std::string, Loc> first;
  for (const Def &d : defs) {
    auto [it, inserted] = first.emplace(d.name, d.loc);
    if (!inserted) {
      diags_.error(d.loc, "'" + d.name + "' is already defined in this file");
      diags_.note(it->second, "previous definition is here");
      return nullptr;
    }
  }
  // Index this file's own definitions first so that import cycles resolve.
  for (const auto &fn : self->ast->functions)
    self->functions[fn->name] = fn.get();
  for (const GlobalConst &g : self->ast->globals)
    self->globals[g.name] = &g;
  for (const ImportDecl &imp : self->ast->imports) {
    if (depth > 32) {
      diags_.error(imp.loc, "imports are nested more than 32 levels deep");
      return nullptr;
    }
    std::string resolved;
    if (!resolveImport(path, imp.path, resolved)) {
      diags_.error(imp.pathLoc, "cannot find imported file '" + imp.path + "'");
      return nullptr;
    }
    const ModuleInfo *dep = nullptr;
    if (auto it = byPath_.find(canonical(resolved)); it != byPath_.end()) {
      dep = it->second;
    } else {
      uint32_t id;
      if (!sm_.addFile(resolved, id)) {
        diags_.error(imp.pathLoc, "cannot read imported file '" + resolved + "'");
        return nullptr;
      }
      dep = load(id, resolved, depth + 1);
      if (!dep)
        return nullptr;
    }
    for (const ImportName &n : imp.names)
      self->imports[n.alias.empty() ? n.name : n.alias] = ImportedName{dep, n.name, n.loc};
  }
  // Imported names must exist; checked once the imported module is complete.
  for (auto &[local, imp] : self->imports) {
    const ModuleInfo *m = imp.module;
    if (!m->functions.count(imp.name) && !m->globals.count(imp.name) &&
        !m->imports.count(imp.name)) {
      diags_.error(imp.loc, "'" + imp.name + "' is not defined in '" + m->path + "'");
      return nullptr;
    }
  }
  return self;
}

} // namespace tessera::fe
