// The wgmma path of tessera-lower-to-nvvm, from layout IR. The input is what
// tessera-assign-layouts gives a 128x128x32 f16 dot loop for 8 warps on
// sm_90a: the accumulator in the wgmma layout (#tgpu.mma version 3, 8 warps:
// two warpgroups of 64 rows), A and B converted to its operand layouts. A
// (row stride 1024) and B (row stride 128) are row-major with constant
// strides, so the loop is pipelined; the loads have no masks, so there is no
// tensor map (TMA needs a mask that bounds the box: tma_from_layout.mlir).
//
// Without warp specialization (and without TMA): every warp copies by
// cp.async and multiplies. Prologue of num_stages - 2 = 2 groups; per
// iteration a wait for the oldest group, the async-proxy fence and a
// barrier, wgmma.fence, two k16 wgmmas per warpgroup (BK = 32) with B
// N-major (the transpose immediate 1), the copies of iteration i + 2, and a
// wait that leaves one wgmma group in flight. No mma.sync, no ldmatrix, and
// the block stays at 8 warps.
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 tma=false warp-specialize=false" --tessera-lower-to-nvvm | FileCheck %s --implicit-check-not=mma.sync --implicit-check-not=ldmatrix --implicit-check-not=mbarrier
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 tma=false warp-specialize=false" --tessera-lower-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// With warp specialization (the default; tma=false keeps cp.async copies,
// and the loads cannot have tensor maps anyway): every 16-byte copy is whole
// (no masks), so a producer warpgroup copies alone. The block grows to 12
// warps; the producers wait on `empty`, copy, arrive on `full` and exit,
// the consumers wait on `full`, run the wgmmas and arrive on `empty`.
// (persistent-launch=false pins the one-block-per-program form; persistent_launch.tile covers the other.)
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 tma=false persistent-launch=false" --tessera-lower-to-nvvm | FileCheck %s --check-prefix=WS --implicit-check-not=mma.sync
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 tma=false persistent-launch=false" --tessera-lower-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=WS-REMARK

// Four stages of 128x32 A and 32x128 B f16 tiles (8 KiB each), and the
// epilogue's 128 rows of 128 f32 padded to 528 bytes.
// CHECK-LABEL: func.func @mm
// CHECK-SAME: tessera.kernel, tessera.num_warps = 8 : i32, tessera.shared_bytes = 133120 : i32
// CHECK-NOT: wgmma
// CHECK: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// CHECK: "cp.async.commit_group;"
// CHECK-NOT: wgmma
// CHECK: "cp.async.commit_group;"
// CHECK-NOT: wgmma
// CHECK: scf.for
// CHECK: "cp.async.wait_group 1;"
// CHECK-NEXT: "fence.proxy.async.shared::cta;"
// CHECK-NEXT: nvvm.barrier0
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK-COUNT-2: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, p, 1, 1, 0, 1;
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// CHECK: "cp.async.commit_group;"
// CHECK: "wgmma.wait_group.sync.aligned 1;"
// CHECK: scf.yield
// After the loop: all wgmmas and copies complete, then the epilogue.
// CHECK-NOT: wgmma.mma_async
// CHECK: "wgmma.wait_group.sync.aligned 0;"
// CHECK: "cp.async.wait_group 0;"
// CHECK: arith.muli {{.*}}%c528_i32
// CHECK: nvvm.barrier0
// CHECK: llvm.store {{.*}} : vector<2xf32>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xf32>
// CHECK: llvm.store {{.*}} : vector<4xf32>, !llvm.ptr<1>
// CHECK: return

// REMARK: remark: dot loop pipelined: wgmma m64n128k16, 4 stages{{$}}

// WS-LABEL: func.func @mm
// WS-SAME: nvvm.maxnreg = 168 : i32, tessera.kernel, tessera.num_warps = 12 : i32
// WS: "mbarrier.init.shared::cta.b64 [$0], $1;"
// WS: nvvm.barrier0
// WS: arith.cmpi uge, {{.*}}, %c256_i32
// WS: "setmaxnreg.dec.sync.aligned.u32 104;"
// WS: scf.for
// WS: mbarrier.try_wait.parity.shared::cta.b64
// WS: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// WS: "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];"
// WS-NOT: wgmma
// WS: "exit;"
// WS: "setmaxnreg.inc.sync.aligned.u32 200;"
// WS: scf.for
// WS-NOT: nvvm.barrier0
// WS-NOT: cp.async.cg
// WS: mbarrier.try_wait.parity.shared::cta.b64
// WS: "fence.proxy.async.shared::cta;"
// WS: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// WS: "wgmma.wait_group.sync.aligned 1;"
// WS: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// WS: scf.yield
// After the producers exited, barriers name the 256 consumer threads.
// WS: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32

// WS-REMARK: remark: dot loop pipelined: wgmma m64n128k16, 4 stages, warp-specialized (a producer warpgroup copies){{$}}

