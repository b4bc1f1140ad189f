// `tessera compile`: a .tile file -> tile IR, GPU IR, LLVM IR, PTX or a cubin.
#include "cli.h"
#include "tessera/Occupancy.h"

#include "tessera/CodeGen.h"
#include "tessera/Compiler.h"

#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

namespace tessera::cli {

namespace {

// One line per kernel: what ptxas allocated and what that allows per SM.
std::string resourceTable(const CompileResult &r, const std::vector<PtxasKernelInfo> &kernels) {
  std::ostringstream os;
  const std::string arch = r.target.name();
  os << "kernel resources on " << arch << " (occupancy per SM: "
     << smLimits(r.target).maxThreads / 32 << " warps at most)\n";
  os << std::left << std::setw(28) << "kernel" << std::right << std::setw(8) << "threads"
     << std::setw(6) << "regs" << std::setw(14) << "spills st/ld" << std::setw(10) << "shared"
     << std::setw(10) << "dynamic" << std::setw(8) << "blocks" << std::setw(7) << "warps"
     << std::setw(7) << "occ" << "  limited by\n";
  for (const PtxasKernelInfo &k : kernels) {
    auto dyn = r.sharedBytes.find(k.name);
    auto warps = r.blockWarps.find(k.name);
    const int64_t dynamic = dyn == r.sharedBytes.end() ? 0 : dyn->second;
    const int64_t threads = 32 * (warps == r.blockWarps.end() ? 4 : warps->second);
    Occupancy o = occupancy(r.target, threads, k.registers, k.sharedBytes + dynamic);
    std::ostringstream spills, occ;
    spills << k.spillStores << "/" << k.spillLoads << " B";
    occ << int(o.fraction() * 100 + 0.5) << "%";
    os << std::left << std::setw(28) << k.name << std::right << std::setw(8) << threads
       << std::setw(6) << k.registers << std::setw(14) << spills.str() << std::setw(10)
       << k.sharedBytes << std::setw(10) << dynamic << std::setw(8) << o.blocksPerSM << std::setw(7)
       << o.warpsPerSM << std::setw(7) << occ.str() << "  " << o.limitedBy
       << (k.spillStores || k.spillLoads ? " (spills registers to local memory)" : "") << "\n";
  }
  // A kernel whose wgmmas ptxas serialized: they wait for one another.
  for (const PtxasKernelInfo &k : kernels)
    if (!k.wgmmaSerialized.empty())
      os << "remark: " << k.name << ": ptxas serializes its wgmma instructions (due to "
         << k.wgmmaSerialized << "): each waits for the one before\n";
  // For a kernel that spills: what its loops keep live, the first place to look.
  for (const PtxasKernelInfo &k : kernels) {
    auto carried = r.loopCarried.find(k.name);
    if (!(k.spillStores || k.spillLoads) || carried == r.loopCarried.end())
      continue;
    for (const std::string &line : carried->second) {
      std::string l = line;
      size_t at = l.find(": loop carries");
      if (at != std::string::npos)
        l.insert(at + 2, "remark: " + k.name + " spills " + std::to_string(k.spillStores) +
                             " B; its ");
      os << l << "\n";
    }
  }
  return os.str();
}

} // namespace

namespace {

const char *kCompileHelp = R"(usage: tessera compile FILE [options]

Compiles every @kernel in FILE (or only --kernel NAME) and prints the result.

options:
  --kernel NAME      compile only this kernel
  -D NAME=VALUE      set a constexpr parameter (int, float, True/False, a type
                     such as f16, or else a string: -D ACT=relu); repeatable;
                     overrides the kernel's default
  --emit=KIND        what to produce (default tile):
                       tile    the verified tile IR
                       layout  the tile IR with GPU layouts: tgpu encodings on
                               tiles, tgpu.convert_layout where they change
                       gpu-ir  the per-thread IR after layout lowering, before LLVM
                       llvm    optimized LLVM IR for NVPTX (libdevice linked)
                       ptx     PTX assembly
                       resources  for each kernel: block size, registers, spills,
                               shared memory (static + dynamic) and occupancy
                               (blocks and warps per SM, and what limits them),
                               from ptxas's report for the target; a remark
                               when ptxas serialized a kernel's wgmma, and why
                       cubin   a cubin assembled by ptxas; needs -o; prints ptxas's
                               resource report (registers, spills, shared memory,
                               stack) for each kernel to stderr
                     llvm, ptx and cubin hold every compiled kernel in one module
  --assume NAME=1    compile as if the i32/i64 parameter NAME were 1 (its uses
                     become the constant; the parameter stays in the signature)
  --assume NAME%16   compile as if NAME were a multiple of 16 (lets the lowering
                     prove alignment and use vector accesses); repeatable.
                     The JIT picks these facts from the launch arguments.
  --arch=SM          GPU target for llvm/ptx/cubin: sm_80, sm_90 (default), sm_90a,
                     or another sm_NN[a] that LLVM and ptxas know
  --num-warps N      warps per program instance (power of two, default 4)
  --num-stages N     shared-memory stages for loops feeding dot (1..8, default 4)
  --maxnreg N        registers a thread may use (16..255; default: ptxas's choice):
                     fewer registers, more blocks per SM, perhaps spills
  --cluster-size N   programs per thread-block cluster along x (1, 2 or 4; sm_90+:
                     PTX .reqnctapercluster)
  --no-warp-specialize  every warp copies and multiplies in pipelined dot loops
                     (default on sm_90a: a producer warpgroup copies)
  --no-tma           copy the operands of warp-specialized and ping-pong staged dot
                     loops with cp.async
                     (default on sm_90a: TMA tensor maps where the pointer and mask
                     analysis allows; the maps are extra kernel parameters)
  --no-persistent    launch one-tile matmul kernels one block per program (default
                     on sm_90a: a kernel that is index arithmetic, one warp-
                     specialized dot loop and stores walks program_id(0) from
                     one block per SM, and takes the grid's x size as an extra
                     i32 parameter after its arguments, before any tensor maps)
  --remarks          print to stderr, for each loop that computes a dot, how it was
                     software-pipelined or why not (with --emit other than tile)
  -o PATH            write the output to PATH instead of stdout
  -I DIR             also search DIR for imported files; repeatable
  --no-opt           skip canonicalization and CSE of the tile IR
  -h, --help         show this help

environment:
  TESSERA_PTXAS      ptxas to run for --emit=cubin (default /usr/local/cuda/bin/ptxas,
                     then ptxas on PATH)
  TESSERA_LIBDEVICE  libdevice.10.bc for kernels that call math functions (default
                     /usr/local/cuda/nvvm/libdevice/libdevice.10.bc)

exit codes: 0 ok, 1 errors in the input (or code generation or ptxas failed, or
ptxas is missing), 2 bad command line, 3 cannot write output
)";

} // namespace

int cmdCompile(int argc, char **argv) {
  std::string file, kernel, emit = "tile", out, arch;
  bool remarks = false;
  tessera::CompileOptions opts;
  ArgReader args(argc, argv);
  while (args.next()) {
    const std::string a = args.arg();
    std::string v, err;
    if (a == "-h" || a == "--help") {
      std::cout << kCompileHelp;
      return kOk;
    } else if (args.value("--kernel", v)) {
      kernel = v;
    } else if (args.value("--emit", v)) {
      emit = v;
    } else if (args.value("--arch", v)) {
      arch = v;
    } else if (args.value("-o", v)) {
      out = v;
    } else if (args.value("-I", v)) {
      opts.importPaths.push_back(v);
    } else if (args.value("-D", v)) {
      if (!parseDefine(v, opts.constexprs, err))
        return usageError(err, kCompileHelp);
    } else if (args.value("--assume", v)) {
      if (!parseAssume(v, opts.argFacts, err))
        return usageError(err, kCompileHelp);
    } else if (args.value("--num-warps", v)) {
      if (!parseInt("--num-warps", v, opts.numWarps, err))
        return usageError(err, kCompileHelp);
    } else if (args.value("--num-stages", v)) {
      if (!parseInt("--num-stages", v, opts.numStages, err))
        return usageError(err, kCompileHelp);
    } else if (args.value("--maxnreg", v)) {
      if (!parseMaxRegisters(v, opts.maxRegisters, err))
        return usageError(err, kCompileHelp);
    } else if (args.value("--cluster-size", v)) {
      if (!parseClusterSize(v, opts.clusterSize, err))
        return usageError(err, kCompileHelp);
    } else if (a == "--no-warp-specialize") {
      opts.warpSpecialize = false;
    } else if (a == "--no-persistent") {
      opts.persistentLaunch = false;
    } else if (a == "--no-tma") {
      opts.tma = false;
    } else if (a == "--remarks") {
      remarks = true;
    } else if (a == "--no-opt") {
      opts.optimize = false;
    } else if (args.missingValue()) {
      return usageError(a + " needs a value", kCompileHelp);
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usageError("unknown option '" + a + "'", kCompileHelp);
    } else if (file.empty()) {
      file = a;
    } else {
      return usageError("more than one input file ('" + file + "' and '" + a + "')", kCompileHelp);
    }
  }
  if (file.empty())
    return usageError("no input file", kCompileHelp);
  if (emit != "tile" && emit != "layout" && emit != "gpu-ir" && emit != "llvm" && emit != "ptx" &&
      emit != "cubin" && emit != "resources")
    return usageError("unknown --emit kind '" + emit +
                          "' (expected tile, layout, gpu-ir, llvm, ptx, cubin or resources)",
                      kCompileHelp);
  if (!arch.empty()) {
    opts.target = Target::parse(arch);
    if (!opts.target)
      return usageError("--arch expects a target such as sm_80, sm_90 or sm_90a, got '" + arch + "'",
                        kCompileHelp);
  }
  if (std::string why = opts.validate(); !why.empty())
    return usageError(why, kCompileHelp);
  arch = opts.resolvedTarget().name();
  bool cubin = emit == "cubin", resources = emit == "resources";
  if (cubin && (out.empty() || out == "-"))
    return usageError("--emit=cubin writes a binary file: give -o PATH", kCompileHelp);
  if ((cubin || resources) && findPtxas().empty()) {
    std::cerr << "tessera: error: --emit=" << emit << " needs ptxas, which was not found (looked at "
                 "$TESSERA_PTXAS, /usr/local/cuda/bin/ptxas and PATH); install the CUDA toolkit "
                 "or set TESSERA_PTXAS (--emit=ptx needs no ptxas)\n";
    return kInputError;
  }
  Stage stage = emit == "tile"     ? Stage::Tile
                : emit == "layout" ? Stage::Layout
                : emit == "gpu-ir" ? Stage::GpuIR
                : emit == "llvm"   ? Stage::LLVMIR
                                   : Stage::PTX;
  tessera::CompileResult r = tessera::compileFile(file, kernel, opts, stage);
  if (remarks)
    for (const std::string &line : r.remarks)
      std::cerr << line << "\n";
  if (!r.ok) {
    // Code generation errors (not the source's) name the step that failed.
    const std::string &d = r.diagnostics;
    bool backEnd = d.rfind("PTX generation for", 0) == 0 || d.rfind("LLVM IR generation for", 0) == 0;
    std::cerr << (backEnd ? "tessera: error: " : "") << d;
    return kInputError;
  }
  std::string result = stage == Stage::Tile     ? r.tileIR
                       : stage == Stage::Layout ? r.layoutIR
                       : stage == Stage::GpuIR  ? r.gpuIR
                       : stage == Stage::LLVMIR ? r.llvmIR
                                                : r.ptx;
  if (resources) {
    std::string binary, log;
    if (!assembleCubin(result, arch, binary, log)) {
      std::cerr << "tessera: error: ptxas failed for " << arch << ":\n"
                << log << (log.empty() || log.back() == '\n' ? "" : "\n");
      return kInputError;
    }
    result = resourceTable(r, parsePtxasLog(log));
  } else if (cubin) {
    std::string binary, log;
    if (!assembleCubin(result, arch, binary, log)) {
      std::cerr << "tessera: error: ptxas failed for " << arch << ":\n"
                << log << (log.empty() || log.back() == '\n' ? "" : "\n");
      return kInputError;
    }
    for (const PtxasKernelInfo &k : parsePtxasLog(log)) {
      auto dyn = r.sharedBytes.find(k.name);
      std::cerr << "kernel " << k.name << " (" << arch << "): registers=" << k.registers
                << " spill_stores=" << k.spillStores << " spill_loads=" << k.spillLoads
                << " shared=" << k.sharedBytes
                << " dynamic_shared=" << (dyn == r.sharedBytes.end() ? 0 : dyn->second)
                << " stack=" << k.stackBytes
                << (k.wgmmaSerialized.empty() ? "" : " wgmma_serialized=yes") << "\n";
    }
    result = std::move(binary);
  }
  return writeOutput(out, result) ? kOk : kIoError;
}

} // namespace tessera::cli
