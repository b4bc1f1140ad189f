// Config, Bucketing, ConfigSpace, the key distance and the miss policy.
#include "Internal.h"

#include "tessera/Error.h"

#include "Sha256.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace tessera {

using namespace autotune_detail;

std::string autotune_detail::sha256Hex(std::string_view text) { return Sha256::hexHash(text); }

namespace {

constexpr const char *kSwitchNames[] = {"num_warps", "num_stages", "warp_specialize", "tma",
                                        "maxnreg", "cluster_size"};

bool isSwitchName(const std::string &name) {
  return std::find(std::begin(kSwitchNames), std::end(kSwitchNames), name) != std::end(kSwitchNames);
}

std::optional<int64_t> parseInt(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size())
    return std::nullopt;
  return int64_t(v);
}

std::optional<bool> parseBool(const std::string &text) {
  if (text == "1" || text == "true" || text == "True")
    return true;
  if (text == "0" || text == "false" || text == "False")
    return false;
  return std::nullopt;
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

// The stable text of one config: constexprs with their kinds, then the set switches.
void configText(std::string &out, const Config &c) {
  out += "constexprs " + std::to_string(c.constexprs.size()) + "\n";
  for (const auto &[name, value] : c.constexprs) { // std::map: sorted by name
    field(out, name);
    out += constexprKind(value);
    out += ' ';
    field(out, constexprToString(value));
  }
  auto opt = [&](const char *name, const std::optional<int> &v) {
    out += name;
    out += v ? " " + std::to_string(*v) + "\n" : " unset\n";
  };
  opt("num_warps", c.numWarps);
  opt("num_stages", c.numStages);
  opt("warp_specialize", c.warpSpecialize ? std::optional<int>(*c.warpSpecialize) : std::nullopt);
  opt("tma", c.tma ? std::optional<int>(*c.tma) : std::nullopt);
  if (c.maxRegisters) // only when set: the hashes of other configs stay as they were
    opt("maxnreg", c.maxRegisters);
  if (c.clusterSize) // likewise
    opt("cluster_size", c.clusterSize);
}

} // namespace

// ---- Config ------------------------------------------------------------------------

std::optional<int> Config::*Config::intSwitch(const std::string &name) {
  return name == "num_warps"      ? &Config::numWarps
         : name == "num_stages"   ? &Config::numStages
         : name == "maxnreg"      ? &Config::maxRegisters
         : name == "cluster_size" ? &Config::clusterSize
                                  : nullptr;
}

std::optional<bool> Config::*Config::boolSwitch(const std::string &name) {
  return name == "warp_specialize" ? &Config::warpSpecialize : name == "tma" ? &Config::tma : nullptr;
}

void Config::applyTo(CompileOptions &options) const { applyTo(options, options.constexprs); }

void Config::applyTo(CompileOptions &options,
                     std::map<std::string, ConstexprValue> &values) const {
  if (numWarps)
    options.numWarps = *numWarps;
  if (numStages)
    options.numStages = *numStages;
  if (warpSpecialize)
    options.warpSpecialize = *warpSpecialize;
  if (tma)
    options.tma = *tma;
  if (maxRegisters)
    options.maxRegisters = *maxRegisters;
  if (clusterSize)
    options.clusterSize = *clusterSize;
  for (const auto &[name, value] : constexprs)
    values[name] = value;
}

CompileOptions Config::appliedTo(const CompileOptions &base) const {
  CompileOptions o = base;
  applyTo(o);
  return o;
}

std::string Config::validate(const CompileOptions &base) const {
  for (const auto &[name, value] : constexprs) {
    (void)value;
    if (name.empty())
      return "a config has a constexpr with an empty name";
    if (isSwitchName(name))
      return "'" + name + "' is a compile option, not a constexpr (set it with the config's switches)";
  }
  return appliedTo(base).validate();
}

std::string Config::str() const {
  std::string s;
  auto add = [&](const std::string &name, const std::string &value) {
    s += (s.empty() ? "" : ",") + name + "=" + value;
  };
  for (const auto &[name, value] : constexprs)
    add(name, constexprToString(value));
  if (numWarps)
    add("num_warps", std::to_string(*numWarps));
  if (numStages)
    add("num_stages", std::to_string(*numStages));
  if (warpSpecialize)
    add("warp_specialize", *warpSpecialize ? "1" : "0");
  if (tma)
    add("tma", *tma ? "1" : "0");
  if (maxRegisters)
    add("maxnreg", std::to_string(*maxRegisters));
  if (clusterSize)
    add("cluster_size", std::to_string(*clusterSize));
  return s;
}

