// Lowering fuzz: random chains of tile operations (elementwise math,
// reductions along either axis and broadcasts back, bitcasts, transposes,
// scans, sorts, slices, gathers, where, casts) on 2-D tiles. Every program
// that the front end and the verifier accept must also generate PTX for sm_80
// and sm_90a, and run in the interpreter; a failure prints the program. The
// seed is fresh each run and printed.
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/Half.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera;
using tessera::testing::Seeded;

namespace {

// A variable of the generated program: its name, element type and shape.
struct Var {
  std::string name;
  bool isInt = false;
  int rank = 2; // 2: (R, C); 1: along rows (R,) or columns (C,)
  bool rows = true; // for rank 1: length R (true) or C
  bool square = false;
};

class ProgramGen {
public:
  ProgramGen(std::mt19937 &rng, int R, int C) : rng_(rng), R_(R), C_(C) {}

  std::string generate(int steps) {
    std::ostringstream os;
    os << "@kernel\ndef k(X: *f32, Y: *f32):\n"
       << "    r = arange(0, " << R_ << ")\n"
       << "    c = arange(0, " << C_ << ")\n"
       << "    v0 = load(X + r[:, None] * " << C_ << " + c[None, :])\n";
    vars_.push_back({"v0"});
    for (int i = 0; i < steps; ++i)
      os << "    " << step() << "\n";
    // Everything two-dimensional and float, added up.
    os << "    out = zeros((" << R_ << ", " << C_ << "), f32)\n";
    for (const Var &v : vars_) {
      std::string e = v.name;
      if (v.isInt)
        e = e + ".to(f32)";
      if (v.rank == 1)
        e = e + (v.rows ? "[:, None]" : "[None, :]");
      os << "    out = out + " << e << "\n";
    }
    os << "    store(Y + r[:, None] * " << C_ << " + c[None, :], out)\n";
    return os.str();
  }

private:
  int pick(int n) { return int(rng_() % unsigned(n)); }
  Var any(bool wantInt, int rank) {
    std::vector<const Var *> c;
    for (const Var &v : vars_)
      if (v.isInt == wantInt && v.rank == rank)
        c.push_back(&v);
    if (c.empty())
      return vars_[0];
    return *c[size_t(pick(int(c.size())))];
  }
  // The new variable's name; call it after building the right-hand side
  // (it grows vars_).
  std::string fresh(Var v) {
    v.name = "v" + std::to_string(vars_.size());
    vars_.push_back(v);
    return v.name;
  }

  std::string step() {
    const Var f = any(false, 2);
    const std::string x = f.name;
    switch (pick(14)) {
    case 0: return fresh({}) + " = exp(" + x + " * 0.5) - abs(" + x + ")";
    case 1: return fresh({}) + " = where(" + x + " > 0.0, " + x + ", 0.25 * " + x + ")";
    case 2: return fresh({}) + " = sqrt(abs(" + x + ") + 1.0) * maximum(" + x + ", 0.1)";
    case 3: return fresh({"", false, 1, true}) + " = sum(" + x + ", axis=1)";
    case 4: return fresh({"", false, 1, false}) + " = max(" + x + ", axis=0)";
    case 5: {
      const Var v = any(false, 1);
      if (v.rank != 1)
        return fresh({}) + " = " + x + " * 2.0";
      return fresh({}) + " = " + x + " - " + v.name + (v.rows ? "[:, None]" : "[None, :]");
    }
    case 6: return fresh({"", true}) + " = bitcast(" + x + ", i32) >> 3";
    case 7: {
      const Var i = any(true, 2);
      if (!i.isInt)
        return fresh({"", true}) + " = (" + x + " * 16.0).to(i32)";
      return fresh({}) + " = bitcast(" + i.name + " & 0x3f7fffff, f32)";
    }
    case 8: return fresh({}) + " = cumsum(" + x + ", axis=" + std::to_string(pick(2)) + ")";
    case 9: return fresh({}) + " = sort(" + x + ", dim=" + std::to_string(pick(2)) +
                   (pick(2) ? ", descending=True)" : ")");
    case 10:
      if (R_ == C_)
        return fresh({}) + " = trans(" + x + ") + " + x;
      return fresh({}) + " = " + x + " + 1.0";
    case 11: // the left half, twice
      return fresh({}) + " = cat(trans(" + x + "[:, 0:" + std::to_string(C_ / 2) + "]), trans(" + x +
             "[:, " + std::to_string(C_ / 2) + ":])).T";
    case 12: { // a gather of shuffled columns
      return fresh({}) + " = gather(" + x + ", broadcast_to(((c * 5 + 3) % " + std::to_string(C_) +
             ")[None, :], (" + std::to_string(R_) + ", " + std::to_string(C_) + ")), 1)";
    }
    default: {
      const Var g = any(false, 2);
      return fresh({}) + " = " + x + " * " + g.name + " + sum(" + g.name + ", axis=0)[None, :]";
    }
    }
  }

