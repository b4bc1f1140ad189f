// `tessera run`: compile one kernel, make up its arguments, launch it on the
// GPU or in the CPU interpreter (or both, and compare), and summarize.
// (The check of the kernels of kernels_dsl/basics is bench/basics_check.cpp.)
#include "cli.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
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
  --interpret      run in the CPU interpreter even when a GPU is present
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

// ---- arguments --------------------------------------------------------------

struct ArgSpec {
  enum Kind { Random, Fill, Output, Scalar } kind = Scalar;
  size_t count = 0;
  std::string text;   // the whole argument, for messages
  std::string value;  // Fill: VALUE; Scalar: the literal
};

bool parseArgSpec(const std::string &text, ArgSpec &spec, std::string &error) {
  spec = ArgSpec{};
  spec.text = text;
  auto bufferCount = [&](const std::string &rest) -> bool {
    unsigned long long n = 0;
    if (!parseUnsigned(rest, n) || n > (1ull << 40)) {
      error = "cannot parse '" + text + "': expected buf:N, buf:N=VALUE or out:N with N an element count";
      return false;
    }
    spec.count = size_t(n);
    return true;
  };
  if (text.rfind("buf:", 0) == 0) {
    std::string rest = text.substr(4);
    auto eq = rest.find('=');
    if (eq != std::string::npos) {
      spec.kind = ArgSpec::Fill;
      spec.value = rest.substr(eq + 1);
      rest = rest.substr(0, eq);
    } else {
      spec.kind = ArgSpec::Random;
    }
    return bufferCount(rest);
  }
  if (text.rfind("out:", 0) == 0) {
    spec.kind = ArgSpec::Output;
    return bufferCount(text.substr(4));
  }
  if (text.empty()) {
    error = "empty kernel argument";
    return false;
  }
  spec.kind = ArgSpec::Scalar;
  spec.value = text;
  return true;
}

bool looksLikeNumber(const std::string &s) {
  if (s.empty())
    return false;
  char *end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

size_t elementBytes(ScalarType t) {
  switch (t) {
  case ScalarType::i1:
  case ScalarType::i8:
  case ScalarType::u8:
    return 1;
  case ScalarType::i16:
  case ScalarType::f16:
  case ScalarType::bf16:
    return 2;
  case ScalarType::i32:
  case ScalarType::f32:
    return 4;
  case ScalarType::i64:
  case ScalarType::f64:
    return 8;
  }
  return 4;
}

/// Parses `text` as a value of type `t` into an ArgValue (a scalar argument).
bool parseScalar(const std::string &text, ScalarType t, ArgValue &out) {
  if (t == ScalarType::i1) {
    if (text == "true" || text == "True" || text == "1")
      out = ArgValue::scalar(true);
    else if (text == "false" || text == "False" || text == "0")
      out = ArgValue::scalar(false);
    else
      return false;
    return true;
  }
  char *end = nullptr;
  if (isFloat(t)) {
    errno = 0;
    double d = std::strtod(text.c_str(), &end);
    if (text.empty() || *end)
      return false;
    switch (t) {
    case ScalarType::f16: out = ArgValue::scalar(f16(float(d))); break;
    case ScalarType::bf16: out = ArgValue::scalar(bf16(float(d))); break;
    case ScalarType::f32: out = ArgValue::scalar(float(d)); break;
    default: out = ArgValue::scalar(d); break;
    }
    return true;
  }
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE)
    return false;
  switch (t) {
  case ScalarType::i8:
    if (v < -128 || v > 127) return false;
    out = ArgValue::scalar(int8_t(v));
    return true;
  case ScalarType::u8:
    if (v < 0 || v > 255) return false;
    out = ArgValue::scalar(uint8_t(v));
    return true;
  case ScalarType::i16:
    if (v < -32768 || v > 32767) return false;
    out = ArgValue::scalar(int16_t(v));
    return true;
  case ScalarType::i32:
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return false;
    out = ArgValue::scalar(int32_t(v));
    return true;
  default:
    out = ArgValue::scalar(int64_t(v));
    return true;
  }
}

