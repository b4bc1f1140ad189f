// The autotuner's foundation: configs, config spaces with key bucketing, the
// tuning key, tuning records and the on-disk tuning cache (docs/autotune.md).
//
//   tessera::ConfigSpace space;
//   space.add(tessera::Config{{{"BM", int64_t(128)}, {"BN", int64_t(256)}}}.warps(8).stages(4))
//        .add(tessera::Config{{{"BM", int64_t(64)}, {"BN", int64_t(128)}}}.warps(4));
//   space.key("M", tessera::Bucketing::pow2()).key("N", tessera::Bucketing::pow2());
//   tessera::TuningKey key = tessera::TuningKey::make(ctx.device(), "matmul", result.sources,
//                                                     options, space, {{"M", m}, {"N", n}});
//   if (auto record = tessera::TuningCache::global().lookup(key))
//     record->best.applyTo(options, constexprs);
//
// A kernel's @autotune decorator declares a ConfigSpace in the language
// (CompileResult::configSpaces); the runner that compiles and times the
// candidates is in tessera/AutotuneRunner.h. Not yet: TunedKernel and
// `tessera autotune`. The types are shaped for them (a config's skip reason,
// reset/restore, the miss policy).
//
// Free of MLIR; the functions that read files never throw on bad contents.
#ifndef TESSERA_AUTOTUNE_H
#define TESSERA_AUTOTUNE_H

#include "tessera/Backend.h"
#include "tessera/CompileOptions.h"
#include "tessera/Types.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera {

// ---- configs ---------------------------------------------------------------------

/// One candidate: constexpr values plus the code-generation switches of
/// CompileOptions that a config may set. A switch left unset keeps the value
/// of the options the config is applied to.
struct Config {
  std::map<std::string, ConstexprValue> constexprs;
  std::optional<int> numWarps;
  std::optional<int> numStages;
  std::optional<bool> warpSpecialize;
  std::optional<bool> tma;
  std::optional<int> maxRegisters; ///< maxnreg (CompileOptions::maxRegisters)
  std::optional<int> clusterSize;  ///< cluster_size (CompileOptions::clusterSize)

  Config() = default;
  explicit Config(std::map<std::string, ConstexprValue> values) : constexprs(std::move(values)) {}
  Config &set(const std::string &name, ConstexprValue value) {
    constexprs[name] = std::move(value);
    return *this;
  }
  /// The integer constexpr `name` (a tile size, for a grid function).
  /// Throws tessera::Error when the config does not set it to an integer.
  int64_t get(const std::string &name) const;
  /// The integer `name` if the config sets it, else `fallback` (the kernel's default).
  int64_t getOr(const std::string &name, int64_t fallback) const {
    return constexprs.count(name) ? get(name) : fallback;
  }
  Config &warps(int n) { numWarps = n; return *this; }
  Config &stages(int n) { numStages = n; return *this; }
  Config &specializeWarps(bool on) { warpSpecialize = on; return *this; }
  Config &useTma(bool on) { tma = on; return *this; }
  Config &maxnreg(int n) { maxRegisters = n; return *this; }
  Config &cluster(int n) { clusterSize = n; return *this; }
  /// The integer switch named `name` in text, JSON and the decorator
  /// (num_warps, num_stages, maxnreg, cluster_size), or null.
  static std::optional<int> Config::*intSwitch(const std::string &name);
  /// The boolean switch named `name` (warp_specialize, tma), or null.
  static std::optional<bool> Config::*boolSwitch(const std::string &name);

  /// Sets the switches this config sets and its constexprs in options.constexprs.
  void applyTo(CompileOptions &options) const;
  /// For tessera::compile(ctx, path, kernel, constexprs, jitOptions), which
  /// takes the constexprs apart: the switches go to `options`, the constexprs
  /// into `constexprs` (overriding values of the same name).
  void applyTo(CompileOptions &options, std::map<std::string, ConstexprValue> &constexprs) const;
  /// `base` with this config applied.
  CompileOptions appliedTo(const CompileOptions &base) const;

  /// Empty when `base` with this config applied is valid (CompileOptions::validate()).
  std::string validate(const CompileOptions &base = {}) const;

