// `tessera cache`: list or clear the compiled-kernel cache ($TESSERA_CACHE_DIR).
#include "cli.h"

#include "tessera/KernelCache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

namespace tessera::cli {

namespace {

const char *kCacheHelp = R"(usage: tessera cache <list|clear|dir> [options]

Inspects the on-disk cache of compiled kernels that the JIT (tessera::compile,
`tessera run` on a GPU) fills. Its directory is $TESSERA_CACHE_DIR, else
$HOME/.cache/tessera, else /tmp/tessera-cache-<uid>.

subcommands:
  list [--json]   one line per entry file: kernel, target, size, age, key prefix
                  and path; entries that fail their checks are listed as invalid
                  with the reason. --json prints a JSON object instead:
                  {"directory": ..., "entries": [{"key", "path", "kernel",
                  "target", "size_bytes", "mtime", "age_seconds", "valid",
                  "problem"}, ...]}
  clear           deletes every entry file (and stale temporary files) and
                  prints how many entries were removed; other files are kept
  dir             prints the cache directory

options:
  -h, --help      show this help

exit codes: 0 ok, 2 bad command line
)";

std::string age(int64_t seconds) {
  if (seconds < 0)
    seconds = 0;
  if (seconds < 120)
    return std::to_string(seconds) + "s";
  if (seconds < 2 * 3600)
    return std::to_string(seconds / 60) + "m";
  if (seconds < 2 * 86400)
    return std::to_string(seconds / 3600) + "h";
  return std::to_string(seconds / 86400) + "d";
}

int cacheList(bool asJson) {
  KernelCache &cache = KernelCache::global();
  std::vector<CacheListEntry> entries = cache.list();
  int64_t now = int64_t(std::time(nullptr));
  if (asJson) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const CacheListEntry &e : entries)
      list.push_back({{"key", e.key},
                      {"path", e.path},
                      {"kernel", e.kernelName},
                      {"target", e.target},
                      {"size_bytes", e.sizeBytes},
                      {"mtime", e.mtime},
                      {"age_seconds", std::max<int64_t>(0, now - e.mtime)},
                      {"valid", e.valid},
                      {"problem", e.problem}});
    nlohmann::ordered_json doc = {{"directory", cache.directory()}, {"entries", list}};
    std::cout << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return kOk;
  }
  uint64_t total = 0;
  for (const CacheListEntry &e : entries)
    total += e.sizeBytes;
  std::cout << "cache " << cache.directory() << ": " << entries.size()
            << (entries.size() == 1 ? " entry" : " entries") << ", " << humanBytes(double(total))
            << "\n";
  if (entries.empty())
    return kOk;
  std::vector<std::vector<std::string>> rows = {{"KERNEL", "TARGET", "SIZE", "AGE", "KEY", "PATH"}};
  for (const CacheListEntry &e : entries) {
    std::string path = e.path;
    if (!e.valid)
      path += "  (invalid: " + e.problem + ")";
    rows.push_back({e.valid ? e.kernelName : "-", e.valid ? e.target : "-",
                    humanBytes(double(e.sizeBytes)), age(now - e.mtime), e.key.substr(0, 12), path});
  }
  printColumns(std::cout, rows);
  return kOk;
}

} // namespace

int cmdCache(int argc, char **argv) {
  std::string sub;
  bool asJson = false;
  ArgReader args(argc, argv);
  while (args.next()) {
    const std::string a = args.arg();
    if (a == "-h" || a == "--help") {
      std::cout << kCacheHelp;
      return kOk;
    } else if (a == "--json") {
      asJson = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'", kCacheHelp);
    } else if (sub.empty()) {
      sub = a;
    } else {
      return usageError("unexpected argument '" + a + "'", kCacheHelp);
    }
  }
  if (sub.empty())
    return usageError("no cache subcommand given (list, clear or dir)", kCacheHelp);
  if (asJson && sub != "list")
    return usageError("--json only applies to 'tessera cache list'", kCacheHelp);
  if (sub == "list")
    return cacheList(asJson);
  if (sub == "clear") {
    KernelCache &cache = KernelCache::global();
    size_t n = cache.clear();
    std::cout << "removed " << n << (n == 1 ? " entry" : " entries") << " from "
              << cache.directory() << "\n";
    return kOk;
  }
  if (sub == "dir") {
    std::cout << KernelCache::global().directory() << "\n";
    return kOk;
  }
  return usageError("unknown cache subcommand '" + sub + "' (expected list, clear or dir)",
                    kCacheHelp);
}

} // namespace tessera::cli
