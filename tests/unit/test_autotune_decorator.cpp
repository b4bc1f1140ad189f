// The @autotune decorator: the ConfigSpace it declares (CompileResult::
// configSpaces), its prune= condition as a closure, the first config as the
// value of constexprs without one, and every error with its line and column.
#include <catch2/catch.hpp>

#include "tessera/Autotune.h"
#include "tessera/Compiler.h"

#include <memory>
#include <string>
#include <vector>

using namespace tessera;

namespace {

const char *const kFile = "virtual.tile";

/// The example of docs/language.md: a matmul-shaped kernel with every argument.
const char *const kMatmul = R"SRC(@autotune(configs=[config(BM=128, BN=256, BK=64, num_warps=8, num_stages=4),
                   config(BM=64, BN=128, BK=32, num_warps=4),
                   config(BM=256, BN=256, BK=128)],
          key=["M", "N", "K"], key_round="pow2",
          prune="BM * BK + BK * BN <= 32768",
          reset=["C"], restore=["P"])
@kernel
def matmul(A: *f32, B: *f32, C: *f32, P: *i32, M: i32, N: i32, K: i32,
           BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 32):
    r = arange(0, BM)
    store(C + r, load(A + r))
)SRC";

CompileResult compile(const std::string &src, const std::string &kernel = "",
                      const CompileOptions &options = {}, Stage stage = Stage::Tile) {
  return compileSource(src, kFile, kernel, options, stage);
}

/// The space of `kernel` in `src`, which must compile.
std::shared_ptr<const ConfigSpace> spaceOf(const std::string &src, const std::string &kernel,
                                           const CompileOptions &options = {}) {
  CompileResult r = compile(src, kernel, options);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  auto it = r.configSpaces.find(kernel);
  REQUIRE(it != r.configSpaces.end());
  REQUIRE(it->second);
  return it->second;
}

/// The rendered diagnostics of `src`, which must be rejected.
std::string errorsOf(const std::string &src, const CompileOptions &options = {}) {
  CompileResult r = compile(src, "", options);
  CHECK_FALSE(r.ok);
  CHECK(r.configSpaces.empty());
  return r.diagnostics;
}

/// A kernel with constexprs of every kind, decorated with `args`.
std::string kernelWith(const std::string &args) {
  return "@autotune(" + args + R"SRC()
@kernel
def k(A: *f32, C: *f32, M: i64, X: f32, BM: constexpr, BN: constexpr = 64,
      DT: constexpr = f16, EPS: constexpr = 0.5, FAST: constexpr = False):
    r = arange(0, BM)
    store(C + r, load(A + r))
)SRC";
}

/// "virtual.tile:L:C: error: MESSAGE" is in `diagnostics`.
bool hasError(const std::string &diagnostics, int line, int col, const std::string &message) {
  std::string want = std::string(kFile) + ":" + std::to_string(line) + ":" +
                     std::to_string(col) + ": error: " + message + "\n";
  return diagnostics.find(want) != std::string::npos;
}

int64_t intOf(const Config &c, const std::string &name) {
  return std::get<int64_t>(c.constexprs.at(name));
}

} // namespace

TEST_CASE("@autotune: the configs, keys, reset, restore and prune text", "[autotune-decorator]") {
  auto space = spaceOf(kMatmul, "matmul");
  REQUIRE(space->configs.size() == 3);
  const Config &c0 = space->configs[0];
  CHECK(intOf(c0, "BM") == 128);
  CHECK(intOf(c0, "BN") == 256);
  CHECK(intOf(c0, "BK") == 64);
  CHECK(c0.numWarps == 8);
  CHECK(c0.numStages == 4);
  CHECK_FALSE(c0.warpSpecialize);
  CHECK_FALSE(c0.tma);
  const Config &c1 = space->configs[1];
  CHECK(c1.str() == "BK=32,BM=64,BN=128,num_warps=4");
  CHECK_FALSE(c1.numStages);
  CHECK(space->configs[2].str() == "BK=128,BM=256,BN=256");

  REQUIRE(space->keys.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(space->keys[i].name == std::vector<std::string>{"M", "N", "K"}[i]);
    CHECK(space->keys[i].bucketing == Bucketing::pow2());
  }
  CHECK(space->reset == std::vector<std::string>{"C"});
  CHECK(space->restore == std::vector<std::string>{"P"});
  CHECK(space->pruneExpression == "BM * BK + BK * BN <= 32768");
  CHECK(space->validate().empty());

  // 128*64 + 64*256 = 24576, 64*32 + 32*128 = 6144, 256*128 + 128*256 = 65536.
  REQUIRE(space->prune);
  CHECK(space->prune(space->configs[0]));
  CHECK(space->prune(space->configs[1]));
  CHECK_FALSE(space->prune(space->configs[2]));
  CHECK(space->candidates().size() == 2);
}

