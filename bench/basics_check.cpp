// basics_check: the correctness check of the basic kernels that `./setup.sh
// main` runs (it was `tessera run --basics`). Each of vector_add, softmax,
// layer_norm_fwd and matmul of kernels_dsl/basics runs at two ragged sizes:
//   - on a GPU: on the GPU and in the CPU interpreter with the same inputs,
//     every buffer compared (max|gpu - interp| / max|interp|, at most --tol),
//     and both against an fp64 reference;
//   - without one (or with --interpret): in the interpreter, which checks
//     every memory access, against the fp64 reference.
// The references and the error measure are tests/support/Reference.h's.
//
//   basics_check [--interpret] [--seed S] [--tol T] [--iters N] [--kernels-dir DIR]
//
// Exit codes: 0 every case passed, 1 a case failed (or no kernels found),
// 2 bad command line.
#include "backends.h"
#include "report_format.h"
#include "support/Reference.h"
#include "tessera/tessera.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tessera;
using tessera::cli::Backends;
using tessera::cli::formatDouble;
using tessera::cli::gridText;
using tessera::cli::humanTime;
using tessera::cli::openContexts;
using tessera::testing::compareMaxNorm;
using tessera::testing::MaxNormComparison;

namespace {

const char *kHelp = R"(usage: basics_check [--interpret] [--seed S] [--tol T] [--iters N] [--kernels-dir DIR]

Runs vector_add, softmax, layer_norm_fwd and matmul of kernels_dsl/basics at
ragged sizes (8 cases). On a GPU each case runs on the GPU and in the CPU
interpreter with the same inputs, and every buffer is compared: max relative
error = max|gpu - interp| / max|interp| (NaN in both counts as equal), at most
--tol. Without a GPU (or with --interpret) the interpreter runs alone and
checks every memory access. Every result is also compared with an fp64 CPU
reference: max relative error 1e-4; 2e-3 for the f32 matmul, whose dot runs on
tf32 tensor cores on sm_90a (that tolerance also replaces --tol).

options:
  --interpret      run in the CPU interpreter even when a GPU is present
  --tol T          tolerance of the GPU against the interpreter (default 1e-5)
  --seed S         seed of the random inputs (default 0)
  --iters N        GPU launches timed with events after the first (default 10;
                   0 skips timing)
  --kernels-dir D  the kernels_dsl directory (default $TESSERA_KERNELS_DIR,
                   ./kernels_dsl, or the source tree the tool was built from)
  -h, --help       show this help

environment:
  TESSERA_INTERPRET=1  use the interpreter as if --interpret were given
  TESSERA_DEVICE=N     run on GPU N (default 0)
  TESSERA_CACHE_DIR    where the JIT caches compiled GPU kernels

exit codes: 0 every case passed, 1 a case failed or no kernels were found,
2 bad command line
)";

constexpr int kOk = 0, kFailed = 1, kUsage = 2;

/// Largest max|out - ref| / max|ref| accepted against the fp64 reference.
constexpr double kReferenceTol = 1e-4;

struct Options {
  bool interpret = false;
  uint64_t seed = 0;
  double tol = 1e-5;
  int iters = 10;
  std::string kernelsDir;
};


bool isFile(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string findKernelsDir(const std::string &given) {
  if (!given.empty())
    return given;
  if (const char *env = std::getenv("TESSERA_KERNELS_DIR"); env && *env)
    return env;
  std::vector<std::string> candidates{"kernels_dsl"};
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, size_t(n));
    dir = dir.substr(0, dir.rfind('/'));              // build/bin
    candidates.push_back(dir + "/../../kernels_dsl"); // <repo>/build/bin -> <repo>
  }
#ifdef TESSERA_SOURCE_DIR
  candidates.push_back(std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl");
#endif
  for (const std::string &c : candidates)
    if (isFile(c + "/basics/vector_add.tile"))
      return c;
  return "kernels_dsl";
}

// ---- cases ------------------------------------------------------------------

/// One kernel argument: an f32 buffer (random input, or output filled with
/// NaN so that elements the kernel does not write stand out) or a scalar.
struct Arg {
  enum Kind { In, Out, Scalar } kind;
  size_t count = 0;
  ArgValue scalar;
  static Arg in(size_t n) { return {In, n, {}}; }
  static Arg out(size_t n) { return {Out, n, {}}; }
  static Arg i32(long long v) { return {Scalar, 0, ArgValue::scalar(int32_t(v))}; }
  static Arg f32(float v) { return {Scalar, 0, ArgValue::scalar(v)}; }
};

using Buffers = std::vector<std::vector<float>>;
/// Expected contents of some buffers (by buffer index) from the inputs.
using Expected = std::map<size_t, std::vector<double>>;

