// Every tile op parses, verifies and prints back to a form that parses again.
// RUN: tessera-opt %s | tessera-opt | FileCheck %s

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%p: !tile.ptr<f32>, %pi: !tile.ptr<i32>, %n: i32) {
  // CHECK: tile.program_id 0 : i32
  %pid = tile.program_id 0 : i32
  // CHECK: tile.num_programs 2 : i32
  %np = tile.num_programs 2 : i32
  // CHECK: tile.make_range 0, 64 : tensor<64xi32>
  %r = tile.make_range 0, 64 : tensor<64xi32>
  // CHECK: tile.splat %{{.*}} : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  %ps = tile.splat %p : !tile.ptr<f32> -> tensor<64x!tile.ptr<f32>>
  // CHECK: tile.addptr %{{.*}}, %{{.*}} : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %pa = tile.addptr %ps, %r : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  %ns = tile.splat %n : i32 -> tensor<64xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
  %z = arith.constant dense<0.0> : tensor<64xf32>
  // CHECK: tile.load %{{.*}} mask %{{.*}} other %{{.*}} : tensor<64x!tile.ptr<f32>> -> tensor<64xf32>, tensor<64xi1>, tensor<64xf32>
  %x = tile.load %pa mask %m other %z : tensor<64x!tile.ptr<f32>> -> tensor<64xf32>, tensor<64xi1>, tensor<64xf32>
  // CHECK: tile.store %{{.*}}, %{{.*}} mask %{{.*}} : tensor<64x!tile.ptr<f32>>, tensor<64xf32>, tensor<64xi1>
  tile.store %pa, %x mask %m : tensor<64x!tile.ptr<f32>>, tensor<64xf32>, tensor<64xi1>
  // CHECK: tile.expand_dims %{{.*}} {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  %e = tile.expand_dims %x {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
  // CHECK: tile.broadcast %{{.*}} : tensor<64x1xf32> -> tensor<64x32xf32>
  %b = tile.broadcast %e : tensor<64x1xf32> -> tensor<64x32xf32>
  // CHECK: tile.trans %{{.*}} {order = array<i32: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>
  %t = tile.trans %b {order = array<i32: 1, 0>} : tensor<64x32xf32> -> tensor<32x64xf32>
  // CHECK: tile.gather %{{.*}}[%{{.*}}] {axis = 0 : i32} : tensor<64x32xf32>, tensor<8x32xi32> -> tensor<8x32xf32>
  %gi = arith.constant dense<3> : tensor<8x32xi32>
  %g = tile.gather %b[%gi] {axis = 0 : i32} : tensor<64x32xf32>, tensor<8x32xi32> -> tensor<8x32xf32>
  // CHECK: tile.reshape %{{.*}} : tensor<32x64xf32> -> tensor<2048xf32>
  %rs = tile.reshape %t : tensor<32x64xf32> -> tensor<2048xf32>
  %acc = arith.constant dense<0.0> : tensor<64x64xf32>
  // CHECK: tile.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x32xf32> * tensor<32x64xf32> -> tensor<64x64xf32>
  %d = tile.dot %b, %t, %acc : tensor<64x32xf32> * tensor<32x64xf32> -> tensor<64x64xf32>
  // CHECK: tile.dot {{.*}} {inputPrecision = 1 : i32}
  %d2 = tile.dot %b, %t, %acc {inputPrecision = 1 : i32} : tensor<64x32xf32> * tensor<32x64xf32> -> tensor<64x64xf32>
  // CHECK: tile.reduce(%{{.*}}) {axis = 1 : i32} : (tensor<64x64xf32>) -> tensor<64xf32>
  // CHECK: tile.reduce.return
  %s = tile.reduce(%d) {axis = 1 : i32} : (tensor<64x64xf32>) -> tensor<64xf32> {
  ^bb0(%l: f32, %rr: f32):
    %a = arith.addf %l, %rr : f32
    tile.reduce.return %a : f32
  }
  // CHECK: tile.scan(%{{.*}}) {axis = 1 : i32, reverse = true} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  // CHECK: tile.reduce.return
  %sc = tile.scan(%d) {axis = 1 : i32, reverse = true} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
  ^bb0(%l: f32, %rr: f32):
    %a = arith.mulf %l, %rr : f32
    tile.reduce.return %a : f32
  }
  // CHECK: tile.sort %{{.*}} {axis = 0 : i32, descending = true} : tensor<64x64xf32> -> tensor<64x64xf32>, tensor<64x64xi32>
  %so, %si = tile.sort %d {axis = 0 : i32, descending = true} : tensor<64x64xf32> -> tensor<64x64xf32>, tensor<64x64xi32>
  %pis = tile.splat %pi : !tile.ptr<i32> -> tensor<64x!tile.ptr<i32>>
  %pia = tile.addptr %pis, %r : tensor<64x!tile.ptr<i32>>, tensor<64xi32>
  // CHECK: tile.atomic_rmw add %{{.*}}, %{{.*}} mask %{{.*}} : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi1> -> tensor<64xi32>
  %old = tile.atomic_rmw add %pia, %r mask %m : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi1> -> tensor<64xi32>
  // CHECK: tile.atomic_rmw umax %{{.*}}, %{{.*}} {scope = 1 : i32, sem = 0 : i32}
  %oldu = tile.atomic_rmw umax %pia, %r {sem = 0 : i32, scope = 1 : i32} : tensor<64x!tile.ptr<i32>>, tensor<64xi32> -> tensor<64xi32>
  // CHECK: tile.atomic_cas
  %c = tile.atomic_cas %pia, %r, %old : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi32> -> tensor<64xi32>
  // CHECK: tile.atomic_cas %{{.*}} {scope = 2 : i32, sem = 1 : i32}
  %c2 = tile.atomic_cas %pia, %r, %old {sem = 1 : i32, scope = 2 : i32} : tensor<64x!tile.ptr<i32>>, tensor<64xi32>, tensor<64xi32> -> tensor<64xi32>
  // CHECK: tile.bitcast %{{.*}} : tensor<64xf32> -> tensor<64xi32>
  %bc = tile.bitcast %x : tensor<64xf32> -> tensor<64xi32>
  // CHECK: tile.ptr_to_int %{{.*}} : !tile.ptr<f32> -> i64
  %pint = tile.ptr_to_int %p : !tile.ptr<f32> -> i64
  // CHECK: tile.hint %{{.*}} {contiguity = array<i32: 64>, divisibility = array<i32: 16>} : tensor<64xi32>
  %h = tile.hint %r {divisibility = array<i32: 16>, contiguity = array<i32: 64>} : tensor<64xi32>
  // CHECK: tile.print "x = ", %{{.*}} : tensor<64xf32>
  tile.print "x = ", %x : tensor<64xf32>
  return
}