  std::mt19937 &rng_;
  int R_, C_;
  std::vector<Var> vars_;
};

} // namespace

TEST_CASE("lowering fuzz: every accepted op chain generates PTX and runs", "[lowering][fuzz]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context interp(createInterpreterBackend());
  int accepted = 0;
  for (int p = 0; p < 24; ++p) {
    int R = p % 3 == 0 ? 16 : 32, C = p % 2 ? 32 : 16;
    if (p % 5 == 0)
      R = C;
    ProgramGen gen(s.rng, R, C);
    std::string src = gen.generate(4 + p % 5);
    INFO("program " << p << ":\n" << src);
    CompileResult tile = compileSource(src, "fuzz.tile", "k", CompileOptions{}, Stage::Tile);
    if (!tile.ok) {
      // Rejections must be diagnostics, not internal errors.
      CHECK(tile.diagnostics.find("internal compiler error") == std::string::npos);
      continue;
    }
    ++accepted;
    for (const char *arch : {"sm_80", "sm_90a"}) {
      CompileOptions o;
      o.target = *Target::parse(arch);
      CompileResult r = compileSource(src, "fuzz.tile", "k", o, Stage::PTX);
      INFO(arch << "\n" << r.diagnostics);
      CHECK(r.ok);
    }
    Kernel k = compileString(interp, src, "fuzz.tile", "k");
    auto x = interp.upload(s.uniform(size_t(R) * C));
    auto y = interp.alloc<float>(size_t(R) * C);
    CHECK_NOTHROW(k.launch(interp.stream(), Grid{1}, x, y));
  }
  INFO("accepted " << accepted);
  CHECK(accepted >= 12); // the generator writes valid programs
}

