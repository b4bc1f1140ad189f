// Autotuner foundation tests: configs, bucketing, config-space hashes, the
// tuning key and the miss policy with its environment override.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include "tessera/Autotune.h"
#include "tessera/Compiler.h"
#include "tessera/Error.h"
#include "tessera/JIT.h"

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera;
namespace fs = std::filesystem;
using tessera::testing::EnvGuard;
using tessera::testing::errorOf;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tessera-autotune-test-XXXXXX";
    if (!::mkdtemp(tmpl))
      throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Names in `dir` (not recursive), sorted.
std::vector<std::string> filesIn(const std::string &dir) {
  std::vector<std::string> names;
  for (auto &e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

size_t countWithInfix(const std::string &dir, const std::string &infix) {
  size_t n = 0;
  for (const std::string &name : filesIn(dir))
    n += name.find(infix) != std::string::npos;
  return n;
}

DeviceInfo h100() {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.smCount = 132;
  d.driverVersion = 13000;
  return d;
}

Config cfg(int64_t bm, int64_t bn, int warps) {
  return Config{}.set("BM", bm).set("BN", bn).warps(warps).stages(4);
}

ConfigSpace matmulSpace() {
  ConfigSpace s;
  s.add(cfg(128, 256, 8)).add(cfg(128, 128, 4)).add(cfg(64, 128, 4));
  s.key("M", Bucketing::pow2()).key("N", Bucketing::pow2());
  return s;
}

const std::vector<std::pair<std::string, std::string>> kSources = {
    {"kernels/mm.tile", "@kernel\ndef mm(...): ...\n"}, {"kernels/lib.tile", "@func\ndef f(): ...\n"}};

TuningKey keyFor(int64_t m, int64_t n, const ConfigSpace &space = matmulSpace()) {
  return TuningKey::make(h100(), "mm", kSources, CompileOptions{}, space, {{"M", m}, {"N", n}});
}

TuningRecord recordFor(const ConfigSpace &space, size_t bestIndex, double base = 1.0) {
  TuningRecord r;
  r.best = space.configs[bestIndex];
  for (size_t i = 0; i < space.configs.size(); ++i) {
    CandidateResult c;
    c.config = space.configs[i];
    if (i + 1 == space.configs.size()) {
      c.skipReason = "compile error: too much shared memory";
    } else {
      c.timeMs = base + (i == bestIndex ? 0.0 : 0.25 * double(i + 1));
      c.spreadMs = 0.01;
      c.repeats = 50;
    }
    r.candidates.push_back(c);
  }
  r.sourcePaths = {"kernels/mm.tile", "kernels/lib.tile"};
  return r;
}

std::string onlyCacheFile(const std::string &dir) {
  std::vector<std::string> found;
  for (const std::string &name : filesIn(dir))
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".v1.json") == 0)
      found.push_back(dir + "/" + name);
  REQUIRE(found.size() == 1);
  return found[0];
}

} // namespace

// ---- configs -----------------------------------------------------------------------