std::optional<Config> Config::parse(const std::string &text, std::string *error) {
  auto fail = [&](const std::string &why) -> std::optional<Config> {
    if (error)
      *error = why;
    return std::nullopt;
  };
  Config c;
  if (trim(text).empty())
    return c;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = trim(text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? text.size() + 1 : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return fail("expected NAME=VALUE, got '" + item + "'");
    std::string name = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    if (name.empty())
      return fail("expected NAME=VALUE, got '" + item + "'");
    if (auto sw = intSwitch(name)) {
      auto v = parseInt(value);
      if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max())
        return fail(name + " must be an integer, got '" + value + "'");
      c.*sw = int(*v);
    } else if (auto flag = boolSwitch(name)) {
      auto v = parseBool(value);
      if (!v)
        return fail(name + " must be 0 or 1, got '" + value + "'");
      c.*flag = *v;
    } else {
      auto v = parseConstexpr(value);
      if (!v)
        return fail("bad value '" + value + "' for " + name);
      c.constexprs[name] = *v;
    }
  }
  return c;
}

std::string Config::toJson() const { return configToJson(*this).dump(); }

std::optional<Config> Config::fromJson(const std::string &text, std::string *error) {
  try {
    return configFromJson(json::parse(text));
  } catch (const std::exception &e) {
    if (error)
      *error = e.what();
    return std::nullopt;
  }
}

bool Config::operator==(const Config &o) const {
  if (constexprs.size() != o.constexprs.size())
    return false;
  for (auto a = constexprs.begin(), b = o.constexprs.begin(); a != constexprs.end(); ++a, ++b) {
    // Compare kinds and texts: a double NaN equals itself, 64 (int) != 64.0.
    if (a->first != b->first || constexprKind(a->second) != constexprKind(b->second) ||
        constexprToString(a->second) != constexprToString(b->second))
      return false;
  }
  return numWarps == o.numWarps && numStages == o.numStages &&
         warpSpecialize == o.warpSpecialize && tma == o.tma && maxRegisters == o.maxRegisters &&
         clusterSize == o.clusterSize;
}

// ---- Bucketing -----------------------------------------------------------------------

int64_t Bucketing::apply(int64_t value) const {
  switch (kind) {
  case Kind::None:
    return value;
  case Kind::Pow2: {
    if (value <= 1 || value > (int64_t(1) << 62))
      return value;
    int64_t p = 1;
    while (p < value)
      p <<= 1;
    return p;
  }
  case Kind::Edges: {
    if (edges.empty())
      return value;
    auto it = std::lower_bound(edges.begin(), edges.end(), value);
    return it == edges.end() ? edges.back() : *it;
  }
  }
  return value;
}

std::string Bucketing::validate() const {
  if (kind != Kind::Edges)
    return edges.empty() ? "" : "only edges bucketing has bucket edges";
  if (edges.empty())
    return "edges bucketing needs at least one bucket edge";
  for (size_t i = 1; i < edges.size(); ++i)
    if (edges[i] <= edges[i - 1])
      return "bucket edges must be strictly ascending: " + std::to_string(edges[i]) + " after " +
             std::to_string(edges[i - 1]);
  return "";
}

std::string Bucketing::str() const {
  switch (kind) {
  case Kind::None: return "none";
  case Kind::Pow2: return "pow2";
  case Kind::Edges: break;
  }
  std::string s = "edges(";
  for (size_t i = 0; i < edges.size(); ++i)
    s += (i ? "," : "") + std::to_string(edges[i]);
  return s + ")";
}

