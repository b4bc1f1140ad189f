// tessera-substitute-induction-variables (compiler/transforms/SubstituteInductionVariables.cpp):
// an integer a loop advances by a fixed amount becomes a function of the
// induction variable, and the loop stops carrying it: the pass drops the
// iter_args a loop passes through unchanged, and their names in tile.carried.
// RUN: tessera-opt %s --tessera-substitute-induction-variables | FileCheck %s --check-prefix=NAMES
// RUN: tessera-opt %s --tessera-substitute-induction-variables --canonicalize | FileCheck %s

// A block pointer's offset: starts at %o, advances by the step (32).
// CHECK-LABEL: func.func @offset_by_step
// CHECK-SAME: (%[[LB:.*]]: i32, %[[UB:.*]]: i32, %[[O:.*]]: i32)
// CHECK: scf.for %[[IV:.*]] = %[[LB]] to %[[UB]] step %c32_i32 iter_args(%[[ACC:.*]] = %{{.*}}) -> (tensor<4xi32>)
// CHECK:   %[[J:.*]] = arith.subi %[[IV]], %[[LB]] : i32
// CHECK:   %[[X:.*]] = arith.addi %[[O]], %[[J]] : i32
// CHECK:   tile.splat %[[X]]
// CHECK:   scf.yield
func.func @offset_by_step(%lb: i32, %ub: i32, %o: i32) -> tensor<4xi32> {
  %c32 = arith.constant 32 : i32
  %z = arith.constant dense<0> : tensor<4xi32>
  %r:2 = scf.for %i = %lb to %ub step %c32 iter_args(%x = %o, %acc = %z) -> (i32, tensor<4xi32>) : i32 {
    %s = tile.splat %x : i32 -> tensor<4xi32>
    %a = arith.addi %acc, %s : tensor<4xi32>
    %c32b = arith.constant 32 : i32
    %n = arith.addi %x, %c32b : i32
    scf.yield %n, %a : i32, tensor<4xi32>
  }
  return %r#1 : tensor<4xi32>
}

// Step 1 with a loop-invariant advance %d: x0 + (iv - lb) * d. The result
// after the loop is x0 + max(0, ub - lb) * d.
// CHECK-LABEL: func.func @invariant_advance
// CHECK-SAME: (%[[UB:.*]]: i32, %[[D:.*]]: i32, %[[O:.*]]: i32)
// CHECK: scf.for %[[IV:.*]] = %c0_i32 to %[[UB]] step %c1_i32 iter_args
// CHECK:   %[[M:.*]] = arith.muli %[[IV]], %[[D]] : i32
// CHECK:   arith.addi %[[O]], %[[M]] : i32
// CHECK: %[[T:.*]] = arith.maxsi %[[UB]], %c0_i32 : i32
// CHECK: %[[L:.*]] = arith.muli %[[T]], %[[D]] : i32
// CHECK: %[[LAST:.*]] = arith.addi %[[O]], %[[L]] : i32
// CHECK: return %{{.*}}, %[[LAST]]
func.func @invariant_advance(%ub: i32, %d: i32, %o: i32) -> (tensor<4xi32>, i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant dense<0> : tensor<4xi32>
  %r:2 = scf.for %i = %c0 to %ub step %c1 iter_args(%x = %o, %acc = %z) -> (i32, tensor<4xi32>) : i32 {
    %s = tile.splat %x : i32 -> tensor<4xi32>
    %a = arith.addi %acc, %s : tensor<4xi32>
    %n = arith.addi %d, %x : i32
    scf.yield %n, %a : i32, tensor<4xi32>
  }
  return %r#1, %r#0 : tensor<4xi32>, i32
}

// Left alone: an advance that is not a multiple of the step, and one that
// changes inside the loop.
// CHECK-LABEL: func.func @not_inductions
// CHECK: scf.for {{.*}} iter_args(%[[X:.*]] = %{{.*}}, %[[Y:.*]] = %{{.*}}) -> (i32, i32)
// CHECK:   arith.addi %[[X]], %c24_i32
// CHECK:   arith.addi %[[Y]], %{{.*}}
func.func @not_inductions(%lb: i32, %ub: i32) -> (i32, i32) {
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %c24 = arith.constant 24 : i32
  %r:2 = scf.for %i = %lb to %ub step %c16 iter_args(%x = %c0, %y = %c0) -> (i32, i32) : i32 {
    %n = arith.addi %x, %c24 : i32
    %m = arith.addi %y, %i : i32
    scf.yield %n, %m : i32, i32
  }
  return %r#0, %r#1 : i32, i32
}

// A block pointer's numbers, carried one by one: its base passes through,
// its offset advances. Only the accumulator stays, with its name.
// NAMES-LABEL: func.func @names
// NAMES: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<4xi32>)
// NAMES: } {tile.carried = ["acc"]}
func.func @names(%lb: i32, %ub: i32, %o: i32, %p: i32) -> tensor<4xi32> {
  %c16 = arith.constant 16 : i32
  %z = arith.constant dense<0> : tensor<4xi32>
  %r:3 = scf.for %i = %lb to %ub step %c16 iter_args(%base = %p, %x = %o, %acc = %z) -> (i32, i32, tensor<4xi32>) : i32 {
    %s = tile.splat %x : i32 -> tensor<4xi32>
    %t = tile.splat %base : i32 -> tensor<4xi32>
    %u = arith.addi %s, %t : tensor<4xi32>
    %a = arith.addi %acc, %u : tensor<4xi32>
    %n = arith.addi %x, %c16 : i32
    scf.yield %base, %n, %a : i32, i32, tensor<4xi32>
  } {tile.carried = ["bp", "bp", "acc"]}
  return %r#2 : tensor<4xi32>
}
