// The CPU interpreter of tile IR: runs a Tessera kernel over host memory,
// one program instance at a time (several in parallel on a thread pool).
// It is the numerical reference for every DSL kernel and the way to debug
// one without a GPU: masked accesses are checked against the buffers the
// caller names, and an out-of-bounds access stops the run with a report
// naming the kernel, the source line and the program id.
//
//   std::string diag;
//   auto prog = tessera::prepareInterpreter("kernels_dsl/basics/vector_add.tile", "vadd",
//                                           {}, diag);
//   if (!prog) { std::cerr << diag; return 1; }
//   tessera::InterpOptions opt;
//   opt.buffers = {{uintptr_t(x), n * 4}, {uintptr_t(y), n * 4}, {uintptr_t(z), n * 4}};
//   std::string err = tessera::runInterpreter(*prog, cdiv(n, 1024), 1, 1,
//       {tessera::InterpArg::ptr(x), tessera::InterpArg::ptr(y), tessera::InterpArg::ptr(z),
//        tessera::InterpArg::i32(n)}, opt);
//   if (!err.empty()) { std::cerr << err; return 1; }
//
// This header does not include MLIR; see docs/interpreter.md.
#ifndef TESSERA_INTERPRETER_H
#define TESSERA_INTERPRETER_H

#include "tessera/Compiler.h"
#include "tessera/Types.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera {

/// One kernel argument for the interpreter. Pointers carry a host address;
/// scalars are bit-cast into the low bits of `bits` (an f32 in the low 32
/// bits, an i1 as 0/1, an f16/bf16 as its 16-bit pattern).
struct InterpArg {
  bool isPointer = false;
  uint64_t bits = 0;

  static InterpArg ptr(const void *p) { return {true, uint64_t(uintptr_t(p))}; }
  static InterpArg i1(bool v) { return {false, v ? 1u : 0u}; }
  static InterpArg i8(int8_t v) { return {false, uint64_t(uint8_t(v))}; }
  static InterpArg u8(uint8_t v) { return {false, uint64_t(v)}; }
  static InterpArg i16(int16_t v) { return {false, uint64_t(uint16_t(v))}; }
  static InterpArg u16(uint16_t v) { return {false, uint64_t(v)}; }
  static InterpArg u32(uint32_t v) { return {false, uint64_t(v)}; }
  static InterpArg u64(uint64_t v) { return {false, v}; }
  static InterpArg i32(int32_t v) { return {false, uint64_t(uint32_t(v))}; }
  static InterpArg i64(int64_t v) { return {false, uint64_t(v)}; }
  /// f16 or bf16 given as its bit pattern (see tessera/Half.h).
  static InterpArg half(uint16_t bits) { return {false, uint64_t(bits)}; }
  static InterpArg f32(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return {false, uint64_t(b)};
  }
  static InterpArg f64(double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return {false, b};
  }
};

struct InterpOptions {
  /// Round the f32 operands of `dot` ops whose input precision is tf32 (the
  /// language's default) to tf32 (10 mantissa bits, round to nearest, ties
  /// away from zero), as tensor cores do. Off by default: f32 dots are then
  /// exact IEEE fp32 (fused multiply-add in k order), the reference the GPU's
  /// tf32 result is compared against.
  bool tf32 = false;
  /// Worker threads running program instances; 0 = one per hardware thread.
  unsigned threads = 0;
  /// Host buffers (start address, size in bytes) the kernel may touch. When
  /// non-empty, every masked-on load/store/atomic address must lie inside one
  /// of them, otherwise the run stops with an out-of-bounds report. When
  /// empty, only null-page addresses are caught.
  std::vector<std::pair<uintptr_t, size_t>> buffers;
  /// Receives each line of device_print output (without the newline); null
  /// means stdout. Called under a lock, one line at a time.
  std::function<void(const std::string &)> printSink;
};

/// A kernel decoded for the interpreter. Immutable once built: one program
/// may be run from several host threads at once.
class InterpProgram;

/// Runs the front end on `path` and decodes kernel `kernel` (may be empty
/// when the file defines exactly one kernel). Returns null and fills
/// `diagnostics` on error (compile errors, or an op the interpreter does not
/// support).
std::shared_ptr<InterpProgram> prepareInterpreter(const std::string &path,
                                                  const std::string &kernel,
                                                  const CompileOptions &options,
                                                  std::string &diagnostics);
/// Same, from source text; `virtualPath` names it in reports and anchors imports.
std::shared_ptr<InterpProgram> prepareInterpreterSource(const std::string &source,
                                                        const std::string &virtualPath,
                                                        const std::string &kernel,
                                                        const CompileOptions &options,
                                                        std::string &diagnostics);
/// From textual tile IR (as `tessera compile` prints it, or a backend's
/// ModuleFormat::TileIR image). Source locations in reports come from the
/// IR's `loc(...)` annotations, so print it with debug info to keep them.
std::shared_ptr<InterpProgram> prepareInterpreterIR(const std::string &tileIR,
                                                    const std::string &kernel,
                                                    std::string &diagnostics);

/// The decoded kernel's name, parameters and constexpr values.
const KernelSignature &interpreterSignature(const InterpProgram &program);
/// A readable listing of the decoded instruction list (for debugging the interpreter).
std::string interpreterListing(const InterpProgram &program);

/// Runs every program instance of the grid (gx, gy, gz). Returns "" on
/// success or a report: an argument mismatch, an out-of-bounds or null
/// access (kernel, file:line:col, program id, offset), or a runtime error.
/// After an error the other instances stop early; memory may hold partial results.
std::string runInterpreter(InterpProgram &program, unsigned gx, unsigned gy, unsigned gz,
                           const std::vector<InterpArg> &args, const InterpOptions &options = {});

} // namespace tessera

#endif
