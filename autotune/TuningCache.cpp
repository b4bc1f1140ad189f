// The tuning cache: one versioned JSON file per kernel version, an in-memory
// map in front, flock'ed read-merge-write with atomic renames (docs/autotune.md).
#include "FileUtil.h"
#include "Internal.h"

#include "tessera/Error.h"
#include "tessera/KernelCache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

namespace tessera {

using namespace autotune_detail;

namespace {
using namespace fileutil;

constexpr const char *kFormat = "tessera-tuning-cache";
constexpr int kVersion = 1;
constexpr const char *kFileSuffix = ".v1.json"; // the version is in the name too

/// Identifies one version of a file: every write renames a new inode into place.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtimeNs = 0;
  bool operator==(const FileId &o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtimeNs == o.mtimeNs;
  }
};

FileId idOf(const struct stat &st) {
  return {st.st_dev, st.st_ino, st.st_size,
          int64_t(st.st_mtim.tv_sec) * 1000000000 + int64_t(st.st_mtim.tv_nsec)};
}

struct Item {
  TuningKey key;
  std::shared_ptr<const TuningRecord> record;
};


void report(TuningStatus *status, const std::string &warning) {
  if (status)
    status->warnings.push_back(warning);
  else
    std::cerr << warning << std::endl;
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool isHex64(const std::string &s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// "<kernel>.<16 hex of the source hash>.v1.json"; the kernel name with
/// characters other than [A-Za-z0-9_] replaced by '_'.
std::string fileNameFor(const TuningKey &key) {
  std::string name;
  for (char c : key.kernelName.substr(0, 100))
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty())
    name = "_";
  std::string hash = isHex64(key.sourceHash) ? key.sourceHash : sha256Hex(key.sourceHash);
  return name + "." + hash.substr(0, 16) + kFileSuffix;
}

bool isCacheFileName(const std::string &name) {
  size_t n = std::strlen(kFileSuffix);
  return !name.empty() && name[0] != '.' && name.size() > n &&
         name.compare(name.size() - n, n, kFileSuffix) == 0;
}




/// An exclusive flock on "<file>.lock", held for the object's life. The data
/// file itself cannot carry the lock: every write renames a new inode over it.
class FileLock {
public:
  explicit FileLock(const std::string &dataPath) {
    std::string path = dataPath + ".lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      error_ = "cannot open " + path + ": " + errnoText();
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR)
        continue;
      error_ = "cannot lock " + path + ": " + errnoText();
      ::close(fd_);
      fd_ = -1;
      return;
    }
  }
  ~FileLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string &error() const { return error_; }

private:
  int fd_ = -1;
  std::string error_;
};

// ---- reading and writing one file ----------------------------------------------------

/// The entries of a file's text, or why it is not a valid cache file. Never throws.
bool parseFileText(const std::string &text, const std::string &fileName, std::vector<Item> &items,
                   std::string &problem) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    problem = text.empty() ? "empty file" : "bad JSON (truncated?)";
    return false;
  }
  try {
    if (!j.is_object())
      throw std::runtime_error("not a JSON object");
    if (!j.contains("format") || j["format"] != kFormat)
      throw std::runtime_error(std::string("not a tuning cache file (no \"format\": \"") + kFormat +
                               "\")");
    if (!j.contains("version") || j["version"] != kVersion)
      throw std::runtime_error("version " + (j.contains("version") ? j["version"].dump() : "missing") +
                               ", expected " + std::to_string(kVersion));
    const json &entries = j.at("entries");
    if (!entries.is_array())
      throw std::runtime_error("'entries' is not an array");
    for (const json &e : entries) {
      Item item{keyFromJson(e.at("key")), nullptr};
      item.record = std::make_shared<const TuningRecord>(recordFromJson(e.at("record")));
      if (fileNameFor(item.key) != fileName)
        throw std::runtime_error("an entry for kernel '" + item.key.kernelName +
                                 "' belongs in " + fileNameFor(item.key));
      items.push_back(std::move(item));
    }
  } catch (const std::exception &e) {
    problem = std::string("wrong schema: ") + e.what();
    items.clear();
    return false;
  }
  return true;
}

