// `tessera run`: compile one kernel, make up its arguments, launch it on the
// GPU or in the CPU interpreter (or both, and compare), and summarize.
// (The check of the kernels of kernels_dsl/basics is bench/basics_check.cpp.)
#include "backends.h"
#include "cli.h"
#include "run_args.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::cli {

namespace {

const char *kRunHelp = R"(usage: tessera run FILE [--kernel NAME] [-D NAME=VALUE...] --grid X[,Y,Z] [options] ARG...

Compiles one kernel of FILE, creates its arguments from the ARG descriptions,
launches it once and prints a summary. It runs on the GPU when there is one,
else (or with --interpret) in the CPU interpreter, which checks every memory
access against the buffers.

arguments, one per kernel parameter, in order:
  buf:N            a buffer of N elements of the parameter's pointee type, filled
                   with uniform random numbers: [-1, 1) for floats, [0, 100) for
                   integers (0 or 1 for i1)
  buf:N=VALUE      a buffer of N elements, each VALUE
  buf:N=V1,...,VN  a buffer of the N values given, in order
  out:N            a buffer of N elements filled with NaN (floats) or 0xAA bytes
                   (integers), so that elements the kernel does not write stand out
  LITERAL          a scalar of the parameter's type: 1000, -3, 1e-5, 0.5, true
                   (begin a negative literal after '--' if it looks like an option)

options:
  --kernel NAME    the kernel to run (needed when FILE holds more than one)
  -D NAME=VALUE    set a constexpr parameter; repeatable
  -I DIR           also search DIR for imported files; repeatable
  --grid X[,Y,Z]   program instances in each dimension (required)
  --num-warps N    warps per program instance on the GPU (power of two, default 4)
  --num-stages N   shared-memory pipeline stages for loops feeding dot (default 4)
  --maxnreg N      registers a thread may use on the GPU (16..255; default: ptxas's)
  --cluster-size N programs per thread-block cluster along x (1, 2 or 4; sm_90+);
                   the grid's x size must be a multiple of it
  --no-tma         copy dot operands with cp.async rather than TMA tensor maps (as
                   `tessera compile --no-tma`)
  --interpret      run in the CPU interpreter even when a GPU is present
  --no-target-check  in the interpreter, skip lowering the kernel for the target
                   first; by default a kernel that the GPU would reject (more
                   shared memory than a block may use) is rejected here too
  --check          run on the GPU and in the interpreter with the same inputs and
                   compare every buffer: max relative error = max|gpu - interp| /
                   max|interp| over the buffer (NaN in both counts as equal);
                   fails above --tol. Without a GPU it runs the interpreter only
                   and says that nothing was compared
  --tol T          tolerance for --check (default 1e-5)
  --seed S         seed of the random inputs (default 0); the same seed gives the
                   same inputs on every machine
  --iters N        GPU launches timed with events after the first (default 10;
                   0 skips timing)
  --print N        print the first N elements of every buffer after the run
  -h, --help       show this help

environment:
  TESSERA_INTERPRET=1  use the interpreter as if --interpret were given
  TESSERA_DEVICE=N     run on GPU N (default 0)
  TESSERA_CACHE_DIR    where the JIT caches compiled GPU kernels

exit codes: 0 ok, 1 compile error, launch or runtime failure, or --check found
a difference above --tol, 2 bad command line or arguments that do not match the
kernel's parameters (count, buffer vs scalar, literal vs type)
)";

// ---- running ----------------------------------------------------------------

struct RunOptions {
  std::string file, kernel;
  std::map<std::string, ConstexprValue> defines;
  std::vector<std::string> importPaths;
  Grid grid;
  bool gridGiven = false;
  int numWarps = 4;
  int numStages = 4;
  int maxRegisters = 0;
  int clusterSize = 1;
  bool tma = true;
  bool interpret = false, check = false;
  bool targetCheck = true;
  uint64_t seed = 0;
  double tol = 1e-5;
  int iters = 10;
  size_t print = 0;
  std::vector<ArgSpec> args;
};

/// What one backend's run produced.
struct Outcome {
  std::vector<std::vector<unsigned char>> buffers; // contents after the launch
  double launchMs = 0;   // the first launch (interpreter: wall clock)
  double timedMs = -1;   // GPU: mean over --iters launches, -1 when not timed
  int registers = -1;    // GPU: from the loaded function
  size_t localBytes = 0; // GPU: spills + stack per thread
  unsigned launchedX = 0; // GPU, a persistent kernel: the blocks launched along x
};

enum class RunStatus { Ok, Failed, BadArgs };

RunStatus runOn(Context &ctx, const Kernel &kernel, const Inputs &in, const RunOptions &o,
                Outcome &out) {
  std::vector<DeviceMemory> mem = uploadInputs(ctx, in);
  std::vector<ArgValue> args = launchArgs(in, mem);
  try {
    checkLaunchArgs(kernel.signature(), args);
  } catch (const Error &e) {
    std::cerr << "tessera: error: " << e.what() << "\n";
    return RunStatus::BadArgs;
  }
  if (!ctx.isInterpreter()) {
    // The variant these arguments select (the JIT specializes on them).
    detail::KernelVariant v = kernel.variantFor(args);
    FunctionAttributes a = v.function.attributes();
    out.registers = a.numRegisters;
    out.localBytes = a.localBytes;
    if (v.residentBlocks)
      out.launchedX = detail::persistentGrid(o.grid, v.residentBlocks).x;
  }
  auto t0 = std::chrono::steady_clock::now();
  kernel.launchWithArgs(ctx.stream(), o.grid, args);
  ctx.synchronize();
  out.launchMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  out.buffers.clear();
  for (size_t k = 0; k < in.buffers.size(); ++k) {
    std::vector<unsigned char> host(in.buffers[k].bytes.size());
    if (!host.empty())
      mem[k].copyToHost(host.data(), host.size());
    out.buffers.push_back(std::move(host));
  }
  if (!ctx.isInterpreter() && o.iters > 0) {
    kernel.launchWithArgs(ctx.stream(), o.grid, args); // warm-up
    Event start = ctx.createEvent(), end = ctx.createEvent();
    start.record(ctx.stream());
    for (int i = 0; i < o.iters; ++i)
      kernel.launchWithArgs(ctx.stream(), o.grid, args);
    end.record(ctx.stream());
    end.synchronize();
    out.timedMs = double(Event::elapsedMs(start, end)) / o.iters;
  }
  return RunStatus::Ok;
}

struct Comparison {
  std::string name;
  double relErr = 0;
  size_t mismatches = 0;
  size_t firstBad = 0;
  double gpuValue = 0, refValue = 0;
  bool ok = true;
};

Comparison compareBuffer(const HostBuffer &b, const std::vector<unsigned char> &gpu,
                         const std::vector<unsigned char> &ref, double tol) {
  Comparison c;
  c.name = b.name;
  size_t eb = elementBytes(b.type);
  double maxRef = 0, maxDiff = 0;
  bool nanMismatch = false;
  for (size_t i = 0; i < b.count; ++i) {
    double r = elementValue(ref.data() + i * eb, b.type);
    if (std::isfinite(r))
      maxRef = std::max(maxRef, std::fabs(r));
  }
  double scale = maxRef > 0 ? maxRef : 1.0;
  for (size_t i = 0; i < b.count; ++i) {
    double g = elementValue(gpu.data() + i * eb, b.type);
    double r = elementValue(ref.data() + i * eb, b.type);
    double d;
    if (std::isnan(g) && std::isnan(r))
      d = 0;
    else if (std::isnan(g) || std::isnan(r))
      d = INFINITY, nanMismatch = true;
    else if (g == r) // also equal infinities
      d = 0;
    else
      d = std::fabs(g - r);
    if (d / scale > tol || std::isnan(d)) {
      if (c.mismatches++ == 0) {
        c.firstBad = i;
        c.gpuValue = g;
        c.refValue = r;
      }
    }
    maxDiff = std::max(maxDiff, d);
  }
  c.relErr = nanMismatch ? INFINITY : maxDiff / scale;
  c.ok = c.mismatches == 0;
  return c;
}

/// Everything one `tessera run` produced, for the printers.
struct Report {
  std::string kernel;
  bool onGpu = false, checked = false, ok = true;
  Outcome gpu, interp;
  std::vector<Comparison> comparisons;
  size_t totalBytes = 0;
};

/// Compiles, builds the inputs, runs and compares. Prints errors; returns the exit code.
int execute(Backends &be, const RunOptions &o, Report &rep, Inputs &in) {
  rep.kernel = o.kernel;
  JitOptions jo;
  jo.numWarps = o.numWarps;
  jo.numStages = o.numStages;
  jo.maxRegisters = o.maxRegisters;
  jo.clusterSize = o.clusterSize;
  jo.tma = o.tma;
  jo.importPaths = o.importPaths;
  jo.checkTargetResources = o.targetCheck;
  Kernel gk, ik;
  try {
    if (be.gpu)
      gk = compile(*be.gpu, o.file, o.kernel, o.defines, jo);
    if (be.interp)
      ik = compile(*be.interp, o.file, o.kernel, o.defines, jo);
  } catch (const std::exception &e) {
    std::string msg = e.what();
    std::cerr << msg << (msg.empty() || msg.back() == '\n' ? "" : "\n");
    return kInputError;
  }
  const KernelSignature &sig = be.gpu ? gk.signature() : ik.signature();
  if (!makeInputs(sig, o.args, o.seed, in))
    return kUsage;
  rep.totalBytes = in.totalBytes;
  const char *where = "on the GPU";
  try {
    if (be.gpu) {
      rep.onGpu = true;
      if (runOn(*be.gpu, gk, in, o, rep.gpu) == RunStatus::BadArgs)
        return kUsage;
    }
    where = "in the interpreter";
    if (be.interp) {
      RunOptions io = o;
      io.iters = 0;
      if (runOn(*be.interp, ik, in, io, rep.interp) == RunStatus::BadArgs)
        return kUsage;
    }
  } catch (const std::exception &e) {
    std::string msg = e.what();
    std::cerr << "tessera: error: running '" << o.kernel << "' " << where << " failed: " << msg << (msg.empty() || msg.back() == '\n' ? "" : "\n");
    return kInputError;
  }
  if (be.gpu && be.interp) {
    rep.checked = true;
    for (size_t k = 0; k < in.buffers.size(); ++k) {
      rep.comparisons.push_back(
          compareBuffer(in.buffers[k], rep.gpu.buffers[k], rep.interp.buffers[k], o.tol));
      rep.ok &= rep.comparisons.back().ok;
    }
  }
  return rep.ok ? kOk : kInputError;
}

/// One element for --print: integers exactly, floats with 6 significant digits.
std::string elementText(const unsigned char *p, ScalarType t) {
  if (isFloat(t))
    return formatDouble(elementValue(p, t), "%.6g");
  if (t == ScalarType::i64) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return std::to_string(v);
  }
  return std::to_string(int64_t(elementValue(p, t)));
}