struct Case {
  std::string file, kernel, shape;
  std::map<std::string, ConstexprValue> constexprs;
  int numWarps;
  Grid grid;
  std::vector<Arg> args;
  std::function<Expected(const Buffers &)> reference;
  /// Tolerance of both comparisons when not the defaults: an f32 dot runs on
  /// tf32 tensor cores where the target has wgmma (operands keep 10 mantissa
  /// bits), while the interpreter computes in fp32.
  double tol = 0;
};

std::vector<Case> basicCases(const std::string &dir) {
  namespace ref = tessera::testing;
  auto s = [](long long v) { return std::to_string(v); };
  auto cdivll = [](long long a, long long b) { return (a + b - 1) / b; };
  std::vector<Case> cases;
  std::string b = dir + "/basics/";
  for (long long n : {1000LL, 4099LL})
    cases.push_back({b + "vector_add.tile", "vector_add", "n=" + s(n), {{"BLOCK", int64_t(1024)}},
                     4, Grid{unsigned(cdivll(n, 1024))},
                     {Arg::in(size_t(n)), Arg::in(size_t(n)), Arg::out(size_t(n)), Arg::i32(n)},
                     [](const Buffers &in) {
                       std::vector<double> z(in[0].size());
                       for (size_t i = 0; i < z.size(); ++i)
                         z[i] = double(in[0][i]) + double(in[1][i]);
                       return Expected{{2, z}};
                     }});
  for (auto [rows, cols, block] :
       {std::tuple<long long, long long, long long>{7, 1000, 1024}, {33, 77, 128}})
    cases.push_back({b + "softmax.tile", "softmax", s(rows) + "x" + s(cols),
                     {{"BLOCK", int64_t(block)}}, 8, Grid{unsigned(rows)},
                     {Arg::in(size_t(rows * cols)), Arg::out(size_t(rows * cols)), Arg::i32(cols),
                      Arg::i32(cols), Arg::i32(cols)},
                     [rows = size_t(rows), cols = size_t(cols)](const Buffers &in) {
                       return Expected{{1, ref::softmaxRef(in[0], rows, cols)}};
                     }});
  for (auto [rows, cols] : {std::pair<long long, long long>{5, 1000}, {3, 3000}})
    cases.push_back({b + "layer_norm.tile", "layer_norm_fwd", s(rows) + "x" + s(cols),
                     {{"BLOCK", int64_t(1024)}}, 4, Grid{unsigned(rows)},
                     {Arg::in(size_t(rows * cols)), Arg::out(size_t(rows * cols)),
                      Arg::in(size_t(cols)), Arg::in(size_t(cols)), Arg::out(size_t(rows)),
                      Arg::out(size_t(rows)), Arg::i32(cols), Arg::i32(cols), Arg::f32(1e-5f)},
                     [rows = size_t(rows), cols = size_t(cols)](const Buffers &in) {
                       ref::LayerNormRef r =
                           ref::layerNormRef(in[0], in[2], in[3], rows, cols, double(1e-5f));
                       return Expected{{1, r.y}, {4, r.mean}, {5, r.rstd}};
                     }});
  for (auto [M, N, K] : {std::tuple<long long, long long, long long>{100, 70, 33}, {64, 64, 16}})
    cases.push_back(
        {b + "matmul.tile", "matmul", s(M) + "x" + s(N) + "x" + s(K),
         {{"BM", int64_t(64)}, {"BN", int64_t(64)}, {"BK", int64_t(16)}, {"GROUP", int64_t(4)}},
         4, Grid{unsigned(cdivll(M, 64) * cdivll(N, 64))},
         {Arg::in(size_t(M * K)), Arg::in(size_t(K * N)), Arg::out(size_t(M * N)), Arg::i32(M),
          Arg::i32(N), Arg::i32(K), Arg::i32(K), Arg::i32(1), Arg::i32(N), Arg::i32(1),
          Arg::i32(N), Arg::i32(1)},
         [M = size_t(M), N = size_t(N), K = size_t(K)](const Buffers &in) {
           return Expected{{2, ref::matmulRef(in[0], in[1], M, N, K)}};
         },
         2e-3});
  return cases;
}

/// The buffers' initial contents: inputs uniform in [-1, 1) from the top 24
/// bits of a 64-bit Mersenne Twister seeded with `seed` (one per case, drawn
/// in argument order, as `tessera run` draws its buf:N arguments), outputs NaN.
Buffers makeBuffers(const Case &c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Buffers bufs;
  for (const Arg &a : c.args) {
    if (a.kind == Arg::Scalar)
      continue;
    std::vector<float> v(a.count, std::numeric_limits<float>::quiet_NaN());
    if (a.kind == Arg::In)
      for (float &x : v)
        x = float(double(rng() >> 40) * 0x1p-24 * 2.0 - 1.0);
    bufs.push_back(std::move(v));
  }
  return bufs;
}

// ---- running ----------------------------------------------------------------

