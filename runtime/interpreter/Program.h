// The interpreter's own compact form of a kernel (MLIR-free): every SSA value
// is a slot (a contiguous typed buffer of a static element count), every op
// an Instr holding slot indices, static shape facts and a function pointer
// chosen when the kernel is decoded. Running never walks MLIR.
#ifndef TESSERA_INTERP_PROGRAM_H
#define TESSERA_INTERP_PROGRAM_H

#include "tessera/Interpreter.h"

#include <atomic>
#include <memory>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tessera {
namespace interp {

/// Element kinds. Storage: i1 one byte 0/1; f16/bf16 their 16-bit pattern,
/// f8e4m3/f8e5m2 their 8-bit one; pointers 64-bit addresses; the others
/// their C++ type.
enum class EK : uint8_t { I1, I8, I16, I32, I64, F16, BF16, F32, F64, Ptr, F8E4M3, F8E5M2 };

inline unsigned ekSize(EK k) {
  switch (k) {
  case EK::I1: case EK::I8: case EK::F8E4M3: case EK::F8E5M2: return 1;
  case EK::I16: case EK::F16: case EK::BF16: return 2;
  case EK::I32: case EK::F32: return 4;
  default: return 8;
  }
}
inline bool ekIsFloat(EK k) {
  return k == EK::F16 || k == EK::BF16 || k == EK::F32 || k == EK::F64 || k == EK::F8E4M3 ||
         k == EK::F8E5M2;
}
inline bool ekIsInt(EK k) { return k <= EK::I64; }
inline unsigned ekBits(EK k) { return k == EK::I1 ? 1 : 8 * ekSize(k); }
const char *ekName(EK k);

enum class Op : uint16_t {
  // float binary
  AddF, SubF, MulF, DivF, MaximumF, MinimumF, MaxNumF, MinNumF, MathBinary,
  // float unary (MathUnary calls a double(double) function)
  NegF, AbsF, MathUnary,
  Fma,
  // integer
  AddI, SubI, MulI, DivSI, DivUI, RemSI, RemUI, FloorDivSI, CeilDivSI, CeilDivUI,
  AndI, OrI, XOrI, ShLI, ShRSI, ShRUI, MaxSI, MaxUI, MinSI, MinUI, MulHiSI, MulHiUI,
  AbsI, CtPop, Ctlz, Cttz,
  CmpI, CmpF, Select, IsNaN, IsInf, IsFinite,
  // casts
  ExtSI, ExtUI, TruncI, SIToFP, UIToFP, FPToSI, FPToUI, FloatCast,
  // tile
  ProgramId, NumPrograms, ClusterSize, MakeRange, Splat, Broadcast, Trans, Gather, AddPtr, Load, Store, AtomicRMW,
  AtomicCAS, Dot, Reduce, Scan, Sort, Print, Clamp, Assert,
  // control flow
  For, While, If, Return,
};
const char *opName(Op op);

// Predicates, numbered as in MLIR's arith dialect.
enum CmpIPred { CI_EQ, CI_NE, CI_SLT, CI_SLE, CI_SGT, CI_SGE, CI_ULT, CI_ULE, CI_UGT, CI_UGE };
enum CmpFPred {
  CF_FALSE, CF_OEQ, CF_OGT, CF_OGE, CF_OLT, CF_OLE, CF_ONE, CF_ORD,
  CF_UEQ, CF_UGT, CF_UGE, CF_ULT, CF_ULE, CF_UNE, CF_UNO, CF_TRUE
};
enum class RMW : uint8_t { Add, Max, Min, And, Or, Xor, Xchg, UMax, UMin };

struct Exec;
struct Instr;
/// Runs one instruction. Returns false when the run must stop (error recorded).
using OpFn = bool (*)(Exec &, const Instr &);

/// (source slot, destination slot) pairs copied "in parallel": when a source
/// shares storage with a destination written earlier the copy is staged.
struct CopyGroup {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  bool staged = false;
};

struct Block {
  std::vector<Instr> ops;
  std::vector<int32_t> args;
};

/// A reduce combiner, run vectorized: every slot holds up to `capacity`
/// elements and its instructions use the run-time count Exec::regionN.
struct Region {
  Block body;                                           // args: k lhs then k rhs
  std::vector<int32_t> results;                         // slots returned
  std::vector<std::pair<int32_t, int32_t>> captures;    // outer scalar -> inner slot
  int64_t capacity = 0;
};

struct Instr {
  OpFn fn = nullptr;
  Op op = Op::Return;
  EK kind = EK::I32;  // result element kind (or the stored/loaded kind)
  EK kind2 = EK::I32; // operand kind where it differs (casts, compares, addptr offsets)
  int32_t pred = 0;   // compare predicate, axis, RMW kind, ...
  int32_t dst = -1, a = -1, b = -1, c = -1, d = -1;
  int64_t n = 1;      // result element count; -1: Exec::regionN (inside a reduce combiner)
  std::vector<int32_t> ins, outs;
  std::vector<int64_t> shape, shape2, aux;
  double (*unary)(double) = nullptr;
  double (*binary)(double, double) = nullptr;
  std::vector<Block> blocks;          // scf bodies
  std::vector<CopyGroup> copies;      // scf: init / yield / condition copies
  std::vector<Region> regions;        // reduce or scan combiner
  std::string text;                   // print prefix
  int32_t loc = -1;                   // index into Program::locs
  uint32_t elemBytes = 0;             // pointee size for memory ops
  bool flag = false;                  // dot: tf32-eligible; for: unsigned compare; scan: reverse
};

struct SlotInfo {
  EK kind = EK::I32;
  int64_t n = 1;        // element capacity
  int32_t alias = -1;   // shares the storage of this (root) slot
  bool isConst = false; // storage in Program::constData at `offset`
  int64_t offset = 0;   // byte offset in the frame arena (or constData)
};

struct Program {
  std::string kernel;
  KernelSignature signature;
  std::vector<EK> paramKinds;     // per runtime parameter
  std::vector<int32_t> argSlots;  // per runtime parameter
  std::vector<SlotInfo> slots;
  Block body;
  std::vector<uint8_t> constData;
  size_t frameBytes = 0;
  std::vector<std::string> locs;     // "file:line:col"
  std::vector<std::string> snippets; // per loc: "    source line\n    ^" (or "")
  size_t numInstrs = 0;
};

/// What one run shares between its worker threads.
struct RunState {
  const Program *prog = nullptr;
  const InterpOptions *opts = nullptr;
  std::vector<std::pair<uint64_t, uint64_t>> bufs; // sorted [start, end)
  unsigned grid[3] = {1, 1, 1};
  std::atomic<bool> stop{false};
  std::mutex errMu;
  std::string error;
  std::mutex printMu;
};

/// One worker's state: the frame of slots for the program instance it runs.
struct Exec {
  RunState *rs = nullptr;
  const Program *prog = nullptr;
  std::vector<uint8_t *> slot;
  uint8_t *arena = nullptr;
  uint32_t pid[3] = {0, 0, 0};
  int64_t regionN = 0;
  size_t lastBuf = 0;
  std::vector<std::vector<uint8_t>> scratch;
  std::vector<float> fa, fb, fc; // dot operands
  std::vector<uint8_t> stage;    // staged parallel copies
};

template <class T> inline T *P(Exec &e, int32_t s) { return reinterpret_cast<T *>(e.slot[s]); }
inline int64_t N(const Exec &e, const Instr &ins) { return ins.n >= 0 ? ins.n : e.regionN; }

/// Records the first error of the run and asks every worker to stop. Returns false.
bool fail(Exec &e, const Instr &ins, const std::string &what, const std::string &detail);
/// "in kernel 'k' at file:l:c, program (x, y, z)".
std::string where(Exec &e, const Instr &ins);
bool runBlock(Exec &e, const Block &b);
void parallelCopy(Exec &e, const CopyGroup &g);

// Function pointers for instructions (set by resolve()).
bool resolveElementwise(Instr &ins, std::string &err);
bool resolveCast(Instr &ins, std::string &err);
bool resolveTile(Instr &ins, std::string &err);
bool resolveControl(Instr &ins, std::string &err);
/// Picks ins.fn; false (with `err`) when the combination is unsupported.
bool resolve(Instr &ins, std::string &err);

} // namespace interp

/// A decoded kernel plus whatever keeps its MLIR alive (context and module).
class InterpProgram {
public:
  interp::Program prog;
  std::shared_ptr<void> keepAlive;
};

} // namespace tessera

#endif
