// The mma.sync path of tessera-lower-to-nvvm, from layout IR (no .tile
// source, no layout passes). The input is what tessera-assign-layouts gives
// a 64x64x64 bf16 dot loop for 4 warps on sm_80: the accumulator in the
// mma.sync layout (#tgpu.mma version 2), the loaded A and B tiles converted
// to its dot-operand layouts. Both operands are row-major with constant row
// strides, so their rows are provably contiguous and the loop is pipelined.
//
// Pipelined (3 stages): cp.async copies of the next stage, then per k16 step
// ldmatrix (A) and ldmatrix.trans (B) fragments for mma.sync m16n8k16; the
// 2x2 warp grid gives each warp 32x32 of C, so 2 x 4 mma.syncs per k16
// step and 32 per iteration of BK = 64. No wgmma on sm_80
// (--implicit-check-not: the string appears nowhere in the output).
// RUN: tessera-opt %s --tessera-set-options="target=sm_80 num-warps=4 num-stages=3" --tessera-lower-to-nvvm | FileCheck %s --implicit-check-not=wgmma
// sm_90 without the "a" suffix has no wgmma either: the same mma.sync loop.
// RUN: tessera-opt %s --tessera-set-options="target=sm_90 num-warps=4 num-stages=3" --tessera-lower-to-nvvm | FileCheck %s --implicit-check-not=wgmma
// RUN: tessera-opt %s --tessera-set-options="target=sm_80 num-warps=4 num-stages=3" --tessera-lower-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// Fewer than 3 stages: the unpipelined lowering. Each iteration loads A and
// B into registers, stores them to shared memory between two barriers, and
// an inner loop over the k16 steps reads fragments with plain shared loads
// (no cp.async, no ldmatrix) for 8 mma.syncs per step.
// RUN: tessera-opt %s --tessera-set-options="target=sm_80 num-warps=4 num-stages=2" --tessera-lower-to-nvvm | FileCheck %s --check-prefix=GENERIC --implicit-check-not=wgmma --implicit-check-not=cp.async --implicit-check-not=ldmatrix
// RUN: tessera-opt %s --tessera-set-options="target=sm_80 num-warps=4 num-stages=2" --tessera-lower-to-nvvm -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK-GENERIC

// Three stages of 64x64 bf16 A and B (8 KiB each).
// CHECK-LABEL: func.func @mm
// CHECK-SAME: tessera.kernel, tessera.num_warps = 4 : i32, tessera.shared_bytes = 49152 : i32
// Prologue: the first stage's 16-byte copies, one group (num_stages - 2).
// CHECK: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// CHECK: "cp.async.commit_group;"
// CHECK-NOT: mma.sync
// CHECK: scf.for
// CHECK: "cp.async.wait_group 0;"
// CHECK-NEXT: nvvm.barrier0
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-COUNT-32: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-NOT: mma.sync
// The copies of iteration i + 1, committed before the loop's end.
// CHECK: "cp.async.cg.shared.global [$0], [$1], 16, $2;"
// CHECK: "cp.async.commit_group;"
// CHECK-NEXT: scf.yield
// The epilogue: column pairs through shared memory, 16-byte global stores.
// CHECK-NOT: mma.sync
// CHECK: "cp.async.wait_group 0;"
// CHECK: nvvm.barrier0
// CHECK: llvm.store {{.*}} : vector<2xf32>, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> vector<4xf32>
// CHECK: llvm.store {{.*}} : vector<4xf32>, !llvm.ptr<1>
// CHECK: return

// REMARK: remark: dot loop pipelined: mma.sync m16n8k16 with ldmatrix, 3 stages

// GENERIC-LABEL: func.func @mm
// GENERIC-SAME: tessera.num_warps = 4 : i32
// GENERIC: scf.for
// GENERIC: llvm.load {{.*}} : !llvm.ptr<1> -> vector<4xbf16>
// GENERIC: nvvm.barrier0
// GENERIC: llvm.store {{.*}} : bf16, !llvm.ptr<3>
// GENERIC: nvvm.barrier0
// GENERIC: scf.for
// GENERIC: llvm.load {{.*}} : !llvm.ptr<3> -> i32
// GENERIC-COUNT-8: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// GENERIC-NOT: mma.sync
// GENERIC: scf.yield
// GENERIC: return