TEST_CASE("Config: str, parse, JSON and applyTo", "[autotune]") {
  Config c = Config{}
                 .set("BN", int64_t(256))
                 .set("BM", int64_t(128))
                 .set("EPS", 2.0)
                 .set("FAST", true)
                 .set("DT", DType{ScalarType::bf16, 0})
                 .warps(8)
                 .stages(3)
                 .useTma(false);
  CHECK(c.str() == "BM=128,BN=256,DT=bf16,EPS=2.0,FAST=true,num_warps=8,num_stages=3,tma=0");

  std::string error;
  auto parsed = Config::parse(c.str(), &error);
  REQUIRE(parsed);
  CHECK(*parsed == c);
  CHECK_FALSE(Config::parse("BM=128,num_warps=eight", &error));
  CHECK(error == "num_warps must be an integer, got 'eight'");
  CHECK_FALSE(Config::parse("BM", &error));
  CHECK(Config::parse("")->str().empty());

  // JSON keeps every kind: the float stays a float, the dtype a dtype.
  nlohmann::json j = nlohmann::json::parse(c.toJson());
  CHECK(j["constexprs"]["BM"] == 128);
  CHECK(j["constexprs"]["EPS"].is_number_float());
  CHECK(j["constexprs"]["DT"] == "bf16");
  CHECK(j["num_warps"] == 8);
  CHECK(j["tma"] == false);
  CHECK_FALSE(j.contains("warp_specialize")); // unset switches are absent
  auto back = Config::fromJson(c.toJson(), &error);
  REQUIRE(back);
  CHECK(*back == c);
  CHECK(std::holds_alternative<double>(back->constexprs.at("EPS")));
  Config nan = Config{}.set("X", std::nan(""));
  auto nanBack = Config::fromJson(nan.toJson());
  REQUIRE(nanBack);
  CHECK(*nanBack == nan);
  CHECK(Config{}.set("BM", int64_t(64)) != Config{}.set("BM", 64.0)); // kinds differ
  CHECK_FALSE(Config::fromJson(R"({"constexprs": {}, "num_wraps": 4})", &error));
  CHECK(error.find("unknown config field 'num_wraps'") != std::string::npos);
  CHECK_FALSE(Config::fromJson(R"({"constexprs": {"BM": "128"}})", &error));
  CHECK_FALSE(Config::fromJson("{\"constexprs\": {", &error));

  // applyTo: the switches a config sets, its constexprs; the rest stays.
  JitOptions options;
  options.warpSpecialize = false;
  std::map<std::string, ConstexprValue> constexprs = {{"BM", int64_t(16)}, {"K", int64_t(3)}};
  c.applyTo(options, constexprs);
  CHECK(options.numWarps == 8);
  CHECK(options.numStages == 3);
  CHECK(options.tma == false);
  CHECK(options.warpSpecialize == false); // not set by the config
  CHECK(std::get<int64_t>(constexprs.at("BM")) == 128);
  CHECK(std::get<int64_t>(constexprs.at("K")) == 3);
  CHECK(options.constexprs.empty());
  CompileOptions applied = c.appliedTo(CompileOptions{});
  CHECK(applied.constexprs.size() == 5);
  CHECK(applied.hash() != CompileOptions{}.hash());

  CHECK(c.validate().empty());
  CHECK(Config{}.warps(3).validate() == "num_warps must be a power of two from 1 to 32, got 3");
  CHECK(Config{}.set("num_warps", int64_t(4)).validate().find("compile option") !=
        std::string::npos);
}

// ---- bucketing ---------------------------------------------------------------------------

TEST_CASE("Bucketing: pow2 and explicit edges", "[autotune]") {
  Bucketing p = Bucketing::pow2();
  CHECK(p.apply(1) == 1);
  CHECK(p.apply(2) == 2);
  CHECK(p.apply(3) == 4);
  CHECK(p.apply(512) == 512);   // exact powers stay
  CHECK(p.apply(513) == 1024);
  CHECK(p.apply(20480) == 32768);
  CHECK(p.apply(0) == 0);       // non-positive values stay
  CHECK(p.apply(-7) == -7);
  CHECK(p.apply((int64_t(1) << 62) + 1) == (int64_t(1) << 62) + 1); // no overflow

  Bucketing e = Bucketing::at({16, 64, 256});
  REQUIRE(e.validate().empty());
  CHECK(e.apply(-5) == 16);     // below the first edge: the first bucket
  CHECK(e.apply(1) == 16);
  CHECK(e.apply(16) == 16);     // an edge is its own bucket's top
  CHECK(e.apply(17) == 64);
  CHECK(e.apply(64) == 64);
  CHECK(e.apply(200) == 256);
  CHECK(e.apply(256) == 256);
  CHECK(e.apply(100000) == 256); // above the last edge: the last bucket

  CHECK(Bucketing::none().apply(12345) == 12345);
  CHECK(Bucketing::at({64, 16}).validate() ==
        "bucket edges must be strictly ascending: 16 after 64");
  CHECK(Bucketing::at({}).validate() == "edges bucketing needs at least one bucket edge");
  CHECK(e.str() == "edges(16,64,256)");
  CHECK(Bucketing::parse("edges(16,64,256)") == e);
  CHECK(Bucketing::parse("edges:16,64,256") == e);
  CHECK(Bucketing::parse("pow2") == p);
  CHECK_FALSE(Bucketing::parse("edges(64,16)"));
  CHECK_FALSE(Bucketing::parse("log"));

  ConfigSpace s = matmulSpace();
  s.key("K", Bucketing::at({128, 1024}));
  KeyValues v = s.bucket({{"M", 500}, {"N", 8192}, {"K", 129}, {"unused", 1}});
  CHECK(v == KeyValues{{"M", 512}, {"N", 8192}, {"K", 1024}});
  CHECK(errorOf([&] { s.bucket({{"M", 1}, {"N", 1}}); }) ==
        "autotune key 'K' has no value (values were given for: M, N)");
}

// ---- config spaces ------------------------------------------------------------------------

