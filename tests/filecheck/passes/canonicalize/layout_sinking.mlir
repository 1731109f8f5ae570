// RUN: xdsl-opt %s -p canonicalize | filecheck %s

// The patterns of passes/layout_sinking.py and FoldBiasIntoMatmul
// (passes/conv_bias.py).

// ConvNeXt's channels-last block: the permute sinks through the layer_norm
// (now over axis 1), becomes a 1x1 conv with the linear (its bias inside),
// passes the GELU and the layer scale (re-viewed [1, C, 1, 1]) and cancels
// with the permute back.
// CHECK-LABEL: func.func @channels_last_block(
// CHECK-NEXT:    %g = mil.const weight "g" : tensor<8xf16>
// CHECK-NEXT:    %b = mil.const weight "b" : tensor<8xf16>
// CHECK-NEXT:    %n = mil.layer_norm %x, gamma %g, beta %b {axes = array<i64: 1>, epsilon = 1.000000e-06 : f32} : (tensor<1x8x3x5xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<1x8x3x5xf16>
// CHECK-NEXT:    %m1 = mil.const weight "w1" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
// CHECK-NEXT:    %0 = mil.const weight "b1" : tensor<16xf16>
// CHECK-NEXT:    %a1 = mil.conv %n, %m1, bias %0 : (tensor<1x8x3x5xf16>, tensor<16x8x1x1xf16>, tensor<16xf16>) -> tensor<1x16x3x5xf16>
// CHECK-NEXT:    %h = mil.gelu %a1 {mode = "EXACT"} : tensor<1x16x3x5xf16>
// CHECK-NEXT:    %l = mil.const weight "s" {weight_shape = array<i64: 16>} : tensor<1x16x1x1xf16>
// CHECK-NEXT:    %l_1 = mil.mul %l, %h : (tensor<1x16x1x1xf16>, tensor<1x16x3x5xf16>) -> tensor<1x16x3x5xf16>
// CHECK-NEXT:    %r = mil.slice_by_size %l_1 {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 8, 3, 5>} : (tensor<1x16x3x5xf16>) -> tensor<1x8x3x5xf16>
// CHECK-NEXT:    func.return %r : tensor<1x8x3x5xf16>
func.func @channels_last_block(%x: tensor<1x8x3x5xf16>) -> tensor<1x8x3x5xf16> {
  %g = mil.const weight "g" : tensor<8xf16>
  %b = mil.const weight "b" : tensor<8xf16>
  %w1 = mil.const weight "w1" : tensor<16x8xf16>
  %b1 = mil.const weight "b1" : tensor<16xf16>
  %s = mil.const weight "s" : tensor<16xf16>
  %t = mil.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf16>) -> tensor<1x3x5x8xf16>
  %n = mil.layer_norm %t, gamma %g, beta %b {axes = array<i64: -1>, epsilon = 1.0e-06 : f32} : (tensor<1x3x5x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<1x3x5x8xf16>
  %m1 = mil.matmul %n, %w1 {transpose_y = true} : (tensor<1x3x5x8xf16>, tensor<16x8xf16>) -> tensor<1x3x5x16xf16>
  %a1 = mil.add %m1, %b1 : (tensor<1x3x5x16xf16>, tensor<16xf16>) -> tensor<1x3x5x16xf16>
  %h = mil.gelu %a1 {mode = "EXACT"} : tensor<1x3x5x16xf16>
  %l = mil.mul %s, %h : (tensor<16xf16>, tensor<1x3x5x16xf16>) -> tensor<1x3x5x16xf16>
  %back = mil.transpose %l {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x16xf16>) -> tensor<1x16x3x5xf16>
  %r = mil.slice_by_size %back {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 8, 3, 5>} : (tensor<1x16x3x5xf16>) -> tensor<1x8x3x5xf16>
  func.return %r : tensor<1x8x3x5xf16>
}

