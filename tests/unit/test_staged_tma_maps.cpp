// The tensor maps of flash_attn_fwd's ping-pong loops as the compiler hands
// them to the runtime (CompileResult::tensorMaps, through the kernel's
// tessera.tensor_maps attribute): K and V of each loop as 4-D maps whose
// outer dimensions are the batch and the head, the unmasked loop's keys
// unbounded and the masked loop's bounded by N, and H listed for the launch's
// non-negativity check. No GPU needed (Stage::GpuIR); runs in CI.
#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tessera;

namespace {
CompileResult compileForward(bool tma, bool facts) {
  CompileOptions o;
  o.target = Target::parse("sm_90a");
  o.numWarps = 8;
  o.numStages = 3;
  o.tma = tma;
  o.constexprs = {{"HEAD_DIM", int64_t(128)}, {"BLOCK_M", int64_t(128)}, {"BLOCK_N", int64_t(128)},
                  {"DT", *parseDType("bf16")}};
  if (facts)
    o.argFacts = {{"stride_d", ArgFact::EqualsOne},
                  {"stride_n", ArgFact::DivisibleBy16},
                  {"stride_h", ArgFact::DivisibleBy16},
                  {"stride_z", ArgFact::DivisibleBy16}};
  return compileFile(std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/attention/flash_attn.tile",
                     "flash_attn_fwd", o, Stage::GpuIR);
}
} // namespace

TEST_CASE("flash_attn_fwd's ping-pong loops load K and V through 4-D tensor maps", "[tma][attention]") {
  CompileResult r = compileForward(true, true);
  REQUIRE(r.ok);
  const std::vector<TensorMapSpec> &maps = r.tensorMaps["flash_attn_fwd"];
  // Arguments: Q K V O LSE sm_scale stride_z(6) stride_h(7) stride_n(8) stride_d(9) H(10) N(11).
  REQUIRE(maps.size() == 4); // K and V of the unmasked loop, then of the masked one
  for (size_t i = 0; i < maps.size(); ++i) {
    const TensorMapSpec &m = maps[i];
    INFO("map " << i << ": " << formatTensorMapSpec(m));
    CHECK(m.pointerArg == (i % 2 ? 2 : 1));
    CHECK(m.elementBytes == 2);
    CHECK(m.boxCols == 64); // two 128-byte column blocks a 128-wide row
    CHECK(m.boxRows == 128);
    CHECK(m.swizzleBytes == 128);
    CHECK(m.cols.c == 128);
    CHECK(m.cols.terms.empty());
    REQUIRE(m.rowStride.terms.size() == 1);
    CHECK(m.rowStride.terms[0] == std::pair<int, int64_t>{8, 1});
    REQUIRE(m.outer.size() == 2); // (off_hz // H) * stride_z, (off_hz % H) * stride_h
    CHECK(m.outer[0].stride.terms == std::vector<std::pair<int, int64_t>>{{6, 1}});
    CHECK(m.outer[1].stride.terms == std::vector<std::pair<int, int64_t>>{{7, 1}});
    CHECK(m.nonNegativeArgs == std::vector<int>{10});
    if (i < 2) { // the unmasked loop: no bound on the keys
      CHECK(m.rows.c == (int64_t(1) << 31) - 1);
      CHECK(m.rows.terms.empty());
    } else { // the masked loop: keys past N read as zeros
      CHECK(m.rows.c == 0);
      CHECK(m.rows.terms == std::vector<std::pair<int, int64_t>>{{11, 1}});
    }
  }
  bool remarked = std::any_of(r.remarks.begin(), r.remarks.end(), [](const std::string &s) {
    return s.find("copied by TMA (thread 0; tensor maps of rank 4)") != std::string::npos;
  });
  CHECK(remarked);
}

TEST_CASE("flash_attn_fwd keeps cp.async without TMA or without aligned rows", "[tma][attention]") {
  CompileResult off = compileForward(false, true);
  REQUIRE(off.ok);
  CHECK(off.tensorMaps["flash_attn_fwd"].empty());
  // Without argument facts the rows are not provably 16-byte aligned, and
  // the remark says so.
  CompileResult bare = compileForward(true, false);
  REQUIRE(bare.ok);
  CHECK(bare.tensorMaps["flash_attn_fwd"].empty());
  bool why = std::any_of(bare.remarks.begin(), bare.remarks.end(), [](const std::string &s) {
    return s.find("not by TMA: rows not provably 16-byte aligned") != std::string::npos;
  });
  CHECK(why);
}
