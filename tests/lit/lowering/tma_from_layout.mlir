// The TMA path of tessera-lower-to-nvvm (TensorMapAnalysis.cpp, TmaCopies.cpp),
// from layout IR. The input is a 128x128x64 bf16 dot loop in the wgmma
// layout for 8 warps on sm_90a whose operand loads are boxes of 2-D tensors:
// each pointer tile is a pointer argument plus row * stride + column, and
// its mask bounds rows and columns (A: rm < M and rk < K - k; B: rk < K - k
// and rn < N; the k terms cancel against the pointer's advance). The row
// strides carry tile.divisibility = 16 (as --assume lda%16 writes it), which
// TMA needs for its 16-byte pitches; M, N and K need no facts (TMA clips the
// edges itself).
//
// Warp-specialized with TMA: two 128-byte __grid_constant__ tensor-map
// parameters after the kernel's own, described by tessera.tensor_maps for the
// runtime to encode at launch (box, swizzle, and the extents as linear forms
// [constant, argument, coefficient] of the kernel's arguments: A's columns
// are K = a5, its rows M = a3, its row pitch lda = a6; B's columns N = a4,
// rows K = a5, pitch ldb = a7). One producer thread expects each stage's
// bytes on `full` (one arrival) and issues one bulk copy per box (one for A,
// two 64-column boxes for B); the consumers need no proxy fence.
// (persistent-launch=false pins the one-block-per-program form; persistent_launch.tile covers the other.)
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 warp-specialize=true tma=true persistent-launch=false" --tessera-lower-to-nvvm | FileCheck %s --implicit-check-not=cp.async.cg --implicit-check-not=cp.async.mbarrier.arrive --implicit-check-not=mma.sync
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 warp-specialize=true tma=true persistent-launch=false" --tessera-lower-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// tma=false: no tensor maps and no extra parameters. Without TMA to clip the
// edges, a copy at a ragged edge (M, N, K of unknown divisibility) may be a
// partial 16-byte chunk, so there is no producer warpgroup either: all 8
// warps copy with predicated cp.async and multiply.
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 warp-specialize=true tma=false persistent-launch=false" --tessera-lower-to-nvvm | FileCheck %s --check-prefix=NOTMA --implicit-check-not=tessera.tensor_maps --implicit-check-not=cp.async.bulk --implicit-check-not=grid_constant --implicit-check-not=mbarrier --implicit-check-not=setmaxnreg
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=8 num-stages=4 warp-specialize=true tma=false persistent-launch=false" --tessera-lower-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTMA-REMARK

// CHECK-LABEL: func.func @mm
// CHECK-SAME: %arg7: i32,
// CHECK-SAME: %arg8: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, tessera.grid_constant}
// CHECK-SAME: %arg9: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, tessera.grid_constant})
// CHECK-SAME: tessera.num_warps = 12 : i32
// CHECK-SAME: tessera.tensor_maps = [{box = array<i64: 64, 128>, cols = array<i64: 0, 5, 1>, eb = 2 : i64, ptr = 0 : i64, rows = array<i64: 0, 3, 1>, stride = array<i64: 0, 6, 1>, swizzle = 128 : i64, type = 9 : i64}, {box = array<i64: 64, 64>, cols = array<i64: 0, 4, 1>, eb = 2 : i64, ptr = 1 : i64, rows = array<i64: 0, 5, 1>, stride = array<i64: 0, 7, 1>, swizzle = 128 : i64, type = 9 : i64}]
// CHECK: %[[MAPA:.*]] = llvm.ptrtoint %arg8 : !llvm.ptr to i64
// CHECK: %[[MAPB:.*]] = llvm.ptrtoint %arg9 : !llvm.ptr to i64
// `full` takes one arrival (the expect_tx), `empty` one per consumer warp.
// CHECK: "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}" %{{.*}}, %c1_i32
// CHECK: "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}" %{{.*}}, %c8_i32
// The producers: the first producer thread alone loops, the others exit.
// CHECK: "setmaxnreg.dec.sync.aligned.u32 104;"
// CHECK: arith.cmpi eq, %0, %c256_i32
// CHECK: scf.for
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// A's 16 KiB and B's 16 KiB per stage.
// CHECK: "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}" %{{.*}}, %c32768_i32
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes {{.*}} %{{[0-9]+}}, %[[MAPA]],
// CHECK-COUNT-2: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes {{.*}} %{{[0-9]+}}, %[[MAPB]],
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: "exit;"
// The consumers read TMA's writes without a proxy fence.
// CHECK: "setmaxnreg.inc.sync.aligned.u32 200;"
// CHECK-NOT: fence.proxy.async
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-NOT: fence.proxy.async
// CHECK: "mbarrier.arrive.shared::cta.b64 _, [$0];"
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: return

