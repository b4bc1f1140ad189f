// Layout assignment (compiler/transforms/AssignLayouts.cpp, decided in
// lowering/DotLayoutPlan.cpp) must predict the accumulator layout that the
// lowering of each dot then produces: otherwise the tile IR says one layout
// and the registers hold another, and every use converts through shared
// memory. Over dtypes, targets, warps, stages, tile shapes, operand
// contiguity and B given as it is (matmul.tile) or transposed (A @ B^T), 768
// compilations, the encoding in CompileResult::layoutIR must match the path in
// the lowering's remark, and the lowering must never remark that the
// accumulator left its assigned layout. No GPU needed.
#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tessera;

namespace {

struct Config {
  const char *dt, *arch;
  int warps, stages;
  int64_t bm, bn, bk;
  bool unitStrides;
  bool transB = false; // kNT below: dot(a, trans(bt))
};

// A @ B^T with B's rows loaded as they are (K contiguous when sk is 1).
const char *kNT = R"(
@kernel
def matmul(A: *DT, B: *DT, C: *OUT, M: i32, N: i32, K: i32, stride_am: i32, stride_ak: i32,
           stride_bn: i32, stride_bk: i32,
           BM: constexpr = 128, BN: constexpr = 128, BK: constexpr = 32, DT: constexpr = bf16,
           ACC: constexpr = f32, OUT: constexpr = f32):
    rm = program_id(0) * BM + arange(0, BM)
    rn = program_id(1) * BN + arange(0, BN)
    rk = arange(0, BK)
    pa = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    pb = B + rn[:, None] * stride_bn + rk[None, :] * stride_bk
    acc = zeros((BM, BN), ACC)
    for k0 in range(0, K, BK):
        a = load(pa, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0)
        bt = load(pb, mask=(rn[:, None] < N) & (rk[None, :] < K - k0), other=0)
        acc = dot(a, trans(bt), acc)
        pa += BK * stride_ak
        pb += BK * stride_bk
    store(C + rm[:, None] * N + rn[None, :], acc.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))
)";

// The layout the remark's path produces (the path is named first; a note in
// parentheses may name others).
const char *expectedEncoding(const std::string &remark) {
  if (remark.find("C^T = B^T A^T") != std::string::npos)
    return "#tgpu.mma<version = 3, warps = %d, transposed = true>";
  if (remark.find("pipelined: wgmma") != std::string::npos)
    return "#tgpu.mma<version = 3, warps = %d, transposed = false>";
  return "#tgpu.mma<version = 2, warps = %d, transposed = false>";
}

} // namespace

TEST_CASE("Assigned dot layouts match the layouts the lowering produces", "[layouts]") {
  std::vector<Config> configs;
  for (const char *dt : {"bf16", "f16", "f32", "i8"})
    for (const char *arch : {"sm_90a", "sm_80"})
      for (int warps : {4, 8})
        for (int stages : {1, 3, 4})
          for (auto [bm, bn, bk] : {std::tuple<int64_t, int64_t, int64_t>{128, 128, 32},
                                    {64, 64, 32}, {128, 256, 32}, {256, 128, 64}})
            for (bool unit : {true, false})
              for (bool transB : {false, true})
                configs.push_back({dt, arch, warps, stages, bm, bn, bk, unit, transB});
  int pipelined = 0, checked = 0;
  for (const Config &c : configs) {
    CompileOptions o;
    o.target = Target::parse(c.arch);
    o.numWarps = c.warps;
    o.numStages = c.stages;
    bool isInt = std::string(c.dt) == "i8";
    o.constexprs = {{"BM", c.bm}, {"BN", c.bn}, {"BK", c.bk}, {"DT", *parseDType(c.dt)},
                    {"ACC", *parseDType(isInt ? "i32" : "f32")},
                    {"OUT", *parseDType(isInt ? "i32" : "f32")}};
    // Unit inner strides (B's is stride_bk when it is given transposed).
    if (c.unitStrides)
      o.argFacts = {{"stride_ak", ArgFact::EqualsOne},
                    {c.transB ? "stride_bk" : "stride_bn", ArgFact::EqualsOne},
                    {"stride_am", ArgFact::DivisibleBy16},
                    {c.transB ? "stride_bn" : "stride_bk", ArgFact::DivisibleBy16}};
    CompileResult r =
        c.transB ? compileSource(kNT, "nt.tile", "matmul", o, Stage::GpuIR)
                 : compileFile(std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile",
                               "matmul", o, Stage::GpuIR);
    INFO(c.dt << " " << c.arch << " warps " << c.warps << " stages " << c.stages << " tile " << c.bm
              << "x" << c.bn << "x" << c.bk << (c.unitStrides ? " unit strides" : "")
              << (c.transB ? " B transposed" : ""));
    if (!r.ok) {
      // Tiles too large for the registers or shared memory are refused with
      // a diagnostic, not miscompiled.
      INFO(r.diagnostics);
      CHECK(!r.diagnostics.empty());
      continue;
    }
    for (const std::string &line : r.remarks)
      CHECK(line.find("not in its assigned layout") == std::string::npos);
    auto it = std::find_if(r.remarks.begin(), r.remarks.end(), [](const std::string &l) {
      return l.find("dot loop pipelined") != std::string::npos;
    });
    bool hasMma = r.layoutIR.find("#tgpu.mma<") != std::string::npos;
    if (it == r.remarks.end()) {
      // Not pipelined: mma.sync for 16-bit operands with an f32 accumulator
      // (K a multiple of 16), else FMA in the blocked layout.
      bool half = std::string(c.dt) == "bf16" || std::string(c.dt) == "f16";
      CHECK(hasMma == half);
      if (half) {
        char want[96];
        std::snprintf(want, sizeof want, "#tgpu.mma<version = 2, warps = %d, transposed = false>",
                      c.warps);
        CHECK(r.layoutIR.find(want) != std::string::npos);
      }
      ++checked;
      continue;
    }
    ++pipelined;
    char want[96];
    std::snprintf(want, sizeof want, expectedEncoding(*it), c.warps);
    INFO("remark: " << *it);
    CHECK(r.layoutIR.find(want) != std::string::npos);
    ++checked;
  }
  INFO(pipelined << " pipelined of " << checked << " checked");
  CHECK(pipelined > 40); // the matrix exercises the pipeline paths, not only fallbacks
  CHECK(checked > 200);
}
