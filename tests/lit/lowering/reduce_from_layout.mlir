// Row reductions in tessera-lower-to-nvvm (RowReduce.cpp), from layout IR:
// tile.reduce along the last axis of a loaded 2-D f32 tile. Tiles without an
// encoding get the blocked layout in the lowering (16-byte vectors along the
// row). Each thread combines its own elements of a row, the lanes that share
// the row combine by butterfly shuffles (xor 1, 2, 4, ...), one lane per warp
// and row writes a partial to shared memory, and after a barrier the owner
// of each row's result combines the partials and stores it.
//
// narrow (32 x 64, 4 warps): a row is 16 lanes of one warp (16 vectors of 4),
// a thread holds 4 rows: 4 shuffle steps (xor 1, 2, 4, 8) for each of its
// rows, one partial per row (32 x 4 bytes), one shared load per result.
// wide (4 x 512, 4 warps): a row spans all 128 threads: 5 steps (up to xor
// 16) for each of 4 rows, then one partial per warp and row (4 x 4 x 4
// bytes) and 4 shared loads per result.
// RUN: tessera-opt %s --tessera-set-options="num-warps=4" --tessera-lower-to-nvvm | FileCheck %s
// The plan follows the module's num_warps: with 8 warps a thread holds half
// as many rows, so half as many shuffles.
// RUN: tessera-opt %s --tessera-set-options="num-warps=8" --tessera-lower-to-nvvm | FileCheck %s --check-prefix=W8

// CHECK-LABEL: func.func @narrow
// CHECK-SAME: tessera.kernel, tessera.num_warps = 4 : i32, tessera.shared_bytes = 128 : i32
// CHECK-COUNT-4: llvm.load {{.*}} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-NOT: nvvm.shfl.sync
// CHECK: arith.addf
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-NEXT: arith.addf
// CHECK-NOT: nvvm.shfl.sync
// CHECK: nvvm.barrier0
// CHECK-NEXT: scf.if
// CHECK-COUNT-4: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-NOT: scf.for
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load {{.*}} : !llvm.ptr<3>
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<1>
// CHECK: return

// CHECK-LABEL: func.func @wide
// CHECK-SAME: tessera.kernel, tessera.num_warps = 4 : i32, tessera.shared_bytes = 64 : i32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c4_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c8_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-COUNT-4: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c16_i32{{[_0-9]*}}, %c31_i32{{[_0-9]*}} : f32 -> f32
// CHECK-NOT: nvvm.shfl.sync
// CHECK: nvvm.barrier0
// CHECK-COUNT-4: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: nvvm.barrier0
// CHECK-COUNT-4: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: llvm.load {{.*}} : !llvm.ptr<3>
// CHECK: arith.addf
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<1>
// CHECK: return

// W8-LABEL: func.func @narrow
// W8-SAME: tessera.num_warps = 8 : i32, tessera.shared_bytes = 128 : i32
// W8-COUNT-8: nvvm.shfl.sync bfly
// W8-NOT: nvvm.shfl.sync
// W8: nvvm.barrier0
// W8-LABEL: func.func @wide
// W8-SAME: tessera.num_warps = 8 : i32, tessera.shared_bytes = 64 : i32
// W8-COUNT-10: nvvm.shfl.sync bfly
// W8-NOT: nvvm.shfl.sync
// W8: nvvm.barrier0

module {
  // Y[r] = sum(X[r, :]) for a row-major 32 x 64 X.
  func.func @narrow(%X: !tile.ptr<f32>, %Y: !tile.ptr<f32>) attributes {tile.kernel} {
    %ld = arith.constant dense<64> : tensor<32x1xi32>
    %r = tile.make_range 0, 32 : tensor<32xi32>
    %c = tile.make_range 0, 64 : tensor<64xi32>
    %r1 = tile.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %ro = arith.muli %r1, %ld : tensor<32x1xi32>
    %c0 = tile.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %co = tile.broadcast %c0 : tensor<1x64xi32> -> tensor<32x64xi32>
    %x0 = tile.splat %X : !tile.ptr<f32> -> tensor<32x1x!tile.ptr<f32>>
    %x1 = tile.addptr %x0, %ro : tensor<32x1x!tile.ptr<f32>>, tensor<32x1xi32>
    %x2 = tile.broadcast %x1 : tensor<32x1x!tile.ptr<f32>> -> tensor<32x64x!tile.ptr<f32>>
    %px = tile.addptr %x2, %co : tensor<32x64x!tile.ptr<f32>>, tensor<32x64xi32>
    %x = tile.load %px : tensor<32x64x!tile.ptr<f32>> -> tensor<32x64xf32>
    %s = tile.reduce(%x) {axis = 1 : i32} : (tensor<32x64xf32>) -> tensor<32xf32> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tile.reduce.return %t : f32
    }
    %y0 = tile.splat %Y : !tile.ptr<f32> -> tensor<32x!tile.ptr<f32>>
    %py = tile.addptr %y0, %r : tensor<32x!tile.ptr<f32>>, tensor<32xi32>
    tile.store %py, %s : tensor<32x!tile.ptr<f32>>, tensor<32xf32>
    return
  }

  // Y[r] = sum(X[r, :]) for a row-major 4 x 512 X.
  func.func @wide(%X: !tile.ptr<f32>, %Y: !tile.ptr<f32>) attributes {tile.kernel} {
    %ld = arith.constant dense<512> : tensor<4x1xi32>
    %r = tile.make_range 0, 4 : tensor<4xi32>
    %c = tile.make_range 0, 512 : tensor<512xi32>
    %r1 = tile.expand_dims %r {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
    %ro = arith.muli %r1, %ld : tensor<4x1xi32>
    %c0 = tile.expand_dims %c {axis = 0 : i32} : tensor<512xi32> -> tensor<1x512xi32>
    %co = tile.broadcast %c0 : tensor<1x512xi32> -> tensor<4x512xi32>
    %x0 = tile.splat %X : !tile.ptr<f32> -> tensor<4x1x!tile.ptr<f32>>
    %x1 = tile.addptr %x0, %ro : tensor<4x1x!tile.ptr<f32>>, tensor<4x1xi32>
    %x2 = tile.broadcast %x1 : tensor<4x1x!tile.ptr<f32>> -> tensor<4x512x!tile.ptr<f32>>
    %px = tile.addptr %x2, %co : tensor<4x512x!tile.ptr<f32>>, tensor<4x512xi32>
    %x = tile.load %px : tensor<4x512x!tile.ptr<f32>> -> tensor<4x512xf32>
    %s = tile.reduce(%x) {axis = 1 : i32} : (tensor<4x512xf32>) -> tensor<4xf32> {
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tile.reduce.return %t : f32
    }
    %y0 = tile.splat %Y : !tile.ptr<f32> -> tensor<4x!tile.ptr<f32>>
    %py = tile.addptr %y0, %r : tensor<4x!tile.ptr<f32>>, tensor<4xi32>
    tile.store %py, %s : tensor<4x!tile.ptr<f32>>, tensor<4xf32>
    return
  }
}
