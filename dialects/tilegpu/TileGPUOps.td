#ifndef TILEGPU_OPS_TD
#define TILEGPU_OPS_TD

include "TileGPUAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class TileGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<TileGPU_Dialect, mnemonic, traits>;

def TileGPU_ConvertLayoutOp : TileGPU_Op<"convert_layout",
    [Pure, SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "The same tile in another layout";
  let description = [{
    Redistributes a tile over the threads. Between register layouts this goes
    through shared memory (a store, a barrier, loads); to a dot-operand layout
    it is the dot's own staging. `tessera-remove-layout-conversions` removes
    the conversions that rematerializing, sinking or retyping a loop makes
    needless.
  }];
  let arguments = (ins AnyRankedTensor:$src);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

#endif
