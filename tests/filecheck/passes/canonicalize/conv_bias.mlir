// RUN: xdsl-opt %s -p canonicalize | filecheck %s

// FoldBiasIntoConv (passes/conv_bias.py): a per-channel const added to a
// conv's only result goes into the conv's bias.

// A linear layer's bias after its 1x1 conv in ANE form: the bias view
// [1, C, 1, 1] of the weights file's [C] becomes the conv's bias [C].
// CHECK-LABEL: func.func @linear_bias(
// CHECK-NEXT:    %w = mil.const weight "w" {weight_shape = array<i64: 8, 4>} : tensor<8x4x1x1xf16>
// CHECK-NEXT:    %0 = mil.const weight "b" : tensor<8xf16>
// CHECK-NEXT:    %z = mil.conv %x, %w, bias %0 : (tensor<1x4x1x16xf16>, tensor<8x4x1x1xf16>, tensor<8xf16>) -> tensor<1x8x1x16xf16>
// CHECK-NEXT:    func.return %z : tensor<1x8x1x16xf16>
func.func @linear_bias(%x: tensor<1x4x1x16xf16>) -> tensor<1x8x1x16xf16> {
  %w = mil.const weight "w" {weight_shape = array<i64: 8, 4>} : tensor<8x4x1x1xf16>
  %y = mil.conv %x, %w : (tensor<1x4x1x16xf16>, tensor<8x4x1x1xf16>) -> tensor<1x8x1x16xf16>
  %b = mil.const weight "b" {weight_shape = array<i64: 8>} : tensor<1x8x1x1xf16>
  %z = mil.add %y, %b : (tensor<1x8x1x16xf16>, tensor<1x8x1x1xf16>) -> tensor<1x8x1x16xf16>
  func.return %z : tensor<1x8x1x16xf16>
}

// An inline [C, 1, 1] const on the left of the add, summed with the conv's
// inline bias.
// CHECK-LABEL: func.func @summed_bias(
// CHECK-NEXT:    %w = mil.const dense<1.000000e+00> : tensor<2x3x1x1xf32>
// CHECK-NEXT:    %0 = mil.const dense<[1.500000e+00, 2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %z = mil.conv %x, %w, bias %0 : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %z : tensor<1x2x4x4xf32>
func.func @summed_bias(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = mil.const dense<1.0> : tensor<2x3x1x1xf32>
  %b0 = mil.const dense<[1.0, 2.0]> : tensor<2xf32>
  %y = mil.conv %x, %w, bias %b0 : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %b = mil.const dense<0.5> : tensor<2x1x1xf32>
  %z = mil.add %b, %y : (tensor<2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %z : tensor<1x2x4x4xf32>
}

// Not folded: a const along another axis, and a conv with a second use.
// CHECK-LABEL: func.func @not_per_channel(
// CHECK:         mil.add
// CHECK:         mil.add
// CHECK:         func.return
func.func @not_per_channel(%x: tensor<1x3x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = mil.const dense<1.0> : tensor<2x3x1x1xf32>
  %y = mil.conv %x, %w : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %row = mil.const dense<0.5> : tensor<1x1x1x4xf32>
  %z = mil.add %y, %row : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %y2 = mil.conv %x, %w : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %c = mil.const dense<0.5> : tensor<1x2x1x1xf32>
  %z2 = mil.add %y2, %c : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = mil.mul %z2, %y2 : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %z, %r : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
