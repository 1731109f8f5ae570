// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, spatial norm family (passes/rlx_to_mil/spatial_norm.py):
// batch_norm and group_norm.

// NO-RLX-NOT: rlx.

// Const statistics and parameters: MIL batch_norm.
// CHECK-LABEL: func.func @batch_norm(
// CHECK: %y = mil.batch_norm %x, %m, %v, gamma %g, beta %b {epsilon = 1.000000e-03 : f32} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
func.func @batch_norm(%x: tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %m = rlx.param "bn.mean" : tensor<4xf32>
  %v = rlx.param "bn.var" : tensor<4xf32>
  %g = rlx.param "bn.weight" : tensor<4xf32>
  %b = rlx.param "bn.bias" : tensor<4xf32>
  %y = rlx.batch_norm %x, %m, %v, gamma %g, beta %b {epsilon = 1.0e-03 : f32} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  func.return %y : tensor<1x4x5x5xf32>
}

// A signal's batch norm runs on it as an image of height 1.
// CHECK-LABEL: func.func @batch_norm_signal(
// CHECK: %0 = mil.reshape %x {shape = array<i64: 1, 4, 1, 9>} : (tensor<1x4x9xf32>) -> tensor<1x4x1x9xf32>
// CHECK-NEXT: %1 = mil.batch_norm %0, %m, %v {epsilon = 1.000000e-05 : f32} : (tensor<1x4x1x9xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x1x9xf32>
// CHECK-NEXT: %y = mil.reshape %1 {shape = array<i64: 1, 4, 9>} : (tensor<1x4x1x9xf32>) -> tensor<1x4x9xf32>
func.func @batch_norm_signal(%x: tensor<1x4x9xf32>) -> tensor<1x4x9xf32> {
  %m = rlx.param "bn.mean" : tensor<4xf32>
  %v = rlx.param "bn.var" : tensor<4xf32>
  %y = rlx.batch_norm %x, %m, %v : (tensor<1x4x9xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x9xf32>
  func.return %y : tensor<1x4x9xf32>
}

// Runtime statistics: (x − mean) · rsqrt(var, eps), per channel.
// CHECK-LABEL: func.func @batch_norm_runtime(
// CHECK-NEXT: %0 = mil.reshape %m {shape = array<i64: 3, 1>} : (tensor<3xf16>) -> tensor<3x1xf16>
// CHECK-NEXT: %1 = mil.sub %x, %0 : (tensor<2x3x7xf16>, tensor<3x1xf16>) -> tensor<2x3x7xf16>
// CHECK-NEXT: %2 = mil.rsqrt %v {epsilon = 1.000000e-05 : f32} : tensor<3xf16>
// CHECK-NEXT: %3 = mil.reshape %2 {shape = array<i64: 3, 1>} : (tensor<3xf16>) -> tensor<3x1xf16>
// CHECK-NEXT: %y = mil.mul %1, %3 : (tensor<2x3x7xf16>, tensor<3x1xf16>) -> tensor<2x3x7xf16>
func.func @batch_norm_runtime(%x: tensor<2x3x7xf16>, %m: tensor<3xf16>, %v: tensor<3xf16>) -> tensor<2x3x7xf16> {
  %y = rlx.batch_norm %x, %m, %v : (tensor<2x3x7xf16>, tensor<3xf16>, tensor<3xf16>) -> tensor<2x3x7xf16>
  func.return %y : tensor<2x3x7xf16>
}

// Groups of channels: layer_norm of the [N, G, C/G, HW] view, then γ and β
// through a batch_norm of mean 0, variance 1 and epsilon 0.
// CHECK-LABEL: func.func @group_norm(
// CHECK: %0 = mil.reshape %x {shape = array<i64: 1, 3, 2, 16>} : (tensor<1x6x4x4xf32>) -> tensor<1x3x2x16xf32>
// CHECK-NEXT: %1 = mil.layer_norm %0 {axes = array<i64: 2, 3>, epsilon = 1.000000e-05 : f32} : (tensor<1x3x2x16xf32>) -> tensor<1x3x2x16xf32>
// CHECK-NEXT: %2 = mil.reshape %1 {shape = array<i64: 1, 6, 4, 4>} : (tensor<1x3x2x16xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %3 = mil.const dense<0.000000e+00> : tensor<6xf32>
// CHECK-NEXT: %4 = mil.const dense<1.000000e+00> : tensor<6xf32>
// CHECK-NEXT: %y = mil.batch_norm %2, %3, %4, gamma %g, beta %b {epsilon = 0.000000e+00 : f32} : (tensor<1x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
func.func @group_norm(%x: tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32> {
  %g = rlx.param "gn.weight" : tensor<6xf32>
  %b = rlx.param "gn.bias" : tensor<6xf32>
  %y = rlx.group_norm %x, gamma %g, beta %b {groups = 3 : i64} : (tensor<1x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  func.return %y : tensor<1x6x4x4xf32>
}

// groups = C: MIL instance_norm.
// CHECK-LABEL: func.func @instance_norm(
// CHECK: %y = mil.instance_norm %x, beta %b {epsilon = 1.000000e-06 : f32} : (tensor<1x6x4x4xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
func.func @instance_norm(%x: tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32> {
  %b = rlx.param "in.bias" : tensor<6xf32>
  %y = rlx.group_norm %x, beta %b {groups = 6 : i64, epsilon = 1.0e-06 : f32} : (tensor<1x6x4x4xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  func.return %y : tensor<1x6x4x4xf32>
}

// groups = 1: layer_norm over every axis but N.
// CHECK-LABEL: func.func @layer_norm_over_channels(
// CHECK-NEXT: %y = mil.layer_norm %x {axes = array<i64: 1, 2>, epsilon = 1.000000e-05 : f32} : (tensor<1x6x9xf32>) -> tensor<1x6x9xf32>
func.func @layer_norm_over_channels(%x: tensor<1x6x9xf32>) -> tensor<1x6x9xf32> {
  %y = rlx.group_norm %x {groups = 1 : i64} : (tensor<1x6x9xf32>) -> tensor<1x6x9xf32>
  func.return %y : tensor<1x6x9xf32>
}
