#ifndef TILE_DIALECT_TD
#define TILE_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::tessera::tile";
  let summary = "Tile-level IR produced by the Tessera front end";
  let description = [{
    Values are scalars or statically shaped tiles (builtin ranked tensors whose
    dimensions are powers of two). Pointers are `!tile.ptr<T>`; a tile of
    pointers is `tensor<...x!tile.ptr<T>>`. Arithmetic and math on tiles use the
    upstream `arith` and `math` dialects; structured control flow uses `scf`.
  }];
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect", "::mlir::func::FuncDialect"];
}

class Tile_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Tile_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Tile_PtrType : Tile_Type<"Ptr", "ptr"> {
  let summary = "Pointer to global memory holding elements of `pointeeType`";
  let parameters = (ins "::mlir::Type":$pointeeType);
  let assemblyFormat = "`<` $pointeeType `>`";
  let builders = [TypeBuilderWithInferredContext<(ins "::mlir::Type":$pointee), [{
    return $_get(pointee.getContext(), pointee);
  }]>];
}

def Tile_RMWKind : I32EnumAttr<"RMWKind", "atomic read-modify-write kind", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"max", 1>, I32EnumAttrCase<"min", 2>,
    I32EnumAttrCase<"and_", 3, "and">, I32EnumAttrCase<"or_", 4, "or">,
    I32EnumAttrCase<"xor_", 5, "xor">, I32EnumAttrCase<"xchg", 6>,
    I32EnumAttrCase<"umax", 7>, I32EnumAttrCase<"umin", 8>]> {
  let cppNamespace = "::tessera::tile";
}

// Memory-model semantics and scope of an atomic (PTX's .sem and .scope):
// acq_rel at gpu scope by default, as in Triton.
def Tile_MemSem : I32EnumAttr<"MemSem", "memory ordering of an atomic", [
    I32EnumAttrCase<"relaxed", 0>, I32EnumAttrCase<"acquire", 1>,
    I32EnumAttrCase<"release", 2>, I32EnumAttrCase<"acq_rel", 3>]> {
  let cppNamespace = "::tessera::tile";
}

def Tile_MemScope : I32EnumAttr<"MemScope", "the threads an atomic orders against", [
    I32EnumAttrCase<"gpu", 0>, I32EnumAttrCase<"cta", 1>, I32EnumAttrCase<"sys", 2>]> {
  let cppNamespace = "::tessera::tile";
}

def Tile_InputPrecision : I32EnumAttr<"InputPrecision", "precision of f32 dot operands", [
    I32EnumAttrCase<"tf32", 0>, I32EnumAttrCase<"ieee", 1>]> {
  let cppNamespace = "::tessera::tile";
}

#endif
