// Loads and stores of global memory with cache hints: Triton's
// cache_modifier (PTX's cache operators: ld .ca/.cg/.cv, st .wb/.cg/.cs/.wt)
// and eviction_policy (an L2 eviction priority, made once per kernel by
// createpolicy and passed to each access as its L2::cache_hint). PTX has no
// way to say either in LLVM IR, so a hinted access is one inline ld/st of
// the register's bits: .b8 to .b64, or .v4.b32 for 16 bytes. Without hints
// the access stays an LLVM load/store, so unhinted code is unchanged.
// Vector accesses predicated by a mask are inline PTX too (LLVM IR has no
// predicated load that keeps a fill value without a branch): `@p ld` into
// registers tied to the fill values, `@p st`, each with the hints.
#include "KernelLowering.h"

namespace tessera::lowering::detail {

Value KernelLowering::l2Policy(const std::string &evict) {
  Value &known = l2Policies_[evict];
  if (known)
    return known;
  OpBuilder::InsertionGuard g(b_);
  b_.setInsertionPointAfter(tid_.getDefiningOp());
  return known = sideEffectAsm({b_.getI64Type()}, {},
                               "createpolicy.fractional.L2::" + evict + ".b64 $0, 1.0;", "=l",
                               src_.getLoc())
                     .getResult(0);
}

Value KernelLowering::globalLoad(Type t, Value ptr, int64_t align, bool isVolatile, Location loc) {
  int64_t bits = registerBits(t);
  if (!hints_.any() || isVolatile || !(bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 128))
    return LLVM::LoadOp::create(b_, loc, t, ptr, align, isVolatile);
  std::string ld = "ld.global" + hints_.cop + (hints_.evict.empty() ? "" : ".L2::cache_hint");
  SmallVector<Value> operands{ptr};
  std::string hint;
  if (!hints_.evict.empty()) {
    operands.push_back(l2Policy(hints_.evict));
    hint = bits == 128 ? ", $5" : ", $2";
  }
  Type i32 = b_.getI32Type(), i16 = b_.getI16Type();
  Value raw; // the bits, as an integer or a vector of i32
  if (bits == 128) {
    auto v = sideEffectAsm({i32, i32, i32, i32}, operands,
                           ld + ".v4.b32 {$0, $1, $2, $3}, [$4]" + hint + ";",
                           std::string("=r,=r,=r,=r,l") + (hint.empty() ? "" : ",l"), loc);
    Value vec = LLVM::PoisonOp::create(b_, loc, VectorType::get({4}, i32));
    for (int64_t k = 0; k < 4; ++k)
      vec = LLVM::InsertElementOp::create(
          b_, loc, vec, LLVM::ExtractValueOp::create(b_, loc, v.getResult(0), ArrayRef<int64_t>{k}),
          i32c(k, loc));
    raw = vec;
  } else {
    // A byte loads into a 16-bit register (PTX has no 8-bit ones).
    Type rt = bits == 8 ? i16 : b_.getIntegerType(bits);
    std::string cons = bits == 64 ? "=l" : bits == 32 ? "=r" : "=h";
    raw = sideEffectAsm({rt}, operands, ld + ".b" + std::to_string(bits) + " $0, [$1]" + hint + ";",
                        cons + ",l" + (hint.empty() ? "" : ",l"), loc)
              .getResult(0);
    if (bits == 8)
      raw = arith::TruncIOp::create(b_, loc, b_.getI8Type(), raw);
  }
  if (raw.getType() == t)
    return raw;
  if (isa<LLVM::LLVMPointerType>(t))
    return LLVM::IntToPtrOp::create(b_, loc, t, raw);
  return LLVM::BitcastOp::create(b_, loc, t, raw);
}

SmallVector<Value> KernelLowering::packWords(ArrayRef<Value> lanes, Type et, Location loc) {
  int64_t eb = byteWidth(et);
  Type i32 = b_.getI32Type(), laneInt = b_.getIntegerType(unsigned(8 * eb));
  SmallVector<Value> words(static_cast<size_t>(int64_t(lanes.size()) * eb / 4));
  for (auto [v, x] : llvm::enumerate(lanes)) {
    Value o = x ? x : Value(arith::ConstantOp::create(b_, loc, b_.getZeroAttr(et)));
    Value bits = o.getType() == laneInt ? o : Value(arith::BitcastOp::create(b_, loc, laneInt, o));
    Value w = eb == 4 ? bits : Value(arith::ExtUIOp::create(b_, loc, i32, bits));
    if (int64_t shift = int64_t(v) * eb % 4 * 8)
      w = arith::ShLIOp::create(b_, loc, w, i32c(shift, loc));
    Value &word = words[v * eb / 4];
    word = word ? Value(arith::OrIOp::create(b_, loc, word, w)) : w;
  }
  return words;
}

SmallVector<Value> KernelLowering::unpackWords(ArrayRef<Value> words, Type et, Location loc) {
  int64_t eb = byteWidth(et);
  Type laneInt = b_.getIntegerType(unsigned(8 * eb));
  SmallVector<Value> lanes;
  for (int64_t v = 0; v < int64_t(words.size()) * 4 / eb; ++v) {
    Value w = words[size_t(v * eb / 4)];
    if (int64_t shift = v * eb % 4 * 8)
      w = arith::ShRUIOp::create(b_, loc, w, i32c(shift, loc));
    Value bits = eb == 4 ? w : Value(arith::TruncIOp::create(b_, loc, laneInt, w));
    lanes.push_back(bits.getType() == et ? bits : Value(arith::BitcastOp::create(b_, loc, et, bits)));
  }
  return lanes;
}

// A vector access of `n` 32-bit registers: its type suffix, and its
// registers $first.. ("$f" or "{$f, ...}").
static std::string vectorSuffix(int64_t n) { return n == 1 ? ".b32" : ".v" + std::to_string(n) + ".b32"; }
static std::string vectorRegs(int64_t first, int64_t n) {
  std::string regs;
  for (int64_t w = 0; w < n; ++w)
    regs += (w ? ", $" : "$") + std::to_string(first + w);
  return n == 1 ? regs : "{" + regs + "}";
}

SmallVector<Value> KernelLowering::predicatedVectorLoad(Type et, ArrayRef<Value> others, Value ptr,
                                                        Value mask, Location loc) {
  // The destination registers start as the fill values; `@p ld` overwrites
  // them only where the mask is on. No branch, so a tile's predicated loads
  // issue back to back, as its unmasked ones do.
  SmallVector<Value> fill = packWords(others, et, loc);
  int64_t n = int64_t(fill.size());
  SmallVector<Value> operands{ptr, arith::ExtUIOp::create(b_, loc, b_.getI32Type(), mask)};
  std::string cons;
  for (int64_t w = 0; w < n; ++w)
    cons += "=r,";
  cons += "l,r";
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(n + 1) + ", 0;\n@p ld.global" +
                     hints_.cop + (hints_.evict.empty() ? "" : ".L2::cache_hint") + vectorSuffix(n) + " " +
                     vectorRegs(0, n) + ", [$" + std::to_string(n) + "]";
  if (!hints_.evict.empty()) {
    operands.push_back(l2Policy(hints_.evict));
    cons += ",l";
    text += ", $" + std::to_string(n + 2);
  }
  text += ";\n}";
  for (int64_t w = 0; w < n; ++w) { // tied to the outputs: the fill values
    operands.push_back(fill[size_t(w)]);
    cons += "," + std::to_string(w);
  }
  auto asmOp = sideEffectAsm(SmallVector<Type>(size_t(n), b_.getI32Type()), operands, text, cons, loc);
  SmallVector<Value> words;
  for (int64_t w = 0; w < n; ++w)
    words.push_back(n == 1 ? asmOp.getResult(0)
                           : Value(LLVM::ExtractValueOp::create(b_, loc, asmOp.getResult(0),
                                                                ArrayRef<int64_t>{w})));
  return unpackWords(words, et, loc);
}

void KernelLowering::predicatedVectorStore(ArrayRef<Value> vals, Type et, Value ptr, Value mask,
                                           Location loc) {
  SmallVector<Value> words = packWords(vals, et, loc);
  int64_t n = int64_t(words.size());
  SmallVector<Value> operands{ptr, arith::ExtUIOp::create(b_, loc, b_.getI32Type(), mask)};
  operands.append(words.begin(), words.end());
  std::string cons = "l,r";
  for (int64_t w = 0; w < n; ++w)
    cons += ",r";
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $1, 0;\n@p st.global" + hints_.cop +
                     (hints_.evict.empty() ? "" : ".L2::cache_hint") + vectorSuffix(n) + " [$0], " +
                     vectorRegs(2, n);
  if (!hints_.evict.empty()) {
    operands.push_back(l2Policy(hints_.evict));
    cons += ",l";
    text += ", $" + std::to_string(n + 2);
  }
  text += ";\n}";
  sideEffectAsm({}, operands, text, cons + ",~{memory}", loc);
}

void KernelLowering::globalStore(Value v, Value ptr, int64_t align, Location loc) {
  Type t = v.getType();
  int64_t bits = registerBits(t);
  if (!hints_.any() || !(bits == 8 || bits == 16 || bits == 32 || bits == 64 || bits == 128)) {
    LLVM::StoreOp::create(b_, loc, v, ptr, align);
    return;
  }
  std::string st = "st.global" + hints_.cop + (hints_.evict.empty() ? "" : ".L2::cache_hint");
  Value policy = hints_.evict.empty() ? Value() : l2Policy(hints_.evict);
  Type i32 = b_.getI32Type();
  if (isa<LLVM::LLVMPointerType>(t))
    v = LLVM::PtrToIntOp::create(b_, loc, b_.getI64Type(), v);
  if (bits == 128) {
    Value vec = LLVM::BitcastOp::create(b_, loc, VectorType::get({4}, i32), v);
    SmallVector<Value> operands{ptr};
    for (int64_t k = 0; k < 4; ++k)
      operands.push_back(LLVM::ExtractElementOp::create(b_, loc, vec, i32c(k, loc)));
    if (policy)
      operands.push_back(policy);
    sideEffectAsm({}, operands,
                  st + ".v4.b32 [$0], {$1, $2, $3, $4}" + (policy ? ", $5;" : ";"),
                  std::string("l,r,r,r,r") + (policy ? ",l" : "") + ",~{memory}", loc);
    return;
  }
  Type it = b_.getIntegerType(bits);
  Value x = v.getType() == it ? v : Value(LLVM::BitcastOp::create(b_, loc, it, v));
  if (bits == 8) // from a 16-bit register
    x = arith::ExtUIOp::create(b_, loc, b_.getI16Type(), x);
  std::string cons = bits == 64 ? "l" : bits == 32 ? "r" : "h";
  SmallVector<Value> operands{ptr, x};
  if (policy)
    operands.push_back(policy);
  sideEffectAsm({}, operands,
                st + ".b" + std::to_string(bits) + " [$0], $1" + (policy ? ", $2;" : ";"),
                "l," + cons + (policy ? ",l" : "") + ",~{memory}", loc);
}

} // namespace tessera::lowering::detail
