// tessera-widen-float8 (compiler/transforms/WidenFloat8.cpp): arith and math
// ops on 8-bit floats run on f32, their operands widened by extf and a float
// result rounded back by truncf; a comparison keeps its i1 result. The ops
// that only move 8-bit values (select, constants, the conversions) stay.
// RUN: tessera-opt %s --tessera-widen-float8 | FileCheck %s

// CHECK-LABEL: func.func @arith
func.func @arith(%a: tensor<16xf8E4M3FN>, %b: tensor<16xf8E4M3FN>, %s: f8E5M2) -> (tensor<16xf8E4M3FN>, tensor<16xi1>, f8E5M2, tensor<16xf8E4M3FN>, tensor<16xf32>) {
  // CHECK: %[[A:.*]] = arith.extf %arg0 : tensor<16xf8E4M3FN> to tensor<16xf32>
  // CHECK: %[[B:.*]] = arith.extf %arg1 : tensor<16xf8E4M3FN> to tensor<16xf32>
  // CHECK: %[[SUM:.*]] = arith.addf %[[A]], %[[B]] : tensor<16xf32>
  // CHECK: %[[R:.*]] = arith.truncf %[[SUM]] : tensor<16xf32> to tensor<16xf8E4M3FN>
  %0 = arith.addf %a, %b : tensor<16xf8E4M3FN>
  // CHECK: arith.cmpf olt, {{.*}} : tensor<16xf32>
  // CHECK-NOT: truncf {{.*}} to tensor<16xi1>
  %1 = arith.cmpf olt, %a, %b : tensor<16xf8E4M3FN>
  // CHECK: %[[S:.*]] = arith.extf %arg2 : f8E5M2 to f32
  // CHECK: %[[E:.*]] = math.exp %[[S]] : f32
  // CHECK: arith.truncf %[[E]] : f32 to f8E5M2
  %2 = math.exp %s : f8E5M2
  // CHECK: arith.select %{{.*}}, %arg0, %[[R]] : tensor<16xi1>, tensor<16xf8E4M3FN>
  %3 = arith.select %1, %a, %0 : tensor<16xi1>, tensor<16xf8E4M3FN>
  // CHECK: arith.extf %arg1 : tensor<16xf8E4M3FN> to tensor<16xf32>
  // CHECK-NEXT: return
  %4 = arith.extf %b : tensor<16xf8E4M3FN> to tensor<16xf32>
  return %0, %1, %2, %3, %4 : tensor<16xf8E4M3FN>, tensor<16xi1>, f8E5M2, tensor<16xf8E4M3FN>, tensor<16xf32>
}
