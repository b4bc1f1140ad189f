// TuningKey, TuningRecord and the JSON forms of the autotuner's types.
#include "Internal.h"

#include "tessera/Compiler.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <stdexcept>

namespace tessera {

using namespace autotune_detail;

namespace {

[[noreturn]] void bad(const std::string &what) { throw std::runtime_error(what); }

const json &member(const json &j, const char *name) {
  if (!j.is_object())
    bad(std::string("expected an object holding '") + name + "'");
  auto it = j.find(name);
  if (it == j.end())
    bad(std::string("missing '") + name + "'");
  return *it;
}

std::string stringMember(const json &j, const char *name) {
  const json &v = member(j, name);
  if (!v.is_string())
    bad(std::string("'") + name + "' is not a string");
  return v.get<std::string>();
}

int64_t intValue(const json &v, const std::string &what) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      bad(what + " is out of range");
    return int64_t(v.get<uint64_t>());
  }
  if (!v.is_number_integer())
    bad(what + " is not an integer");
  return v.get<int64_t>();
}

int intMember(const json &j, const char *name, int64_t lo, int64_t hi) {
  int64_t v = intValue(member(j, name), std::string("'") + name + "'");
  if (v < lo || v > hi)
    bad(std::string("'") + name + "' is out of range");
  return int(v);
}

bool isHex64(const std::string &s) {
  if (s.size() != 64)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::string hexMember(const json &j, const char *name) {
  std::string s = stringMember(j, name);
  if (!isHex64(s))
    bad(std::string("'") + name + "' is not 64 lower-case hex digits");
  return s;
}

// "2026-11-26T09:40:12Z"
bool isIsoDate(const std::string &s) {
  static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != sizeof pattern - 1)
    return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (pattern[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pattern[i])
      return false;
  return true;
}

std::string shortHash(const std::string &h) { return h.substr(0, 12); }

} // namespace

// ---- JSON forms ----------------------------------------------------------------------------

json autotune_detail::constexprToJson(const ConstexprValue &v) {
  if (auto *i = std::get_if<int64_t>(&v))
    return *i;
  if (auto *d = std::get_if<double>(&v))
    return std::isfinite(*d) ? json(*d) : json(constexprToString(v)); // "nan", "inf"
  if (auto *b = std::get_if<bool>(&v))
    return *b;
  return std::get<DType>(v).str();
}

ConstexprValue autotune_detail::constexprFromJson(const json &j) {
  if (j.is_boolean())
    return j.get<bool>();
  if (j.is_number_integer())
    return intValue(j, "a constexpr value");
  if (j.is_number_float())
    return j.get<double>();
  if (j.is_string()) {
    std::string text = j.get<std::string>();
    std::optional<ConstexprValue> v = parseConstexpr(text);
    // Strings hold dtypes and the non-finite floats; numbers are JSON numbers.
    if (v && (std::holds_alternative<DType>(*v) ||
              (std::holds_alternative<double>(*v) && !std::isfinite(std::get<double>(*v)))))
      return *v;
    bad("bad constexpr value \"" + text + "\"");
  }
  bad("a constexpr value is not a number, boolean or string");
}

json autotune_detail::configToJson(const Config &c) {
  json values = json::object();
  for (const auto &[name, value] : c.constexprs)
    values[name] = constexprToJson(value);
  json j = {{"constexprs", values}};
  if (c.numWarps)
    j["num_warps"] = *c.numWarps;
  if (c.numStages)
    j["num_stages"] = *c.numStages;
  if (c.warpSpecialize)
    j["warp_specialize"] = *c.warpSpecialize;
  if (c.tma)
    j["tma"] = *c.tma;
  if (c.maxRegisters)
    j["maxnreg"] = *c.maxRegisters;
  if (c.clusterSize)
    j["cluster_size"] = *c.clusterSize;
  return j;
}

Config autotune_detail::configFromJson(const json &j) {
  const json &values = member(j, "constexprs");
  if (!values.is_object())
    bad("'constexprs' is not an object");
  Config c;
  for (auto it = values.begin(); it != values.end(); ++it)
    c.constexprs[it.key()] = constexprFromJson(it.value());
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &k = it.key();
    if (k == "constexprs")
      continue;
    if (auto sw = Config::intSwitch(k)) {
      int64_t v = intValue(it.value(), "'" + k + "'");
      if (v < 0 || v > 1024)
        bad("'" + k + "' is out of range");
      c.*sw = int(v);
    } else if (auto flag = Config::boolSwitch(k)) {
      if (!it.value().is_boolean())
        bad("'" + k + "' is not a boolean");
      c.*flag = it.value().get<bool>();
    } else {
      bad("unknown config field '" + k + "'");
    }
  }
  return c;
}

