// TunedKernel: key values from the arguments -> memory, the tuning cache, or
// a tuning with the launch's own arguments -> the compiled config
// (tessera/TunedKernel.h).
#include "tessera/TunedKernel.h"

#include "tessera/Compiler.h"
#include "tessera/Error.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace tessera {
namespace {

struct ValuesHash {
  size_t operator()(const std::vector<int64_t> &v) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t x : v)
      h = (h ^ uint64_t(x)) * 1099511628211ull;
    return size_t(h);
  }
};

bool printFromEnvironment() {
  const char *v = std::getenv("TESSERA_PRINT_AUTOTUNING");
  return v && *v && std::string(v) != "0";
}

/// The first error line of rendered diagnostics, without the "file:l:c: error: " part.
std::string firstError(const std::string &diagnostics) {
  std::istringstream in(diagnostics);
  for (std::string line; std::getline(in, line);)
    if (size_t at = line.find("error: "); at != std::string::npos)
      return line.substr(at + 7);
  return diagnostics.substr(0, diagnostics.find('\n'));
}

std::string keyText(const KeyValues &key) {
  std::string s;
  for (const auto &[name, value] : key)
    s += (s.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return s.empty() ? "(no key)" : s;
}

} // namespace

struct TunedKernel::State {
  Context *ctx = nullptr;
  std::string path, kernel;
  std::map<std::string, ConstexprValue> fixed;
  JitOptions options;  // what configs are applied to, without `fixed`
  JitOptions keyBase;  // `options` with `fixed` as its constexprs: the key's options
  TunedKernelOptions tuning;
  ConfigSpace space;
  std::vector<std::pair<std::string, std::string>> sources;
  KernelSignature signature;
  /// Per key of the space: the index of its argument, or -1 with its value
  /// in `constantKey` (an integer constexpr of the kernel).
  std::vector<int> keyArgument;
  std::vector<int64_t> constantKey;
  std::vector<int> resetArguments, restoreArguments;
  bool print = false;

  struct Resolved {
    Config config;
    Kernel kernel;
  };
  mutable std::mutex mutex;
  std::unordered_map<std::vector<int64_t>, Resolved, ValuesHash> memo;
  TunedKernelStats stats;
  std::atomic<uint64_t> compiles{0};
  TuningDecision last;
  std::mutex verdictMutex;
  std::map<std::string, std::string> verdicts; // frontEndVerdict by Config::str()

  int parameterIndex(const std::string &name) const {
    for (size_t i = 0; i < signature.params.size(); ++i)
      if (signature.params[i].name == name)
        return int(i);
    return -1;
  }

  void setUp() {
    keyBase = options;
    keyBase.constexprs = fixed;
    CompileResult front = compileFile(path, kernel, keyBase, Stage::Tile);
    if (!front.ok)
      throw Error(front.diagnostics);
    sources = front.sources;
    for (const KernelSignature &s : front.kernels)
      if (s.name == kernel)
        signature = s;
    if (signature.name.empty())
      throw Error("no kernel '" + kernel + "' in " + path);
    if (space.configs.empty()) {
      auto it = front.configSpaces.find(kernel);
      if (it == front.configSpaces.end() || !it->second)
        throw Error("kernel '" + kernel + "' in " + path +
                    " has no @autotune decorator: give TunedKernel a ConfigSpace");
      space = *it->second;
    }
    if (std::string why = space.validate(keyBase); !why.empty())
      throw Error("kernel '" + kernel + "': " + why);
    for (const KeySpec &k : space.keys) {
      int i = parameterIndex(k.name);
      if (i >= 0 && signature.params[i].type.pointerDepth == 0 &&
          !isFloat(signature.params[i].type.scalar)) {
        keyArgument.push_back(i);
        constantKey.push_back(0);
        continue;
      }
      auto c = signature.constexprs.find(k.name);
      if (i < 0 && c != signature.constexprs.end() && std::holds_alternative<int64_t>(c->second)) {
        keyArgument.push_back(-1);
        constantKey.push_back(std::get<int64_t>(c->second));
        continue;
      }
      throw Error("autotune key '" + k.name + "' of kernel '" + kernel +
                  "' is not an integer parameter");
    }
    for (auto [names, into] : {std::pair{&space.reset, &resetArguments},
                               std::pair{&space.restore, &restoreArguments}}) {
      for (const std::string &n : *names) {
        int i = parameterIndex(n);
        if (i < 0 || signature.params[i].type.pointerDepth == 0)
          throw Error("autotune " + std::string(names == &space.reset ? "reset" : "restore") +
                      " '" + n + "' is not a pointer parameter of kernel '" + kernel + "'");
        into->push_back(i);
      }
    }
    print = tuning.print || printFromEnvironment();
  }

