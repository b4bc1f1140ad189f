// Kernel cache tests: SHA-256, cache keys, the entry file format, corruption
// handling, concurrent writers, list/clear and the cache directory.
#include <catch2/catch.hpp>

#include "TestSupport.h"

#include "tessera/Error.h"
#include "tessera/KernelCache.h"
#include "Sha256.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace tessera;
namespace fs = std::filesystem;

using tessera::testing::EnvGuard;
using tessera::testing::errorOf;
using tessera::testing::TempDir;
using tessera::testing::writeFile;

namespace {




CacheKeyInputs sampleInputs() {
  CacheKeyInputs in;
  in.sources = {{"kernels_dsl/basics/vadd.tile", "kernel vadd(...) { ... }"},
                {"kernels_dsl/lib/util.tile", "fn helper() {}"}};
  in.kernelName = "vadd";
  in.constexprs = {{"BLOCK", int64_t(1024)}, {"EPS", 1e-5}, {"FAST", true},
                   {"T", DType{ScalarType::f16, 0}}};
  in.options = {{"opt", "3"}, {"fast-math", "off"}};
  in.compilerVersion = "tessera 0.1.0";
  in.target = "sm_90a";
  return in;
}

CacheEntry sampleEntry(const std::string &payload = ".version 8.0\n.target sm_90a\n// ptx") {
  CacheEntry e;
  e.kernelName = "vadd";
  e.signature.name = "vadd";
  e.signature.params = {{"X", DType{ScalarType::f32, 1}}, {"N", DType{ScalarType::i32, 0}}};
  e.signature.constexprs = {{"BLOCK", int64_t(1024)}, {"EPS", 1e-5}, {"FAST", true},
                            {"T", DType{ScalarType::bf16, 1}}};
  e.target = "sm_90a";
  e.sharedMemoryBytes = 65536;
  e.numWarps = 8;
  e.tensorMaps = {*parseTensorMapSpec(
      "ptr=0 type=9 eb=2 box=64x128 swizzle=128 cols=0+1*a5 rows=0+1*a3 stride=0+1*a6")};
  e.persistentGrid = true;
  e.createdTime = 1700000000;
  e.payloadFormat = "ptx";
  e.payload = payload;
  return e;
}

void checkSame(const CacheEntry &a, const CacheEntry &b) {
  CHECK(a.kernelName == b.kernelName);
  CHECK(a.signature.name == b.signature.name);
  REQUIRE(a.signature.params.size() == b.signature.params.size());
  for (size_t i = 0; i < a.signature.params.size(); ++i) {
    CHECK(a.signature.params[i].name == b.signature.params[i].name);
    CHECK(a.signature.params[i].type == b.signature.params[i].type);
  }
  CHECK(a.signature.constexprs == b.signature.constexprs);
  CHECK(a.target == b.target);
  CHECK(a.sharedMemoryBytes == b.sharedMemoryBytes);
  CHECK(a.numWarps == b.numWarps);
  REQUIRE(a.tensorMaps.size() == b.tensorMaps.size());
  for (size_t i = 0; i < a.tensorMaps.size(); ++i)
    CHECK(formatTensorMapSpec(a.tensorMaps[i]) == formatTensorMapSpec(b.tensorMaps[i]));
  CHECK(a.persistentGrid == b.persistentGrid);
  CHECK(a.createdTime == b.createdTime);
  CHECK(a.payloadFormat == b.payloadFormat);
  CHECK(a.payload == b.payload);
}

const std::string kKey = std::string(64, 'a');

} // namespace

// ===========================================================================
// SHA-256
// ===========================================================================

