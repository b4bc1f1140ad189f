// Tile-level canonicalization patterns.
// RUN: tessera-opt %s -canonicalize | FileCheck %s

// Chained pointer offsets fold into one addptr with the summed offset.
// CHECK-LABEL: func.func @addptr_chain
// CHECK: %[[SUM:.*]] = arith.addi %arg1, %arg2 : tensor<64xi32>
// CHECK: %[[P:.*]] = tile.addptr %arg0, %[[SUM]]
// CHECK-NOT: tile.addptr
// CHECK: return %[[P]]
func.func @addptr_chain(%p: tensor<64x!tile.ptr<f32>>, %a: tensor<64xi32>, %b: tensor<64xi32>) -> tensor<64x!tile.ptr<f32>> {
  %0 = tile.addptr %p, %a : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %1 = tile.addptr %0, %b : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  return %1 : tensor<64x!tile.ptr<f32>>
}

// A zero offset is no offset.
// CHECK-LABEL: func.func @addptr_zero
// CHECK-NOT: tile.addptr
// CHECK: return %arg0
func.func @addptr_zero(%p: tensor<64x!tile.ptr<f32>>) -> tensor<64x!tile.ptr<f32>> {
  %z = arith.constant dense<0> : tensor<64xi32>
  %0 = tile.addptr %p, %z : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  return %0 : tensor<64x!tile.ptr<f32>>
}

// Shape ops of a splat become one splat of the final shape.
// CHECK-LABEL: func.func @splat_shapes
// CHECK: %[[S:.*]] = tile.splat %arg0 : i32 -> tensor<64x32xi32>
// CHECK-NOT: tile.expand_dims
// CHECK-NOT: tile.broadcast
// CHECK: return %[[S]]
func.func @splat_shapes(%x: i32) -> tensor<64x32xi32> {
  %0 = tile.splat %x : i32 -> tensor<64xi32>
  %1 = tile.expand_dims %0 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %2 = tile.broadcast %1 : tensor<64x1xi32> -> tensor<64x32xi32>
  return %2 : tensor<64x32xi32>
}

// A splat of a constant is a dense constant.
// CHECK-LABEL: func.func @splat_const
// CHECK: arith.constant dense<2.500000e+00> : tensor<16xf32>
// CHECK-NOT: tile.splat
func.func @splat_const() -> tensor<16xf32> {
  %c = arith.constant 2.5 : f32
  %0 = tile.splat %c : f32 -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
