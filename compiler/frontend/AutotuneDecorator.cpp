#include "AutotuneDecorator.h"

#include "ConstantEval.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace tessera::fe {

namespace {

using NamedAt = AutotuneDecl::NamedAt;

constexpr const char *kSwitches[] = {"num_warps", "num_stages", "warp_specialize", "tma",
                                     "maxnreg", "cluster_size"};
constexpr const char *kPruneExample = "such as prune=\"BM * BK <= 16384\"";

bool isSwitch(const std::string &name) {
  return std::find(std::begin(kSwitches), std::end(kSwitches), name) != std::end(kSwitches);
}

bool isConstexpr(const Param &p) {
  return p.hasAnnot && p.annot.name == "constexpr" && p.annot.pointerDepth == 0;
}

const Param *findParam(const FunctionDef &fn, const std::string &name) {
  for (const Param &p : fn.params)
    if (p.name == name)
      return &p;
  return nullptr;
}

bool isIntegerType(const DType &t) {
  if (t.isPointer())
    return false;
  switch (t.scalar) {
  case ScalarType::i8: case ScalarType::u8: case ScalarType::i16: case ScalarType::i32:
  case ScalarType::u16: case ScalarType::u32: case ScalarType::u64:
  case ScalarType::i64:
    return true;
  default:
    return false;
  }
}

bool before(Loc a, Loc b) { return a.line != b.line ? a.line < b.line : a.col < b.col; }

/// "(constexpr parameters: BM, BN; switches: num_warps, ...)": what a config
/// can set and prune= can read, for messages about a name that is neither.
std::string whatExists(const FunctionDef &fn) {
  std::string names;
  for (const Param &p : fn.params)
    if (isConstexpr(p))
      names += (names.empty() ? "" : ", ") + p.name;
  return "(constexpr parameters: " + (names.empty() ? std::string("none") : names) +
         "; switches: num_warps, num_stages, warp_specialize, tma, maxnreg, cluster_size)";
}

std::optional<ConstexprValue> noName(const std::string &) { return std::nullopt; }

// ---- locations inside a string literal ------------------------------------------

/// Where byte `offset` of a string literal's contents is in the source; past
/// the end, the closing quote.
Loc locInString(const Expr &lit, size_t offset) {
  if (lit.strLocs.empty())
    return lit.loc;
  return lit.strLocs[std::min(offset, lit.strLocs.size() - 1)];
}

/// Maps a location in `buffer` of `sm`, which holds `lit`'s contents, to the source.
Loc toSource(const SourceManager &sm, uint32_t buffer, Loc l, const Expr &lit) {
  const SourceFile &f = sm.file(buffer);
  if (!l.valid() || l.line > f.lineStarts.size())
    return l.valid() ? locInString(lit, f.text.size()) : lit.loc;
  return locInString(lit, f.lineStarts[l.line - 1] + l.col - 1);
}

void relocate(Expr &e, const std::function<Loc(Loc)> &map) {
  e.loc = map(e.loc);
  for (ExprPtr &c : e.operands)
    if (c)
      relocate(*c, map);
  for (ExprPtr &c : e.args)
    relocate(*c, map);
  for (Keyword &k : e.keywords) {
    k.loc = map(k.loc);
    relocate(*k.value, map);
  }
}

// ---- prune= --------------------------------------------------------------------------

/// What prune= reads besides a config: the kernel's constexprs and the
/// switches as one compile had them.
struct PruneInputs {
  std::map<std::string, ConstexprValue> constexprs;
  int numWarps = 4;
  int numStages = 4;
  bool warpSpecialize = true;
  bool tma = true;
  int maxRegisters = 0;
  int clusterSize = 1;
};

/// A name in prune=: a switch (the config's, else the compile's), else a
/// constexpr (the config's, else the compile's).
std::optional<ConstexprValue> pruneName(const PruneInputs &in, const Config &c,
                                        const std::string &name) {
  if (name == "num_warps")
    return ConstexprValue(int64_t(c.numWarps.value_or(in.numWarps)));
  if (name == "num_stages")
    return ConstexprValue(int64_t(c.numStages.value_or(in.numStages)));
  if (name == "warp_specialize")
    return ConstexprValue(c.warpSpecialize.value_or(in.warpSpecialize));
  if (name == "tma")
    return ConstexprValue(c.tma.value_or(in.tma));
  if (name == "maxnreg")
    return ConstexprValue(int64_t(c.maxRegisters.value_or(in.maxRegisters)));
  if (name == "cluster_size")
    return ConstexprValue(int64_t(c.clusterSize.value_or(in.clusterSize)));
  if (auto it = c.constexprs.find(name); it != c.constexprs.end())
    return it->second;
  if (auto it = in.constexprs.find(name); it != in.constexprs.end())
    return it->second;
  return std::nullopt;
}

/// prune= on `c`; a result that is not a boolean is an error.
std::optional<ConstexprValue> evalPrune(const Expr &prune, const PruneInputs &in, const Config &c,
                                        ConstantError *error) {
  auto v = evalConstant(
      prune, [&](const std::string &name) { return pruneName(in, c, name); }, error);
  if (v && !std::holds_alternative<bool>(*v)) {
    if (error)
      *error = {startLoc(prune), "prune= must give True or False, got " + describeConstant(*v)};
    return std::nullopt;
  }
  return v;
}

/// Evaluates prune= on every config (reporting the first failure) and gives
/// `space` a `prune` that evaluates it on any config, false when that fails.
bool attachPrune(const AutotuneDecl &decl, const KernelSignature &signature,
                 const CompileOptions &options, DiagnosticEngine &diags, ConfigSpace &space) {
  PruneInputs in{signature.constexprs, options.numWarps, options.numStages,
                 options.warpSpecialize, options.tma, options.maxRegisters, options.clusterSize};
  for (size_t i = 0; i < decl.configs.size(); ++i) {
    ConstantError err;
    if (!evalPrune(*decl.prune, in, decl.configs[i], &err)) {
      diags.error(err.loc, err.message);
      diags.note(decl.configLocs[i], "while evaluating prune= for config " + std::to_string(i) +
                                         " (" + decl.configs[i].str() + ")");
      return false;
    }
  }
  space.pruneExpression = decl.pruneText;
  space.prune = [expr = decl.prune, in](const Config &c) {
    auto v = evalPrune(*expr, in, c, nullptr);
    return v && std::get<bool>(*v);
  };
  return true;
}

// ---- reading the decorator -----------------------------------------------------------

class Reader {
public:
  Reader(const FunctionDef &fn, const CompileOptions &options, DiagnosticEngine &diags,
         AutotuneDecl &decl)
      : fn_(fn), options_(options), diags_(diags), decl_(decl) {}