TEST_CASE("ConfigSpace: validation, prune, candidates", "[autotune]") {
  ConfigSpace s = matmulSpace();
  CHECK(s.validate().empty());
  s.prune = [](const Config &c) { return std::get<int64_t>(c.constexprs.at("BN")) <= 128; };
  std::vector<Config> kept = s.candidates();
  REQUIRE(kept.size() == 2);
  CHECK(kept[0] == s.configs[1]);
  CHECK_FALSE(s.admits(s.configs[0]));

  CHECK(ConfigSpace{}.validate() == "a config space needs at least one config");
  ConfigSpace dup = matmulSpace();
  dup.add(cfg(128, 256, 8));
  CHECK(dup.validate() == "config 3 (BM=128,BN=256,num_warps=8,num_stages=4) repeats config 0");
  ConfigSpace badWarps = matmulSpace();
  badWarps.add(cfg(32, 32, 6));
  CHECK(badWarps.validate() ==
        "config 3 (BM=32,BN=32,num_warps=6,num_stages=4): num_warps must be a power of two from "
        "1 to 32, got 6");
  ConfigSpace keys = matmulSpace();
  keys.key("M");
  CHECK(keys.validate() == "autotune key 'M' is listed twice");
  ConfigSpace edges = matmulSpace();
  edges.key("K", Bucketing::at({8, 8}));
  CHECK(edges.validate() == "autotune key 'K': bucket edges must be strictly ascending: 8 after 8");
  ConfigSpace rr = matmulSpace();
  rr.reset = {"C"};
  rr.restore = {"C"};
  CHECK(rr.validate() == "'C' is both reset and restored");
}

TEST_CASE("ConfigSpace: hash is stable and covers configs, keys, bucketing, reset, restore",
          "[autotune]") {
  ConfigSpace a = matmulSpace();
  a.reset = {"C"};
  a.restore = {"P"};
  ConfigSpace b = matmulSpace();
  b.reset = {"C"};
  b.restore = {"P"};
  CHECK(a.hash() == b.hash());
  CHECK(a.hash().size() == 64);
  // The same text in every process and run: a fixed space has a fixed hash.
  // (Changing canonicalText() invalidates every stored tuning; do it knowingly.)
  // The digest is plain SHA-256 of the text (python3 hashlib gives the same).
  ConfigSpace fixed;
  fixed.add(Config{}.set("BM", int64_t(64)).warps(4)).key("M", Bucketing::pow2());
  CHECK(fixed.canonicalText() ==
        "tessera-config-space 1\nconfigs 1\nconstexprs 1\n2:BM\ni 2:64\nnum_warps 4\n"
        "num_stages unset\nwarp_specialize unset\ntma unset\nkeys 1\n1:M\n4:pow2\nreset 0\n"
        "restore 0\n");
  CHECK(fixed.hash() == "66daf7149ac17fb037b031d1233e59c5d94cdd2f458c7004da6a1c95ac290761");

  // Not part of the hash: the prune function (documented).
  b.prune = [](const Config &) { return false; };
  CHECK(a.hash() == b.hash());

  auto differs = [&](const std::function<void(ConfigSpace &)> &change) {
    ConfigSpace c = a;
    change(c);
    return c.hash() != a.hash();
  };
  CHECK(differs([](ConfigSpace &c) { c.configs[0].numStages = 3; }));
  CHECK(differs([](ConfigSpace &c) { c.configs[1].constexprs["BM"] = 128.0; })); // kind
  CHECK(differs([](ConfigSpace &c) { c.configs[2].tma = true; }));
  CHECK(differs([](ConfigSpace &c) { std::swap(c.configs[0], c.configs[1]); }));
  CHECK(differs([](ConfigSpace &c) { c.add(cfg(32, 32, 2)); }));
  CHECK(differs([](ConfigSpace &c) { c.keys[1].bucketing = Bucketing::none(); }));
  CHECK(differs([](ConfigSpace &c) { c.keys[1].bucketing = Bucketing::at({1024, 4096}); }));
  CHECK(differs([](ConfigSpace &c) { c.key("K"); }));
  CHECK(differs([](ConfigSpace &c) { c.reset.clear(); }));
  CHECK(differs([](ConfigSpace &c) { c.restore.push_back("Q"); }));
  CHECK(differs([](ConfigSpace &c) { std::swap(c.reset, c.restore); }));
}

// ---- the tuning key --------------------------------------------------------------------------

