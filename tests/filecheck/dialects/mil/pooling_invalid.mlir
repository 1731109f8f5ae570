// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// MIL's rules for pooling (coremltools 9.0 iOS15 pool.py).

// CHECK: Operation does not verify: mil.max_pool: property 'ceil_mode' needs symmetric padding, got pad [1, 2, 1, 1]
func.func @ceil_asymmetric(%x: tensor<1x2x7x7xf32>) {
  %y = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 2, 1, 1>, ceil_mode = true} : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.avg_pool: property 'ceil_mode' must be false with pad_type "same"
func.func @ceil_same(%x: tensor<1x2x7x7xf32>) {
  %y = mil.avg_pool %x {kernel_sizes = array<i64: 3, 3>, pad_type = "same", ceil_mode = true} : (tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.max_pool: property 'ceil_mode' takes 1 or 2 spatial axes only
func.func @ceil_3d(%x: tensor<1x2x4x4x4xf32>) {
  %y = mil.max_pool %x {kernel_sizes = array<i64: 2, 2, 2>, pad_type = "valid", ceil_mode = true} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x3x3x3xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.max_pool: property 'pad' [1, 1, 1, 1] requires pad_type "custom"
func.func @pad_without_custom(%x: tensor<1x2x7x7xf32>) {
  %y = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, pad_type = "valid", pad = array<i64: 1, 1, 1, 1>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x7x7xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: mil.avg_pool: operand 'x' has element type i32, expected one of f16, f32
func.func @integer(%x: tensor<1x2x7x7xi32>) {
  %y = mil.avg_pool %x {kernel_sizes = array<i64: 3, 3>, pad_type = "valid"} : (tensor<1x2x7x7xi32>) -> tensor<1x2x5x5xi32>
  func.return
}

// -----

// pad_type is required, as in MIL (coremltools has no default for it).
// CHECK: Operation does not verify: property 'pad_type' expected in operation 'mil.max_pool'
func.func @no_pad_type(%x: tensor<1x2x7x7xf32>) {
  %y = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x5x5xf32>
  func.return
}