std::optional<Bucketing> Bucketing::parse(const std::string &text) {
  std::string t = trim(text);
  if (t == "none")
    return none();
  if (t == "pow2")
    return pow2();
  std::string list;
  if (t.rfind("edges(", 0) == 0 && t.back() == ')')
    list = t.substr(6, t.size() - 7);
  else if (t.rfind("edges:", 0) == 0)
    list = t.substr(6);
  else
    return std::nullopt;
  Bucketing b{Kind::Edges, {}};
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    auto v = parseInt(trim(list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    if (!v)
      return std::nullopt;
    b.edges.push_back(*v);
    pos = comma == std::string::npos ? list.size() + 1 : comma + 1;
  }
  if (!b.validate().empty())
    return std::nullopt;
  return b;
}

// ---- ConfigSpace -----------------------------------------------------------------------

std::string ConfigSpace::validate(const CompileOptions &base) const {
  if (configs.empty())
    return "a config space needs at least one config";
  for (size_t i = 0; i < configs.size(); ++i) {
    std::string name = "config " + std::to_string(i) + " (" + configs[i].str() + ")";
    if (std::string why = configs[i].validate(base); !why.empty())
      return name + ": " + why;
    for (size_t j = 0; j < i; ++j)
      if (configs[j] == configs[i])
        return name + " repeats config " + std::to_string(j);
  }
  std::set<std::string> seen;
  for (const KeySpec &k : keys) {
    if (k.name.empty())
      return "an autotune key has an empty name";
    if (!seen.insert(k.name).second)
      return "autotune key '" + k.name + "' is listed twice";
    if (std::string why = k.bucketing.validate(); !why.empty())
      return "autotune key '" + k.name + "': " + why;
  }
  std::set<std::string> resets(reset.begin(), reset.end());
  for (const auto *list : {&reset, &restore}) {
    const char *what = list == &reset ? "reset" : "restore";
    std::set<std::string> names;
    for (const std::string &n : *list) {
      if (n.empty())
        return std::string("an empty name in ") + what;
      if (!names.insert(n).second)
        return "'" + n + "' is listed twice in " + what;
      if (list == &restore && resets.count(n))
        return "'" + n + "' is both reset and restored";
    }
  }
  return "";
}

int64_t Config::get(const std::string &name) const {
  auto it = constexprs.find(name);
  if (it == constexprs.end() || !std::holds_alternative<int64_t>(it->second))
    throw Error("config " + str() + " sets no integer '" + name + "'");
  return std::get<int64_t>(it->second);
}

std::vector<Config> ConfigSpace::candidates() const {
  std::vector<Config> out;
  for (const Config &c : configs)
    if (admits(c))
      out.push_back(c);
  return out;
}

KeyValues ConfigSpace::bucket(const std::map<std::string, int64_t> &values) const {
  KeyValues out;
  for (const KeySpec &k : keys) {
    auto it = values.find(k.name);
    if (it == values.end()) {
      std::string given;
      for (const auto &[name, v] : values) {
        (void)v;
        given += (given.empty() ? "" : ", ") + name;
      }
      throw Error("autotune key '" + k.name + "' has no value (values were given for: " +
                  (given.empty() ? "nothing" : given) + ")");
    }
    out.emplace_back(k.name, k.bucketing.apply(it->second));
  }
  return out;
}

std::string ConfigSpace::canonicalText() const {
  std::string s = "tessera-config-space 1\n";
  s += "configs " + std::to_string(configs.size()) + "\n";
  for (const Config &c : configs)
    configText(s, c);
  s += "keys " + std::to_string(keys.size()) + "\n";
  for (const KeySpec &k : keys) {
    field(s, k.name);
    field(s, k.bucketing.str());
  }
  for (const auto *list : {&reset, &restore}) {
    s += list == &reset ? "reset " : "restore ";
    s += std::to_string(list->size()) + "\n";
    for (const std::string &n : *list)
      field(s, n);
  }
  // Absent when empty, so that spaces without one keep their hash.
  if (!pruneExpression.empty()) {
    s += "prune\n";
    field(s, pruneExpression);
  }
  return s;
}

std::string ConfigSpace::hash() const { return sha256Hex(canonicalText()); }

// ---- key distance --------------------------------------------------------------------------

double keyDistance(const KeyValues &a, const KeyValues &b) {
  if (a.size() != b.size())
    return std::numeric_limits<double>::infinity();
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first)
      return std::numeric_limits<double>::infinity();
    double x = double(std::max<int64_t>(a[i].second, 1));
    double y = double(std::max<int64_t>(b[i].second, 1));
    d += std::fabs(std::log2(x / y));
  }
  return d;
}

// ---- the miss policy -------------------------------------------------------------------------

const char *missPolicyName(MissPolicy policy) {
  switch (policy) {
  case MissPolicy::TuneNow: return "tune";
  case MissPolicy::Nearest: return "nearest";
  case MissPolicy::FirstConfig: return "first";
  }
  return "tune";
}

std::optional<MissPolicy> parseMissPolicy(const std::string &text) {
  for (MissPolicy p : {MissPolicy::TuneNow, MissPolicy::Nearest, MissPolicy::FirstConfig})
    if (text == missPolicyName(p))
      return p;
  return std::nullopt;
}

MissPolicy effectiveMissPolicy(MissPolicy configured) {
  const char *env = std::getenv("TESSERA_AUTOTUNE_MISS");
  if (!env || !*env)
    return configured;
  if (auto p = parseMissPolicy(env))
    return *p;
  throw Error(std::string("TESSERA_AUTOTUNE_MISS must be tune, nearest or first, got '") + env +
              "'");
}

} // namespace tessera