/// One line: {"a": 1, "b": [2, 3]}.
std::string compact(const json &j) {
  if (!j.is_structured())
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out = j.is_object() ? "{" : "[";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it, first = false) {
    out += first ? "" : ", ";
    if (j.is_object())
      out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
    out += compact(it.value());
  }
  return out + (j.is_object() ? "}" : "]");
}

/// Objects and arrays on one line when they fit in 100 columns, else one
/// member per line: a file people can read and diff.
void pretty(std::string &out, const json &j, size_t indent) {
  std::string line = compact(j);
  if (!j.is_structured() || j.empty() || indent + line.size() <= 100) {
    out += line;
    return;
  }
  out += j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it, first = false) {
    out += first ? "" : ",\n";
    out.append(indent + 2, ' ');
    if (j.is_object())
      out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
    pretty(out, it.value(), indent + 2);
  }
  out += "\n";
  out.append(indent, ' ');
  out += j.is_object() ? "}" : "]";
}

std::string fileText(const std::vector<Item> &items) {
  json entries = json::array();
  for (const Item &i : items)
    entries.push_back({{"key", keyToJson(i.key)}, {"record", recordToJson(*i.record)}});
  json j = {{"format", kFormat}, {"version", kVersion}, {"entries", entries}};
  std::string out;
  pretty(out, j, 0);
  return out + "\n";
}

struct ReadResult {
  enum Kind { Missing, Ok, Corrupt, IoError } kind = Missing;
  FileId id;
  std::vector<Item> items;
  std::string problem;
};

ReadResult readPath(const std::string &path, TuningCacheStats &stats) {
  ReadResult r;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.kind = errno == ENOENT ? ReadResult::Missing : ReadResult::IoError;
    r.problem = errnoText();
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    r.kind = ReadResult::IoError;
    r.problem = "not a regular file";
    ::close(fd);
    return r;
  }
  r.id = idOf(st);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      r.kind = ReadResult::IoError;
      r.problem = "read error: " + errnoText();
      ::close(fd);
      return r;
    }
    if (n == 0)
      break;
    text.append(buf, size_t(n));
  }
  ::close(fd);
  ++stats.fileReads;
  r.kind = parseFileText(text, baseName(path), r.items, r.problem) ? ReadResult::Ok
                                                                    : ReadResult::Corrupt;
  return r;
}

/// Renames the corrupt file at `path` aside, if it is still the version `id`
/// that was found corrupt. The caller holds the file's lock. Returns false when
/// the file changed meanwhile (read it again).
bool setAside(const std::string &path, const FileId &id, const std::string &problem,
              TuningCacheStats &stats, TuningStatus *status) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !(idOf(st) == id))
    return false;
  std::string aside = path + ".corrupt-" + utcNow("%Y%m%dT%H%M%SZ");
  for (int n = 1; ::access(aside.c_str(), F_OK) == 0 && n < 1000; ++n)
    aside = path + ".corrupt-" + utcNow("%Y%m%dT%H%M%SZ") + "." + std::to_string(n);
  ++stats.corruptFiles;
  if (::rename(path.c_str(), aside.c_str()) != 0) {
    report(status, "tessera: tuning cache file " + path + " is corrupt (" + problem +
                       "); its tunings are ignored (cannot set it aside: " + errnoText() + ")");
    return true;
  }
  report(status, "tessera: tuning cache file " + path + " is corrupt (" + problem +
                     "); set aside as " + baseName(aside) + ", its tunings are ignored");
  return true;
}