  /// The kernel's files as absolute paths, for TuningCache::pruneStale, which
  /// may run from another directory (`tessera autotune prune`).
  std::vector<std::string> sourcePaths() const {
    std::vector<std::string> paths;
    for (const auto &source : sources) {
      std::error_code ec;
      std::filesystem::path abs = std::filesystem::absolute(source.first, ec);
      paths.push_back(ec ? source.first : abs.lexically_normal().string());
    }
    return paths;
  }

  TuningCache &cache() const { return tuning.cache ? *tuning.cache : TuningCache::global(); }

  /// The value of key `k` in a launch with `args` (not bucketed).
  int64_t keyValue(size_t k, const std::vector<ArgValue> &args) const {
    int i = keyArgument[k];
    if (i < 0)
      return constantKey[k];
    const ArgValue &a = args[size_t(i)];
    switch (a.type.scalar) {
    case ScalarType::i1:
    case ScalarType::u8: return a.as<uint8_t>();
    case ScalarType::i8: return a.as<int8_t>();
    case ScalarType::i16: return a.as<int16_t>();
    case ScalarType::i32: return a.as<int32_t>();
    case ScalarType::u16: return a.as<uint16_t>();
    case ScalarType::u32: return a.as<uint32_t>();
    default: return a.as<int64_t>(); // a u64 past 2^63 wraps, as any bucket key would
    }
  }

  /// The key values by name, for TuningKey::make.
  std::map<std::string, int64_t> keyArguments(const std::vector<ArgValue> &args) const {
    std::map<std::string, int64_t> values;
    for (size_t k = 0; k < space.keys.size(); ++k)
      values[space.keys[k].name] = keyValue(k, args);
    return values;
  }

  /// The bucketed key values in key order: what a launch looks up in memory,
  /// without building names (this runs on every launch).
  std::vector<int64_t> bucketedValues(const std::vector<ArgValue> &args) const {
    std::vector<int64_t> out(space.keys.size());
    for (size_t k = 0; k < out.size(); ++k)
      out[k] = space.keys[k].bucketing.apply(keyValue(k, args));
    return out;
  }

  Kernel compileConfig(const Config &config) {
    JitOptions o = options;
    std::map<std::string, ConstexprValue> cx = fixed;
    config.applyTo(o, cx);
    ++compiles;
    return tessera::compile(*ctx, path, kernel, cx, o);
  }

  /// Why the front end rejects `config` (a static_assert), or "". It does
  /// not depend on the shape, so each config's front end runs once per
  /// object, not once per tuned key. Called on the compile threads.
  std::string frontEndVerdict(const Config &config) {
    std::string name = config.str();
    {
      std::lock_guard<std::mutex> lock(verdictMutex);
      if (auto it = verdicts.find(name); it != verdicts.end())
        return it->second;
    }
    CompileResult r = compileFile(path, kernel, config.appliedTo(keyBase), Stage::Tile);
    std::string why;
    if (!r.ok) {
      why = firstError(r.diagnostics);
      why = why.rfind("static assertion failed", 0) == 0 ? "static_assert: " + why
                                                          : "front-end error: " + why;
    }
    std::lock_guard<std::mutex> lock(verdictMutex);
    return verdicts.emplace(name, why).first->second;
  }

