// Running a decoded kernel: frames of slots, structured control flow, the
// pool of workers over program ids, argument checks and error reports.
#include "Numerics.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace tessera {
namespace interp {

const char *ekName(EK k) {
  switch (k) {
  case EK::I1: return "i1";
  case EK::I8: return "i8";
  case EK::I16: return "i16";
  case EK::I32: return "i32";
  case EK::I64: return "i64";
  case EK::F16: return "f16";
  case EK::BF16: return "bf16";
  case EK::F32: return "f32";
  case EK::F64: return "f64";
  case EK::Ptr: return "ptr";
  case EK::F8E4M3: return "f8e4m3";
  case EK::F8E5M2: return "f8e5m2";
  }
  return "?";
}

const char *opName(Op op) {
  static const char *const names[] = {
      "addf", "subf", "mulf", "divf", "maximumf", "minimumf", "maxnumf", "minnumf", "math.binary",
      "negf", "absf", "math.unary", "fma",
      "addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi",
      "ceildivui", "andi", "ori", "xori", "shli", "shrsi", "shrui", "maxsi", "maxui", "minsi",
      "minui", "mulhisi", "mulhiui", "absi", "ctpop", "ctlz", "cttz",
      "cmpi", "cmpf", "select", "isnan", "isinf", "isfinite",
      "extsi", "extui", "trunci", "sitofp", "uitofp", "fptosi", "fptoui", "float_cast",
      "program_id", "num_programs", "cluster_size", "make_range", "splat", "broadcast", "trans", "gather", "addptr", "load",
      "store", "atomic_rmw", "atomic_cas", "dot", "reduce", "scan", "sort", "print", "clampf", "assert",
      "for", "while", "if", "return"};
  size_t i = size_t(op);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

std::string where(Exec &e, const Instr &ins) {
  std::string loc = ins.loc >= 0 ? e.prog->locs[size_t(ins.loc)] : "an unknown location";
  return "in kernel '" + e.prog->kernel + "' at " + loc + ", program (" +
         std::to_string(e.pid[0]) + ", " + std::to_string(e.pid[1]) + ", " +
         std::to_string(e.pid[2]) + ")";
}

bool fail(Exec &e, const Instr &ins, const std::string &what, const std::string &detail) {
  std::string msg = what + " " + where(e, ins) + ": " + detail;
  if (ins.loc >= 0 && !e.prog->snippets[size_t(ins.loc)].empty())
    msg += "\n" + e.prog->snippets[size_t(ins.loc)];
  std::lock_guard<std::mutex> lock(e.rs->errMu);
  if (e.rs->error.empty())
    e.rs->error = msg;
  e.rs->stop.store(true, std::memory_order_relaxed);
  return false;
}

bool runBlock(Exec &e, const Block &b) {
  for (const Instr &ins : b.ops)
    if (!ins.fn(e, ins))
      return false;
  return true;
}

static size_t slotBytes(const Exec &e, int32_t s) {
  const SlotInfo &si = e.prog->slots[size_t(s)];
  return size_t(si.n) * ekSize(si.kind);
}

void parallelCopy(Exec &e, const CopyGroup &g) {
  if (!g.staged) {
    for (auto [src, dst] : g.pairs)
      if (e.slot[src] != e.slot[dst])
        std::memcpy(e.slot[dst], e.slot[src], slotBytes(e, dst));
    return;
  }
  size_t total = 0;
  for (auto [src, dst] : g.pairs)
    total += slotBytes(e, dst);
  std::vector<uint8_t> &stage = e.stage;
  if (stage.size() < total)
    stage.resize(total);
  size_t at = 0;
  for (auto [src, dst] : g.pairs) {
    std::memcpy(stage.data() + at, e.slot[src], slotBytes(e, dst));
    at += slotBytes(e, dst);
  }
  at = 0;
  for (auto [src, dst] : g.pairs) {
    std::memcpy(e.slot[dst], stage.data() + at, slotBytes(e, dst));
    at += slotBytes(e, dst);
  }
}

namespace {

int64_t readInt(Exec &e, int32_t s, EK k, bool uns) {
  const uint8_t *p = e.slot[s];
  return dispatchInt(k, [&](auto K) -> int64_t {
    using T = IT<decltype(K)::value>;
    typename T::S v;
    std::memcpy(&v, p, sizeof v);
    return uns ? int64_t(T::u(v)) : T::s(v);
  });
}

void writeInt(Exec &e, int32_t s, EK k, int64_t v) {
  dispatchInt(k, [&](auto K) {
    using T = IT<decltype(K)::value>;
    typename T::S x = T::from(uint64_t(v));
    std::memcpy(e.slot[s], &x, sizeof x);
    return 0;
  });
}

bool stopped(Exec &e) { return e.rs->stop.load(std::memory_order_relaxed); }

// scf.for: iv from lb while iv < ub (signed, or unsigned with `unsignedCmp`), step > 0.
bool forOp(Exec &e, const Instr &ins) {
  bool uns = ins.flag;
  EK k = ins.kind2;
  int64_t lb = readInt(e, ins.a, k, uns), ub = readInt(e, ins.b, k, uns),
          step = readInt(e, ins.c, k, uns);
  parallelCopy(e, ins.copies[0]);
  const Block &body = ins.blocks[0];
  auto less = [&](int64_t x, int64_t y) { return uns ? uint64_t(x) < uint64_t(y) : x < y; };
  if (!less(lb, ub))
    return true;
  if (step == 0 || (!uns && step < 0))
    return fail(e, ins, "invalid loop", "scf.for step " + std::to_string(step) +
                                            " is not positive, the loop would never end");
  for (int64_t iv = lb; less(iv, ub);) {
    writeInt(e, body.args[0], k, iv);
    if (!runBlock(e, body))
      return false;
    parallelCopy(e, ins.copies[1]);
    if (stopped(e))
      return false;
    int64_t next = int64_t(uint64_t(iv) + uint64_t(step));
    if (uns ? uint64_t(next) < uint64_t(iv) : next < iv)
      break; // overflow past the 64-bit range ends the loop (narrower types cannot reach it)
    iv = next;
  }
  return true;
}

// scf.while: before-block -> scf.condition(c) args -> (after-block -> yield -> before) or exit.
bool whileOp(Exec &e, const Instr &ins) {
  parallelCopy(e, ins.copies[0]);
  const Block &before = ins.blocks[0], &after = ins.blocks[1];
  for (;;) {
    if (!runBlock(e, before))
      return false;
    bool cond = e.slot[ins.a][0] != 0;
    parallelCopy(e, ins.copies[1]);
    if (!cond)
      return true;
    if (!runBlock(e, after))
      return false;
    parallelCopy(e, ins.copies[2]);
    if (stopped(e))
      return false;
  }
}

bool ifOp(Exec &e, const Instr &ins) {
  bool cond = e.slot[ins.a][0] != 0;
  size_t which = cond ? 0 : 1;
  if (!runBlock(e, ins.blocks[which]))
    return false;
  parallelCopy(e, ins.copies[which]);
  return true;
}

bool returnOp(Exec &, const Instr &) { return true; }

void listBlock(const Program &p, const Block &b, int depth, std::string &out);

void listInstr(const Program &p, const Instr &ins, int depth, std::string &out) {
  std::string ind(size_t(depth) * 2, ' ');
  out += ind;
  if (ins.dst >= 0)
    out += "%" + std::to_string(ins.dst) + " = ";
  for (size_t i = 0; i < ins.outs.size(); ++i)
    out += (i ? ", %" : "%") + std::to_string(ins.outs[i]) + (i + 1 == ins.outs.size() ? " = " : "");
  out += opName(ins.op);
  out += std::string(" ") + ekName(ins.kind);
  for (int32_t s : {ins.a, ins.b, ins.c, ins.d})
    if (s >= 0)
      out += " %" + std::to_string(s);
  for (int32_t s : ins.ins)
    out += " %" + std::to_string(s);
  if (ins.n != 1)
    out += " n=" + std::to_string(ins.n);
  if (ins.loc >= 0)
    out += "  @" + p.locs[size_t(ins.loc)];
  out += "\n";
  for (const Block &b : ins.blocks)
    listBlock(p, b, depth + 1, out);
  for (const Region &r : ins.regions)
    listBlock(p, r.body, depth + 1, out);
}

void listBlock(const Program &p, const Block &b, int depth, std::string &out) {
  out += std::string(size_t(depth) * 2, ' ') + "block(";
  for (size_t i = 0; i < b.args.size(); ++i)
    out += (i ? ", %" : "%") + std::to_string(b.args[i]);
  out += "):\n";
  for (const Instr &ins : b.ops)
    listInstr(p, ins, depth + 1, out);
}

} // namespace

bool resolveControl(Instr &ins, std::string &err) {
  switch (ins.op) {
  case Op::For: ins.fn = &forOp; return true;
  case Op::While: ins.fn = &whileOp; return true;
  case Op::If: ins.fn = &ifOp; return true;
  case Op::Return: ins.fn = &returnOp; return true;
  default: err = "not a control-flow op"; return false;
  }
}

bool resolve(Instr &ins, std::string &err) {
  switch (ins.op) {
  case Op::ExtSI: case Op::ExtUI: case Op::TruncI: case Op::SIToFP: case Op::UIToFP:
  case Op::FPToSI: case Op::FPToUI: case Op::FloatCast:
    return resolveCast(ins, err);
  case Op::ProgramId: case Op::NumPrograms: case Op::ClusterSize: case Op::MakeRange: case Op::Splat:
  case Op::Broadcast: case Op::Trans: case Op::Gather: case Op::AddPtr: case Op::Load: case Op::Store:
  case Op::AtomicRMW: case Op::AtomicCAS: case Op::Dot: case Op::Reduce: case Op::Scan: case Op::Sort: case Op::Print: case Op::Assert:
    return resolveTile(ins, err);
  case Op::For: case Op::While: case Op::If: case Op::Return:
    return resolveControl(ins, err);
  default:
    return resolveElementwise(ins, err);
  }
}

} // namespace interp

using namespace interp;

const KernelSignature &interpreterSignature(const InterpProgram &program) {
  return program.prog.signature;
}

std::string interpreterListing(const InterpProgram &program) {
  std::string out = "kernel " + program.prog.kernel + ": " +
                    std::to_string(program.prog.slots.size()) + " slots, " +
                    std::to_string(program.prog.frameBytes) + " frame bytes\n";
  listBlock(program.prog, program.prog.body, 0, out);
  return out;
}

namespace {

struct AlignedArena {
  uint8_t *ptr = nullptr;
  explicit AlignedArena(size_t bytes) {
    size_t sz = (std::max<size_t>(bytes, 64) + 63) / 64 * 64;
    ptr = static_cast<uint8_t *>(std::aligned_alloc(64, sz));
    if (ptr)
      std::memset(ptr, 0, sz);
  }
  ~AlignedArena() { std::free(ptr); }
  AlignedArena(const AlignedArena &) = delete;
  AlignedArena &operator=(const AlignedArena &) = delete;
};

std::string checkArgs(const Program &p, const std::vector<InterpArg> &args) {
  const auto &params = p.signature.params;
  if (args.size() != params.size())
    return "kernel '" + p.kernel + "' expects " + std::to_string(params.size()) + " argument" +
           (params.size() == 1 ? "" : "s") + ", got " + std::to_string(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelParam &kp = params[i];
    std::string which = "argument " + std::to_string(i + 1) + " ('" + kp.name + "') of kernel '" +
                        p.kernel + "'";
    if (kp.type.isPointer() && !args[i].isPointer)
      return which + " must be a pointer (" + kp.type.str() + "), got a scalar";
    if (!kp.type.isPointer() && args[i].isPointer)
      return which + " must be a scalar " + kp.type.str() + ", got a pointer";
    if (!kp.type.isPointer()) {
      unsigned bits = scalarTypeBits(kp.type.scalar);
      if (bits < 64 && (args[i].bits >> bits) != 0)
        return which + " is " + kp.type.str() + " but its value has bits set above bit " +
               std::to_string(bits - 1) + " (pass it with InterpArg::" + kp.type.str() + ")";
    }
  }
  return "";
}

} // namespace

std::string runInterpreter(InterpProgram &program, unsigned gx, unsigned gy, unsigned gz,
                           const std::vector<InterpArg> &args, const InterpOptions &options) {
  const Program &p = program.prog;
  std::string bad = checkArgs(p, args);
  if (!bad.empty())
    return bad;
  uint64_t total = uint64_t(gx) * gy * gz;
  if (total == 0)
    return "";

  RunState rs;
  rs.prog = &p;
  rs.opts = &options;
  rs.grid[0] = gx;
  rs.grid[1] = gy;
  rs.grid[2] = gz;
  for (auto [start, size] : options.buffers)
    if (size)
      rs.bufs.emplace_back(uint64_t(start), uint64_t(start) + size);
  std::sort(rs.bufs.begin(), rs.bufs.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged; // overlapping buffers become one range
  for (auto r : rs.bufs) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  rs.bufs = std::move(merged);

  unsigned threads = options.threads ? options.threads : std::thread::hardware_concurrency();
  if (const char *env = std::getenv("TESSERA_INTERPRET_THREADS"))
    if (!options.threads && std::atoi(env) > 0)
      threads = unsigned(std::atoi(env));
  threads = unsigned(std::max<uint64_t>(1, std::min<uint64_t>(std::max(threads, 1u), total)));
  // Each worker holds a frame of every slot; keep all frames within 4 GiB.
  uint64_t frameCap = (uint64_t(4) << 30) / std::max<uint64_t>(p.frameBytes, 1);
  threads = unsigned(std::max<uint64_t>(1, std::min<uint64_t>(threads, frameCap)));

  std::atomic<uint64_t> next{0};
  auto worker = [&]() {
    Exec e;
    e.rs = &rs;
    e.prog = &p;
    AlignedArena arena(p.frameBytes);
    if (!arena.ptr) {
      std::lock_guard<std::mutex> lock(rs.errMu);
      if (rs.error.empty())
        rs.error = "interpreter: out of memory for a frame of " + std::to_string(p.frameBytes) +
                   " bytes";
      rs.stop = true;
      return;
    }
    e.arena = arena.ptr;
    e.slot.resize(p.slots.size());
    for (size_t i = 0; i < p.slots.size(); ++i) {
      const SlotInfo &si = p.slots[i];
      if (si.alias < 0)
        e.slot[i] = si.isConst ? const_cast<uint8_t *>(p.constData.data()) + si.offset
                               : arena.ptr + si.offset;
    }
    for (size_t i = 0; i < p.slots.size(); ++i)
      if (p.slots[i].alias >= 0)
        e.slot[i] = e.slot[size_t(p.slots[i].alias)];
    for (size_t j = 0; j < args.size(); ++j) {
      uint64_t bits = args[j].bits;
      std::memcpy(e.slot[p.argSlots[j]], &bits, ekSize(p.paramKinds[j]));
    }
    for (;;) {
      if (rs.stop.load(std::memory_order_relaxed))
        return;
      uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
      if (id >= total)
        return;
      e.pid[0] = uint32_t(id % gx);
      e.pid[1] = uint32_t((id / gx) % gy);
      e.pid[2] = uint32_t(id / (uint64_t(gx) * gy));
      if (!runBlock(e, p.body))
        return;
    }
  };
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back(worker);
    for (auto &t : pool)
      t.join();
  }
  return rs.error;
}

} // namespace tessera