TEST_CASE("@autotune: config values of every kind and the switches", "[autotune-decorator]") {
  auto space = spaceOf(kernelWith("configs=[config(BM=2 ** 6, BN=-32, DT=bf16, EPS=1e-3, "
                                  "FAST=True, warp_specialize=False, tma=True),\n"
                                  "  config(BM=64, num_stages=1)]"),
                       "k");
  REQUIRE(space->configs.size() == 2);
  const Config &c = space->configs[0];
  CHECK(intOf(c, "BM") == 64);
  CHECK(intOf(c, "BN") == -32);
  CHECK(std::get<DType>(c.constexprs.at("DT")) == DType{ScalarType::bf16, 0});
  CHECK(std::get<double>(c.constexprs.at("EPS")) == 1e-3);
  CHECK(std::get<bool>(c.constexprs.at("FAST")) == true);
  CHECK(c.warpSpecialize == false);
  CHECK(c.tma == true);
  CHECK_FALSE(c.numWarps);
  CHECK(space->configs[1].numStages == 1);
  // No key=, reset=, restore= or prune=: all empty, every config a candidate.
  CHECK(space->keys.empty());
  CHECK(space->reset.empty());
  CHECK(space->restore.empty());
  CHECK(space->pruneExpression.empty());
  CHECK_FALSE(space->prune);
  CHECK(space->candidates().size() == 2);
}

TEST_CASE("@autotune: keys with bucket edges; a dtype key is left to the options hash",
          "[autotune-decorator]") {
  auto space = spaceOf(kernelWith("configs=[config(BM=64)], key=[\"DT\", \"M\"], "
                                  "key_round=[256, 1024, 4096]"),
                       "k");
  REQUIRE(space->keys.size() == 1);
  CHECK(space->keys[0].name == "M");
  CHECK(space->keys[0].bucketing == Bucketing::at({256, 1024, 4096}));
  CHECK(space->bucket({{"M", 1000}}) == KeyValues{{"M", 1024}});

  auto none = spaceOf(kernelWith("configs=[config(BM=64)], key=[\"M\"], key_round=\"none\""), "k");
  CHECK(none->keys[0].bucketing == Bucketing::none());
  auto byDefault = spaceOf(kernelWith("configs=[config(BM=64)], key=[\"M\"]"), "k");
  CHECK(byDefault->keys[0].bucketing == Bucketing::none());
}

TEST_CASE("@autotune: prune reads other constexprs and the compile's switches",
          "[autotune-decorator]") {
  // FAST and EPS are no config's; num_warps is the config's when it sets it,
  // else the compile's.
  std::string src = kernelWith("configs=[config(BM=128, num_warps=8), config(BM=64)],\n"
                               "prune=\"num_warps * 32 <= BM * BN // 32 and not FAST and "
                               "EPS < 1 and DT == f16\"");
  auto space = spaceOf(src, "k");
  // Config 0: 8*32 = 256 <= 128*64/32 = 256. Config 1: 4*32 = 128 <= 128.
  CHECK(space->prune(space->configs[0]));
  CHECK(space->prune(space->configs[1]));

  CompileOptions eightWarps;
  eightWarps.numWarps = 8; // config 1 sets no num_warps: 256 > 128
  auto eight = spaceOf(src, "k", eightWarps);
  CHECK(eight->prune(eight->configs[0]));
  CHECK_FALSE(eight->prune(eight->configs[1]));

  CompileOptions fast; // -D FAST=True: the constexprs as this compile resolved them
  fast.constexprs["FAST"] = true;
  auto withFast = spaceOf(src, "k", fast);
  CHECK_FALSE(withFast->prune(withFast->configs[0]));

  // A config the decorator did not list: its own values win; a config that
  // sets FAST overrides the compile's.
  CHECK(space->prune(Config{}.set("BM", int64_t(1024)).warps(32)));
  CHECK_FALSE(space->prune(Config{}.set("BM", int64_t(1024)).set("FAST", true)));
  // What fails at run time prunes the config instead of throwing.
  CHECK_FALSE(space->prune(Config{}.set("BM", DType{ScalarType::f32, 0})));
  CHECK_FALSE(space->prune(Config{}.set("BM", int64_t(64)).set("EPS", DType{ScalarType::f32, 0})));
}

