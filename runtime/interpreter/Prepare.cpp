// Decoding tile IR into the interpreter's instruction list: one slot per SSA
// value (or an alias of one for shape-only ops), one Instr per op with its
// function pointer chosen here, constants laid out once.
#include "Numerics.h"
#include "Program.h"

#include "tessera/Compiler.h"
#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

using namespace mlir;

namespace tessera {
namespace interp {
namespace {

struct TypeFacts {
  EK kind = EK::I32;
  std::vector<int64_t> shape; // empty for scalars
  int64_t n = 1;
  bool isTile = false;
  unsigned pointeeBytes = 0;  // pointers
  EK pointee = EK::I32;
};

bool elemKind(Type t, EK &k) {
  if (auto it = dyn_cast<IntegerType>(t)) {
    switch (it.getWidth()) {
    case 1: k = EK::I1; return true;
    case 8: k = EK::I8; return true;
    case 16: k = EK::I16; return true;
    case 32: k = EK::I32; return true;
    case 64: k = EK::I64; return true;
    default: return false;
    }
  }
  if (isa<IndexType>(t)) { k = EK::I64; return true; }
  if (t.isF16()) { k = EK::F16; return true; }
  if (t.isBF16()) { k = EK::BF16; return true; }
  if (isa<Float8E4M3FNType>(t)) { k = EK::F8E4M3; return true; }
  if (isa<Float8E5M2Type>(t)) { k = EK::F8E5M2; return true; }
  if (t.isF32()) { k = EK::F32; return true; }
  if (t.isF64()) { k = EK::F64; return true; }
  if (isa<tile::PtrType>(t)) { k = EK::Ptr; return true; }
  return false;
}

std::string typeStr(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// The innermost file:line:col of a location (the callee's for inlined code).
FileLineColLoc primaryLoc(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return fl;
  if (auto nl = dyn_cast<NameLoc>(loc))
    return primaryLoc(nl.getChildLoc());
  if (auto cs = dyn_cast<CallSiteLoc>(loc)) {
    if (auto c = primaryLoc(cs.getCallee()))
      return c;
    return primaryLoc(cs.getCaller());
  }
  if (auto fl = dyn_cast<FusedLoc>(loc))
    for (Location l : fl.getLocations())
      if (auto c = primaryLoc(l))
        return c;
  return {};
}

std::string locText(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return fl.getFilename().str() + ":" + std::to_string(fl.getLine()) + ":" +
           std::to_string(fl.getColumn());
  if (auto nl = dyn_cast<NameLoc>(loc))
    return locText(nl.getChildLoc());
  if (auto cs = dyn_cast<CallSiteLoc>(loc)) {
    std::string callee = locText(cs.getCallee()), caller = locText(cs.getCaller());
    if (callee.empty())
      return caller;
    return caller.empty() ? callee : callee + " (inlined at " + caller + ")";
  }
  if (auto fl = dyn_cast<FusedLoc>(loc))
    for (Location l : fl.getLocations()) {
      std::string s = locText(l);
      if (!s.empty())
        return s;
    }
  return "";
}

using UnaryFn = double (*)(double);
using BinaryFn = double (*)(double, double);

const llvm::StringMap<UnaryFn> &mathUnary() {
  static const llvm::StringMap<UnaryFn> m = {
      {"math.exp", +[](double x) { return std::exp(x); }},
      {"math.exp2", +[](double x) { return std::exp2(x); }},
      {"math.expm1", +[](double x) { return std::expm1(x); }},
      {"math.log", +[](double x) { return std::log(x); }},
      {"math.log2", +[](double x) { return std::log2(x); }},
      {"math.log10", +[](double x) { return std::log10(x); }},
      {"math.log1p", +[](double x) { return std::log1p(x); }},
      {"math.sqrt", +[](double x) { return std::sqrt(x); }},
      {"math.rsqrt", +[](double x) { return 1.0 / std::sqrt(x); }},
      {"math.cbrt", +[](double x) { return std::cbrt(x); }},
      {"math.sin", +[](double x) { return std::sin(x); }},
      {"math.cos", +[](double x) { return std::cos(x); }},
      {"math.tan", +[](double x) { return std::tan(x); }},
      {"math.asin", +[](double x) { return std::asin(x); }},
      {"math.acos", +[](double x) { return std::acos(x); }},
      {"math.atan", +[](double x) { return std::atan(x); }},
      {"math.sinh", +[](double x) { return std::sinh(x); }},
      {"math.cosh", +[](double x) { return std::cosh(x); }},
      {"math.tanh", +[](double x) { return std::tanh(x); }},
      {"math.asinh", +[](double x) { return std::asinh(x); }},
      {"math.acosh", +[](double x) { return std::acosh(x); }},
      {"math.atanh", +[](double x) { return std::atanh(x); }},
      {"math.erf", +[](double x) { return std::erf(x); }},
      {"math.erfc", +[](double x) { return std::erfc(x); }},
      {"math.floor", +[](double x) { return std::floor(x); }},
      {"math.ceil", +[](double x) { return std::ceil(x); }},
      {"math.round", +[](double x) { return std::round(x); }},
      {"math.roundeven", +[](double x) { return std::nearbyint(x); }},
      {"math.trunc", +[](double x) { return std::trunc(x); }},
  };
  return m;
}

const llvm::StringMap<BinaryFn> &mathBinary() {
  static const llvm::StringMap<BinaryFn> m = {
      {"math.powf", +[](double x, double y) { return std::pow(x, y); }},
      {"math.atan2", +[](double x, double y) { return std::atan2(x, y); }},
      {"math.copysign", +[](double x, double y) { return std::copysign(x, y); }},
      {"arith.remf", +[](double x, double y) { return std::fmod(x, y); }},
  };
  return m;
}

const llvm::StringMap<interp::Op> &simpleOps() {
  using interp::Op;
  static const llvm::StringMap<Op> m = {
      {"arith.addf", Op::AddF}, {"arith.subf", Op::SubF}, {"arith.mulf", Op::MulF},
      {"arith.divf", Op::DivF}, {"arith.maximumf", Op::MaximumF},
      {"arith.minimumf", Op::MinimumF}, {"arith.maxnumf", Op::MaxNumF},
      {"arith.minnumf", Op::MinNumF}, {"arith.negf", Op::NegF}, {"math.absf", Op::AbsF},
      {"math.fma", Op::Fma}, {"math.clampf", Op::Clamp},
      {"arith.addi", Op::AddI}, {"arith.subi", Op::SubI}, {"arith.muli", Op::MulI},
      {"arith.divsi", Op::DivSI}, {"arith.divui", Op::DivUI}, {"arith.remsi", Op::RemSI},
      {"arith.remui", Op::RemUI}, {"arith.floordivsi", Op::FloorDivSI},
      {"arith.ceildivsi", Op::CeilDivSI}, {"arith.ceildivui", Op::CeilDivUI},
      {"arith.andi", Op::AndI}, {"arith.ori", Op::OrI}, {"arith.xori", Op::XOrI},
      {"arith.shli", Op::ShLI}, {"arith.shrsi", Op::ShRSI}, {"arith.shrui", Op::ShRUI},
      {"arith.maxsi", Op::MaxSI}, {"arith.maxui", Op::MaxUI}, {"arith.minsi", Op::MinSI},
      {"arith.minui", Op::MinUI}, {"math.absi", Op::AbsI}, {"math.ctpop", Op::CtPop},
      {"math.ctlz", Op::Ctlz}, {"math.cttz", Op::Cttz},
      {"arith.extsi", Op::ExtSI}, {"arith.extui", Op::ExtUI}, {"arith.trunci", Op::TruncI},
      {"arith.index_cast", Op::ExtSI}, {"arith.index_castui", Op::ExtUI},
      {"arith.sitofp", Op::SIToFP}, {"arith.uitofp", Op::UIToFP},
      {"arith.fptosi", Op::FPToSI}, {"arith.fptoui", Op::FPToUI},
      {"arith.extf", Op::FloatCast}, {"arith.truncf", Op::FloatCast},
      {"math.isnan", Op::IsNaN}, {"math.isinf", Op::IsInf}, {"math.isfinite", Op::IsFinite},
  };
  return m;
}

class Decoder {
public:
  Decoder(Program &p, std::string &err, const std::map<std::string, std::string> &sources)
      : P(p), err(err), sources(sources) {}

  bool decodeKernel(func::FuncOp fn);

private:
  Program &P;
  std::string &err;
  llvm::DenseMap<Value, int32_t> slotOf;
  std::map<std::string, int32_t> locIndex;
  std::map<std::string, std::string> sources; // path -> text, for report snippets
  // Inside a reduce combiner: the region, its captures and its element capacity.
  Region *region = nullptr;
  mlir::Region *mlirRegion = nullptr;
  llvm::DenseMap<Value, int32_t> captured;

  bool fail(Operation *op, const std::string &msg) {
    std::string loc = locText(op->getLoc());
    err = (loc.empty() ? std::string() : loc + ": ") + "error: the interpreter " + msg;
    return false;
  }

  int32_t loc(Location l) {
    std::string s = locText(l);
    if (s.empty())
      return -1;
    auto it = locIndex.find(s);
    if (it != locIndex.end())
      return it->second;
    int32_t i = int32_t(P.locs.size());
    P.locs.push_back(s);
    P.snippets.push_back(snippet(l));
    locIndex[s] = i;
    return i;
  }

  // "    <source line>\n    <caret>", as the front end renders diagnostics.
  std::string snippet(Location l) {
    FileLineColLoc fl = primaryLoc(l);
    if (!fl || fl.getLine() == 0)
      return "";
    std::string path = fl.getFilename().str();
    auto it = sources.find(path);
    if (it == sources.end()) { // textual IR: read the file if it is there
      std::string text;
      if (FILE *f = std::fopen(path.c_str(), "rb")) {
        char buf[4096];
        size_t got;
        while ((got = std::fread(buf, 1, sizeof buf, f)) > 0)
          text.append(buf, got);
        std::fclose(f);
      }
      it = sources.emplace(path, std::move(text)).first;
    }
    const std::string &text = it->second;
    size_t at = 0;
    for (unsigned line = 1; line < fl.getLine() && at != std::string::npos; ++line) {
      at = text.find('\n', at);
      if (at != std::string::npos)
        ++at;
    }
    if (at == std::string::npos || at >= text.size())
      return "";
    std::string line = text.substr(at, text.find('\n', at) - at);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    std::string caret = "    ";
    for (unsigned i = 1; i < fl.getColumn() && i - 1 < line.size(); ++i)
      caret += line[i - 1] == '\t' ? '\t' : ' ';
    return "    " + line + "\n" + caret + "^";
  }

  bool facts(Type t, TypeFacts &f) {
    Type elem = t;
    f.shape.clear();
    f.isTile = false;
    if (auto rt = dyn_cast<RankedTensorType>(t)) {
      elem = rt.getElementType();
      f.shape.assign(rt.getShape().begin(), rt.getShape().end());
      f.isTile = true;
    } else if (isa<ShapedType>(t)) {
      return false;
    }
    if (!elemKind(elem, f.kind))
      return false;
    f.n = 1;
    for (int64_t d : f.shape) {
      if (d < 0)
        return false;
      f.n *= d;
    }
    if (auto pt = dyn_cast<tile::PtrType>(elem)) {
      if (!elemKind(pt.getPointeeType(), f.pointee))
        return false;
      f.pointeeBytes = ekSize(f.pointee);
    }
    return true;
  }

  int32_t newSlot(EK k, int64_t n) {
    SlotInfo si;
    si.kind = k;
    si.n = region ? std::max<int64_t>(n, 1) * region->capacity : n;
    si.offset = int64_t(P.frameBytes);
    P.frameBytes += (size_t(si.n) * ekSize(k) + 63) / 64 * 64;
    P.slots.push_back(si);
    return int32_t(P.slots.size() - 1);
  }
  int32_t root(int32_t s) const { return P.slots[size_t(s)].alias >= 0 ? P.slots[size_t(s)].alias : s; }
  int32_t aliasSlot(int32_t src, EK k, int64_t n) {
    SlotInfo si;
    si.kind = k;
    si.n = n;
    si.alias = root(src);
    si.isConst = P.slots[size_t(si.alias)].isConst;
    P.slots.push_back(si);
    return int32_t(P.slots.size() - 1);
  }
  int32_t constSlot(EK k, int64_t n, const std::vector<uint8_t> &bytes) {
    SlotInfo si;
    si.kind = k;
    si.n = n;
    si.isConst = true;
    size_t at = (P.constData.size() + 63) / 64 * 64;
    si.offset = int64_t(at);
    P.constData.resize(at + bytes.size());
    std::memcpy(P.constData.data() + at, bytes.data(), bytes.size());
    P.slots.push_back(si);
    return int32_t(P.slots.size() - 1);
  }

  bool define(Value v, int32_t *out = nullptr) {
    TypeFacts f;
    if (!facts(v.getType(), f))
      return false;
    int32_t s = newSlot(f.kind, f.n);
    slotOf[v] = s;
    if (out)
      *out = s;
    return true;
  }

  // The slot of an operand; inside a combiner a value from outside becomes a capture.
  int32_t get(Value v) {
    if (region && !mlirRegion->isAncestor(v.getParentRegion())) {
      auto it = captured.find(v);
      if (it != captured.end())
        return it->second;
      auto outer = slotOf.find(v);
      if (outer == slotOf.end())
        return -1;
      const SlotInfo &os = P.slots[size_t(outer->second)];
      if (os.n != 1)
        return -1;
      int32_t inner = newSlot(os.kind, 1);
      region->captures.emplace_back(outer->second, inner);
      captured[v] = inner;
      return inner;
    }
    auto it = slotOf.find(v);
    return it == slotOf.end() ? -1 : it->second;
  }

  CopyGroup copyGroup(ValueRange srcs, const std::vector<int32_t> &dsts) {
    CopyGroup g;
    for (size_t i = 0; i < dsts.size(); ++i)
      g.pairs.emplace_back(get(srcs[i]), dsts[i]);
    for (size_t i = 0; i < g.pairs.size(); ++i)
      for (size_t j = 0; j < g.pairs.size(); ++j)
        if (i != j && root(g.pairs[i].first) == root(g.pairs[j].second))
          g.staged = true;
    return g;
  }

  bool finish(Instr &ins, Operation *op, Block &out) {
    std::string why;
    if (!resolve(ins, why))
      return fail(op, "cannot run '" + op->getName().getStringRef().str() + "': " + why);
    out.ops.push_back(std::move(ins));
    ++P.numInstrs;
    return true;
  }

  bool decodeBlock(mlir::Block &b, Block &out, Operation **terminator);
  bool decodeOp(Operation &op, Block &out);
  bool decodeConstant(arith::ConstantOp op);
  bool decodeReduce(tile::ReduceOp op, Block &out) {
    return decodeCombining(op, op.getSrcs(), op.getResults(), op.getAxis(), op.getCombine(), false,
                           out);
  }
  bool decodeScan(tile::ScanOp op, Block &out) {
    return decodeCombining(op, op.getSrcs(), op.getResults(), op.getAxis(), op.getCombine(), true,
                           out);
  }
  bool decodeSort(tile::SortOp op, Block &out);
  bool decodeCombining(Operation *op, ValueRange srcs, ValueRange results, int64_t axis,
                       mlir::Region &combine, bool scan, Block &out);

  // The pieces of decodeOp. `ins` comes with its location set; `rf` holds the
  // facts of the op's result where it has one.
  bool unsupported(Operation *op);
  bool defineResult(Operation *op, Instr &ins) { return define(op->getResult(0), &ins.dst); }
  bool alias(Operation *op, Value src, Value res);
  bool decodeElementwise(Operation *op, interp::Op code, Instr &ins, Block &out);
  std::optional<bool> decodeElementwiseOp(Operation &op, Instr &ins, Block &out);
  std::optional<bool> decodeAliasOp(Operation &op);
  bool decodeProgramId(tile::ProgramIdOp p, Instr &ins, Block &out);
  bool decodeNumPrograms(tile::NumProgramsOp p, Instr &ins, Block &out);
  bool decodeClusterSize(tile::ClusterSizeOp p, Instr &ins, Block &out);
  bool decodeMakeRange(tile::MakeRangeOp m, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeSplat(tile::SplatOp s, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeBroadcast(tile::BroadcastOp b, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeTrans(tile::TransOp t, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeGather(tile::GatherOp g, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeAddPtr(tile::AddPtrOp a, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeLoad(tile::LoadOp l, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeStore(tile::StoreOp s, Instr &ins, Block &out);
  bool decodeAtomicRMW(tile::AtomicRMWOp r, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeAtomicCAS(tile::AtomicCASOp c, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodeDot(tile::DotOp d, Instr &ins, const TypeFacts &rf, Block &out);
  bool decodePrint(tile::PrintOp p, Instr &ins, Block &out);
  bool decodeFor(scf::ForOp f, Instr &ins, Block &out);
  bool decodeWhile(scf::WhileOp w, Instr &ins, Block &out);
  bool decodeIf(scf::IfOp i, Instr &ins, Block &out);
};

bool Decoder::decodeBlock(mlir::Block &b, Block &out, Operation **terminator) {
  for (Operation &op : b) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (terminator)
        *terminator = &op;
      if (isa<func::ReturnOp>(op)) {
        Instr ins;
        ins.op = interp::Op::Return;
        if (!finish(ins, &op, out))
          return false;
      }
      continue;
    }
    if (!decodeOp(op, out))
      return false;
  }
  return true;
}

bool Decoder::decodeConstant(arith::ConstantOp op) {
  TypeFacts f;
  if (!facts(op.getType(), f) || f.kind == EK::Ptr)
    return fail(op, "does not support constants of type " + typeStr(op.getType()));
  unsigned esz = ekSize(f.kind);
  int64_t count = region ? region->capacity : f.n;
  std::vector<uint8_t> bytes(size_t(count) * esz);
  auto rawBits = [&](Attribute a, uint64_t &bits) -> bool {
    if (auto ia = dyn_cast<IntegerAttr>(a)) {
      bits = ia.getValue().getZExtValue();
      return true;
    }
    if (auto fa = dyn_cast<FloatAttr>(a)) {
      bits = fa.getValue().bitcastToAPInt().getZExtValue();
      return true;
    }
    return false;
  };
  auto put = [&](int64_t i, uint64_t bits) {
    if (f.kind == EK::I1)
      bits &= 1;
    std::memcpy(bytes.data() + size_t(i) * esz, &bits, esz);
  };
  Attribute value = op.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (dense.isSplat() || region) {
      uint64_t bits;
      if (!rawBits(dense.getSplatValue<Attribute>(), bits))
        return fail(op, "does not support this constant");
      for (int64_t i = 0; i < count; ++i)
        put(i, bits);
    } else {
      int64_t i = 0;
      for (Attribute a : dense.getValues<Attribute>()) {
        uint64_t bits;
        if (!rawBits(a, bits))
          return fail(op, "does not support this constant");
        put(i++, bits);
      }
    }
  } else {
    uint64_t bits;
    if (!rawBits(value, bits))
      return fail(op, "does not support this constant");
    for (int64_t i = 0; i < count; ++i)
      put(i, bits);
  }
  slotOf[op.getResult()] = constSlot(f.kind, count, bytes);
  return true;
}

// A reduce or a scan: the sources as (outer, R, inner) around the axis, and
// the combiner decoded as a region run over many element pairs at once.
bool Decoder::decodeCombining(Operation *op, ValueRange srcs, ValueRange results, int64_t axis,
                              mlir::Region &combine, bool scan, Block &out) {
  Instr ins;
  ins.op = scan ? interp::Op::Scan : interp::Op::Reduce;
  ins.loc = loc(op->getLoc());
  if (auto s = dyn_cast<tile::ScanOp>(op))
    ins.flag = s.getReverse();
  auto st = cast<RankedTensorType>(srcs[0].getType());
  int64_t outer = 1, inner = 1, R = st.getDimSize(axis);
  for (int64_t i = 0; i < axis; ++i)
    outer *= st.getDimSize(i);
  for (int64_t i = axis + 1; i < st.getRank(); ++i)
    inner *= st.getDimSize(i);
  ins.aux = {outer, R, inner};
  for (Value s : srcs)
    ins.ins.push_back(get(s));
  for (Value r : results) {
    int32_t s;
    if (!define(r, &s))
      return fail(op, "does not support the type " + typeStr(r.getType()));
    ins.outs.push_back(s);
  }
  if (region)
    return fail(op, "does not support a reduce or scan inside a combiner");
  ins.regions.emplace_back();
  Region &rg = ins.regions.back();
  rg.capacity = std::max<int64_t>(1, outer * (scan ? R : (R + 1) / 2) * inner);
  region = &rg;
  mlirRegion = &combine;
  captured.clear();
  mlir::Block &body = combine.front();
  bool ok = true;
  for (BlockArgument a : body.getArguments()) {
    int32_t s;
    if (!define(a, &s)) {
      ok = fail(op, "does not support the combiner argument type " + typeStr(a.getType()));
      break;
    }
    rg.body.args.push_back(s);
  }
  Operation *term = nullptr;
  if (ok)
    ok = decodeBlock(body, rg.body, &term);
  if (ok) {
    auto ret = dyn_cast_or_null<tile::ReduceReturnOp>(term);
    if (!ret)
      ok = fail(op, "expects the combiner to end with tile.reduce.return");
    else
      for (Value v : ret.getResults()) {
        int32_t s = get(v);
        if (s < 0) {
          ok = fail(op, "cannot find a combiner result");
          break;
        }
        rg.results.push_back(s);
      }
  }
  region = nullptr;
  mlirRegion = nullptr;
  captured.clear();
  if (!ok)
    return false;
  return finish(ins, op, out);
}

bool Decoder::decodeSort(tile::SortOp op, Block &out) {
  Instr ins;
  ins.op = interp::Op::Sort;
  ins.loc = loc(op.getLoc());
  auto st = cast<RankedTensorType>(op.getSrc().getType());
  TypeFacts f;
  if (!facts(st, f))
    return unsupported(op);
  ins.kind = f.kind;
  int64_t axis = op.getAxis(), outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= st.getDimSize(i);
  for (int64_t i = axis + 1; i < st.getRank(); ++i)
    inner *= st.getDimSize(i);
  ins.aux = {outer, st.getDimSize(axis), inner};
  ins.flag = op.getDescending();
  ins.pred = op.getUnsignedKeys();
  ins.a = get(op.getSrc());
  for (Value r : op->getResults()) {
    int32_t s;
    if (!define(r, &s))
      return fail(op, "does not support the type " + typeStr(r.getType()));
    ins.outs.push_back(s);
  }
  return finish(ins, op, out);
}

bool Decoder::unsupported(Operation *op) {
  return fail(op, "does not support '" + op->getName().getStringRef().str() + "'" +
                      (region ? " inside a reduce combiner" : ""));
}

// Elementwise ops: every operand and the result have the same shape.
bool Decoder::decodeElementwise(Operation *op, interp::Op code, Instr &ins, Block &out) {
  TypeFacts rf;
  if (op->getNumResults() != 1 || !facts(op->getResult(0).getType(), rf))
    return unsupported(op);
  ins.op = code;
  ins.kind = rf.kind;
  ins.n = region ? -1 : rf.n;
  int32_t *slots[] = {&ins.a, &ins.b, &ins.c, &ins.d};
  if (op->getNumOperands() > 4)
    return unsupported(op);
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    *slots[i] = get(op->getOperand(i));
  if (op->getNumOperands() > 0) {
    TypeFacts of;
    if (!facts(op->getOperand(0).getType(), of))
      return unsupported(op);
    ins.kind2 = of.kind;
  }
  if (!define(op->getResult(0), &ins.dst))
    return unsupported(op);
  return finish(ins, op, out);
}

// The elementwise ops (the only ones allowed in a reduce combiner); nullopt
// for any other op.
std::optional<bool> Decoder::decodeElementwiseOp(Operation &op, Instr &ins, Block &out) {
  llvm::StringRef name = op.getName().getStringRef();
  if (auto it = simpleOps().find(name); it != simpleOps().end())
    return decodeElementwise(&op, it->second, ins, out);
  if (auto it = mathUnary().find(name); it != mathUnary().end()) {
    ins.unary = it->second;
    return decodeElementwise(&op, interp::Op::MathUnary, ins, out);
  }
  if (auto it = mathBinary().find(name); it != mathBinary().end()) {
    ins.binary = it->second;
    return decodeElementwise(&op, interp::Op::MathBinary, ins, out);
  }
  if (auto c = dyn_cast<arith::CmpIOp>(op)) {
    ins.pred = int32_t(c.getPredicate());
    return decodeElementwise(&op, interp::Op::CmpI, ins, out);
  }
  if (auto c = dyn_cast<arith::CmpFOp>(op)) {
    ins.pred = int32_t(c.getPredicate());
    return decodeElementwise(&op, interp::Op::CmpF, ins, out);
  }
  if (auto s = dyn_cast<arith::SelectOp>(op)) {
    // Operands: a = condition, b = true value, c = false value.
    ins.flag = !isa<ShapedType>(s.getCondition().getType()) && isa<ShapedType>(s.getType());
    return decodeElementwise(&op, interp::Op::Select, ins, out);
  }
  if (auto t = dyn_cast<arith::TruncFOp>(op)) {
    if (auto rm = t.getRoundingmodeAttr())
      if (rm.getValue() != arith::RoundingMode::to_nearest_even)
        return fail(&op, "supports only round-to-nearest-even truncf");
    return decodeElementwise(&op, interp::Op::FloatCast, ins, out);
  }
  return std::nullopt;
}

// Ops whose result shares its operand's storage.
bool Decoder::alias(Operation *op, Value src, Value res) {
  TypeFacts f;
  if (!facts(res.getType(), f))
    return unsupported(op);
  slotOf[res] = aliasSlot(get(src), f.kind, region ? std::max<int64_t>(f.n, 1) * region->capacity : f.n);
  return true;
}

// The tile ops that only reinterpret their operand's storage; nullopt for others.
std::optional<bool> Decoder::decodeAliasOp(Operation &op) {
  if (auto b = dyn_cast<tile::BitcastOp>(op))
    return alias(&op, b.getSrc(), b.getResult());
  if (auto p = dyn_cast<tile::PtrToIntOp>(op))
    return alias(&op, p.getSrc(), p.getResult());
  if (auto r = dyn_cast<tile::ReshapeOp>(op))
    return alias(&op, r.getSrc(), r.getResult());
  if (auto x = dyn_cast<tile::ExpandDimsOp>(op))
    return alias(&op, x.getSrc(), x.getResult());
  if (auto h = dyn_cast<tile::HintOp>(op))
    return alias(&op, h.getSrc(), h.getResult());
  return std::nullopt;
}

bool Decoder::decodeProgramId(tile::ProgramIdOp p, Instr &ins, Block &out) {
  ins.op = interp::Op::ProgramId;
  ins.pred = int32_t(p.getAxis());
  return defineResult(p, ins) && finish(ins, p, out);
}

bool Decoder::decodeNumPrograms(tile::NumProgramsOp p, Instr &ins, Block &out) {
  ins.op = interp::Op::NumPrograms;
  ins.pred = int32_t(p.getAxis());
  return defineResult(p, ins) && finish(ins, p, out);
}

bool Decoder::decodeClusterSize(tile::ClusterSizeOp p, Instr &ins, Block &out) {
  ins.op = interp::Op::ClusterSize;
  return defineResult(p, ins) && finish(ins, p, out);
}

bool Decoder::decodeMakeRange(tile::MakeRangeOp m, Instr &ins, const TypeFacts &rf, Block &out) {
  ins.op = interp::Op::MakeRange;
  ins.aux = {int64_t(int32_t(m.getStart()))};
  ins.n = rf.n;
  return defineResult(m, ins) && finish(ins, m, out);
}

bool Decoder::decodeSplat(tile::SplatOp s, Instr &ins, const TypeFacts &rf, Block &out) {
  ins.op = interp::Op::Splat;
  ins.kind = rf.kind;
  ins.n = rf.n;
  ins.a = get(s.getSrc());
  return defineResult(s, ins) && finish(ins, s, out);
}

bool Decoder::decodeBroadcast(tile::BroadcastOp b, Instr &ins, const TypeFacts &rf, Block &out) {
  auto src = b.getSrc().getType();
  if (src == b.getType())
    return alias(b, b.getSrc(), b.getResult());
  ins.op = interp::Op::Broadcast;
  ins.kind = rf.kind;
  ins.n = rf.n;
  ins.a = get(b.getSrc());
  ins.shape = rf.shape;
  int64_t stride = 1;
  ins.aux.assign(rf.shape.size(), 0);
  for (size_t i = rf.shape.size(); i-- > 0;) {
    int64_t sd = src.getDimSize(int64_t(i));
    ins.aux[i] = (sd == 1 && rf.shape[i] != 1) ? 0 : stride;
    stride *= sd;
  }
  return defineResult(b, ins) && finish(ins, b, out);
}

bool Decoder::decodeTrans(tile::TransOp t, Instr &ins, const TypeFacts &rf, Block &out) {
  auto src = t.getSrc().getType();
  ins.op = interp::Op::Trans;
  ins.kind = rf.kind;
  ins.n = rf.n;
  ins.a = get(t.getSrc());
  ins.shape = rf.shape;
  std::vector<int64_t> sstride(size_t(src.getRank()));
  int64_t stride = 1;
  for (int64_t i = src.getRank(); i-- > 0;) {
    sstride[size_t(i)] = stride;
    stride *= src.getDimSize(i);
  }
  for (int32_t d : t.getOrder())
    ins.aux.push_back(sstride[size_t(d)]);
  return defineResult(t, ins) && finish(ins, t, out);
}

bool Decoder::decodeGather(tile::GatherOp g, Instr &ins, const TypeFacts &rf, Block &out) {
  TypeFacts xf;
  if (!facts(g.getIndex().getType(), xf))
    return unsupported(g);
  ins.op = interp::Op::Gather;
  ins.kind = rf.kind;
  ins.kind2 = xf.kind;
  ins.n = rf.n;
  ins.a = get(g.getSrc());
  ins.b = get(g.getIndex());
  ins.shape = rf.shape;
  auto src = g.getSrc().getType().getShape();
  ins.shape2.assign(src.begin(), src.end());
  ins.pred = int32_t(g.getAxis());
  return defineResult(g, ins) && finish(ins, g, out);
}

bool Decoder::decodeAddPtr(tile::AddPtrOp a, Instr &ins, const TypeFacts &rf, Block &out) {
  TypeFacts of;
  if (!facts(a.getOffset().getType(), of))
    return unsupported(a);
  ins.op = interp::Op::AddPtr;
  ins.kind = EK::Ptr;
  ins.kind2 = of.kind;
  ins.n = rf.n;
  ins.elemBytes = rf.pointeeBytes;
  ins.a = get(a.getPtr());
  ins.b = get(a.getOffset());
  return defineResult(a, ins) && finish(ins, a, out);
}

bool Decoder::decodeLoad(tile::LoadOp l, Instr &ins, const TypeFacts &rf, Block &out) {
  TypeFacts pf;
  if (!facts(l.getPtr().getType(), pf))
    return unsupported(l);
  ins.op = interp::Op::Load;
  ins.kind = rf.kind;
  ins.n = rf.n;
  ins.elemBytes = pf.pointeeBytes;
  ins.shape = pf.shape;
  ins.a = get(l.getPtr());
  ins.b = l.getMask() ? get(l.getMask()) : -1;
  ins.c = l.getOther() ? get(l.getOther()) : -1;
  return defineResult(l, ins) && finish(ins, l, out);
}

bool Decoder::decodeStore(tile::StoreOp s, Instr &ins, Block &out) {
  TypeFacts pf;
  if (!facts(s.getPtr().getType(), pf))
    return unsupported(s);
  ins.op = interp::Op::Store;
  ins.kind = pf.pointee;
  ins.n = pf.n;
  ins.elemBytes = pf.pointeeBytes;
  ins.shape = pf.shape;
  ins.a = get(s.getPtr());
  ins.b = get(s.getValue());
  ins.c = s.getMask() ? get(s.getMask()) : -1;
  return finish(ins, s, out);
}

bool Decoder::decodeAtomicRMW(tile::AtomicRMWOp r, Instr &ins, const TypeFacts &rf, Block &out) {
  TypeFacts pf;
  if (!facts(r.getPtr().getType(), pf))
    return unsupported(r);
  ins.op = interp::Op::AtomicRMW;
  ins.kind = rf.kind;
  ins.n = rf.n;
  ins.elemBytes = pf.pointeeBytes;
  ins.shape = pf.shape;
  switch (r.getKind()) {
  case tile::RMWKind::add: ins.pred = int32_t(RMW::Add); break;
  case tile::RMWKind::max: ins.pred = int32_t(RMW::Max); break;
  case tile::RMWKind::min: ins.pred = int32_t(RMW::Min); break;
  case tile::RMWKind::and_: ins.pred = int32_t(RMW::And); break;
  case tile::RMWKind::or_: ins.pred = int32_t(RMW::Or); break;
  case tile::RMWKind::xor_: ins.pred = int32_t(RMW::Xor); break;
  case tile::RMWKind::xchg: ins.pred = int32_t(RMW::Xchg); break;
  case tile::RMWKind::umax: ins.pred = int32_t(RMW::UMax); break;
  case tile::RMWKind::umin: ins.pred = int32_t(RMW::UMin); break;
  }
  ins.a = get(r.getPtr());
  ins.b = get(r.getValue());
  ins.c = r.getMask() ? get(r.getMask()) : -1;
  return defineResult(r, ins) && finish(ins, r, out);
}

bool Decoder::decodeAtomicCAS(tile::AtomicCASOp c, Instr &ins, const TypeFacts &rf, Block &out) {
  TypeFacts pf;
  if (!facts(c.getPtr().getType(), pf))
    return unsupported(c);
  ins.op = interp::Op::AtomicCAS;
  ins.kind = rf.kind;
  ins.n = rf.n;
  ins.elemBytes = pf.pointeeBytes;
  ins.shape = pf.shape;
  ins.a = get(c.getPtr());
  ins.b = get(c.getCmp());
  ins.c = get(c.getValue());
  return defineResult(c, ins) && finish(ins, c, out);
}

bool Decoder::decodeDot(tile::DotOp d, Instr &ins, const TypeFacts &rf, Block &out) {
  auto at = d.getA().getType(), bt = d.getB().getType();
  TypeFacts af;
  if (!facts(at, af))
    return unsupported(d);
  ins.op = interp::Op::Dot;
  ins.kind = rf.kind;
  ins.kind2 = af.kind;
  TypeFacts bf;
  if (!facts(bt, bf))
    return unsupported(d);
  ins.pred = int32_t(bf.kind); // B's kind: the two 8-bit float formats may mix
  ins.n = rf.n;
  ins.aux = {at.getDimSize(0), at.getDimSize(1), bt.getDimSize(1)};
  ins.flag = d.getInputPrecision() == tile::InputPrecision::tf32;
  ins.a = get(d.getA());
  ins.b = get(d.getB());
  ins.c = get(d.getAcc());
  return defineResult(d, ins) && finish(ins, d, out);
}

bool Decoder::decodePrint(tile::PrintOp p, Instr &ins, Block &out) {
  ins.op = interp::Op::Print;
  ins.text = p.getPrefix().str();
  for (Value v : p.getArgs()) {
    TypeFacts f;
    if (!facts(v.getType(), f))
      return unsupported(p);
    ins.ins.push_back(get(v));
    ins.aux.push_back(f.isTile ? int64_t(f.shape.size()) : -1);
    ins.shape.insert(ins.shape.end(), f.shape.begin(), f.shape.end());
  }
  return finish(ins, p, out);
}

bool Decoder::decodeFor(scf::ForOp f, Instr &ins, Block &out) {
  TypeFacts ivf;
  if (!facts(f.getInductionVar().getType(), ivf) || !ekIsInt(ivf.kind))
    return unsupported(f);
  ins.op = interp::Op::For;
  ins.kind2 = ivf.kind;
  ins.flag = f.getUnsignedCmp();
  ins.a = get(f.getLowerBound());
  ins.b = get(f.getUpperBound());
  ins.c = get(f.getStep());
  ins.blocks.emplace_back();
  Block &body = ins.blocks.back();
  mlir::Block &mb = *f.getBody();
  for (BlockArgument a : mb.getArguments()) {
    int32_t s;
    if (!define(a, &s))
      return fail(f, "does not support the loop-carried type " + typeStr(a.getType()));
    body.args.push_back(s);
  }
  std::vector<int32_t> iters(body.args.begin() + 1, body.args.end());
  ins.copies.push_back(copyGroup(f.getInitArgs(), iters));
  Operation *term = nullptr;
  if (!decodeBlock(mb, body, &term))
    return false;
  ins.copies.push_back(copyGroup(cast<scf::YieldOp>(term).getOperands(), iters));
  for (size_t i = 0; i < f.getNumResults(); ++i) {
    const SlotInfo &si = P.slots[size_t(iters[i])];
    slotOf[f.getResult(unsigned(i))] = aliasSlot(iters[i], si.kind, si.n);
  }
  return finish(ins, f, out);
}

bool Decoder::decodeWhile(scf::WhileOp w, Instr &ins, Block &out) {
  ins.op = interp::Op::While;
  ins.blocks.resize(2);
  mlir::Block &before = w.getBefore().front(), &after = w.getAfter().front();
  for (BlockArgument a : before.getArguments()) {
    int32_t s;
    if (!define(a, &s))
      return fail(w, "does not support the loop-carried type " + typeStr(a.getType()));
    ins.blocks[0].args.push_back(s);
  }
  ins.copies.push_back(copyGroup(w.getInits(), ins.blocks[0].args));
  Operation *term = nullptr;
  if (!decodeBlock(before, ins.blocks[0], &term))
    return false;
  auto cond = cast<scf::ConditionOp>(term);
  ins.a = get(cond.getCondition());
  for (BlockArgument a : after.getArguments()) {
    int32_t s;
    if (!define(a, &s))
      return fail(w, "does not support the loop-carried type " + typeStr(a.getType()));
    ins.blocks[1].args.push_back(s);
  }
  ins.copies.push_back(copyGroup(cond.getArgs(), ins.blocks[1].args));
  Operation *yterm = nullptr;
  if (!decodeBlock(after, ins.blocks[1], &yterm))
    return false;
  ins.copies.push_back(copyGroup(cast<scf::YieldOp>(yterm).getOperands(), ins.blocks[0].args));
  for (size_t i = 0; i < w.getNumResults(); ++i) {
    int32_t s = ins.blocks[1].args[i];
    const SlotInfo &si = P.slots[size_t(s)];
    slotOf[w.getResult(unsigned(i))] = aliasSlot(s, si.kind, si.n);
  }
  return finish(ins, w, out);
}

bool Decoder::decodeIf(scf::IfOp i, Instr &ins, Block &out) {
  ins.op = interp::Op::If;
  ins.a = get(i.getCondition());
  std::vector<int32_t> results;
  for (Value r : i.getResults()) {
    int32_t s;
    if (!define(r, &s))
      return fail(i, "does not support the type " + typeStr(r.getType()));
    results.push_back(s);
  }
  ins.blocks.resize(2);
  for (unsigned k = 0; k < 2; ++k) {
    mlir::Region &reg = k == 0 ? i.getThenRegion() : i.getElseRegion();
    if (reg.empty()) {
      ins.copies.emplace_back();
      continue;
    }
    Operation *term = nullptr;
    if (!decodeBlock(reg.front(), ins.blocks[k], &term))
      return false;
    if (auto y = dyn_cast_or_null<scf::YieldOp>(term))
      ins.copies.push_back(copyGroup(y.getOperands(), results));
    else
      ins.copies.emplace_back();
  }
  return finish(ins, i, out);
}

bool Decoder::decodeOp(Operation &op, Block &out) {
  Instr ins;
  ins.loc = loc(op.getLoc());
  llvm::StringRef name = op.getName().getStringRef();

  // Operands must all be known (and, in a combiner, scalars).
  for (Value v : op.getOperands())
    if (get(v) < 0)
      return fail(&op, "cannot use an operand of '" + name.str() + "'" +
                           (region ? " (a combiner may only capture scalars)" : ""));

  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return decodeConstant(c);
  if (std::optional<bool> done = decodeElementwiseOp(op, ins, out))
    return *done;
  if (auto b = dyn_cast<arith::BitcastOp>(op))
    return alias(&op, b.getIn(), b.getResult());

  if (region)
    return unsupported(&op); // only elementwise ops in a combiner

  if (std::optional<bool> done = decodeAliasOp(op))
    return *done;

  TypeFacts rf;
  if (op.getNumResults() == 1 && !facts(op.getResult(0).getType(), rf))
    return fail(&op, "does not support the type " + typeStr(op.getResult(0).getType()));

  return llvm::TypeSwitch<Operation *, bool>(&op)
      .Case([&](tile::ProgramIdOp p) { return decodeProgramId(p, ins, out); })
      .Case([&](tile::NumProgramsOp p) { return decodeNumPrograms(p, ins, out); })
      .Case([&](tile::ClusterSizeOp p) { return decodeClusterSize(p, ins, out); })
      .Case([&](tile::MakeRangeOp m) { return decodeMakeRange(m, ins, rf, out); })
      .Case([&](tile::SplatOp s) { return decodeSplat(s, ins, rf, out); })
      .Case([&](tile::BroadcastOp b) { return decodeBroadcast(b, ins, rf, out); })
      .Case([&](tile::TransOp t) { return decodeTrans(t, ins, rf, out); })
      .Case([&](tile::GatherOp t) { return decodeGather(t, ins, rf, out); })
      .Case([&](tile::AddPtrOp a) { return decodeAddPtr(a, ins, rf, out); })
      .Case([&](tile::LoadOp l) { return decodeLoad(l, ins, rf, out); })
      .Case([&](tile::StoreOp s) { return decodeStore(s, ins, out); })
      .Case([&](tile::AtomicRMWOp r) { return decodeAtomicRMW(r, ins, rf, out); })
      .Case([&](tile::AtomicCASOp c) { return decodeAtomicCAS(c, ins, rf, out); })
      .Case([&](tile::DotOp d) { return decodeDot(d, ins, rf, out); })
      .Case([&](tile::ReduceOp r) { return decodeReduce(r, out); })
      .Case([&](tile::ScanOp r) { return decodeScan(r, out); })
      .Case([&](tile::SortOp r) { return decodeSort(r, out); })
      .Case([&](tile::InlineAsmOp a) {
        return fail(a, "does not run inline_asm_elementwise: its PTX runs only on the GPU");
      })
      .Case([&](tile::PrintOp p) { return decodePrint(p, ins, out); })
      .Case([&](tile::BarrierOp) { return true; }) // one program is one thread of tiles
      // Launches run one after another: there is never a grid to wait for.
      .Case([&](tile::GridDependencyWaitOp) { return true; })
      .Case([&](tile::LaunchDependentsOp) { return true; })
      .Case([&](tile::AssertOp a) {
        TypeFacts f;
        if (!facts(a.getCond().getType(), f))
          return unsupported(a);
        ins.op = interp::Op::Assert;
        ins.a = get(a.getCond());
        ins.n = f.n;
        ins.shape = f.shape;
        ins.text = a.getMessage().str();
        return finish(ins, a, out);
      })
      // Structured control flow.
      .Case([&](scf::ForOp f) { return decodeFor(f, ins, out); })
      .Case([&](scf::WhileOp w) { return decodeWhile(w, ins, out); })
      .Case([&](scf::IfOp i) { return decodeIf(i, ins, out); })
      .Default([&](Operation *) { return unsupported(&op); });
}

bool Decoder::decodeKernel(func::FuncOp fn) {
  P.kernel = fn.getName().str();
  P.signature.name = P.kernel;
  auto sig = fn->getAttrOfType<ArrayAttr>("tile.signature");
  mlir::Block &entry = fn.getBody().front();
  for (unsigned i = 0; i < entry.getNumArguments(); ++i) {
    BlockArgument a = entry.getArgument(i);
    TypeFacts f;
    if (!facts(a.getType(), f) || f.isTile)
      return fail(fn, "does not support the parameter type " + typeStr(a.getType()));
    KernelParam kp;
    kp.name = "arg" + std::to_string(i);
    std::optional<DType> dt;
    if (sig && i < sig.size())
      if (auto s = dyn_cast<StringAttr>(sig[i])) {
        std::string text = s.str();
        size_t colon = text.rfind(':');
        if (colon != std::string::npos) {
          kp.name = text.substr(0, colon);
          dt = parseDType(text.substr(colon + 1));
        }
      }
    if (!dt) { // no signature: derive the type from the IR
      static const ScalarType byKind[] = {ScalarType::i1, ScalarType::i8, ScalarType::i16,
                                          ScalarType::i32, ScalarType::i64, ScalarType::f16,
                                          ScalarType::bf16, ScalarType::f32, ScalarType::f64,
                                          ScalarType::i64 /* Ptr: not reached */,
                                          ScalarType::f8e4m3, ScalarType::f8e5m2};
      Type t = a.getType();
      int depth = 0;
      while (auto pt = dyn_cast<tile::PtrType>(t)) {
        t = pt.getPointeeType();
        ++depth;
      }
      EK k;
      if (!elemKind(t, k) || k == EK::Ptr)
        return fail(fn, "does not support the parameter type " + typeStr(a.getType()));
      dt = DType{byKind[int(k)], depth};
    }
    kp.type = *dt;
    if (kp.type.isPointer() != (f.kind == EK::Ptr))
      return fail(fn, "found a tile.signature that does not match the parameter types");
    P.signature.params.push_back(kp);
    P.paramKinds.push_back(f.kind);
    int32_t s;
    define(a, &s);
    P.argSlots.push_back(s);
    P.body.args.push_back(s);
  }
  if (auto ce = fn->getAttrOfType<DictionaryAttr>("tile.constexprs"))
    for (NamedAttribute na : ce) {
      Attribute v = na.getValue();
      if (auto b = dyn_cast<BoolAttr>(v))
        P.signature.constexprs[na.getName().str()] = b.getValue();
      else if (auto ia = dyn_cast<IntegerAttr>(v))
        P.signature.constexprs[na.getName().str()] = ia.getInt();
      else if (auto fa = dyn_cast<FloatAttr>(v))
        P.signature.constexprs[na.getName().str()] = fa.getValueAsDouble();
      else if (auto sa = dyn_cast<StringAttr>(v))
        if (auto cv = parseConstexpr(sa.str())) // a type, or a quoted string
          P.signature.constexprs[na.getName().str()] = *cv;
    }
  if (!fn.getBody().hasOneBlock())
    return fail(fn, "supports only structured control flow (one block per kernel)");
  return decodeBlock(entry, P.body, nullptr);
}

std::shared_ptr<InterpProgram> decodeModule(std::shared_ptr<void> keep, ModuleOp module,
                                            const std::string &kernel, std::string &diag,
                                            const std::map<std::string, std::string> &sources) {
  func::FuncOp chosen;
  std::vector<std::string> names;
  bool anyKernel = false;
  for (auto fn : module.getOps<func::FuncOp>())
    anyKernel |= fn->hasAttr("tile.kernel");
  for (auto fn : module.getOps<func::FuncOp>()) {
    if ((anyKernel && !fn->hasAttr("tile.kernel")) || fn.isExternal())
      continue;
    names.push_back(fn.getName().str());
    if (kernel.empty() || fn.getName() == kernel)
      if (!chosen)
        chosen = fn;
  }
  if (!chosen) {
    diag = "error: no kernel named '" + kernel + "' in the module";
    return nullptr;
  }
  if (kernel.empty() && names.size() > 1) {
    diag = "error: the module defines " + std::to_string(names.size()) +
           " kernels; name the one to interpret";
    return nullptr;
  }
  auto prog = std::make_shared<InterpProgram>();
  std::string err;
  Decoder dec(prog->prog, err, sources);
  if (!dec.decodeKernel(chosen)) {
    diag += err + "\n";
    return nullptr;
  }
  prog->keepAlive = std::move(keep);
  return prog;
}

struct Holder {
  MLIRContext ctx{MLIRContext::Threading::DISABLED};
  OwningOpRef<ModuleOp> module;
};

// Every dialect that tile IR may contain.
void loadTileIRDialects(MLIRContext &ctx) {
  ctx.loadDialect<tile::TileDialect, tgpu::TileGPUDialect, arith::ArithDialect,
                  math::MathDialect, scf::SCFDialect, func::FuncDialect, cf::ControlFlowDialect>();
}

// Parses tile IR text (the compiler's output) into a context of its own.
std::shared_ptr<Holder> parseTileIR(const std::string &tileIR, std::string &diagnostics) {
  auto h = std::make_shared<Holder>();
  loadTileIRDialects(h->ctx);
  std::string errs;
  {
    ScopedDiagnosticHandler handler(&h->ctx, [&](Diagnostic &d) {
      std::string loc = locText(d.getLocation());
      errs += (loc.empty() ? std::string() : loc + ": ") + "error: " + d.str() + "\n";
      return success();
    });
    h->module = parseSourceString<ModuleOp>(tileIR, &h->ctx, "tile-ir");
  }
  if (!h->module) {
    diagnostics = errs.empty() ? "error: cannot parse the tile IR\n" : errs;
    return nullptr;
  }
  return h;
}

// The interpreter takes its tile IR from the compiler's public entry points,
// with source locations, so that its reports name .tile lines.
std::shared_ptr<InterpProgram> prepareFrom(const std::string &path, const std::string *text,
                                           const std::string &kernel,
                                           const CompileOptions &options, std::string &diag) {
  CompileOptions tileOnly = options;
  tileOnly.debugInfo = true;
  CompileResult r = text ? compileSource(*text, path, kernel, tileOnly)
                         : compileFile(path, kernel, tileOnly);
  diag = r.diagnostics;
  if (!r.ok)
    return nullptr;
  std::shared_ptr<Holder> h = parseTileIR(r.tileIR, diag);
  if (!h)
    return nullptr;
  ModuleOp m = *h->module;
  std::map<std::string, std::string> sources(r.sources.begin(), r.sources.end());
  return decodeModule(h, m, kernel, diag, sources);
}

} // namespace
} // namespace interp

std::shared_ptr<InterpProgram> prepareInterpreter(const std::string &path,
                                                  const std::string &kernel,
                                                  const CompileOptions &options,
                                                  std::string &diagnostics) {
  return interp::prepareFrom(path, nullptr, kernel, options, diagnostics);
}

std::shared_ptr<InterpProgram> prepareInterpreterSource(const std::string &source,
                                                        const std::string &virtualPath,
                                                        const std::string &kernel,
                                                        const CompileOptions &options,
                                                        std::string &diagnostics) {
  return interp::prepareFrom(virtualPath, &source, kernel, options, diagnostics);
}

std::shared_ptr<InterpProgram> prepareInterpreterIR(const std::string &tileIR,
                                                    const std::string &kernel,
                                                    std::string &diagnostics) {
  std::shared_ptr<interp::Holder> h = interp::parseTileIR(tileIR, diagnostics);
  if (!h)
    return nullptr;
  ModuleOp m = *h->module;
  return interp::decodeModule(h, m, kernel, diagnostics, {});
}

} // namespace tessera
