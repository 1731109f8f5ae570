// RUN: xdsl-opt %s -p mil-ane-layout,canonicalize | filecheck %s

// mil-ane-layout on images and 1-D signals (passes/ane_layout.py,
// "images and 1-D signals"): the values around convolutions keep their
// spatial axes.

// An image [1, C, H, W] is already ANE form: the conv, a per-channel scale
// (its [C, 1, 1] operand padded to [1, C, 1, 1]) and a channel concat with
// a skip input run unchanged; no layout op.
// CHECK-LABEL: func.func @image(%x: tensor<1x3x8x8xf32>, %skip: tensor<1x6x4x4xf32>) -> tensor<1x12x4x4xf32>
// CHECK-SAME: ane.arg_layouts = [#ane.layout<nchw, logical = [1, 3, 8, 8]
// CHECK-SAME: ane.result_layouts = [#ane.layout<nchw, logical = [1, 12, 4, 4]
// CHECK-NEXT: %w = mil.const weight "w" : tensor<6x3x3x3xf32>
// CHECK-NEXT: %b = mil.const weight "b" : tensor<6xf32>
// CHECK-NEXT: %0 = mil.conv %x, %w, bias %b {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %1 = mil.const dense<2.000000e+00> : tensor<1x6x1x1xf32>
// CHECK-NEXT: %2 = mil.mul %0, %1 : (tensor<1x6x4x4xf32>, tensor<1x6x1x1xf32>) -> tensor<1x6x4x4xf32>
// CHECK-NEXT: %c = mil.concat %2, %skip {axis = 1 : i64} : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x12x4x4xf32>
// CHECK-NEXT: func.return %c : tensor<1x12x4x4xf32>
func.func @image(%x: tensor<1x3x8x8xf32>, %skip: tensor<1x6x4x4xf32>) -> tensor<1x12x4x4xf32> {
  %w = mil.const weight "w" : tensor<6x3x3x3xf32>
  %b = mil.const weight "b" : tensor<6xf32>
  %y = mil.conv %x, %w, bias %b {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>} : (tensor<1x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %scale = mil.const dense<2.0> : tensor<6x1x1xf32>
  %r = mil.mul %y, %scale : (tensor<1x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<1x6x4x4xf32>
  %c = mil.concat %r, %skip {axis = 1 : i64} : (tensor<1x6x4x4xf32>, tensor<1x6x4x4xf32>) -> tensor<1x12x4x4xf32>
  func.return %c : tensor<1x12x4x4xf32>
}

// A 1-D signal [1, C, W] is [1, C, 1, W]: the conv becomes a 2-D one with a
// kernel [Cout, Cin, 1, K] (a view of the weights-file tensor) and the
// height's stride 1 and padding 0; the per-channel add on the twin then
// folds into the conv's bias.
// CHECK-LABEL: func.func @signal(%s: tensor<1x4x1x16xf32>) -> tensor<1x5x1x8xf32>
// CHECK-SAME: ane.arg_layouts = [#ane.layout<ncw, logical = [1, 4, 16]
// CHECK-SAME: ane.result_layouts = [#ane.layout<ncw, logical = [1, 5, 8]
// CHECK-NEXT: %0 = mil.const weight "w1" {weight_shape = array<i64: 5, 4, 3>} : tensor<5x4x1x3xf32>
// CHECK-NEXT: %1 = mil.const dense<5.000000e-01> : tensor<5xf32>
// CHECK-NEXT: %2 = mil.conv %s, %0, bias %1 {strides = array<i64: 1, 2>, pad_type = "custom", pad = array<i64: 0, 0, 1, 0>} : (tensor<1x4x1x16xf32>, tensor<5x4x1x3xf32>, tensor<5xf32>) -> tensor<1x5x1x8xf32>
// CHECK-NEXT: func.return %2 : tensor<1x5x1x8xf32>
func.func @signal(%s: tensor<1x4x16xf32>) -> tensor<1x5x8xf32> {
  %w = mil.const weight "w1" : tensor<5x4x3xf32>
  %z = mil.conv %s, %w {strides = array<i64: 2>, pad_type = "custom", pad = array<i64: 1, 0>} : (tensor<1x4x16xf32>, tensor<5x4x3xf32>) -> tensor<1x5x8xf32>
  %bias = mil.const dense<0.5> : tensor<5x1xf32>
  %t = mil.add %z, %bias : (tensor<1x5x8xf32>, tensor<5x1xf32>) -> tensor<1x5x8xf32>
  func.return %t : tensor<1x5x8xf32>
}

// conv_transpose of a signal likewise; an inline kernel is reshaped.
// CHECK-LABEL: func.func @signal_up(%s: tensor<1x4x1x5xf32>) -> tensor<1x6x1x10xf32>
// CHECK-SAME: ane.arg_layouts = [#ane.layout<ncw, logical = [1, 4, 5]
// CHECK-SAME: ane.result_layouts = [#ane.layout<ncw, logical = [1, 6, 10]
// CHECK-NEXT: %0 = mil.const dense<2.500000e-01> : tensor<4x3x1x2xf32>
// CHECK-NEXT: %1 = mil.conv_transpose %s, %0 {strides = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x1x5xf32>, tensor<4x3x1x2xf32>) -> tensor<1x6x1x10xf32>
// CHECK-NEXT: func.return %1 : tensor<1x6x1x10xf32>
func.func @signal_up(%s: tensor<1x4x5xf32>) -> tensor<1x6x10xf32> {
  %w = mil.const dense<0.25> : tensor<4x3x2xf32>
  %z = mil.conv_transpose %s, %w {strides = array<i64: 2>, groups = 2 : i64} : (tensor<1x4x5xf32>, tensor<4x3x2xf32>) -> tensor<1x6x10xf32>
  func.return %z : tensor<1x6x10xf32>
}

// A signal turned into a sequence [1, W, C] (Whisper's encoder after its
// convs) has the same ANE form [1, C, 1, W]: the transpose costs nothing.
// CHECK-LABEL: func.func @signal_to_sequence(%s: tensor<1x4x1x16xf32>) -> tensor<1x5x1x16xf32>
// CHECK-SAME: ane.arg_layouts = [#ane.layout<ncw, logical = [1, 4, 16]
// CHECK-SAME: ane.result_layouts = [#ane.layout<bsc, logical = [1, 16, 5]
// CHECK-NEXT: %0 = mil.const weight "w1" {weight_shape = array<i64: 5, 4, 3>} : tensor<5x4x1x3xf32>
// CHECK-NEXT: %1 = mil.conv %s, %0 {pad_type = "same"} : (tensor<1x4x1x16xf32>, tensor<5x4x1x3xf32>) -> tensor<1x5x1x16xf32>
// CHECK-NEXT: %2 = mil.gelu %1 : tensor<1x5x1x16xf32>
// CHECK-NEXT: func.return %2 : tensor<1x5x1x16xf32>
func.func @signal_to_sequence(%s: tensor<1x4x16xf32>) -> tensor<1x16x5xf32> {
  %w = mil.const weight "w1" : tensor<5x4x3xf32>
  %z = mil.conv %s, %w {pad_type = "same"} : (tensor<1x4x16xf32>, tensor<5x4x3xf32>) -> tensor<1x5x16xf32>
  %g = mil.gelu %z : tensor<1x5x16xf32>
  %t = mil.transpose %g {perm = array<i64: 0, 2, 1>} : (tensor<1x5x16xf32>) -> tensor<1x16x5xf32>
  func.return %t : tensor<1x16x5xf32>
}

// A ViT's patches: the image [1, C, H, W] flattened and transposed into a
// sequence [1, H*W, C] holds its elements in the sequence's ANE order
// [1, C, 1, H*W]: one reshape, and the layer norm runs over the channels.
// CHECK-LABEL: func.func @patches(%x: tensor<1x3x16x16xf32>) -> tensor<1x32x1x16xf32>
// CHECK-SAME: ane.arg_layouts = [#ane.layout<nchw, logical = [1, 3, 16, 16]
// CHECK-SAME: ane.result_layouts = [#ane.layout<bsc, logical = [1, 16, 32]
// CHECK-NEXT: %w = mil.const weight "w" : tensor<32x3x4x4xf32>
// CHECK-NEXT: %0 = mil.conv %x, %w {strides = array<i64: 4, 4>} : (tensor<1x3x16x16xf32>, tensor<32x3x4x4xf32>) -> tensor<1x32x4x4xf32>
// CHECK-NEXT: %1 = mil.reshape %0 {shape = array<i64: 1, 32, 1, 16>} : (tensor<1x32x4x4xf32>) -> tensor<1x32x1x16xf32>
// CHECK-NEXT: %2 = mil.layer_norm %1 {axes = array<i64: 1>, epsilon = 1.000000e-05 : f32} : (tensor<1x32x1x16xf32>) -> tensor<1x32x1x16xf32>
// CHECK-NEXT: func.return %2 : tensor<1x32x1x16xf32>
func.func @patches(%x: tensor<1x3x16x16xf32>) -> tensor<1x16x32xf32> {
  %w = mil.const weight "w" : tensor<32x3x4x4xf32>
  %y = mil.conv %x, %w {strides = array<i64: 4, 4>} : (tensor<1x3x16x16xf32>, tensor<32x3x4x4xf32>) -> tensor<1x32x4x4xf32>
  %flat = mil.reshape %y {shape = array<i64: 1, 32, 16>} : (tensor<1x32x4x4xf32>) -> tensor<1x32x16xf32>
  %seq = mil.transpose %flat {perm = array<i64: 0, 2, 1>} : (tensor<1x32x16xf32>) -> tensor<1x16x32xf32>
  %n = mil.layer_norm %seq {axes = array<i64: -1>, epsilon = 1.000000e-05 : f32} : (tensor<1x16x32xf32>) -> tensor<1x16x32xf32>
  func.return %n : tensor<1x16x32xf32>
}

// A signal's pad before its conv runs on the [1, C, 1, W] twin (MIL pads
// the last len(pad)/2 axes).
// CHECK-LABEL: func.func @signal_pad(%s: tensor<1x4x1x8xf32>) -> tensor<1x5x1x8xf32>
// CHECK-NEXT: %0 = mil.pad %s {pad = array<i64: 1, 1>, mode = "reflect"} : (tensor<1x4x1x8xf32>) -> tensor<1x4x1x10xf32>
// CHECK-NEXT: %1 = mil.const dense<1.000000e+00> : tensor<5x4x1x3xf32>
// CHECK-NEXT: %2 = mil.conv %0, %1 : (tensor<1x4x1x10xf32>, tensor<5x4x1x3xf32>) -> tensor<1x5x1x8xf32>
// CHECK-NEXT: func.return %2 : tensor<1x5x1x8xf32>
func.func @signal_pad(%s: tensor<1x4x8xf32>) -> tensor<1x5x8xf32> {
  %p = mil.pad %s {pad = array<i64: 0, 0, 1, 1>, mode = "reflect"} : (tensor<1x4x8xf32>) -> tensor<1x4x10xf32>
  %w = mil.const dense<1.0> : tensor<5x4x3xf32>
  %z = mil.conv %p, %w : (tensor<1x4x10xf32>, tensor<5x4x3xf32>) -> tensor<1x5x8xf32>
  func.return %z : tensor<1x5x8xf32>
}
