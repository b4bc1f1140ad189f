// The tgpu dialect: layout encodings print and parse (with #mma / #opA / #opB
// aliases), convert_layout folds identities, chains and splat constants, and
// the verifiers reject malformed layouts.
// RUN: tessera-opt %s | tessera-opt | FileCheck %s --check-prefix=ROUND
// RUN: tessera-opt %s --canonicalize | FileCheck %s --check-prefix=FOLD

// ROUND: #mma = #tgpu.mma<version = 3, warps = 8, transposed = false>
// ROUND: #opA = #tgpu.dot_operand<opIdx = 0, parent = #mma>
// ROUND-LABEL: func.func @roundtrip
// ROUND: tgpu.convert_layout %{{.*}} : tensor<128x32xbf16> -> tensor<128x32xbf16, #opA>
// ROUND: tgpu.convert_layout %{{.*}} : tensor<128x128xf32, #mma> -> tensor<128x128xf32>

// FOLD-LABEL: func.func @roundtrip
// FOLD-NOT: tgpu.convert_layout
// FOLD: return
// FOLD-LABEL: func.func @fold_chain
// Two conversions (wgmma -> blocked -> mma.sync) become one.
// FOLD: %[[C:.*]] = tgpu.convert_layout %arg0 : tensor<64x64xf32, #{{mma[0-9]*}}> -> tensor<64x64xf32, #{{mma[0-9]*}}>
// FOLD-NEXT: return %[[C]]
// FOLD-LABEL: func.func @fold_back
// FOLD-NEXT: return %arg0
// FOLD-LABEL: func.func @fold_splat
// FOLD-NEXT: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #mma>
// FOLD-NEXT: return %[[Z]]
// FOLD-LABEL: func.func @fold_tile_splat
// FOLD-NEXT: %[[S:.*]] = tile.splat %arg0 : f32 -> tensor<128x128xf32, #mma>
// FOLD-NEXT: return %[[S]]


#mma = #tgpu.mma<version = 3, warps = 8, transposed = false>
#mma2 = #tgpu.mma<version = 2, warps = 4, transposed = false>
#mma4 = #tgpu.mma<version = 3, warps = 4, transposed = true>
#opA = #tgpu.dot_operand<opIdx = 0, parent = #mma>

func.func @roundtrip(%a: tensor<128x32xbf16>, %acc: tensor<128x128xf32, #mma>) {
  %0 = tgpu.convert_layout %a : tensor<128x32xbf16> -> tensor<128x32xbf16, #opA>
  %1 = tgpu.convert_layout %acc : tensor<128x128xf32, #mma> -> tensor<128x128xf32>
  return
}

func.func @fold_chain(%x: tensor<64x64xf32, #mma4>) -> tensor<64x64xf32, #mma2> {
  %0 = tgpu.convert_layout %x : tensor<64x64xf32, #mma4> -> tensor<64x64xf32>
  %1 = tgpu.convert_layout %0 : tensor<64x64xf32> -> tensor<64x64xf32, #mma2>
  return %1 : tensor<64x64xf32, #mma2>
}

func.func @fold_back(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = tgpu.convert_layout %x : tensor<64x64xf32> -> tensor<64x64xf32, #mma4>
  %1 = tgpu.convert_layout %0 : tensor<64x64xf32, #mma4> -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

func.func @fold_splat() -> tensor<128x128xf32, #mma> {
  %z = arith.constant dense<0.0> : tensor<128x128xf32>
  %0 = tgpu.convert_layout %z : tensor<128x128xf32> -> tensor<128x128xf32, #mma>
  return %0 : tensor<128x128xf32, #mma>
}

func.func @fold_tile_splat(%s: f32) -> tensor<128x128xf32, #mma> {
  %t = tile.splat %s : f32 -> tensor<128x128xf32>
  %0 = tgpu.convert_layout %t : tensor<128x128xf32> -> tensor<128x128xf32, #mma>
  return %0 : tensor<128x128xf32, #mma>
}

// Row and column vectors of a wgmma layout (tgpu.slice, #rows and #cols), and a
// load whose result is in one: its pointers are read at the layout's coordinates.
// ROUND-LABEL: func.func @slices
// ROUND: tile.load %{{.*}} : tensor<64x!tile.ptr<f32>> -> tensor<64xf32, #cols>
// ROUND: tile.expand_dims %{{.*}} {axis = 0 : i32} : tensor<64xf32, #cols> -> tensor<1x64xf32, #mma>
// ROUND: tgpu.convert_layout %{{.*}} : tensor<128xf32> -> tensor<128xf32, #rows>
func.func @slices(%p: tensor<64x!tile.ptr<f32>>, %r: tensor<128xf32>) {
  %0 = tile.load %p : tensor<64x!tile.ptr<f32>> -> tensor<64xf32, #tgpu.slice<dim = 0, parent = #mma>>
  %1 = tile.expand_dims %0 {axis = 0 : i32} : tensor<64xf32, #tgpu.slice<dim = 0, parent = #mma>> -> tensor<1x64xf32, #mma>
  %2 = tgpu.convert_layout %r : tensor<128xf32> -> tensor<128xf32, #tgpu.slice<dim = 1, parent = #mma>>
  return
}