/// What one backend's run produced.
struct Outcome {
  Buffers buffers;     // contents after the launch
  double launchMs = 0; // the first launch, wall clock
  double timedMs = -1; // GPU: mean over `iters` launches, -1 when not timed
};

Outcome runOn(Context &ctx, const Kernel &kernel, const Case &c, const Buffers &initial,
              int iters) {
  std::vector<DeviceMemory> mem;
  std::vector<ArgValue> args;
  size_t next = 0;
  for (const Arg &a : c.args) {
    if (a.kind == Arg::Scalar) {
      args.push_back(a.scalar);
      continue;
    }
    const std::vector<float> &host = initial[next++];
    mem.push_back(ctx.allocBytes(host.size() * sizeof(float)));
    if (!host.empty())
      mem.back().copyFromHost(host.data(), host.size() * sizeof(float));
    args.push_back(ArgValue::pointer(ScalarType::f32, mem.back().address()));
  }
  Outcome out;
  auto t0 = std::chrono::steady_clock::now();
  kernel.launchWithArgs(ctx.stream(), c.grid, args);
  ctx.synchronize();
  out.launchMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t k = 0; k < mem.size(); ++k) {
    std::vector<float> host(initial[k].size());
    if (!host.empty())
      mem[k].copyToHost(host.data(), host.size() * sizeof(float));
    out.buffers.push_back(std::move(host));
  }
  if (!ctx.isInterpreter() && iters > 0) {
    kernel.launchWithArgs(ctx.stream(), c.grid, args); // warm-up
    Event start = ctx.createEvent(), end = ctx.createEvent();
    start.record(ctx.stream());
    for (int i = 0; i < iters; ++i)
      kernel.launchWithArgs(ctx.stream(), c.grid, args);
    end.record(ctx.stream());
    end.synchronize();
    out.timedMs = double(Event::elapsedMs(start, end)) / iters;
  }
  return out;
}

/// The name of buffer `k` of `c` (its parameter's name).
std::string bufferName(const KernelSignature &sig, const Case &c, size_t k) {
  size_t seen = 0;
  for (size_t i = 0; i < c.args.size() && i < sig.params.size(); ++i)
    if (c.args[i].kind != Arg::Scalar && seen++ == k)
      return sig.params[i].name;
  return "buffer " + std::to_string(k);
}

/// Runs one case; prints its line (and any error) and returns whether it passed.
bool runCase(const Backends &be, const Case &c, const Options &o) {
  char line[512];
  std::snprintf(line, sizeof line, "%-15s %-12s grid %-8s", c.kernel.c_str(), c.shape.c_str(),
                gridText(c.grid).c_str());
  auto fail = [&](const std::string &msg) {
    std::cerr << msg << (msg.empty() || msg.back() == '\n' ? "" : "\n");
    std::cout << line << "  FAIL (see above)\n";
    return false;
  };
  JitOptions jo;
  jo.numWarps = c.numWarps;
  Kernel gk, ik;
  try {
    if (be.gpu)
      gk = compile(*be.gpu, c.file, c.kernel, c.constexprs, jo);
    ik = compile(*be.interp, c.file, c.kernel, c.constexprs, jo);
  } catch (const std::exception &e) {
    return fail(e.what()); // the rendered diagnostics
  }
  const KernelSignature &sig = ik.signature();
  Buffers initial = makeBuffers(c, o.seed);
  Outcome gpu, interp;
  const char *where = "on the GPU";
  try {
    if (be.gpu)
      gpu = runOn(*be.gpu, gk, c, initial, o.iters);
    where = "in the interpreter";
    interp = runOn(*be.interp, ik, c, initial, 0);
  } catch (const std::exception &e) {
    return fail(std::string("basics_check: error: running '") + c.kernel + "' " + where +
                " failed: " + e.what());
  }
  std::cout << line;
  if (be.gpu && gpu.timedMs >= 0)
    std::cout << "  gpu " << humanTime(gpu.timedMs);
  std::cout << "  interpreter " << humanTime(interp.launchMs);

  // The GPU against the interpreter, every buffer.
  struct Difference {
    size_t buffer;
    MaxNormComparison cmp;
  };
  std::vector<Difference> differences;
  if (be.gpu) {
    double tol = c.tol > 0 ? c.tol : o.tol, worst = 0;
    std::string worstName;
    for (size_t k = 0; k < initial.size(); ++k) {
      MaxNormComparison cmp = compareMaxNorm(gpu.buffers[k], interp.buffers[k], tol);
      if (cmp.relErr >= worst) {
        worst = cmp.relErr;
        worstName = bufferName(sig, c, k);
      }
      if (cmp.above)
        differences.push_back({k, cmp});
    }
    std::cout << "  gpu~interp " << formatDouble(worst, "%.1e") << " (" << worstName << ")";
  }

  // Both backends against the fp64 reference of the same inputs.
  Expected expected = c.reference(initial);
  double worst = 0;
  std::string which;
  for (const Outcome *out : {be.gpu ? &gpu : nullptr, &interp}) {
    if (!out)
      continue;
    for (const auto &[k, want] : expected) {
      double e = testing::relErrMax(out->buffers[k], want);
      if (e >= worst) {
        worst = e;
        which = bufferName(sig, c, k);
      }
    }
  }
  bool refOk = worst <= (c.tol > 0 ? c.tol : kReferenceTol);
  std::cout << "  fp64 ref " << formatDouble(worst, "%.1e") << " (" << which << ")";
  if (c.tol > 0)
    std::cout << "  [tf32 tol " << formatDouble(c.tol, "%g") << "]";

  bool ok = differences.empty() && refOk;
  std::cout << (ok ? "  ok" : "  FAIL") << "\n";
  for (const Difference &d : differences)
    std::cout << "    " << bufferName(sig, c, d.buffer) << ": " << d.cmp.above
              << " elements above tol; first [" << d.cmp.first << "]: gpu "
              << formatDouble(gpu.buffers[d.buffer][d.cmp.first], "%.9g") << ", interpreter "
              << formatDouble(interp.buffers[d.buffer][d.cmp.first], "%.9g") << "\n";
  return ok;
}