void printBuffers(const Inputs &in, const Outcome &out, size_t n) {
  for (size_t k = 0; k < in.buffers.size(); ++k) {
    const HostBuffer &b = in.buffers[k];
    size_t eb = elementBytes(b.type);
    std::cout << b.name << ":";
    for (size_t i = 0; i < std::min(n, b.count); ++i)
      std::cout << " " << elementText(out.buffers[k].data() + i * eb, b.type);
    if (b.count > n)
      std::cout << " ...";
    std::cout << "\n";
  }
}

void printReport(const Backends &be, const RunOptions &o, const Report &rep, const Inputs &in) {
  std::cout << "kernel " << o.kernel << " (" << o.file << "), grid " << gridText(o.grid);
  if (rep.onGpu)
    std::cout << ", " << o.numWarps << (o.numWarps == 1 ? " warp" : " warps");
  std::cout << ", seed " << o.seed << "\n";
  std::string bufs;
  for (const HostBuffer &b : in.buffers)
    bufs += (bufs.empty() ? "" : ", ") + b.name + " " + scalarTypeName(b.type) + "[" +
            std::to_string(b.count) + "]" + (b.output ? " out" : "");
  if (!bufs.empty())
    std::cout << "buffers: " << bufs << " (" << humanBytes(double(in.totalBytes)) << ")\n";
  if (rep.onGpu) {
    std::cout << "gpu: " << be.gpu->deviceName() << " (" << be.gpu->target() << ")";
    if (rep.gpu.registers >= 0)
      std::cout << ", " << rep.gpu.registers << " registers, " << rep.gpu.localBytes
                << " B local memory per thread";
    if (rep.gpu.launchedX)
      std::cout << "; launched persistent: " << rep.gpu.launchedX << " blocks walk the grid's "
                << o.grid.x << " programs along x";
    std::cout << "\n";
    if (rep.gpu.timedMs >= 0) {
      double gbs = double(in.totalBytes) / (rep.gpu.timedMs * 1e6);
      std::cout << "time: " << humanTime(rep.gpu.timedMs) << " per launch (mean of " << o.iters
                << " after a warm-up); buffers " << humanBytes(double(in.totalBytes))
                << " -> " << formatDouble(gbs, "%.1f") << " GB/s if each byte moves once\n";
    }
  }
  if (be.interp)
    std::cout << "interpreter: " << humanTime(rep.interp.launchMs) << " for the launch (CPU)\n";
  if (rep.checked) {
    for (const Comparison &c : rep.comparisons) {
      std::cout << "check " << c.name << ": max rel err " << formatDouble(c.relErr, "%.3e")
                << (c.ok ? "  ok" : "  FAIL");
      if (!c.ok)
        std::cout << " (" << c.mismatches << " elements above tol " << formatDouble(o.tol, "%g")
                  << "; first [" << c.firstBad << "]: gpu " << formatDouble(c.gpuValue, "%.9g")
                  << ", interpreter " << formatDouble(c.refValue, "%.9g") << ")";
      std::cout << "\n";
    }
  }
  if (o.print)
    printBuffers(in, rep.onGpu ? rep.gpu : rep.interp, o.print);
  std::cout << (rep.ok ? "ok" : "FAILED: the GPU and the interpreter disagree") << "\n";
}

