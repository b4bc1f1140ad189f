#include "tessera/KernelCache.h"
#include "tessera/Error.h"
#include "FileUtil.h"
#include "Sha256.h"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <tuple>

namespace tessera {

using json = nlohmann::json;

namespace {
using namespace fileutil;

constexpr char kMagic[4] = {'T', 'S', 'R', 'C'};
constexpr const char *kEntrySuffix = ".tsrc";
constexpr uint32_t kMaxMetadataBytes = 16u << 20;
constexpr uint64_t kMaxFileBytes = uint64_t(4) << 30;

// ---- canonical key text -----------------------------------------------------

void field(std::string &out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out.append(s.data(), s.size());
  out += '\n';
}

// ---- little-endian helpers ------------------------------------------------------

void putU32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void putU64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t getU32(const char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t getU64(const char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// ---- metadata JSON ------------------------------------------------------------

json signatureToJson(const KernelSignature &sig) {
  json params = json::array();
  for (const KernelParam &p : sig.params)
    params.push_back({{"name", p.name}, {"type", p.type.str()}, {"written", p.written}, {"read", p.read},
                      {"specialize", p.specialize}});
  json constexprs = json::object();
  for (const auto &[name, value] : sig.constexprs)
    constexprs[name] = constexprToString(value);
  return {{"name", sig.name}, {"params", params}, {"constexprs", constexprs}};
}

// Throws std::runtime_error (or json::exception) with the problem.
KernelSignature signatureFromJson(const json &j) {
  KernelSignature sig;
  sig.name = j.at("name").get<std::string>();
  for (const json &p : j.at("params")) {
    KernelParam param;
    param.name = p.at("name").get<std::string>();
    std::string type = p.at("type").get<std::string>();
    auto t = parseDType(type);
    if (!t)
      throw std::runtime_error("unknown parameter type '" + type + "'");
    param.type = *t;
    param.written = p.value("written", false);
    param.read = p.value("read", false);
    param.specialize = p.value("specialize", true);
    sig.params.push_back(std::move(param));
  }
  const json &cs = j.at("constexprs");
  if (!cs.is_object())
    throw std::runtime_error("constexprs is not an object");
  for (auto it = cs.begin(); it != cs.end(); ++it) {
    std::string text = it.value().get<std::string>();
    auto v = parseConstexpr(text);
    if (!v)
      throw std::runtime_error("bad constexpr value '" + text + "'");
    sig.constexprs.emplace(it.key(), *v);
  }
  return sig;
}

uint64_t getUnsigned(const json &j, const char *name) {
  const json &v = j.at(name);
  if (!v.is_number_unsigned())
    throw std::runtime_error(std::string(name) + " is not an unsigned integer");
  return v.get<uint64_t>();
}

// ---- files ----------------------------------------------------------------------

bool isEntryFileName(const std::string &name, std::string *key) {
  size_t suffix = std::strlen(kEntrySuffix);
  if (name.size() != 64 + suffix || name.compare(64, suffix, kEntrySuffix) != 0)
    return false;
  if (!isValidCacheKey(std::string_view(name).substr(0, 64)))
    return false;
  if (key)
    *key = name.substr(0, 64);
  return true;
}

bool isTempFileName(const std::string &name) {
  return name.size() > 70 && name[0] == '.' && isValidCacheKey(std::string_view(name).substr(1, 64)) &&
         name.compare(name.size() - 4, 4, ".tmp") == 0;
}

void report(CacheStatus *status, const std::string &warning) {
  if (status)
    status->warnings.push_back(warning);
  else
    std::cerr << warning << std::endl;
}

int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

// ---- keys ------------------------------------------------------------------------

std::string canonicalKeyText(const CacheKeyInputs &in) {
  std::string s = "tessera-kernel-cache-key 1\n";
  s += "sources " + std::to_string(in.sources.size()) + "\n";
  for (const auto &[path, text] : in.sources) {
    field(s, path);
    field(s, text);
  }
  s += "kernel ";
  field(s, in.kernelName);
  s += "constexprs " + std::to_string(in.constexprs.size()) + "\n";
  for (const auto &[name, value] : in.constexprs) { // std::map: sorted by name
    field(s, name);
    s += constexprKind(value);
    s += ' ';
    field(s, constexprToString(value));
  }
  s += "options " + std::to_string(in.options.size()) + "\n";
  for (const auto &[name, value] : in.options) {
    field(s, name);
    field(s, value);
  }
  s += "compiler ";
  field(s, in.compilerVersion);
  s += "target ";
  field(s, in.target);
  return s;
}

std::string cacheKey(const CacheKeyInputs &inputs) {
  return Sha256::hexHash(canonicalKeyText(inputs));
}

bool isValidCacheKey(std::string_view key) {
  if (key.size() != 64)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

// ---- serialization ------------------------------------------------------------------

std::string KernelCache::serialize(const std::string &key, const CacheEntry &e) {
  std::vector<std::string> maps;
  for (const TensorMapSpec &m : e.tensorMaps)
    maps.push_back(formatTensorMapSpec(m));
  json meta = {{"key", key},
               {"kernel", e.kernelName},
               {"signature", signatureToJson(e.signature)},
               {"target", e.target},
               {"format", e.payloadFormat},
               {"shared_memory_bytes", e.sharedMemoryBytes},
               {"num_warps", e.numWarps},
               {"tensor_maps", maps},
               {"persistent_grid", e.persistentGrid},
               {"created", e.createdTime}};
  std::string metaText = meta.dump(-1, ' ', false, json::error_handler_t::replace);
  if (metaText.size() > kMaxMetadataBytes)
    throw Error("kernel cache metadata too large");
  Sha256 sha;
  sha.update(metaText).update(e.payload);
  Sha256::Digest digest = sha.finish();

  std::string out;
  out.reserve(kCacheHeaderSize + metaText.size() + e.payload.size());
  out.append(kMagic, 4);
  putU32(out, kCacheFormatVersion);
  putU32(out, static_cast<uint32_t>(metaText.size()));
  putU64(out, e.payload.size());
  out.append(reinterpret_cast<const char *>(digest.data()), digest.size());
  out += metaText;
  out += e.payload;
  return out;
}

KernelCache::ParseResult KernelCache::parse(std::string_view bytes,
                                            const std::string &expectedKey) {
  ParseResult r;
  auto fail = [&](std::string problem) {
    r.entry.reset();
    r.problem = std::move(problem);
    return r;
  };
  if (bytes.empty())
    return fail("empty file");
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0)
    return fail("bad magic");
  if (bytes.size() < kCacheHeaderSize)
    return fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
                std::to_string(kCacheHeaderSize) + "-byte header");
  uint32_t version = getU32(bytes.data() + 4);
  if (version != kCacheFormatVersion)
    return fail("unsupported format version " + std::to_string(version));
  uint64_t metaLen = getU32(bytes.data() + 8);
  uint64_t payloadLen = getU64(bytes.data() + 12);
  if (metaLen > kMaxMetadataBytes)
    return fail("bad metadata length " + std::to_string(metaLen));
  if (payloadLen > kMaxFileBytes)
    return fail("bad payload length " + std::to_string(payloadLen));
  uint64_t expected = kCacheHeaderSize + metaLen + payloadLen;
  if (bytes.size() < expected)
    return fail("truncated: " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(expected));
  if (bytes.size() > expected)
    return fail("bad length: " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(expected));
  std::string_view metaText = bytes.substr(kCacheHeaderSize, metaLen);
  std::string_view payload = bytes.substr(kCacheHeaderSize + metaLen, payloadLen);
  Sha256 sha;
  sha.update(metaText).update(payload);
  Sha256::Digest digest = sha.finish();
  if (std::memcmp(digest.data(), bytes.data() + 20, 32) != 0)
    return fail("checksum mismatch");

  json meta = json::parse(metaText.begin(), metaText.end(), nullptr, false);
  if (meta.is_discarded() || !meta.is_object())
    return fail("bad metadata JSON");
  auto entry = std::make_shared<CacheEntry>();
  try {
    std::string key = meta.at("key").get<std::string>();
    if (!expectedKey.empty() && key != expectedKey)
      return fail("entry is for key " + key);
    entry->kernelName = meta.at("kernel").get<std::string>();
    entry->signature = signatureFromJson(meta.at("signature"));
    entry->target = meta.at("target").get<std::string>();
    entry->payloadFormat = meta.at("format").get<std::string>();
    entry->sharedMemoryBytes = getUnsigned(meta, "shared_memory_bytes");
    uint64_t warps = getUnsigned(meta, "num_warps");
    if (warps > 1024)
      throw std::runtime_error("num_warps out of range");
    entry->numWarps = static_cast<unsigned>(warps);
    if (meta.contains("tensor_maps")) {
      for (const json &m : meta.at("tensor_maps")) {
        std::string text = m.get<std::string>();
        std::optional<TensorMapSpec> spec = parseTensorMapSpec(text);
        if (!spec)
          throw std::runtime_error("bad tensor map '" + text + "'");
        entry->tensorMaps.push_back(*spec);
      }
    }
    if (meta.contains("persistent_grid")) {
      const json &p = meta.at("persistent_grid");
      if (!p.is_boolean())
        throw std::runtime_error("persistent_grid is not a boolean");
      entry->persistentGrid = p.get<bool>();
    }
    const json &created = meta.at("created");
    if (!created.is_number_integer())
      throw std::runtime_error("created is not an integer");
    entry->createdTime = created.get<int64_t>();
  } catch (const std::exception &e) {
    return fail(std::string("bad metadata JSON: ") + e.what());
  }
  entry->payload.assign(payload.data(), payload.size());
  r.entry = std::move(entry);
  return r;
}

// ---- the cache --------------------------------------------------------------------

KernelCache::KernelCache(std::string directory) : directory_(std::move(directory)) {
  while (directory_.size() > 1 && directory_.back() == '/')
    directory_.pop_back();
  if (directory_.empty())
    directory_ = ".";
}

std::string KernelCache::defaultDirectory() {
  const char *dir = std::getenv("TESSERA_CACHE_DIR");
  if (dir && *dir)
    return dir;
  const char *home = std::getenv("HOME");
  if (home && *home)
    return std::string(home) + "/.cache/tessera";
  return "/tmp/tessera-cache-" + std::to_string(::getuid());
}

KernelCache &KernelCache::global() {
  static KernelCache *cache = new KernelCache(defaultDirectory());
  return *cache;
}

std::string KernelCache::entryPath(const std::string &key) const {
  if (!isValidCacheKey(key))
    throw Error("invalid kernel cache key '" + key + "' (expected 64 lower-case hex digits)");
  return directory_ + "/" + key + kEntrySuffix;
}

std::shared_ptr<const CacheEntry> KernelCache::lookup(const std::string &key,
                                                      CacheStatus *status) {
  std::string path = entryPath(key);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memory_.find(key);
    if (it != memory_.end()) {
      if (status)
        status->source = CacheStatus::Source::Memory;
      return it->second;
    }
  }
  if (status)
    status->source = CacheStatus::Source::None;

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT)
      report(status, "tessera: cannot read cache entry " + path + ": " + errnoText());
    return nullptr;
  }
  struct stat st {};
  std::string bytes;
  std::string problem;
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat: " + errnoText();
  } else if (!S_ISREG(st.st_mode)) {
    problem = "not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes + kCacheHeaderSize + kMaxMetadataBytes) {
    problem = "file too large";
  } else if (!readAll(fd, static_cast<uint64_t>(st.st_size), bytes)) {
    problem = "read error: " + errnoText();
  }
  ParseResult parsed;
  if (problem.empty()) {
    parsed = parse(bytes, key);
    problem = parsed.problem;
  }
  ::close(fd);

  if (!parsed.entry) {
    report(status, "tessera: cache entry " + path + " is corrupt (" + problem + "); rebuilding");
    // Delete it, unless a writer has meanwhile renamed a fresh entry over it.
    struct stat now;
    if (S_ISREG(st.st_mode) && ::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino &&
        now.st_dev == st.st_dev)
      ::unlink(path.c_str());
    return nullptr;
  }
  std::shared_ptr<const CacheEntry> entry = std::move(parsed.entry);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entry = memory_.emplace(key, entry).first->second;
  }
  if (status)
    status->source = CacheStatus::Source::Disk;
  return entry;
}

