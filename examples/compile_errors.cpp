// compile_errors: what a mistake in a kernel looks like from C++. The JIT
// throws tessera::Error whose what() is the compiler's rendered diagnostic
// (file:line:col, the source line and a caret), ready to print as is.
// Exits 0 when every mistake below was reported as expected.
#include <tessera/tessera.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

namespace {

// Line 4 uses `N` where the parameter is `n`.
const char *kTypo = R"(@kernel
def scale(X: *f32, Y: *f32, n: i32, alpha: f32, BLOCK: constexpr = 256):
    offs = program_id(0) * BLOCK + arange(0, BLOCK)
    mask = offs < N
    store(Y + offs, load(X + offs, mask=mask) * alpha, mask=mask)
)";

// Compiles and expects a diagnostic containing `expected`; prints it.
bool expectError(tessera::Context &ctx, const std::string &source,
                 const std::map<std::string, tessera::ConstexprValue> &constexprs,
                 const std::string &expected) {
  try {
    // The virtual path only names the source in diagnostics (and anchors
    // relative imports); nothing is read from or written to it.
    tessera::compileString(ctx, source, "examples/scale.tile", "scale", constexprs);
  } catch (const tessera::Error &e) {
    std::cout << e.what(); // rendered diagnostics end with a newline
    if (std::string(e.what()).find(expected) != std::string::npos)
      return true;
    std::cout << "^ expected a diagnostic containing \"" << expected << "\"\n";
    return false;
  }
  std::cout << "compiled without an error; expected \"" << expected << "\"\n";
  return false;
}
} // namespace

int main() {
  try {
    // The GPU when there is one, else the CPU interpreter (TESSERA_INTERPRET=1 forces it).
    std::string why;
    tessera::Context ctx = tessera::Context::gpuOrInterpreter(&why);
    if (!why.empty())
      std::cout << "no GPU (" << why << "); using the CPU interpreter\n";
    std::cout << "running on " << ctx.deviceName() << " (" << ctx.target() << ")\n\n";
    bool ok = true;

    std::cout << "1. a misspelled name in the kernel:\n";
    ok &= expectError(ctx, kTypo, {}, "examples/scale.tile:4:19: error: unknown name 'N'");

    // Constexpr maps are checked too: a misspelled name is an error rather
    // than a silently ignored value.
    std::string fixed = kTypo;
    fixed.replace(fixed.find("< N"), 3, "< n");
    std::cout << "\n2. a constexpr the kernel does not have:\n";
    ok &= expectError(ctx, fixed, {{"BLOK", int64_t(128)}}, "BLOK");

    // With both mistakes fixed the same source compiles.
    tessera::compileString(ctx, fixed, "examples/scale.tile", "scale", {{"BLOCK", int64_t(128)}});
    std::cout << "\n3. the fixed kernel compiles\n";

    std::printf("%s\n", ok ? "errors reported as expected" : "FAILED");
    return ok ? 0 : 1;
  } catch (const tessera::Error &e) { // anything unexpected, e.g. the fixed kernel failing
    std::cerr << "tessera error: " << e.what() << "\n";
    return 1;
  }
}
