// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s
// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s --check-prefix=NO-F32
// RUN: xdsl-opt %s -p mil-fp16,mil-fp16 | filecheck %s

// mil-fp16, types (passes/fp16.py): every f32 tensor becomes f16 — function
// arguments and results, block arguments, and the results of every mil op,
// which is rebuilt with result types inferred from its converted operands.
// int32, int8 and bool values stay as they are. Running the pass twice gives
// the same output.

// NO-F32-NOT: f32>

// Arguments, results and elementwise ops; an i32 argument and a bool result
// keep their types.
// CHECK-LABEL: func.func @signature(%x: tensor<2x3xf16>, %i: tensor<2xi32>) -> (tensor<2x3xf16>, tensor<2x3xi1>, tensor<2xi32>) {
// CHECK-NEXT:  %a = mil.add %x, %x : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  %e = mil.exp %a : tensor<2x3xf16>
// CHECK-NEXT:  %g = mil.greater %e, %x : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
// CHECK-NEXT:  %s = mil.select %g, %e, %x : (tensor<2x3xi1>, tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  %j = mil.add %i, %i : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK-NEXT:  func.return %s, %g, %j : tensor<2x3xf16>, tensor<2x3xi1>, tensor<2xi32>
func.func @signature(%x: tensor<2x3xf32>, %i: tensor<2xi32>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xi32>) {
  %a = mil.add %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = mil.exp %a : tensor<2x3xf32>
  %g = mil.greater %e, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %s = mil.select %g, %e, %x : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %j = mil.add %i, %i : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %s, %g, %j : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2xi32>
}

// Ops with several results, reductions, shape ops and matmul.
// CHECK-LABEL: func.func @shapes_and_reductions(%x: tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<4x4xf16>) {
// CHECK-NEXT:  %p, %p_1, %p_2 = mil.split %x {axis = 3 : i64, num_splits = 3 : i64} : (tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>)
// CHECK-NEXT:  %r = mil.reshape %x {shape = array<i64: 4, 6>} : (tensor<1x4x1x6xf16>) -> tensor<4x6xf16>
// CHECK-NEXT:  %m = mil.matmul %r, %r {transpose_y = true} : (tensor<4x6xf16>, tensor<4x6xf16>) -> tensor<4x4xf16>
// CHECK-NEXT:  %n = mil.reduce_max %p_1 {axes = array<i64: 3>, keep_dims = true} : (tensor<1x4x1x2xf16>) -> tensor<1x4x1x1xf16>
// CHECK-NEXT:  %d = mil.sub %p_2, %n : (tensor<1x4x1x2xf16>, tensor<1x4x1x1xf16>) -> tensor<1x4x1x2xf16>
// CHECK-NEXT:  %t = mil.softmax %d {axis = 1 : i64} : tensor<1x4x1x2xf16>
// CHECK-NEXT:  func.return %t, %m : tensor<1x4x1x2xf16>, tensor<4x4xf16>
func.func @shapes_and_reductions(%x: tensor<1x4x1x6xf32>) -> (tensor<1x4x1x2xf32>, tensor<4x4xf32>) {
  %p:3 = mil.split %x {axis = 3 : i64, num_splits = 3 : i64} : (tensor<1x4x1x6xf32>) -> (tensor<1x4x1x2xf32>, tensor<1x4x1x2xf32>, tensor<1x4x1x2xf32>)
  %r = mil.reshape %x {shape = array<i64: 4, 6>} : (tensor<1x4x1x6xf32>) -> tensor<4x6xf32>
  %m = mil.matmul %r, %r {transpose_y = true} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x4xf32>
  %n = mil.reduce_max %p#1 {axes = array<i64: 3>, keep_dims = true} : (tensor<1x4x1x2xf32>) -> tensor<1x4x1x1xf32>
  %d = mil.sub %p#2, %n : (tensor<1x4x1x2xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x2xf32>
  %t = mil.softmax %d {axis = 1 : i64} : tensor<1x4x1x2xf32>
  func.return %t, %m : tensor<1x4x1x2xf32>, tensor<4x4xf32>
}

// A 1x1 conv against a weight const viewed through weight_shape and perm
// (as mil-ane-layout writes it): only the declared element type changes.
// CHECK-LABEL: func.func @conv_weights(%x: tensor<1x8x1x4xf16>) -> tensor<1x16x1x4xf16> {
// CHECK-NEXT:  %w = mil.const weight "proj.weight" {weight_shape = array<i64: 8, 16>, perm = array<i64: 1, 0>} : tensor<16x8x1x1xf16>
// CHECK-NEXT:  %b = mil.const weight "proj.bias" : tensor<16xf16>
// CHECK-NEXT:  %y = mil.conv %x, %w, bias %b : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>, tensor<16xf16>) -> tensor<1x16x1x4xf16>
// CHECK-NEXT:  func.return %y : tensor<1x16x1x4xf16>
func.func @conv_weights(%x: tensor<1x8x1x4xf32>) -> tensor<1x16x1x4xf32> {
  %w = mil.const weight "proj.weight" {weight_shape = array<i64: 8, 16>, perm = array<i64: 1, 0>} : tensor<16x8x1x1xf32>
  %b = mil.const weight "proj.bias" : tensor<16xf32>
  %y = mil.conv %x, %w, bias %b : (tensor<1x8x1x4xf32>, tensor<16x8x1x1xf32>, tensor<16xf32>) -> tensor<1x16x1x4xf32>
  func.return %y : tensor<1x16x1x4xf32>
}

// cumsum keeps its input's type: f32 becomes f16, i32 (position ids) stays.
// CHECK-LABEL: func.func @cumsum(%x: tensor<2x8xf16>, %i: tensor<1x8xi32>) -> (tensor<2x8xf16>, tensor<1x8xi32>) {
// CHECK-NEXT:  %y = mil.cumsum %x {axis = 1 : i64, exclusive = true} : tensor<2x8xf16>
// CHECK-NEXT:  %p = mil.cumsum %i {axis = 1 : i64} : tensor<1x8xi32>
// CHECK-NEXT:  func.return %y, %p : tensor<2x8xf16>, tensor<1x8xi32>
func.func @cumsum(%x: tensor<2x8xf32>, %i: tensor<1x8xi32>) -> (tensor<2x8xf32>, tensor<1x8xi32>) {
  %y = mil.cumsum %x {axis = 1 : i64, exclusive = true} : tensor<2x8xf32>
  %p = mil.cumsum %i {axis = 1 : i64} : tensor<1x8xi32>
  func.return %y, %p : tensor<2x8xf32>, tensor<1x8xi32>
}

// An f16 program is left unchanged.
// CHECK-LABEL: func.func @already_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
// CHECK-NEXT:  %y = mil.sqrt %x : tensor<4xf16>
// CHECK-NEXT:  func.return %y : tensor<4xf16>
func.func @already_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %y = mil.sqrt %x : tensor<4xf16>
  func.return %y : tensor<4xf16>
}