TEST_CASE("SHA-256 standard test vectors", "[cache][sha256]") {
  CHECK(Sha256::hexHash("") ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256::hexHash("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256::hexHash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(Sha256::hexHash("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnop"
                        "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu") ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(Sha256::hexHash(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  // Incremental updates of every split give the same digest.
  std::string msg;
  for (int i = 0; i < 200; ++i)
    msg += static_cast<char>(i * 7 + 3);
  std::string whole = Sha256::hexHash(msg);
  for (size_t split = 0; split <= msg.size(); ++split) {
    Sha256 h;
    h.update(msg.substr(0, split)).update(msg.substr(split));
    if (Sha256::hex(h.finish()) != whole)
      FAIL("split at " << split);
  }
  Sha256 bytewise;
  for (char c : msg)
    bytewise.update(&c, 1);
  CHECK(Sha256::hex(bytewise.finish()) == whole);
  // finish() resets.
  CHECK(Sha256::hex(bytewise.finish()) == Sha256::hexHash(""));
}

// ===========================================================================
// Keys
// ===========================================================================

TEST_CASE("cache keys are deterministic and cover every component", "[cache][key]") {
  CacheKeyInputs base = sampleInputs();
  std::string k = cacheKey(base);
  CHECK(isValidCacheKey(k));
  CHECK(k == cacheKey(sampleInputs()));

  std::vector<std::pair<const char *, std::function<void(CacheKeyInputs &)>>> changes = {
      {"main source text", [](CacheKeyInputs &i) { i.sources[0].second += " "; }},
      {"main source path", [](CacheKeyInputs &i) { i.sources[0].first = "other.tile"; }},
      {"import text", [](CacheKeyInputs &i) { i.sources[1].second = "fn helper() { }"; }},
      {"import path", [](CacheKeyInputs &i) { i.sources[1].first = "lib/util2.tile"; }},
      {"an extra import", [](CacheKeyInputs &i) { i.sources.push_back({"x.tile", ""}); }},
      {"a dropped import", [](CacheKeyInputs &i) { i.sources.pop_back(); }},
      {"import order", [](CacheKeyInputs &i) { std::swap(i.sources[0], i.sources[1]); }},
      {"kernel name", [](CacheKeyInputs &i) { i.kernelName = "vadd2"; }},
      {"constexpr value", [](CacheKeyInputs &i) { i.constexprs["BLOCK"] = int64_t(512); }},
      {"constexpr int->double", [](CacheKeyInputs &i) { i.constexprs["BLOCK"] = 1024.0; }},
      {"constexpr double", [](CacheKeyInputs &i) { i.constexprs["EPS"] = 1.0000001e-5; }},
      {"constexpr bool", [](CacheKeyInputs &i) { i.constexprs["FAST"] = false; }},
      {"constexpr bool->int", [](CacheKeyInputs &i) { i.constexprs["FAST"] = int64_t(1); }},
      {"constexpr dtype", [](CacheKeyInputs &i) { i.constexprs["T"] = DType{ScalarType::bf16, 0}; }},
      {"constexpr pointer", [](CacheKeyInputs &i) { i.constexprs["T"] = DType{ScalarType::f16, 1}; }},
      {"constexpr name", [](CacheKeyInputs &i) {
         i.constexprs["BLOCKS"] = i.constexprs["BLOCK"];
         i.constexprs.erase("BLOCK");
       }},
      {"extra constexpr", [](CacheKeyInputs &i) { i.constexprs["Z"] = int64_t(0); }},
      {"option value", [](CacheKeyInputs &i) { i.options["opt"] = "2"; }},
      {"option name", [](CacheKeyInputs &i) { i.options["opt2"] = "3"; i.options.erase("opt"); }},
      {"extra option", [](CacheKeyInputs &i) { i.options["debug"] = ""; }},
      {"compiler version", [](CacheKeyInputs &i) { i.compilerVersion = "tessera 0.1.1"; }},
      {"target", [](CacheKeyInputs &i) { i.target = "sm_90"; }},
  };
  std::vector<std::string> keys = {k};
  for (auto &[what, change] : changes) {
    CacheKeyInputs in = sampleInputs();
    change(in);
    std::string changed = cacheKey(in);
    INFO("changing " << what);
    CHECK(changed != k);
    keys.push_back(changed);
  }
  std::sort(keys.begin(), keys.end());
  CHECK(std::unique(keys.begin(), keys.end()) == keys.end());

  // Field boundaries are unambiguous.
  CacheKeyInputs a, b;
  a.sources = {{"ab", "c"}};
  b.sources = {{"a", "bc"}};
  CHECK(cacheKey(a) != cacheKey(b));
  a = {}, b = {};
  a.options = {{"a", "b=c"}};
  b.options = {{"a=b", "c"}};
  CHECK(cacheKey(a) != cacheKey(b));
  a = {}, b = {};
  a.kernelName = "k";
  b.target = "k";
  CHECK(cacheKey(a) != cacheKey(b));

  CHECK_FALSE(isValidCacheKey(""));
  CHECK_FALSE(isValidCacheKey(std::string(64, 'A')));
  CHECK_FALSE(isValidCacheKey(std::string(63, 'a')));
  CHECK_FALSE(isValidCacheKey("../" + std::string(61, 'a')));
}

// ===========================================================================
// Entries
// ===========================================================================

TEST_CASE("cache entries round-trip through memory and disk", "[cache]") {
  TempDir dir("tessera-cache-test");
  std::string key = cacheKey(sampleInputs());
  {
    KernelCache cache(dir.path + "/sub/dir"); // created on demand
    CacheStatus st;
    CHECK(cache.lookup(key, &st) == nullptr);
    CHECK_FALSE(st.hit());
    CHECK(st.warnings.empty());
    CHECK(cache.store(key, sampleEntry(), &st));
    CHECK(st.warnings.empty());
    CacheStatus st2;
    auto hit = cache.lookup(key, &st2);
    REQUIRE(hit);
    CHECK(st2.source == CacheStatus::Source::Memory);
    checkSame(*hit, sampleEntry());
  }
  KernelCache fresh(dir.path + "/sub/dir/");
  CHECK(fresh.directory() == dir.path + "/sub/dir");
  CacheStatus st;
  auto hit = fresh.lookup(key, &st);
  REQUIRE(hit);
  CHECK(st.source == CacheStatus::Source::Disk);
  CHECK(st.warnings.empty());
  checkSame(*hit, sampleEntry());
  CacheStatus again;
  CHECK(fresh.lookup(key, &again) == hit);
  CHECK(again.source == CacheStatus::Source::Memory);

  // Binary payloads (cubin) survive unchanged.
  std::string binary;
  for (int i = 0; i < 4096; ++i)
    binary += static_cast<char>(i * 31);
  CacheEntry cubin = sampleEntry(binary);
  cubin.payloadFormat = "cubin";
  std::string key2 = std::string(64, 'b');
  REQUIRE(fresh.store(key2, cubin));
  KernelCache other(dir.path + "/sub/dir");
  auto hit2 = other.lookup(key2);
  REQUIRE(hit2);
  checkSame(*hit2, cubin);

  // store() fills in the creation time.
  CacheEntry undated = sampleEntry();
  undated.createdTime = 0;
  REQUIRE(other.store(std::string(64, 'c'), undated));
  KernelCache third(dir.path + "/sub/dir");
  auto hit3 = third.lookup(std::string(64, 'c'));
  REQUIRE(hit3);
  CHECK(hit3->createdTime > 1700000000);

  // No temporary files are left behind.
  for (auto &f : fs::directory_iterator(dir.path + "/sub/dir"))
    CHECK(f.path().extension() == ".tsrc");

  CHECK_THROWS_AS(fresh.lookup("not-a-key"), Error);
  CHECK_THROWS_WITH(fresh.entryPath("../x"),
                    "invalid kernel cache key '../x' (expected 64 lower-case hex digits)");
}

TEST_CASE("the entry file format", "[cache][format]") {
  CacheEntry e = sampleEntry("PAYLOAD");
  std::string bytes = KernelCache::serialize(kKey, e);
  REQUIRE(bytes.size() > kCacheHeaderSize);
  CHECK(bytes.substr(0, 4) == "TSRC");
  CHECK(bytes[4] == 1);
  uint32_t metaLen = uint8_t(bytes[8]) | uint8_t(bytes[9]) << 8 | uint8_t(bytes[10]) << 16 |
                     uint32_t(uint8_t(bytes[11])) << 24;
  CHECK(uint8_t(bytes[12]) == 7); // payload length
  CHECK(bytes.size() == kCacheHeaderSize + metaLen + 7);
  std::string meta = bytes.substr(kCacheHeaderSize, metaLen);
  CHECK(meta.front() == '{');
  CHECK(meta.find("\"kernel\":\"vadd\"") != std::string::npos);
  CHECK(meta.find("\"num_warps\":8") != std::string::npos);
  CHECK(meta.find("\"type\":\"*f32\"") != std::string::npos);
  CHECK(bytes.substr(bytes.size() - 7) == "PAYLOAD");
  CHECK(bytes.substr(20, 32) ==
        std::string(reinterpret_cast<const char *>(Sha256::hash(meta + "PAYLOAD").data()), 32));
  auto parsed = KernelCache::parse(bytes, kKey);
  REQUIRE(parsed.entry);
  checkSame(*parsed.entry, e);
}

TEST_CASE("every corruption of an entry is detected", "[cache][corrupt]") {
  std::string good = KernelCache::serialize(kKey, sampleEntry("payload bytes"));
  REQUIRE(KernelCache::parse(good, kKey).entry);

  // Any single flipped bit or byte anywhere.
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xFF}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      auto r = KernelCache::parse(bad, kKey);
      if (r.entry || r.problem.empty())
        FAIL("flip of byte " << i << " with mask " << int(mask) << " not detected");
    }
  }
  // Any truncation, and any extension.
  for (size_t n = 0; n < good.size(); ++n) {
    auto r = KernelCache::parse(std::string_view(good).substr(0, n), kKey);
    if (r.entry)
      FAIL("truncation to " << n << " bytes not detected");
  }
  CHECK(KernelCache::parse(good + "x", kKey).problem ==
        "bad length: " + std::to_string(good.size() + 1) + " bytes, expected " +
            std::to_string(good.size()));

  CHECK(KernelCache::parse("", kKey).problem == "empty file");
  CHECK(KernelCache::parse("NOPE" + good.substr(4), kKey).problem == "bad magic");
  CHECK(KernelCache::parse("TS", kKey).problem == "bad magic");
  CHECK(KernelCache::parse(good.substr(0, 30), kKey).problem ==
        "truncated: 30 bytes, shorter than the 52-byte header");
  CHECK(KernelCache::parse(good.substr(0, good.size() - 1), kKey).problem ==
        "truncated: " + std::to_string(good.size() - 1) + " bytes, expected " +
            std::to_string(good.size()));
  std::string flipped = good;
  flipped.back() ^= 1;
  CHECK(KernelCache::parse(flipped, kKey).problem == "checksum mismatch");
  std::string version = good;
  version[4] = 9;
  CHECK(KernelCache::parse(version, kKey).problem == "unsupported format version 9");
  CHECK(KernelCache::parse(good, std::string(64, 'b')).problem == "entry is for key " + kKey);

  // Metadata that passes the checksum but is not valid JSON, or lacks fields.
  auto withMeta = [](const std::string &meta, const std::string &payload) {
    std::string out = "TSRC";
    auto u32 = [&](uint32_t v) {
      for (int i = 0; i < 4; ++i)
        out += static_cast<char>(v >> (8 * i));
    };
    u32(1);
    u32(static_cast<uint32_t>(meta.size()));
    u32(static_cast<uint32_t>(payload.size()));
    u32(0);
    auto d = Sha256::hash(meta + payload);
    out.append(reinterpret_cast<const char *>(d.data()), 32);
    return out + meta + payload;
  };
  CHECK(KernelCache::parse(withMeta("{not json", "p"), kKey).problem == "bad metadata JSON");
  CHECK(KernelCache::parse(withMeta("[1,2]", "p"), kKey).problem == "bad metadata JSON");
  CHECK(KernelCache::parse(withMeta("", "p"), kKey).problem == "bad metadata JSON");
  std::string missing = KernelCache::parse(withMeta("{\"key\":\"" + kKey + "\"}", "p"), kKey).problem;
  CHECK(missing.rfind("bad metadata JSON: ", 0) == 0);
  std::string badType = R"({"key":")" + kKey + R"(","kernel":"k","signature":{"name":"k","params":[{"name":"X","type":"*f99"}],"constexprs":{}},"target":"sm_90","format":"ptx","shared_memory_bytes":0,"num_warps":4,"created":1})";
  CHECK(KernelCache::parse(withMeta(badType, "p"), kKey).problem ==
        "bad metadata JSON: unknown parameter type '*f99'");
  std::string negative = R"({"key":")" + kKey + R"(","kernel":"k","signature":{"name":"k","params":[],"constexprs":{}},"target":"sm_90","format":"ptx","shared_memory_bytes":0,"num_warps":-4,"created":1})";
  CHECK(KernelCache::parse(withMeta(negative, "p"), kKey).problem ==
        "bad metadata JSON: num_warps is not an unsigned integer");
  std::string okMeta = R"({"key":")" + kKey + R"(","kernel":"k","signature":{"name":"k","params":[],"constexprs":{"A":"2"}},"target":"sm_90","format":"ptx","shared_memory_bytes":0,"num_warps":4,"created":1})";
  auto ok = KernelCache::parse(withMeta(okMeta, "p"), kKey);
  REQUIRE(ok.entry);
  CHECK(ok.entry->tensorMaps.empty()); // entries without TMA omit nothing they need
  CHECK_FALSE(ok.entry->persistentGrid); // nor do kernels launched a block per program
  // A persistent kernel launched without its grid parameter would read garbage.
  std::string badPersistent = okMeta.substr(0, okMeta.size() - 1) + R"(,"persistent_grid":1})";
  CHECK(KernelCache::parse(withMeta(badPersistent, "p"), kKey).problem ==
        "bad metadata JSON: persistent_grid is not a boolean");
  // A tensor map the runtime could not build is a corrupt entry (rebuilt).
  std::string badMap = okMeta.substr(0, okMeta.size() - 1) + R"(,"tensor_maps":["ptr=0 box=9999x1"]})";
  CHECK(KernelCache::parse(withMeta(badMap, "p"), kKey).problem ==
        "bad metadata JSON: bad tensor map 'ptr=0 box=9999x1'");
  std::string notText = okMeta.substr(0, okMeta.size() - 1) + R"(,"tensor_maps":[7]})";
  CHECK(KernelCache::parse(withMeta(notText, "p"), kKey).problem.rfind("bad metadata JSON: ", 0) == 0);
  CHECK(std::get<int64_t>(ok.entry->signature.constexprs.at("A")) == 2);

  // Random garbage never crashes and is never accepted.
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 200, '\0');
    for (char &c : junk)
      c = static_cast<char>(rng());
    if (i % 2)
      junk = "TSRC" + junk;
    if (i % 4 == 3 && junk.size() >= 8) {
      junk[4] = 1;
      junk[5] = junk[6] = junk[7] = 0;
    }
    CHECK_FALSE(KernelCache::parse(junk, kKey).entry);
  }
}

