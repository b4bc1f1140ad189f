// break and continue. Kernels keep structured control flow (scf), so an exit
// is a flag, not a jump: `break` sets the loop's break flag, `continue` its
// continue flag, and the statements after a possible exit run under a
// run-time `if` that tests both. The flags are ordinary frame variables with
// names no program can spell, so run-time `if`s merge them and loops carry
// them like any other variable. genFor/genWhile stop a loop once its break
// flag is set (IRGen.cpp).
#include "IRGen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace tessera::fe {

IRGen::OuterLoopExits IRGen::enterLoop() {
  OuterLoopExits outer;
  Scope &vars = frame().vars;
  for (auto [name, slot] : {std::pair{kBreakFlag, &outer.brk}, std::pair{kContinueFlag, &outer.cont}}) {
    auto it = vars.find(name);
    if (it != vars.end()) {
      *slot = it->second;
      vars.erase(it);
    }
  }
  frame().loopDepth++;
  return outer;
}

void IRGen::exitLoop(const OuterLoopExits &outer) {
  Scope &vars = frame().vars;
  vars.erase(kBreakFlag);
  vars.erase(kContinueFlag);
  if (outer.brk)
    vars[kBreakFlag] = *outer.brk;
  if (outer.cont)
    vars[kContinueFlag] = *outer.cont;
  frame().loopDepth--;
}

bool IRGen::genLoopExit(const Stmt &s) {
  const char *word = s.kind == StmtKind::Break ? "break" : "continue";
  if (frame().loopDepth == 0) {
    fail(s.loc, std::string("'") + word + "' outside a loop" +
                    (callStack_.empty() ? "" : " (a helper cannot leave its caller's loop)"));
    return false;
  }
  frame().vars[s.kind == StmtKind::Break ? kBreakFlag : kContinueFlag] = SemValue::ofBool(true);
  return true;
}

SemValue IRGen::iterationLeft(Loc l) {
  Value left;
  for (const char *name : {kBreakFlag, kContinueFlag}) {
    auto it = frame().vars.find(name);
    if (it == frame().vars.end())
      continue;
    const SemValue &f = it->second;
    if (f.kind == SemValue::Bool) {
      if (f.b)
        return SemValue::ofBool(true);
      continue;
    }
    left = left ? Value(arith::OrIOp::create(b_, loc(l), left, f.value)) : f.value;
  }
  if (!left)
    return SemValue::ofBool(false);
  return SemValue::ofRuntime(left, TileType{DType{ScalarType::i1, 0}, {}});
}

bool IRGen::genBlockFrom(const Block &block, size_t first) {
  for (size_t i = first; i < block.size(); ++i) {
    const Stmt &s = *block[i];
    if (frame().returned)
      break;
    if (s.kind == StmtKind::Break || s.kind == StmtKind::Continue)
      return genLoopExit(s); // what follows in this block never runs
    if (!genStmt(s))
      return false;
    if (i + 1 == block.size() || !mayExitLoop(s))
      continue;
    SemValue left = iterationLeft(s.loc);
    if (left.kind == SemValue::Bool) { // decided at compile time
      if (left.b)
        return true;
      continue;
    }
    Location ml = loc(s.loc);
    Value one = arith::ConstantOp::create(b_, ml, b_.getBoolAttr(true));
    Value stay = arith::XOrIOp::create(b_, ml, left.value, one);
    return genRuntimeIf(stay, s.loc, [&] {
      for (const char *name : {kBreakFlag, kContinueFlag}) // known false in here
        if (frame().vars.count(name))
          frame().vars[name] = SemValue::ofBool(false);
      return genBlockFrom(block, i + 1);
    }, [] { return true; });
  }
  return true;
}

} // namespace tessera::fe
