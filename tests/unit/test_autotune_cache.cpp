// Autotuner foundation tests: configs, bucketing, config-space hashes, the
// tuning key and its invalidation, the tuning cache (round trip, memory hits,
// corrupt and truncated files, two processes writing one file, nearest,
// pruning) and the miss policy with its environment override.
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
using tessera::testing::TempDir;
using tessera::testing::writeFile;

namespace {



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

// ---- the tuning cache ---------------------------------------------------------------------------

TEST_CASE("TuningCache: round trip, memory hits, file format", "[autotune]") {
  TempDir dir("tessera-autotune-test");
  ConfigSpace space = matmulSpace();
  TuningKey key = keyFor(512, 8192);
  TuningRecord record = recordFor(space, 1);
  {
    TuningCache cache(dir.path);
    TuningStatus st;
    CHECK_FALSE(cache.lookup(key, &st));
    CHECK(cache.stats().misses == 1);
    CHECK(cache.stats().fileReads == 0); // no file yet
    REQUIRE(cache.store(key, record, &st));
    CHECK(st.warnings.empty());
    auto hit = cache.lookup(key);
    REQUIRE(hit);
    CHECK(cache.stats().memoryHits == 1);
  }

  // Another cache object (as another process would) reads it from the file.
  TuningCache cache(dir.path);
  TuningStatus st;
  auto got = cache.lookup(key, &st);
  REQUIRE(got);
  CHECK(st.warnings.empty());
  CHECK(got->best == record.best);
  CHECK(got->candidates == record.candidates);
  CHECK(got->sourcePaths == record.sourcePaths);
  CHECK(got->date.size() == 20); // filled in by store(): 2026-11-26T09:40:12Z
  CHECK(got->date.back() == 'Z');
  REQUIRE(got->bestCandidate());
  CHECK(*got->bestCandidate()->timeMs == 1.0);
  CHECK(got->candidates.back().skipped());
  CHECK(got->candidates.back().skipReason == "compile error: too much shared memory");
  TuningCacheStats s = cache.stats();
  CHECK(s.diskHits == 1);
  CHECK(s.fileReads == 1);

  // The second lookup is a memory hit: no file is read.
  auto again = cache.lookup(key);
  CHECK(again == got);
  s = cache.stats();
  CHECK(s.memoryHits == 1);
  CHECK(s.fileReads == 1);
  // A miss on an unchanged file does not read it again either.
  CHECK_FALSE(cache.lookup(keyFor(64, 64)));
  CHECK(cache.stats().fileReads == 1);
  CHECK(cache.stats().misses == 1);

  // One versioned JSON file per kernel version, nothing else left behind
  // (the lock file stays).
  std::string file = onlyCacheFile(dir.path);
  CHECK(file == cache.filePath(key));
  CHECK(fs::path(file).filename().string() == "mm." + key.sourceHash.substr(0, 16) + ".v1.json");
  CHECK(filesIn(dir.path) ==
        std::vector<std::string>{fs::path(file).filename().string(),
                                 fs::path(file).filename().string() + ".lock"});
  nlohmann::json j = nlohmann::json::parse(readFile(file));
  CHECK(j["format"] == "tessera-tuning-cache");
  CHECK(j["version"] == 1);
  REQUIRE(j["entries"].size() == 1);
  CHECK(j["entries"][0]["key"]["key_values"] == nlohmann::json::parse(R"([["M",512],["N",8192]])"));
  CHECK(j["entries"][0]["record"]["best"]["constexprs"]["BN"] == 128);

  // A store replaces the entry of an equal key and keeps the others.
  TuningCache writer(dir.path);
  REQUIRE(writer.store(key, recordFor(space, 0)));
  REQUIRE(writer.store(keyFor(1024, 1024), recordFor(space, 2)));
  j = nlohmann::json::parse(readFile(file));
  CHECK(j["entries"].size() == 2);
  // A memory hit never touches the file: the first cache still answers `key`
  // with what it read before, without reading the changed file.
  uint64_t reads = cache.stats().fileReads;
  CHECK(cache.lookup(key)->best == space.configs[1]);
  CHECK(cache.stats().fileReads == reads);
  // A miss reads the changed file: the new key, and the replaced entry.
  CHECK(cache.lookup(keyFor(1000, 1000)));
  CHECK(cache.stats().diskHits == 2);
  CHECK(cache.stats().fileReads == reads + 1);
  CHECK(cache.lookup(key)->best == space.configs[0]);
  CHECK(TuningCache(dir.path).lookup(key)->best == space.configs[0]);
  cache.clearMemory();
  CHECK(cache.lookup(key)->best == space.configs[0]);
  CHECK(cache.stats().fileReads == reads + 2);

  CHECK(cache.entries().size() == 2);
}

TEST_CASE("TuningCache: a corrupt or truncated file is reported, set aside and ignored",
          "[autotune]") {
  ConfigSpace space = matmulSpace();
  TuningKey key = keyFor(512, 512);

  auto check = [&](const std::string &what, const std::function<std::string(const std::string &)> &damage) {
    INFO(what);
    TempDir dir("tessera-autotune-test");
    std::string file;
    {
      TuningCache cache(dir.path);
      REQUIRE(cache.store(key, recordFor(space, 0)));
      REQUIRE(cache.store(keyFor(4096, 4096), recordFor(space, 1)));
      file = cache.filePath(key);
    }
    writeFile(file, damage(readFile(file)));

    TuningCache cache(dir.path);
    TuningStatus st;
    std::shared_ptr<const TuningRecord> got;
    REQUIRE_NOTHROW(got = cache.lookup(key, &st));
    CHECK_FALSE(got);
    REQUIRE(st.warnings.size() == 1);
    CHECK(st.warnings[0].find("tuning cache file " + file + " is corrupt") != std::string::npos);
    CHECK(st.warnings[0].find("set aside as") != std::string::npos);
    CHECK(cache.stats().corruptFiles == 1);
    CHECK_FALSE(fs::exists(file));
    CHECK(countWithInfix(dir.path, ".v1.json.corrupt-") == 1);

    // Ignored from now on; a later store works and reads back.
    st.warnings.clear();
    CHECK_FALSE(cache.lookup(keyFor(4096, 4096), &st));
    CHECK(st.warnings.empty());
    REQUIRE(cache.store(key, recordFor(space, 2), &st));
    CHECK(st.warnings.empty());
    TuningCache fresh(dir.path);
    auto back = fresh.lookup(key, &st);
    REQUIRE(back);
    CHECK(back->best == space.configs[2]);
    CHECK(st.warnings.empty());
    CHECK(countWithInfix(dir.path, ".v1.json.corrupt-") == 1);
  };

  check("garbage", [](const std::string &) { return std::string("\x01\x02 not json at all"); });
  check("empty", [](const std::string &) { return std::string(); });
  check("truncated", [](const std::string &t) { return t.substr(0, t.size() / 2); });
  check("truncated by one byte", [](const std::string &t) {
    std::string s = t;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
      s.pop_back();
    s.pop_back(); // the closing brace
    return s;
  });
  auto edit = [](const std::function<void(nlohmann::json &)> &change) {
    return [change](const std::string &t) {
      nlohmann::json j = nlohmann::json::parse(t);
      change(j);
      return j.dump();
    };
  };
  check("wrong version", edit([](nlohmann::json &j) { j["version"] = 99; }));
  check("wrong format", edit([](nlohmann::json &j) { j["format"] = "something-else"; }));
  check("not an object", edit([](nlohmann::json &j) { j = nlohmann::json::array(); }));
  check("missing date", edit([](nlohmann::json &j) { j["entries"][1]["record"].erase("date"); }));
  check("bad hash", edit([](nlohmann::json &j) { j["entries"][0]["key"]["source_hash"] = "xyz"; }));
  check("bad candidate", edit([](nlohmann::json &j) {
          j["entries"][0]["record"]["candidates"][0]["skipped"] = "both timed and skipped";
        }));
  check("entry in the wrong file",
        edit([](nlohmann::json &j) { j["entries"][0]["key"]["kernel"] = "other"; }));
}

TEST_CASE("TuningCache: a store over a corrupt file sets it aside and writes a valid one",
          "[autotune]") {
  TempDir dir("tessera-autotune-test");
  ConfigSpace space = matmulSpace();
  TuningKey key = keyFor(512, 512);
  TuningCache cache(dir.path);
  fs::create_directories(dir.path);
  writeFile(cache.filePath(key), "{\"format\": \"tessera-tuning-cache\", \"version\": 1, \"entr");
  TuningStatus st;
  REQUIRE(cache.store(key, recordFor(space, 1), &st));
  REQUIRE(st.warnings.size() == 1);
  CHECK(st.warnings[0].find("is corrupt (bad JSON (truncated?))") != std::string::npos);
  CHECK(countWithInfix(dir.path, ".corrupt-") == 1);
  TuningCache fresh(dir.path);
  REQUIRE(fresh.lookup(key));
  CHECK(fresh.lookup(key)->best == space.configs[1]);
}

TEST_CASE("TuningCache: two processes writing one file keep every entry", "[autotune]") {
  TempDir dir("tessera-autotune-test");
  ConfigSpace space = matmulSpace();
  constexpr int kPerProcess = 40;
  // Both write keys of one kernel version: one file. Process p stores
  // M = 2^(p + 1), N = 2^i for i < kPerProcess.
  auto keyOf = [&](int p, int i) { return keyFor(int64_t(1) << (p + 1), int64_t(1) << (i % 62)); };
  auto work = [&](int p) {
    TuningCache cache(dir.path);
    int failures = 0;
    for (int i = 0; i < kPerProcess; ++i) {
      TuningStatus st;
      if (!cache.store(keyOf(p, i), recordFor(space, size_t(i % 2), 1.0 + i), &st) ||
          !st.warnings.empty())
        ++failures;
    }
    return failures;
  };
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0)
    ::_exit(work(1) == 0 ? 0 : 1);
  int parentFailures = work(0);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(parentFailures == 0);