TEST_CASE("corrupt cache files are reported, deleted and rebuilt", "[cache][corrupt]") {
  TempDir dir("tessera-cache-test");
  std::string key = cacheKey(sampleInputs());
  std::string good = KernelCache::serialize(key, sampleEntry());

  struct Case {
    const char *name;
    std::function<std::string(std::string)> corrupt;
    std::string problem;
  };
  std::string headerless = "truncated: 10 bytes, shorter than the 52-byte header";
  std::vector<Case> cases = {
      {"flipped payload byte",
       [](std::string s) {
         s[s.size() - 3] ^= 0x20;
         return s;
       },
       "checksum mismatch"},
      {"truncated file", [](std::string s) { return s.substr(0, s.size() - 5); },
       "truncated: " + std::to_string(good.size() - 5) + " bytes, expected " +
           std::to_string(good.size())},
      {"truncated header", [](std::string s) { return s.substr(0, 10); }, headerless},
      {"garbage", [](std::string) { return std::string("\x7f" "ELF garbage garbage garbage"); },
       "bad magic"},
      {"empty file", [](std::string) { return std::string(); }, "empty file"},
      {"wrong magic",
       [](std::string s) {
         s[0] = 'X';
         return s;
       },
       "bad magic"},
  };
  for (const Case &c : cases) {
    INFO(c.name);
    KernelCache cache(dir.path);
    std::string path = cache.entryPath(key);
    writeFile(path, c.corrupt(good));

    CacheStatus st;
    CHECK(cache.lookup(key, &st) == nullptr);
    CHECK_FALSE(st.hit());
    REQUIRE(st.warnings.size() == 1);
    CHECK(st.warnings[0] ==
          "tessera: cache entry " + path + " is corrupt (" + c.problem + "); rebuilding");
    CHECK_FALSE(fs::exists(path)); // deleted

    // The caller rebuilds; the next process finds a good entry.
    int builds = 0;
    CacheStatus st2;
    writeFile(path, c.corrupt(good));
    auto rebuilt = cache.getOrBuild(
        key,
        [&] {
          ++builds;
          return sampleEntry();
        },
        &st2);
    REQUIRE(rebuilt);
    CHECK(builds == 1);
    CHECK(st2.warnings.size() == 1);
    KernelCache next(dir.path);
    CacheStatus st3;
    REQUIRE(next.lookup(key, &st3));
    CHECK(st3.source == CacheStatus::Source::Disk);
    CHECK(st3.warnings.empty());
    fs::remove(path);
  }

  // A directory where the entry should be is reported but left alone.
  KernelCache cache(dir.path);
  fs::create_directory(cache.entryPath(key));
  CacheStatus st;
  CHECK(cache.lookup(key, &st) == nullptr);
  REQUIRE(st.warnings.size() == 1);
  CHECK(st.warnings[0].find("(not a regular file)") != std::string::npos);
  fs::remove(cache.entryPath(key));
}

