// RUN: xdsl-opt %s -p mil-ane-layout,canonicalize | filecheck %s

// mil-ane-layout's concat rule (passes/ane_layout.py): a concat of [C],
// [S, C] or [1, S, C] values runs on their ANE forms [1, C, 1, S], along
// axis 3 for the sequence and 1 for the channels.

// A ViT's embedding: the patches (an image flattened into a sequence) and
// the class token before them are joined in ANE form along the sequence
// axis 3; the position table's add and the layer_norm then run there too,
// and the token and the table become views of their weights.
// CHECK-LABEL: func.func @class_token(
// CHECK-NEXT:    %w = mil.const weight "patch" : tensor<6x3x4x4xf32>
// CHECK-NEXT:    %0 = mil.conv %x, %w {strides = array<i64: 4, 4>} : (tensor<1x3x8x8xf32>, tensor<6x3x4x4xf32>) -> tensor<1x6x2x2xf32>
// CHECK-NEXT:    %1 = mil.reshape %0 {shape = array<i64: 1, 6, 1, 4>} : (tensor<1x6x2x2xf32>) -> tensor<1x6x1x4xf32>
// CHECK-NEXT:    %2 = mil.const weight "cls" {weight_shape = array<i64: 1, 1, 6>} : tensor<1x6x1x1xf32>
// CHECK-NEXT:    %3 = mil.concat %2, %1 {axis = 3 : i64} : (tensor<1x6x1x1xf32>, tensor<1x6x1x4xf32>) -> tensor<1x6x1x5xf32>
// CHECK-NEXT:    %4 = mil.const weight "pos" {weight_shape = array<i64: 1, 5, 6>, perm = array<i64: 0, 2, 1>} : tensor<1x6x1x5xf32>
// CHECK-NEXT:    %5 = mil.add %3, %4 : (tensor<1x6x1x5xf32>, tensor<1x6x1x5xf32>) -> tensor<1x6x1x5xf32>
// CHECK-NEXT:    %g = mil.const weight "g" : tensor<6xf32>
// CHECK-NEXT:    %b = mil.const weight "b" : tensor<6xf32>
// CHECK-NEXT:    %6 = mil.layer_norm %5, gamma %g, beta %b {axes = array<i64: 1>} : (tensor<1x6x1x5xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x6x1x5xf32>
// CHECK-NEXT:    func.return %6 : tensor<1x6x1x5xf32>
func.func @class_token(%x: tensor<1x3x8x8xf32>) -> tensor<1x5x6xf32> {
  %w = mil.const weight "patch" : tensor<6x3x4x4xf32>
  %p = mil.conv %x, %w {strides = array<i64: 4, 4>} : (tensor<1x3x8x8xf32>, tensor<6x3x4x4xf32>) -> tensor<1x6x2x2xf32>
  %f = mil.reshape %p {shape = array<i64: 1, 6, 4>} : (tensor<1x6x2x2xf32>) -> tensor<1x6x4xf32>
  %s = mil.transpose %f {perm = array<i64: 0, 2, 1>} : (tensor<1x6x4xf32>) -> tensor<1x4x6xf32>
  %cls = mil.const weight "cls" : tensor<1x1x6xf32>
  %c = mil.concat %cls, %s {axis = 1 : i64} : (tensor<1x1x6xf32>, tensor<1x4x6xf32>) -> tensor<1x5x6xf32>
  %pos = mil.const weight "pos" : tensor<1x5x6xf32>
  %e = mil.add %c, %pos : (tensor<1x5x6xf32>, tensor<1x5x6xf32>) -> tensor<1x5x6xf32>
  %g = mil.const weight "g" : tensor<6xf32>
  %b = mil.const weight "b" : tensor<6xf32>
  %n = mil.layer_norm %e, gamma %g, beta %b {axes = array<i64: -1>} : (tensor<1x5x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<1x5x6xf32>
  func.return %n : tensor<1x5x6xf32>
}

// Along the channels of [S, C] values: axis 1 of the ANE form.
// CHECK-LABEL: func.func @channels(
// CHECK-NEXT:    %0 = mil.relu %a : tensor<1x3x1x4xf32>
// CHECK-NEXT:    %1 = mil.concat %0, %b {axis = 1 : i64} : (tensor<1x3x1x4xf32>, tensor<1x5x1x4xf32>) -> tensor<1x8x1x4xf32>
// CHECK-NEXT:    func.return %1 : tensor<1x8x1x4xf32>
func.func @channels(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x8xf32> {
  %r = mil.relu %a : tensor<4x3xf32>
  %c = mil.concat %r, %b {axis = -1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// Negative: an interleaving concat runs on logical values.
// CHECK-LABEL: func.func @interleave(
// CHECK-NEXT:    %0 = mil.reshape %b {shape = array<i64: 1, 3, 4>} : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT:    %1 = mil.transpose %0 {perm = array<i64: 0, 2, 1>} : (tensor<1x3x4xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT:    %2 = mil.reshape %a {shape = array<i64: 1, 3, 4>} : (tensor<1x3x1x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT:    %3 = mil.transpose %2 {perm = array<i64: 0, 2, 1>} : (tensor<1x3x4xf32>) -> tensor<1x4x3xf32>
// CHECK-NEXT:    %c = mil.concat %3, %1 {axis = 1 : i64, interleave = true} : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x8x3xf32>
// CHECK-NEXT:    %4 = mil.transpose %c {perm = array<i64: 0, 2, 1>} : (tensor<1x8x3xf32>) -> tensor<1x3x8xf32>
// CHECK-NEXT:    %5 = mil.reshape %4 {shape = array<i64: 1, 3, 1, 8>} : (tensor<1x3x8xf32>) -> tensor<1x3x1x8xf32>
// CHECK-NEXT:    func.return %5 : tensor<1x3x1x8xf32>
func.func @interleave(%a: tensor<1x4x3xf32>, %b: tensor<1x4x3xf32>) -> tensor<1x8x3xf32> {
  %c = mil.concat %a, %b {axis = 1 : i64, interleave = true} : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x8x3xf32>
  func.return %c : tensor<1x8x3xf32>
}
