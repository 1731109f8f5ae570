// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s

// mil-fp16, masks (passes/fp16.py): an inline const that reaches a mil.add,
// or a mil.select branch, through shape-only ops is an additive mask. Its
// entries <= -65504/2 stand for -inf (-1e9, float32's minimum, -65504) and
// become -1e4, the attention lowering's mask value: two masks plus a score
// stay finite in fp16 and exp(-1e4 - max) is still 0. Other consts only
// saturate at +-65504 (see consts.mlir).

// -1e9 and float32's minimum in an additive mask; 0 and -1e4 stay.
// CHECK-LABEL: func.func @additive(%s: tensor<2x4xf16>) -> tensor<2x4xf16> {
// CHECK-NEXT:  %m = mil.const dense<[0.000000e+00, -1.000000e+04, -1.000000e+04, -1.000000e+04]> : tensor<4xf16>
// CHECK-NEXT:  %y = mil.add %s, %m : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
func.func @additive(%s: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %m = mil.const dense<[0.0, -1.0e4, -1.0e9, -3.40282347e+38]> : tensor<4xf32>
  %y = mil.add %s, %m : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// The mask is the first operand of the add and reaches it through reshape and
// expand_dims; -2e4 (above -65504/2) is kept.
// CHECK-LABEL: func.func @through_shape_ops(%s: tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16> {
// CHECK-NEXT:  %m = mil.const dense<[0.000000e+00, -1.000000e+04, -2.000000e+04, 0.000000e+00]> : tensor<4xf16>
// CHECK-NEXT:  %r = mil.reshape %m {shape = array<i64: 2, 2>} : (tensor<4xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:  %e = mil.expand_dims %r {axes = array<i64: 0, 1>} : (tensor<2x2xf16>) -> tensor<1x1x2x2xf16>
// CHECK-NEXT:  %y = mil.add %e, %s : (tensor<1x1x2x2xf16>, tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16>
func.func @through_shape_ops(%s: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %m = mil.const dense<[0.0, -1.0e30, -2.0e4, 0.0]> : tensor<4xf32>
  %r = mil.reshape %m {shape = array<i64: 2, 2>} : (tensor<4xf32>) -> tensor<2x2xf32>
  %e = mil.expand_dims %r {axes = array<i64: 0, 1>} : (tensor<2x2xf32>) -> tensor<1x1x2x2xf32>
  %y = mil.add %e, %s : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}

// A fill value selected where a condition masks scores out.
// CHECK-LABEL: func.func @select_fill(%c: tensor<2x4xi1>, %s: tensor<2x4xf16>) -> tensor<2x4xf16> {
// CHECK-NEXT:  %fill = mil.const dense<-1.000000e+04> : tensor<f16>
// CHECK-NEXT:  %y = mil.select %c, %s, %fill : (tensor<2x4xi1>, tensor<2x4xf16>, tensor<f16>) -> tensor<2x4xf16>
func.func @select_fill(%c: tensor<2x4xi1>, %s: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %fill = mil.const dense<-1.0e9> : tensor<f32>
  %y = mil.select %c, %s, %fill : (tensor<2x4xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// An fp16 mask at -65504 (two of which would add to -inf) becomes -1e4 too.
// CHECK-LABEL: func.func @f16_mask(%s: tensor<2xf16>) -> tensor<2xf16> {
// CHECK-NEXT:  %m = mil.const dense<[0.000000e+00, -1.000000e+04]> : tensor<2xf16>
func.func @f16_mask(%s: tensor<2xf16>) -> tensor<2xf16> {
  %m = mil.const dense<[0.0, -65504.0]> : tensor<2xf16>
  %y = mil.add %s, %m : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  func.return %y : tensor<2xf16>
}

// Not a mask: a multiplier only saturates.
// CHECK-LABEL: func.func @not_a_mask(%s: tensor<2xf16>) -> tensor<2xf16> {
// CHECK-NEXT:  %m = mil.const dense<[1.000000e+00, -6.550400e+04]> : tensor<2xf16>
func.func @not_a_mask(%s: tensor<2xf32>) -> tensor<2xf32> {
  %m = mil.const dense<[1.0, -1.0e9]> : tensor<2xf32>
  %y = mil.mul %s, %m : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
