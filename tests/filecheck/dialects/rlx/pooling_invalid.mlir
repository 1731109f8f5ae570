// RUN: xdsl-opt %s --verify-diagnostics --parsing-diagnostics --split-input-file | filecheck %s

// Verifier errors of max_pool and avg_pool.

// CHECK: Operation does not verify: rlx.max_pool: property 'kernel' [3] must have 2 entries (per axis) for operand 'input' [1, 2, 6, 6]
func.func @kernel_length(%x: tensor<1x2x6x6xf32>) {
  %y = rlx.max_pool %x {kernel = array<i64: 3>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.avg_pool: property 'padding' [2, 2, 0, 0] must lie in [0, kernel // 2] on each side (kernel [3, 3]), or a window could hold only padding
func.func @padding_too_large(%x: tensor<1x2x6x6xf32>) {
  %y = rlx.avg_pool %x {kernel = array<i64: 3, 3>, padding = array<i64: 2, 2, 0, 0>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x8x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.max_pool: kernel [9, 9] does not fit the padded operand 'input' [1, 2, 6, 6] (padding [0, 0, 0, 0])
func.func @kernel_too_large(%x: tensor<1x2x6x6xf32>) {
  %y = rlx.max_pool %x {kernel = array<i64: 9, 9>} : (tensor<1x2x6x6xf32>) -> tensor<1x2x1x1xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.max_pool: operand 'input' must be [N, C, W] or [N, C, H, W], got [2, 6]
func.func @rank(%x: tensor<2x6xf32>) {
  %y = rlx.max_pool %x {kernel = array<i64: 2>} : (tensor<2x6xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.max_pool: result type [1, 2, 3, 3] f32 does not match the inferred type [1, 2, 4, 4] f32
func.func @floor_not_ceil(%x: tensor<1x2x7x7xf32>) {
  %y = rlx.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x2x7x7xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

// CHECK: rlx.avg_pool: property 'count_include_pad' must be a bool (`true` or `false`), got 1 : i64
func.func @flag_kind(%x: tensor<1x2x6x6xf32>) {
  %y = rlx.avg_pool %x {kernel = array<i64: 2, 2>, count_include_pad = 1 : i64} : (tensor<1x2x6x6xf32>) -> tensor<1x2x5x5xf32>
  func.return
}