// REMARK: remark: dot loop pipelined: wgmma m64n128k16, 4 stages, warp-specialized (a producer warpgroup copies), A and B by TMA

// NOTMA-LABEL: func.func @mm
// NOTMA-SAME: %arg7: i32)
// NOTMA-SAME: tessera.num_warps = 8 : i32
// NOTMA: @p cp.async.cg.shared.global [$0], [$1], 16;
// NOTMA: "cp.async.commit_group;"
// NOTMA: scf.for
// NOTMA: "fence.proxy.async.shared::cta;"
// NOTMA: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16

// NOTMA-REMARK: remark: dot loop pipelined: wgmma m64n128k16, 4 stages (not warp-specialized: warp specialization needs copies without an element-wise path

#mma = #tgpu.mma<version = 3, warps = 8, transposed = false>
#opA = #tgpu.dot_operand<opIdx = 0, parent = #mma>
#opB = #tgpu.dot_operand<opIdx = 1, parent = #mma>
module {
  // C (M x N, row stride N) = A (M x K, row stride lda) @ B (K x N, row stride ldb),
  // the block's tile at row and column 0.
  func.func @mm(%A: !tile.ptr<bf16>, %B: !tile.ptr<bf16>, %C: !tile.ptr<f32>,
                %M: i32, %N: i32, %K: i32,
                %lda: i32 {tile.divisibility = 16 : i64}, %ldb: i32 {tile.divisibility = 16 : i64}) attributes {tile.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %zeroA = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %zeroB = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %zero = arith.constant dense<0.000000e+00> : tensor<128x128xf32, #mma>
    %stepA = arith.constant dense<64> : tensor<128x64xi32>
    %rm = tile.make_range 0, 128 : tensor<128xi32>
    %rk = tile.make_range 0, 64 : tensor<64xi32>
    %rm1 = tile.expand_dims %rm {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %rn0 = tile.expand_dims %rm {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %rk1 = tile.expand_dims %rk {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %rk0 = tile.expand_dims %rk {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    // pa = A + rm[:, None] * lda + rk[None, :]
    %sa = tile.splat %lda : i32 -> tensor<128x1xi32>
    %oa = arith.muli %rm1, %sa : tensor<128x1xi32>
    %a0 = tile.splat %A : !tile.ptr<bf16> -> tensor<128x1x!tile.ptr<bf16>>
    %a1 = tile.addptr %a0, %oa : tensor<128x1x!tile.ptr<bf16>>, tensor<128x1xi32>
    %a2 = tile.broadcast %a1 : tensor<128x1x!tile.ptr<bf16>> -> tensor<128x64x!tile.ptr<bf16>>
    %ka = tile.broadcast %rk0 : tensor<1x64xi32> -> tensor<128x64xi32>
    %pa = tile.addptr %a2, %ka : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
    // pb = B + rk[:, None] * ldb + rn[None, :], advanced by 64 * ldb
    %sb = tile.splat %ldb : i32 -> tensor<64x1xi32>
    %ob = arith.muli %rk1, %sb : tensor<64x1xi32>
    %b0 = tile.splat %B : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
    %b1 = tile.addptr %b0, %ob : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %b2 = tile.broadcast %b1 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x128x!tile.ptr<bf16>>
    %nb = tile.broadcast %rn0 : tensor<1x128xi32> -> tensor<64x128xi32>
    %pb = tile.addptr %b2, %nb : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
    %ldb64 = arith.muli %ldb, %c64 : i32
    %stepB = tile.splat %ldb64 : i32 -> tensor<64x128xi32>
    // The loop-invariant halves of the masks: rm[:, None] < M, rn[None, :] < N.
    %Ms = tile.splat %M : i32 -> tensor<128x1xi32>
    %mm1 = arith.cmpi slt, %rm1, %Ms : tensor<128x1xi32>
    %mA = tile.broadcast %mm1 : tensor<128x1xi1> -> tensor<128x64xi1>
    %Ns = tile.splat %N : i32 -> tensor<1x128xi32>
    %mn0 = arith.cmpi slt, %rn0, %Ns : tensor<1x128xi32>
    %mB = tile.broadcast %mn0 : tensor<1x128xi1> -> tensor<64x128xi1>
    %acc:3 = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero, %ia = %pa, %ib = %pb) -> (tensor<128x128xf32, #mma>, tensor<128x64x!tile.ptr<bf16>>, tensor<64x128x!tile.ptr<bf16>>) : i32 {
      // rk < K - k, along A's columns and B's rows.
      %left = arith.subi %K, %k : i32
      %l0 = tile.splat %left : i32 -> tensor<1x64xi32>
      %k0 = arith.cmpi slt, %rk0, %l0 : tensor<1x64xi32>
      %kA = tile.broadcast %k0 : tensor<1x64xi1> -> tensor<128x64xi1>
      %maskA = arith.andi %mA, %kA : tensor<128x64xi1>
      %l1 = tile.splat %left : i32 -> tensor<64x1xi32>
      %k1 = arith.cmpi slt, %rk1, %l1 : tensor<64x1xi32>
      %kB = tile.broadcast %k1 : tensor<64x1xi1> -> tensor<64x128xi1>
      %maskB = arith.andi %kB, %mB : tensor<64x128xi1>
      %a = tile.load %ia mask %maskA other %zeroA : tensor<128x64x!tile.ptr<bf16>> -> tensor<128x64xbf16>, tensor<128x64xi1>, tensor<128x64xbf16>
      %b = tile.load %ib mask %maskB other %zeroB : tensor<64x128x!tile.ptr<bf16>> -> tensor<64x128xbf16>, tensor<64x128xi1>, tensor<64x128xbf16>
      %da = tgpu.convert_layout %a : tensor<128x64xbf16> -> tensor<128x64xbf16, #opA>
      %db = tgpu.convert_layout %b : tensor<64x128xbf16> -> tensor<64x128xbf16, #opB>
      %d = tile.dot %da, %db, %c : tensor<128x64xbf16, #opA> * tensor<64x128xbf16, #opB> -> tensor<128x128xf32, #mma>
      %na = tile.addptr %ia, %stepA : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi32>
      %nb2 = tile.addptr %ib, %stepB : tensor<64x128x!tile.ptr<bf16>>, tensor<64x128xi32>
      scf.yield %d, %na, %nb2 : tensor<128x128xf32, #mma>, tensor<128x64x!tile.ptr<bf16>>, tensor<64x128x!tile.ptr<bf16>>
    }
    // C + rm[:, None] * N + rn[None, :], unmasked.
    %sc = tile.splat %N : i32 -> tensor<128x1xi32>
    %oc = arith.muli %rm1, %sc : tensor<128x1xi32>
    %p0 = tile.splat %C : !tile.ptr<f32> -> tensor<128x1x!tile.ptr<f32>>
    %p1 = tile.addptr %p0, %oc : tensor<128x1x!tile.ptr<f32>>, tensor<128x1xi32>
    %p2 = tile.broadcast %p1 : tensor<128x1x!tile.ptr<f32>> -> tensor<128x128x!tile.ptr<f32>>
    %nc = tile.broadcast %rn0 : tensor<1x128xi32> -> tensor<128x128xi32>
    %pc = tile.addptr %p2, %nc : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xi32>
    tile.store %pc, %acc#0 : tensor<128x128x!tile.ptr<f32>>, tensor<128x128xf32, #mma>
    return
  }
}
