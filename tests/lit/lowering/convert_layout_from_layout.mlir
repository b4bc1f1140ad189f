// tgpu.convert_layout between register layouts in tessera-lower-to-nvvm,
// from layout IR: a 64x64 f32 tile is loaded in the blocked layout (no
// encoding: 16-byte vectors along rows, 32 elements per thread for 4 warps),
// converted to an mma accumulator layout, squared there, and converted back
// to the blocked layout for the store. Nothing here is a dot, so only the
// conversions can give the mma layout's registers their values.
//
// Each conversion is a round trip through shared memory: a barrier, every
// thread stores its 32 elements in the source layout, a barrier, every thread
// loads its 32 elements of the destination layout. The element-wise multiply
// runs on the mma layout's 32 registers per thread. The two conversions get
// a 16 KiB region each (32768 bytes; the allocator does not reuse a dead
// region yet). Without the conversions there would be no shared memory and
// no barrier at all.
// @wgmma_acc uses the wgmma layout (version 3), @mma_sync_acc the mma.sync
// layout (version 2): both are valid register layouts on sm_90a.
// RUN: tessera-opt %s --tessera-set-options="target=sm_90a num-warps=4" --tessera-lower-to-nvvm | FileCheck %s
// Lowered for 8 warps, the same IR is rejected (its layouts are for 4): see
// errors_mma_warps_from_layout.mlir.

// CHECK-LABEL: func.func @wgmma_acc
// CHECK-SAME: tessera.kernel, tessera.num_warps = 4 : i32, tessera.shared_bytes = 32768 : i32
// blocked -> mma
// CHECK-COUNT-8: llvm.load {{.*}} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NOT: arith.mulf
// CHECK: nvvm.barrier0
// CHECK-COUNT-32: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-32: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-32: arith.mulf {{.*}} : f32
// mma -> blocked
// CHECK: nvvm.barrier0
// CHECK-COUNT-32: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-32: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: !llvm.ptr<3>
// CHECK-COUNT-8: llvm.store {{.*}} : vector<4xf32>, !llvm.ptr<1>
// CHECK-NOT: !llvm.ptr<3>
// CHECK: return

// CHECK-LABEL: func.func @mma_sync_acc
// CHECK-SAME: tessera.kernel, tessera.num_warps = 4 : i32, tessera.shared_bytes = 32768 : i32
// CHECK-COUNT-8: llvm.load {{.*}} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: nvvm.barrier0
// CHECK-COUNT-32: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-32: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-32: arith.mulf {{.*}} : f32
// CHECK: nvvm.barrier0
// CHECK-COUNT-32: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-COUNT-32: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-8: llvm.store {{.*}} : vector<4xf32>, !llvm.ptr<1>
// CHECK: return

#wgmma = #tgpu.mma<version = 3, warps = 4, transposed = false>
#mma_sync = #tgpu.mma<version = 2, warps = 4, transposed = false>
module {
  // Y = X * X for row-major 64 x 64 X and Y, the multiply in the wgmma layout.
  func.func @wgmma_acc(%X: !tile.ptr<f32>, %Y: !tile.ptr<f32>) attributes {tile.kernel} {
    %ld = arith.constant dense<64> : tensor<64x1xi32>
    %r = tile.make_range 0, 64 : tensor<64xi32>
    %r1 = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %ro = arith.muli %r1, %ld : tensor<64x1xi32>
    %r0 = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %co = tile.broadcast %r0 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x0 = tile.splat %X : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
    %x1 = tile.addptr %x0, %ro : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
    %x2 = tile.broadcast %x1 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %px = tile.addptr %x2, %co : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %y0 = tile.splat %Y : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
    %y1 = tile.addptr %y0, %ro : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
    %y2 = tile.broadcast %y1 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %py = tile.addptr %y2, %co : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %x = tile.load %px : tensor<64x64x!tile.ptr<f32>> -> tensor<64x64xf32>
    %m = tgpu.convert_layout %x : tensor<64x64xf32> -> tensor<64x64xf32, #wgmma>
    %sq = arith.mulf %m, %m : tensor<64x64xf32, #wgmma>
    %b = tgpu.convert_layout %sq : tensor<64x64xf32, #wgmma> -> tensor<64x64xf32>
    tile.store %py, %b : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
    return
  }

  // The same in the mma.sync layout.
  func.func @mma_sync_acc(%X: !tile.ptr<f32>, %Y: !tile.ptr<f32>) attributes {tile.kernel} {
    %ld = arith.constant dense<64> : tensor<64x1xi32>
    %r = tile.make_range 0, 64 : tensor<64xi32>
    %r1 = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %ro = arith.muli %r1, %ld : tensor<64x1xi32>
    %r0 = tile.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %co = tile.broadcast %r0 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x0 = tile.splat %X : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
    %x1 = tile.addptr %x0, %ro : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
    %x2 = tile.broadcast %x1 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %px = tile.addptr %x2, %co : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %y0 = tile.splat %Y : !tile.ptr<f32> -> tensor<64x1x!tile.ptr<f32>>
    %y1 = tile.addptr %y0, %ro : tensor<64x1x!tile.ptr<f32>>, tensor<64x1xi32>
    %y2 = tile.broadcast %y1 : tensor<64x1x!tile.ptr<f32>> -> tensor<64x64x!tile.ptr<f32>>
    %py = tile.addptr %y2, %co : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>
    %x = tile.load %px : tensor<64x64x!tile.ptr<f32>> -> tensor<64x64xf32>
    %m = tgpu.convert_layout %x : tensor<64x64xf32> -> tensor<64x64xf32, #mma_sync>
    %sq = arith.mulf %m, %m : tensor<64x64xf32, #mma_sync>
    %b = tgpu.convert_layout %sq : tensor<64x64xf32, #mma_sync> -> tensor<64x64xf32>
    tile.store %py, %b : tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>
    return
  }
}