  bool read(const Decorator &d) {
    const Expr &call = *d.call;
    if (!call.args.empty())
      return error(startLoc(*call.args[0]), "@autotune takes keyword arguments only: configs=, "
                                            "key=, key_round=, prune=, reset= and restore=");
    bool sawConfigs = false;
    for (const Keyword &kw : call.keywords) {
      bool ok;
      if (kw.name == "configs")
        ok = sawConfigs = readConfigs(*kw.value);
      else if (kw.name == "key")
        ok = readNames(kw, decl_.keys);
      else if (kw.name == "key_round")
        ok = readKeyRound(*kw.value);
      else if (kw.name == "prune")
        ok = readPrune(*kw.value);
      else if (kw.name == "reset")
        ok = readNames(kw, decl_.reset);
      else if (kw.name == "restore")
        ok = readNames(kw, decl_.restore);
      else
        ok = error(kw.loc, "unknown @autotune argument '" + kw.name +
                               "'; expected configs, key, key_round, prune, reset or restore");
      if (!ok)
        return false;
    }
    if (!sawConfigs)
      return error(d.loc, "@autotune needs configs=[config(...), ...]");
    return checkAcrossArguments();
  }

private:
  const FunctionDef &fn_;
  const CompileOptions &options_;
  DiagnosticEngine &diags_;
  AutotuneDecl &decl_;

