// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: xdsl-opt %s -p cse,canonicalize | filecheck %s --check-prefix=KEPT

// States and slice_update: a KV cache write at a runtime position and
// a greedy token pick (rlx.argmax, whose own cases are in reduction.mlir).

// CHECK-LABEL: func.func @cache_step(
// CHECK-SAME: %cache: !rlx.state<tensor<2x4x8xf32>>
// GENERIC-LABEL: "func.func"() <{sym_name = "cache_step"
func.func @cache_step(%cache: !rlx.state<tensor<2x4x8xf32>>, %u: tensor<1x4x2xf32>, %begin: tensor<3xi32>) -> tensor<2x4xi32> {
  // CHECK-NEXT: %old = rlx.read_state %cache : (!rlx.state<tensor<2x4x8xf32>>) -> tensor<2x4x8xf32>
  // GENERIC: %old = "rlx.read_state"(%cache) : (!rlx.state<tensor<2x4x8xf32>>) -> tensor<2x4x8xf32>
  %old = rlx.read_state %cache : (!rlx.state<tensor<2x4x8xf32>>) -> tensor<2x4x8xf32>
  // CHECK-NEXT: %new = rlx.slice_update %old, %u, %begin : (tensor<2x4x8xf32>, tensor<1x4x2xf32>, tensor<3xi32>) -> tensor<2x4x8xf32>
  // GENERIC-NEXT: %new = "rlx.slice_update"(%old, %u, %begin) : (tensor<2x4x8xf32>, tensor<1x4x2xf32>, tensor<3xi32>) -> tensor<2x4x8xf32>
  %new = rlx.slice_update %old, %u, %begin : (tensor<2x4x8xf32>, tensor<1x4x2xf32>, tensor<3xi32>) -> tensor<2x4x8xf32>
  // CHECK-NEXT: rlx.write_state %cache, %new : !rlx.state<tensor<2x4x8xf32>>, tensor<2x4x8xf32>
  // GENERIC-NEXT: "rlx.write_state"(%cache, %new) : (!rlx.state<tensor<2x4x8xf32>>, tensor<2x4x8xf32>) -> ()
  rlx.write_state %cache, %new : !rlx.state<tensor<2x4x8xf32>>, tensor<2x4x8xf32>
  // CHECK-NEXT: %again = rlx.read_state %cache : (!rlx.state<tensor<2x4x8xf32>>) -> tensor<2x4x8xf32>
  %again = rlx.read_state %cache : (!rlx.state<tensor<2x4x8xf32>>) -> tensor<2x4x8xf32>
  // CHECK-NEXT: %token = rlx.argmax %again {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4xi32>
  // GENERIC: %token = "rlx.argmax"(%again) <{axis = -1 : i64}> : (tensor<2x4x8xf32>) -> tensor<2x4xi32>
  %token = rlx.argmax %again {axis = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4xi32>
  func.return %token : tensor<2x4xi32>
}

// A write is never dropped and a read after it is not merged with the one
// before it; an unused read goes.
// KEPT-LABEL: func.func @effects(
// KEPT-NEXT: %a = rlx.read_state %s
// KEPT-NEXT: rlx.write_state %s, %x
// KEPT-NEXT: %b = rlx.read_state %s
// KEPT-NEXT: %sum = rlx.add %a, %b
// KEPT-NEXT: func.return %sum
func.func @effects(%s: !rlx.state<tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %unused = rlx.read_state %s : (!rlx.state<tensor<4xf32>>) -> tensor<4xf32>
  %a = rlx.read_state %s : (!rlx.state<tensor<4xf32>>) -> tensor<4xf32>
  rlx.write_state %s, %x : !rlx.state<tensor<4xf32>>, tensor<4xf32>
  %b = rlx.read_state %s : (!rlx.state<tensor<4xf32>>) -> tensor<4xf32>
  %sum = rlx.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %sum : tensor<4xf32>
}