  // The file parses and holds both processes' entries.
  std::string file = onlyCacheFile(dir.path);
  nlohmann::json j = nlohmann::json::parse(readFile(file));
  CHECK(j["entries"].size() == 2 * kPerProcess);
  TuningCache cache(dir.path);
  TuningStatus st;
  int found = 0;
  for (int p = 0; p < 2; ++p)
    for (int i = 0; i < kPerProcess; ++i) {
      auto r = cache.lookup(keyOf(p, i), &st);
      if (r && r->best == space.configs[size_t(i % 2)] &&
          *r->candidates[0].timeMs == (i % 2 == 0 ? 1.0 + i : 1.0 + i + 0.25))
        ++found;
    }
  CHECK(found == 2 * kPerProcess);
  CHECK(st.warnings.empty());
  CHECK(cache.stats().fileReads == 1);
  CHECK(cache.stats().corruptFiles == 0);
  CHECK(countWithInfix(dir.path, ".tmp") == 0); // no temporary file left behind
}

TEST_CASE("TuningCache: a changed kernel, import, config space or compiler misses", "[autotune]") {
  TempDir dir("tessera-autotune-test"), src("tessera-autotune-test");
  std::string mainPath = src.path + "/main.tile", libPath = src.path + "/lib.tile";
  const std::string mainText = "from \"lib.tile\" import twice\n\n"
                               "@kernel\n"
                               "def scale(X: *f32, n: i32, BLOCK: constexpr = 64):\n"
                               "    offs = program_id(0) * BLOCK + arange(0, BLOCK)\n"
                               "    x = load(X + offs, mask=offs < n)\n"
                               "    store(X + offs, twice(x), mask=offs < n)\n";
  const std::string libText = "@func\ndef twice(x):\n    return x * 2.0\n";
  writeFile(mainPath, mainText);
  writeFile(libPath, libText);

  ConfigSpace space;
  space.add(Config{}.set("BLOCK", int64_t(64)).warps(2)).add(Config{}.set("BLOCK", int64_t(128)).warps(4));
  space.key("n", Bucketing::pow2());
  auto keyNow = [&](const ConfigSpace &s) {
    CompileResult r = compileFile(mainPath, "scale");
    INFO(r.diagnostics);
    REQUIRE(r.ok);
    REQUIRE(r.sources.size() == 2); // the kernel's file and its import
    return TuningKey::make(h100(), "scale", r.sources, CompileOptions{}, s, {{"n", 1000}});
  };

  TuningKey original = keyNow(space);
  TuningRecord record;
  record.best = space.configs[1];
  TuningCache cache(dir.path);
  REQUIRE(cache.store(original, record));
  REQUIRE(cache.lookup(keyNow(space))); // unchanged: found

  SECTION("the kernel's source") {
    writeFile(mainPath, mainText + "# a comment\n");
    CHECK(keyNow(space).sourceHash != original.sourceHash);
    CHECK_FALSE(cache.lookup(keyNow(space)));
    CHECK_FALSE(TuningCache(dir.path).lookup(keyNow(space)));
  }
  SECTION("an imported file") {
    writeFile(libPath, "@func\ndef twice(x):\n    return x + x\n");
    CHECK(keyNow(space).sourceHash != original.sourceHash);
    CHECK_FALSE(cache.lookup(keyNow(space)));
    CHECK_FALSE(TuningCache(dir.path).lookup(keyNow(space)));
  }
  SECTION("the config space") {
    ConfigSpace changed = space;
    changed.configs[0].numStages = 2;
    CHECK_FALSE(cache.lookup(keyNow(changed)));
    ConfigSpace rebucketed = space;
    rebucketed.keys[0].bucketing = Bucketing::at({1024, 65536});
    CHECK(keyNow(rebucketed).keyValues == original.keyValues); // same value, 1024
    CHECK_FALSE(cache.lookup(keyNow(rebucketed)));
  }
  SECTION("the compiler version") {
    TuningKey k = keyNow(space);
    k.compilerVersion = std::string(compilerVersion()) + "-next";
    CHECK_FALSE(cache.lookup(k));
    CHECK_FALSE(TuningCache(dir.path).lookup(k));
  }
}

