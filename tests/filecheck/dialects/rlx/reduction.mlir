// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Reductions (with and without keep_dims, negative axes), softmax, argmax,
// cumsum, topk and argsort.

// CHECK-LABEL: func.func @reductions(
// GENERIC-LABEL: "func.func"() <{sym_name = "reductions"
func.func @reductions(%x: tensor<2x3x4xf32>) {
  // CHECK-NEXT: %sum = rlx.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // GENERIC: %sum = "rlx.reduce_sum"(%x) <{axes = array<i64: 2>}> : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %sum = rlx.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %mean = rlx.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // GENERIC-NEXT: %mean = "rlx.reduce_mean"(%x) <{axes = array<i64: -1>, keep_dims = true}> : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %mean = rlx.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK-NEXT: %max = rlx.reduce_max %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // GENERIC-NEXT: %max = "rlx.reduce_max"(%x) <{axes = array<i64: 0, 2>}> : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %max = rlx.reduce_max %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK-NEXT: %min = rlx.reduce_min %x {axes = array<i64: 2, 0>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // GENERIC-NEXT: %min = "rlx.reduce_min"(%x) <{axes = array<i64: 2, 0>, keep_dims = true}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %min = rlx.reduce_min %x {axes = array<i64: 2, 0>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  // CHECK-NEXT: %all = rlx.reduce_sum %x {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  // GENERIC-NEXT: %all = "rlx.reduce_sum"(%x) <{axes = array<i64: 0, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<f32>
  %all = rlx.reduce_sum %x {axes = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK-NEXT: %nokeep = rlx.reduce_mean %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // GENERIC-NEXT: %nokeep = "rlx.reduce_mean"(%x) <{axes = array<i64: 1>, keep_dims = false}> : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %nokeep = rlx.reduce_mean %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// CHECK-LABEL: func.func @reductions_int_f16(
// GENERIC-LABEL: "func.func"() <{sym_name = "reductions_int_f16"
func.func @reductions_int_f16(%i: tensor<5x6xi32>, %h: tensor<1x8x1x16xf16>) {
  // CHECK-NEXT: %isum = rlx.reduce_sum %i {axes = array<i64: -2>} : (tensor<5x6xi32>) -> tensor<6xi32>
  // GENERIC: %isum = "rlx.reduce_sum"(%i) <{axes = array<i64: -2>}> : (tensor<5x6xi32>) -> tensor<6xi32>
  %isum = rlx.reduce_sum %i {axes = array<i64: -2>} : (tensor<5x6xi32>) -> tensor<6xi32>
  // CHECK-NEXT: %imax = rlx.reduce_max %i {axes = array<i64: 1>, keep_dims = true} : (tensor<5x6xi32>) -> tensor<5x1xi32>
  // GENERIC-NEXT: %imax = "rlx.reduce_max"(%i) <{axes = array<i64: 1>, keep_dims = true}> : (tensor<5x6xi32>) -> tensor<5x1xi32>
  %imax = rlx.reduce_max %i {axes = array<i64: 1>, keep_dims = true} : (tensor<5x6xi32>) -> tensor<5x1xi32>
  // CHECK-NEXT: %hmean = rlx.reduce_mean %h {axes = array<i64: 1>, keep_dims = true} : (tensor<1x8x1x16xf16>) -> tensor<1x1x1x16xf16>
  // GENERIC-NEXT: %hmean = "rlx.reduce_mean"(%h) <{axes = array<i64: 1>, keep_dims = true}> : (tensor<1x8x1x16xf16>) -> tensor<1x1x1x16xf16>
  %hmean = rlx.reduce_mean %h {axes = array<i64: 1>, keep_dims = true} : (tensor<1x8x1x16xf16>) -> tensor<1x1x1x16xf16>
  func.return
}

// CHECK-LABEL: func.func @softmax(
// GENERIC-LABEL: "func.func"() <{sym_name = "softmax"
func.func @softmax(%x: tensor<2x4x5x5xf32>, %h: tensor<3x7xf16>) {
  // CHECK-NEXT: %last = rlx.softmax %x : tensor<2x4x5x5xf32>
  // GENERIC: %last = "rlx.softmax"(%x) : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %last = rlx.softmax %x : tensor<2x4x5x5xf32>
  // CHECK-NEXT: %axis1 = rlx.softmax %x {axis = 1 : i64} : tensor<2x4x5x5xf32>
  // GENERIC-NEXT: %axis1 = "rlx.softmax"(%x) <{axis = 1 : i64}> : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %axis1 = rlx.softmax %x {axis = 1 : i64} : tensor<2x4x5x5xf32>
  // CHECK-NEXT: %neg = rlx.softmax %h {axis = -2 : i64} : tensor<3x7xf16>
  // GENERIC-NEXT: %neg = "rlx.softmax"(%h) <{axis = -2 : i64}> : (tensor<3x7xf16>) -> tensor<3x7xf16>
  %neg = rlx.softmax %h {axis = -2 : i64} : tensor<3x7xf16>
  func.return
}

// CHECK-LABEL: func.func @argmax_keep(
func.func @argmax_keep(%x: tensor<3x5xf16>) -> tensor<1x5xi32> {
  // CHECK-NEXT: %i = rlx.argmax %x {axis = 0 : i64, keep_dims = true} : (tensor<3x5xf16>) -> tensor<1x5xi32>
  %i = rlx.argmax %x {axis = 0 : i64, keep_dims = true} : (tensor<3x5xf16>) -> tensor<1x5xi32>
  func.return %i : tensor<1x5xi32>
}

// CHECK-LABEL: func.func @cumsum(
// GENERIC-LABEL: "func.func"() <{sym_name = "cumsum"
func.func @cumsum(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>, %h: tensor<5xf16>) {
  // CHECK-NEXT: %last = rlx.cumsum %x {axis = -1 : i64} : tensor<2x3x4xf32>
  // GENERIC: %last = "rlx.cumsum"(%x) <{axis = -1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %last = rlx.cumsum %x {axis = -1 : i64} : tensor<2x3x4xf32>
  // CHECK-NEXT: %ids = rlx.cumsum %i {axis = 1 : i64} : tensor<1x8xi32>
  // GENERIC-NEXT: %ids = "rlx.cumsum"(%i) <{axis = 1 : i64}> : (tensor<1x8xi32>) -> tensor<1x8xi32>
  %ids = rlx.cumsum %i {axis = 1 : i64} : tensor<1x8xi32>
  // CHECK-NEXT: %flags = rlx.cumsum %x {axis = -3 : i64, exclusive = true, reverse = true} : tensor<2x3x4xf32>
  // GENERIC-NEXT: %flags = "rlx.cumsum"(%x) <{axis = -3 : i64, exclusive = true, reverse = true}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %flags = rlx.cumsum %x {axis = -3 : i64, exclusive = true, reverse = true} : tensor<2x3x4xf32>
  // CHECK-NEXT: %half = rlx.cumsum %h {axis = 0 : i64, exclusive = false} : tensor<5xf16>
  // GENERIC-NEXT: %half = "rlx.cumsum"(%h) <{axis = 0 : i64, exclusive = false}> : (tensor<5xf16>) -> tensor<5xf16>
  %half = rlx.cumsum %h {axis = 0 : i64, exclusive = false} : tensor<5xf16>
  func.return
}

// CHECK-LABEL: func.func @topk(
// GENERIC-LABEL: "func.func"() <{sym_name = "topk"
func.func @topk(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>) {
  // CHECK-NEXT: %top, %top_1 = rlx.topk %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>)
  // GENERIC: %top, %top_1 = "rlx.topk"(%x) <{k = 2 : i64}> : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>)
  %top:2 = rlx.topk %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>)
  // CHECK-NEXT: %sorted, %sorted_1 = rlx.topk %i {k = 8 : i64, axis = 1 : i64, largest = false} : (tensor<1x8xi32>) -> (tensor<1x8xi32>, tensor<1x8xi32>)
  // GENERIC-NEXT: %sorted, %sorted_1 = "rlx.topk"(%i) <{k = 8 : i64, axis = 1 : i64, largest = false}> : (tensor<1x8xi32>) -> (tensor<1x8xi32>, tensor<1x8xi32>)
  %sorted:2 = rlx.topk %i {k = 8 : i64, axis = 1 : i64, largest = false} : (tensor<1x8xi32>) -> (tensor<1x8xi32>, tensor<1x8xi32>)
  func.return
}

// CHECK-LABEL: func.func @argsort(
// GENERIC-LABEL: "func.func"() <{sym_name = "argsort"
func.func @argsort(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>) {
  // CHECK-NEXT: %order = rlx.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  // GENERIC: %order = "rlx.argsort"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  %order = rlx.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  // CHECK-NEXT: %down = rlx.argsort %i {axis = 0 : i64, descending = true} : (tensor<1x8xi32>) -> tensor<1x8xi32>
  // GENERIC-NEXT: %down = "rlx.argsort"(%i) <{axis = 0 : i64, descending = true}> : (tensor<1x8xi32>) -> tensor<1x8xi32>
  %down = rlx.argsort %i {axis = 0 : i64, descending = true} : (tensor<1x8xi32>) -> tensor<1x8xi32>
  func.return
}