TEST_CASE("@autotune: the space outlives the compile", "[autotune-decorator]") {
  std::shared_ptr<const ConfigSpace> space;
  {
    CompileResult r = compile(kernelWith("configs=[config(BM=64), config(BM=32)], "
                                         "prune=\"BM // (BN - 64 + 1) >= 64\""),
                              "k");
    REQUIRE(r.ok);
    space = r.configSpaces.at("k");
  }
  CHECK(space->prune(space->configs[0]));
  CHECK_FALSE(space->prune(space->configs[1]));
  // BN = 63: division by zero at run time prunes.
  CHECK_FALSE(space->prune(Config{}.set("BM", int64_t(64)).set("BN", int64_t(63))));
}

TEST_CASE("@autotune: the first config gives constexprs without a value", "[autotune-decorator]") {
  std::string src = kernelWith("configs=[config(BM=32, BN=16), config(BM=64)]");
  CompileResult r = compile(src, "k");
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  REQUIRE(r.kernels.size() == 1);
  CHECK(std::get<int64_t>(r.kernels[0].constexprs.at("BM")) == 32); // no default: config 0
  CHECK(std::get<int64_t>(r.kernels[0].constexprs.at("BN")) == 64); // the default wins
  CHECK(r.tileIR.find("tensor<32xi32>") != std::string::npos);

  CompileOptions given;
  given.constexprs["BM"] = int64_t(128); // a given value wins
  CompileResult g = compile(src, "k", given);
  REQUIRE(g.ok);
  CHECK(std::get<int64_t>(g.kernels[0].constexprs.at("BM")) == 128);

  // When the first config does not set it, the kernel still needs a value.
  CompileResult missing = compile(kernelWith("configs=[config(BN=16), config(BM=64)]"), "k");
  CHECK_FALSE(missing.ok);
  CHECK(missing.diagnostics.find("needs a value for constexpr parameter 'BM'") !=
        std::string::npos);
}

TEST_CASE("@autotune: the prune text is part of the space's hash", "[autotune-decorator]") {
  auto hashOf = [](const std::string &prune) {
    return spaceOf(kernelWith("configs=[config(BM=64), config(BM=32)]" + prune), "k")->hash();
  };
  std::string none = hashOf(""), a = hashOf(", prune=\"BM <= 64\""),
              b = hashOf(", prune=\"BM <= 32\"");
  CHECK(a != b);
  CHECK(a != none);
  CHECK(a == hashOf(", prune=\"BM <= 64\""));
  // Without prune= the hash is that of the same space built in C++.
  ConfigSpace built;
  built.add(Config{}.set("BM", int64_t(64))).add(Config{}.set("BM", int64_t(32)));
  CHECK(none == built.hash());
}

TEST_CASE("@autotune: only compiled kernels with the decorator have a space",
          "[autotune-decorator]") {
  std::string src = std::string(kMatmul) + R"SRC(
@kernel
def plain(X: *f32):
    store(X, 1.0)
)SRC";
  CompileResult all = compile(src);
  INFO(all.diagnostics);
  REQUIRE(all.ok);
  CHECK(all.configSpaces.size() == 1);
  CHECK(all.configSpaces.count("matmul") == 1);
  CompileResult plain = compile(src, "plain");
  REQUIRE(plain.ok);
  CHECK(plain.configSpaces.empty());
  // Filled at later stages too.
  CompileResult layout = compile(src, "matmul", {}, Stage::Layout);
  INFO(layout.diagnostics);
  REQUIRE(layout.ok);
  CHECK(layout.configSpaces.count("matmul") == 1);
}

TEST_CASE("@autotune: the decorator does not change generated code", "[autotune-decorator]") {
  // The same kernel on the same lines, with the decorator and without it
  // (blank lines in its place): the PTX is byte-identical.
  std::string decorated = kMatmul;
  std::string plain = decorated;
  size_t end = plain.find("@kernel");
  for (size_t i = 0; i < end; ++i)
    if (plain[i] != '\n')
      plain[i] = ' ';
  CompileResult a = compile(decorated, "matmul", {}, Stage::PTX);
  CompileResult b = compile(plain, "matmul", {}, Stage::PTX);
  INFO(a.diagnostics << b.diagnostics);
  REQUIRE(a.ok);
  REQUIRE(b.ok);
  CHECK(a.configSpaces.size() == 1);
  CHECK(b.configSpaces.empty());
  CHECK(a.ptx == b.ptx);
}