bool KernelCache::store(const std::string &key, CacheEntry entry, CacheStatus *status) {
  if (entry.createdTime == 0)
    entry.createdTime = nowSeconds();
  return storeShared(key, std::make_shared<const CacheEntry>(std::move(entry)), status);
}

bool KernelCache::storeShared(const std::string &key, std::shared_ptr<const CacheEntry> entry,
                              CacheStatus *status) {
  std::string path = entryPath(key);
  std::string bytes = serialize(key, *entry);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_[key] = std::move(entry);
  }

  std::string error;
  if (!makeDirectories(directory_, error)) {
    report(status, "tessera: cannot create the kernel cache directory (" + error +
                       "); the kernel is cached in memory only");
    return false;
  }
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp = directory_ + "/." + key + "." + std::to_string(::getpid()) + "." + randomSuffix() +
           ".tmp";
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  auto fail = [&](const std::string &what) {
    report(status, "tessera: cannot write cache entry " + path + " (" + what +
                       "); the kernel is cached in memory only");
    if (fd >= 0)
      ::close(fd);
    ::unlink(temp.c_str());
    return false;
  };
  if (fd < 0)
    return fail("cannot create " + temp + ": " + errnoText());
  if (!writeAll(fd, bytes))
    return fail("write failed: " + errnoText());
  if (::fsync(fd) != 0)
    return fail("fsync failed: " + errnoText());
  if (::close(fd) != 0) {
    fd = -1;
    return fail("close failed: " + errnoText());
  }
  fd = -1;
  if (::rename(temp.c_str(), path.c_str()) != 0)
    return fail("rename failed: " + errnoText());
  // Make the rename durable too (best effort).
  int dirfd = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd >= 0) {
    ::fsync(dirfd);
    ::close(dirfd);
  }
  return true;
}

