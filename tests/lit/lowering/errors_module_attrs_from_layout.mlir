// tessera-lower-to-nvvm reads the compile options from the module's
// attributes (analysis/ModuleOptions.cpp) and validates them as
// CompileOptions::validate() does; a malformed or out-of-range attribute is
// an error at the module, before any kernel is lowered (the kernels here are
// empty, and would lower). The RUN line has no --tessera-set-options, which
// would overwrite the attributes. Each chunk fails, so nothing is printed.
// RUN: not tessera-opt %s --split-input-file --tessera-lower-to-nvvm 2>&1 | FileCheck %s --implicit-check-not=tessera.kernel

// CHECK: :[[@LINE+1]]:1: error: num_warps must be a power of two from 1 to 32, got 3
module attributes {tessera.num_warps = 3 : i32} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: num_warps must be a power of two from 1 to 32, got 64
module attributes {tessera.num_warps = 64 : i32} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: tessera.num_warps must be an integer
module attributes {tessera.num_warps = "4"} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: num_stages must be from 1 to 8, got 9
module attributes {tessera.num_stages = 9 : i32} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: tessera.target must be a target name such as "sm_90a"
module attributes {tessera.target = "sm_9x"} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: tessera.target must be a target name such as "sm_90a"
module attributes {tessera.target = 90 : i32} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: tessera.tma must be true or false
module attributes {tessera.tma = 1 : i32} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}

// -----

// CHECK: :[[@LINE+1]]:1: error: tessera.warp_specialize must be true or false
module attributes {tessera.warp_specialize = "yes"} {
  func.func @k(%X: !tile.ptr<f32>) attributes {tile.kernel} {
    return
  }
}
