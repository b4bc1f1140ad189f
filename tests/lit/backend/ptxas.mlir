// libdevice math, a vector load, shared memory, a barrier and a shuffle,
// assembled by ptxas for sm_90 and sm_90a.
// REQUIRES: ptxas
// RUN: tessera-translate %s | FileCheck %s
// RUN: tessera-translate --emit=ptxas-report --arch=sm_90 %s | FileCheck %s --check-prefix=REPORT
// RUN: tessera-translate --emit=ptxas-report --arch=sm_90a %s | FileCheck %s --check-prefix=REPORT
// RUN: tessera-translate --emit=cubin --arch=sm_90 %s -o %t.cubin | FileCheck %s --check-prefix=REPORT
// RUN: test -s %t.cubin

// CHECK-LABEL: .entry reduce(
// CHECK: .reqntid 64
// CHECK: ld.global.v4.b32
// CHECK: ex2.approx
// CHECK: sqrt.rn.f32
// CHECK: st.shared
// CHECK: bar.sync 0;
// CHECK: shfl.sync.bfly.b32
// CHECK-NOT: __nv_
// CHECK-NOT: call

// REPORT: kernel reduce: registers={{[1-9][0-9]*}} spill_stores=0 spill_loads=0 shared=1024 stack=0

module attributes {tessera.num_warps = 2 : i32} {
  llvm.mlir.global internal @buf() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<256 x f32>
  func.func @reduce(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>) attributes {tessera.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %c4 = arith.constant 4 : i32
    %i = arith.muli %tid, %c4 : i32
    %px = llvm.getelementptr inbounds %x[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    %v = llvm.load %px {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
    %e = math.exp %v : vector<4xf32>
    %s = math.sqrt %e : vector<4xf32>
    %s0 = vector.extract %s[0] : f32 from vector<4xf32>
    %s3 = vector.extract %s[3] : f32 from vector<4xf32>
    %t = arith.addf %s0, %s3 : f32
    %b = llvm.mlir.addressof @buf : !llvm.ptr<3>
    %bp = llvm.getelementptr %b[%tid] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    llvm.store %t, %bp {alignment = 4 : i64} : f32, !llvm.ptr<3>
    nvvm.barrier0
    %c1 = arith.constant 1 : i32
    %nb = arith.xori %tid, %c1 : i32
    %bq = llvm.getelementptr %b[%nb] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, f32
    %w = llvm.load %bq {alignment = 4 : i64} : !llvm.ptr<3> -> f32
    %mask = arith.constant -1 : i32
    %c31 = arith.constant 31 : i32
    %c16 = arith.constant 16 : i32
    %sh = nvvm.shfl.sync bfly %mask, %w, %c16, %c31 : f32 -> f32
    %r = arith.addf %w, %sh : f32
    %py = llvm.getelementptr %y[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
    llvm.store %r, %py {alignment = 4 : i64} : f32, !llvm.ptr<1>
    return
  }
}