bool parseGrid(const std::string &text, Grid &g) {
  std::vector<unsigned long long> v;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    unsigned long long n;
    if (!parseUnsigned(part, n) || n == 0 || n > 0x7fffffffull)
      return false;
    v.push_back(n);
  }
  if (v.empty() || v.size() > 3 || text.back() == ',')
    return false;
  if ((v.size() > 1 && v[1] > 65535) || (v.size() > 2 && v[2] > 65535))
    return false;
  g = Grid{unsigned(v[0]), v.size() > 1 ? unsigned(v[1]) : 1u, v.size() > 2 ? unsigned(v[2]) : 1u};
  return true;
}

} // namespace

int cmdRun(int argc, char **argv) {
  RunOptions o;
  bool endOfOptions = false;
  std::vector<std::string> positional;
  ArgReader args(argc, argv);
  while (args.next()) {
    const std::string a = args.arg();
    std::string v, err;
    if (endOfOptions || a.empty() || a[0] != '-' || a == "-" || looksLikeNumber(a)) {
      positional.push_back(a);
    } else if (a == "--") {
      endOfOptions = true;
    } else if (a == "-h" || a == "--help") {
      std::cout << kRunHelp;
      return kOk;
    } else if (args.value("--kernel", v)) {
      o.kernel = v;
    } else if (args.value("-D", v)) {
      if (!parseDefine(v, o.defines, err))
        return usageError(err, kRunHelp);
    } else if (args.value("-I", v)) {
      o.importPaths.push_back(v);
    } else if (args.value("--grid", v)) {
      if (!parseGrid(v, o.grid))
        return usageError("--grid expects X, X,Y or X,Y,Z with positive integers (Y, Z at most "
                          "65535), got '" + v + "'", kRunHelp);
      o.gridGiven = true;
    } else if (args.value("--num-warps", v)) {
      if (!parseNumWarps(v, o.numWarps, err))
        return usageError(err, kRunHelp);
    } else if (args.value("--num-stages", v)) {
      if (!parseNumStages(v, o.numStages, err))
        return usageError(err, kRunHelp);
    } else if (args.value("--maxnreg", v)) {
      if (!parseMaxRegisters(v, o.maxRegisters, err))
        return usageError(err, kRunHelp);
    } else if (args.value("--cluster-size", v)) {
      if (!parseClusterSize(v, o.clusterSize, err))
        return usageError(err, kRunHelp);
    } else if (a == "--no-tma") {
      o.tma = false;
    } else if (a == "--interpret") {
      o.interpret = true;
    } else if (a == "--no-target-check") {
      o.targetCheck = false;
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--basics") {
      return usageError("--basics is now its own tool: run basics_check (build/bin/basics_check)",
                        kRunHelp);
    } else if (args.value("--tol", v)) {
      char *end = nullptr;
      o.tol = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.tol >= 0))
        return usageError("--tol expects a non-negative number, got '" + v + "'", kRunHelp);
    } else if (args.value("--seed", v)) {
      unsigned long long s;
      if (!parseUnsigned(v, s))
        return usageError("--seed expects a non-negative integer, got '" + v + "'", kRunHelp);
      o.seed = s;
    } else if (args.value("--iters", v)) {
      unsigned long long n;
      if (!parseUnsigned(v, n) || n > 1000000)
        return usageError("--iters expects an integer from 0 to 1000000, got '" + v + "'", kRunHelp);
      o.iters = int(n);
    } else if (args.value("--print", v)) {
      unsigned long long n;
      if (!parseUnsigned(v, n))
        return usageError("--print expects a non-negative integer, got '" + v + "'", kRunHelp);
      o.print = size_t(n);
    } else if (args.missingValue()) {
      return usageError(a + " needs a value", kRunHelp);
    } else {
      return usageError("unknown option '" + a + "'", kRunHelp);
    }
  }
  if (o.interpret && o.check)
    return usageError("--check compares the GPU with the interpreter; it cannot be combined with "
                      "--interpret", kRunHelp);
  if (positional.empty())
    return usageError("no input file", kRunHelp);
  o.file = positional[0];
  if (!o.gridGiven)
    return usageError("--grid is required (program instances, e.g. --grid 4 or --grid 8,2)", kRunHelp);
  for (size_t i = 1; i < positional.size(); ++i) {
    ArgSpec spec;
    std::string err;
    if (!parseArgSpec(positional[i], spec, err))
      return usageError("argument " + std::to_string(i) + ": " + err, kRunHelp);
    o.args.push_back(spec);
  }
  if (int rc = chooseKernel(o.file, o.kernel, kRunHelp); rc != kOk)
    return rc;

  Backends be = openBackends(o.interpret, o.check);
  Report rep;
  Inputs in;
  int rc = execute(be, o, rep, in);
  if (rc == kOk || (rc == kInputError && rep.checked))
    printReport(be, o, rep, in);
  return rc;
}

} // namespace tessera::cli