std::shared_ptr<const CacheEntry> KernelCache::getOrBuild(const std::string &key,
                                                          const std::function<CacheEntry()> &build,
                                                          CacheStatus *status) {
  CacheStatus local;
  CacheStatus *st = status ? status : &local;
  auto hit = lookup(key, st);
  if (!status)
    for (const std::string &w : local.warnings)
      std::cerr << w << std::endl;
  if (hit) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(st->source == CacheStatus::Source::Memory ? stats_.memoryHits : stats_.diskHits);
    return hit;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.builds;
  }
  CacheEntry built = build();
  if (built.createdTime == 0)
    built.createdTime = nowSeconds();
  auto entry = std::make_shared<const CacheEntry>(std::move(built));
  storeShared(key, entry, status);
  return entry;
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::vector<CacheListEntry> KernelCache::list() const {
  std::vector<CacheListEntry> out;
  DIR *dir = ::opendir(directory_.c_str());
  if (!dir)
    return out;
  std::vector<std::string> names;
  while (struct dirent *d = ::readdir(dir))
    names.emplace_back(d->d_name);
  ::closedir(dir);
  for (const std::string &name : names) {
    CacheListEntry e;
    if (!isEntryFileName(name, &e.key))
      continue;
    e.path = directory_ + "/" + name;
    int fd = ::open(e.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue; // deleted meanwhile
    struct stat st;
    std::string bytes;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      e.sizeBytes = static_cast<uint64_t>(st.st_size);
      e.mtime = static_cast<int64_t>(st.st_mtime);
      if (e.sizeBytes > kMaxFileBytes + kCacheHeaderSize + kMaxMetadataBytes) {
        e.problem = "file too large";
      } else if (!readAll(fd, e.sizeBytes, bytes)) {
        e.problem = "read error: " + errnoText();
      } else {
        ParseResult p = parse(bytes, e.key);
        if (p.entry) {
          e.valid = true;
          e.kernelName = p.entry->kernelName;
          e.target = p.entry->target;
        } else {
          e.problem = p.problem;
        }
      }
    } else {
      e.problem = "not a regular file";
    }
    ::close(fd);
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const CacheListEntry &a, const CacheListEntry &b) {
    return std::tie(a.kernelName, a.key) < std::tie(b.kernelName, b.key);
  });
  return out;
}

size_t KernelCache::clear() {
  clearMemory();
  size_t removed = 0;
  DIR *dir = ::opendir(directory_.c_str());
  if (!dir)
    return 0;
  std::vector<std::string> names;
  while (struct dirent *d = ::readdir(dir))
    names.emplace_back(d->d_name);
  ::closedir(dir);
  int64_t now = nowSeconds();
  for (const std::string &name : names) {
    std::string path = directory_ + "/" + name;
    if (isEntryFileName(name, nullptr)) {
      if (::unlink(path.c_str()) == 0)
        ++removed;
    } else if (isTempFileName(name)) {
      // A temporary file younger than a minute may belong to a writer at work.
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && now - static_cast<int64_t>(st.st_mtime) > 60)
        ::unlink(path.c_str());
    }
  }
  return removed;
}

void KernelCache::clearMemory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

} // namespace tessera