/// Writes `items` to `path` through a temporary file and a rename. The caller
/// holds the file's lock. Sets `id` to the new file's.
bool writeFile(const std::string &directory, const std::string &path, const std::vector<Item> &items,
               FileId &id, std::string &error) {
  std::string text = fileText(items);
  std::string temp = directory + "/." + baseName(path) + "." + std::to_string(::getpid()) + "." +
                     randomSuffix() + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot create " + temp + ": " + errnoText();
    return false;
  }
  bool ok = writeAll(fd, text);
  if (!ok)
    error = "write failed: " + errnoText();
  else if (!(ok = ::fsync(fd) == 0))
    error = "fsync failed: " + errnoText();
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = "close failed: " + errnoText();
  }
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    error = "rename failed: " + errnoText();
  }
  if (!ok) {
    ::unlink(temp.c_str());
    return false;
  }
  int dirfd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd >= 0) { // make the rename durable (best effort)
    ::fsync(dirfd);
    ::close(dirfd);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0)
    id = idOf(st);
  return true;
}

/// The file's current entries under its lock: a corrupt file is set aside and
/// counts as empty. False (with `error`) when the file cannot be read.
bool readLocked(const std::string &path, std::vector<Item> &items, TuningCacheStats &stats,
                TuningStatus *status, std::string &error) {
  ReadResult cur = readPath(path, stats);
  switch (cur.kind) {
  case ReadResult::Missing:
    return true;
  case ReadResult::Ok:
    items = std::move(cur.items);
    return true;
  case ReadResult::Corrupt:
    setAside(path, cur.id, cur.problem, stats, status);
    return true;
  case ReadResult::IoError:
    error = "cannot read " + path + ": " + cur.problem;
    return false;
  }
  return true;
}

/// The key and record as they will read back; throws tessera::Error when they
/// would not (a key or record the file format cannot hold).
void checkStorable(const TuningKey &key, const TuningRecord &record) {
  try {
    if (!(keyFromJson(json::parse(keyToJson(key).dump())) == key))
      throw std::runtime_error("the key does not read back equal");
    recordFromJson(json::parse(recordToJson(record).dump()));
  } catch (const std::exception &e) {
    throw Error("cannot store the tuning of " + key.kernelName + ": " + e.what());
  }
}

} // namespace

// ---- the cache --------------------------------------------------------------------------

struct TuningCache::FileState {
  /// Memory holds the entries of the file version `id` (read or written here).
  bool loaded = false;
  FileId id;
  std::map<std::string, Item> entries; // by TuningKey::hash()
};

TuningCache::TuningCache(std::string directory) : directory_(std::move(directory)) {
  while (directory_.size() > 1 && directory_.back() == '/')
    directory_.pop_back();
  if (directory_.empty())
    directory_ = ".";
}

TuningCache::~TuningCache() = default;

std::string TuningCache::defaultDirectory() { return KernelCache::defaultDirectory() + "/tuning"; }

TuningCache &TuningCache::global() {
  static TuningCache *cache = new TuningCache(defaultDirectory());
  return *cache;
}

std::string TuningCache::filePath(const TuningKey &key) const {
  return directory_ + "/" + fileNameFor(key);
}

TuningCache::FileState &TuningCache::stateFor(const std::string &path) {
  std::unique_ptr<FileState> &s = files_[path];
  if (!s)
    s = std::make_unique<FileState>();
  return *s;
}

void TuningCache::refresh(const std::string &path, TuningStatus *status) {
  FileState &state = stateFor(path);
  for (int attempt = 0; attempt < 4; ++attempt) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT)
        report(status, "tessera: cannot read tuning cache file " + path + ": " + errnoText());
      return;
    }
    if (state.loaded && idOf(st) == state.id)
      return; // memory already holds this version
    ReadResult r = readPath(path, stats_);
    switch (r.kind) {
    case ReadResult::Missing:
      return;
    case ReadResult::IoError:
      report(status, "tessera: cannot read tuning cache file " + path + ": " + r.problem);
      return;
    case ReadResult::Ok:
      for (Item &item : r.items) {
        std::string h = item.key.hash();
        state.entries[h] = std::move(item);
      }
      state.loaded = true;
      state.id = r.id;
      return;
    case ReadResult::Corrupt: {
      FileLock lock(path);
      if (!lock.ok()) {
        report(status, "tessera: tuning cache file " + path + " is corrupt (" + r.problem +
                           "); its tunings are ignored (" + lock.error() + ")");
        state.loaded = true; // do not read this version again
        state.id = r.id;
        return;
      }
      if (setAside(path, r.id, r.problem, stats_, status))
        return;
      break; // replaced meanwhile by a writer: read the new version
    }
    }
  }
}

