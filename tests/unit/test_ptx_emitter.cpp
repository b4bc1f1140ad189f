// PTX back end tests: hand-written scalar kernels (the form the tile lowering
// produces) through MLIR -> LLVM IR -> PTX, libdevice linking, ptxas
// validation and the ptxas report, plus errors for bad input.
#include <catch2/catch.hpp>

#include "tessera/CodeGen.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>

using namespace tessera;

namespace {

const char *kAxpy = R"MLIR(
module attributes {tessera.num_warps = 4 : i32} {
  func.func @axpy(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %a: f32, %n: i32) attributes {tessera.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %c128 = arith.constant 128 : i32
    %base = arith.muli %bid, %c128 : i32
    %i = arith.addi %base, %tid : i32
    %inb = arith.cmpi slt, %i, %n : i32
    scf.if %inb {
      %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %vx = llvm.load %px {alignment = 4 : i64} : !llvm.ptr<1> -> f32
      %vy = llvm.load %py {alignment = 4 : i64} : !llvm.ptr<1> -> f32
      %ax = arith.mulf %a, %vx : f32
      %r = arith.addf %ax, %vy : f32
      llvm.store %r, %py {alignment = 4 : i64} : f32, !llvm.ptr<1>
    }
    return
  }
}
)MLIR";

