// RUN: xdsl-opt %s -p canonicalize | filecheck %s

// RemoveMultiplyByOne (passes/canonicalization.py): x · 1, 1 · x and x / 1
// are x when the one broadcasts nothing.

// An attention lowered with scale 1 (Whisper scales its queries first).
// CHECK-LABEL: func.func @scale_one(
// CHECK-NEXT:    %p = mil.softmax %s {axis = -1 : i64} : tensor<1x2x4x4xf16>
// CHECK-NEXT:    func.return %p : tensor<1x2x4x4xf16>
func.func @scale_one(%s: tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %c = mil.const dense<1.0> : tensor<f16>
  %m = mil.mul %s, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
  %p = mil.softmax %m {axis = -1 : i64} : tensor<1x2x4x4xf16>
  func.return %p : tensor<1x2x4x4xf16>
}

// CHECK-LABEL: func.func @one_times(
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @one_times(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = mil.const dense<1.0> : tensor<1x3xf32>
  %m = mil.mul %c, %x : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %m : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @over_one(
// CHECK-NEXT:    func.return %x : tensor<2x3xi32>
func.func @over_one(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %c = mil.const dense<1> : tensor<i32>
  %d = mil.real_div %x, %c : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  func.return %d : tensor<2x3xi32>
}

// Negative: a one that broadcasts x to a larger result stays.
// CHECK-LABEL: func.func @broadcasting_one(
// CHECK-NEXT:    %c = mil.const dense<1.000000e+00> : tensor<2x3xf32>
// CHECK-NEXT:    %m = mil.mul %x, %c : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %m : tensor<2x3xf32>
func.func @broadcasting_one(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = mil.const dense<1.0> : tensor<2x3xf32>
  %m = mil.mul %x, %c : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %m : tensor<2x3xf32>
}

// Negative: 1 / x is not x; nor is x times a const that is not all ones.
// CHECK-LABEL: func.func @not_one(
// CHECK-NEXT:    %c = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %d = mil.real_div %c, %x : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %k = mil.const dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %m = mil.mul %x, %k : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    func.return %d, %m : tensor<2xf32>, tensor<2xf32>
func.func @not_one(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = mil.const dense<1.0> : tensor<f32>
  %d = mil.real_div %c, %x : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %k = mil.const dense<[1.0, 2.0]> : tensor<2xf32>
  %m = mil.mul %x, %k : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %d, %m : tensor<2xf32>, tensor<2xf32>
}