TEST_CASE("@autotune: errors in the arguments", "[autotune-decorator][errors]") {
  struct Case {
    std::string args;
    int line, col;
    std::string message;
  };
  const std::string exists = "(constexpr parameters: BM, BN, DT, EPS, FAST; switches: "
                             "num_warps, num_stages, warp_specialize, tma, maxnreg, cluster_size)";
  const std::vector<Case> cases = {
      {"configs=[config(BM=64)], keys=[\"M\"]", 1, 36,
       "unknown @autotune argument 'keys'; expected configs, key, key_round, prune, reset or "
       "restore"},
      {"config(BM=64)", 1, 11,
       "@autotune takes keyword arguments only: configs=, key=, key_round=, prune=, reset= and "
       "restore="},
      {"key=[\"M\"]", 1, 1, "@autotune needs configs=[config(...), ...]"},
      {"configs=config(BM=64)", 1, 19,
       "configs= must be a list of configs, such as configs=[config(BM=64, num_warps=4), ...]"},
      {"configs=[]", 1, 19, "configs= needs at least one config(...)"},
      {"configs=[dict(BM=64)]", 1, 20, "expected config(NAME=value, ...) in configs="},
      {"configs=[config(64)]", 1, 27, "config() takes NAME=value arguments only"},
      {"configs=[config(BX=64)]", 1, 27,
       "'BX' is not a constexpr parameter of kernel 'k' or a switch " + exists},
      {"configs=[config(BM=64),\n config(M=64)]", 2, 9,
       "'M' is a runtime parameter of kernel 'k', not a constexpr " + exists},
      {"configs=[config(BM=64, BN=N)]", 1, 37, "unknown name 'N'"},
      {"configs=[config(BM=None)]", 1, 30, "None is not a compile-time value here"},
      {"configs=[config(BM=64), config(BM=64)]", 1, 35, "config 1 repeats config 0 (BM=64)"},
      {"configs=[config(BM=64, num_warps=3)]", 1, 44,
       "num_warps must be a power of two from 1 to 32, got 3"},
      {"configs=[config(BM=64, num_stages=0)]", 1, 45, "num_stages must be from 1 to 8, got 0"},
      {"configs=[config(BM=64, num_warps=4.0)]", 1, 44,
       "num_warps must be an integer, got constexpr float 4"},
      {"configs=[config(BM=64, tma=1)]", 1, 38, "tma must be True or False, got constexpr int 1"},
      {"configs=[config(BM=64)], key=\"M\"", 1, 40,
       "key= must be a list of parameter names, such as key=[\"M\", \"N\"]"},
      {"configs=[config(BM=64)], key=[M]", 1, 41,
       "key= lists parameter names as strings, such as key=[\"M\", \"N\"]"},
      {"configs=[config(BM=64)], key=[\"Q\"]", 1, 42, "kernel 'k' has no parameter 'Q'"},
      {"configs=[config(BM=64)], key=[\"X\"]", 1, 42, "key= names integer parameters; 'X' is f32"},
      {"configs=[config(BM=64)], key=[\"A\"]", 1, 42, "key= names integer parameters; 'A' is *f32"},
      {"configs=[config(BM=64)], key=[\"M\", \"M\"]", 1, 47, "'M' is listed twice in key="},
      {"configs=[config(BM=64)], key=[\"BM\"]", 1, 42,
       "'BM' is set by config 0; a key is a parameter that the choice of config depends on"},
      {"configs=[config(BM=64)], key_round=\"pow3\"", 1, 46,
       "key_round= must be \"pow2\", \"none\" or a list of ascending bucket edges, such as "
       "[256, 1024, 4096], got \"pow3\""},
      {"configs=[config(BM=64)], key_round=2", 1, 46,
       "key_round= must be \"pow2\", \"none\" or a list of ascending bucket edges, such as "
       "[256, 1024, 4096]"},
      {"configs=[config(BM=64)], key_round=[64, 16]", 1, 46,
       "key_round=: bucket edges must be strictly ascending: 16 after 64"},
      {"configs=[config(BM=64)], key_round=[64, 1.5]", 1, 51,
       "a bucket edge must be an integer, got constexpr float 1.5"},
      {"configs=[config(BM=64)], reset=[\"M\"]", 1, 44,
       "reset= names pointer parameters; 'M' is i64"},
      {"configs=[config(BM=64)], restore=[\"BN\"]", 1, 46,
       "restore= names pointer parameters; 'BN' is a constexpr parameter"},
      {"configs=[config(BM=64)], reset=[\"C\"], restore=[\"C\"]", 1, 59,
       "'C' is both reset and restored"},
      {"configs=[config(BM=64)], prune=3", 1, 42,
       "prune= must be a string holding a condition, such as prune=\"BM * BK <= 16384\""},
      {"configs=[config(BM=64)], prune=\" \"", 1, 42,
       "prune= is empty; it must hold a condition, such as prune=\"BM * BK <= 16384\""},
  };
  for (const Case &c : cases) {
    INFO(c.args);
    std::string errors = errorsOf(kernelWith(c.args));
    INFO(errors);
    CHECK(hasError(errors, c.line, c.col, c.message));
  }
}