// math.exp / math.sqrt and friends must become inlined libdevice code.
const char *kMath = R"MLIR(
module {
  func.func @mathk(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %h: f16) attributes {tessera.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %px = llvm.getelementptr %x[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %px {alignment = 4 : i64} : !llvm.ptr<1> -> f32
    %e = math.exp %v : f32
    %s = math.sqrt %e : f32
    %l = math.log %s : f32
    %t = math.tanh %l : f32
    %er = math.erf %t : f32
    %p = math.powf %er, %v : f32
    %rs = math.rsqrt %p : f32
    %sn = math.sin %rs : f32
    %hx = math.exp %h : f16
    %hf = arith.extf %hx : f16 to f32
    %r = arith.addf %sn, %hf : f32
    %py = llvm.getelementptr %y[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %r, %py {alignment = 4 : i64} : f32, !llvm.ptr<1>
    return
  }
}
)MLIR";

const char *kVector = R"MLIR(
module {
  func.func @vec4(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {tessera.kernel, tessera.num_warps = 8 : i32} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c4 = arith.constant 4 : i32
    %i = arith.muli %tid, %c4 : i32
    %px = llvm.getelementptr inbounds %x[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %py = llvm.getelementptr inbounds %y[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %px {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
    %two = arith.constant dense<2.0> : vector<4xf32>
    %w = arith.mulf %v, %two : vector<4xf32>
    %s = vector.extract %w[3] : f32 from vector<4xf32>
    %b = vector.broadcast %s : f32 to vector<4xf32>
    %r = arith.addf %b, %w : vector<4xf32>
    llvm.store %r, %py {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
    return
  }
}
)MLIR";

const char *kLoop = R"MLIR(
module attributes {tessera.num_warps = 1 : i32} {
  func.func @rowsum(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>, %n: i32) attributes {tessera.kernel} {
    %row = nvvm.read.ptx.sreg.ctaid.x : i32
    %lane = nvvm.read.ptx.sreg.tid.x : i32
    %c32 = arith.constant 32 : index
    %nidx = arith.index_cast %n : i32 to index
    %zero = arith.constant 0.0 : f32
    %base = arith.muli %row, %n : i32
    %lidx = arith.index_cast %lane : i32 to index
    %acc = scf.for %k = %lidx to %nidx step %c32 iter_args(%a = %zero) -> (f32) {
      %ki = arith.index_cast %k : index to i32
      %off = arith.addi %base, %ki : i32
      %p = llvm.getelementptr %x[%off] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr<1> -> f32
      %m = arith.maximumf %v, %zero : f32
      %s = arith.addf %a, %m : f32
      scf.yield %s : f32
    }
    %c0 = arith.constant 0 : i32
    %first = arith.cmpi eq, %lane, %c0 : i32
    scf.if %first {
      %po = llvm.getelementptr %out[%row] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %old = llvm.atomicrmw fadd %po, %acc monotonic : !llvm.ptr<1>, f32
    }
    return
  }
}
)MLIR";

// Static and dynamic shared memory, a barrier, a warp shuffle, an atomic CAS,
// inline PTX and device printf.
const char *kShared = R"MLIR(
module attributes {tessera.num_warps = 4 : i32} {
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<128 x f32>
  llvm.mlir.global external @__tessera_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal constant @fmt("lane=%d\0A\00") {addr_space = 0 : i32}
  llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32
  func.func @shared(%x: !llvm.ptr<1>, %flag: !llvm.ptr<1>) attributes {tessera.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %px = llvm.getelementptr %x[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %px {alignment = 4 : i64} : !llvm.ptr<1> -> f32
    %s = llvm.mlir.addressof @tile : !llvm.ptr<3>
    %sp = llvm.getelementptr %s[%tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    llvm.store %v, %sp {alignment = 4 : i64} : f32, !llvm.ptr<3>
    nvvm.barrier0
    %c1 = arith.constant 1 : i32
    %nb = arith.xori %tid, %c1 : i32
    %sq = llvm.getelementptr %s[%nb] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    %w = llvm.load %sq {alignment = 4 : i64} : !llvm.ptr<3> -> f32
    %mask = arith.constant -1 : i32
    %c31 = arith.constant 31 : i32
    %sh = nvvm.shfl.sync bfly %mask, %w, %c1, %c31 : f32 -> f32
    %d = llvm.mlir.addressof @__tessera_smem : !llvm.ptr<3>
    %dp = llvm.getelementptr %d[%tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    llvm.store %sh, %dp {alignment = 4 : i64} : f32, !llvm.ptr<3>
    llvm.store %sh, %px {alignment = 4 : i64} : f32, !llvm.ptr<1>
    %c0 = arith.constant 0 : i32
    %pair = llvm.cmpxchg %flag, %c0, %tid acq_rel monotonic : !llvm.ptr<1>, i32
    %lane = llvm.inline_asm has_side_effects "mov.u32 $0, %laneid;", "=r" : () -> i32
    %is0 = arith.cmpi eq, %lane, %c0 : i32
    scf.if %is0 {
      %f = llvm.mlir.addressof @fmt : !llvm.ptr
      %buf = llvm.alloca %c1 x i32 : (i32) -> !llvm.ptr
      llvm.store %lane, %buf : i32, !llvm.ptr
      %r = llvm.call @vprintf(%f, %buf) : (!llvm.ptr, !llvm.ptr) -> i32
    }
    return
  }
}
)MLIR";

std::string ptxOf(const char *mlir, const TargetOptions &opts = {}) {
  std::string ptx, error;
  bool ok = emitPTX(mlir, opts, ptx, error);
  INFO(error);
  REQUIRE(ok);
  REQUIRE(error.empty());
  return ptx;
}

std::string errorOf(const char *mlir, const TargetOptions &opts = {}) {
  std::string out, error;
  REQUIRE_FALSE(emitPTX(mlir, opts, out, error));
  REQUIRE(out.empty());
  REQUIRE_FALSE(error.empty());
  return error;
}

bool contains(const std::string &s, const std::string &what) {
  return s.find(what) != std::string::npos;
}

bool matches(const std::string &s, const char *re) { return std::regex_search(s, std::regex(re)); }

bool haveLibdevice() {
  TargetOptions o;
  return std::ifstream(libdevicePathFor(o)).good();
}

/// ptxas must accept `ptx` for `arch`; a visible warning when it is absent.
void checkPtxas(const std::string &ptx, const std::string &arch = "sm_90") {
  if (findPtxas().empty()) {
    WARN("ptxas not found: PTX not validated");
    return;
  }
  std::string cubin, log;
  bool ok = assembleCubin(ptx, arch, cubin, log);
  INFO(log);
  REQUIRE(ok);
  CHECK(cubin.size() > 4);
  CHECK(cubin.compare(0, 4, "\x7f"
                            "ELF") == 0);
}

} // namespace

TEST_CASE("ptx: axpy becomes an entry with the block size and fma", "[ptx]") {
  std::string ptx = ptxOf(kAxpy);
  CHECK(contains(ptx, ".version 8.5"));
  CHECK(contains(ptx, ".target sm_90"));
  CHECK(contains(ptx, ".visible .entry axpy("));
  CHECK(contains(ptx, ".reqntid 128"));
  CHECK(contains(ptx, "%tid.x"));
  CHECK(contains(ptx, "%ctaid.x"));
  CHECK(matches(ptx, R"(ld\.global\.(f32|b32))"));
  CHECK(matches(ptx, R"(st\.global\.(f32|b32))"));
  CHECK(contains(ptx, "fma.rn.f32")); // mul+add contracted, as nvcc does by default
  checkPtxas(ptx);
}

TEST_CASE("ptx: LLVM IR output is NVPTX with a ptx_kernel", "[ptx]") {
  std::string ir, error;
  REQUIRE(emitLLVMIR(kAxpy, {}, ir, error));
  CHECK(contains(ir, "target triple = \"nvptx64-nvidia-cuda\""));
  CHECK(contains(ir, "define ptx_kernel void @axpy("));
  CHECK(contains(ir, "\"nvvm.reqntid\"=\"128\""));
  CHECK(contains(ir, "ptr addrspace(1)"));
}

TEST_CASE("ptx: math goes through libdevice, linked and inlined", "[ptx][libdevice]") {
  if (!haveLibdevice()) {
    WARN("libdevice not found: libdevice test skipped");
    return;
  }
  std::string ptx = ptxOf(kMath);
  CHECK_FALSE(contains(ptx, "__nv_"));
  CHECK_FALSE(contains(ptx, ".extern .func"));
  CHECK_FALSE(contains(ptx, "call"));
  CHECK(contains(ptx, "ex2.approx")); // the core of __nv_expf
  // nvcc's defaults: IEEE sqrt (-prec-sqrt=true) and no flush to zero.
  CHECK(contains(ptx, "sqrt.rn.f32"));
  CHECK_FALSE(matches(ptx, R"(\bsqrt\.approx)")); // (rsqrt.approx is CUDA's rsqrtf)
  CHECK_FALSE(contains(ptx, "fma.rn.ftz.f32"));
  checkPtxas(ptx);

  TargetOptions ftz;
  ftz.flushDenormals = true;
  std::string ptxFtz = ptxOf(kMath, ftz);
  CHECK(contains(ptxFtz, "sqrt.rn.ftz.f32"));
}

TEST_CASE("ptx: the libdevice path is explicit and only needed when used", "[ptx][libdevice]") {
  TargetOptions missing;
  missing.libdevicePath = "/nonexistent/libdevice.10.bc";
  std::string error = errorOf(kMath, missing);
  CHECK(contains(error, "__nv_"));
  CHECK(contains(error, "/nonexistent/libdevice.10.bc"));
  CHECK(contains(error, "TESSERA_LIBDEVICE"));
  // No math: the missing file does not matter.
  ptxOf(kAxpy, missing);
}

TEST_CASE("ptx: 16-byte aligned vector<4xf32> loads become ld.global.v4", "[ptx]") {
  std::string ptx = ptxOf(kVector);
  CHECK(contains(ptx, ".reqntid 256")); // tessera.num_warps on the kernel
  CHECK(matches(ptx, R"(ld\.global(\.nc)?\.v4\.(f32|b32))"));
  CHECK(matches(ptx, R"(st\.global\.v4\.(f32|b32))"));
  checkPtxas(ptx);
}

TEST_CASE("ptx: scf.for loop and a float atomic", "[ptx]") {
  std::string ptx = ptxOf(kLoop);
  CHECK(contains(ptx, ".reqntid 32"));
  CHECK(matches(ptx, R"(max(\.NaN)?\.f32)")); // arith.maximumf propagates NaN
  CHECK(matches(ptx, R"((atom|red)\.global\.add\.f32)"));
  CHECK(matches(ptx, R"(bra(\.uni)?\s)")); // the loop's back edge
  checkPtxas(ptx);
}

TEST_CASE("ptx: shared memory, barrier, shuffle, CAS, inline asm, printf", "[ptx]") {
  std::string ptx = ptxOf(kShared);
  CHECK(contains(ptx, ".shared .align 16 .b8 tile[512]"));
  CHECK(contains(ptx, ".extern .shared .align 16 .b8 __tessera_smem[]"));
  CHECK(contains(ptx, "bar.sync"));
  CHECK(contains(ptx, "shfl.sync.bfly.b32"));
  CHECK(matches(ptx, R"(atom\.[a-z_.]*cas\.b32)"));
  CHECK(contains(ptx, "%laneid"));
  CHECK(contains(ptx, "vprintf"));
  CHECK(matches(ptx, R"(st\.shared\.(f32|b32))"));
  checkPtxas(ptx);
}

TEST_CASE("ptx: targets sm_80, sm_90a and an explicit PTX version", "[ptx]") {
  for (const char *arch : {"sm_80", "sm_90a"}) {
    TargetOptions opts;
    opts.arch = arch;
    std::string ptx = ptxOf(kShared, opts);
    CHECK(contains(ptx, std::string(".target ") + arch));
    checkPtxas(ptx, arch);
  }
  TargetOptions v80;
  v80.ptxVersion = 80;
  CHECK(contains(ptxOf(kAxpy, v80), ".version 8.0"));
  CHECK(ptxVersionFor(TargetOptions{}) == 85);
}

TEST_CASE("ptx: optimization levels and no block size", "[ptx]") {
  TargetOptions o0;
  o0.optLevel = 0;
  o0.numWarps = 0;
  const char *noWarps = R"MLIR(
    func.func @k(%p: !llvm.ptr<1>) attributes {tessera.kernel} {
      %t = nvvm.read.ptx.sreg.tid.x : i32
      llvm.store %t, %p : i32, !llvm.ptr<1>
      return
    })MLIR";
  std::string ptx = ptxOf(noWarps, o0);
  CHECK(contains(ptx, ".entry k("));
  CHECK_FALSE(contains(ptx, ".reqntid"));
  if (haveLibdevice()) {
    std::string mathO0 = ptxOf(kMath, o0);
    CHECK_FALSE(contains(mathO0, "__nv_")); // libdevice is always-inline
    checkPtxas(mathO0);
  }
}

TEST_CASE("ptx: nvvm.kernel on a func.func (the tile lowering's form) is accepted", "[ptx]") {
  const char *src = R"MLIR(
    func.func @k(%p: !llvm.ptr<1>) attributes {nvvm.kernel, tessera.num_warps = 2 : i32, tessera.shared_bytes = 0 : i32, tile.signature = "k(*i32)"} {
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      llvm.store %ti, %p : i32, !llvm.ptr<1>
      gpu.barrier
      return
    })MLIR";
  std::string ptx = ptxOf(src);
  CHECK(contains(ptx, ".entry k("));
  CHECK(contains(ptx, ".reqntid 64"));
  CHECK(contains(ptx, "bar.sync"));
}

TEST_CASE("ptx: bad input is an error message, not a crash", "[ptx][errors]") {
  // An op with no lowering (a tile op the tile lowering left behind).
  std::string e = errorOf(R"MLIR(
    func.func @k(%p: !llvm.ptr<1>) attributes {tessera.kernel} {
      %pid = tile.program_id 0 : i32
      llvm.store %pid, %p : i32, !llvm.ptr<1>
      return
    })MLIR");
  CHECK(contains(e, "<mlir>:3:14: error: failed to legalize operation 'tile.program_id'"));
  CHECK_FALSE(contains(e, "see current operation"));

  // An LLVM intrinsic NVPTX cannot select.
  e = errorOf(R"MLIR(
    func.func @k(%p: !llvm.ptr<1>, %x: f32) attributes {tessera.kernel} {
      %e = llvm.intr.exp(%x) : (f32) -> f32
      llvm.store %e, %p : f32, !llvm.ptr<1>
      return
    })MLIR");
  CHECK(contains(e, "failed to legalize operation 'llvm.intr.exp'"));

  // NVPTX itself gives up (an sm_100a-only instruction on sm_90): LLVM's
  // fatal error comes back as a message.
  e = errorOf(R"MLIR(
    func.func @k(%p: !llvm.ptr<1>, %x: f32) attributes {tessera.kernel} {
      %m = arith.constant -1 : i32
      %r = nvvm.redux.sync fmax %x, %m : f32 -> f32
      llvm.store %r, %p : f32, !llvm.ptr<1>
      return
    })MLIR");
  CHECK(contains(e, "LLVM error: Cannot select"));
  // ... and the next compilation still works.
  ptxOf(kAxpy);

  CHECK(contains(errorOf("func.func @f(%a: f32) {\n  %x = arith.addf %a, : f32\n}"),
                 "<mlir>:2:22: error: expected SSA operand"));
  CHECK(contains(errorOf("func.func @f(%a: f32) { return }"), "module has no kernel"));
  CHECK(contains(errorOf(R"MLIR(
    func.func @k(%a: f32) -> f32 attributes {tessera.kernel} { return %a : f32 })MLIR"),
                 "must not return values"));
  CHECK(contains(errorOf(R"MLIR(
    func.func @k(%a: f32) attributes {tessera.kernel, tessera.num_warps = 64 : i32} { return })MLIR"),
                 "tessera.num_warps"));

  TargetOptions badArch;
  badArch.arch = "sm_13";
  CHECK(contains(errorOf(kAxpy, badArch), "unknown GPU architecture 'sm_13'"));
}

TEST_CASE("ptxas: report parsing", "[ptxas]") {
  const char *log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
                    "ptxas info    : Function properties for k1\n"
                    "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
                    "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, "
                    "368 bytes cmem[0]\n"
                    "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
                    "ptxas info    : Function properties for k2\n"
                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                    "ptxas info    : Used 8 registers, used 0 barriers, 368 bytes cmem[0]\n";
  auto ks = parsePtxasLog(log);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].name == "k1");
  CHECK(ks[0].registers == 40);
  CHECK(ks[0].spillStores == 8);
  CHECK(ks[0].spillLoads == 12);
  CHECK(ks[0].stackBytes == 16);
  CHECK(ks[0].sharedBytes == 2048);
  CHECK(ks[0].barriers == 1);
  CHECK(ks[1].name == "k2");
  CHECK(ks[1].registers == 8);
  CHECK(ks[1].sharedBytes == 0);
  CHECK(ks[0].wgmmaSerialized.empty());
  CHECK(parsePtxasLog("").empty());
}