TEST_CASE("TuningCache: nearest and resolve", "[autotune]") {
  TempDir dir("tessera-autotune-test");
  ConfigSpace space = matmulSpace();
  TuningCache cache(dir.path);
  REQUIRE(cache.store(keyFor(512, 4096), recordFor(space, 0)));
  REQUIRE(cache.store(keyFor(1024, 1024), recordFor(space, 1)));
  REQUIRE(cache.store(keyFor(4096, 1024), recordFor(space, 2)));
  // Another device: never a neighbour.
  TuningKey other = keyFor(2048, 1024);
  other.deviceName = "NVIDIA H200";
  REQUIRE(cache.store(other, recordFor(space, 0)));

  CHECK(keyDistance(keyFor(2048, 1024).keyValues, keyFor(1024, 1024).keyValues) == 1.0);
  CHECK(keyDistance(keyFor(512, 4096).keyValues, keyFor(2048, 1024).keyValues) == 4.0);
  CHECK(std::isinf(keyDistance({{"M", 1}}, {{"N", 1}})));

  TuningCache reader(dir.path);
  // 2048 x 1024: 1024 x 1024 and 4096 x 1024 are both one factor of two away;
  // the tie goes to the smaller key values.
  auto n = reader.nearest(keyFor(2048, 1024));
  REQUIRE(n);
  CHECK(n->distance == 1.0);
  CHECK(n->key.keyValues == KeyValues{{"M", 1024}, {"N", 1024}});
  CHECK(n->record->best == space.configs[1]);
  n = reader.nearest(keyFor(8192, 2048));
  REQUIRE(n);
  CHECK(n->distance == 2.0);
  CHECK(n->key.keyValues == KeyValues{{"M", 4096}, {"N", 1024}});
  n = reader.nearest(keyFor(512, 4096)); // an exact key is its own nearest
  REQUIRE(n);
  CHECK(n->distance == 0.0);
  TuningKey elsewhere = keyFor(512, 4096);
  elsewhere.driverVersion = 12080;
  CHECK_FALSE(reader.nearest(elsewhere));

  Resolution r = reader.resolve(keyFor(1024, 1000), space, MissPolicy::TuneNow);
  CHECK(r.source == Resolution::Source::Exact);
  CHECK(r.config == space.configs[1]);
  r = reader.resolve(keyFor(2048, 1024), space, MissPolicy::TuneNow);
  CHECK(r.source == Resolution::Source::MustTune);
  CHECK_FALSE(r.config);
  r = reader.resolve(keyFor(2048, 1024), space, MissPolicy::Nearest);
  CHECK(r.source == Resolution::Source::Nearest);
  CHECK(r.config == space.configs[1]);
  REQUIRE(r.fromKey);
  CHECK(r.fromKey->keyValues == KeyValues{{"M", 1024}, {"N", 1024}});
  r = reader.resolve(elsewhere, space, MissPolicy::Nearest); // nothing near: the first config
  CHECK(r.source == Resolution::Source::FirstConfig);
  CHECK(r.config == space.configs[0]);
  ConfigSpace pruned = space;
  pruned.prune = [](const Config &c) { return c.numWarps == 4; };
  r = reader.resolve(elsewhere, pruned, MissPolicy::FirstConfig);
  CHECK(r.source == Resolution::Source::FirstConfig);
  CHECK(r.config == space.configs[1]); // the first that passes prune
}