/// One element of type `t` as a double.
double elementValue(const unsigned char *p, ScalarType t) {
  switch (t) {
  case ScalarType::i1: return *p ? 1 : 0;
  case ScalarType::i8: { int8_t v; std::memcpy(&v, p, 1); return v; }
  case ScalarType::u8: return *p;
  case ScalarType::i16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case ScalarType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case ScalarType::i64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case ScalarType::f16: { uint16_t b; std::memcpy(&b, p, 2); return f16::toFloat(b); }
  case ScalarType::bf16: { uint16_t b; std::memcpy(&b, p, 2); return bf16::toFloat(b); }
  case ScalarType::f32: { float v; std::memcpy(&v, p, 4); return v; }
  case ScalarType::f64: { double v; std::memcpy(&v, p, 8); return v; }
  }
  return 0;
}

/// A host buffer for one pointer argument.
struct HostBuffer {
  size_t param = 0; // index into the signature's params
  std::string name;
  ScalarType type = ScalarType::f32;
  size_t count = 0;
  bool output = false;
  std::vector<unsigned char> bytes;
};

/// The kernel's arguments, made from the specs against its signature.
struct Inputs {
  std::vector<HostBuffer> buffers;
  std::vector<ArgValue> scalars; // by parameter index; pointers are filled per backend
  std::vector<int> bufferOf;     // parameter index -> index into buffers, or -1
  size_t totalBytes = 0;
};

std::string signatureText(const KernelSignature &sig) {
  std::string s;
  for (const KernelParam &p : sig.params)
    s += (s.empty() ? "" : ", ") + p.name + ": " + p.type.str();
  return s;
}

/// Builds the inputs, or prints why the specs do not fit and returns false.
bool makeInputs(const KernelSignature &sig, const std::vector<ArgSpec> &specs, uint64_t seed,
                Inputs &in) {
  const std::string kname = "kernel '" + sig.name + "'";
  if (specs.size() != sig.params.size()) {
    std::cerr << "tessera: error: " << kname << " expects " << sig.params.size()
              << (sig.params.size() == 1 ? " argument" : " arguments") << " ("
              << signatureText(sig) << "), got " << specs.size() << "\n";
    return false;
  }
  std::mt19937_64 rng(seed);
  in.scalars.assign(sig.params.size(), ArgValue{});
  in.bufferOf.assign(sig.params.size(), -1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const KernelParam &p = sig.params[i];
    const ArgSpec &s = specs[i];
    std::string which = "argument " + std::to_string(i + 1) + " ('" + p.name + "') of " + kname;
    if (p.type.pointerDepth > 1) {
      std::cerr << "tessera: error: " << which << " has type " << p.type.str()
                << ": pointer-to-pointer parameters cannot be made from the command line\n";
      return false;
    }
    if (p.type.isPointer() != (s.kind != ArgSpec::Scalar)) {
      if (p.type.isPointer())
        std::cerr << "tessera: error: " << which << " is a pointer (" << p.type.str() << "), got '"
                  << s.text << "': pass buf:N, buf:N=VALUE or out:N\n";
      else
        std::cerr << "tessera: error: " << which << " is a scalar " << p.type.str() << ", got '"
                  << s.text << "': pass a literal\n";
      return false;
    }
    if (!p.type.isPointer()) {
      if (!parseScalar(s.value, p.type.scalar, in.scalars[i])) {
        std::cerr << "tessera: error: " << which << " must be a literal of type " << p.type.str()
                  << ", got '" << s.value << "'\n";
        return false;
      }
      continue;
    }
    HostBuffer b;
    b.param = i;
    b.name = p.name;
    b.type = p.type.scalar;
    b.count = s.count;
    b.output = s.kind == ArgSpec::Output;
    size_t eb = elementBytes(b.type);
    b.bytes.assign(b.count * eb, 0);
    unsigned char *d = b.bytes.data();
    if (s.kind == ArgSpec::Fill) {
      ArgValue v;
      if (!parseScalar(s.value, b.type, v)) {
        std::cerr << "tessera: error: " << which << ": cannot fill a buffer of "
                  << scalarTypeName(b.type) << " with '" << s.value << "'\n";
        return false;
      }
      for (size_t k = 0; k < b.count; ++k)
        std::memcpy(d + k * eb, v.storage, eb);
    } else if (s.kind == ArgSpec::Output) {
      for (size_t k = 0; k < b.count; ++k) {
        unsigned char *e = d + k * eb;
        switch (b.type) {
        case ScalarType::f16: { uint16_t n = 0x7e00; std::memcpy(e, &n, 2); break; }
        case ScalarType::bf16: { uint16_t n = 0x7fc0; std::memcpy(e, &n, 2); break; }
        case ScalarType::f32: { float n = std::numeric_limits<float>::quiet_NaN(); std::memcpy(e, &n, 4); break; }
        case ScalarType::f64: { double n = std::numeric_limits<double>::quiet_NaN(); std::memcpy(e, &n, 8); break; }
        default: std::memset(e, 0xAA, eb); break;
        }
      }
    } else { // random
      for (size_t k = 0; k < b.count; ++k) {
        unsigned char *e = d + k * eb;
        uint64_t r = rng();
        // Uniform in [-1, 1) from the top bits: 24 for f32 and below, 53 for f64.
        double u24 = double(r >> 40) * 0x1p-24 * 2.0 - 1.0;
        double u53 = double(r >> 11) * 0x1p-53 * 2.0 - 1.0;
        int64_t iv = int64_t(r % 100);
        switch (b.type) {
        case ScalarType::i1: e[0] = uint8_t(r & 1); break;
        case ScalarType::i8: case ScalarType::u8: e[0] = uint8_t(iv); break;
        case ScalarType::i16: { int16_t v = int16_t(iv); std::memcpy(e, &v, 2); break; }
        case ScalarType::i32: { int32_t v = int32_t(iv); std::memcpy(e, &v, 4); break; }
        case ScalarType::i64: std::memcpy(e, &iv, 8); break;
        case ScalarType::f16: { uint16_t h = f16::fromFloat(float(u24)); std::memcpy(e, &h, 2); break; }
        case ScalarType::bf16: { uint16_t h = bf16::fromFloat(float(u24)); std::memcpy(e, &h, 2); break; }
        case ScalarType::f32: { float v = float(u24); std::memcpy(e, &v, 4); break; }
        case ScalarType::f64: std::memcpy(e, &u53, 8); break;
        }
      }
    }
    in.totalBytes += b.bytes.size();
    in.bufferOf[i] = int(in.buffers.size());
    in.buffers.push_back(std::move(b));
  }
  return true;
}

