// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s

// mil-fp16, log-sum-exp (passes/fp16.py): log(reduce_sum(exp(z))) over N > 1
// reduced elements becomes log(reduce_mean(exp(z))) + log N. With z = x - max
// (the cross-entropy lowering) the mean lies in [1/N, 1] and cannot overflow,
// while the sum of 151936 classes exceeds fp16's 65504. The log's epsilon is
// then raised like any other (epsilons.mlir).

// The softmax cross-entropy lowering's logsumexp over 1000 classes:
// log(1000) = 6.9078 rounds to 6.90625 in fp16.
// CHECK-LABEL: func.func @cross_entropy(%x: tensor<2x1000xf16>) -> tensor<2x1xf16> {
// CHECK-NEXT:  %m = mil.reduce_max %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x1000xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  %z = mil.sub %x, %m : (tensor<2x1000xf16>, tensor<2x1xf16>) -> tensor<2x1000xf16>
// CHECK-NEXT:  %e = mil.exp %z : tensor<2x1000xf16>
// CHECK-NEXT:  [[MEAN:%.+]] = mil.reduce_mean %e {axes = array<i64: -1>, keep_dims = true} : (tensor<2x1000xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[MEAN]] {epsilon = 1.000000e-07 : f32} : tensor<2x1xf16>
// CHECK-NEXT:  [[LOG_N:%.+]] = mil.const dense<6.906250e+00> : tensor<f16>
// CHECK-NEXT:  [[LSE:%.+]] = mil.add [[LOG]], [[LOG_N]] : (tensor<2x1xf16>, tensor<f16>) -> tensor<2x1xf16>
// CHECK-NEXT:  %y = mil.add [[LSE]], %m : (tensor<2x1xf16>, tensor<2x1xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  func.return %y : tensor<2x1xf16>
func.func @cross_entropy(%x: tensor<2x1000xf32>) -> tensor<2x1xf32> {
  %m = mil.reduce_max %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x1000xf32>) -> tensor<2x1xf32>
  %z = mil.sub %x, %m : (tensor<2x1000xf32>, tensor<2x1xf32>) -> tensor<2x1000xf32>
  %e = mil.exp %z : tensor<2x1000xf32>
  %s = mil.reduce_sum %e {axes = array<i64: -1>, keep_dims = true} : (tensor<2x1000xf32>) -> tensor<2x1xf32>
  %l = mil.log %s {epsilon = 1.0e-45 : f32} : tensor<2x1xf32>
  %y = mil.add %l, %m : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  func.return %y : tensor<2x1xf32>
}