TEST_CASE("store failures are warnings, not errors", "[cache]") {
  TempDir dir("tessera-cache-test");
  writeFile(dir.path + "/file", "x");
  KernelCache cache(dir.path + "/file/cache"); // cannot be created: a file is in the way
  CacheStatus st;
  CHECK_FALSE(cache.store(kKey, sampleEntry(), &st));
  REQUIRE(st.warnings.size() == 1);
  CHECK(st.warnings[0].rfind("tessera: cannot create the kernel cache directory (", 0) == 0);
  CHECK(st.warnings[0].find("the kernel is cached in memory only") != std::string::npos);
  CacheStatus hit;
  REQUIRE(cache.lookup(kKey, &hit)); // the memory layer still has it
  CHECK(hit.source == CacheStatus::Source::Memory);
  CHECK(cache.list().empty());
  CHECK(cache.clear() == 0);
}

TEST_CASE("concurrent writers of one key never produce a corrupt entry", "[cache][concurrent]") {
  TempDir dir("tessera-cache-test");
  const std::string key = std::string(64, 'd');
  const std::string path = KernelCache(dir.path).entryPath(key);

  // Each writer stores its own (self-consistent) payload of a different size.
  auto entryFor = [](int writer, int round) {
    return sampleEntry(std::string(1000 + 997 * writer + round, static_cast<char>('A' + writer)));
  };
  auto validPayload = [](const std::string &p) {
    return p.size() >= 1000 && p.find_first_not_of(p[0]) == std::string::npos;
  };

  SECTION("threads") {
    std::atomic<bool> done{false};
    std::atomic<int> badReads{0}, goodReads{0}, failedStores{0};
    std::vector<std::thread> writers;
    for (int w = 0; w < 6; ++w)
      writers.emplace_back([&, w] {
        for (int round = 0; round < 40; ++round) {
          KernelCache cache(dir.path);
          CacheStatus st;
          if (!cache.store(key, entryFor(w, round), &st) || !st.warnings.empty())
            ++failedStores;
        }
      });
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r)
      readers.emplace_back([&] {
        while (!done) {
          KernelCache cache(dir.path); // fresh: no memory layer
          CacheStatus st;
          auto e = cache.lookup(key, &st);
          if (!st.warnings.empty() || (e && !validPayload(e->payload)))
            ++badReads;
          else if (e)
            ++goodReads;
        }
      });
    for (auto &t : writers)
      t.join();
    done = true;
    for (auto &t : readers)
      t.join();
    CHECK(badReads == 0);
    CHECK(failedStores == 0);
    CHECK(goodReads > 0);
  }

  SECTION("processes") {
    std::vector<pid_t> children;
    for (int w = 0; w < 4; ++w) {
      pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        int failures = 0;
        for (int round = 0; round < 40; ++round) {
          KernelCache cache(dir.path);
          CacheStatus st;
          if (!cache.store(key, entryFor(w, round), &st))
            ++failures;
        }
        ::_exit(failures == 0 ? 0 : 1);
      }
      children.push_back(pid);
    }
    // Read while they write.
    int badReads = 0, goodReads = 0;
    for (int i = 0; i < 400; ++i) {
      KernelCache cache(dir.path);
      CacheStatus st;
      auto e = cache.lookup(key, &st);
      if (!st.warnings.empty() || (e && !validPayload(e->payload)))
        ++badReads;
      else if (e)
        ++goodReads;
    }
    for (pid_t pid : children) {
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
    }
    CHECK(badReads == 0);
    KernelCache cache(dir.path);
    auto e = cache.lookup(key);
    REQUIRE(e);
    CHECK(validPayload(e->payload));
  }

  // Only the entry remains: no temporary files are left behind.
  size_t files = 0;
  for (auto &f : fs::directory_iterator(dir.path)) {
    ++files;
    CHECK(f.path().string() == path);
  }
  CHECK(files == 1);
}

