// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, convolution family (passes/rlx_to_mil/convolution.py):
// conv and conv_transpose.

// NO-RLX-NOT: rlx.

// out = conv(x, weight, bias) with MIL's custom pad: rlx's padding is (before,
// after) per spatial axis, as MIL's pad; defaults (dilations 1) are left out.
// CHECK-LABEL: func.func @conv2d(
// CHECK-NEXT:  %y = mil.conv %x, %w, bias %b {strides = array<i64: 2, 1>, pad_type = "custom", pad = array<i64: 1, 0, 2, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x10xf32>
// CHECK-NEXT:  func.return %y : tensor<1x6x4x10xf32>
func.func @conv2d(%x: tensor<1x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x4x10xf32> {
  %y = rlx.conv %x, %w bias %b {strides = array<i64: 2, 1>, padding = array<i64: 1, 0, 2, 1>, groups = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x10xf32>
  func.return %y : tensor<1x6x4x10xf32>
}

// A dilated 1-D conv of a weight from the weights file (MIL wants a dilated
// kernel constant).
// CHECK-LABEL: func.func @conv1d_dilated(
// CHECK-NEXT:  %w = mil.const weight "w" : tensor<5x3x3xf16>
// CHECK-NEXT:  %y = mil.conv %x, %w {dilations = array<i64: 2>} : (tensor<1x3x16xf16>, tensor<5x3x3xf16>) -> tensor<1x5x12xf16>
// CHECK-NEXT:  func.return %y : tensor<1x5x12xf16>
func.func @conv1d_dilated(%x: tensor<1x3x16xf16>) -> tensor<1x5x12xf16> {
  %w = rlx.param "w" : tensor<5x3x3xf16>
  %y = rlx.conv %x, %w {dilations = array<i64: 2>} : (tensor<1x3x16xf16>, tensor<5x3x3xf16>) -> tensor<1x5x12xf16>
  func.return %y : tensor<1x5x12xf16>
}

// output_padding within the after-padding: the crop after shrinks by it.
// CHECK-LABEL: func.func @conv_transpose2d(
// CHECK-NEXT:  %y = mil.conv_transpose %x, %w, bias %b {pad = array<i64: 1, 0, 1, 0>, pad_type = "custom", strides = array<i64: 2, 2>, groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x10x10xf32>
// CHECK-NEXT:  func.return %y : tensor<1x6x10x10xf32>
func.func @conv_transpose2d(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x10x10xf32> {
  %y = rlx.conv_transpose %x, %w bias %b {strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x10x10xf32>
  func.return %y : tensor<1x6x10x10xf32>
}

// output_padding past the after-padding: zeros concatenated after the full
// result, the bias added after them.
// CHECK-LABEL: func.func @conv_transpose_past_the_crop(
// CHECK-NEXT:  %0 = mil.conv_transpose %x, %w {strides = array<i64: 2>} : (tensor<1x2x3xf32>, tensor<2x4x2xf32>) -> tensor<1x4x6xf32>
// CHECK-NEXT:  %1 = mil.const dense<0.000000e+00> : tensor<1x4x1xf32>
// CHECK-NEXT:  %2 = mil.concat %0, %1 {axis = 2 : i64} : (tensor<1x4x6xf32>, tensor<1x4x1xf32>) -> tensor<1x4x7xf32>
// CHECK-NEXT:  %3 = mil.reshape %b {shape = array<i64: 4, 1>} : (tensor<4xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:  %y = mil.add %2, %3 : (tensor<1x4x7xf32>, tensor<4x1xf32>) -> tensor<1x4x7xf32>
// CHECK-NEXT:  func.return %y : tensor<1x4x7xf32>
func.func @conv_transpose_past_the_crop(%x: tensor<1x2x3xf32>, %w: tensor<2x4x2xf32>, %b: tensor<4xf32>) -> tensor<1x4x7xf32> {
  %y = rlx.conv_transpose %x, %w bias %b {strides = array<i64: 2>, output_padding = array<i64: 1>} : (tensor<1x2x3xf32>, tensor<2x4x2xf32>, tensor<4xf32>) -> tensor<1x4x7xf32>
  func.return %y : tensor<1x4x7xf32>
}