// Several axes without keep_dims: N = 3 * 4 = 12 (log 12 = 2.4849).
// CHECK-LABEL: func.func @several_axes(%x: tensor<2x3x4xf16>) -> tensor<2xf16> {
// CHECK-NEXT:  %e = mil.exp %x : tensor<2x3x4xf16>
// CHECK-NEXT:  [[MEAN:%.+]] = mil.reduce_mean %e {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<2x3x4xf16>) -> tensor<2xf16>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[MEAN]] {epsilon = 1.000000e-07 : f32} : tensor<2xf16>
// CHECK-NEXT:  [[LOG_N:%.+]] = mil.const dense<2.484380e+00> : tensor<f16>
// CHECK-NEXT:  [[LSE:%.+]] = mil.add [[LOG]], [[LOG_N]] : (tensor<2xf16>, tensor<f16>) -> tensor<2xf16>
// CHECK-NEXT:  func.return [[LSE]] : tensor<2xf16>
func.func @several_axes(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  %e = mil.exp %x : tensor<2x3x4xf32>
  %s = mil.reduce_sum %e {axes = array<i64: 1, 2>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %l = mil.log %s : tensor<2xf32>
  func.return %l : tensor<2xf32>
}

// Absent axes reduce everything: N = 6 (log 6 = 1.7918).
// CHECK-LABEL: func.func @all_axes(%x: tensor<2x3xf16>) -> tensor<f16> {
// CHECK-NEXT:  %e = mil.exp %x : tensor<2x3xf16>
// CHECK-NEXT:  [[MEAN:%.+]] = mil.reduce_mean %e : (tensor<2x3xf16>) -> tensor<f16>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[MEAN]] {epsilon = 1.000000e-07 : f32} : tensor<f16>
// CHECK-NEXT:  [[LOG_N:%.+]] = mil.const dense<1.791990e+00> : tensor<f16>
// CHECK-NEXT:  mil.add [[LOG]], [[LOG_N]] : (tensor<f16>, tensor<f16>) -> tensor<f16>
func.func @all_axes(%x: tensor<2x3xf32>) -> tensor<f32> {
  %e = mil.exp %x : tensor<2x3xf32>
  %s = mil.reduce_sum %e : (tensor<2x3xf32>) -> tensor<f32>
  %l = mil.log %s : tensor<f32>
  func.return %l : tensor<f32>
}

// A reduce_sum used elsewhere too stays for that use.
// CHECK-LABEL: func.func @sum_used_twice(%x: tensor<2x8xf16>) -> (tensor<2x1xf16>, tensor<2x1xf16>) {
// CHECK-NEXT:  %e = mil.exp %x : tensor<2x8xf16>
// CHECK-NEXT:  %s = mil.reduce_sum %e {axes = array<i64: 1>, keep_dims = true} : (tensor<2x8xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[MEAN:%.+]] = mil.reduce_mean %e {axes = array<i64: 1>, keep_dims = true} : (tensor<2x8xf16>) -> tensor<2x1xf16>
// CHECK-NEXT:  [[LOG:%.+]] = mil.log [[MEAN]] {epsilon = 1.000000e-07 : f32} : tensor<2x1xf16>
// CHECK-NEXT:  [[LOG_N:%.+]] = mil.const dense<2.080080e+00> : tensor<f16>
// CHECK-NEXT:  [[LSE:%.+]] = mil.add [[LOG]], [[LOG_N]] : (tensor<2x1xf16>, tensor<f16>) -> tensor<2x1xf16>
// CHECK-NEXT:  func.return [[LSE]], %s : tensor<2x1xf16>, tensor<2x1xf16>
func.func @sum_used_twice(%x: tensor<2x8xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>) {
  %e = mil.exp %x : tensor<2x8xf32>
  %s = mil.reduce_sum %e {axes = array<i64: 1>, keep_dims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %l = mil.log %s : tensor<2x1xf32>
  func.return %l, %s : tensor<2x1xf32>, tensor<2x1xf32>
}

// Not rewritten: a single reduced element (N = 1), and a sum of something
// other than exp.
// CHECK-LABEL: func.func @not_rewritten(%x: tensor<2x1xf16>, %p: tensor<2x4xf16>) -> (tensor<2xf16>, tensor<2xf16>) {
// CHECK-NEXT:  %e = mil.exp %x : tensor<2x1xf16>
// CHECK-NEXT:  %s = mil.reduce_sum %e {axes = array<i64: 1>} : (tensor<2x1xf16>) -> tensor<2xf16>
// CHECK-NEXT:  %l = mil.log %s {epsilon = 1.000000e-07 : f32} : tensor<2xf16>
// CHECK-NEXT:  %t = mil.reduce_sum %p {axes = array<i64: 1>} : (tensor<2x4xf16>) -> tensor<2xf16>
// CHECK-NEXT:  %u = mil.log %t {epsilon = 1.000000e-07 : f32} : tensor<2xf16>
// CHECK-NEXT:  func.return %l, %u
func.func @not_rewritten(%x: tensor<2x1xf32>, %p: tensor<2x4xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %e = mil.exp %x : tensor<2x1xf32>
  %s = mil.reduce_sum %e {axes = array<i64: 1>} : (tensor<2x1xf32>) -> tensor<2xf32>
  %l = mil.log %s : tensor<2xf32>
  %t = mil.reduce_sum %p {axes = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2xf32>
  %u = mil.log %t : tensor<2xf32>
  func.return %l, %u : tensor<2xf32>, tensor<2xf32>
}
