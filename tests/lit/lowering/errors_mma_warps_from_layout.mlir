// Hand-written layout IR must match the options it is lowered with: before
// lowering anything, tessera-lower-to-nvvm checks that every tile in an mma
// layout (#tgpu.mma) is for the module's num_warps and has a shape that
// layout can hold, and reports the kernel otherwise. Each chunk fails, so no
// kernel is lowered (nothing in tessera.kernel form is printed).
// RUN: not tessera-opt %s --split-input-file --tessera-set-options="target=sm_90a num-warps=8" --tessera-lower-to-nvvm 2>&1 | FileCheck %s --implicit-check-not=tessera.kernel

// The wgmma layout for 4 warps (convert_layout_from_layout.mlir's
// @wgmma_acc, minus the loads and stores) lowered for 8 warps.
// CHECK: :[[@LINE+3]]:3: error: wgmma_acc: a tile's mma layout is for 4 warps or another shape; lowering with 8 warps
#wgmma = #tgpu.mma<version = 3, warps = 4, transposed = false>
module {
  func.func @wgmma_acc(%x: tensor<64x64xf32>) attributes {tile.kernel} {
    %m = tgpu.convert_layout %x : tensor<64x64xf32> -> tensor<64x64xf32, #wgmma>
    %sq = arith.mulf %m, %m : tensor<64x64xf32, #wgmma>
    return
  }
}

// -----

// A dot in the mma.sync layout for 4 warps lowered for 8.
// CHECK: :[[@LINE+5]]:3: error: mm: a tile's mma layout is for 4 warps or another shape; lowering with 8 warps
#mma = #tgpu.mma<version = 2, warps = 4, transposed = false>
#opA = #tgpu.dot_operand<opIdx = 0, parent = #mma>
#opB = #tgpu.dot_operand<opIdx = 1, parent = #mma>
module {
  func.func @mm(%a: tensor<64x64xbf16, #opA>, %b: tensor<64x64xbf16, #opB>) attributes {tile.kernel} {
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma>
    %d = tile.dot %a, %b, %zero : tensor<64x64xbf16, #opA> * tensor<64x64xbf16, #opB> -> tensor<64x64xf32, #mma>
    return
  }
}

// -----

// The warps match, but an 8-warp wgmma layout holds tiles of a multiple of
// 128 rows (64-row blocks for each of its two warpgroups), not 32: the same
// error (the message does not say which of the two is wrong).
// CHECK: :[[@LINE+3]]:3: error: short: a tile's mma layout is for 8 warps or another shape; lowering with 8 warps
#wgmma8 = #tgpu.mma<version = 3, warps = 8, transposed = false>
module {
  func.func @short() attributes {tile.kernel} {
    %z = arith.constant dense<0.000000e+00> : tensor<32x128xf32, #wgmma8>
    return
  }
}