  /// "BK=64,BM=128,BN=256,num_warps=8,num_stages=4": constexprs sorted by name
  /// (constexprToString), then the switches that are set, in the order
  /// num_warps, num_stages, warp_specialize, tma, maxnreg, cluster_size
  /// (booleans as 0/1).
  std::string str() const;
  /// The inverse of str(). Names num_warps, num_stages, warp_specialize and tma
  /// are the switches; any other name is a constexpr (parseConstexpr). Nullopt
  /// (and `*error`) on bad text.
  static std::optional<Config> parse(const std::string &text, std::string *error = nullptr);

  /// {"constexprs": {"BM": 128, "EPS": 1e-05, "FAST": true, "DT": "f16"},
  ///  "num_warps": 8, "num_stages": 4}: ints, floats and booleans as JSON
  /// numbers and booleans (a float keeps its ".0"), dtypes and non-finite
  /// floats as strings; unset switches are absent. Compact (one line).
  std::string toJson() const;
  /// Nullopt (and `*error`) when `text` is not such an object.
  static std::optional<Config> fromJson(const std::string &text, std::string *error = nullptr);

  bool operator==(const Config &o) const;
  bool operator!=(const Config &o) const { return !(*this == o); }
};

// ---- key bucketing -----------------------------------------------------------------

/// How the value of one key argument is rounded into a bucket, so that
/// nearby shapes share a tuning. apply() returns the bucket's representative.
struct Bucketing {
  enum class Kind { None, Pow2, Edges };
  Kind kind = Kind::None;
  /// Kind::Edges: strictly ascending upper bucket edges.
  std::vector<int64_t> edges;

  /// The value itself.
  static Bucketing none() { return {}; }
  /// Rounds up to the next power of two; powers of two stay; 0 and negative
  /// values stay as they are; values above 2^62 stay as they are.
  static Bucketing pow2() { return {Kind::Pow2, {}}; }
  /// Rounds up to the smallest edge >= the value. Values below the first edge
  /// go to the first edge; values above the last edge go to the last edge
  /// (the last bucket is open above).
  static Bucketing at(std::vector<int64_t> edges) { return {Kind::Edges, std::move(edges)}; }

  int64_t apply(int64_t value) const;
  /// Empty when valid, else why ("bucket edges must be strictly ascending: 64 after 128").
  std::string validate() const;
  /// "none", "pow2", "edges(16,64,256)".
  std::string str() const;
  /// The inverse of str(); also accepts "edges:16,64,256". Nullopt when unparsable.
  static std::optional<Bucketing> parse(const std::string &text);

  bool operator==(const Bucketing &o) const { return kind == o.kind && edges == o.edges; }
  bool operator!=(const Bucketing &o) const { return !(*this == o); }
};

/// One key of a config space: an integer argument of the kernel (or later a
/// dtype constexpr), and how its values are bucketed.
struct KeySpec {
  std::string name;
  Bucketing bucketing;
};

/// (name, bucketed value) of each key, in the space's key order.
using KeyValues = std::vector<std::pair<std::string, int64_t>>;

/// The configs to try for one kernel, the arguments the choice depends on, and
/// what the runner must do to time the kernel safely.
struct ConfigSpace {
  std::vector<Config> configs;
  std::vector<KeySpec> keys;
  /// The condition a config must meet to be tried (the decorator's
  /// prune="BM * BK <= 16384"): a config for which it returns false is skipped
  /// before compilation. Unset: every config is tried. NOT part of hash(): a
  /// function has no stable text; change a config or a key when the
  /// condition changes, or clear the entries (docs/autotune.md).
  std::function<bool(const Config &)> prune;
  /// The text of the decorator's prune= expression, which `prune` evaluates
  /// (empty for spaces built in C++). Part of hash(): editing the condition
  /// gives new tuning keys.
  std::string pruneExpression;
  /// Pointer arguments zeroed before each timed launch (accumulating kernels).
  std::vector<std::string> reset;
  /// Pointer arguments copied back after each timed launch (in-place kernels).
  std::vector<std::string> restore;

  ConfigSpace &add(Config config) {
    configs.push_back(std::move(config));
    return *this;
  }
  ConfigSpace &key(std::string name, Bucketing bucketing = {}) {
    keys.push_back({std::move(name), std::move(bucketing)});
    return *this;
  }

