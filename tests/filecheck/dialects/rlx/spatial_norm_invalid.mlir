// RUN: xdsl-opt %s --verify-diagnostics --parsing-diagnostics --split-input-file | filecheck %s

// Verifier errors of batch_norm and group_norm.

// CHECK: Operation does not verify: rlx.batch_norm: operand 'var' [3] must be [4] (C of operand 'input' [1, 4, 5, 5])
func.func @var_shape(%x: tensor<1x4x5x5xf32>, %m: tensor<4xf32>, %v: tensor<3xf32>) {
  %y = rlx.batch_norm %x, %m, %v : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x4x5x5xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.batch_norm: operands 'input' (f16) and 'gamma' (f32) must have the same element type
func.func @gamma_element(%x: tensor<1x4x5xf16>, %m: tensor<4xf16>, %g: tensor<4xf32>) {
  %y = rlx.batch_norm %x, %m, %m, gamma %g : (tensor<1x4x5xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf32>) -> tensor<1x4x5xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.group_norm: property 'groups' 4 must be >= 1 and divide C = 6 of operand 'input' [1, 6, 4, 4]
func.func @groups(%x: tensor<1x6x4x4xf32>) {
  %y = rlx.group_norm %x {groups = 4 : i64} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.group_norm: operand 'input' must be [N, C, W] or [N, C, H, W], got [6, 4]
func.func @rank(%x: tensor<6x4xf32>) {
  %y = rlx.group_norm %x {groups = 2 : i64} : (tensor<6x4xf32>) -> tensor<6x4xf32>
  func.return
}

// -----

// CHECK: rlx.group_norm: unexpected operand 'bias'; operands are input, gamma, beta in this order, optional ones written `name %value`
func.func @tag(%x: tensor<1x6x4x4xf32>, %c: tensor<6xf32>) {
  %y = rlx.group_norm %x, bias %c {groups = 2 : i64} : (tensor<1x6x4x4xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  func.return
}