TEST_CASE("TuningCache: prune and pruneStale", "[autotune]") {
  TempDir dir("tessera-autotune-test"), src("tessera-autotune-test");
  ConfigSpace space = matmulSpace();
  std::string kernelFile = src.path + "/mm.tile";
  writeFile(kernelFile, "version one\n");

  TuningKey current = keyFor(512, 512);
  current.sourceHash = *TuningCache::sourceHashOfFiles({kernelFile});
  TuningRecord rec = recordFor(space, 0);
  rec.sourcePaths = {kernelFile};
  TuningKey oldCompiler = keyFor(1024, 1024);
  oldCompiler.compilerVersion = "tessera-0.0.1+old";
  TuningKey other = keyFor(2048, 2048);
  other.kernelName = "other";

  TuningCache cache(dir.path);
  REQUIRE(cache.store(current, rec));
  REQUIRE(cache.store(oldCompiler, recordFor(space, 1)));
  REQUIRE(cache.store(other, recordFor(space, 2)));
  CHECK(cache.entries().size() == 3);

  // The compiler version: the old entry goes; records without source paths
  // and unchanged sources stay.
  CHECK(cache.pruneStale(compilerVersion()) == 1);
  CHECK_FALSE(cache.lookup(oldCompiler));
  CHECK_FALSE(TuningCache(dir.path).lookup(oldCompiler));
  CHECK(cache.lookup(current));
  // The source changed on disk: its entry goes; its file, left empty, is deleted.
  writeFile(kernelFile, "version two\n");
  CHECK(cache.pruneStale(compilerVersion()) == 1);
  CHECK_FALSE(cache.lookup(current));
  CHECK_FALSE(fs::exists(cache.filePath(current)));
  CHECK(onlyCacheFile(dir.path) == cache.filePath(other));
  // A caller-given source hash; and prune by any predicate.
  CHECK(cache.pruneStale(compilerVersion(), [](const TuningKey &, const TuningRecord &) {
          return std::optional<std::string>();
        }) == 0);
  CHECK(cache.prune([](const TuningKey &k, const TuningRecord &) { return k.kernelName == "other"; }) ==
        1);
  CHECK(cache.entries().empty());
  CHECK(TuningCache(dir.path).entries().empty());
  CHECK_FALSE(TuningCache::sourceHashOfFiles({src.path + "/missing.tile"}));
}