#mma = #tgpu.mma<version = 3, warps = 8, transposed = false>
#opA = #tgpu.dot_operand<opIdx = 0, parent = #mma>
#opB = #tgpu.dot_operand<opIdx = 1, parent = #mma>
module {
  // C (128 x 128, row stride 128) = A (128 x K, row stride 1024) @ B (K x 128, row stride 128).
  func.func @mm(%A: !tile.ptr<f16>, %B: !tile.ptr<f16>, %C: !tile.ptr<f32>, %K: i32) attributes {tile.kernel} {
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %lda = arith.constant dense<1024> : tensor<128x1xi32>
    %ldb = arith.constant dense<128> : tensor<32x1xi32>
    %ldc = arith.constant dense<128> : tensor<128x1xi32>
    %stepA = arith.constant dense<32> : tensor<128x32xi32>
    %stepB = arith.constant dense<4096> : tensor<32x128xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #mma>
    %rm = tile.make_range 0, 128 : tensor<128xi32>
    %rk = tile.make_range 0, 32 : tensor<32xi32>
    %rm1 = tile.expand_dims %rm {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %rn0 = tile.expand_dims %rm {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %rk1 = tile.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %rk0 = tile.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    // pa = A + rm[:, None] * 1024 + rk[None, :]
    %oa = arith.muli %rm1, %lda : tensor<128x1xi32>
    %a0 = tile.splat %A : !tile.ptr<f16> -> tensor<128x1x!tile.ptr<f16>>
    %a1 = tile.addptr %a0, %oa : tensor<128x1x!tile.ptr<f16>>, tensor<128x1xi32>
    %a2 = tile.broadcast %a1 : tensor<128x1x!tile.ptr<f16>> -> tensor<128x32x!tile.ptr<f16>>
    %ka = tile.broadcast %rk0 : tensor<1x32xi32> -> tensor<128x32xi32>
    %pa = tile.addptr %a2, %ka : tensor<128x32x!tile.ptr<f16>>, tensor<128x32xi32>
    // pb = B + rk[:, None] * 128 + rn[None, :]
    %ob = arith.muli %rk1, %ldb : tensor<32x1xi32>
    %b0 = tile.splat %B : !tile.ptr<f16> -> tensor<32x1x!tile.ptr<f16>>
    %b1 = tile.addptr %b0, %ob : tensor<32x1x!tile.ptr<f16>>, tensor<32x1xi32>
    %b2 = tile.broadcast %b1 : tensor<32x1x!tile.ptr<f16>> -> tensor<32x128x!tile.ptr<f16>>
    %nb = tile.broadcast %rn0 : tensor<1x128xi32> -> tensor<32x128xi32>
    %pb = tile.addptr %b2, %nb : tensor<32x128x!tile.ptr<f16>>, tensor<32x128xi32>
    %acc:3 = scf.for %k = %c0 to %K step %c32 iter_args(%c = %zero, %ia = %pa, %ib = %pb) -> (tensor<128x128xf32, #mma>, tensor<128x32x!tile.ptr<f16>>, tensor<32x128x!tile.ptr<f16>>) : i32 {
      %a = tile.load %ia : tensor<128x32x!tile.ptr<f16>> -> tensor<128x32xf16>
      %b = tile.load %ib : tensor<32x128x!tile.ptr<f16>> -> tensor<32x128xf16>
      %da = tgpu.convert_layout %a : tensor<128x32xf16> -> tensor<128x32xf16, #opA>
      %db = tgpu.convert_layout %b : tensor<32x128xf16> -> tensor<32x128xf16, #opB>
      %d = tile.dot %da, %db, %c : tensor<128x32xf16, #opA> * tensor<32x128xf16, #opB> -> tensor<128x128xf32, #mma>
      %na = tile.addptr %ia, %stepA : tensor<128x32x!tile.ptr<f16>>, tensor<128x32xi32>
      %nb2 = tile.addptr %ib, %stepB : tensor<32x128x!tile.ptr<f16>>, tensor<32x128xi32>
      scf.yield %d, %na, %nb2 : tensor<128x128xf32, #mma>, tensor<128x32x!tile.ptr<f16>>, tensor<32x128x!tile.ptr<f16>>
    }
    // pc = C + rm[:, None] * 128 + rn[None, :]; the accumulator is stored
    // from its mma layout.
    %oc = arith.muli %rm1, %ldc : tensor<128x1xi32>
    %p0 = tile.splat %C : !tile.ptr<f32> -> tensor<128x1x!tile.ptr<f32>>
    %p1 = tile.addptr %p0, %oc : tensor<128x1x!tile.ptr<f32>>, tensor<128x1xi32>
    %p2 = tile.broadcast %p1 : tensor<128x1x!tile.ptr<f32>> -> tensor<128x128x!tile.ptr<f32>>
    %nc = tile.broadcast %rn0 : tensor<1x128xi32> -> tensor<128x128xi32>
    %pc = tile.addptr %p2, %nc : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
    tile.store %pc, %acc#0 : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xf32, #mma>
    return
  }
}