// Memory-access fuzz: loads and stores of every element width, tiles of one
// to two thousand elements over 1 to 8 warps (so 1 to 8 elements a thread),
// masks by a run-time bound that is or is not known to be a multiple of 16,
// with and without a fill value, row strides of either kind. These choose
// between the vector paths (predicated, guarded, element-wise) and the
// kernel's vector width; each program must generate PTX for sm_80 and sm_90a
// and match the CPU in the interpreter (every in-bound element doubled, the
// rest of Y untouched).
TEST_CASE("lowering fuzz: loads and stores of every width, mask and fact", "[lowering][fuzz]") {
  Seeded s;
  INFO("seed " << s.seed);
  Context interp(createInterpreterBackend());
  const char *types[] = {"i8", "u16", "f16", "bf16", "i32", "f32", "f64", "i64"};
  for (int p = 0; p < 48; ++p) {
    std::string t = types[s.rng() % 8];
    int rows = 1 << (s.rng() % 4), cols = 16 << (s.rng() % 5); // 1..8 x 16..256
    int warps = 1 << (s.rng() % 4);
    bool mask = s.rng() % 4 != 0, fill = s.rng() % 2, fact = s.rng() % 2, strided = s.rng() % 2;
    bool wide = s.rng() % 3 == 0; // an f32 tile beside: vector width 4
    std::ostringstream src;
    src << "@kernel\ndef k(X: *" << t << ", Y: *" << t << ", W: *f32, n: i32, stride: i32):\n"
        << "    r = arange(0, " << rows << ")\n    c = arange(0, " << cols << ")\n"
        << "    offs = r[:, None] * " << (strided ? "stride" : std::to_string(cols)) << " + c[None, :]\n"
        << "    m = (r[:, None] < " << rows << ") & (c[None, :] < n)\n"
        << "    x = load(X + offs" << (mask ? ", mask=m" : "") << (mask && fill ? ", other=3" : "") << ")\n"
        << "    store(Y + offs, x + x" << (mask ? ", mask=m" : "") << ")\n";
    if (wide)
      src << "    store(W + offs, x.to(f32)" << (mask ? ", mask=m" : "") << ")\n";
    INFO("program " << p << " (" << warps << " warps, n " << (fact ? "%16" : "free") << "):\n" << src.str());
    for (const char *arch : {"sm_80", "sm_90a"}) {
      CompileOptions o;
      o.target = *Target::parse(arch);
      o.numWarps = warps;
      if (fact) {
        o.argFacts["n"] = ArgFact::DivisibleBy16;
        o.argFacts["stride"] = ArgFact::DivisibleBy16;
      }
      CompileResult r = compileSource(src.str(), "fuzz.tile", "k", o, Stage::PTX);
      INFO(arch << "\n" << r.diagnostics);
      CHECK(r.ok);
    }
    // The interpreter: n a multiple of 16 when the fact says so, else ragged.
    int n = mask ? (fact ? 16 * int(1 + s.rng() % (cols / 16)) : int(1 + s.rng() % cols)) : cols;
    int stride = strided ? cols + (fact ? 16 : 3) : cols;
    size_t elems = size_t(rows) * size_t(stride);
    JitOptions jo;
    jo.numWarps = warps;
    Kernel k = compileString(interp, src.str(), "fuzz.tile", "k", {}, jo);
    DeviceMemory x = interp.allocBytes(elems * 8), y = interp.allocBytes(elems * 8),
                 w = interp.allocBytes(elems * 4);
    std::vector<uint8_t> hx(elems * 8);
    for (auto &b : hx)
      b = uint8_t(s.rng() % 4); // small values: doubling stays exact in every type
    x.copyFromHost(hx.data(), hx.size());
    y.memset(0xEE);
    std::vector<ArgValue> args = makeArgs(DevicePtr<uint8_t>{x.address()}, DevicePtr<uint8_t>{y.address()},
                                          DevicePtr<float>{w.address()}, int32_t(n), int32_t(stride));
    for (size_t a : {0, 1})
      args[a].type = k.signature().params[a].type;
    CHECK_NOTHROW(k.launchWithArgs(interp.stream(), Grid{1}, args));
    std::vector<uint8_t> hy(elems * 8);
    y.copyToHost(hy.data(), hy.size());
    // Y: x + x where the mask is on (exact in every type for these small
    // values), and 0xEE bytes everywhere else.
    size_t eb = t == "i8" ? 1 : (t == "u16" || t == "f16" || t == "bf16") ? 2 : (t == "f64" || t == "i64") ? 8 : 4;
    auto doubled = [&](const uint8_t *in, uint8_t *out) {
      uint64_t v = 0;
      std::memcpy(&v, in, eb);
      if (t == "f16") {
        uint16_t h = uint16_t(v);
        v = f16(2.0f * f16::fromBits(h).toFloat()).bits;
      } else if (t == "bf16") {
        uint16_t h = uint16_t(v);
        v = bf16(2.0f * bf16::fromBits(h).toFloat()).bits;
      } else if (t == "f32") {
        float f;
        std::memcpy(&f, in, 4);
        f *= 2;
        std::memcpy(&v, &f, 4);
      } else if (t == "f64") {
        double d;
        std::memcpy(&d, in, 8);
        d *= 2;
        std::memcpy(&v, &d, 8);
      } else {
        v *= 2; // wraps at the type's width below
      }
      std::memcpy(out, &v, eb);
    };
    int64_t wrong = 0;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < stride; ++j) {
        bool in = j < cols && (!mask || j < n);
        size_t at = (size_t(i) * size_t(stride) + size_t(j)) * eb;
        uint8_t want[8];
        if (in)
          doubled(&hx[at], want);
        else
          std::memset(want, 0xEE, 8);
        wrong += std::memcmp(&hy[at], want, eb) != 0;
      }
    CHECK(wrong == 0);
  }
}