TEST_CASE("ptxas: a report of serialized wgmma names its kernel and reason", "[ptxas]") {
  // The line comes before the function's "Compiling entry function" (ptxas 13.0).
  const char *log =
      "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are "
      "serialized due to wgmma pipeline crossing function boundary at a function call in the "
      "function 'k2'\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90a'\n"
      "ptxas info    : Used 40 registers, used 1 barriers\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_90a'\n"
      "ptxas info    : Used 168 registers, used 2 barriers\n";
  auto ks = parsePtxasLog(log);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].wgmmaSerialized.empty());
  CHECK(ks[1].wgmmaSerialized == "wgmma pipeline crossing function boundary at a function call");
  CHECK(ks[1].registers == 168);
}

TEST_CASE("ptxas: assembles, reports, and rejects bad PTX", "[ptxas]") {
  if (findPtxas().empty()) {
    WARN("ptxas not found: ptxas tests skipped");
    std::string cubin, log;
    CHECK_FALSE(assembleCubin(".version 8.5", "sm_90", cubin, log));
    CHECK(contains(log, "ptxas not found"));
    return;
  }
  std::string cubin, log;
  REQUIRE(assembleCubin(ptxOf(kShared), "sm_90", cubin, log));
  auto ks = parsePtxasLog(log);
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].name == "shared");
  CHECK(ks[0].registers > 0);
  CHECK(ks[0].sharedBytes == 512);
  CHECK(ks[0].spillStores == 0);

  CHECK_FALSE(assembleCubin(".version 8.5\n.target sm_90\nthis is not ptx\n", "sm_90", cubin, log));
  CHECK(cubin.empty());
  CHECK(contains(log, "error"));
}