std::vector<std::string> TuningCache::listFiles() const {
  std::vector<std::string> out;
  DIR *dir = ::opendir(directory_.c_str());
  if (!dir)
    return out;
  while (struct dirent *d = ::readdir(dir))
    if (isCacheFileName(d->d_name))
      out.push_back(directory_ + "/" + d->d_name);
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<const TuningRecord> TuningCache::lookup(const TuningKey &key,
                                                        TuningStatus *status) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::string path = filePath(key), h = key.hash();
  FileState &state = stateFor(path);
  if (auto it = state.entries.find(h); it != state.entries.end()) {
    ++stats_.memoryHits;
    return it->second.record;
  }
  try {
    refresh(path, status);
  } catch (const std::exception &e) { // e.g. out of memory; lookup never throws
    report(status, std::string("tessera: tuning cache lookup failed: ") + e.what());
  }
  if (auto it = state.entries.find(h); it != state.entries.end()) {
    ++stats_.diskHits;
    return it->second.record;
  }
  ++stats_.misses;
  return nullptr;
}

bool TuningCache::store(const TuningKey &key, TuningRecord record, TuningStatus *status) {
  if (record.date.empty())
    record.date = isoDateUtcNow();
  checkStorable(key, record);
  std::lock_guard<std::mutex> guard(mutex_);
  std::string path = filePath(key), h = key.hash();
  FileState &state = stateFor(path);
  Item mine{key, std::make_shared<const TuningRecord>(std::move(record))};
  state.entries[h] = mine;

  auto fail = [&](const std::string &why) {
    report(status, "tessera: cannot write tuning cache file " + path + " (" + why +
                       "); the tuning is kept in memory only");
    return false;
  };
  std::string error;
  if (!makeDirectories(directory_, error))
    return fail(error);
  FileLock lock(path);
  if (!lock.ok())
    return fail(lock.error());
  std::vector<Item> items;
  if (!readLocked(path, items, stats_, status, error))
    return fail(error);
  bool replaced = false;
  for (Item &item : items) {
    std::string ih = item.key.hash();
    if (ih == h) {
      item = mine;
      replaced = true;
    } else {
      state.entries[ih] = item; // the file is newer than memory for other keys
    }
  }
  if (!replaced)
    items.push_back(mine);
  FileId id;
  if (!writeFile(directory_, path, items, id, error))
    return fail(error);
  ++stats_.fileWrites;
  state.loaded = true; // memory now holds everything the new file holds
  state.id = id;
  return true;
}

std::optional<NearestTuning> TuningCache::nearest(const TuningKey &key, TuningStatus *status) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::string path = filePath(key);
  try {
    refresh(path, status);
  } catch (const std::exception &e) {
    report(status, std::string("tessera: tuning cache lookup failed: ") + e.what());
  }
  std::optional<NearestTuning> best;
  for (const auto &[h, item] : stateFor(path).entries) {
    (void)h;
    if (!item.key.sameExceptValues(key))
      continue;
    double d = keyDistance(item.key.keyValues, key.keyValues);
    if (!best || d < best->distance ||
        (d == best->distance && item.key.keyValues < best->key.keyValues))
      best = NearestTuning{item.key, item.record, d};
  }
  return best;
}

Resolution TuningCache::resolve(const TuningKey &key, const ConfigSpace &space, MissPolicy policy,
                                TuningStatus *status) {
  Resolution r;
  if (auto record = lookup(key, status)) {
    r.source = Resolution::Source::Exact;
    r.config = record->best;
    r.record = std::move(record);
    return r;
  }
  if (policy == MissPolicy::TuneNow) {
    r.source = Resolution::Source::MustTune;
    return r;
  }
  if (policy == MissPolicy::Nearest) {
    if (auto n = nearest(key, status)) {
      r.source = Resolution::Source::Nearest;
      r.config = n->record->best;
      r.record = n->record;
      r.fromKey = n->key;
      return r;
    }
  }
  r.source = Resolution::Source::FirstConfig;
  for (const Config &c : space.configs)
    if (space.admits(c)) {
      r.config = c;
      break;
    }
  return r;
}