  bool error(Loc l, std::string msg) {
    diags_.error(l, std::move(msg));
    return false;
  }

  std::optional<ConstexprValue> constant(const Expr &e) {
    ConstantError err;
    auto v = evalConstant(e, noName, &err);
    if (!v)
      error(err.loc, err.message);
    return v;
  }

  bool readConfigs(const Expr &list) {
    if (list.kind != ExprKind::List)
      return error(startLoc(list), "configs= must be a list of configs, such as "
                                   "configs=[config(BM=64, num_warps=4), ...]");
    if (list.args.empty())
      return error(list.loc, "configs= needs at least one config(...)");
    for (const ExprPtr &item : list.args) {
      const Expr &e = *item;
      if (e.kind != ExprKind::Call || e.operands[0]->kind != ExprKind::Name ||
          e.operands[0]->str != "config")
        return error(startLoc(e), "expected config(NAME=value, ...) in configs=");
      Config c;
      if (!readConfig(e, c))
        return false;
      std::string index = std::to_string(decl_.configs.size());
      for (size_t j = 0; j < decl_.configs.size(); ++j)
        if (decl_.configs[j] == c) {
          error(e.loc, "config " + index + " repeats config " + std::to_string(j) + " (" +
                           c.str() + ")");
          diags_.note(decl_.configLocs[j], "config " + std::to_string(j) + " is here");
          return false;
        }
      decl_.configs.push_back(std::move(c));
      decl_.configLocs.push_back(e.loc);
    }
    return true;
  }

  bool readConfig(const Expr &call, Config &c) {
    if (!call.args.empty())
      return error(startLoc(*call.args[0]), "config() takes NAME=value arguments only");
    for (const Keyword &kw : call.keywords) {
      if (isSwitch(kw.name)) {
        if (!readSwitch(kw, c))
          return false;
        continue;
      }
      const Param *p = findParam(fn_, kw.name);
      if (!p || !isConstexpr(*p))
        return error(kw.loc, "'" + kw.name + "' is " +
                                 (p ? "a runtime parameter of kernel '" + fn_.name +
                                          "', not a constexpr "
                                    : "not a constexpr parameter of kernel '" + fn_.name +
                                          "' or a switch ") +
                                 whatExists(fn_));
      auto v = constant(*kw.value);
      if (!v)
        return false;
      c.constexprs[kw.name] = *v;
    }
    if (std::string why = c.validate(options_); !why.empty())
      return error(call.loc, why);
    return true;
  }

  /// num_warps=, num_stages=, warp_specialize=, tma=, maxnreg=, cluster_size=: checked alone, so that
  /// the caret is under the value CompileOptions::validate() rejects.
  bool readSwitch(const Keyword &kw, Config &c) {
    auto v = constant(*kw.value);
    if (!v)
      return false;
    Loc at = startLoc(*kw.value);
    Config one;
    if (auto sw = Config::intSwitch(kw.name)) {
      auto *n = std::get_if<int64_t>(&*v);
      if (!n)
        return error(at, kw.name + " must be an integer, got " + describeConstant(*v));
      one.*sw = int(std::clamp<int64_t>(*n, std::numeric_limits<int>::min(),
                                        std::numeric_limits<int>::max()));
    } else {
      auto *b = std::get_if<bool>(&*v);
      if (!b)
        return error(at, kw.name + " must be True or False, got " + describeConstant(*v));
      one.*Config::boolSwitch(kw.name) = *b;
    }
    if (std::string why = one.validate(options_); !why.empty())
      return error(at, why);
    c.numWarps = one.numWarps ? one.numWarps : c.numWarps;
    c.numStages = one.numStages ? one.numStages : c.numStages;
    c.warpSpecialize = one.warpSpecialize ? one.warpSpecialize : c.warpSpecialize;
    c.tma = one.tma ? one.tma : c.tma;
    c.maxRegisters = one.maxRegisters ? one.maxRegisters : c.maxRegisters;
    c.clusterSize = one.clusterSize ? one.clusterSize : c.clusterSize;
    return true;
  }