  /// Why a compiled candidate is not worth timing: it spills, or needs more
  /// shared memory than the device allows; builds the launch's variant.
  std::string resourceVerdict(Kernel &k, const std::vector<ArgValue> &args) const {
    detail::KernelVariant v = k.variantFor(args);
    if (tuning.keepSpilling || ctx->isInterpreter())
      return "";
    FunctionAttributes a = v.function.attributes();
    if (a.localBytes > 0)
      return "spills: " + std::to_string(a.localBytes) + " bytes of local memory per thread";
    size_t limit = ctx->device().maxSharedMemoryPerBlockOptin;
    size_t need = v.sharedMemoryBytes + a.staticSharedBytes;
    if (limit > 0 && need > limit)
      return "needs " + std::to_string(need) + " bytes of shared memory, the device allows " +
             std::to_string(limit);
    return "";
  }

  TuningRecord tuneNow(const GridFn &grid, const std::vector<ArgValue> &args,
                       const std::vector<const DeviceMemory *> &buffers, TuneStats &counted) {
    auto buffer = [&](int i, const char *role) {
      const DeviceMemory *m = buffers.empty() ? nullptr : buffers[i];
      if (!m)
        throw Error(std::string("autotune ") + role + " '" + signature.params[i].name +
                    "' of kernel '" + kernel +
                    "' must be passed as a DeviceBuffer, so that the tuner knows its size");
      return const_cast<DeviceMemory *>(m); // the kernel writes it anyway
    };
    TuneTask task;
    task.admit = [this](const Config &c) { return frontEndVerdict(c); };
    task.compile = [this](const Config &c) { return compileConfig(c); };
    task.afterCompile = [this, &args](Kernel &k, const Config &) { return resourceVerdict(k, args); };
    task.launch = [this, &grid, &args](Kernel &k, const Config &c) {
      k.launchWithArgs(ctx->stream(), grid(c), args);
    };
    for (size_t i = 0; i < signature.params.size(); ++i)
      if (signature.params[i].written && !buffers.empty() && buffers[i])
        task.outputs.push_back({const_cast<DeviceMemory *>(buffers[i]), // the kernel writes it
                                signature.params[i].type.scalar,
                                /*poison=*/!signature.params[i].read});
    task.tolerance = tuning.tolerance;
    for (int i : resetArguments)
      task.reset.push_back(buffer(i, "reset"));
    for (int i : restoreArguments)
      task.restore.push_back(buffer(i, "restore"));
    return tessera::tune(*ctx, space, task, tuning.tuning, &counted);
  }

  void report(const TuningDecision &d, const std::optional<TuningKey> &from) const {
    std::string how;
    char buf[160];
    if (d.source == "tuned") {
      size_t timed = 0;
      for (const CandidateResult &c : d.record->candidates)
        timed += !c.skipped();
      const CandidateResult *best = d.record->bestCandidate();
      std::snprintf(buf, sizeof buf, "tuned in %.2f s: %zu configs, %zu timed; best %.4g ms",
                    d.seconds, d.record->candidates.size(), timed,
                    best && best->timeMs ? *best->timeMs : 0.0);
      how = buf;
    } else if (d.source == "cache") {
      how = "from the tuning cache";
    } else if (d.source == "nearest") {
      how = "nearest tuned key " + (from ? keyText(from->keyValues) : std::string("?"));
    } else {
      how = "first config, not tuned";
    }
    std::cerr << "tessera autotune: " << kernel << " " << keyText(d.key) << " -> "
              << d.config.str() << " (" << how << ")\n";
  }