// DPT's reassembly: tokens in ANE form read as [1, S, C], split into
// [1, H, W, C] and permuted to [1, C, H, W] keep the element order: one
// reshape.
// CHECK-LABEL: func.func @tokens_to_image(
// CHECK-NEXT:    %d = mil.reshape %x {shape = array<i64: 1, 8, 3, 4>} : (tensor<1x8x1x12xf16>) -> tensor<1x8x3x4xf16>
// CHECK-NEXT:    func.return %d : tensor<1x8x3x4xf16>
func.func @tokens_to_image(%x: tensor<1x8x1x12xf16>) -> tensor<1x8x3x4xf16> {
  %a = mil.reshape %x {shape = array<i64: 1, 8, 12>} : (tensor<1x8x1x12xf16>) -> tensor<1x8x12xf16>
  %b = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x12xf16>) -> tensor<1x12x8xf16>
  %c = mil.reshape %b {shape = array<i64: 1, 3, 4, 8>} : (tensor<1x12x8xf16>) -> tensor<1x3x4x8xf16>
  %d = mil.transpose %c {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x8xf16>) -> tensor<1x8x3x4xf16>
  func.return %d : tensor<1x8x3x4xf16>
}

// Attention heads in the ANE form [1, H, D, S]: the transposes to
// [1, H, S, D] and back become the matmuls' flags.
// CHECK-LABEL: func.func @attention_heads(
// CHECK-NEXT:    %s = mil.matmul %q, %k {transpose_x = true, transpose_y = false} : (tensor<1x2x4x6xf16>, tensor<1x2x4x6xf16>) -> tensor<1x2x6x6xf16>
// CHECK-NEXT:    %p = mil.softmax %s {axis = -1 : i64} : tensor<1x2x6x6xf16>
// CHECK-NEXT:    %ot = mil.matmul %v, %p {transpose_x = false, transpose_y = true} : (tensor<1x2x4x6xf16>, tensor<1x2x6x6xf16>) -> tensor<1x2x4x6xf16>
// CHECK-NEXT:    func.return %ot : tensor<1x2x4x6xf16>
func.func @attention_heads(%q: tensor<1x2x4x6xf16>, %k: tensor<1x2x4x6xf16>, %v: tensor<1x2x4x6xf16>) -> tensor<1x2x4x6xf16> {
  %qt = mil.transpose %q {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x6xf16>) -> tensor<1x2x6x4xf16>
  %kt = mil.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x6xf16>) -> tensor<1x2x6x4xf16>
  %vt = mil.transpose %v {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x6xf16>) -> tensor<1x2x6x4xf16>
  %s = mil.matmul %qt, %kt {transpose_y = true} : (tensor<1x2x6x4xf16>, tensor<1x2x6x4xf16>) -> tensor<1x2x6x6xf16>
  %p = mil.softmax %s {axis = -1 : i64} : tensor<1x2x6x6xf16>
  %o = mil.matmul %p, %vt : (tensor<1x2x6x6xf16>, tensor<1x2x6x4xf16>) -> tensor<1x2x6x4xf16>
  %ot = mil.transpose %o {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x4xf16>) -> tensor<1x2x4x6xf16>
  func.return %ot : tensor<1x2x4x6xf16>
}

// Swin's window projections: matmul by a weight plus a bias is one linear.
// CHECK-LABEL: func.func @window_linear(
// CHECK-NEXT:    %w = mil.const weight "w" : tensor<16x8xf16>
// CHECK-NEXT:    %0 = mil.const weight "b" : tensor<16xf16>
// CHECK-NEXT:    %y = mil.linear %x, %w, bias %0 : (tensor<4x6x8xf16>, tensor<16x8xf16>, tensor<16xf16>) -> tensor<4x6x16xf16>
// CHECK-NEXT:    func.return %y : tensor<4x6x16xf16>
func.func @window_linear(%x: tensor<4x6x8xf16>) -> tensor<4x6x16xf16> {
  %w = mil.const weight "w" : tensor<16x8xf16>
  %b = mil.const weight "b" {weight_shape = array<i64: 16>} : tensor<1x16xf16>
  %m = mil.matmul %x, %w {transpose_y = true} : (tensor<4x6x8xf16>, tensor<16x8xf16>) -> tensor<4x6x16xf16>
  %y = mil.add %m, %b : (tensor<4x6x16xf16>, tensor<1x16xf16>) -> tensor<4x6x16xf16>
  func.return %y : tensor<4x6x16xf16>
}