  /// Empty when valid; else the first problem: no configs, a duplicate config,
  /// a config that is invalid on `base`, an empty or duplicate key name, bad
  /// bucket edges, an empty or duplicate reset/restore name.
  std::string validate(const CompileOptions &base = {}) const;
  /// True when `config` passes `prune` (or there is none).
  bool admits(const Config &config) const { return !prune || prune(config); }
  /// The configs that pass `prune`, in order.
  std::vector<Config> candidates() const;
  /// The bucketed value of every key, in key order, from the arguments' values
  /// by name. Throws tessera::Error naming a key that `values` lacks.
  KeyValues bucket(const std::map<std::string, int64_t> &values) const;

  /// The stable text hash() digests: a version line, then every config (its
  /// constexprs with their kinds and its set switches), the keys with their
  /// bucketing, reset and restore, and pruneExpression when not empty, as
  /// length-prefixed fields.
  std::string canonicalText() const;
  /// SHA-256 (64 hex digits) of canonicalText(): the same in every process and
  /// run for an equal space. Excludes the `prune` function (not its text).
  std::string hash() const;
};

// ---- the tuning key --------------------------------------------------------------------

/// Everything a tuning result depends on. Two launches with equal keys may use
/// the same config.
struct TuningKey {
  // The device (DeviceInfo; the CPU interpreter has compute capability 0.0).
  std::string deviceName;
  int smCount = 0;
  int computeCapabilityMajor = 0;
  int computeCapabilityMinor = 0;
  int driverVersion = 0; // 13000 for CUDA 13.0
  /// tessera::compilerVersion() of the process that tuned.
  std::string compilerVersion;
  std::string kernelName;
  /// hashSources() of the kernel's file and every file it imports.
  std::string sourceHash;
  /// CompileOptions::hash() of the options the configs are applied to (the
  /// fixed constexprs such as a dtype, target, switches that no config sets).
  std::string optionsHash;
  /// ConfigSpace::hash().
  std::string spaceHash;
  /// ConfigSpace::bucket() of the launch's argument values.
  KeyValues keyValues;

  /// The key of a launch: `device`, compilerVersion(), hashSources(sources),
  /// base.hash(), space.hash() and space.bucket(arguments). Throws
  /// tessera::Error when `arguments` lacks a key.
  static TuningKey make(const DeviceInfo &device, const std::string &kernelName,
                        const std::vector<std::pair<std::string, std::string>> &sources,
                        const CompileOptions &base, const ConfigSpace &space,
                        const std::map<std::string, int64_t> &arguments);

  /// True when the keys are equal except for keyValues (which must name the
  /// same keys in the same order): nearest() searches among these.
  bool sameExceptValues(const TuningKey &o) const;
  /// "matmul M=512,N=8192 on NVIDIA H100 80GB HBM3 (132 SMs, cc 9.0, driver
  /// 13000), tessera-0.1.0+..., source 1a2b3c4d5e6f, options ..., space ..."
  std::string str() const;
  /// SHA-256 (64 hex digits) of every field, length-prefixed.
  std::string hash() const;
  std::string toJson() const;
  static std::optional<TuningKey> fromJson(const std::string &text, std::string *error = nullptr);

  bool operator==(const TuningKey &o) const;
  bool operator!=(const TuningKey &o) const { return !(*this == o); }
};

/// SHA-256 (64 hex digits) of the texts of `sources` ((path, text) pairs as in
/// CompileResult::sources: the kernel's file first, then its imports in the
/// order the compiler resolved them): TuningKey::sourceHash. The paths are not
/// hashed: the same files reached by another path (relative vs absolute,
/// another checkout) give the same hash, so a tuning made by `tessera
/// autotune` from one directory serves a program started from another. The
/// order and the number of files are hashed.
std::string hashSources(const std::vector<std::pair<std::string, std::string>> &sources);

/// Sum over the keys of |log2(a / b)|, with values below 1 taken as 1: 0 for
/// equal values, 1 for each factor of two apart. The keys must name the same
/// keys in the same order (else +infinity).
double keyDistance(const KeyValues &a, const KeyValues &b);

// ---- tuning records ------------------------------------------------------------------

/// One candidate of a tuning: its time, or why it was skipped.
struct CandidateResult {
  Config config;
  /// Median time of the timed launches, in milliseconds; unset when skipped.
  std::optional<double> timeMs;
  /// Max minus min of the timed launches, in milliseconds.
  double spreadMs = 0;
  /// Number of timed launches.
  int repeats = 0;
  /// Why the candidate was not timed ("pruned", "compile error: ...",
  /// "wrong output: ..."); empty when timed.
  std::string skipReason;

