// The register cap (CompileOptions::maxRegisters; `maxnreg` in configs, the
// decorator, JSON and the CLI): validated, keyed only when set, written as
// `.maxnreg` on the kernel, and carried by autotuning configs. Its effect on
// speed is measured on the GPU, not here (docs/api.md).
#include "tessera/Autotune.h"
#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tessera;

namespace {
const char *kKernel = R"(
@autotune(configs=[config(B=512, maxnreg=64), config(B=1024, num_warps=8)], key=["n"])
@kernel
def scale(X: *f32, Y: *f32, n: i32, B: constexpr = 256):
    r = program_id(0) * B + arange(0, B)
    store(Y + r, load(X + r, mask=r < n) * 2.0, mask=r < n)
)";

bool hasField(const CompileOptions &o, const std::string &name) {
  auto f = o.cacheFields();
  return std::any_of(f.begin(), f.end(), [&](auto &p) { return p.first == name; });
}
} // namespace

TEST_CASE("maxRegisters is validated and keyed only when set", "[options][registers]") {
  CompileOptions o;
  CHECK(o.validate().empty());
  CHECK_FALSE(hasField(o, "max_registers"));
  std::string plain = o.hash();
  o.maxRegisters = 128;
  CHECK(o.validate().empty());
  CHECK(hasField(o, "max_registers"));
  CHECK(o.hash() != plain);
  for (int bad : {-1, 8, 15, 256, 1000}) {
    o.maxRegisters = bad;
    INFO(bad);
    CHECK(o.validate() == "maxnreg must be 0 (no cap) or from 16 to 255, got " + std::to_string(bad));
  }
}

TEST_CASE("maxRegisters puts .maxnreg on the kernel", "[options][registers]") {
  CompileOptions o;
  o.target = *Target::parse("sm_90a");
  CompileResult plain = compileSource(kKernel, "s.tile", "scale", o, Stage::PTX);
  REQUIRE(plain.ok);
  CHECK(plain.ptx.find(".maxnreg") == std::string::npos);
  o.maxRegisters = 40;
  CompileResult capped = compileSource(kKernel, "s.tile", "scale", o, Stage::PTX);
  INFO(capped.diagnostics);
  REQUIRE(capped.ok);
  CHECK(capped.ptx.find(".maxnreg 40") != std::string::npos);
}

TEST_CASE("maxnreg in configs: decorator, text and JSON", "[autotune][registers]") {
  CompileResult r = compileSource(kKernel, "s.tile", "scale", CompileOptions{}, Stage::Tile);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  const ConfigSpace &space = *r.configSpaces.at("scale");
  REQUIRE(space.configs.size() == 2);
  CHECK(space.configs[0].maxRegisters == 64);
  CHECK_FALSE(space.configs[1].maxRegisters);
  CHECK(space.configs[0].str() == "B=512,maxnreg=64");
  CHECK(space.configs[1].str().find("maxnreg") == std::string::npos);
  CHECK(space.configs[0].appliedTo(CompileOptions{}).maxRegisters == 64);

  std::string err;
  std::optional<Config> parsed = Config::parse("B=512,maxnreg=64", &err);
  REQUIRE(parsed);
  CHECK(*parsed == space.configs[0]);
  std::optional<Config> back = Config::fromJson(space.configs[0].toJson(), &err);
  INFO(err);
  REQUIRE(back);
  CHECK(*back == space.configs[0]);
  CHECK(space.configs[0].toJson().find("\"maxnreg\":64") != std::string::npos);
  CHECK(Config().set("B", int64_t(512)).maxnreg(64) == space.configs[0]);
  CHECK(Config().maxnreg(300).validate() ==
        "maxnreg must be 0 (no cap) or from 16 to 255, got 300");

  // A bad value is an error at the value.
  std::string src = kKernel;
  src.replace(src.find("maxnreg=64"), 10, "maxnreg=9");
  CompileResult bad = compileSource(src, "s.tile", "scale", CompileOptions{}, Stage::Tile);
  CHECK_FALSE(bad.ok);
  CHECK(bad.diagnostics.find("s.tile:2:42: error: maxnreg must be 0 (no cap) or from 16 to 255, got 9") !=
        std::string::npos);
}
