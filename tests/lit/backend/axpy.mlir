// The PTX back end on a hand-written scalar kernel: PTX, LLVM IR, ptxas.
// RUN: tessera-translate --arch=sm_90 %s | FileCheck %s
// RUN: tessera-translate --emit=llvm %s | FileCheck %s --check-prefix=LLVM
// RUN: tessera-translate --arch=sm_80 %s | FileCheck %s --check-prefix=SM80

// CHECK: .version 8.5
// CHECK: .target sm_90
// CHECK-LABEL: .visible .entry axpy(
// CHECK: .reqntid 128
// CHECK-DAG: mov.u32 {{.*}}%tid.x;
// CHECK-DAG: mov.u32 {{.*}}%ctaid.x;
// CHECK: ld.global.b32
// CHECK: ld.global.b32
// CHECK: fma.rn.f32
// CHECK: st.global.b32
// CHECK: ret;

// LLVM: target triple = "nvptx64-nvidia-cuda"
// LLVM: define ptx_kernel void @axpy(ptr addrspace(1)
// LLVM: "nvvm.reqntid"="128"

// SM80: .target sm_80
// SM80: .entry axpy(

module attributes {tessera.num_warps = 4 : i32} {
  func.func @axpy(%x: !llvm.ptr<1>, %y: !llvm.ptr<1>, %a: f32, %n: i32) attributes {tessera.kernel} {
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %bid = nvvm.read.ptx.sreg.ctaid.x : i32
    %c128 = arith.constant 128 : i32
    %base = arith.muli %bid, %c128 : i32
    %i = arith.addi %base, %tid : i32
    %inb = arith.cmpi slt, %i, %n : i32
    scf.if %inb {
      %px = llvm.getelementptr %x[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %py = llvm.getelementptr %y[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      %vx = llvm.load %px {alignment = 4 : i64} : !llvm.ptr<1> -> f32
      %vy = llvm.load %py {alignment = 4 : i64} : !llvm.ptr<1> -> f32
      %ax = arith.mulf %a, %vx : f32
      %r = arith.addf %ax, %vy : f32
      llvm.store %r, %py {alignment = 4 : i64} : f32, !llvm.ptr<1>
    }
    return
  }
}
