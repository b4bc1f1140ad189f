#ifndef TILEGPU_ATTRS_TD
#define TILEGPU_ATTRS_TD

include "TileGPUDialect.td"

class TileGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<TileGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def TileGPU_MmaEncodingAttr : TileGPU_Attr<"MmaEncoding", "mma"> {
  let summary = "Tensor-core accumulator layout";
  let description = [{
    The registers of a tensor-core dot's accumulator over `warps` warps.
    - version 2: mma.sync m16n8 fragments over a grid of warps (the most
      square warp tile that divides the tile).
    - version 3: wgmma; warp w owns rows 16(w % 4).. of each 64-row block of
      its warpgroup, the m16n8 fragment order repeated along N.
    - transposed (version 3 only): the tile is computed as C^T = B^T A^T (tf32
      with B^T from registers); fragment coordinates are swapped.
  }];
  let parameters = (ins "unsigned":$version, "unsigned":$warps, "bool":$transposed);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TileGPU_DotOperandEncodingAttr : TileGPU_Attr<"DotOperandEncoding", "dot_operand"> {
  let summary = "An operand of a tensor-core dot";
  let description = [{
    Operand `opIdx` (0: A, 1: B) of a dot whose accumulator is in `parent`.
    The dot reads its operands from shared memory (ldmatrix or wgmma
    descriptors, in a swizzled layout chosen by the lowering), so a tile in
    this layout is never held in registers: converting a loaded tile to it
    costs nothing where the dot loop is pipelined (the copy writes the
    swizzled stage directly), and one store to shared memory elsewhere.
  }];
  let parameters = (ins "unsigned":$opIdx, "::tessera::tgpu::MmaEncodingAttr":$parent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TileGPU_SliceEncodingAttr : TileGPU_Attr<"SliceEncoding", "slice"> {
  let summary = "The row or column vector of a tensor-core accumulator layout";
  let description = [{
    A 1-D tile along one axis of `parent`, the other (`dim`) removed.
    `dim` = 1, the row vector (printed `#rows`), as a reduction along the
    rows of a tile in `parent` leaves it: element r is held, in registers, by
    every thread that owns row r in `parent`. So `x - max(x, 1)[:, None]` and
    the running row max and sum of an online softmax stay in registers.
    `dim` = 0, the column vector (`#cols`): element c is held by every thread
    that owns column c, so `x - m[None, :]` (attention backward's per-query
    statistics along the columns of S^T) reads registers. Only the wgmma
    layout (version 3, not transposed) has them: its warps split rows only.
  }];
  let parameters = (ins "unsigned":$dim, "::tessera::tgpu::MmaEncodingAttr":$parent);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif
