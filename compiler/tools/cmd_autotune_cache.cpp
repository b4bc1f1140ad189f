// `tessera autotune show|export|import|prune`: the tuning cache
// (TuningCache::global(), $TESSERA_CACHE_DIR/tuning) for people and scripts,
// and for moving tunings between machines.
#include "cli.h"
#include "tuning_summary.h"

#include "tessera/Autotune.h"
#include "tessera/Compiler.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::cli {

namespace {

using ojson = nlohmann::ordered_json;

/// The file format of `export` (and what `import` reads, besides the tuning
/// cache's own files, whose entries have the same form).
const char *kExportFormat = "tessera-tuning-export";
const char *kCacheFormat = "tessera-tuning-cache";
const int kFormatVersion = 1;

void printWarnings(const TuningStatus &status) {
  for (const std::string &w : status.warnings)
    std::cerr << w << "\n";
}

std::string bestTimeText(const TuningRecord &r) {
  const CandidateResult *best = r.bestCandidate();
  return best && best->timeMs ? formatDouble(*best->timeMs, "%.4g") + " ms" : "-";
}

/// Why `prune` would drop the entry ("" when it would not).
std::string staleness(const TuningEntry &e) {
  if (e.key.compilerVersion != compilerVersion())
    return "stale: tuned by " + e.key.compilerVersion;
  std::optional<std::string> now = TuningCache::sourceHashOfFiles(e.record->sourcePaths);
  if (!e.record->sourcePaths.empty() && now && *now != e.key.sourceHash)
    return "stale: its sources changed";
  return "";
}

int show(const std::string &kernel, bool asJson) {
  TuningCache &cache = TuningCache::global();
  TuningStatus status;
  std::vector<TuningEntry> entries;
  for (TuningEntry &e : cache.entries(&status))
    if (kernel.empty() || e.key.kernelName == kernel)
      entries.push_back(std::move(e));
  printWarnings(status);
  if (asJson) {
    ojson list = ojson::array();
    for (const TuningEntry &e : entries) {
      ojson key = ojson::object();
      for (const auto &[name, value] : e.key.keyValues)
        key[name] = value;
      const CandidateResult *best = e.record->bestCandidate();
      list.push_back({{"kernel", e.key.kernelName},
                      {"key", key},
                      {"best", e.record->best.str()},
                      {"best_ms", best && best->timeMs ? ojson(*best->timeMs) : ojson()},
                      {"date", e.record->date},
                      {"device", e.key.deviceName},
                      {"compiler", e.key.compilerVersion},
                      {"stale", staleness(e)},
                      {"sources", e.record->sourcePaths},
                      {"file", e.file}});
    }
    ojson doc = {{"directory", cache.directory()}, {"entries", list}};
    std::cout << doc.dump(2, ' ', false, ojson::error_handler_t::replace) << "\n";
    return kOk;
  }
  std::cout << "tuning cache " << cache.directory() << ": " << entries.size()
            << (entries.size() == 1 ? " entry" : " entries")
            << (kernel.empty() ? "" : " of kernel '" + kernel + "'") << "\n";
  if (entries.empty())
    return kOk;
  std::vector<std::vector<std::string>> rows = {
      {"KERNEL", "KEY", "BEST", "TIME", "DATE", "DEVICE"}};
  for (const TuningEntry &e : entries) {
    rows.push_back({e.key.kernelName, keyValuesText(e.key.keyValues), e.record->best.str(),
                    bestTimeText(*e.record), e.record->date, e.key.deviceName});
    if (std::string why = staleness(e); !why.empty())
      rows.back().push_back("(" + why + ")");
  }
  printColumns(std::cout, rows);
  return kOk;
}

int exportEntries(const std::string &path) {
  TuningCache &cache = TuningCache::global();
  TuningStatus status;
  std::vector<TuningEntry> entries = cache.entries(&status);
  printWarnings(status);
  ojson list = ojson::array();
  for (const TuningEntry &e : entries)
    list.push_back({{"key", ojson::parse(e.key.toJson())},
                    {"record", ojson::parse(e.record->toJson())}});
  ojson doc = {{"format", kExportFormat}, {"version", kFormatVersion}, {"entries", list}};
  if (!writeOutput(path, doc.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n"))
    return kIoError;
  (path == "-" ? std::cerr : std::cout)
      << "exported " << entries.size() << (entries.size() == 1 ? " entry" : " entries")
      << " from " << cache.directory() << (path == "-" ? "" : " to " + path) << "\n";
  return kOk;
}

/// Reads every entry of an export (or cache) file; false and `error` when the
/// file is not one, or any entry is not valid.
bool readImportFile(const std::string &path, std::vector<std::pair<TuningKey, TuningRecord>> &out,
                    std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot read it";
    return false;
  }
  std::ostringstream text;
  text << f.rdbuf();
  ojson doc = ojson::parse(text.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    error = doc.is_discarded() ? "it is not valid JSON" : "it is not a JSON object";
    return false;
  }
  const ojson &format = doc.contains("format") ? doc["format"] : ojson();
  if (format != kExportFormat && format != kCacheFormat) {
    error = std::string("its \"format\" is not \"") + kExportFormat + "\" (nor \"" + kCacheFormat +
            "\")";
    return false;
  }
  if (!doc.contains("version") || doc["version"] != kFormatVersion) {
    error = "its \"version\" is not " + std::to_string(kFormatVersion);
    return false;
  }
  if (!doc.contains("entries") || !doc["entries"].is_array()) {
    error = "it has no \"entries\" array";
    return false;
  }
  size_t index = 0;
  for (const ojson &entry : doc["entries"]) {
    ++index;
    std::string why = "not an object with \"key\" and \"record\"";
    std::optional<TuningKey> key;
    std::optional<TuningRecord> record;
    if (entry.is_object() && entry.contains("key") && entry.contains("record") &&
        (key = TuningKey::fromJson(entry["key"].dump(), &why)) &&
        (record = TuningRecord::fromJson(entry["record"].dump(), &why))) {
      out.emplace_back(std::move(*key), std::move(*record));
      continue;
    }
    error = "entry " + std::to_string(index) + ": " + why;
    return false;
  }
  return true;
}

int importEntries(const std::string &path) {
  std::vector<std::pair<TuningKey, TuningRecord>> entries;
  std::string error;
  // Every entry is checked before the first is stored: a bad file changes nothing.
  if (!readImportFile(path, entries, error)) {
    std::cerr << "tessera: error: cannot import '" << path << "': " << error
              << "; nothing was imported\n";
    return kInputError;
  }
  TuningCache &cache = TuningCache::global();
  TuningStatus status;
  size_t written = 0;
  for (const auto &[key, record] : entries) {
    try {
      written += cache.store(key, record, &status);
    } catch (const std::exception &e) {
      status.warnings.push_back(std::string("tessera: ") + e.what());
    }
  }
  printWarnings(status);
  std::cout << "imported " << written << " of " << entries.size()
            << (entries.size() == 1 ? " entry" : " entries") << " into " << cache.directory()
            << "\n";
  return written == entries.size() ? kOk : kIoError;
}

int prune() {
  TuningCache &cache = TuningCache::global();
  TuningStatus status;
  size_t n = cache.pruneStale(compilerVersion(), {}, &status);
  printWarnings(status);
  std::cout << "removed " << n << (n == 1 ? " stale entry" : " stale entries") << " from "
            << cache.directory()
            << " (tuned by another compiler version, or their kernel's sources changed)\n";
  return kOk;
}

} // namespace

int cmdAutotuneCache(const std::string &sub, int argc, char **argv, const char *help) {
  std::string kernel, path;
  bool asJson = false;
  ArgReader args(argc, argv);
  while (args.next()) {
    const std::string a = args.arg();
    std::string v;
    if (a == "-h" || a == "--help") {
      std::cout << help;
      return kOk;
    } else if (sub == "show" && a == "--json") {
      asJson = true;
    } else if (sub == "show" && args.value("--kernel", v)) {
      kernel = v;
    } else if (args.missingValue()) {
      return usageError(a + " needs a value", help);
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usageError("unknown option '" + a + "' of 'tessera autotune " + sub + "'", help);
    } else if ((sub == "export" || sub == "import") && path.empty()) {
      path = a;
    } else {
      return usageError("unexpected argument '" + a + "' of 'tessera autotune " + sub + "'", help);
    }
  }
  if (sub == "show")
    return show(kernel, asJson);
  if (sub == "prune")
    return prune();
  if (path.empty())
    return usageError("'tessera autotune " + sub + "' needs a PATH", help);
  return sub == "export" ? exportEntries(path) : importEntries(path);
}

} // namespace tessera::cli