  /// key=, reset=, restore=: lists of parameter names (types are checked by
  /// finishAutotune, once they are known).
  bool readNames(const Keyword &kw, std::vector<NamedAt> &out) {
    const Expr &list = *kw.value;
    std::string example = kw.name + (kw.name == "key" ? "=[\"M\", \"N\"]" : "=[\"C\"]");
    if (list.kind != ExprKind::List)
      return error(startLoc(list),
                   kw.name + "= must be a list of parameter names, such as " + example);
    for (const ExprPtr &item : list.args) {
      if (item->kind != ExprKind::StringLit)
        return error(startLoc(*item),
                     kw.name + "= lists parameter names as strings, such as " + example);
      const std::string &name = item->str;
      Loc at = locInString(*item, 0);
      const Param *p = findParam(fn_, name);
      if (!p)
        return error(at, "kernel '" + fn_.name + "' has no parameter '" + name + "'");
      if (kw.name != "key" && isConstexpr(*p))
        return error(at, kw.name + "= names pointer parameters; '" + name +
                             "' is a constexpr parameter");
      for (const NamedAt &seen : out)
        if (seen.name == name)
          return error(at, "'" + name + "' is listed twice in " + kw.name + "=");
      out.push_back({name, at});
    }
    return true;
  }

  bool readKeyRound(const Expr &v) {
    const std::string expected = "key_round= must be \"pow2\", \"none\" or a list of ascending "
                                 "bucket edges, such as [256, 1024, 4096]";
    if (v.kind == ExprKind::StringLit) {
      if (v.str != "pow2" && v.str != "none")
        return error(v.loc, expected + ", got \"" + v.str + "\"");
      decl_.bucketing = v.str == "pow2" ? Bucketing::pow2() : Bucketing::none();
      return true;
    }
    if (v.kind != ExprKind::List)
      return error(startLoc(v), expected);
    std::vector<int64_t> edges;
    for (const ExprPtr &item : v.args) {
      auto c = constant(*item);
      if (!c)
        return false;
      auto *edge = std::get_if<int64_t>(&*c);
      if (!edge)
        return error(startLoc(*item), "a bucket edge must be an integer, got " +
                                          describeConstant(*c));
      edges.push_back(*edge);
    }
    Bucketing b = Bucketing::at(std::move(edges));
    if (std::string why = b.validate(); !why.empty())
      return error(v.loc, "key_round=: " + why);
    decl_.bucketing = std::move(b);
    return true;
  }

  /// Parses the string with the language's parser; errors point into the
  /// literal. Names must be constexpr parameters, switches or types.
  bool readPrune(const Expr &v) {
    if (v.kind != ExprKind::StringLit)
      return error(startLoc(v), std::string("prune= must be a string holding a condition, ") +
                                    kPruneExample);
    if (v.str.find_first_not_of(" \t") == std::string::npos)
      return error(v.loc, std::string("prune= is empty; it must hold a condition, ") +
                              kPruneExample);
    SourceManager sm;
    uint32_t buffer = sm.addBuffer("prune=", v.str);
    DiagnosticEngine parseDiags(sm);
    ExprPtr e = parseExpression(sm, buffer, parseDiags);
    auto map = [&](Loc l) { return toSource(sm, buffer, l, v); };
    if (!e) {
      const Diagnostic &d = parseDiags.diagnostics().front();
      std::string msg = d.message; // the text ends with a NEWLINE and EOF token
      for (std::string end : {"found end of line", "found end of file"})
        if (msg.size() >= end.size() && msg.compare(msg.size() - end.size(), end.size(), end) == 0)
          msg = msg.substr(0, msg.size() - end.size()) + "found the end of the string";
      return error(map(d.loc), "in prune=: " + msg);
    }
    relocate(*e, map);
    auto known = [&](const std::string &name) -> std::optional<ConstexprValue> {
      const Param *p = findParam(fn_, name);
      if (isSwitch(name) || (p && isConstexpr(*p)))
        return ConstexprValue(int64_t(0));
      return std::nullopt;
    };
    if (const Expr *unknown = findUnknownName(*e, known)) {
      const std::string &name = unknown->str;
      return error(unknown->loc, findParam(fn_, name)
                                     ? "prune= can only read constexprs and switches; '" + name +
                                           "' is a runtime parameter " + whatExists(fn_)
                                     : "unknown name '" + name + "' in prune= " + whatExists(fn_));
    }
    decl_.pruneText = v.str;
    decl_.prune = std::shared_ptr<const Expr>(std::move(e));
    return true;
  }

