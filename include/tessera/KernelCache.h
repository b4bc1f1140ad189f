// The compiled-kernel cache: an in-memory map in front of a directory of
// entry files ($TESSERA_CACHE_DIR, default ~/.cache/tessera, or
// /tmp/tessera-cache-$UID when HOME is unset).
//
// Keys are SHA-256 hex digests of everything that determines the compiled
// code (cacheKey()). Each entry is one file, <dir>/<key>.tsrc:
//
//   offset  size  field
//   0       4     magic "TSRC"
//   4       4     format version, uint32 little endian (kCacheFormatVersion)
//   8       4     metadata length M, uint32 little endian
//   12      8     payload length P, uint64 little endian
//   20      32    SHA-256 of the M metadata bytes followed by the P payload bytes
//   52      M     metadata: a JSON object (key, kernel, signature, target, format,
//                 shared_memory_bytes, num_warps, created)
//   52+M    P     payload: PTX text or cubin bytes
//
// and the file is exactly 52 + M + P bytes long. Writes go to a unique
// temporary file in the same directory (.<key>.<pid>.<random>.tmp), are
// fsync'ed and renamed over the entry, so readers only ever see complete
// entries, whatever number of processes write the same key. A corrupt or
// truncated entry is reported (CacheStatus::warnings), deleted and treated
// as a miss. The cache never throws on bad file contents; disk errors on
// store() are warnings too (the memory layer still holds the entry).
#ifndef TESSERA_KERNELCACHE_H
#define TESSERA_KERNELCACHE_H

#include "tessera/TensorMapSpec.h"
#include "tessera/Types.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera {

constexpr uint32_t kCacheFormatVersion = 1;
constexpr size_t kCacheHeaderSize = 52;

/// Everything a compiled kernel depends on.
struct CacheKeyInputs {
  /// (path, text) of the kernel's source file first, then of every file it
  /// imports, in the order the compiler resolved them.
  std::vector<std::pair<std::string, std::string>> sources;
  std::string kernelName;
  std::map<std::string, ConstexprValue> constexprs;
  std::map<std::string, std::string> options;
  std::string compilerVersion;
  std::string target; // "sm_90a"
};

/// The unambiguous serialization that cacheKey() hashes (length-prefixed
/// fields, constexprs sorted by name and tagged with their kind).
std::string canonicalKeyText(const CacheKeyInputs &inputs);
/// SHA-256 hex digest of canonicalKeyText(inputs): 64 lower-case hex digits.
std::string cacheKey(const CacheKeyInputs &inputs);
/// True for 64 lower-case hex digits.
bool isValidCacheKey(std::string_view key);

struct CacheEntry {
  std::string kernelName;
  KernelSignature signature;
  std::string target;
  uint64_t sharedMemoryBytes = 0;
  unsigned numWarps = 4;
  /// The kernel's TMA tensor-map parameters (stored as their text; an entry
  /// whose text does not parse is corrupt).
  std::vector<TensorMapSpec> tensorMaps;
  /// Lowered persistent: takes the launched grid's x size after its arguments.
  bool persistentGrid = false;
  int64_t createdTime = 0;           // seconds since the epoch; store() sets it when 0
  std::string payloadFormat = "ptx"; // "ptx" or "cubin"
  std::string payload;
};

/// What a lookup or store did, and the warnings to show the user.
struct CacheStatus {
  enum class Source { None, Memory, Disk };
  Source source = Source::None; // where a hit came from; None for a miss
  bool hit() const { return source != Source::None; }
  /// E.g. "tessera: cache entry /home/u/.cache/tessera/ab...cd.tsrc is corrupt
  /// (checksum mismatch); rebuilding".
  std::vector<std::string> warnings;
};

/// One entry file, for `tessera cache list`.
struct CacheListEntry {
  std::string key;
  std::string path;
  std::string kernelName; // empty when !valid
  std::string target;
  uint64_t sizeBytes = 0; // of the file
  int64_t mtime = 0;      // seconds since the epoch
  bool valid = false;
  std::string problem;    // why it is not valid ("checksum mismatch")
};

/// What getOrBuild() did since the cache object was made: `builds` counts
/// the compilations (the misses), the hits where they came from.
struct KernelCacheStats {
  uint64_t memoryHits = 0, diskHits = 0, builds = 0;
};

class KernelCache {
public:
  /// A cache in `directory` (created on first store).
  explicit KernelCache(std::string directory = defaultDirectory());
  /// $TESSERA_CACHE_DIR, else $HOME/.cache/tessera, else /tmp/tessera-cache-<uid>.
  static std::string defaultDirectory();
  /// The process-wide cache in defaultDirectory() (as of the first call).
  static KernelCache &global();

  KernelCache(const KernelCache &) = delete;
  KernelCache &operator=(const KernelCache &) = delete;

  const std::string &directory() const { return directory_; }
  /// <directory>/<key>.tsrc. Throws tessera::Error if !isValidCacheKey(key).
  std::string entryPath(const std::string &key) const;

  /// The entry for `key` (memory first, then disk), or nullptr on a miss.
  /// Corrupt entries are deleted and reported in `status`; when `status` is
  /// null, warnings are printed to stderr instead.
  std::shared_ptr<const CacheEntry> lookup(const std::string &key, CacheStatus *status = nullptr);
  /// Stores `entry` in memory and on disk. Returns false (with a warning) if
  /// the disk write failed.
  bool store(const std::string &key, CacheEntry entry, CacheStatus *status = nullptr);
  /// lookup(), and on a miss build() + store().
  std::shared_ptr<const CacheEntry> getOrBuild(const std::string &key,
                                               const std::function<CacheEntry()> &build,
                                               CacheStatus *status = nullptr);

  KernelCacheStats stats() const;

  /// Every entry file in the directory, sorted by kernel name then key.
  std::vector<CacheListEntry> list() const;
  /// Deletes every entry file (and stale temporary files) and empties the
  /// memory layer. Returns the number of entries deleted. Other files in
  /// the directory are left alone.
  size_t clear();
  /// Empties the memory layer only.
  void clearMemory();

  /// The bytes of an entry file.
  static std::string serialize(const std::string &key, const CacheEntry &entry);
  struct ParseResult {
    std::shared_ptr<CacheEntry> entry; // null when the bytes are not a valid entry
    std::string problem;               // "bad magic", "checksum mismatch", ...
  };
  /// Parses the bytes of an entry file. Never throws on bad bytes. When
  /// `expectedKey` is given, an entry recorded for another key is invalid.
  static ParseResult parse(std::string_view bytes, const std::string &expectedKey = {});

private:
  bool storeShared(const std::string &key, std::shared_ptr<const CacheEntry> entry,
                   CacheStatus *status);
  std::string directory_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const CacheEntry>> memory_;
  KernelCacheStats stats_; // under mutex_
};

} // namespace tessera

#endif