int run(const Options &o) {
  std::string dir = findKernelsDir(o.kernelsDir);
  if (!isFile(dir + "/basics/vector_add.tile")) {
    std::cerr << "basics_check: error: no kernels_dsl/basics found (looked in '" << dir
              << "'); pass --kernels-dir DIR or set TESSERA_KERNELS_DIR\n";
    return kFailed;
  }
  Backends be = openContexts(o.interpret, /*withInterpreter=*/true);
  std::string refText = "fp64 references (tol " + formatDouble(kReferenceTol, "%g") + ")";
  if (be.gpu)
    std::cout << "basics on " << be.gpu->deviceName() << " (" << be.gpu->target()
              << "): the GPU against the CPU interpreter (tol " << formatDouble(o.tol, "%g")
              << ") and both against " << refText << ", seed " << o.seed << "\n";
  else
    std::cout << "basics in the CPU interpreter ("
              << (o.interpret          ? std::string("--interpret")
                  : be.byEnvironment ? std::string("TESSERA_INTERPRET is set")
                                     : "no GPU found: " + be.noGpuReason)
              << "): against " << refText << ", memory accesses bounds-checked, seed " << o.seed
              << "\n";
  int failed = 0, total = 0;
  for (const Case &c : basicCases(dir)) {
    ++total;
    if (!runCase(be, c, o))
      ++failed;
  }
  if (failed)
    std::cout << "basics: " << failed << " of " << total << " failed\n";
  else
    std::cout << "basics: all " << total << " passed"
              << (be.gpu ? " (GPU, interpreter and fp64 references agree)"
                         : " (interpreter and fp64 references agree; no GPU run)")
              << "\n";
  return failed ? kFailed : kOk;
}

int usage(const std::string &message) {
  std::cerr << "basics_check: error: " << message << "\n"
            << "run 'basics_check --help' for the options\n";
  return kUsage;
}

bool parseUnsigned(const std::string &s, unsigned long long &out) {
  if (s.empty() || s[0] < '0' || s[0] > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtoull(s.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    // --name VALUE or --name=VALUE.
    auto value = [&](const char *name) {
      std::string n = name;
      if (a == n) {
        if (i + 1 >= argc)
          return false;
        v = argv[++i];
        return true;
      }
      if (a.rfind(n + "=", 0) == 0) {
        v = a.substr(n.size() + 1);
        return true;
      }
      return false;
    };
    unsigned long long n = 0;
    if (a == "-h" || a == "--help") {
      std::cout << kHelp;
      return kOk;
    } else if (a == "--interpret") {
      o.interpret = true;
    } else if (value("--tol")) {
      char *end = nullptr;
      o.tol = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.tol >= 0))
        return usage("--tol expects a non-negative number, got '" + v + "'");
    } else if (value("--seed")) {
      if (!parseUnsigned(v, n))
        return usage("--seed expects a non-negative integer, got '" + v + "'");
      o.seed = n;
    } else if (value("--iters")) {
      if (!parseUnsigned(v, n) || n > 1000000)
        return usage("--iters expects an integer from 0 to 1000000, got '" + v + "'");
      o.iters = int(n);
    } else if (value("--kernels-dir")) {
      o.kernelsDir = v;
    } else if (a == "--tol" || a == "--seed" || a == "--iters" || a == "--kernels-dir") {
      return usage(a + " needs a value");
    } else {
      return usage("unexpected argument '" + a + "'");
    }
  }
  return run(o);
}