// ---- running ----------------------------------------------------------------

struct RunOptions {
  std::string file, kernel;
  std::map<std::string, ConstexprValue> defines;
  std::vector<std::string> importPaths;
  Grid grid;
  bool gridGiven = false;
  int numWarps = 4;
  int numStages = 4;
  bool interpret = false, check = false;
  uint64_t seed = 0;
  double tol = 1e-5;
  int iters = 10;
  size_t print = 0;
  std::vector<ArgSpec> args;
};

/// The backends a run uses: the GPU (if any, and unless --interpret) and the
/// interpreter (without a GPU, or for --check).
struct Backends {
  std::unique_ptr<Context> gpu, interp;
  std::string noGpuReason; // why there is no GPU context
  bool byEnvironment = false; // TESSERA_INTERPRET asked for the interpreter
};

Backends openBackends(bool interpret, bool check) {
  Backends b;
  if (!interpret) {
    try {
      auto ctx = std::make_unique<Context>();
      if (ctx->isInterpreter()) {
        b.noGpuReason = "TESSERA_INTERPRET is set";
        b.byEnvironment = true;
      }
      else
        b.gpu = std::move(ctx);
    } catch (const std::exception &e) {
      b.noGpuReason = e.what();
    }
  }
  if (!b.gpu || check)
    b.interp = std::make_unique<Context>(createInterpreterBackend());
  if (!b.gpu && !interpret) {
    if (b.byEnvironment)
      std::cerr << "tessera: TESSERA_INTERPRET is set; running in the CPU interpreter";
    else
      std::cerr << "tessera: no GPU found (" << b.noGpuReason << "); running in the CPU interpreter";
    std::cerr << (check ? " only: --check has nothing to compare against" : "") << "\n";
  }
  return b;
}

/// What one backend's run produced.
struct Outcome {
  std::vector<std::vector<unsigned char>> buffers; // contents after the launch
  double launchMs = 0;   // the first launch (interpreter: wall clock)
  double timedMs = -1;   // GPU: mean over --iters launches, -1 when not timed
  int registers = -1;    // GPU: from the loaded function
  size_t localBytes = 0; // GPU: spills + stack per thread
};

