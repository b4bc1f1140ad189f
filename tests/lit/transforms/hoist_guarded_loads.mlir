// tessera-hoist-guarded-loads (compiler/transforms/HoistGuardedLoads.cpp): a
// load in a branch whose condition was read from memory is issued before the
// branch when the block accesses the same pointer, with a mask that covers
// the load's, on every path. Every if below but @known_early takes its
// condition from a load (%c = load(flag) != 0).
// RUN: tessera-opt %s --tessera-hoist-guarded-loads | FileCheck %s

// A spin lock's critical section: the partial sums load together with the
// flag that selects the branch; the store after the if covers the addresses.
// CHECK-LABEL: func.func @store_after
// CHECK: %[[L:.*]] = tile.load %arg0 mask %arg1
// CHECK-NEXT: scf.if
// CHECK-NOT: tile.load
// CHECK: arith.addf %arg2, %[[L]]
// CHECK: tile.store %arg0
func.func @store_after(%p: tensor<4x!tile.ptr<f32>>, %m: tensor<4xi1>, %acc: tensor<4xf32>,
                       %flag: !tile.ptr<i32>, %cf: !tile.ptr<i32>) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %one = arith.constant 1 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %old = tile.atomic_rmw xchg %flag, %one : !tile.ptr<i32>, i32 -> i32
    scf.yield %acc : tensor<4xf32>
  } else {
    %l = tile.load %p mask %m : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>, tensor<4xi1>
    %s = arith.addf %acc, %l : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  tile.store %p, %r mask %m : tensor<4x!tile.ptr<f32>>, tensor<4xf32>, tensor<4xi1>
  return
}

// An unmasked store before the if covers a masked load in the then branch.
// CHECK-LABEL: func.func @store_before
// CHECK: tile.store %arg0
// CHECK-NEXT: tile.load %arg0 mask %arg1
// CHECK-NEXT: scf.if
func.func @store_before(%p: tensor<4x!tile.ptr<f32>>, %m: tensor<4xi1>, %v: tensor<4xf32>,
                        %cf: !tile.ptr<i32>) -> tensor<4xf32> {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  tile.store %p, %v : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  %r = scf.if %c -> (tensor<4xf32>) {
    %l = tile.load %p mask %m : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>, tensor<4xi1>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// Left in place: nothing else touches the addresses (`if n > 0: load(p)` may
// guard an invalid pointer).
// CHECK-LABEL: func.func @no_other_access
// CHECK: scf.if
// CHECK-NEXT: tile.load
func.func @no_other_access(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %cf: !tile.ptr<i32>) -> tensor<4xf32> {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %l = tile.load %p : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// The store's mask is another one (it may cover fewer lanes).
// CHECK-LABEL: func.func @other_mask
// CHECK: scf.if
// CHECK-NEXT: tile.load
func.func @other_mask(%p: tensor<4x!tile.ptr<f32>>, %m: tensor<4xi1>, %m2: tensor<4xi1>,
                      %v: tensor<4xf32>, %cf: !tile.ptr<i32>) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %l = tile.load %p mask %m : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>, tensor<4xi1>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r mask %m2 : tensor<4x!tile.ptr<f32>>, tensor<4xf32>, tensor<4xi1>
  return
}

// An atomic before the load in its branch orders it (an acquire).
// CHECK-LABEL: func.func @after_atomic
// CHECK: scf.if
// CHECK-NEXT: tile.atomic_rmw
// CHECK-NEXT: tile.load
func.func @after_atomic(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %flag: !tile.ptr<i32>,
                        %cf: !tile.ptr<i32>) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %one = arith.constant 1 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %old = tile.atomic_rmw xchg %flag, %one : !tile.ptr<i32>, i32 -> i32
    %l = tile.load %p : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// The pointer is computed in the branch.
// CHECK-LABEL: func.func @pointer_inside
// CHECK: scf.if
// CHECK-NEXT: tile.addptr
// CHECK-NEXT: tile.load
func.func @pointer_inside(%p: tensor<4x!tile.ptr<f32>>, %off: tensor<4xi32>, %v: tensor<4xf32>,
                          %cf: !tile.ptr<i32>) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %q = tile.addptr %p, %off : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
    %l = tile.load %q : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// A volatile load.
// CHECK-LABEL: func.func @volatile
// CHECK: scf.if
// CHECK-NEXT: tile.load %arg0 {isVolatile}
func.func @volatile(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %cf: !tile.ptr<i32>) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %l = tile.load %p {isVolatile} : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// An assert between the if and the store may stop the program first.
// CHECK-LABEL: func.func @assert_between
// CHECK: scf.if
// CHECK-NEXT: tile.load
func.func @assert_between(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %cf: !tile.ptr<i32>) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %l = tile.load %p : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.assert %c, "stop" : i1
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// Nested ifs: the load leaves both when the outer block stores the pointer.
// CHECK-LABEL: func.func @nested
// CHECK: tile.load %arg0
// CHECK-NEXT: scf.if
// CHECK-NOT: tile.load
// CHECK: tile.store %arg0
func.func @nested(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %cf: !tile.ptr<i32>, %d: i1) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %dv = arith.xori %c, %d : i1
    %i = scf.if %dv -> (tensor<4xf32>) {
      %l = tile.load %p : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
      scf.yield %l : tensor<4xf32>
    } else {
      scf.yield %v : tensor<4xf32>
    }
    scf.yield %i : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// Nested, but an assert after the inner if may stop the program before the
// outer block's store: the load stays.
// CHECK-LABEL: func.func @nested_assert
// CHECK: scf.if
// CHECK-NEXT: arith.xori
// CHECK-NEXT: scf.if
// CHECK-NEXT: tile.load
func.func @nested_assert(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %cf: !tile.ptr<i32>, %d: i1) {
  %cv = tile.load %cf : !tile.ptr<i32> -> i32
  %z0 = arith.constant 0 : i32
  %c = arith.cmpi ne, %cv, %z0 : i32
  %r = scf.if %c -> (tensor<4xf32>) {
    %dv = arith.xori %c, %d : i1
    %i = scf.if %dv -> (tensor<4xf32>) {
      %l = tile.load %p : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
      scf.yield %l : tensor<4xf32>
    } else {
      scf.yield %v : tensor<4xf32>
    }
    tile.assert %d, "stop" : i1
    scf.yield %i : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}

// A condition known early (an argument) hides no wait: the load stays.
// CHECK-LABEL: func.func @known_early
// CHECK: scf.if
// CHECK-NEXT: tile.load
func.func @known_early(%p: tensor<4x!tile.ptr<f32>>, %v: tensor<4xf32>, %k: i1) {
  %r = scf.if %k -> (tensor<4xf32>) {
    %l = tile.load %p : tensor<4x!tile.ptr<f32>> -> tensor<4xf32>
    scf.yield %l : tensor<4xf32>
  } else {
    scf.yield %v : tensor<4xf32>
  }
  tile.store %p, %r : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
  return
}
