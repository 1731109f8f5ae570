// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of upsample and pad.
// CHECK: Operation does not verify: rlx.upsample: operand 'input' must be [N, C, W] or [N, C, H, W], got shape [4, 6]
func.func @upsample_rank(%x: tensor<4x6xf32>) {
  %y = rlx.upsample %x {mode = "nearest", size = array<i64: 8>} : (tensor<4x6xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.upsample: property 'mode' is "area", expected one of "nearest", "bilinear", "bicubic"
func.func @upsample_mode(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.upsample %x {mode = "area", size = array<i64: 8, 12>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  func.return
}

// -----

// One size per spatial axis.
// CHECK: Operation does not verify: rlx.upsample: property 'size' [8] must be 2 positive sizes, one per spatial axis of operand 'input' [1, 3, 4, 6]
func.func @upsample_size(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.upsample %x {mode = "bilinear", size = array<i64: 8>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.upsample: property 'align_corners' applies to modes "bilinear" and "bicubic" only, not "nearest"
func.func @upsample_nearest_corners(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.upsample %x {mode = "nearest", size = array<i64: 8, 12>, align_corners = true} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x12xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.upsample: result type [1, 3, 8, 8] f32 does not match the inferred type [1, 3, 8, 12] f32
func.func @upsample_result(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.upsample %x {mode = "bicubic", size = array<i64: 8, 12>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.upsample: operand 'input' must have a float element type (f16 or f32), got i32
func.func @upsample_integer(%x: tensor<1x3x4x6xi32>) {
  %y = rlx.upsample %x {mode = "nearest", size = array<i64: 8, 12>} : (tensor<1x3x4x6xi32>) -> tensor<1x3x8x12xi32>
  func.return
}

// -----

// (before, after) for every axis.
// CHECK: Operation does not verify: rlx.pad: property 'pads' [1, 2, 3, 0] must have 8 entries (before, after per axis) for operand 'input' [1, 3, 4, 6]
func.func @pad_length(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.pad %x {pads = array<i64: 1, 2, 3, 0>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x7x9xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pad: property 'pads' [0, 0, 0, 0, 0, 0, -1, 0] must be >= 0
func.func @pad_negative(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, -1, 0>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x5xf32>
  func.return
}

// -----

// A reflection reads inside the axis.
// CHECK: Operation does not verify: rlx.pad: mode "reflect" pads axis 2 of size 4 by (4, 0); each side must be less than the size
func.func @pad_reflect_too_far(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 4, 0, 0, 0>, mode = "reflect"} : (tensor<1x3x4x6xf32>) -> tensor<1x3x8x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pad: property 'mode' is "edge", expected one of "constant", "reflect", "replicate"
func.func @pad_mode(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>, mode = "edge"} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pad: property 'value' applies to mode "constant" only, not "replicate"
func.func @pad_value_not_constant(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>, mode = "replicate", value = 1.0 : f32} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pad: result type [1, 3, 4, 6] f32 does not match the inferred type [1, 3, 4, 8] f32
func.func @pad_result(%x: tensor<1x3x4x6xf32>) {
  %y = rlx.pad %x {pads = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x6xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pixel_shuffle: operand 'input' [1, 6, 3, 5] has 6 channels, not a multiple of upscale_factor² = 4
func.func @pixel_shuffle_channels(%x: tensor<1x6x3x5xf32>) {
  %y = rlx.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x6x3x5xf32>) -> tensor<1x1x6x10xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pixel_unshuffle: operand 'input' [1, 2, 4, 5]: H and W must be multiples of downscale_factor 2
func.func @pixel_unshuffle_width(%x: tensor<1x2x4x5xf32>) {
  %y = rlx.pixel_unshuffle %x {downscale_factor = 2 : i64} : (tensor<1x2x4x5xf32>) -> tensor<1x8x2x2xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.pixel_shuffle: result type [1, 8, 3, 5] f32 does not match the inferred type [1, 2, 6, 10] f32
func.func @pixel_shuffle_result(%x: tensor<1x8x3x5xf32>) {
  %y = rlx.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32>
  func.return
}
