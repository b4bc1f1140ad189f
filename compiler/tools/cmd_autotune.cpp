// `tessera autotune FILE`: tune one kernel's configs for each --shape with
// made-up arguments (TunedKernel, on the GPU or in the interpreter), print a
// table per shape and optionally JSON. The management subcommands (show,
// export, import, prune) are in cmd_autotune_cache.cpp.
#include "backends.h"
#include "cli.h"
#include "int_expr.h"
#include "run_args.h"
#include "tuning_progress.h"
#include "tuning_summary.h"

#include "tessera/Error.h"
#include "tessera/TunedKernel.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <unistd.h>

namespace tessera::cli {

namespace {

const char *kAutotuneHelp = R"(usage: tessera autotune FILE [--kernel NAME] --shape NAME=VALUE[,...]...
                        --grid EXPR[,EXPR,EXPR] [--config CONFIG]... [--key NAME[:BUCKETING]]...
                        [options] ARG...
       tessera autotune show [--kernel NAME] [--json]
       tessera autotune export PATH
       tessera autotune import PATH
       tessera autotune prune

Tunes one kernel of FILE: for each --shape it makes up the arguments from the
ARGs, compiles and times every config of the kernel's config space, prints a
table (median time and spread of each config, or why it was skipped; the
winner marked) and stores the winner in the tuning cache, where TunedKernel
finds it at run time. A shape whose tuning key the cache already holds is
reported as cached and not tuned again (unless --force). It runs on the GPU
when there is one, else (or with --interpret) in the CPU interpreter, whose
times are host times.

arguments, one per kernel parameter, in order (as for `tessera run`, but every
count and integer literal may be an integer expression over the shape's names):
  buf:N            a buffer of N random elements   (buf:M*K)
  buf:N=VALUE      a buffer of N elements, each VALUE
  buf:N=V1,...,VN  a buffer of the N values given, in order
  out:N            a buffer of N elements the kernel writes (compared between
                   configs: a config whose outputs differ is skipped)
  LITERAL | EXPR   a scalar: 1e-5, true, 512, M, 2*K

the config space:
  the kernel's @autotune decorator, or, instead of it:
  --config CONFIG  one candidate, e.g. 'BM=128,BN=256,BK=64,num_warps=8,num_stages=4'
                   (constexprs, and num_warps, num_stages, warp_specialize, tma);
                   repeatable; the first is the default config
  --key NAME[:none|:pow2|:edges(a,b,...)]
                   an integer parameter the choice depends on, and how its value is
                   bucketed (default none: the exact value); repeatable
  --reset NAME     a pointer parameter zeroed before every timed launch (a kernel
                   that accumulates into it); repeatable
  --restore NAME   a pointer parameter put back before every timed launch (a kernel
                   that updates it in place); repeatable

options:
  --kernel NAME    the kernel to tune (needed when FILE holds more than one)
  -D NAME=VALUE    set a constexpr parameter that no config sets; repeatable
  -I DIR           also search DIR for imported files; repeatable
  --shape NAME=VALUE[,NAME=VALUE...]
                   one problem shape: names for the ARG and --grid expressions
                   (a VALUE may use the names before it); repeatable, at least one
  --grid EXPR[,EXPR,EXPR]
                   program instances per dimension, integer expressions over the
                   shape's names and the config's (and kernel's) integer constexprs:
                   --grid 'cdiv(M,BM)*cdiv(N,BN)'. Operators + - * / % ( ),
                   cdiv(a,b), min(a,b,...), max(a,b,...); / and % truncate (required)
  --budget SECONDS the most time the whole command spends tuning: each shape gets
                   what is left divided by the shapes left; configs not timed when
                   a shape's share is spent are skipped ("over the tuning budget"),
                   but each tuned shape times at least one config
  --compile-timeout SECONDS
                   skip a config whose compile takes longer ("compile timeout")
  --repeats N      timed launches per config (default 10); the 3 fastest are timed
                   again with 3*N
  --force          tune every shape, even one the tuning cache holds, and store
                   the new result
  --json PATH      also write every shape's results as JSON to PATH ('-': stdout)
  --interpret      run in the CPU interpreter even when a GPU is present
  --seed S         seed of the random inputs (default 0)
  -h, --help       show this help

management:
  show [--kernel NAME] [--json]
                   list the tuning cache's entries: kernel, key, best config, its
                   time, date and device, and why an entry is stale (--json: as
                   JSON)
  export PATH      write every entry to one JSON file ('-': stdout)
  import PATH      store the entries of an exported file (or of a tuning cache
                   file) in the tuning cache; a file that is not valid changes
                   nothing (exit 1)
  prune            drop the entries tuned by another compiler version or whose
                   kernel sources changed since

environment:
  TESSERA_CACHE_DIR    the tuning cache is $TESSERA_CACHE_DIR/tuning (else
                       ~/.cache/tessera/tuning)
  TESSERA_INTERPRET=1  use the interpreter as if --interpret were given
  TESSERA_DEVICE=N     tune on GPU N (default 0)
  (TESSERA_AUTOTUNE_MISS does not apply: this command tunes every miss)

exit codes: 0 ok, 1 compile error, no config of a shape ran correctly, or a bad
import file, 2 bad command line or arguments that do not fit the kernel, 3 an
output file could not be written
)";

struct AutotuneOptions {
  std::string file, kernel;
  std::map<std::string, ConstexprValue> defines;
  std::vector<std::string> importPaths;
  std::vector<KeyValues> shapes;
  std::vector<IntExpr> grid;
  ConfigSpace space; // from --config/--key/--reset/--restore; no configs: the decorator's
  bool spaceOptionGiven = false;
  double budgetSeconds = 0, compileTimeoutSeconds = 0;
  int repeats = 10;
  bool force = false, interpret = false;
  std::string jsonPath;
  uint64_t seed = 0;
  std::vector<ArgTemplate> args;
};

bool isIdentifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

/// "M=512,N=8192,K=2*N" into (name, value) pairs.
bool parseShape(const std::string &text, KeyValues &shape, std::string &error) {
  IntNames known;
  for (const std::string &part : splitTopLevel(text)) {
    size_t eq = part.find('=');
    std::string name = part.substr(0, eq);
    if (eq == std::string::npos || !isIdentifier(name)) {
      error = "--shape expects NAME=VALUE[,NAME=VALUE...], got '" + text + "'";
      return false;
    }
    if (known.count(name)) {
      error = "--shape '" + text + "' gives '" + name + "' twice";
      return false;
    }
    std::string why;
    std::optional<int64_t> v = evalIntExpr(part.substr(eq + 1), known, why);
    if (!v) {
      error = why + " in --shape '" + text + "'";
      return false;
    }
    known[name] = *v;
    shape.emplace_back(name, *v);
  }
  return true;
}

bool parseGridExpressions(const std::string &text, std::vector<IntExpr> &grid, std::string &error) {
  std::vector<std::string> parts = splitTopLevel(text);
  if (parts.size() > 3) {
    error = "--grid expects 1 to 3 expressions (X[,Y,Z]), got " + std::to_string(parts.size()) +
            " in '" + text + "'";
    return false;
  }
  grid.clear();
  for (const std::string &part : parts) {
    std::string why;
    std::optional<IntExpr> e = IntExpr::parse(part, why);
    if (!e) {
      error = why + " in --grid expression '" + text + "'";
      return false;
    }
    grid.push_back(*e);
  }
  return true;
}

/// "M", "M:pow2", "K:edges(1024,8192)".
bool parseKey(const std::string &text, KeySpec &key, std::string &error) {
  size_t colon = text.find(':');
  key.name = text.substr(0, colon);
  std::optional<Bucketing> b =
      colon == std::string::npos ? Bucketing::none() : Bucketing::parse(text.substr(colon + 1));
  if (!isIdentifier(key.name) || !b) {
    error = "--key expects NAME, NAME:none, NAME:pow2 or NAME:edges(a,b,...), got '" + text + "'";
    return false;
  }
  key.bucketing = *b;
  return true;
}

bool parseSeconds(const std::string &flag, const std::string &v, double &out, std::string &error) {
  char *end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(d > 0) || d > 1e9) {
    error = flag + " expects a positive number of seconds, got '" + v + "'";
    return false;
  }
  out = d;
  return true;
}

/// One option at `args` into `o`: nullopt when it was one, else the exit code.
std::optional<int> parseOption(ArgReader &args, AutotuneOptions &o) {
  const std::string a = args.arg();
  std::string v, err;
  auto usage = [&](const std::string &msg) { return usageError(msg, kAutotuneHelp); };
  if (a == "-h" || a == "--help") {
    std::cout << kAutotuneHelp;
    return kOk;
  } else if (args.value("--kernel", v)) {
    o.kernel = v;
  } else if (args.value("-D", v)) {
    if (!parseDefine(v, o.defines, err))
      return usage(err);
  } else if (args.value("-I", v)) {
    o.importPaths.push_back(v);
  } else if (args.value("--shape", v)) {
    KeyValues shape;
    if (!parseShape(v, shape, err))
      return usage(err);
    o.shapes.push_back(shape);
  } else if (args.value("--grid", v)) {
    if (!parseGridExpressions(v, o.grid, err))
      return usage(err);
  } else if (args.value("--config", v)) {
    std::optional<Config> c = Config::parse(v, &err);
    if (!c)
      return usage("cannot parse --config '" + v + "': " + err);
    o.space.add(*c);
  } else if (args.value("--key", v)) {
    KeySpec key;
    if (!parseKey(v, key, err))
      return usage(err);
    o.space.keys.push_back(key);
    o.spaceOptionGiven = true;
  } else if (args.value("--reset", v)) {
    o.space.reset.push_back(v);
    o.spaceOptionGiven = true;
  } else if (args.value("--restore", v)) {
    o.space.restore.push_back(v);
    o.spaceOptionGiven = true;
  } else if (args.value("--budget", v)) {
    if (!parseSeconds("--budget", v, o.budgetSeconds, err))
      return usage(err);
  } else if (args.value("--compile-timeout", v)) {
    if (!parseSeconds("--compile-timeout", v, o.compileTimeoutSeconds, err))
      return usage(err);
  } else if (args.value("--repeats", v)) {
    unsigned long long n;
    if (!parseUnsigned(v, n) || n < 1 || n > 100000)
      return usage("--repeats expects an integer from 1 to 100000, got '" + v + "'");
    o.repeats = int(n);
  } else if (a == "--force") {
    o.force = true;
  } else if (args.value("--json", v)) {
    o.jsonPath = v;
  } else if (a == "--interpret") {
    o.interpret = true;
  } else if (args.value("--seed", v)) {
    unsigned long long s;
    if (!parseUnsigned(v, s))
      return usage("--seed expects a non-negative integer, got '" + v + "'");
    o.seed = s;
  } else if (args.missingValue()) {
    return usage(a + " needs a value");
  } else {
    return usage("unknown option '" + a + "'");
  }
  return std::nullopt;
}

/// The whole command line into `o`: nullopt to go on, else the exit code.
std::optional<int> parseCommandLine(int argc, char **argv, AutotuneOptions &o) {
  std::vector<std::string> positional;
  bool endOfOptions = false;
  ArgReader args(argc, argv);
  while (args.next()) {
    const std::string a = args.arg();
    if (endOfOptions || a.empty() || a[0] != '-' || a == "-" || looksLikeNumber(a)) {
      positional.push_back(a);
    } else if (a == "--") {
      endOfOptions = true;
    } else if (std::optional<int> rc = parseOption(args, o)) {
      return rc;
    }
  }
  auto usage = [&](const std::string &msg) { return usageError(msg, kAutotuneHelp); };
  if (positional.empty())
    return usage("no input file");
  o.file = positional[0];
  if (o.shapes.empty())
    return usage("--shape is required (e.g. --shape M=512,N=1024; one per shape to tune)");
  if (o.grid.empty())
    return usage("--grid is required (e.g. --grid 'cdiv(M,BM)*cdiv(N,BN)')");
  if (o.spaceOptionGiven && o.space.configs.empty())
    return usage("--key, --reset and --restore describe a space given with --config; without "
                 "--config the kernel's @autotune decorator gives them");
  if (!o.space.configs.empty()) {
    CompileOptions base;
    base.constexprs = o.defines;
    if (std::string why = o.space.validate(base); !why.empty())
      return usage("the --config space: " + why);
  }
  for (size_t i = 1; i < positional.size(); ++i) {
    ArgTemplate t;
    std::string err;
    if (!t.parse(positional[i], err))
      return usage("argument " + std::to_string(i) + ": " + err);
    o.args.push_back(t);
  }
  return std::nullopt;
}

/// The names a --grid expression may use for `config`: the kernel's integer
/// constexprs (defaults and -D), the config's, and the shape's.
IntNames gridNames(const KernelSignature &sig, const Config &config, const KeyValues &shape) {
  IntNames names;
  for (const auto &[name, value] : sig.constexprs)
    if (std::holds_alternative<int64_t>(value))
      names[name] = std::get<int64_t>(value);
  for (const auto &[name, value] : config.constexprs)
    if (std::holds_alternative<int64_t>(value))
      names[name] = std::get<int64_t>(value);
  for (const auto &[name, value] : shape)
    names[name] = value;
  return names;
}

/// The grid of `config` for `shape`; false and `error` when an expression fails.
bool evalGrid(const std::vector<IntExpr> &grid, const KernelSignature &sig, const Config &config,
              const KeyValues &shape, Grid &out, std::string &error) {
  IntNames names = gridNames(sig, config, shape);
  int64_t dims[3] = {1, 1, 1};
  for (size_t d = 0; d < grid.size(); ++d) {
    std::string why;
    std::optional<int64_t> v = grid[d].eval(names, why);
    if (!v) {
      std::string known;
      for (const auto &[name, value] : names)
        known += (known.empty() ? "" : ", ") + name;
      error = why + " in --grid expression '" + grid[d].text() + "' (names: " + known + ")";
      return false;
    }
    dims[d] = *v;
  }
  try {
    out = Grid::of(dims[0], dims[1], dims[2]);
  } catch (const std::exception &e) {
    error = "--grid for " + config.str() + " at shape " + keyValuesText(shape) + ": " + e.what();
    return false;
  }
  return true;
}

/// A shape's arguments: host inputs, their device copies, the launch values.
struct ShapeArgs {
  Inputs inputs;
  std::vector<DeviceMemory> memory;
  std::vector<ArgValue> values;
  std::vector<const DeviceMemory *> buffers; // per parameter, null for scalars
};

/// Builds a shape's arguments, or prints why not and returns an exit code.
std::optional<int> makeShapeArgs(const Context &ctx, const AutotuneOptions &o,
                                 const KeyValues &shape, const KernelSignature &sig,
                                 ShapeArgs &out) {
  IntNames names(shape.begin(), shape.end());
  std::vector<ArgSpec> specs;
  for (const ArgTemplate &t : o.args) {
    ArgSpec spec;
    std::string err;
    if (!t.bind(names, spec, err)) {
      std::cerr << "tessera: error: shape " << keyValuesText(shape) << ": " << err << "\n";
      return kUsage;
    }
    specs.push_back(spec);
  }
  if (!makeInputs(sig, specs, o.seed, out.inputs))
    return kUsage;
  out.memory = uploadInputs(ctx, out.inputs);
  out.values = launchArgs(out.inputs, out.memory);
  out.buffers.assign(out.values.size(), nullptr);
  for (size_t i = 0; i < out.values.size(); ++i)
    if (out.inputs.bufferOf[i] >= 0)
      out.buffers[i] = &out.memory[size_t(out.inputs.bufferOf[i])];
  return std::nullopt;
}

TunedKernelOptions tuningOptions(const Context &ctx, const AutotuneOptions &o, double budget) {
  TunedKernelOptions t;
  t.onMiss = MissPolicy::TuneNow;
  t.retune = o.force;
  t.tuning.timing.repeats = o.repeats;
  t.tuning.retimeRepeats = 3 * o.repeats;
  // The interpreter has no L2 to flush; writing 256 MiB per repeat would
  // only slow it down.
  t.tuning.timing.flushL2 = !ctx.isInterpreter();
  t.tuning.compileTimeoutSeconds = o.compileTimeoutSeconds;
  t.tuning.budgetSeconds = budget;
  return t;
}

/// Opens the kernel as a TunedKernel; prints why not and returns an exit code.
std::optional<int> openKernel(Context &ctx, const AutotuneOptions &o, TunedKernelOptions options,
                              std::optional<TunedKernel> &out) {
  JitOptions jit;
  jit.importPaths = o.importPaths;
  try {
    if (o.space.configs.empty())
      out.emplace(ctx, o.file, o.kernel, o.defines, jit, std::move(options));
    else
      out.emplace(ctx, o.file, o.kernel, o.space, o.defines, jit, std::move(options));
  } catch (const std::exception &e) {
    std::string msg = e.what();
    if (msg.find("has no @autotune decorator") != std::string::npos) {
      std::cerr << "tessera: error: kernel '" << o.kernel << "' has no @autotune decorator: give "
                << "its configs with --config (and its keys with --key)\n";
      return kUsage;
    }
    // A space that does not fit the kernel ("autotune key 'X' of kernel 'k' is
    // not an integer parameter") is the command line's mistake when it came
    // from --config and --key; anything else is the source's (diagnostics).
    bool spaceProblem = msg.rfind("autotune ", 0) == 0 || msg.rfind("kernel '", 0) == 0;
    if (spaceProblem)
      msg = "tessera: error: " + msg;
    std::cerr << msg << (msg.empty() || msg.back() == '\n' ? "" : "\n");
    return spaceProblem && !o.space.configs.empty() ? kUsage : kInputError;
  }
  return std::nullopt;
}

/// Tunes (or finds in the cache) one shape. Returns an exit code that stops
/// the command (bad arguments or grid), or nullopt; a tuning that fails is
/// `out.error`.
std::optional<int> tuneShape(Context &ctx, const AutotuneOptions &o, const KeyValues &shape,
                             double budget, ShapeOutcome &out) {
  out.shape = shape;
  TuningProgress progress(o.kernel + " " + keyValuesText(shape), isatty(STDERR_FILENO));
  TunedKernelOptions options = tuningOptions(ctx, o, budget);
  options.tuning.progress = [&progress](const char *phase, size_t done, size_t total) {
    progress(phase, done, total);
  };
  std::optional<TunedKernel> kernel;
  if (std::optional<int> rc = openKernel(ctx, o, options, kernel))
    return rc;
  const KernelSignature &sig = kernel->signature();
  ShapeArgs args;
  if (std::optional<int> rc = makeShapeArgs(ctx, o, shape, sig, args))
    return rc;
  // Every candidate's grid, before any tuning: a mistake in --grid is the
  // command line's, not a config's.
  for (const Config &c : kernel->space().candidates()) {
    Grid g;
    std::string err;
    if (!evalGrid(o.grid, sig, c, shape, g, err)) {
      std::cerr << "tessera: error: " << err << "\n";
      return kUsage;
    }
  }
  auto grid = [&](const Config &c) {
    Grid g;
    std::string err;
    if (!evalGrid(o.grid, sig, c, shape, g, err))
      throw Error(err);
    return g;
  };
  try {
    out.key = kernel->keyFor(args.values);
    kernel->configForArgs(grid, args.values, args.buffers);
  } catch (const std::exception &e) {
    progress.finish();
    out.error = e.what();
    return std::nullopt;
  }
  progress.finish();
  TuningDecision d = kernel->lastDecision();
  out.source = d.source == "tuned" ? "tuned" : "cached";
  out.seconds = d.seconds;
  out.record = d.record ? d.record : TuningCache::global().lookup(out.key);
  if (!out.record)
    out.error = "the tuning cache lost the entry of " + out.key.str();
  return std::nullopt;
}

int runTuning(const AutotuneOptions &o) {
  // This command is there to tune: a miss policy from the environment
  // ("first", "nearest") would make it report configs it never timed.
  ::unsetenv("TESSERA_AUTOTUNE_MISS");
  Backends be = openBackends(o.interpret, false);
  Context &ctx = be.gpu ? *be.gpu : *be.interp;
  size_t configs = o.space.configs.size();
  std::cout << "autotune " << o.kernel << " (" << o.file << ") on " << ctx.deviceName() << ": "
            << o.shapes.size() << (o.shapes.size() == 1 ? " shape" : " shapes") << ", ";
  if (configs == 0)
    std::cout << "the configs of its @autotune decorator\n";
  else
    std::cout << configs << (configs == 1 ? " config" : " configs") << " from --config\n";
  if (o.shapes.size() > 1 && !o.space.configs.empty() && o.space.keys.empty())
    std::cerr << "tessera autotune: note: no --key: every shape has the same tuning key, so "
                 "the shapes after the first find its tuning\n";
  auto begin = std::chrono::steady_clock::now();
  std::vector<ShapeOutcome> outcomes;
  int rc = kOk;
  for (size_t i = 0; i < o.shapes.size(); ++i) {
    double budget = 0;
    if (o.budgetSeconds > 0) {
      double spent =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      // 0 would mean "no cap": a spent budget still times one config per shape.
      budget = std::max(1e-6, (o.budgetSeconds - spent) / double(o.shapes.size() - i));
    }
    ShapeOutcome out;
    if (std::optional<int> stop = tuneShape(ctx, o, o.shapes[i], budget, out))
      return *stop;
    if (!out.record) {
      std::cerr << "tessera: error: shape " << keyValuesText(out.shape) << ": " << out.error
                << (out.error.empty() || out.error.back() == '\n' ? "" : "\n");
      rc = kInputError;
    }
    printShapeOutcome(std::cout, out);
    std::cout.flush();
    outcomes.push_back(std::move(out));
  }
  if (!o.jsonPath.empty() &&
      !writeOutput(o.jsonPath, outcomesJson(o.kernel, o.file, ctx.deviceName(), outcomes)))
    return kIoError;
  return rc;
}

} // namespace

int cmdAutotune(int argc, char **argv) {
  if (argc > 0) {
    std::string sub = argv[0];
    if (sub == "show" || sub == "export" || sub == "import" || sub == "prune")
      return cmdAutotuneCache(sub, argc - 1, argv + 1, kAutotuneHelp);
  }
  AutotuneOptions o;
  if (std::optional<int> rc = parseCommandLine(argc, argv, o))
    return *rc;
  if (int rc = chooseKernel(o.file, o.kernel, kAutotuneHelp); rc != kOk)
    return rc;
  return runTuning(o);
}

} // namespace tessera::cli
