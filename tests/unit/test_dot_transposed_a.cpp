// `dot(trans(at), b)`: A.T @ B with A's K x M tile loaded as it lies. Checks
// without a GPU that every form compiles to PTX on sm_80 and sm_90a, that the
// remarks name the path (an M-major stage read transposed by 16-bit wgmma;
// element-by-element copies where the path reads A K-major; f32 on sm_80 is
// not pipelined, FMA), and that the
// interpreter computes it against fp64. The GPU runs are in
// test_gpu_matmul_strided.cpp.
#include "MatmulTestSupport.h"
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

using namespace tessera;
using namespace tessera::testing;

namespace {
bool anyRemark(const CompileResult &r, const std::string &text) {
  for (const std::string &line : r.remarks)
    if (line.find(text) != std::string::npos)
      return true;
  return false;
}
} // namespace

TEST_CASE("dot(trans(a), b) pipelines on every path and names it", "[lowering][matmul]") {
  for (std::string dt : {"f16", "bf16", "f32"})
    for (const char *arch : {"sm_80", "sm_90a"})
      for (int warps : {4, 8})
        for (bool bt : {false, true})
          for (bool facts : {false, true}) {
            CompileOptions o;
            o.target = *Target::parse(arch);
            o.numWarps = warps;
            o.constexprs = {{"DT", *parseDType(dt)}, {"BT", bt}};
            if (facts)
              o.argFacts = {{"M", ArgFact::DivisibleBy16}, {"N", ArgFact::DivisibleBy16},
                            {"K", ArgFact::DivisibleBy16}};
            CompileResult r = compileSource(kTransposedADot, "mm_ta.tile", "mm_ta", o, Stage::PTX);
            std::string all;
            for (const std::string &line : r.remarks)
              all += line + "\n";
            INFO(dt << " " << arch << " warps " << warps << (bt ? " B^T" : "") << (facts ? " facts" : "")
                    << "\n" << r.diagnostics << all);
            REQUIRE(r.ok);
            // f32 without wgmma runs on FMA, unpipelined, as any f32 dot does there.
            bool sm90 = std::string(arch) == "sm_90a", pipelined = sm90 || dt != "f32";
            bool mMajor = sm90 && dt != "f32";
            CHECK(anyRemark(r, "dot loop pipelined") == pipelined);
            CHECK(anyRemark(r, "A copied M-major (read transposed by wgmma)") == mMajor);
            CHECK(anyRemark(r, "its rows run along M") == (pipelined && !mMajor));
          }
}

TEST_CASE("dot(trans(a), b) in the interpreter matches fp64", "[interpreter][matmul]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context interp(createInterpreterBackend());
  const int64_t M = 40, N = 24, K = 36; // ragged for 16 x 16 x 16 tiles
  for (std::string dt : {"f16", "bf16", "f32"})
    for (bool bt : {false, true}) {
      double rel = transposedADotError(interp, s.rng, dt, M, N, K, bt, 16, 16, 16, JitOptions{});
      INFO(dt << (bt ? " B^T" : "") << ": relative error " << rel);
      CHECK(rel <= 1e-6);
    }
}
