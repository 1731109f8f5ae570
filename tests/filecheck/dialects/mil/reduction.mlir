// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Reductions (absent axes: all), softmax, layer_norm (optional gamma and
// beta, written with their MIL names) and cumsum (absent axis: 0).

// CHECK-LABEL: func.func @reductions(
// GENERIC-LABEL: "func.func"() <{sym_name = "reductions"
func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<5x6xi32>) {
  // CHECK-NEXT: %sum = mil.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // GENERIC: %sum = "mil.reduce_sum"(%x) <{axes = array<i64: 1>}> : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %sum = mil.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %mean = mil.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // GENERIC-NEXT: %mean = "mil.reduce_mean"(%x) <{axes = array<i64: -1>, keep_dims = true}> : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %mean = mil.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  // CHECK-NEXT: %max = mil.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  // GENERIC-NEXT: %max = "mil.reduce_max"(%x) : (tensor<2x3x4xf32>) -> tensor<f32>
  %max = mil.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  // CHECK-NEXT: %min = mil.reduce_min %i {axes = array<i64: 0, 1>, keep_dims = true} : (tensor<5x6xi32>) -> tensor<1x1xi32>
  // GENERIC-NEXT: %min = "mil.reduce_min"(%i) <{axes = array<i64: 0, 1>, keep_dims = true}> : (tensor<5x6xi32>) -> tensor<1x1xi32>
  %min = mil.reduce_min %i {axes = array<i64: 0, 1>, keep_dims = true} : (tensor<5x6xi32>) -> tensor<1x1xi32>
  // CHECK-NEXT: %prod = mil.reduce_prod %i {axes = array<i64: 0>} : (tensor<5x6xi32>) -> tensor<6xi32>
  // GENERIC-NEXT: %prod = "mil.reduce_prod"(%i) <{axes = array<i64: 0>}> : (tensor<5x6xi32>) -> tensor<6xi32>
  %prod = mil.reduce_prod %i {axes = array<i64: 0>} : (tensor<5x6xi32>) -> tensor<6xi32>
  // CHECK-NEXT: %lse = mil.reduce_log_sum_exp %x {axes = array<i64: 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // GENERIC-NEXT: %lse = "mil.reduce_log_sum_exp"(%x) <{axes = array<i64: 2, 0>}> : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %lse = mil.reduce_log_sum_exp %x {axes = array<i64: 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @normalization(
// GENERIC-LABEL: "func.func"() <{sym_name = "normalization"
func.func @normalization(%x: tensor<1x16x1x8xf16>, %y: tensor<2x3x4xf32>) {
  // CHECK-NEXT: %softmax = mil.softmax %x {axis = 1 : i64} : tensor<1x16x1x8xf16>
  // GENERIC: %softmax = "mil.softmax"(%x) <{axis = 1 : i64}> : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xf16>
  %softmax = mil.softmax %x {axis = 1 : i64} : tensor<1x16x1x8xf16>
  // CHECK-NEXT: %softmax_last = mil.softmax %y : tensor<2x3x4xf32>
  // GENERIC-NEXT: %softmax_last = "mil.softmax"(%y) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %softmax_last = mil.softmax %y : tensor<2x3x4xf32>
  // CHECK-NEXT: %gamma = mil.const weight "ln.gamma" : tensor<16xf16>
  // GENERIC-NEXT: %gamma = "mil.const"() <{weight = "ln.gamma"}> : () -> tensor<16xf16>
  %gamma = mil.const weight "ln.gamma" : tensor<16xf16>
  // CHECK-NEXT: %beta = mil.const weight "ln.beta" : tensor<16xf16>
  // GENERIC-NEXT: %beta = "mil.const"() <{weight = "ln.beta"}> : () -> tensor<16xf16>
  %beta = mil.const weight "ln.beta" : tensor<16xf16>
  // CHECK-NEXT: %ln = mil.layer_norm %x, gamma %gamma, beta %beta {axes = array<i64: 1>, epsilon = 1.000000e-05 : f32} : (tensor<1x16x1x8xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x1x8xf16>
  // GENERIC-NEXT: %ln = "mil.layer_norm"(%x, %gamma, %beta) <{axes = array<i64: 1>, epsilon = 1.000000e-05 : f32, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<1x16x1x8xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x1x8xf16>
  %ln = mil.layer_norm %x, gamma %gamma, beta %beta {axes = array<i64: 1>, epsilon = 1.0e-05 : f32} : (tensor<1x16x1x8xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x1x8xf16>
  // CHECK-NEXT: %g2 = mil.const dense<1.000000e+00> : tensor<3x4xf32>
  // GENERIC-NEXT: %g2 = "mil.const"() <{val = dense<1.000000e+00> : tensor<3x4xf32>}> : () -> tensor<3x4xf32>
  %g2 = mil.const dense<1.0> : tensor<3x4xf32>
  // CHECK-NEXT: %gamma_only = mil.layer_norm %y, gamma %g2 {axes = array<i64: -1, 1>} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  // GENERIC-NEXT: %gamma_only = "mil.layer_norm"(%y, %g2) <{axes = array<i64: -1, 1>, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %gamma_only = mil.layer_norm %y, gamma %g2 {axes = array<i64: -1, 1>} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %b32 = mil.const dense<5.000000e-01> : tensor<16xf32>
  // GENERIC-NEXT: %b32 = "mil.const"() <{val = dense<5.000000e-01> : tensor<16xf32>}> : () -> tensor<16xf32>
  %b32 = mil.const dense<0.5> : tensor<16xf32>
  // CHECK-NEXT: %beta_only = mil.layer_norm %x, beta %b32 {axes = array<i64: 1>} : (tensor<1x16x1x8xf16>, tensor<16xf32>) -> tensor<1x16x1x8xf16>
  // GENERIC-NEXT: %beta_only = "mil.layer_norm"(%x, %b32) <{axes = array<i64: 1>, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<1x16x1x8xf16>, tensor<16xf32>) -> tensor<1x16x1x8xf16>
  %beta_only = mil.layer_norm %x, beta %b32 {axes = array<i64: 1>} : (tensor<1x16x1x8xf16>, tensor<16xf32>) -> tensor<1x16x1x8xf16>
  // CHECK-NEXT: %plain = mil.layer_norm %y : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // GENERIC-NEXT: %plain = "mil.layer_norm"(%y) <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %plain = mil.layer_norm %y : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @cumsum(
// GENERIC-LABEL: "func.func"() <{sym_name = "cumsum"
func.func @cumsum(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>, %h: tensor<1x16x1x8xf16>) {
  // CHECK-NEXT: %first = mil.cumsum %x : tensor<2x3x4xf32>
  // GENERIC: %first = "mil.cumsum"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %first = mil.cumsum %x : tensor<2x3x4xf32>
  // CHECK-NEXT: %last = mil.cumsum %x {axis = -1 : i64} : tensor<2x3x4xf32>
  // GENERIC-NEXT: %last = "mil.cumsum"(%x) <{axis = -1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %last = mil.cumsum %x {axis = -1 : i64} : tensor<2x3x4xf32>
  // CHECK-NEXT: %ids = mil.cumsum %i {axis = 1 : i64, exclusive = true} : tensor<1x8xi32>
  // GENERIC-NEXT: %ids = "mil.cumsum"(%i) <{axis = 1 : i64, exclusive = true}> : (tensor<1x8xi32>) -> tensor<1x8xi32>
  %ids = mil.cumsum %i {axis = 1 : i64, exclusive = true} : tensor<1x8xi32>
  // CHECK-NEXT: %back = mil.cumsum %h {axis = 3 : i64, exclusive = false, reverse = true} : tensor<1x16x1x8xf16>
  // GENERIC-NEXT: %back = "mil.cumsum"(%h) <{axis = 3 : i64, exclusive = false, reverse = true}> : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xf16>
  %back = mil.cumsum %h {axis = 3 : i64, exclusive = false, reverse = true} : tensor<1x16x1x8xf16>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @topk(
// GENERIC-LABEL: "func.func"() <{sym_name = "topk"
func.func @topk(%x: tensor<2x3x4xf32>, %h: tensor<1x16x1x8xf16>) {
  // CHECK-NEXT: %top, %top_1 = mil.topk %x : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x1xi32>)
  // GENERIC: %top, %top_1 = "mil.topk"(%x) : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x1xi32>)
  %top:2 = mil.topk %x : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x1xi32>)
  // CHECK-NEXT: %sorted, %sorted_1 = mil.topk %h {k = 8 : i64, axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> (tensor<1x16x1x8xf16>, tensor<1x16x1x8xi32>)
  // GENERIC-NEXT: %sorted, %sorted_1 = "mil.topk"(%h) <{k = 8 : i64, axis = 3 : i64, ascending = true}> : (tensor<1x16x1x8xf16>) -> (tensor<1x16x1x8xf16>, tensor<1x16x1x8xi32>)
  %sorted:2 = mil.topk %h {k = 8 : i64, axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> (tensor<1x16x1x8xf16>, tensor<1x16x1x8xi32>)
  func.return
}

// CHECK-LABEL: func.func @argsort(
// GENERIC-LABEL: "func.func"() <{sym_name = "argsort"
func.func @argsort(%x: tensor<2x3x4xf32>, %h: tensor<1x16x1x8xf16>) {
  // CHECK-NEXT: %order = mil.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  // GENERIC: %order = "mil.argsort"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  %order = mil.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  // CHECK-NEXT: %up = mil.argsort %h {axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xi32>
  // GENERIC-NEXT: %up = "mil.argsort"(%h) <{axis = 3 : i64, ascending = true}> : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xi32>
  %up = mil.argsort %h {axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xi32>
  func.return
}
