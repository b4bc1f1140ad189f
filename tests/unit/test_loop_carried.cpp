// What loops carry (CompileResult::loopCarried): named as in the source, with
// the registers a thread needs in its layout; `tessera compile
// --emit=resources` prints it for kernels that spill.
#include "tessera/Compiler.h"

#include <catch2/catch.hpp>

using namespace tessera;

TEST_CASE("loop-carried report names the values live across each loop", "[resources][loops]") {
  const char *src = R"(
@kernel
def k(X: *f32, Y: *f32, n: i32):
    r = arange(0, 64)
    acc = zeros((64, 64), f32)
    ptrs = X + r[:, None] * 64 + r[None, :]
    gather = X + r[:, None] * 64 + r[None, :]
    total = 0.0
    for i in range(0, n):
        acc += load(ptrs) + load(gather)
        ptrs += 4096
        gather += r[:, None] + r[None, :]
        total += 1.0
    j = 0
    while j < n:
        if j > 100:
            break
        acc = acc * 0.5
        j += 1
    store(Y + r[:, None] * 64 + r[None, :], acc + total)
)";
  CompileOptions o;
  o.numWarps = 4;
  CompileResult r = compileSource(src, "carry.tile", "k", o, Stage::Layout);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  REQUIRE(r.loopCarried.count("k"));
  const std::vector<std::string> &lines = r.loopCarried.at("k");
  REQUIRE(lines.size() == 2);
  INFO(lines[0] << "\n" << lines[1]);
  // 64 x 64 f32 over 128 threads: 32 a thread; 64-bit pointers twice that.
  // `ptrs` advances by a uniform step: recomputed each iteration, not carried.
  CHECK(lines[0].rfind("carry.tile:9:5: loop carries, per thread of 4 warps: ", 0) == 0);
  CHECK(lines[0].find("acc f32[64, 64] 32 registers") != std::string::npos);
  CHECK(lines[0].find("gather ptr[64, 64] 64 registers") != std::string::npos);
  CHECK(lines[0].find("ptrs ") == std::string::npos);
  CHECK(lines[0].find("total f32 1 register") != std::string::npos);
  CHECK(lines[0].find("(about 97 in all)") != std::string::npos);
  CHECK(lines[1].find("carry.tile:15:5:") == 0);
  CHECK(lines[1].find("acc f32[64, 64] 32 registers") != std::string::npos);
  CHECK(lines[1].find("j i32 1 register") != std::string::npos);
  CHECK(lines[1].find("i1") == std::string::npos); // the front end's break flag is not listed
  CHECK(lines[1].find("(about 33 in all)") != std::string::npos);
  o.numWarps = 8;
  CompileResult r8 = compileSource(src, "carry.tile", "k", o, Stage::Layout);
  REQUIRE(r8.ok);
  CHECK(r8.loopCarried.at("k")[0].find("acc f32[64, 64] 16 registers") != std::string::npos);
}
