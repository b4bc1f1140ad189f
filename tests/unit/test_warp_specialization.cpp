// Warp specialization of pipelined dot loops on sm_90a, compiler side (no GPU
// needed): when the lowering adds a producer warpgroup, the kernel's block
// grows and CompileResult::blockWarps says so (the JIT launches with it); the
// option turns it off; copies that may be partial keep every warp busy.
// The GPU results are in test_gpu_matmul.cpp.
#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tessera;

namespace {

std::string kernelFile(const char *name) {
  return std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/" + name;
}

// sm_90a, 8 warps, a 128 x 256 x 32 bf16 tile, unit inner strides; `whole`
// adds the facts that make every copy whole (multiples of 16).
CompileResult compileMatmul(const char *file, const char *kernel, bool whole, bool warpSpecialize) {
  CompileOptions o;
  o.target = Target::parse("sm_90a");
  o.numWarps = 8;
  o.numStages = 8;
  o.warpSpecialize = warpSpecialize;
  o.constexprs = {{"BM", int64_t(128)}, {"BN", int64_t(256)}, {"BK", int64_t(32)},
                  {"DT", *parseDType("bf16")}, {"OUT", *parseDType("bf16")}};
  o.argFacts = {{"stride_ak", ArgFact::EqualsOne}, {"stride_bn", ArgFact::EqualsOne},
                {"stride_cn", ArgFact::EqualsOne}};
  if (whole)
    for (const char *n : {"M", "N", "K", "stride_am", "stride_bk", "stride_cm"})
      o.argFacts[n] = ArgFact::DivisibleBy16;
  return compileFile(kernelFile(file), kernel, o, Stage::GpuIR);
}

bool remarked(const CompileResult &r, const std::string &what) {
  return std::any_of(r.remarks.begin(), r.remarks.end(),
                     [&](const std::string &l) { return l.find(what) != std::string::npos; });
}

} // namespace

TEST_CASE("A warp-specialized dot loop adds a producer warpgroup to the block", "[lowering][ws]") {
  CompileResult r = compileMatmul("matmul.tile", "matmul", true, true);
  REQUIRE(r.ok);
  INFO(r.diagnostics);
  CHECK(r.blockWarps.at("matmul") == 12);
  CHECK(remarked(r, "warp-specialized (a producer warpgroup copies)"));
  CHECK(r.gpuIR.find("setmaxnreg.inc.sync.aligned.u32 200") != std::string::npos);
}

TEST_CASE("warpSpecialize = false keeps num_warps and every warp copying", "[lowering][ws]") {
  CompileResult r = compileMatmul("matmul.tile", "matmul", true, false);
  REQUIRE(r.ok);
  CHECK(r.blockWarps.at("matmul") == 8);
  CHECK(remarked(r, "dot loop pipelined: wgmma m64n256k16"));
  CHECK_FALSE(remarked(r, "warp-specialized"));
  CHECK(r.gpuIR.find("mbarrier") == std::string::npos);
}

TEST_CASE("Copies that may be partial are not warp-specialized", "[lowering][ws]") {
  CompileResult r = compileMatmul("matmul.tile", "matmul", false, true);
  REQUIRE(r.ok);
  CHECK(r.blockWarps.at("matmul") == 8);
  CHECK_FALSE(remarked(r, "warp-specialized (a producer warpgroup copies)"));
  // The remark says why.
  CHECK(remarked(r, "(not warp-specialized: warp specialization needs copies without an element-wise path"));
}

TEST_CASE("The persistent matmul is warp-specialized across its tile loop", "[lowering][ws]") {
  CompileResult r = compileMatmul("matmul_persistent.tile", "matmul_persistent", true, true);
  REQUIRE(r.ok);
  CHECK(r.blockWarps.at("matmul_persistent") == 12);
  CHECK(remarked(r, "persistent dot loop"));
  // Without whole copies each tile runs the ordinary pipeline.
  CompileResult inner = compileMatmul("matmul_persistent.tile", "matmul_persistent", false, true);
  REQUIRE(inner.ok);
  CHECK(inner.blockWarps.at("matmul_persistent") == 8);
  CHECK_FALSE(remarked(inner, "persistent dot loop"));
  CHECK(remarked(inner, "dot loop pipelined"));
}
