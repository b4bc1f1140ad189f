// The autotuner compiles its candidates on a thread pool (issue 14), so the
// pipeline must be safe to run on several threads at once: each compile owns
// its MLIRContext, and the back end's process-wide LLVM state is set up once.
// Several threads compile different configs of matmul.tile to PTX at the same
// time; each result must equal the PTX of the same config compiled alone.
#include "TestSupport.h"

#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

#include <string>
#include <thread>
#include <vector>

using namespace tessera;

TEST_CASE("compile: concurrent compiles to PTX equal sequential ones", "[compiler][threads]") {
  const std::string file = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile";
  struct Job {
    CompileOptions options;
    std::string ptx, error;
  };
  std::vector<Job> jobs;
  for (const char *target : {"sm_80", "sm_90a"})
    for (int warps : {4, 8})
      for (const char *dt : {"f16", "bf16"}) {
        Job j;
        j.options.target = Target::parse(target);
        j.options.numWarps = warps;
        j.options.constexprs = {{"DT", *parseDType(dt)}, {"OUT", *parseDType(dt)}};
        j.options.argFacts = {{"stride_ak", ArgFact::EqualsOne}, {"stride_bn", ArgFact::EqualsOne},
                              {"stride_am", ArgFact::DivisibleBy16},
                              {"stride_bk", ArgFact::DivisibleBy16}};
        jobs.push_back(j);
      }
  std::vector<std::thread> threads;
  for (Job &j : jobs)
    threads.emplace_back([&file, &j] {
      CompileResult r = compileFile(file, "matmul", j.options, Stage::PTX);
      j.ptx = r.ptx;
      j.error = r.ok ? "" : r.diagnostics;
    });
  for (std::thread &t : threads)
    t.join();
  for (const Job &j : jobs) {
    INFO(j.options.resolvedTarget().name() << " warps " << j.options.numWarps);
    CHECK(j.error.empty());
    CompileResult alone = compileFile(file, "matmul", j.options, Stage::PTX);
    REQUIRE(alone.ok);
    CHECK(!j.ptx.empty());
    CHECK(j.ptx == alone.ptx);
  }
}
