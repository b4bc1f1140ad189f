// The memory builtins (loads, stores, atomics): one handler per builtin or
// family of builtins (BuiltinCall.h), dispatched by IRGen::callBuiltin
// (Builtins.cpp).
#include "BuiltinCall.h"

#include "tile/TileDialect.h"

using namespace mlir;
namespace tile = tessera::tile;

namespace tessera::fe::builtins {

// cache_modifier= and eviction_policy= of a load or store (Triton's names
// and values), at a[first] and a[first + 1]: a null attribute when absent or
// "", else the string, checked against PTX's operators.
bool BuiltinCall::memoryHints(size_t first, bool isLoad, StringAttr &cop, StringAttr &evict) {
  const Arg &c = a[first], &e = a[first + 1];
  for (const Arg *arg : {&c, &e})
    if (arg->present && arg->value.kind != SemValue::Str) {
      fail(arg->loc, name + "() " + (arg == &c ? "cache_modifier" : "eviction_policy") +
                         " must be a string");
      return false;
    }
  std::string cs = c.present ? c.value.s : "", es = e.present ? e.value.s : "";
  // "\"a\", \"b\" or \"c\"": the values the tile dialect accepts.
  auto oneOf = [](ArrayRef<StringRef> values) {
    std::string s;
    for (size_t i = 0; i < values.size(); ++i)
      s += (i == 0 ? "\"" : i + 1 == values.size() ? " or \"" : ", \"") + values[i].str() + "\"";
    return s;
  };
  if (!cs.empty() && !llvm::is_contained(tile::cacheModifiers(isLoad), cs)) {
    fail(c.loc, name + "() cache_modifier must be " + oneOf(tile::cacheModifiers(isLoad)) +
                    " (or \"\"), got \"" + cs + "\"");
    return false;
  }
  if (!es.empty() && !llvm::is_contained(tile::evictionPolicies(), es)) {
    fail(e.loc, name + "() eviction_policy must be " + oneOf(tile::evictionPolicies()) +
                    " (or \"\"), got \"" + es + "\"");
    return false;
  }
  cop = cs.empty() ? StringAttr() : b_.getStringAttr(cs);
  evict = es.empty() ? StringAttr() : b_.getStringAttr(es);
  return true;
}

// A load or store names its memory by pointers, with `pointerOnly` (mask=,
// other=), or by a block pointer, with `blockOnly` (boundary_check=,
// padding_option=); not by a mix, and not by a tensor descriptor.
bool BuiltinCall::addressingArgs(const std::vector<std::pair<size_t, const char *>> &pointerOnly,
                                 const std::vector<std::pair<size_t, const char *>> &blockOnly) {
  const SemValue &p = a[0].value;
  if (p.kind == SemValue::BlockPtr && p.descriptor) {
    fail(a[0].loc, name + "() takes a pointer or a block pointer; " + name +
                       " through a tensor descriptor with desc." + name +
                       (name == "store" ? "(offsets, value)" : "(offsets)"));
    return false;
  }
  bool block = p.kind == SemValue::BlockPtr;
  for (auto [k, param] : block ? pointerOnly : blockOnly)
    if (!isNone(a[k])) {
      fail(a[k].loc, block ? name + "() through a block pointer takes boundary_check=, not " +
                                 param + "= (the block's extents bound it)"
                           : name + "() " + param + "= needs a block pointer from make_block_ptr()");
      return false;
    }
  return true;
}

SemValue BuiltinCall::onLoad() {
  if (!bind({{"ptr", "mask", "other", "volatile", "cache_modifier", "eviction_policy",
              "boundary_check", "padding_option", "multicast"},
             1}))
    return SemValue::invalid();
  if (!addressingArgs({{1, "mask"}, {2, "other"}}, {{6, "boundary_check"}, {7, "padding_option"}}))
    return SemValue::invalid();
  StringAttr cop, evict;
  if (!memoryHints(4, true, cop, evict))
    return SemValue::invalid();
  // volatile= of either form: True or False.
  auto isVolatile = [&]() -> std::optional<bool> {
    if (!a[3].present)
      return false;
    if (a[3].value.kind != SemValue::Bool) {
      fail(a[3].loc, "load() 'volatile' must be True or False");
      return std::nullopt;
    }
    return a[3].value.b;
  };
  if (a[0].value.kind == SemValue::BlockPtr) {
    const SemValue &bp = a[0].value;
    auto checked = boundaryCheckArg(a[6], bp.rank());
    auto padding = checked ? paddingArg(a[7]) : std::nullopt;
    auto vol = padding ? isVolatile() : std::nullopt;
    if (!vol)
      return SemValue::invalid();
    return loadBlock(bp, blockOffsets(bp), *checked, *padding, *vol, cop, evict);
  }
  if (!pointerArg(a[0]))
    return SemValue::invalid();
  SemValue ptr = a[0].value, mask, other;
  std::vector<SemValue *> vals{&ptr};
  if (!isNone(a[1])) {
    if (!maskArg(a[1], mask))
      return SemValue::invalid();
    vals.push_back(&mask);
  }
  if (!isNone(a[2])) {
    if (isNone(a[1]))
      return fail(a[2].loc, "load() 'other' needs a 'mask' (it fills the masked-off lanes)");
    other = castTo(a[2].value, ptr.type.elem.pointee(), a[2].loc);
    if (!other.ok())
      return other;
    vals.push_back(&other);
  }
  std::optional<bool> vol = isVolatile();
  if (!vol || !broadcastAll(vals))
    return SemValue::invalid();
  // multicast=: the program's promise that every program of its cluster
  // loads the same tile here (tile.load's multicast).
  std::optional<bool> multicast = flagArg(a[8], "multicast", false);
  if (!multicast)
    return SemValue::invalid();
  TileType t{ptr.type.elem.pointee(), ptr.type.shape};
  auto op = tile::LoadOp::create(b_, ml, toMlir(t), ptr.value, mask.ok() ? mask.value : Value(),
                                 other.ok() ? other.value : Value(), *vol, cop, evict, *multicast);
  return SemValue::ofRuntime(op.getResult(), t);
}

SemValue BuiltinCall::onStore() {
  if (!bind({{"ptr", "value", "mask", "cache_modifier", "eviction_policy", "boundary_check"}, 2}) ||
      !addressingArgs({{2, "mask"}}, {{5, "boundary_check"}}))
    return SemValue::invalid();
  StringAttr cop, evict;
  if (!memoryHints(3, false, cop, evict))
    return SemValue::invalid();
  if (a[0].value.kind == SemValue::BlockPtr) {
    const SemValue &bp = a[0].value;
    auto checked = boundaryCheckArg(a[5], bp.rank());
    if (!checked)
      return SemValue::invalid();
    return storeBlock(bp, blockOffsets(bp), *checked, a[1].value, a[1].loc, cop, evict);
  }
  if (!pointerArg(a[0]))
    return SemValue::invalid();
  SemValue ptr = a[0].value, mask;
  SemValue value = castTo(a[1].value, ptr.type.elem.pointee(), a[1].loc);
  if (!value.ok())
    return value;
  if (!broadcastWithMask({&ptr, &value}, a[2], mask))
    return SemValue::invalid();
  tile::StoreOp::create(b_, ml, ptr.value, value.value, mask.ok() ? mask.value : Value(), cop, evict);
  return SemValue::none();
}

// The sem= and scope= arguments of an atomic, at a[first] and a[first + 1]:
// Triton's names and defaults (acq_rel, gpu).
bool BuiltinCall::atomicOrdering(size_t first, tile::MemSem &sem, tile::MemScope &scope) {
  sem = tile::MemSem::acq_rel;
  scope = tile::MemScope::gpu;
  const Arg &s = a[first], &c = a[first + 1];
  if (s.present) {
    auto v = s.value.kind == SemValue::Str ? tile::symbolizeMemSem(s.value.s) : std::nullopt;
    if (!v) {
      fail(s.loc, name + "() sem must be \"relaxed\", \"acquire\", \"release\" or \"acq_rel\"");
      return false;
    }
    sem = *v;
  }
  if (c.present) {
    auto v = c.value.kind == SemValue::Str ? tile::symbolizeMemScope(c.value.s) : std::nullopt;
    if (!v) {
      fail(c.loc, name + "() scope must be \"gpu\", \"cta\" or \"sys\"");
      return false;
    }
    scope = *v;
  }
  return true;
}

// atomic_add, atomic_max, atomic_min, atomic_and, atomic_or, atomic_xor, atomic_xchg
SemValue BuiltinCall::onAtomicRMW() {
  if (!bind({{"ptr", "val", "mask", "sem", "scope"}, 2}) || !pointerArg(a[0]))
    return SemValue::invalid();
  tile::MemSem sem;
  tile::MemScope scope;
  if (!atomicOrdering(3, sem, scope))
    return SemValue::invalid();
  std::string k = name.substr(7);
  tile::RMWKind kind = k == "add" ? tile::RMWKind::add
                       : k == "max" ? tile::RMWKind::max
                       : k == "min" ? tile::RMWKind::min
                       : k == "and" ? tile::RMWKind::and_
                       : k == "or"  ? tile::RMWKind::or_
                       : k == "xor" ? tile::RMWKind::xor_
                                    : tile::RMWKind::xchg;
  SemValue ptr = a[0].value, mask;
  DType elem = ptr.type.elem.pointee();
  if (elem.isPointer() || scalarTypeBits(elem.scalar) < 16)
    return fail(a[0].loc, name + "() on " + elem.str() +
                              " elements is not supported; atomics need 16-, 32- or 64-bit numbers");
  // max and min compare unsigned elements as unsigned (atom.max.u32).
  if (isUnsigned(elem.scalar) && kind == tile::RMWKind::max)
    kind = tile::RMWKind::umax;
  if (isUnsigned(elem.scalar) && kind == tile::RMWKind::min)
    kind = tile::RMWKind::umin;
  bool bitwise = k == "and" || k == "or" || k == "xor";
  if (bitwise && isFloat(elem.scalar))
    return fail(a[0].loc, name + "() needs integer elements, got " + elem.str());
  SemValue value = castTo(a[1].value, elem, a[1].loc);
  if (!value.ok())
    return value;
  if (!broadcastWithMask({&ptr, &value}, a[2], mask))
    return SemValue::invalid();
  auto op = tile::AtomicRMWOp::create(b_, ml, value.value.getType(), kind, ptr.value,
                                      value.value, mask.ok() ? mask.value : Value(), sem, scope);
  return SemValue::ofRuntime(op.getResult(), value.type);
}

SemValue BuiltinCall::onAtomicCAS() {
  if (!bind({{"ptr", "cmp", "val", "sem", "scope"}, 3}) || !pointerArg(a[0]))
    return SemValue::invalid();
  tile::MemSem sem;
  tile::MemScope scope;
  if (!atomicOrdering(3, sem, scope))
    return SemValue::invalid();
  SemValue ptr = a[0].value;
  DType elem = ptr.type.elem.pointee();
  if (elem.isPointer() || scalarTypeBits(elem.scalar) < 32)
    return fail(a[0].loc, "atomic_cas() needs 32- or 64-bit elements, got " + elem.str());
  SemValue cmp = castTo(a[1].value, elem, a[1].loc);
  SemValue val = cmp.ok() ? castTo(a[2].value, elem, a[2].loc) : cmp;
  if (!val.ok() || !broadcastAll({&ptr, &cmp, &val}))
    return SemValue::invalid();
  auto op = tile::AtomicCASOp::create(b_, ml, val.value.getType(), ptr.value, cmp.value, val.value,
                                      sem, scope);
  return SemValue::ofRuntime(op.getResult(), val.type);
}

} // namespace tessera::fe::builtins