  bool skipped() const { return !timeMs.has_value(); }
  bool operator==(const CandidateResult &o) const;
};

/// The result of tuning one key.
struct TuningRecord {
  Config best;
  std::vector<CandidateResult> candidates;
  /// When it was tuned, ISO 8601 UTC: "2026-11-26T09:40:12Z".
  std::string date;
  /// The paths of the kernel's sources when it was tuned, for pruning and
  /// for people (not part of the key).
  std::vector<std::string> sourcePaths;

  /// The candidate whose config is `best`, if it was recorded.
  const CandidateResult *bestCandidate() const;
  std::string toJson() const;
  static std::optional<TuningRecord> fromJson(const std::string &text, std::string *error = nullptr);
  bool operator==(const TuningRecord &o) const;
};

/// The current time as ISO 8601 UTC with seconds ("2026-11-26T09:40:12Z").
std::string isoDateUtcNow();

// ---- what to do on a miss ----------------------------------------------------------------

enum class MissPolicy {
  TuneNow,     ///< tune the key now (the default)
  Nearest,     ///< use the stored tuning with the nearest key values (TuningCache::nearest),
               ///< else the first config
  FirstConfig, ///< use the space's first candidate without tuning
};
/// "tune", "nearest", "first".
const char *missPolicyName(MissPolicy policy);
/// Parses "tune", "nearest", "first"; nullopt otherwise.
std::optional<MissPolicy> parseMissPolicy(const std::string &text);
/// `configured`, unless the environment variable TESSERA_AUTOTUNE_MISS is set
/// (and not empty): then its value. Throws tessera::Error for a value other
/// than tune, nearest or first.
MissPolicy effectiveMissPolicy(MissPolicy configured = MissPolicy::TuneNow);

// ---- the tuning cache --------------------------------------------------------------------

/// What a cache operation reports. Problems with the files never throw; they
/// are warnings here (or on stderr when no status is passed).
struct TuningStatus {
  std::vector<std::string> warnings;
};

/// Counters since construction (or resetStats()).
struct TuningCacheStats {
  uint64_t memoryHits = 0; ///< lookups answered from memory
  uint64_t diskHits = 0;   ///< lookups answered after reading a file
  uint64_t misses = 0;     ///< lookups that found nothing
  uint64_t fileReads = 0;  ///< cache files read and parsed
  uint64_t fileWrites = 0; ///< cache files written (renamed into place)
  uint64_t corruptFiles = 0; ///< files found corrupt and set aside
};

/// One stored tuning (entries()).
struct TuningEntry {
  TuningKey key;
  std::shared_ptr<const TuningRecord> record;
  std::string file; ///< the cache file holding it
};

/// The result of nearest().
struct NearestTuning {
  TuningKey key;
  std::shared_ptr<const TuningRecord> record;
  double distance = 0; ///< keyDistance() to the key asked for
};

/// What to launch with for a key (TuningCache::resolve()).
struct Resolution {
  enum class Source {
    Exact,       ///< the key's own tuning
    Nearest,     ///< the nearest stored tuning (MissPolicy::Nearest)
    FirstConfig, ///< no tuning: the first candidate (MissPolicy::FirstConfig, or
                 ///< Nearest with nothing near)
    MustTune,    ///< a miss under MissPolicy::TuneNow: the caller tunes
  };
  Source source = Source::MustTune;
  /// The config to use (unset for MustTune, or when no config passes prune).
  std::optional<Config> config;
  /// The record it came from (Exact, Nearest).
  std::shared_ptr<const TuningRecord> record;
  /// Nearest: the key whose tuning is used.
  std::optional<TuningKey> fromKey;
};

