// The tgpu verifiers reject malformed layouts and conversions.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{mma version must be 2 (mma.sync) or 3 (wgmma), got 1}}
func.func @bad_version(%x: tensor<64x64xf32, #tgpu.mma<version = 1, warps = 4, transposed = false>>) {
  return
}

// -----

// expected-error @+1 {{wgmma needs whole warpgroups (warps a multiple of 4), got 2}}
func.func @bad_warps(%x: tensor<64x64xf32, #tgpu.mma<version = 3, warps = 2, transposed = false>>) {
  return
}

// -----

// expected-error @+1 {{only the wgmma layout (version 3) has a transposed form}}
func.func @bad_transposed(%x: tensor<64x64xf32, #tgpu.mma<version = 2, warps = 4, transposed = true>>) {
  return
}

// -----

// expected-error @+1 {{dot operand index must be 0 (A) or 1 (B), got 2}}
func.func @bad_operand(%x: tensor<64x64xf32, #tgpu.dot_operand<opIdx = 2, parent = #tgpu.mma<version = 2, warps = 4, transposed = false>>>) {
  return
}

// -----

func.func @bad_shape(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{'tgpu.convert_layout' op requires the same shape for all operands and results}}
  %0 = tgpu.convert_layout %x : tensor<64x64xf32> -> tensor<64x32xf32, #tgpu.mma<version = 2, warps = 4, transposed = false>>
  return
}

// -----

func.func @bad_element(%x: tensor<64x64xf32>) {
  // expected-error @+1 {{'tgpu.convert_layout' op requires the same element type for all operands and results}}
  %0 = tgpu.convert_layout %x : tensor<64x64xf32> -> tensor<64x64xf16, #tgpu.mma<version = 2, warps = 4, transposed = false>>
  return
}

// -----

// expected-error @+1 {{a slice of a 2-D mma layout removes dim 0 (a column vector) or 1 (a row vector), got dim 2}}
func.func @bad_slice_dim(%x: tensor<64xf32, #tgpu.slice<dim = 2, parent = #tgpu.mma<version = 3, warps = 4, transposed = false>>>) {
  return
}

// -----

// expected-error @+1 {{a slice needs a wgmma (version 3, not transposed) parent layout}}
func.func @bad_slice_parent(%x: tensor<64xf32, #tgpu.slice<dim = 0, parent = #tgpu.mma<version = 2, warps = 4, transposed = false>>>) {
  return
}