enum class RunStatus { Ok, Failed, BadArgs };

RunStatus runOn(Context &ctx, const Kernel &kernel, const Inputs &in, const RunOptions &o,
                Outcome &out) {
  std::vector<DeviceMemory> mem;
  mem.reserve(in.buffers.size());
  for (const HostBuffer &b : in.buffers) {
    mem.push_back(ctx.allocBytes(b.bytes.size()));
    if (!b.bytes.empty())
      mem.back().copyFromHost(b.bytes.data(), b.bytes.size());
  }
  std::vector<ArgValue> args = in.scalars;
  for (size_t i = 0; i < args.size(); ++i)
    if (in.bufferOf[i] >= 0) {
      const HostBuffer &b = in.buffers[size_t(in.bufferOf[i])];
      args[i] = ArgValue::pointer(b.type, mem[size_t(in.bufferOf[i])].address());
    }
  try {
    checkLaunchArgs(kernel.signature(), args);
  } catch (const Error &e) {
    std::cerr << "tessera: error: " << e.what() << "\n";
    return RunStatus::BadArgs;
  }
  if (!ctx.isInterpreter()) {
    // The variant these arguments select (the JIT specializes on them).
    FunctionAttributes a = kernel.variantFor(args).function.attributes();
    out.registers = a.numRegisters;
    out.localBytes = a.localBytes;
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

std::string fmtDouble(double v, const char *f = "%.3g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string fmtTime(double ms) {
  if (ms < 1)
    return fmtDouble(ms * 1000, "%.2f us");
  if (ms < 1000)
    return fmtDouble(ms, "%.2f ms");
  return fmtDouble(ms / 1000, "%.2f s");
}

std::string gridText(const Grid &g) {
  return std::to_string(g.x) + "x" + std::to_string(g.y) + "x" + std::to_string(g.z);
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
  jo.importPaths = o.importPaths;
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
    return fmtDouble(elementValue(p, t), "%.6g");
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
    std::cout << "\n";
    if (rep.gpu.timedMs >= 0) {
      double gbs = double(in.totalBytes) / (rep.gpu.timedMs * 1e6);
      std::cout << "time: " << fmtTime(rep.gpu.timedMs) << " per launch (mean of " << o.iters
                << " after a warm-up); buffers " << humanBytes(double(in.totalBytes))
                << " -> " << fmtDouble(gbs, "%.1f") << " GB/s if each byte moves once\n";
    }
  }
  if (be.interp)
    std::cout << "interpreter: " << fmtTime(rep.interp.launchMs) << " for the launch (CPU)\n";
  if (rep.checked) {
    for (const Comparison &c : rep.comparisons) {
      std::cout << "check " << c.name << ": max rel err " << fmtDouble(c.relErr, "%.3e")
                << (c.ok ? "  ok" : "  FAIL");
      if (!c.ok)
        std::cout << " (" << c.mismatches << " elements above tol " << fmtDouble(o.tol, "%g")
                  << "; first [" << c.firstBad << "]: gpu " << fmtDouble(c.gpuValue, "%.9g")
                  << ", interpreter " << fmtDouble(c.refValue, "%.9g") << ")";
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
    } else if (a == "--interpret") {
      o.interpret = true;
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
  if (o.kernel.empty()) {
    std::string diag;
    std::vector<std::string> names = listKernels(o.file, &diag);
    if (names.empty()) {
      std::cerr << (diag.empty() ? "tessera: error: no @kernel in '" + o.file + "'\n" : diag);
      return kInputError;
    }
    if (names.size() > 1) {
      std::string list;
      for (const std::string &n : names)
        list += (list.empty() ? "" : ", ") + n;
      return usageError("'" + o.file + "' holds several kernels (" + list + "): choose one with --kernel",
                        kRunHelp);
    }
    o.kernel = names[0];
  }

  Backends be = openBackends(o.interpret, o.check);
  Report rep;
  Inputs in;
  int rc = execute(be, o, rep, in);
  if (rc == kOk || (rc == kInputError && rep.checked))
    printReport(be, o, rep, in);
  return rc;
}

} // namespace tessera::cli
