// tile.dot's canonicalization (dialects/tile/TileOps.cpp): `acc + dot(a, b, 0)`,
// what `acc += dot(a, b)` writes, becomes `dot(a, b, acc)`, so that the dot
// accumulates in the tensor cores and its loop keeps the pipelined form. A dot
// with another accumulator, or with other users, stays.
// RUN: tessera-opt %s --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @float_acc
// CHECK-SAME: (%[[A:.*]]: tensor<16x16xf16>, %[[B:.*]]: tensor<16x16xf16>, %[[C:.*]]: tensor<16x16xf32>)
// CHECK-NEXT: %[[D:.*]] = tile.dot %[[A]], %[[B]], %[[C]] {inputPrecision = 1 : i32}
// CHECK-NEXT: return %[[D]]
func.func @float_acc(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = tile.dot %a, %b, %z {inputPrecision = 1 : i32} : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  %s = arith.addf %c, %d : tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}

// CHECK-LABEL: func.func @int_acc
// CHECK-NEXT: %[[D:.*]] = tile.dot %arg0, %arg1, %arg2
// CHECK-NEXT: return %[[D]]
func.func @int_acc(%a: tensor<16x32xi8>, %b: tensor<32x16xi8>, %c: tensor<16x16xi32>) -> tensor<16x16xi32> {
  %z = arith.constant dense<0> : tensor<16x16xi32>
  %d = tile.dot %a, %b, %z : tensor<16x32xi8> * tensor<32x16xi8> -> tensor<16x16xi32>
  %s = arith.addi %d, %c : tensor<16x16xi32>
  return %s : tensor<16x16xi32>
}

// CHECK-LABEL: func.func @stays
// CHECK: tile.dot %arg0, %arg1, %arg2
// CHECK: arith.addf
// CHECK: %[[Z:.*]] = tile.dot %arg0, %arg1, %cst
// CHECK: arith.addf %arg2, %[[Z]]
func.func @stays(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
  %z = arith.constant dense<0.0> : tensor<16x16xf32>
  // a nonzero accumulator: not folded
  %d = tile.dot %a, %b, %c : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  %s = arith.addf %c, %d : tensor<16x16xf32>
  // the dot's result is also returned: not folded
  %e = tile.dot %a, %b, %z : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
  %t = arith.addf %c, %e : tensor<16x16xf32>
  return %s, %t, %e : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}