json autotune_detail::keyToJson(const TuningKey &k) {
  json values = json::array();
  for (const auto &[name, v] : k.keyValues)
    values.push_back(json::array({name, v}));
  return {{"device", k.deviceName},
          {"sm_count", k.smCount},
          {"compute_capability", json::array({k.computeCapabilityMajor, k.computeCapabilityMinor})},
          {"driver_version", k.driverVersion},
          {"compiler", k.compilerVersion},
          {"kernel", k.kernelName},
          {"source_hash", k.sourceHash},
          {"options_hash", k.optionsHash},
          {"space_hash", k.spaceHash},
          {"key_values", values}};
}

TuningKey autotune_detail::keyFromJson(const json &j) {
  TuningKey k;
  k.deviceName = stringMember(j, "device");
  k.smCount = intMember(j, "sm_count", 0, 1 << 20);
  const json &cc = member(j, "compute_capability");
  if (!cc.is_array() || cc.size() != 2)
    bad("'compute_capability' is not [major, minor]");
  k.computeCapabilityMajor = int(intValue(cc[0], "compute capability"));
  k.computeCapabilityMinor = int(intValue(cc[1], "compute capability"));
  k.driverVersion = intMember(j, "driver_version", 0, std::numeric_limits<int>::max());
  k.compilerVersion = stringMember(j, "compiler");
  k.kernelName = stringMember(j, "kernel");
  if (k.kernelName.empty())
    bad("'kernel' is empty");
  k.sourceHash = hexMember(j, "source_hash");
  k.optionsHash = hexMember(j, "options_hash");
  k.spaceHash = hexMember(j, "space_hash");
  const json &values = member(j, "key_values");
  if (!values.is_array())
    bad("'key_values' is not an array");
  for (const json &v : values) {
    if (!v.is_array() || v.size() != 2 || !v[0].is_string())
      bad("a key value is not [name, integer]");
    k.keyValues.emplace_back(v[0].get<std::string>(), intValue(v[1], "a key value"));
  }
  return k;
}

json autotune_detail::recordToJson(const TuningRecord &r) {
  json candidates = json::array();
  for (const CandidateResult &c : r.candidates) {
    json j = {{"config", configToJson(c.config)}};
    if (c.timeMs) {
      j["time_ms"] = *c.timeMs;
      j["spread_ms"] = c.spreadMs;
      j["repeats"] = c.repeats;
    } else {
      j["skipped"] = c.skipReason;
    }
    candidates.push_back(std::move(j));
  }
  return {{"best", configToJson(r.best)},
          {"date", r.date},
          {"sources", r.sourcePaths},
          {"candidates", candidates}};
}