  const Resolved &resolve(const GridFn &grid, const std::vector<ArgValue> &args,
                          const std::vector<const DeviceMemory *> &buffers) {
    // A hit is checked by the launch itself (Kernel::launchWithArgs); only
    // the count must be right to read the key arguments. Anything else is
    // checked before it can be tuned with.
    if (args.size() != signature.params.size())
      checkLaunchArgs(signature, args); // throws: the usual message
    if (!buffers.empty() && buffers.size() != args.size())
      throw Error("TunedKernel: " + std::to_string(buffers.size()) + " buffers for " +
                  std::to_string(args.size()) + " arguments");
    std::vector<int64_t> memoKey = bucketedValues(args);
    std::lock_guard<std::mutex> lock(mutex); // one resolution at a time
    ++stats.launches;
    if (auto it = memo.find(memoKey); it != memo.end()) {
      ++stats.memoryHits;
      return it->second;
    }
    checkLaunchArgs(signature, args);
    std::map<std::string, int64_t> values = keyArguments(args);
    KeyValues bucketed = space.bucket(values);
    TuningKey key = TuningKey::make(ctx->device(), kernel, sources, keyBase, space, values);
    Resolution r;
    if (!tuning.retune)
      r = cache().resolve(key, space, effectiveMissPolicy(tuning.onMiss));
    TuningDecision d;
    d.key = bucketed;
    switch (r.source) {
    case Resolution::Source::Exact: d.source = "cache", ++stats.cacheHits; break;
    case Resolution::Source::Nearest: d.source = "nearest", ++stats.fallbacks; break;
    case Resolution::Source::FirstConfig: d.source = "first", ++stats.fallbacks; break;
    case Resolution::Source::MustTune: {
      auto begin = std::chrono::steady_clock::now();
      TuneStats counted;
      auto record = std::make_shared<TuningRecord>(tuneNow(grid, args, buffers, counted));
      record->sourcePaths = sourcePaths();
      d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
      cache().store(key, *record);
      stats.timedRuns += uint64_t(counted.timed);
      ++stats.tunings;
      d.source = "tuned";
      d.record = record;
      r.config = record->best;
      break;
    }
    }
    if (!r.config)
      throw Error("kernel '" + kernel + "': no config of its space passes the prune condition");
    d.config = *r.config;
    Resolved resolved{*r.config, compileConfig(*r.config)};
    stats.compiles = compiles;
    if (print)
      report(d, r.fromKey);
    last = std::move(d);
    return memo.emplace(memoKey, std::move(resolved)).first->second;
  }
};

TunedKernel::TunedKernel(Context &ctx, const std::string &path, const std::string &kernel,
                         std::map<std::string, ConstexprValue> constexprs, JitOptions options,
                         TunedKernelOptions tuning)
    : TunedKernel(ctx, path, kernel, ConfigSpace{}, std::move(constexprs), std::move(options),
                  std::move(tuning)) {}

TunedKernel::TunedKernel(Context &ctx, const std::string &path, const std::string &kernel,
                         ConfigSpace space, std::map<std::string, ConstexprValue> constexprs,
                         JitOptions options, TunedKernelOptions tuning)
    : state_(std::make_unique<State>()) {
  State &s = *state_;
  s.ctx = &ctx;
  s.path = path;
  s.kernel = kernel;
  s.fixed = std::move(constexprs);
  s.options = std::move(options);
  s.tuning = std::move(tuning);
  s.space = std::move(space);
  s.setUp();
}

TunedKernel::~TunedKernel() = default;
TunedKernel::TunedKernel(TunedKernel &&) noexcept = default;
TunedKernel &TunedKernel::operator=(TunedKernel &&) noexcept = default;

void TunedKernel::launchWithArgs(const Stream &stream, const GridFn &grid,
                                 const std::vector<ArgValue> &args,
                                 const std::vector<const DeviceMemory *> &buffers,
                                 const LaunchOptions &options) {
  const State::Resolved &r = state_->resolve(grid, args, buffers);
  r.kernel.launchWithArgs(stream, grid(r.config), args, options);
}

Config TunedKernel::configForArgs(const GridFn &grid, const std::vector<ArgValue> &args,
                                  const std::vector<const DeviceMemory *> &buffers) {
  checkLaunchArgs(state_->signature, args); // no launch checks them after a hit
  return state_->resolve(grid, args, buffers).config;
}

TuningKey TunedKernel::keyFor(const std::vector<ArgValue> &args) const {
  const State &s = *state_;
  checkLaunchArgs(s.signature, args);
  return TuningKey::make(s.ctx->device(), s.kernel, s.sources, s.keyBase, s.space,
                         s.keyArguments(args));
}

const ConfigSpace &TunedKernel::space() const { return state_->space; }
const KernelSignature &TunedKernel::signature() const { return state_->signature; }

TunedKernelStats TunedKernel::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  TunedKernelStats s = state_->stats;
  s.compiles = state_->compiles;
  return s;
}

TuningDecision TunedKernel::lastDecision() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->last;
}

} // namespace tessera