std::vector<TuningEntry> TuningCache::entries(TuningStatus *status) {
  std::lock_guard<std::mutex> guard(mutex_);
  for (const std::string &path : listFiles())
    refresh(path, status);
  std::vector<TuningEntry> out;
  for (const auto &[path, state] : files_)
    for (const auto &[h, item] : state->entries) {
      (void)h;
      out.push_back({item.key, item.record, path});
    }
  std::sort(out.begin(), out.end(), [](const TuningEntry &a, const TuningEntry &b) {
    if (a.key.kernelName != b.key.kernelName)
      return a.key.kernelName < b.key.kernelName;
    return a.key.str() < b.key.str();
  });
  return out;
}

size_t TuningCache::prune(const std::function<bool(const TuningKey &, const TuningRecord &)> &drop,
                          TuningStatus *status) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::set<std::string> removed; // key hashes
  for (const std::string &path : listFiles()) {
    FileLock lock(path);
    if (!lock.ok()) {
      report(status, "tessera: cannot prune " + path + ": " + lock.error());
      continue;
    }
    std::vector<Item> items, kept;
    std::string error;
    if (!readLocked(path, items, stats_, status, error)) {
      report(status, "tessera: cannot prune " + path + ": " + error);
      continue;
    }
    for (Item &item : items) {
      if (drop(item.key, *item.record))
        removed.insert(item.key.hash());
      else
        kept.push_back(std::move(item));
    }
    if (kept.size() == items.size())
      continue;
    FileState &state = stateFor(path);
    state.loaded = false;
    if (kept.empty()) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        report(status, "tessera: cannot delete " + path + ": " + errnoText());
    } else if (!writeFile(directory_, path, kept, state.id, error)) {
      report(status, "tessera: cannot prune " + path + ": " + error);
    } else {
      ++stats_.fileWrites;
    }
  }
  // Memory too (it may hold entries that never reached a file).
  for (auto &[path, state] : files_) {
    (void)path;
    for (auto it = state->entries.begin(); it != state->entries.end();) {
      if (removed.count(it->first) || drop(it->second.key, *it->second.record)) {
        removed.insert(it->first);
        it = state->entries.erase(it);
      } else {
        ++it;
      }
    }
  }
  return removed.size();
}

size_t TuningCache::pruneStale(
    const std::string &compilerVersion,
    const std::function<std::optional<std::string>(const TuningKey &, const TuningRecord &)>
        &currentSourceHash,
    TuningStatus *status) {
  return prune(
      [&](const TuningKey &key, const TuningRecord &record) {
        if (key.compilerVersion != compilerVersion)
          return true;
        std::optional<std::string> now =
            currentSourceHash ? currentSourceHash(key, record)
            : record.sourcePaths.empty() ? std::nullopt
                                         : sourceHashOfFiles(record.sourcePaths);
        return now && *now != key.sourceHash;
      },
      status);
}

std::optional<std::string> TuningCache::sourceHashOfFiles(const std::vector<std::string> &paths) {
  std::vector<std::pair<std::string, std::string>> sources;
  for (const std::string &p : paths) {
    std::ifstream f(p, std::ios::binary);
    if (!f)
      return std::nullopt;
    std::ostringstream text;
    text << f.rdbuf();
    if (f.bad())
      return std::nullopt;
    sources.emplace_back(p, text.str());
  }
  return hashSources(sources);
}

TuningCacheStats TuningCache::stats() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return stats_;
}

void TuningCache::resetStats() {
  std::lock_guard<std::mutex> guard(mutex_);
  stats_ = {};
}

void TuningCache::clearMemory() {
  std::lock_guard<std::mutex> guard(mutex_);
  files_.clear();
}

} // namespace tessera
