// Layout assignment (compiler/transforms/AssignLayouts.cpp, decided in
// lowering/DotLayoutPlan.cpp) must predict the accumulator layout that the
// lowering of each dot then produces: otherwise the tile IR says one layout
// and the registers hold another, and every use converts through shared
// memory. Over dtypes, targets, warps, stages, tile shapes and operand
// contiguity, the encoding in CompileResult::layoutIR must match the path in
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
};

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
              configs.push_back({dt, arch, warps, stages, bm, bn, bk, unit});
  int pipelined = 0, checked = 0;
  for (const Config &c : configs) {
    CompileOptions o;
    o.arch = c.arch;
    o.numWarps = c.warps;
    o.numStages = c.stages;
    o.lowerToGPU = true;
    bool isInt = std::string(c.dt) == "i8";
    o.constexprs = {{"BM", c.bm}, {"BN", c.bn}, {"BK", c.bk}, {"DT", *parseDType(c.dt)},
                    {"ACC", *parseDType(isInt ? "i32" : "f32")},
                    {"OUT", *parseDType(isInt ? "i32" : "f32")}};
    if (c.unitStrides)
      o.argFacts = {{"stride_ak", ArgFact::EqualsOne}, {"stride_bn", ArgFact::EqualsOne},
                    {"stride_am", ArgFact::DivisibleBy16}, {"stride_bk", ArgFact::DivisibleBy16}};
    CompileResult r = compileFile(std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile",
                                  "matmul", o);
    INFO(c.dt << " " << c.arch << " warps " << c.warps << " stages " << c.stages << " tile " << c.bm
              << "x" << c.bn << "x" << c.bk << (c.unitStrides ? " unit strides" : ""));
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
  CHECK(pipelined > 20); // the matrix exercises the pipeline paths, not only fallbacks
  CHECK(checked > 100);
}