TEST_CASE("@autotune: errors inside the prune string point into it", "[autotune-decorator][errors]") {
  struct Case {
    std::string prune; // the source text of the prune= value
    int col;           // column in line 1; the literal's quote is at column 42
    std::string message;
  };
  const std::string exists = "(constexpr parameters: BM, BN, DT, EPS, FAST; switches: "
                             "num_warps, num_stages, warp_specialize, tma, maxnreg, cluster_size)";
  const std::vector<Case> cases = {
      {"\"BM * BN <= 3x2\"", 54, "in prune=: invalid number literal '3x2'"},
      {"\"BM * BN <=\"", 53, "in prune=: expected an expression, found the end of the string"},
      {"\"BM BN\"", 46, "in prune=: expected the end of the expression, found 'BN'"},
      {"\"(BM\"", 43, "in prune=: '(' was never closed"},
      // An escape takes two source columns; adjacent literals concatenate.
      {"\"BM \\t< Q\"", 50, "unknown name 'Q' in prune= " + exists},
      {"\"BM <\" \" M\"", 51,
       "prune= can only read constexprs and switches; 'M' is a runtime parameter " + exists},
      {"\"BM // (BN - 64) > 0\"", 46, "division by zero in constant expression"},
      {"\"DT + 1 > 0\"", 46, "operator '+' cannot be applied to type f16 and constexpr int 1"},
      {"\"BM + 1\"", 43, "prune= must give True or False, got constexpr int 65"},
  };
  for (const Case &c : cases) {
    INFO(c.prune);
    std::string errors = errorsOf(kernelWith("configs=[config(BM=64)], prune=" + c.prune));
    INFO(errors);
    CHECK(hasError(errors, 1, c.col, c.message));
  }
  // An error that only one config meets names it.
  std::string errors = errorsOf(kernelWith("configs=[config(BM=64, BN=128),\n"
                                           "  config(BM=64)], prune=\"BM // (BN - 64) > 0\""));
  CHECK(hasError(errors, 2, 29, "division by zero in constant expression"));
  CHECK(errors.find("virtual.tile:2:3: note: while evaluating prune= for config 1 (BM=64)") !=
        std::string::npos);
}

TEST_CASE("@autotune: where the decorator may stand", "[autotune-decorator][errors]") {
  const char *body = "def f(X: *f32, BM: constexpr = 64):\n    store(X, 1.0)\n";
  auto errors = [&](const std::string &decorators) { return errorsOf(decorators + body); };
  CHECK(hasError(errors("@autotune(configs=[config(BM=32)])\n@func\n"), 1, 1,
                 "@autotune applies to @kernel functions only; 'f' is a @func"));
  CHECK(hasError(errors("@autotune(configs=[config(BM=32)])\n"), 1, 1,
                 "@autotune applies to @kernel functions only; 'f' is not a @kernel"));
  CHECK(hasError(errors("@kernel\n@autotune(configs=[config(BM=32)])\n"
                        "@autotune(configs=[config(BM=16)])\n"),
                 3, 1, "a kernel can have only one @autotune"));
  CHECK(hasError(errors("@autotune\n@kernel\n"), 1, 1,
                 "@autotune needs arguments: @autotune(configs=[config(...), ...])"));
  CHECK(hasError(errors("@kernel(configs=[config(BM=32)])\n"), 1, 9,
                 "@kernel has no argument 'configs'; it takes only do_not_specialize=[...]"));
  CHECK(hasError(errors("@func(configs=[config(BM=32)])\n"), 1, 1, "@func takes no arguments"));
  // After @kernel works as well as before it.
  CompileResult after = compile(std::string("@kernel\n@autotune(configs=[config(BM=32)])\n") + body);
  INFO(after.diagnostics);
  REQUIRE(after.ok);
  CHECK(after.configSpaces.count("f") == 1);
}
