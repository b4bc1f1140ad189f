// Constexprs of every kind: strings (compared with == and != in compile-time
// `if`s), booleans and floats, from defaults and from the C++ constexpr map;
// their text in cache keys (existing kinds unchanged, strings quoted so that
// no string reads as a number, a bool or a type).
#include "TestSupport.h"

#include "tessera/Autotune.h"
#include "tessera/CompileOptions.h"
#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace tessera;
using tessera::testing::Seeded;

namespace {
const char *kActivation = R"(
@kernel
def act(X: *f32, Y: *f32, ACTIVATION: constexpr = "leaky_relu", ALPHA: constexpr = 0.01,
        SCALE: constexpr = False):
    r = arange(0, 64)
    x = load(X + r)
    if ACTIVATION == "leaky_relu":
        x = where(x > 0, x, x * ALPHA)
    elif ACTIVATION != "relu":
        static_assert(ACTIVATION == "none", "unknown activation " + ACTIVATION)
    else:
        x = maximum(x, 0.0)
    if SCALE:
        x = x * 2.0
    store(Y + r, x)
)";

float reference(float x, const std::string &act, float alpha, bool scale) {
  if (act == "leaky_relu")
    x = x > 0 ? x : x * alpha;
  else if (act == "relu")
    x = std::max(x, 0.0f);
  return scale ? x * 2.0f : x;
}
} // namespace

TEST_CASE("string, bool and float constexprs specialize a kernel", "[language][interp][constexpr]") {
  Seeded rng;
  INFO("seed " << rng.seed);
  Context ctx(createInterpreterBackend());
  std::vector<float> x = rng.uniform(64);
  auto xd = ctx.upload(x);
  auto y = ctx.alloc<float>(64);
  struct Case {
    std::map<std::string, ConstexprValue> cx;
    std::string act;
    float alpha;
    bool scale;
  };
  std::vector<Case> cases = {
      {{}, "leaky_relu", 0.01f, false},
      {{{"ACTIVATION", std::string("relu")}}, "relu", 0.01f, false},
      {{{"ACTIVATION", std::string("none")}, {"SCALE", true}}, "none", 0.01f, true},
      {{{"ALPHA", 0.25}, {"SCALE", true}}, "leaky_relu", 0.25f, true},
  };
  for (const Case &c : cases) {
    Kernel k = compileString(ctx, kActivation, "act.tile", "act", c.cx);
    k.launch(ctx.stream(), Grid{1}, xd.ptr(), y.ptr());
    auto h = y.toHost();
    INFO("activation " << c.act);
    for (size_t i = 0; i < 64; ++i)
      CHECK(h[i] == reference(x[i], c.act, c.alpha, c.scale));
    // The signature records the value with its kind.
    auto it = k.signature().constexprs.find("ACTIVATION");
    REQUIRE(it != k.signature().constexprs.end());
    CHECK(std::get<std::string>(it->second) == c.act);
  }
  std::string err = testing::errorOf([&] {
    compileString(ctx, kActivation, "act.tile", "act", {{"ACTIVATION", std::string("gelu")}});
  });
  CHECK(err.find("act.tile:10:9: error: static assertion failed: unknown activation gelu") !=
        std::string::npos);
}

TEST_CASE("string constexprs in cache keys and their text", "[language][constexpr]") {
  CHECK(constexprKind(ConstexprValue{std::string("relu")}) == 's');
  CHECK(constexprToString(ConstexprValue{std::string("relu")}) == "\"relu\"");
  CHECK(constexprToString(ConstexprValue{std::string("a\"b\\c")}) == "\"a\\\"b\\\\c\"");
  for (std::string s : {"relu", "", "f16", "64", "true", "a\"b\\c", "it's"}) {
    auto back = parseConstexpr(constexprToString(ConstexprValue{s}));
    REQUIRE(back);
    CHECK(std::get<std::string>(*back) == s);
  }
  CHECK(std::get<std::string>(*parseConstexpr("'gelu'")) == "gelu");
  CHECK_FALSE(parseConstexpr("\"unterminated"));
  CHECK_FALSE(parseConstexpr("\"a\"b\""));

  // Existing kinds keep their text, hence their cache keys; a string never
  // collides with the type, number or bool of the same spelling.
  auto keyOf = [](ConstexprValue v) {
    CompileOptions o;
    o.constexprs["X"] = std::move(v);
    return o.hash();
  };
  CompileOptions typed;
  typed.constexprs["X"] = DType{ScalarType::f16, 0};
  bool foundField = false;
  for (auto &[name, value] : typed.cacheFields())
    if (name == "constexpr:X") {
      foundField = true;
      CHECK(value == "f16");
    }
  CHECK(foundField);
  CHECK(keyOf(std::string("f16")) != keyOf(DType{ScalarType::f16, 0}));
  CHECK(keyOf(std::string("64")) != keyOf(int64_t(64)));
  CHECK(keyOf(std::string("true")) != keyOf(true));
  CHECK(keyOf(std::string("relu")) != keyOf(std::string("gelu")));
}

TEST_CASE("string constexprs are checked like other values", "[language][constexpr]") {
  auto errorOf = [](const char *src) {
    CompileResult r = compileSource(src, "e.tile", "", {}, Stage::Tile);
    CHECK_FALSE(r.ok);
    return r.diagnostics;
  };
  CHECK(errorOf("@kernel\ndef k(X: *f32, ACT: constexpr = \"relu\"):\n    store(X, ACT * 2)\n")
            .find("e.tile:3:18: error: operator '*' cannot be applied to string \"relu\"") !=
        std::string::npos);
  CHECK(errorOf("@kernel\ndef k(X: *f32, n: i32, ACT: constexpr = \"relu\"):\n"
                "    if ACT == n:\n        store(X, 1.0)\n")
            .find("e.tile:3:12: error: operator '==' cannot be applied to string \"relu\"") !=
        std::string::npos);
}

TEST_CASE("@autotune configs and prune= take string constexprs", "[language][constexpr]") {
  const char *src = R"(
@autotune(configs=[config(ACT="relu", BLOCK=64), config(ACT="gelu", BLOCK=64)],
          prune="ACT != 'gelu'")
@kernel
def k(X: *f32, ACT: constexpr, BLOCK: constexpr):
    r = arange(0, BLOCK)
    if ACT == "relu":
        store(X + r, maximum(load(X + r), 0.0))
    else:
        store(X + r, load(X + r))
)";
  CompileResult r = compileSource(src, "a.tile", "k", {}, Stage::Tile);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  CHECK(r.tileIR.find("ACT = \"\\22relu\\22\"") != std::string::npos); // the first config's
  auto space = r.configSpaces.at("k");
  REQUIRE(space);
  REQUIRE(space->configs.size() == 2);
  CHECK(std::get<std::string>(space->configs[1].constexprs.at("ACT")) == "gelu");
}
