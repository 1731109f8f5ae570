// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// batch_norm and group_norm: optional gamma and beta are written with their
// names.

// CHECK-LABEL: func.func @batch_norm(
// GENERIC-LABEL: "func.func"() <{sym_name = "batch_norm"
func.func @batch_norm(%x: tensor<1x4x5x5xf32>, %c: tensor<4xf32>, %s: tensor<2x4x9xf16>, %h: tensor<4xf16>) {
  // CHECK-NEXT: %y = rlx.batch_norm %x, %c, %c, gamma %c, beta %c {epsilon = 1.000000e-03 : f32} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  // GENERIC: %y = "rlx.batch_norm"(%x, %c, %c, %c, %c) <{epsilon = 1.000000e-03 : f32, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %y = rlx.batch_norm %x, %c, %c, gamma %c, beta %c {epsilon = 1.0e-03 : f32} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  // CHECK-NEXT: %z = rlx.batch_norm %s, %h, %h, beta %h : (tensor<2x4x9xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4x9xf16>
  // GENERIC: %z = "rlx.batch_norm"(%s, %h, %h, %h) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (tensor<2x4x9xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4x9xf16>
  %z = rlx.batch_norm %s, %h, %h, beta %h : (tensor<2x4x9xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<2x4x9xf16>
  func.return
}

// CHECK-LABEL: func.func @group_norm(
// GENERIC-LABEL: "func.func"() <{sym_name = "group_norm"
func.func @group_norm(%x: tensor<1x6x4x4xf32>, %c: tensor<6xf32>) {
  // CHECK-NEXT: %y = rlx.group_norm %x, gamma %c, beta %c {groups = 3 : i64} : (tensor<1x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  // GENERIC: %y = "rlx.group_norm"(%x, %c, %c) <{groups = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<1x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  %y = rlx.group_norm %x, gamma %c, beta %c {groups = 3 : i64} : (tensor<1x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x4x4xf32>
  // CHECK-NEXT: %i = rlx.group_norm %x {groups = 6 : i64, epsilon = 1.000000e-06 : f32} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  %i = rlx.group_norm %x {groups = 6 : i64, epsilon = 1.0e-06 : f32} : (tensor<1x6x4x4xf32>) -> tensor<1x6x4x4xf32>
  func.return
}
