// The verifiers reject malformed tile IR with a clear message.
// RUN: tessera-opt %s -split-input-file -verify-diagnostics

func.func @range_not_pow2() {
  // expected-error @+1 {{range length 100 is not a power of two}}
  %r = tile.make_range 0, 100 : tensor<100xi32>
  return
}

// -----

func.func @range_wrong_type() {
  // expected-error @+1 {{result must be tensor<64xi32>}}
  %r = tile.make_range 0, 64 : tensor<32xi32>
  return
}

// -----

func.func @broadcast_bad(%x: tensor<2x32xf32>) {
  // expected-error @+1 {{dimension 0 of size 2 cannot broadcast to 4}}
  %b = tile.broadcast %x : tensor<2x32xf32> -> tensor<4x32xf32>
  return
}

// -----

func.func @addptr_not_ptr(%x: tensor<64xi32>) {
  // expected-error @+1 {{first operand must be a pointer or a tile of pointers}}
  %b = tile.addptr %x, %x : tensor<64xi32>, tensor<64xi32>
  return
}

// -----

func.func @load_mask_shape(%p: tensor<64x!tile.ptr<f32>>, %m: tensor<32xi1>) {
  // expected-error @+1 {{mask shape 'tensor<32xi1>' does not match pointer shape 'tensor<64x!tile.ptr<f32>>'}}
  %x = tile.load %p mask %m : tensor<64x!tile.ptr<f32>> -> tensor<64xf32>, tensor<32xi1>
  return
}

// -----

func.func @load_other_without_mask(%p: tensor<64x!tile.ptr<f32>>, %o: tensor<64xf32>) {
  // expected-error @+1 {{`other` requires a mask}}
  %x = "tile.load"(%p, %o) <{operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<64x!tile.ptr<f32>>, tensor<64xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @load_bad_result(%p: tensor<64x!tile.ptr<f32>>) {
  // expected-error @+1 {{does not match the pointer type}}
  %x = tile.load %p : tensor<64x!tile.ptr<f32>> -> tensor<64xf16>
  return
}

// -----

func.func @load_bad_cache_modifier(%p: tensor<64x!tile.ptr<f32>>) {
  // expected-error @+1 {{cache modifier '.cs' is not one of ".ca", ".cg", ".cv"}}
  %x = tile.load %p {cacheModifier = ".cs"} : tensor<64x!tile.ptr<f32>> -> tensor<64xf32>
  return
}

// -----

func.func @store_bad_eviction_policy(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xf32>) {
  // expected-error @+1 {{eviction policy 'evict_soon' is not one of "evict_first", "evict_last", "evict_normal"}}
  tile.store %p, %v {evictionPolicy = "evict_soon"} : tensor<64x!tile.ptr<f32>>, tensor<64xf32>
  return
}

// -----

func.func @store_bad_value(%p: tensor<64x!tile.ptr<f32>>, %v: tensor<64xi32>) {
  // expected-error @+1 {{value type 'tensor<64xi32>' does not match the pointer type}}
  tile.store %p, %v : tensor<64x!tile.ptr<f32>>, tensor<64xi32>
  return
}

// -----

func.func @dot_inner(%a: tensor<32x16xf32>, %b: tensor<32x32xf32>, %c: tensor<32x32xf32>) {
  // expected-error @+1 {{inner dimensions differ: 16 vs 32}}
  %d = tile.dot %a, %b, %c : tensor<32x16xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
  return
}

// -----

func.func @dot_types(%a: tensor<32x32xf16>, %b: tensor<32x32xf16>, %c: tensor<32x32xi32>) {
  // expected-error @+1 {{unsupported dot types}}
  %d = tile.dot %a, %b, %c : tensor<32x32xf16> * tensor<32x32xf16> -> tensor<32x32xi32>
  return
}

// -----

func.func @dot_small(%a: tensor<8x32xf32>, %b: tensor<32x32xf32>, %c: tensor<8x32xf32>) {
  // expected-error @+1 {{every dot dimension must be at least 16, got 8}}
  %d = tile.dot %a, %b, %c : tensor<8x32xf32> * tensor<32x32xf32> -> tensor<8x32xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<64xf32>) {
  // expected-error @+1 {{axis 1 out of range for rank 1}}
  %s = tile.reduce(%x) {axis = 1 : i32} : (tensor<64xf32>) -> f32 {
  ^bb0(%l: f32, %r: f32):
    %a = arith.addf %l, %r : f32
    tile.reduce.return %a : f32
  }
  return
}

// -----

func.func @sort_length(%x: tensor<48xf32>) {
  // expected-error @+1 {{sorts lines of a power-of-two length, got 48}}
  %s, %i = tile.sort %x {axis = 0 : i32} : tensor<48xf32> -> tensor<48xf32>, tensor<48xi32>
  return
}

// -----

func.func @scan_result(%x: tensor<64x32xf32>) {
  // expected-error @+1 {{result 0 must be 'tensor<64x32xf32>'}}
  %s = tile.scan(%x) {axis = 1 : i32} : (tensor<64x32xf32>) -> tensor<64xf32> {
  ^bb0(%l: f32, %r: f32):
    %a = arith.addf %l, %r : f32
    tile.reduce.return %a : f32
  }
  return
}

// -----

func.func @reduce_result(%x: tensor<64x32xf32>) {
  // expected-error @+1 {{result 0 must be 'tensor<64xf32>'}}
  %s = tile.reduce(%x) {axis = 1 : i32} : (tensor<64x32xf32>) -> tensor<32xf32> {
  ^bb0(%l: f32, %r: f32):
    %a = arith.addf %l, %r : f32
    tile.reduce.return %a : f32
  }
  return
}

// -----

func.func @atomic_i8(%p: !tile.ptr<i8>, %v: i8) {
  // expected-error @+1 {{atomics need elements of at least 16 bits}}
  %o = tile.atomic_rmw add %p, %v : !tile.ptr<i8>, i8 -> i8
  return
}

// -----

func.func @bitcast_width(%x: tensor<64xf32>) {
  // expected-error @+1 {{bitcast needs element types of equal width}}
  %b = tile.bitcast %x : tensor<64xf32> -> tensor<64xf16>
  return
}

// -----

func.func @hint_pow2(%x: tensor<64xi32>) {
  // expected-error @+1 {{hint values must be powers of two, got 12}}
  %h = tile.hint %x {divisibility = array<i32: 12>} : tensor<64xi32>
  return
}

// -----

func.func @trans_perm(%x: tensor<64x32xf32>) {
  // expected-error @+1 {{order is not a permutation}}
  %t = tile.trans %x {order = array<i32: 0, 0>} : tensor<64x32xf32> -> tensor<64x32xf32>
  return
}

// -----

func.func @gather_float_index(%x: tensor<256xf32>, %i: tensor<64xf32>) {
  // expected-error @+1 {{indices must be integers}}
  %g = tile.gather %x[%i] {axis = 0 : i32} : tensor<256xf32>, tensor<64xf32> -> tensor<64xf32>
  return
}

// -----

func.func @gather_shape(%x: tensor<64x32xf32>, %i: tensor<8x16xi32>) {
  // expected-error @+1 {{src and indices differ in dimension 1}}
  %g = tile.gather %x[%i] {axis = 0 : i32} : tensor<64x32xf32>, tensor<8x16xi32> -> tensor<8x16xf32>
  return
}