TuningRecord autotune_detail::recordFromJson(const json &j) {
  TuningRecord r;
  r.best = configFromJson(member(j, "best"));
  r.date = stringMember(j, "date");
  if (!isIsoDate(r.date))
    bad("'date' is not an ISO 8601 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  const json &sources = member(j, "sources");
  if (!sources.is_array())
    bad("'sources' is not an array");
  for (const json &s : sources) {
    if (!s.is_string())
      bad("a source path is not a string");
    r.sourcePaths.push_back(s.get<std::string>());
  }
  const json &candidates = member(j, "candidates");
  if (!candidates.is_array())
    bad("'candidates' is not an array");
  for (const json &cj : candidates) {
    CandidateResult c;
    c.config = configFromJson(member(cj, "config"));
    bool timed = cj.contains("time_ms"), skipped = cj.contains("skipped");
    if (timed == skipped)
      bad("a candidate needs either 'time_ms' or 'skipped'");
    if (timed) {
      const json &t = cj.at("time_ms"), &s = member(cj, "spread_ms");
      if (!t.is_number() || !s.is_number() || !(t.get<double>() >= 0) || !(s.get<double>() >= 0))
        bad("a candidate's time_ms or spread_ms is not a number >= 0");
      c.timeMs = t.get<double>();
      c.spreadMs = s.get<double>();
      c.repeats = intMember(cj, "repeats", 0, std::numeric_limits<int>::max());
    } else {
      c.skipReason = stringMember(cj, "skipped");
    }
    r.candidates.push_back(std::move(c));
  }
  return r;
}

// ---- TuningKey ---------------------------------------------------------------------------

TuningKey TuningKey::make(const DeviceInfo &device, const std::string &kernelName,
                          const std::vector<std::pair<std::string, std::string>> &sources,
                          const CompileOptions &base, const ConfigSpace &space,
                          const std::map<std::string, int64_t> &arguments) {
  TuningKey k;
  k.deviceName = device.name;
  k.smCount = device.smCount;
  k.computeCapabilityMajor = device.computeCapabilityMajor;
  k.computeCapabilityMinor = device.computeCapabilityMinor;
  k.driverVersion = device.driverVersion;
  k.compilerVersion = tessera::compilerVersion();
  k.kernelName = kernelName;
  k.sourceHash = hashSources(sources);
  k.optionsHash = base.hash();
  k.spaceHash = space.hash();
  k.keyValues = space.bucket(arguments);
  return k;
}

std::string hashSources(const std::vector<std::pair<std::string, std::string>> &sources) {
  std::string s = "tessera-tuning-sources 1\n";
  s += "files " + std::to_string(sources.size()) + "\n";
  for (const auto &[path, text] : sources) {
    (void)path; // see the header: the same files by another path hash the same
    field(s, text);
  }
  return sha256Hex(s);
}

bool TuningKey::sameExceptValues(const TuningKey &o) const {
  if (deviceName != o.deviceName || smCount != o.smCount ||
      computeCapabilityMajor != o.computeCapabilityMajor ||
      computeCapabilityMinor != o.computeCapabilityMinor || driverVersion != o.driverVersion ||
      compilerVersion != o.compilerVersion || kernelName != o.kernelName ||
      sourceHash != o.sourceHash || optionsHash != o.optionsHash || spaceHash != o.spaceHash ||
      keyValues.size() != o.keyValues.size())
    return false;
  for (size_t i = 0; i < keyValues.size(); ++i)
    if (keyValues[i].first != o.keyValues[i].first)
      return false;
  return true;
}

std::string TuningKey::str() const {
  std::string values;
  for (const auto &[name, v] : keyValues)
    values += (values.empty() ? "" : ",") + name + "=" + std::to_string(v);
  return kernelName + (values.empty() ? "" : " " + values) + " on " + deviceName + " (" +
         std::to_string(smCount) + " SMs, cc " + std::to_string(computeCapabilityMajor) + "." +
         std::to_string(computeCapabilityMinor) + ", driver " + std::to_string(driverVersion) +
         "), " + compilerVersion + ", source " + shortHash(sourceHash) + ", options " +
         shortHash(optionsHash) + ", space " + shortHash(spaceHash);
}

std::string TuningKey::hash() const {
  std::string s = "tessera-tuning-key 1\n";
  field(s, deviceName);
  field(s, std::to_string(smCount));
  field(s, std::to_string(computeCapabilityMajor) + "." + std::to_string(computeCapabilityMinor));
  field(s, std::to_string(driverVersion));
  field(s, compilerVersion);
  field(s, kernelName);
  field(s, sourceHash);
  field(s, optionsHash);
  field(s, spaceHash);
  s += "keys " + std::to_string(keyValues.size()) + "\n";
  for (const auto &[name, v] : keyValues) {
    field(s, name);
    field(s, std::to_string(v));
  }
  return sha256Hex(s);
}

std::string TuningKey::toJson() const { return keyToJson(*this).dump(); }

std::optional<TuningKey> TuningKey::fromJson(const std::string &text, std::string *error) {
  try {
    return keyFromJson(json::parse(text));
  } catch (const std::exception &e) {
    if (error)
      *error = e.what();
    return std::nullopt;
  }
}

bool TuningKey::operator==(const TuningKey &o) const {
  return sameExceptValues(o) && keyValues == o.keyValues;
}

// ---- TuningRecord --------------------------------------------------------------------------

bool CandidateResult::operator==(const CandidateResult &o) const {
  return config == o.config && timeMs == o.timeMs && spreadMs == o.spreadMs &&
         repeats == o.repeats && skipReason == o.skipReason;
}

const CandidateResult *TuningRecord::bestCandidate() const {
  for (const CandidateResult &c : candidates)
    if (c.config == best)
      return &c;
  return nullptr;
}

std::string TuningRecord::toJson() const { return recordToJson(*this).dump(); }

std::optional<TuningRecord> TuningRecord::fromJson(const std::string &text, std::string *error) {
  try {
    return recordFromJson(json::parse(text));
  } catch (const std::exception &e) {
    if (error)
      *error = e.what();
    return std::nullopt;
  }
}

bool TuningRecord::operator==(const TuningRecord &o) const {
  return best == o.best && candidates == o.candidates && date == o.date &&
         sourcePaths == o.sourcePaths;
}

std::string autotune_detail::utcNow(const char *format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

std::string isoDateUtcNow() { return utcNow("%Y-%m-%dT%H:%M:%SZ"); }

} // namespace tessera