TEST_CASE("list and clear", "[cache]") {
  TempDir dir("tessera-cache-test");
  KernelCache cache(dir.path);
  CHECK(cache.list().empty());

  CacheEntry a = sampleEntry("aaaa");
  a.kernelName = "alpha";
  CacheEntry b = sampleEntry("bbbbbbbb");
  b.kernelName = "beta";
  b.target = "sm_80";
  REQUIRE(cache.store(std::string(64, '1'), a));
  REQUIRE(cache.store(std::string(64, '2'), b));
  writeFile(cache.entryPath(std::string(64, '3')), "garbage");
  writeFile(dir.path + "/README", "not ours");
  writeFile(dir.path + "/" + std::string(64, '4') + ".tsrc.bak", "not ours either");

  auto entries = cache.list();
  REQUIRE(entries.size() == 3);
  // Sorted by kernel name (invalid entries have none) then key.
  CHECK_FALSE(entries[0].valid);
  CHECK(entries[0].key == std::string(64, '3'));
  CHECK(entries[0].problem == "bad magic");
  CHECK(entries[0].sizeBytes == 7);
  CHECK(entries[1].valid);
  CHECK(entries[1].kernelName == "alpha");
  CHECK(entries[1].target == "sm_90a");
  CHECK(entries[1].key == std::string(64, '1'));
  CHECK(entries[1].path == cache.entryPath(std::string(64, '1')));
  CHECK(entries[1].sizeBytes == fs::file_size(entries[1].path));
  CHECK(entries[1].mtime > 1700000000);
  CHECK(entries[2].kernelName == "beta");
  CHECK(entries[2].target == "sm_80");

  CHECK(cache.clear() == 3);
  CHECK(cache.list().empty());
  CHECK(cache.lookup(std::string(64, '1')) == nullptr); // memory layer emptied too
  CHECK(fs::exists(dir.path + "/README"));
  CHECK(fs::exists(dir.path + "/" + std::string(64, '4') + ".tsrc.bak"));

  KernelCache missing(dir.path + "/does/not/exist");
  CHECK(missing.list().empty());
  CHECK(missing.clear() == 0);
}

TEST_CASE("the cache directory comes from the environment", "[cache][env]") {
  {
    EnvGuard dir("TESSERA_CACHE_DIR", "/some/where/tessera");
    CHECK(KernelCache::defaultDirectory() == "/some/where/tessera");
    CHECK(KernelCache().directory() == "/some/where/tessera");
  }
  {
    EnvGuard dir("TESSERA_CACHE_DIR", nullptr);
    EnvGuard home("HOME", "/home/someone");
    CHECK(KernelCache::defaultDirectory() == "/home/someone/.cache/tessera");
  }
  {
    EnvGuard dir("TESSERA_CACHE_DIR", "");
    EnvGuard home("HOME", nullptr);
    CHECK(KernelCache::defaultDirectory() == "/tmp/tessera-cache-" + std::to_string(::getuid()));
  }
  // And it is really used.
  TempDir tmp("tessera-cache-test");
  EnvGuard dir("TESSERA_CACHE_DIR", tmp.path.c_str());
  KernelCache cache;
  REQUIRE(cache.store(kKey, sampleEntry()));
  CHECK(fs::exists(tmp.path + "/" + kKey + ".tsrc"));
}
