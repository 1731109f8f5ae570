// RUN: xdsl-opt %s -p canonicalize | xdsl-opt | filecheck %s

// FoldConstantOp (passes/canonicalization.py): an op whose operands are all
// inline `mil.const val` is evaluated by the interpreter and replaced by a
// `mil.const val` of its result type: computing ops up to 1024 result
// elements, layout ops (reshape transpose expand_dims squeeze slice_by_size
// cast tile concat split) up to 65536. Weight consts are never read.

// CHECK-LABEL: func.func @binary(
// CHECK-NEXT:  %s = mil.const dense<[4.000000e+00, 1.000000e+01]> : tensor<2xf32>
// CHECK-NEXT:  func.return %s : tensor<2xf32>
func.func @binary() -> tensor<2xf32> {
  %a = mil.const dense<[1.0, 2.0]> : tensor<2xf32>
  %b = mil.const dense<3.0> : tensor<f32>
  %c = mil.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %s = mil.mul %c, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}

// A whole constant subgraph, layout and compute, folds away; the i1 and
// i32 results keep their element types.
// CHECK-LABEL: func.func @subgraph(
// CHECK-NEXT:  %m = mil.const dense<{{\[\[}}true, false, false], [true, true, false]]> : tensor<2x3xi1>
// CHECK-NEXT:  %n = mil.const dense<3> : tensor<i32>
// CHECK-NEXT:  func.return %m, %n : tensor<2x3xi1>, tensor<i32>
func.func @subgraph() -> (tensor<2x3xi1>, tensor<i32>) {
  %r = mil.const dense<[0, 1]> : tensor<2xi32>
  %c = mil.const dense<[0, 1, 2]> : tensor<3xi32>
  %rows = mil.expand_dims %r {axes = array<i64: 1>} : (tensor<2xi32>) -> tensor<2x1xi32>
  %m = mil.greater_equal %rows, %c : (tensor<2x1xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %n = mil.reduce_sum %c {axes = array<i64: 0>} : (tensor<3xi32>) -> tensor<i32>
  func.return %m, %n : tensor<2x3xi1>, tensor<i32>
}

// Layout ops of a large const (a 256x256 = 65536 element mask) fold; a splat
// prints as one value.
// CHECK-LABEL: func.func @large_layout(
// CHECK-NEXT:  %t = mil.const dense<-3.000000e+04> : tensor<1x1x256x256xf16>
// CHECK-NEXT:  func.return %t : tensor<1x1x256x256xf16>
func.func @large_layout() -> tensor<1x1x256x256xf16> {
  %m = mil.const dense<-30000.0> : tensor<256x256xf32>
  %h = mil.cast %m {dtype = "fp16"} : (tensor<256x256xf32>) -> tensor<256x256xf16>
  %t = mil.reshape %h {shape = array<i64: 1, 1, 256, 256>} : (tensor<256x256xf16>) -> tensor<1x1x256x256xf16>
  func.return %t : tensor<1x1x256x256xf16>
}

// Split and concat fold; each result of split becomes a const.
// CHECK-LABEL: func.func @split_concat(
// CHECK-NEXT:  %j = mil.const dense<[3, 4, 1, 2]> : tensor<4xi32>
// CHECK-NEXT:  func.return %j : tensor<4xi32>
func.func @split_concat() -> tensor<4xi32> {
  %c = mil.const dense<[1, 2, 3, 4]> : tensor<4xi32>
  %p:2 = mil.split %c {axis = 0 : i64, num_splits = 2 : i64} : (tensor<4xi32>) -> (tensor<2xi32>, tensor<2xi32>)
  %j = mil.concat %p#1, %p#0 {axis = 0 : i64} : (tensor<2xi32>, tensor<2xi32>) -> tensor<4xi32>
  func.return %j : tensor<4xi32>
}

// Negative: a computing op with a result over 1024 elements stays.
// CHECK-LABEL: func.func @large_compute(
// CHECK-NEXT:  %c = mil.const dense<1.000000e+00> : tensor<32x33xf32>
// CHECK-NEXT:  %e = mil.exp %c : tensor<32x33xf32>
func.func @large_compute() -> tensor<32x33xf32> {
  %c = mil.const dense<1.0> : tensor<32x33xf32>
  %e = mil.exp %c : tensor<32x33xf32>
  func.return %e : tensor<32x33xf32>
}

// Negative: a layout op with a result over 65536 elements stays.
// CHECK-LABEL: func.func @huge_layout(
// CHECK-NEXT:  %c = mil.const dense<1.000000e+00> : tensor<256x257xf16>
// CHECK-NEXT:  %t = mil.transpose %c {perm = array<i64: 1, 0>} : (tensor<256x257xf16>) -> tensor<257x256xf16>
func.func @huge_layout() -> tensor<257x256xf16> {
  %c = mil.const dense<1.0> : tensor<256x257xf16>
  %t = mil.transpose %c {perm = array<i64: 1, 0>} : (tensor<256x257xf16>) -> tensor<257x256xf16>
  func.return %t : tensor<257x256xf16>
}

// Negative: a weight const's data is not in the IR; ops reading it stay.
// CHECK-LABEL: func.func @weight_not_folded(
// CHECK-NEXT:  %w = mil.const weight "w" : tensor<4xf32>
// CHECK-NEXT:  %c = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  %a = mil.add %w, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:  %s = mil.slice_by_size %w {begin = array<i64: 1>, size = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
func.func @weight_not_folded() -> (tensor<4xf32>, tensor<2xf32>) {
  %w = mil.const weight "w" : tensor<4xf32>
  %c = mil.const dense<1.0> : tensor<f32>
  %a = mil.add %w, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = mil.slice_by_size %w {begin = array<i64: 1>, size = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
  func.return %a, %s : tensor<4xf32>, tensor<2xf32>
}

// Negative: an op with a runtime operand stays.
// CHECK-LABEL: func.func @runtime_operand(
// CHECK-NEXT:  %c = mil.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:  %a = mil.add %x, %c : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
func.func @runtime_operand(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = mil.const dense<1.0> : tensor<f32>
  %a = mil.add %x, %c : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}

// Negative: an integer division by zero is left for run time to report.
// CHECK-LABEL: func.func @division_by_zero(
// CHECK:       %d = mil.real_div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
func.func @division_by_zero() -> tensor<2xi32> {
  %a = mil.const dense<[1, 2]> : tensor<2xi32>
  %b = mil.const dense<[1, 0]> : tensor<2xi32>
  %d = mil.real_div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %d : tensor<2xi32>
}

// Negative: constexpr ops are MIL consts already, stored compressed.
// CHECK-LABEL: func.func @constexpr_kept(
// CHECK:       %w = mil.constexpr_affine_dequantize
func.func @constexpr_kept() -> tensor<2x2xf16> {
  %data = mil.const dense<[[1, 2], [3, 4]]> : tensor<2x2xi8>
  %zp = mil.const dense<0> : tensor<i8>
  %scale = mil.const dense<0.5> : tensor<f16>
  %w = mil.constexpr_affine_dequantize %data, %zp, %scale {axis = 0 : i64} : (tensor<2x2xi8>, tensor<i8>, tensor<f16>) -> tensor<2x2xf16>
  func.return %w : tensor<2x2xf16>
}