TEST_CASE("TuningCache: directory and store errors", "[autotune]") {
  TempDir dir("tessera-autotune-test");
  {
    EnvGuard env("TESSERA_CACHE_DIR", dir.path.c_str());
    CHECK(TuningCache::defaultDirectory() == dir.path + "/tuning");
  }
  {
    EnvGuard env("TESSERA_CACHE_DIR", nullptr);
    EnvGuard home("HOME", "/home/someone");
    CHECK(TuningCache::defaultDirectory() == "/home/someone/.cache/tessera/tuning");
  }
  ConfigSpace space = matmulSpace();
  // The directory is a file: the store warns and keeps the tuning in memory.
  std::string notADir = dir.path + "/file";
  writeFile(notADir, "x");
  TuningCache cache(notADir + "/tuning");
  TuningStatus st;
  CHECK_FALSE(cache.store(keyFor(1, 1), recordFor(space, 0), &st));
  REQUIRE(st.warnings.size() == 1);
  CHECK(st.warnings[0].find("kept in memory only") != std::string::npos);
  CHECK(cache.lookup(keyFor(1, 1)));
  // A key or record the format cannot hold is refused before anything is written.
  TuningKey bad = keyFor(1, 1);
  bad.spaceHash = "not a hash";
  CHECK(errorOf([&] { cache.store(bad, recordFor(space, 0)); }).find("cannot store the tuning of mm") !=
        std::string::npos);
  TuningRecord badDate = recordFor(space, 0);
  badDate.date = "yesterday";
  CHECK(errorOf([&] { cache.store(keyFor(2, 2), badDate); }).find("ISO 8601") != std::string::npos);
  TuningRecord nanTime = recordFor(space, 0);
  nanTime.candidates[0].timeMs = std::nan("");
  CHECK(errorOf([&] { cache.store(keyFor(2, 2), nanTime); }).find("not a number >= 0") !=
        std::string::npos);
  CHECK_FALSE(cache.lookup(keyFor(2, 2))); // nothing was stored
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
