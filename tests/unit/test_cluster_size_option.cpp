// The cluster size (CompileOptions::clusterSize; `cluster_size` in configs,
// the decorator, JSON and the CLI): validated, keyed only when above 1,
// written as the kernel's cluster shape on sm_90+ and an error before, and
// carried by autotuning configs. The GPU behaviour is checked in
// test_gpu_cluster_multicast.cpp.
#include "tessera/Autotune.h"
#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

using namespace tessera;

namespace {
const char *kKernel = R"(
@autotune(configs=[config(B=512, cluster_size=2), config(B=1024, num_warps=8)], key=["n"])
@kernel
def scale(X: *f32, Y: *f32, n: i32, B: constexpr = 256):
    r = (program_id(0) // cluster_size()) * B + arange(0, B)
    store(Y + r, load(X + r, mask=r < n) * 2.0, mask=r < n)
)";

bool keyed(const CompileOptions &o) {
  for (const auto &[name, value] : o.cacheFields())
    if (name == "cluster_size")
      return true;
  return false;
}
} // namespace

TEST_CASE("clusterSize is validated and keyed only above 1", "[options][cluster]") {
  CompileOptions o;
  CHECK(o.validate().empty());
  CHECK_FALSE(keyed(o));
  o.clusterSize = 2;
  CHECK(o.validate().empty());
  CHECK(keyed(o));
  CHECK(CompileOptions{}.hash() != o.hash());
  for (int bad : {0, 3, 8}) {
    o.clusterSize = bad;
    CHECK(o.validate() == "cluster_size must be 1, 2 or 4, got " + std::to_string(bad));
  }
}

TEST_CASE("clusterSize puts the cluster shape on the kernel, sm_90 and later only", "[options][cluster]") {
  CompileOptions o;
  o.target = Target::parse("sm_90a");
  CompileResult plain = compileSource(kKernel, "s.tile", "scale", o, Stage::PTX);
  REQUIRE(plain.ok);
  CHECK(plain.ptx.find(".reqnctapercluster") == std::string::npos);
  CHECK(plain.ptx.find("%cluster_nctaid.x") != std::string::npos);
  o.clusterSize = 4;
  CompileResult clustered = compileSource(kKernel, "s.tile", "scale", o, Stage::PTX);
  INFO(clustered.diagnostics);
  REQUIRE(clustered.ok);
  CHECK(clustered.ptx.find(".reqnctapercluster 4, 1, 1") != std::string::npos);

  o.target = Target::parse("sm_80");
  CompileResult old = compileSource(kKernel, "s.tile", "scale", o, Stage::PTX);
  CHECK_FALSE(old.ok);
  CHECK(old.diagnostics.find("cluster_size 4 needs sm_90 or later; the target is sm_80") != std::string::npos);
  // Before sm_90, cluster_size() is the constant 1.
  o.clusterSize = 1;
  CompileResult one = compileSource(kKernel, "s.tile", "scale", o, Stage::PTX);
  REQUIRE(one.ok);
  CHECK(one.ptx.find("cluster_nctaid") == std::string::npos);
}

TEST_CASE("cluster_size in configs: decorator, text and JSON", "[autotune][cluster]") {
  CompileResult r = compileSource(kKernel, "s.tile", "scale", CompileOptions{}, Stage::Tile);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  const ConfigSpace &space = *r.configSpaces.at("scale");
  REQUIRE(space.configs.size() == 2);
  CHECK(space.configs[0].clusterSize == 2);
  CHECK_FALSE(space.configs[1].clusterSize);
  CHECK(space.configs[0].str() == "B=512,cluster_size=2");
  CHECK(space.configs[0].appliedTo(CompileOptions{}).clusterSize == 2);
  CHECK(space.configs[1].appliedTo(CompileOptions{}).clusterSize == 1);

  std::string err;
  std::optional<Config> parsed = Config::parse("B=512,cluster_size=2", &err);
  REQUIRE(parsed);
  CHECK(*parsed == space.configs[0]);
  std::optional<Config> back = Config::fromJson(space.configs[0].toJson(), &err);
  INFO(err);
  REQUIRE(back);
  CHECK(*back == space.configs[0]);
  CHECK(Config().set("B", int64_t(512)).cluster(2) == space.configs[0]);
  CHECK(Config().cluster(3).validate() == "cluster_size must be 1, 2 or 4, got 3");

  // A bad value is an error at the value.
  std::string src = kKernel;
  src.replace(src.find("cluster_size=2"), 14, "cluster_size=3");
  CompileResult bad = compileSource(src, "s.tile", "scale", CompileOptions{}, Stage::Tile);
  CHECK_FALSE(bad.ok);
  CHECK(bad.diagnostics.find("s.tile:2:47: error: cluster_size must be 1, 2 or 4, got 3") != std::string::npos);
}