  /// A key that a config sets; a name both reset and restored.
  bool checkAcrossArguments() {
    for (const NamedAt &k : decl_.keys)
      for (size_t i = 0; i < decl_.configs.size(); ++i)
        if (decl_.configs[i].constexprs.count(k.name))
          return error(k.loc, "'" + k.name + "' is set by config " + std::to_string(i) +
                                  "; a key is a parameter that the choice of config depends on");
    for (const NamedAt &r : decl_.restore)
      for (const NamedAt &z : decl_.reset)
        if (z.name == r.name) {
          bool resetFirst = before(z.loc, r.loc);
          error(resetFirst ? r.loc : z.loc, "'" + r.name + "' is both reset and restored");
          diags_.note(resetFirst ? z.loc : r.loc, "also listed here");
          return false;
        }
    return true;
  }
};

} // namespace

bool readAutotune(const FunctionDef &fn, const CompileOptions &options, DiagnosticEngine &diags,
                  std::unique_ptr<AutotuneDecl> &decl) {
  decl.reset();
  for (const Decorator &d : fn.decorators) {
    if (d.name != "autotune" || !d.call) // ModuleLoader rejects a bare @autotune
      continue;
    auto read = std::make_unique<AutotuneDecl>();
    read->kernel = &fn;
    if (!Reader(fn, options, diags, *read).read(d))
      return false;
    decl = std::move(read);
  }
  return true;
}

void fillFromFirstConfig(const AutotuneDecl &decl,
                         std::map<std::string, ConstexprValue> &constexprs) {
  const Config &first = decl.configs.front();
  for (const Param &p : decl.kernel->params)
    if (isConstexpr(p) && !p.defaultValue && !constexprs.count(p.name))
      if (auto it = first.constexprs.find(p.name); it != first.constexprs.end())
        constexprs.insert(*it);
}

std::shared_ptr<const ConfigSpace> finishAutotune(const AutotuneDecl &decl,
                                                  const KernelSignature &signature,
                                                  const CompileOptions &options,
                                                  DiagnosticEngine &diags) {
  auto typeOf = [&](const std::string &name) -> const DType * {
    for (const KernelParam &p : signature.params)
      if (p.name == name)
        return &p.type;
    return nullptr; // a constexpr parameter
  };
  auto space = std::make_shared<ConfigSpace>();
  space->configs = decl.configs;
  for (const NamedAt &k : decl.keys) {
    const DType *t = typeOf(k.name);
    if (!t)
      continue; // a constexpr: its value is already part of the tuning key's options hash
    if (!isIntegerType(*t)) {
      diags.error(k.loc, "key= names integer parameters; '" + k.name + "' is " + t->str());
      return nullptr;
    }
    space->key(k.name, decl.bucketing);
  }
  for (const auto *list : {&decl.reset, &decl.restore}) {
    std::string what = list == &decl.reset ? "reset" : "restore";
    for (const NamedAt &n : *list) {
      const DType *t = typeOf(n.name);
      if (!t || !t->isPointer()) {
        diags.error(n.loc, what + "= names pointer parameters; '" + n.name + "' is " +
                               (t ? t->str() : std::string("a constexpr parameter")));
        return nullptr;
      }
      (list == &decl.reset ? space->reset : space->restore).push_back(n.name);
    }
  }
  if (decl.prune && !attachPrune(decl, signature, options, diags, *space))
    return nullptr;
  return space;
}

} // namespace tessera::fe
