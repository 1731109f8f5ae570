// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, the vision activations (passes/rlx_to_mil/activations.py):
// hardswish, hardsigmoid, leaky_relu, elu and clamp.

// NO-RLX-NOT: rlx.

// x * sigmoid_hard(x, 1/6, 1/2): min(max(x + 3, 0), 6) / 6 = min(max(x/6 + 1/2, 0), 1).
// CHECK-LABEL: func.func @hardswish(
// CHECK-NEXT:  [[V0:%.+]] = mil.sigmoid_hard %x {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : tensor<2x8xf32>
// CHECK-NEXT:  %y = mil.mul %x, [[V0]] : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @hardswish(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.hardswish %x : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @hardsigmoid(
// CHECK-NEXT:  %y = mil.sigmoid_hard %x {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : tensor<2x8xf16>
// CHECK-NEXT:  func.return %y : tensor<2x8xf16>
func.func @hardsigmoid(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %y = rlx.hardsigmoid %x : tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// CHECK-LABEL: func.func @leaky_relu(
// CHECK-NEXT:  %y = mil.leaky_relu %x {alpha = 1.000000e-02 : f32} : tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @leaky_relu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.leaky_relu %x : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @elu(
// CHECK-NEXT:  %y = mil.elu %x {alpha = 5.000000e-01 : f32} : tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @elu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.elu %x {alpha = 5.000000e-01 : f32} : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// Both bounds, min < max: MIL's clip.
// CHECK-LABEL: func.func @relu6(
// CHECK-NEXT:  %y = mil.clip %x {alpha = 0.000000e+00 : f32, beta = 6.000000e+00 : f32} : tensor<2x8xf16>
// CHECK-NEXT:  func.return %y : tensor<2x8xf16>
func.func @relu6(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %y = rlx.clamp %x {min = 0.000000e+00 : f32, max = 6.000000e+00 : f32} : tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// One bound: maximum or minimum with a scalar const (min 0 alone is relu).
// CHECK-LABEL: func.func @clamp_min(
// CHECK-NEXT:  [[V0:%.+]] = mil.const dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT:  %y = mil.maximum %x, [[V0]] : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @clamp_min(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.clamp %x {min = -1.000000e+00 : f32} : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @clamp_max(
// CHECK-NEXT:  [[V0:%.+]] = mil.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:  %y = mil.minimum %x, [[V0]] : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @clamp_max(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.clamp %x {max = 2.000000e+00 : f32} : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// CHECK-LABEL: func.func @clamp_relu(
// CHECK-NEXT:  %y = mil.relu %x : tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @clamp_relu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.clamp %x {min = 0.000000e+00 : f32} : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}

// min = max, which MIL's clip refuses (it needs alpha < beta).
// CHECK-LABEL: func.func @clamp_point(
// CHECK-NEXT:  [[V0:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[V1:%.+]] = mil.maximum %x, [[V0]] : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK-NEXT:  [[V2:%.+]] = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  %y = mil.minimum [[V1]], [[V2]] : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
// CHECK-NEXT:  func.return %y : tensor<2x8xf32>
func.func @clamp_point(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.clamp %x {min = 1.000000e+00 : f32, max = 1.000000e+00 : f32} : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
