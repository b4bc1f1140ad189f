// Lowering fuzz: random chains of tile operations (elementwise math,
// reductions along either axis and broadcasts back, bitcasts, transposes,
// scans, sorts, slices, gathers, where, casts) on 2-D tiles. Every program
// that the front end and the verifier accept must also generate PTX for sm_80
// and sm_90a, and run in the interpreter; a failure prints the program. The
// seed is fresh each run and printed.
#include "TestSupport.h"

#include "tessera/Compiler.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#include <catch2/catch.hpp>

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
