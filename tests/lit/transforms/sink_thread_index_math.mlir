// tessera-sink-thread-index-math: per-thread index arithmetic at a kernel's
// entry moves down to the first top-level op that uses it, when a loop (or
// many ops) lies in between; ops with two live operands, memory effects or
// nearby users stay.
// RUN: tessera-opt %s --tessera-sink-thread-index-math | FileCheck %s

// CHECK-LABEL: func.func @across_a_loop
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x
// CHECK-NEXT: %[[NEAR:.*]] = arith.addi %[[TID]], %c1
// CHECK-NEXT: %[[LOAD:.*]] = llvm.load
// CHECK-NEXT: %[[MIXED:.*]] = arith.addi %[[TID]], %[[LOAD]]
// CHECK-NEXT: llvm.store %[[NEAR]]
// CHECK-NEXT: scf.for
// CHECK: }
// The coordinate chain that only the code after the loop reads moves there.
// CHECK-NEXT: %[[ROW:.*]] = arith.shrui %[[TID]], %c2
// CHECK-NEXT: %[[COL:.*]] = arith.addi %[[ROW]], %c121
// CHECK-NEXT: llvm.store %[[COL]]
// CHECK-NEXT: %[[TWO:.*]] = arith.addi %[[TID]], %arg1
// CHECK-NEXT: llvm.store %[[TWO]]
// CHECK-NEXT: llvm.store %[[MIXED]]
func.func @across_a_loop(%out: !llvm.ptr<1>, %n: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c4 = arith.constant 4 : index
  %c121 = arith.constant 121 : i32
  %one = arith.constant 1 : index
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %row = arith.shrui %tid, %c2 : i32
  %col = arith.addi %row, %c121 : i32
  %near = arith.addi %tid, %c1 : i32
  // A kernel parameter is free to read: this one moves too ...
  %two = arith.addi %tid, %n : i32
  // ... but one that reads two values in registers stays.
  %load = llvm.load %out : !llvm.ptr<1> -> i32
  %mixed = arith.addi %tid, %load : i32
  llvm.store %near, %out : i32, !llvm.ptr<1>
  scf.for %i = %c0 to %c4 step %one {
    nvvm.barrier0
  }
  llvm.store %col, %out : i32, !llvm.ptr<1>
  llvm.store %two, %out : i32, !llvm.ptr<1>
  llvm.store %mixed, %out : i32, !llvm.ptr<1>
  return
}

// With nothing but a few ops between, the order stays as it was.
// CHECK-LABEL: func.func @nearby
// CHECK: nvvm.read.ptx.sreg.tid.x
// CHECK-NEXT: arith.addi
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: llvm.store
func.func @nearby(%out: !llvm.ptr<1>) {
  %c1 = arith.constant 1 : i32
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %x = arith.addi %tid, %c1 : i32
  nvvm.barrier0
  llvm.store %x, %out : i32, !llvm.ptr<1>
  return
}
