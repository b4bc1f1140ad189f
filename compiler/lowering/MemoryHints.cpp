// Loads and stores of global memory with cache hints: Triton's
// cache_modifier (PTX's cache operators: ld .ca/.cg/.cv, st .wb/.cg/.cs/.wt)
// and eviction_policy (an L2 eviction priority, made once per kernel by
// createpolicy and passed to each access as its L2::cache_hint). PTX has no
// way to say either in LLVM IR, so a hinted access is one inline ld/st of
// the register's bits: .b8 to .b64, or .v4.b32 for 16 bytes. Without hints
// the access stays an LLVM load/store, so unhinted code is unchanged.
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