/// The tuning cache: versioned JSON files in a directory, one file per kernel
/// name and source hash ("<kernel>.<first 16 hex of the source hash>.v1.json")
/// holding every tuned key of that kernel version, and an in-memory map in
/// front of them. docs/autotune.md describes the format.
///
/// - lookup() answers from memory after the first use; on a memory miss it
///   reads the kernel's file only if the file changed since it was last read.
/// - store() takes an exclusive flock on "<file>.lock", reads the file,
///   merges the entry (replacing one of an equal key), writes a temporary
///   file, fsyncs it and renames it over the file: readers never see a partial
///   file, and concurrent writers in several processes lose no entry.
/// - A file that does not parse (bad or truncated JSON, another format or
///   version, a wrong schema) is reported, renamed aside to
///   "<file>.corrupt-<UTC time>" and treated as empty.
/// Thread-safe.
class TuningCache {
public:
  /// A cache in `directory` (created on the first store).
  explicit TuningCache(std::string directory = defaultDirectory());
  ~TuningCache();
  /// $TESSERA_CACHE_DIR/tuning, else ~/.cache/tessera/tuning (the kernel
  /// cache's directory, KernelCache::defaultDirectory(), plus "/tuning").
  static std::string defaultDirectory();
  /// The process-wide cache in defaultDirectory() (as of the first call).
  static TuningCache &global();

  TuningCache(const TuningCache &) = delete;
  TuningCache &operator=(const TuningCache &) = delete;

  const std::string &directory() const { return directory_; }
  /// The file that holds the entries of `key`'s kernel version.
  std::string filePath(const TuningKey &key) const;

  /// The record stored for `key`, or null. Never throws on file problems.
  std::shared_ptr<const TuningRecord> lookup(const TuningKey &key, TuningStatus *status = nullptr);
  /// Stores `record` for `key`, in memory and in the file (an empty `date` is
  /// set to now). Returns false (with a warning) when the file could not be
  /// written; memory still holds it. Throws tessera::Error, before writing
  /// anything, for a key or record the file cannot hold (a hash that is not
  /// 64 hex digits, an empty kernel name, a date not in ISO 8601 UTC, a
  /// negative or non-finite time, text that is not UTF-8).
  bool store(const TuningKey &key, TuningRecord record, TuningStatus *status = nullptr);
  /// The stored tuning whose key equals `key` except for the key values
  /// (TuningKey::sameExceptValues) with the smallest keyDistance(); ties go to
  /// the smaller key values (compared as a list). Nullopt when there is none.
  std::optional<NearestTuning> nearest(const TuningKey &key, TuningStatus *status = nullptr);
  /// What to launch with: the key's own tuning, else what `policy` says.
  /// `space` gives the first candidate.
  Resolution resolve(const TuningKey &key, const ConfigSpace &space, MissPolicy policy,
                     TuningStatus *status = nullptr);

  /// Every entry of the valid files in the directory (corrupt ones are set
  /// aside), plus any this object stored that did not reach a file; sorted by
  /// kernel name, then key text.
  std::vector<TuningEntry> entries(TuningStatus *status = nullptr);
  /// Removes every entry for which `drop` returns true (from the files and
  /// from memory); a file left empty is deleted. Returns how many were removed.
  size_t prune(const std::function<bool(const TuningKey &, const TuningRecord &)> &drop,
               TuningStatus *status = nullptr);
  /// Removes the entries tuned by another compiler version than
  /// `compilerVersion`, and those whose sources changed: `currentSourceHash`
  /// gives the hash of an entry's sources now (nullopt: unknown, keep it).
  /// Without it, the files at the record's sourcePaths are hashed
  /// (sourceHashOfFiles). Returns how many were removed.
  size_t pruneStale(const std::string &compilerVersion,
                    const std::function<std::optional<std::string>(const TuningKey &,
                                                                   const TuningRecord &)>
                        &currentSourceHash = {},
                    TuningStatus *status = nullptr);
  /// hashSources() of the files at `paths` now; nullopt when one
  /// cannot be read.
  static std::optional<std::string> sourceHashOfFiles(const std::vector<std::string> &paths);

  TuningCacheStats stats() const;
  void resetStats();
  /// Forgets what memory holds (the next lookup reads the file again).
  void clearMemory();

private:
  struct FileState; // what memory holds of one file
  FileState &stateFor(const std::string &path);
  /// Reads `path` into memory if it changed since memory last read it.
  void refresh(const std::string &path, TuningStatus *status);
  /// The cache files in the directory (full paths, sorted).
  std::vector<std::string> listFiles() const;

  std::string directory_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<FileState>> files_; // by path
  TuningCacheStats stats_;
};

} // namespace tessera

#endif