TEST_CASE("TuningKey: fields, str, hash, JSON", "[autotune]") {
  TuningKey k = keyFor(500, 8192);
  CHECK(k.deviceName == "NVIDIA H100 80GB HBM3");
  CHECK(k.smCount == 132);
  CHECK(k.computeCapabilityMajor == 9);
  CHECK(k.driverVersion == 13000);
  CHECK(k.compilerVersion == compilerVersion());
  CHECK(k.sourceHash == hashSources(kSources));
  CHECK(k.optionsHash == CompileOptions{}.hash());
  CHECK(k.spaceHash == matmulSpace().hash());
  CHECK(k.keyValues == KeyValues{{"M", 512}, {"N", 8192}});
  CHECK(k.str().rfind("mm M=512,N=8192 on NVIDIA H100 80GB HBM3 (132 SMs, cc 9.0, driver 13000), ",
                      0) == 0);
  // Shapes in one bucket share the key.
  CHECK(keyFor(500, 8192).hash() == keyFor(512, 5000).hash());
  CHECK(keyFor(500, 8192).hash() != keyFor(513, 8192).hash());

  auto back = TuningKey::fromJson(k.toJson());
  REQUIRE(back);
  CHECK(*back == k);
  CHECK(back->hash() == k.hash());

  auto differs = [&](const std::function<void(TuningKey &)> &change) {
    TuningKey c = k;
    change(c);
    return c.hash() != k.hash() && !(c == k);
  };
  CHECK(differs([](TuningKey &c) { c.deviceName = "NVIDIA H200"; }));
  CHECK(differs([](TuningKey &c) { c.smCount = 114; }));
  CHECK(differs([](TuningKey &c) { c.computeCapabilityMinor = 1; }));
  CHECK(differs([](TuningKey &c) { c.driverVersion = 12080; }));
  CHECK(differs([](TuningKey &c) { c.compilerVersion += "x"; }));
  CHECK(differs([](TuningKey &c) { c.kernelName = "mm2"; }));
  CHECK(differs([](TuningKey &c) {
    CompileOptions noTma;
    noTma.tma = false;
    c.optionsHash = noTma.hash();
  }));
  CHECK(differs([](TuningKey &c) { c.keyValues[0].second = 1024; }));
  CHECK(differs([](TuningKey &c) { c.keyValues[0].first = "B"; }));

  // The options the configs are applied to: a dtype constexpr is part of the key.
  CompileOptions bf16;
  bf16.constexprs["DT"] = DType{ScalarType::bf16, 0};
  TuningKey kb = TuningKey::make(h100(), "mm", kSources, bf16, matmulSpace(), {{"M", 1}, {"N", 1}});
  CHECK(kb.optionsHash != k.optionsHash);

  // Paths are not hashed, only texts (in order).
  auto moved = kSources;
  moved[0].first = "/abs/elsewhere/mm.tile";
  CHECK(hashSources(moved) == hashSources(kSources));
  auto swapped = std::vector<std::pair<std::string, std::string>>{kSources[1], kSources[0]};
  CHECK(hashSources(swapped) != hashSources(kSources));
}

// ---- the miss policy -------------------------------------------------------------------------------

TEST_CASE("MissPolicy: names and the TESSERA_AUTOTUNE_MISS override", "[autotune]") {
  CHECK(parseMissPolicy("tune") == MissPolicy::TuneNow);
  CHECK(parseMissPolicy("nearest") == MissPolicy::Nearest);
  CHECK(parseMissPolicy("first") == MissPolicy::FirstConfig);
  CHECK_FALSE(parseMissPolicy("fastest"));
  CHECK(std::string(missPolicyName(MissPolicy::Nearest)) == "nearest");
  {
    EnvGuard env("TESSERA_AUTOTUNE_MISS", nullptr);
    CHECK(effectiveMissPolicy() == MissPolicy::TuneNow);
    CHECK(effectiveMissPolicy(MissPolicy::FirstConfig) == MissPolicy::FirstConfig);
  }
  {
    EnvGuard env("TESSERA_AUTOTUNE_MISS", "");
    CHECK(effectiveMissPolicy(MissPolicy::Nearest) == MissPolicy::Nearest);
  }
  {
    EnvGuard env("TESSERA_AUTOTUNE_MISS", "nearest");
    CHECK(effectiveMissPolicy(MissPolicy::TuneNow) == MissPolicy::Nearest);
    CHECK(effectiveMissPolicy(MissPolicy::FirstConfig) == MissPolicy::Nearest);
  }
  {
    EnvGuard env("TESSERA_AUTOTUNE_MISS", "first");
    CHECK(effectiveMissPolicy() == MissPolicy::FirstConfig);
  }
  {
    EnvGuard env("TESSERA_AUTOTUNE_MISS", "tune");
    CHECK(effectiveMissPolicy(MissPolicy::Nearest) == MissPolicy::TuneNow);
  }
  {
    EnvGuard env("TESSERA_AUTOTUNE_MISS", "sometimes");
    CHECK(errorOf([] { effectiveMissPolicy(); }) ==
          "TESSERA_AUTOTUNE_MISS must be tune, nearest or first, got 'sometimes'");
  }
}