// REMARK-GENERIC: remark: dot loop not pipelined: num_stages is 2; the pipeline needs 3 or more

#mma = #tgpu.mma<version = 2, warps = 4, transposed = false>
#opA = #tgpu.dot_operand<opIdx = 0, parent = #mma>
#opB = #tgpu.dot_operand<opIdx = 1, parent = #mma>
module {
  // C = A @ B for a 64 x K A (row stride 64), a K x 64 B (row stride 64).
  func.func @mm(%A: !tile.ptr<bf16>, %B: !tile.ptr<bf16>, %C: !tile.ptr<f32>, %K: i32) attributes {tile.kernel} {
    %c0 = arith.constant 0 : i32
    %c64 = arith.constant 64 : i32
    %ld = arith.constant dense<64> : tensor<64x1xi32>
    %stepA = arith.constant dense<64> : tensor<64x64xi32>
    %stepB = arith.constant dense<4096> : tensor<64x64xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma>
    // Offsets r[:, None] * 64 + r[None, :] of a row-major 64x64 tile.
    %r = tile.make_range 0, 64 : tensor<64xi32>
    %r1 = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %ro = arith.muli %r1, %ld : tensor<64x1xi32>
    %r0 = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %co = tile.broadcast %r0 : tensor<1x64xi32> -> tensor<64x64xi32>
    %a0 = tile.splat %A : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
    %a1 = tile.addptr %a0, %ro : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %a2 = tile.broadcast %a1 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %pa = tile.addptr %a2, %co : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %b0 = tile.splat %B : !tile.ptr<bf16> -> tensor<64x1x!tile.ptr<bf16>>
    %b1 = tile.addptr %b0, %ro : tensor<64x1x!tile.ptr<bf16>>, tensor<64x1xi32>
    %b2 = tile.broadcast %b1 : tensor<64x1x!tile.ptr<bf16>> -> tensor<64x64x!tile.ptr<bf16>>
    %pb = tile.addptr %b2, %co : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
    %acc:3 = scf.for %k = %c0 to %K step %c64 iter_args(%c = %zero, %ia = %pa, %ib = %pb) -> (tensor<64x64xf32, #mma>, tensor<64x64x!tile.ptr<bf16>>, tensor<64x64x!tile.ptr<bf16>>) : i32 {
      %a = tile.load %ia : tensor<64x64x!tile.ptr<bf16>> -> tensor<64x64xbf16>
      %b = tile.load %ib : tensor<64x64x!tile.ptr<bf16>> -> tensor<64x64xbf16>
      %da = tgpu.convert_layout %a : tensor<64x64xbf16> -> tensor<64x64xbf16, #opA>
      %db = tgpu.convert_layout %b : tensor<64x64xbf16> -> tensor<64x64xbf16, #opB>
      %d = tile.dot %da, %db, %c : tensor<64x64xbf16, #opA> * tensor<64x64xbf16, #opB> -> tensor<64x64xf32, #mma>
      %na = tile.addptr %ia, %stepA : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
      %nb = tile.addptr %ib, %stepB : tensor<64x64x!tile.ptr<bf16>>, tensor<64x64xi32>
      scf.yield %d, %na, %nb : tensor<64x64xf32, #mma>, tensor<64x64x!tile.ptr<bf16>>, tensor<64x64x!tile.ptr<bf16>>
    }
    // The accumulator is stored from its mma layout.
    %c0p = tile.splat %C : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
    %c1p = tile.addptr %c0p, %ro : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
    %c2p = tile.broadcast %c1p : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %pc = tile.addptr %c2p, %co : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    tile.store %pc, %acc#0 : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32, #mma>
    return
  }
}
