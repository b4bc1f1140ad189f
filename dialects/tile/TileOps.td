#ifndef TILE_OPS_TD
#define TILE_OPS_TD

include "TileDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

// A scalar or a tile of anything.
def Tile_Any : AnyTypeOf<[AnyType]>;
def Tile_I32Tile : RankedTensorOf<[I32]>;

//===----------------------------------------------------------------------===//
// Program identity
//===----------------------------------------------------------------------===//
def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "index of this program instance along a grid axis";
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_NumProgramsOp : Tile_Op<"num_programs", [Pure]> {
  let summary = "number of program instances along a grid axis";
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<2>]>:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
}

def Tile_ClusterSizeOp : Tile_Op<"cluster_size", [Pure]> {
  let summary = "programs in this program's thread-block cluster (at least 1)";
  // The GPU's %cluster_nctarank: the compile option cluster_size on sm_90+,
  // else 1. The interpreter runs no clusters: 1. The programs of a cluster
  // are consecutive along the grid's x axis.
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Tile construction and shape manipulation
//===----------------------------------------------------------------------===//
def Tile_MakeRangeOp : Tile_Op<"make_range", [Pure]> {
  let summary = "1-D tile [start, end) of i32";
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs Tile_I32Tile:$result);
  let assemblyFormat = "$start `,` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_SplatOp : Tile_Op<"splat", [Pure]> {
  let summary = "tile with every element equal to a scalar";
  let arguments = (ins AnyType:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure]> {
  let summary = "repeat size-1 dimensions of a tile to a larger shape";
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let hasFolder = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [Pure]> {
  let summary = "insert a size-1 dimension at `axis`";
  let arguments = (ins AnyRankedTensor:$src, I32Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [Pure]> {
  let summary = "reinterpret a tile with another shape of the same element count";
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_TransOp : Tile_Op<"trans", [Pure]> {
  let summary = "permute the dimensions of a tile";
  let arguments = (ins AnyRankedTensor:$src, DenseI32ArrayAttr:$order);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_GatherOp : Tile_Op<"gather", [Pure]> {
  let summary = "read a tile at run-time indices along one axis";
  let description = [{
    `result[c] = src[c with c[axis] replaced by index[c]]`: src and index have
    the same rank and agree on every other axis. A rank-1 src is a table that
    an index of any shape reads: `result[c] = src[index[c]]`. Indices must lie
    in `[0, src.shape[axis])`.
  }];
  let arguments = (ins AnyRankedTensor:$src, AnyRankedTensor:$index, I32Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src `[` $index `]` attr-dict `:` type($src) `,` type($index) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointers and memory
//===----------------------------------------------------------------------===//
def Tile_AddPtrOp : Tile_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "pointer arithmetic in units of the pointee";
  let arguments = (ins AnyType:$ptr, AnyType:$offset);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tile_LoadOp : Tile_Op<"load", [AttrSizedOperandSegments]> {
  let summary = "gather from global memory, with an optional mask and fill value";
  // cacheModifier: ".ca", ".cg" or ".cv" (PTX's ld cache operators);
  // evictionPolicy: "evict_first", "evict_last" or "evict_normal" (an L2
  // cache-eviction priority). Hints only: the values loaded are the same.
  // multicast: every program of the cluster loads the same tile here (the
  // program's promise); a warp-specialized dot loop may then copy it once
  // per cluster. The values loaded are the same either way.
  let arguments = (ins AnyType:$ptr, Optional<AnyType>:$mask, Optional<AnyType>:$other,
                       UnitAttr:$isVolatile, OptionalAttr<StrAttr>:$cacheModifier,
                       OptionalAttr<StrAttr>:$evictionPolicy, UnitAttr:$multicast);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $ptr (`mask` $mask^)? (`other` $other^)? attr-dict `:` type($ptr) `->` type($result)
    (`,` type($mask)^)? (`,` type($other)^)?
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store"> {
  let summary = "scatter to global memory, with an optional mask";
  // cacheModifier: ".wb", ".cg", ".cs" or ".wt" (PTX's st cache operators);
  // evictionPolicy as for loads.
  let arguments = (ins AnyType:$ptr, AnyType:$value, Optional<AnyType>:$mask,
                       OptionalAttr<StrAttr>:$cacheModifier, OptionalAttr<StrAttr>:$evictionPolicy);
  let assemblyFormat = [{
    $ptr `,` $value (`mask` $mask^)? attr-dict `:` type($ptr) `,` type($value) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

def Tile_AtomicRMWOp : Tile_Op<"atomic_rmw"> {
  let summary = "atomic read-modify-write; returns the old values";
  let arguments = (ins Tile_RMWKind:$kind, AnyType:$ptr, AnyType:$value, Optional<AnyType>:$mask,
                       DefaultValuedAttr<Tile_MemSem, "MemSem::acq_rel">:$sem,
                       DefaultValuedAttr<Tile_MemScope, "MemScope::gpu">:$scope);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $kind $ptr `,` $value (`mask` $mask^)? attr-dict `:` type($ptr) `,` type($value)
    (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_AtomicCASOp : Tile_Op<"atomic_cas"> {
  let summary = "atomic compare-and-swap; returns the old values";
  let arguments = (ins AnyType:$ptr, AnyType:$cmp, AnyType:$value,
                       DefaultValuedAttr<Tile_MemSem, "MemSem::acq_rel">:$sem,
                       DefaultValuedAttr<Tile_MemScope, "MemScope::gpu">:$scope);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$ptr `,` $cmp `,` $value attr-dict `:` type($ptr) `,` type($cmp) `,` type($value) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//
def Tile_DotOp : Tile_Op<"dot", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "tile matrix product with accumulation: acc + a @ b";
  let arguments = (ins AnyRankedTensor:$a, AnyRankedTensor:$b, AnyRankedTensor:$acc,
                       DefaultValuedAttr<Tile_InputPrecision, "InputPrecision::tf32">:$inputPrecision);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `*` type($b) `->` type($result)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tile_ReduceOp : Tile_Op<"reduce", [Pure]> {
  let summary = "reduce one or more same-shaped tiles along an axis with a combiner region";
  let arguments = (ins Variadic<AnyRankedTensor>:$srcs, I32Attr:$axis);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = "`(` $srcs `)` attr-dict `:` functional-type($srcs, $results) $combine";
  let hasRegionVerifier = 1;
}

def Tile_ScanOp : Tile_Op<"scan", [Pure]> {
  let summary = "inclusive prefix combination of one or more same-shaped tiles along an axis";
  let description = [{
    Element j of each result along `axis` combines elements 0..j of the
    sources, in order (the combiner's left argument is the earlier prefix).
    With `reverse`, it combines elements j..n-1: the scan of the sources
    flipped along the axis, flipped back.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$srcs, I32Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = "`(` $srcs `)` attr-dict `:` functional-type($srcs, $results) $combine";
  let hasRegionVerifier = 1;
}

def Tile_SortOp : Tile_Op<"sort", [Pure]> {
  let summary = "sort a tile along an axis; also the positions the elements came from";
  let description = [{
    Each line along `axis` is ordered by key, ascending (descending with
    `descending`); floats put NaN above +inf. Equal keys keep their order
    (the smaller original position first), so the result is unique:
    `indices` holds each element's original position along the axis.
    Integers compare as signed unless `unsignedKeys`.
  }];
  let arguments = (ins AnyRankedTensor:$src, I32Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$descending,
                       DefaultValuedAttr<BoolAttr, "false">:$unsignedKeys);
  let results = (outs AnyRankedTensor:$sorted, AnyRankedTensor:$indices);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($sorted) `,` type($indices)";
  let hasVerifier = 1;
}

def Tile_ReduceReturnOp : Tile_Op<"reduce.return", [Pure, Terminator,
                                                    ParentOneOf<["ReduceOp", "ScanOp"]>]> {
  let summary = "terminator of a reduce or scan combiner";
  let arguments = (ins Variadic<AnyType>:$results);
  let assemblyFormat = "$results attr-dict `:` type($results)";
}

def Tile_BitcastOp : Tile_Op<"bitcast", [Pure]> {
  let summary = "reinterpret the bits of each element as another type of equal width";
  let arguments = (ins AnyType:$src);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_PtrToIntOp : Tile_Op<"ptr_to_int", [Pure]> {
  let summary = "address of each pointer as i64";
  let arguments = (ins AnyType:$src);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_HintOp : Tile_Op<"hint", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "promise divisibility / contiguity facts about a value";
  let description = [{
    Same meaning as the axis-info analysis (and Triton's hints):
    `divisibility[d]`: the first element of every contiguous run along dimension d
    is a multiple of that value (bytes for pointers are derived from elements).
    `contiguity[d]`: runs of that many consecutive elements along d differ by 1.
    The axis-info analysis trusts these facts to vectorize memory accesses.
  }];
  let arguments = (ins AnyType:$src, OptionalAttr<DenseI32ArrayAttr>:$divisibility,
                       OptionalAttr<DenseI32ArrayAttr>:$contiguity);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
  let hasVerifier = 1;
}

def Tile_BarrierOp : Tile_Op<"barrier"> {
  let summary = "every thread of the program waits here (Triton's debug_barrier)";
  let description = [{
    A block-wide barrier: no thread of the program passes it before all have
    reached it, and memory operations before it complete first. A no-op in
    the interpreter, which runs a program's tiles as one.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_GridDependencyWaitOp : Tile_Op<"grid_dependency_wait"> {
  let summary = "waits for the previous kernel on the stream to finish (programmatic dependent launch)";
  let description = [{
    In a launch that may overlap the kernel before it on its stream
    (LaunchOptions::overlapPrevious, sm_90 and newer), the thread waits here
    until that kernel has finished and its writes are visible. Returns at
    once otherwise, and in the interpreter, which runs launches one after
    another. Lowers to griddepcontrol.wait on sm_90 and newer, to nothing
    before.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_LaunchDependentsOp : Tile_Op<"launch_dependents"> {
  let summary = "lets the next kernel on the stream start (programmatic dependent launch)";
  let description = [{
    Once every program of the grid has passed here (or ended), a kernel
    launched next on the stream with LaunchOptions::overlapPrevious may
    start, while this one still runs; its grid_dependency_wait still waits
    for this kernel's end. A hint: without it the next kernel starts when
    this one's programs have ended. Lowers to griddepcontrol.launch_dependents
    on sm_90 and newer, to nothing before and in the interpreter.
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_InlineAsmOp : Tile_Op<"inline_asm"> {
  let summary = "inline PTX applied to each element (Triton's inline_asm_elementwise)";
  let description = [{
    The operands are scalars or tiles of the result's shape; for each element
    the PTX `text` runs with that element of each tile operand, under LLVM-style
    `constraints` (the output first: "=r,r,r"). `pure` lets the compiler drop
    or merge it; otherwise it has side effects. GPU only: the interpreter
    cannot run PTX. With `pack` P > 1 one asm takes P elements: an operand
    or result narrower than 32 bits comes as P * bits / 32 registers of
    32 bits (the elements packed from the low bits up), a wider one as P
    registers; the P elements are any P of a thread's (elementwise, so the
    grouping does not matter).
  }];
  let arguments = (ins Variadic<AnyType>:$args, StrAttr:$text, StrAttr:$constraints, BoolAttr:$pure,
                       DefaultValuedAttr<I64Attr, "1">:$pack);
  let results = (outs AnyType:$result);
  let assemblyFormat = "`(` $args `)` $text `,` $constraints attr-dict `:` functional-type($args, $result)";
}

def Tile_AssertOp : Tile_Op<"assert"> {
  let summary = "device_assert: stop the kernel when an element of the condition is false";
  let description = [{
    The interpreter reports the first false element with the message and
    stops; the GPU calls __assertfail (the kernel ends with a device-side
    assert, which the next synchronization reports).
  }];
  let arguments = (ins AnyType:$cond, StrAttr:$message);
  let assemblyFormat = "$cond `,` $message attr-dict `:` type($cond)";
}

def Tile_PrintOp : Tile_Op<"print"> {
  let summary = "device-side print of scalars and tiles with a prefix";
  let arguments = (ins StrAttr:$prefix, Variadic<AnyType>:$args);
  let assemblyFormat = "$prefix (`,` $args^ `:` type($args))? attr-dict";
}

#endif
