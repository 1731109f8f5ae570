// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of upsample_nearest_neighbor, upsample_bilinear, pad and the parametric activations.
// CHECK: Operation does not verify: mil.upsample_nearest_neighbor: operand 'x' must have rank >= 3, got shape [4, 6]
func.func @upsample_rank(%x: tensor<4x6xf32>) {
  %y = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64} : (tensor<4x6xf32>) -> tensor<8x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.upsample_bilinear: scale factors [0, 1] must be integers >= 1
func.func @upsample_scale(%x: tensor<1x4x6xf32>) {
  %y = mil.upsample_bilinear %x {scale_factor_height = 0 : i64} : (tensor<1x4x6xf32>) -> tensor<1x0x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.upsample_bilinear: properties 'align_corners' and 'half_pixel_centers' cannot both be true
func.func @upsample_grids(%x: tensor<1x4x6xf32>) {
  %y = mil.upsample_bilinear %x {align_corners = true, half_pixel_centers = true} : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.upsample_nearest_neighbor: result type [1, 4, 6] f32 does not match the inferred type [1, 4, 12] f32
func.func @upsample_result(%x: tensor<1x4x6xf32>) {
  %y = mil.upsample_nearest_neighbor %x {scale_factor_width = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.pad: property 'pad' [1, 1, 1] must have an even number of entries, at most 6 for operand 'x' [1, 4, 6]
func.func @pad_odd(%x: tensor<1x4x6xf32>) {
  %y = mil.pad %x {pad = array<i64: 1, 1, 1>} : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.pad: mode "reflect" pads (6, 0) on an axis of size 6; at most 5 per side
func.func @pad_reflect(%x: tensor<1x4x6xf32>) {
  %y = mil.pad %x {pad = array<i64: 6, 0>, mode = "reflect"} : (tensor<1x4x6xf32>) -> tensor<1x4x12xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.pad: operand 'x' has element type i32, expected one of f16, f32
func.func @pad_integer(%x: tensor<1x4x6xi32>) {
  %y = mil.pad %x {pad = array<i64: 1, 0>} : (tensor<1x4x6xi32>) -> tensor<1x4x7xi32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'beta' expected in operation 'mil.sigmoid_hard'
func.func @sigmoid_hard_beta(%x: tensor<2x8xf32>) {
  %y = mil.sigmoid_hard %x {alpha = 0.5 : f32} : tensor<2x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.leaky_relu: operand 'x' has element type i32, expected one of f16, f32
func.func @leaky_relu_integer(%x: tensor<2x8xi32>) {
  %y = mil.leaky_relu %x {alpha = 0.5 : f32} : tensor<2x8xi32>
  func.return
}
