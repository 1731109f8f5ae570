// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, attention family (passes/rlx_to_mil/attention.py):
// rope and rope_backward in both pair styles; attention's
// P = softmax(q*k^T*scale + mask) over the keys, out = P*v, decomposed into
// matmul, mul, add, softmax and matmul. Masked scores get the additive
// -1e4; a query row that sees no key (causal, S > Skv) is zeroed by a row
// mask. Grouped-query heads are first tiled by the rlx-gqa-tile patterns.

// NO-RLX-NOT: rlx.

// "half" pairs (i, i + D/2): slice the halves a, b; (a*cos - b*sin,
// a*sin + b*cos); concat. cos and sin [S, D/2] broadcast over [B, H].
// CHECK-LABEL: func.func @rope_half(
// CHECK-NEXT:  [[A:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 2>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_COS:%.+]] = mil.mul [[A]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_SIN:%.+]] = mil.mul [[B]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_SIN:%.+]] = mil.mul [[A]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_COS:%.+]] = mil.mul [[B]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_A:%.+]] = mil.sub [[A_COS]], [[B_SIN]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_B:%.+]] = mil.add [[A_SIN]], [[B_COS]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.concat [[NEW_A]], [[NEW_B]] {axis = -1 : i64, interleave = false} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_half(%x: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// "interleaved" pairs (2i, 2i + 1): view x as [B*H, S, D/2, 2], slice the
// even and odd lanes, rotate against cos, sin viewed as [S, D/2, 1], concat
// the lanes on the last axis and restore [B, H, S, D].
// CHECK-LABEL: func.func @rope_interleaved(
// CHECK-NEXT:  [[PAIRS:%.+]] = mil.reshape %x {shape = array<i64: 2, 3, 2, 2>} : (tensor<1x2x3x4xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[EVEN:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 1>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[COS:%.+]] = mil.reshape %cos {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[SIN:%.+]] = mil.reshape %sin {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[EVEN_COS:%.+]] = mil.mul [[EVEN]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_SIN:%.+]] = mil.mul [[ODD]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[EVEN_SIN:%.+]] = mil.mul [[EVEN]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_COS:%.+]] = mil.mul [[ODD]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_EVEN:%.+]] = mil.sub [[EVEN_COS]], [[ODD_SIN]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_ODD:%.+]] = mil.add [[EVEN_SIN]], [[ODD_COS]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[LANES:%.+]] = mil.concat [[NEW_EVEN]], [[NEW_ODD]] {axis = -1 : i64, interleave = false} : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LANES]] {shape = array<i64: 1, 2, 3, 4>} : (tensor<2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_interleaved(%x: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope %x, %cos, %sin {style = "interleaved"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// rope_backward rotates by -theta: (a, b) -> (a*cos + b*sin, b*cos - a*sin).
// CHECK-LABEL: func.func @rope_backward_half(
// CHECK-NEXT:  [[A:%.+]] = mil.slice_by_size %dy {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B:%.+]] = mil.slice_by_size %dy {begin = array<i64: 0, 0, 0, 2>, size = array<i64: -1, -1, -1, 2>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_COS:%.+]] = mil.mul [[A]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_SIN:%.+]] = mil.mul [[B]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[A_SIN:%.+]] = mil.mul [[A]], %sin : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[B_COS:%.+]] = mil.mul [[B]], %cos : (tensor<1x2x3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_A:%.+]] = mil.add [[A_COS]], [[B_SIN]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[NEW_B:%.+]] = mil.sub [[B_COS]], [[A_SIN]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.concat [[NEW_A]], [[NEW_B]] {axis = -1 : i64, interleave = false} : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_backward_half(%dy: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope_backward %dy, %cos, %sin {style = "half"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// The interleaved lanes of rope_interleaved, rotated by -theta.
// CHECK-LABEL: func.func @rope_backward_interleaved(
// CHECK-NEXT:  [[PAIRS:%.+]] = mil.reshape %dy {shape = array<i64: 2, 3, 2, 2>} : (tensor<1x2x3x4xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[EVEN:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 1>, size = array<i64: -1, -1, -1, 1>} : (tensor<2x3x2x2xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[COS:%.+]] = mil.reshape %cos {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[SIN:%.+]] = mil.reshape %sin {shape = array<i64: 3, 2, 1>} : (tensor<3x2xf32>) -> tensor<3x2x1xf32>
// CHECK-NEXT:  [[EVEN_COS:%.+]] = mil.mul [[EVEN]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_SIN:%.+]] = mil.mul [[ODD]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[EVEN_SIN:%.+]] = mil.mul [[EVEN]], [[SIN]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[ODD_COS:%.+]] = mil.mul [[ODD]], [[COS]] : (tensor<2x3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_EVEN:%.+]] = mil.add [[EVEN_COS]], [[ODD_SIN]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[NEW_ODD:%.+]] = mil.sub [[ODD_COS]], [[EVEN_SIN]] : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
// CHECK-NEXT:  [[LANES:%.+]] = mil.concat [[NEW_EVEN]], [[NEW_ODD]] {axis = -1 : i64, interleave = false} : (tensor<2x3x2x1xf32>, tensor<2x3x2x1xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[LANES]] {shape = array<i64: 1, 2, 3, 4>} : (tensor<2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x4xf32>
func.func @rope_backward_interleaved(%dy: tensor<1x2x3x4xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x3x4xf32> {
  %y = rlx.rope_backward %dy, %cos, %sin {style = "interleaved"} : (tensor<1x2x3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x3x4xf32>
  func.return %y : tensor<1x2x3x4xf32>
}

// mask "none", default scale D^-0.5 = 8^-0.5 = 0.353553385.
// CHECK-LABEL: func.func @attention(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[SCALED]] {axis = -1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x8xf32>
func.func @attention(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %y = rlx.attention %q, %k, %v : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// An explicit scale replaces D^-0.5.
// CHECK-LABEL: func.func @attention_scale(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[SCALED]] {axis = -1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x8xf32>
func.func @attention_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %y = rlx.attention %q, %k, %v {mask = "none", scale = 5.000000e-01 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// Causal, S = Skv = 3: query i sees key j iff j <= i, the additive mask is
// -1e4 above the diagonal, broadcast over [B, H] as [1, 1, S, Skv].
// CHECK-LABEL: func.func @attention_causal(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+04, -1.000000e+04], [0.000000e+00, 0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x8xf32>
func.func @attention_causal(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %y : tensor<1x2x3x8xf32>
}

// Causal, S = 2 < Skv = 3: query i sees key j iff j <= i + 1.
// CHECK-LABEL: func.func @attention_causal_more_keys(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x2x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x2x3xf32>, tensor<f32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00, 0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x2x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x2x2x3xf32>, tensor<1x1x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x2x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x2x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x2x8xf32>
func.func @attention_causal_more_keys(%q: tensor<1x2x2x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x2x2x8xf32> {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x2x2x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x2x8xf32>
  func.return %y : tensor<1x2x2x8xf32>
}

// Causal, S = 3 > Skv = 2: query i sees key j iff j <= i - 1, so row 0 sees
// no key; the probabilities are multiplied by the row mask [0, 1, 1].
// CHECK-LABEL: func.func @attention_causal_row_mask(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x3x2xf32>, tensor<f32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}-1.000000e+04, -1.000000e+04], [0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x2xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x2x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[SOFTMAX:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[ROW_MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00], [1.000000e+00], [1.000000e+00]]]]> : tensor<1x1x3x1xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.mul [[SOFTMAX]], [[ROW_MASK]] : (tensor<1x2x3x2xf32>, tensor<1x1x3x1xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x3x2xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x8xf32>
func.func @attention_causal_row_mask(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x2x8xf32>, %v: tensor<1x2x2x8xf32>) -> tensor<1x2x3x8xf32> {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x2x3x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %y : tensor<1x2x3x8xf32>
}

// mask "bias": the 4th operand is added to the scaled scores.
// CHECK-LABEL: func.func @attention_bias(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], %bias : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x8xf32>
func.func @attention_bias(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %bias: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %y = rlx.attention %q, %k, %v, %bias {mask = "bias"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// f16: the scale and the mask consts are f16.
// CHECK-LABEL: func.func @attention_causal_scale_f16(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf16>, tensor<1x2x3x8xf16>) -> tensor<1x2x3x3xf16>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<2.500000e-01> : tensor<f16>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x3x3xf16>, tensor<f16>) -> tensor<1x2x3x3xf16>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+04, -1.000000e+04], [0.000000e+00, 0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf16>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x2x3x3xf16>, tensor<1x1x3x3xf16>) -> tensor<1x2x3x3xf16>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x3x3xf16>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %v {transpose_x = false, transpose_y = false} : (tensor<1x2x3x3xf16>, tensor<1x2x3x8xf16>) -> tensor<1x2x3x8xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x8xf16>
func.func @attention_causal_scale_f16(%q: tensor<1x2x3x8xf16>, %k: tensor<1x2x3x8xf16>, %v: tensor<1x2x3x8xf16>) -> tensor<1x2x3x8xf16> {
  %y = rlx.attention %q, %k, %v {mask = "causal", scale = 2.500000e-01 : f32} : (tensor<1x2x3x8xf16>, tensor<1x2x3x8xf16>, tensor<1x2x3x8xf16>) -> tensor<1x2x3x8xf16>
  func.return %y : tensor<1x2x3x8xf16>
}

// Grouped-query, H = 4 over Hkv = 2: k and v are tiled to k0, k0, k1, k1
// ([B*Hkv, 1, S, D], concat R = 2 times on axis 1, back to [B, H, S, D]),
// then lowered as above.
// CHECK-LABEL: func.func @attention_gqa(
// CHECK-NEXT:  [[K_FLAT:%.+]] = mil.reshape %k {shape = array<i64: 2, 1, 3, 8>} : (tensor<1x2x3x8xf32>) -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[K_TILED:%.+]] = mil.concat [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64, interleave = false} : (tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>) -> tensor<2x2x3x8xf32>
// CHECK-NEXT:  [[K:%.+]] = mil.reshape [[K_TILED]] {shape = array<i64: 1, 4, 3, 8>} : (tensor<2x2x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  [[V_FLAT:%.+]] = mil.reshape %v {shape = array<i64: 2, 1, 3, 8>} : (tensor<1x2x3x8xf32>) -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[V_TILED:%.+]] = mil.concat [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64, interleave = false} : (tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>) -> tensor<2x2x3x8xf32>
// CHECK-NEXT:  [[V:%.+]] = mil.reshape [[V_TILED]] {shape = array<i64: 1, 4, 3, 8>} : (tensor<2x2x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, [[K]] {transpose_x = false, transpose_y = true} : (tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+04, -1.000000e+04], [0.000000e+00, 0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], [[V]] {transpose_x = false, transpose_y = false} : (tensor<1x4x3x3xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x4x3x8xf32>
func.func @attention_gqa(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %y : tensor<1x4x3x8xf32>
}

// attention_backward recomputes P as in the forward; with dO = d_out:
// dP = dO*v^T; dS = P * (dP - sum_keys(dP * P)); dQ = dS*k*scale.
// CHECK-LABEL: func.func @attention_backward_query(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[SCALED]] {axis = -1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[D_P:%.+]] = mil.matmul %dy, %v {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[D_P_P:%.+]] = mil.mul [[D_P]], [[PROBS]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[ROW_DOT:%.+]] = mil.reduce_sum [[D_P_P]] {axes = array<i64: -1>, keep_dims = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
// CHECK-NEXT:  [[CENTERED:%.+]] = mil.sub [[D_P]], [[ROW_DOT]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[D_S:%.+]] = mil.mul [[PROBS]], [[CENTERED]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[GRAD_SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[GRAD:%.+]] = mil.matmul [[D_S]], %k {transpose_x = false, transpose_y = false} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[GRAD]], [[GRAD_SCALE]] : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x8xf32>
func.func @attention_backward_query(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %dy: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "query"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// dK = dS^T*q*scale, here with the causal mask in the recomputed P.
// CHECK-LABEL: func.func @attention_backward_key(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+04, -1.000000e+04], [0.000000e+00, 0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[D_P:%.+]] = mil.matmul %dy, %v {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[D_P_P:%.+]] = mil.mul [[D_P]], [[PROBS]] : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[ROW_DOT:%.+]] = mil.reduce_sum [[D_P_P]] {axes = array<i64: -1>, keep_dims = true} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x1xf32>
// CHECK-NEXT:  [[CENTERED:%.+]] = mil.sub [[D_P]], [[ROW_DOT]] : (tensor<1x2x3x3xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[D_S:%.+]] = mil.mul [[PROBS]], [[CENTERED]] : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[GRAD_SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[GRAD:%.+]] = mil.matmul [[D_S]], %q {transpose_x = true, transpose_y = false} : (tensor<1x2x3x3xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[GRAD]], [[GRAD_SCALE]] : (tensor<1x2x3x8xf32>, tensor<f32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x8xf32>
func.func @attention_backward_key(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>, %dy: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "key", mask = "causal"} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %y : tensor<1x2x3x8xf32>
}

// dV = P^T*dO, with an explicit scale in P.
// CHECK-LABEL: func.func @attention_backward_value(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[SCALED]] {axis = -1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul [[PROBS]], %dy {transpose_x = true, transpose_y = false} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x8xf32>
func.func @attention_backward_value(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %dy: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "value", scale = 2.500000e-01 : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// The bias enters the recomputed P; the gradient formula is unchanged.
// CHECK-LABEL: func.func @attention_backward_query_bias(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], %bias : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[D_P:%.+]] = mil.matmul %dy, %v {transpose_x = false, transpose_y = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[D_P_P:%.+]] = mil.mul [[D_P]], [[PROBS]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[ROW_DOT:%.+]] = mil.reduce_sum [[D_P_P]] {axes = array<i64: -1>, keep_dims = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x1xf32>
// CHECK-NEXT:  [[CENTERED:%.+]] = mil.sub [[D_P]], [[ROW_DOT]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[D_S:%.+]] = mil.mul [[PROBS]], [[CENTERED]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  [[GRAD_SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[GRAD:%.+]] = mil.matmul [[D_S]], %k {transpose_x = false, transpose_y = false} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[GRAD]], [[GRAD_SCALE]] : (tensor<1x2x4x8xf32>, tensor<f32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x8xf32>
func.func @attention_backward_query_bias(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %dy: tensor<1x2x4x8xf32>, %bias: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy, %bias {wrt = "query", mask = "bias"} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return %y : tensor<1x2x4x8xf32>
}

// Causal with S = 3 > Skv = 2: the row mask zeroes P on row 0, so dS and dQ
// are zero there too.
// CHECK-LABEL: func.func @attention_backward_query_row_mask(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x2x3x2xf32>, tensor<f32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[\[}}-1.000000e+04, -1.000000e+04], [0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x2xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]] : (tensor<1x2x3x2xf32>, tensor<1x1x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[SOFTMAX:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64} : tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[ROW_MASK:%.+]] = mil.const dense<{{\[\[\[\[}}0.000000e+00], [1.000000e+00], [1.000000e+00]]]]> : tensor<1x1x3x1xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.mul [[SOFTMAX]], [[ROW_MASK]] : (tensor<1x2x3x2xf32>, tensor<1x1x3x1xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[D_P:%.+]] = mil.matmul %dy, %v {transpose_x = false, transpose_y = true} : (tensor<1x2x3x8xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[D_P_P:%.+]] = mil.mul [[D_P]], [[PROBS]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[ROW_DOT:%.+]] = mil.reduce_sum [[D_P_P]] {axes = array<i64: -1>, keep_dims = true} : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x1xf32>
// CHECK-NEXT:  [[CENTERED:%.+]] = mil.sub [[D_P]], [[ROW_DOT]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[D_S:%.+]] = mil.mul [[PROBS]], [[CENTERED]] : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
// CHECK-NEXT:  [[GRAD_SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[GRAD:%.+]] = mil.matmul [[D_S]], %k {transpose_x = false, transpose_y = false} : (tensor<1x2x3x2xf32>, tensor<1x2x2x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.mul [[GRAD]], [[GRAD_SCALE]] : (tensor<1x2x3x8xf32>, tensor<f32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x8xf32>
func.func @attention_backward_query_row_mask(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x2x8xf32>, %v: tensor<1x2x2x8xf32>, %dy: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "query", mask = "causal"} : (tensor<1x2x3x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %y : tensor<1x2x3x8xf32>
}

// Grouped-query dK: tile k and v to H heads, lower, then sum each group of
// R = 2 query heads back into its key head ([B*Hkv, R, S, D], reduce_sum
// axis 1 keeping it, [B, Hkv, S, D]).
// CHECK-LABEL: func.func @attention_backward_key_gqa(
// CHECK-NEXT:  [[K_FLAT:%.+]] = mil.reshape %k {shape = array<i64: 2, 1, 3, 8>} : (tensor<1x2x3x8xf32>) -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[K_TILED:%.+]] = mil.concat [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64, interleave = false} : (tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>) -> tensor<2x2x3x8xf32>
// CHECK-NEXT:  [[K:%.+]] = mil.reshape [[K_TILED]] {shape = array<i64: 1, 4, 3, 8>} : (tensor<2x2x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  [[V_FLAT:%.+]] = mil.reshape %v {shape = array<i64: 2, 1, 3, 8>} : (tensor<1x2x3x8xf32>) -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[V_TILED:%.+]] = mil.concat [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64, interleave = false} : (tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>) -> tensor<2x2x3x8xf32>
// CHECK-NEXT:  [[V:%.+]] = mil.reshape [[V_TILED]] {shape = array<i64: 1, 4, 3, 8>} : (tensor<2x2x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, [[K]] {transpose_x = false, transpose_y = true} : (tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]] : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[PROBS:%.+]] = mil.softmax [[SCALED]] {axis = -1 : i64} : tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[D_P:%.+]] = mil.matmul %dy, [[V]] {transpose_x = false, transpose_y = true} : (tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[D_P_P:%.+]] = mil.mul [[D_P]], [[PROBS]] : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[ROW_DOT:%.+]] = mil.reduce_sum [[D_P_P]] {axes = array<i64: -1>, keep_dims = true} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x1xf32>
// CHECK-NEXT:  [[CENTERED:%.+]] = mil.sub [[D_P]], [[ROW_DOT]] : (tensor<1x4x3x3xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[D_S:%.+]] = mil.mul [[PROBS]], [[CENTERED]] : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:  [[GRAD_SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[GRAD:%.+]] = mil.matmul [[D_S]], %q {transpose_x = true, transpose_y = false} : (tensor<1x4x3x3xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  [[D_K:%.+]] = mil.mul [[GRAD]], [[GRAD_SCALE]] : (tensor<1x4x3x8xf32>, tensor<f32>) -> tensor<1x4x3x8xf32>
// CHECK-NEXT:  [[GROUPED:%.+]] = mil.reshape [[D_K]] {shape = array<i64: 2, 2, 3, 8>} : (tensor<1x4x3x8xf32>) -> tensor<2x2x3x8xf32>
// CHECK-NEXT:  [[SUMMED:%.+]] = mil.reduce_sum [[GROUPED]] {axes = array<i64: 1>, keep_dims = true} : (tensor<2x2x3x8xf32>) -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.reshape [[SUMMED]] {shape = array<i64: 1, 2, 3, 8>} : (tensor<2x1x3x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x3x8xf32>
func.func @attention_backward_key_gqa(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>, %dy: tensor<1x4x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "key"} : (tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %y : tensor<1x2x3x8xf32>
}

// layout = "bhds" (x [B, H, D, S]): the halves are slices along axis 2, and
// the tables [S, D/2] given at run time are transposed to [D/2, S].
// CHECK-LABEL: func.func @rope_half_bhds(
// CHECK-NEXT:  [[A:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, 2, -1>} : (tensor<1x2x4x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[B:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 2, 0>, size = array<i64: -1, -1, 2, -1>} : (tensor<1x2x4x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[COS:%.+]] = mil.transpose %cos {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[SIN:%.+]] = mil.transpose %sin {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:  [[A_COS:%.+]] = mil.mul [[A]], [[COS]] : (tensor<1x2x2x3xf32>, tensor<2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[B_SIN:%.+]] = mil.mul [[B]], [[SIN]] : (tensor<1x2x2x3xf32>, tensor<2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[A_SIN:%.+]] = mil.mul [[A]], [[SIN]] : (tensor<1x2x2x3xf32>, tensor<2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[B_COS:%.+]] = mil.mul [[B]], [[COS]] : (tensor<1x2x2x3xf32>, tensor<2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[NEW_A:%.+]] = mil.sub [[A_COS]], [[B_SIN]] : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[NEW_B:%.+]] = mil.add [[A_SIN]], [[B_COS]] : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32>
// CHECK-NEXT:  [[Y:%.+]] = mil.concat [[NEW_A]], [[NEW_B]] {axis = 2 : i64, interleave = false} : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x4x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x3xf32>
func.func @rope_half_bhds(%x: tensor<1x2x4x3xf32>, %cos: tensor<3x2xf32>, %sin: tensor<3x2xf32>) -> tensor<1x2x4x3xf32> {
  %y = rlx.rope %x, %cos, %sin {style = "half", layout = "bhds"} : (tensor<1x2x4x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x2x4x3xf32>
  func.return %y : tensor<1x2x4x3xf32>
}

// Inline constant tables fold at compile time: x rotated by -theta is
// x*C - swap(x)*S~ with C = [cos, cos] and S~ = [-sin, sin] [S, D], so the
// rotation costs the swap (two slices, a concat), two muls and a sub.
// CHECK-LABEL: func.func @rope_backward_half_constant_tables(
// CHECK:       [[A:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, -1, 2>}
// CHECK-NEXT:  [[B:%.+]] = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 2>, size = array<i64: -1, -1, -1, 2>}
// CHECK-NEXT:  [[SWAP:%.+]] = mil.concat [[B]], [[A]] {axis = -1 : i64, interleave = false} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
// CHECK-NEXT:  [[SIGNED_SIN:%.+]] = mil.const dense<{{\[}}[-2.000000e+00, -3.000000e+00, 2.000000e+00, 3.000000e+00], [-4.000000e+00, -5.000000e+00, 4.000000e+00, 5.000000e+00]]> : tensor<2x4xf32>
// CHECK-NEXT:  [[ROTATED:%.+]] = mil.mul [[SWAP]], [[SIGNED_SIN]]
// CHECK-NEXT:  [[C:%.+]] = mil.const dense<{{\[}}[1.000000e+00, 5.000000e-01, 1.000000e+00, 5.000000e-01], [2.500000e-01, 1.250000e-01, 2.500000e-01, 1.250000e-01]]> : tensor<2x4xf32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul %x, [[C]]
// CHECK-NEXT:  [[Y:%.+]] = mil.sub [[SCALED]], [[ROTATED]]
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x2x4xf32>
func.func @rope_backward_half_constant_tables(%x: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
  %cos = rlx.constant dense<[[1.0, 0.5], [0.25, 0.125]]> : tensor<2x2xf32>
  %sin = rlx.constant dense<[[2.0, 3.0], [4.0, 5.0]]> : tensor<2x2xf32>
  %y = rlx.rope_backward %x, %cos, %sin {style = "half"} : (tensor<1x2x2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2x4xf32>
  func.return %y : tensor<1x2x2x4xf32>
}

// Interleaved pairs in "bhds": the swap exchanges the two rows of the view
// [B*H, D/2, 2, S]; C [D, S] repeats each pair's cosine, S~ signs its sine.
// CHECK-LABEL: func.func @rope_interleaved_bhds_constant_tables(
// CHECK:       [[PAIRS:%.+]] = mil.reshape %x {shape = array<i64: 2, 2, 2, 2>}
// CHECK-NEXT:  [[EVEN:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 0, 0>, size = array<i64: -1, -1, 1, -1>}
// CHECK-NEXT:  [[ODD:%.+]] = mil.slice_by_size [[PAIRS]] {begin = array<i64: 0, 0, 1, 0>, size = array<i64: -1, -1, 1, -1>}
// CHECK-NEXT:  [[JOINED:%.+]] = mil.concat [[ODD]], [[EVEN]] {axis = 2 : i64, interleave = false}
// CHECK-NEXT:  [[SWAP:%.+]] = mil.reshape [[JOINED]] {shape = array<i64: 1, 2, 4, 2>}
// CHECK-NEXT:  [[SIGNED_SIN:%.+]] = mil.const dense<{{\[}}[-2.000000e+00, -4.000000e+00], [2.000000e+00, 4.000000e+00], [-3.000000e+00, -5.000000e+00], [3.000000e+00, 5.000000e+00]]> : tensor<4x2xf32>
// CHECK-NEXT:  [[ROTATED:%.+]] = mil.mul [[SWAP]], [[SIGNED_SIN]]
// CHECK-NEXT:  [[C:%.+]] = mil.const dense<{{\[}}[1.000000e+00, 2.500000e-01], [1.000000e+00, 2.500000e-01], [5.000000e-01, 1.250000e-01], [5.000000e-01, 1.250000e-01]]> : tensor<4x2xf32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul %x, [[C]]
// CHECK-NEXT:  [[Y:%.+]] = mil.add [[SCALED]], [[ROTATED]]
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x4x2xf32>
func.func @rope_interleaved_bhds_constant_tables(%x: tensor<1x2x4x2xf32>) -> tensor<1x2x4x2xf32> {
  %cos = rlx.constant dense<[[1.0, 0.5], [0.25, 0.125]]> : tensor<2x2xf32>
  %sin = rlx.constant dense<[[2.0, 3.0], [4.0, 5.0]]> : tensor<2x2xf32>
  %y = rlx.rope %x, %cos, %sin {style = "interleaved", layout = "bhds"} : (tensor<1x2x4x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x4x2xf32>
  func.return %y : tensor<1x2x4x2xf32>
}

// Attention in "bhds" (q, k [B, H, D, S], v [B, H, Dv, S]): the scores are
// q^T*k, and the output [B, H, Dv, S] is v*P^T; no transposes.
// CHECK-LABEL: func.func @attention_bhds(
// CHECK-NEXT:  [[SCORES:%.+]] = mil.matmul %q, %k {transpose_x = true, transpose_y = false} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  [[SCALE:%.+]] = mil.const dense<0.353553385> : tensor<f32>
// CHECK-NEXT:  [[SCALED:%.+]] = mil.mul [[SCORES]], [[SCALE]]
// CHECK-NEXT:  [[MASK:%.+]] = mil.const dense<{{\[\[\[}}[0.000000e+00, -1.000000e+04, -1.000000e+04], [0.000000e+00, 0.000000e+00, -1.000000e+04], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>
// CHECK-NEXT:  [[MASKED:%.+]] = mil.add [[SCALED]], [[MASK]]
// CHECK-NEXT:  [[P:%.+]] = mil.softmax [[MASKED]] {axis = -1 : i64}
// CHECK-NEXT:  [[Y:%.+]] = mil.matmul %v, [[P]] {transpose_x = false, transpose_y = true} : (tensor<1x2x5x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x3xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<1x2x5x3xf32>
func.func @attention_bhds(%q: tensor<1x2x8x3xf32>, %k: tensor<1x2x8x3xf32>, %v: tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32> {
  %y = rlx.attention %q, %k, %v {layout = "bhds", mask = "causal"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  func.return %y : tensor<1x2x5x3xf32>
}

// Its gradients in "bhds": dP = dO^T*v; dQ^T = k*dS^T, dK^T = q*dS (each
// times the scale), dV^T = dO*P.
// CHECK-LABEL: func.func @attention_backward_bhds(
// CHECK:       [[DP:%.+]] = mil.matmul %dy, %v {transpose_x = true, transpose_y = false} : (tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK:       [[DQ_T:%.+]] = mil.matmul %k, {{%.+}} {transpose_x = false, transpose_y = true} : (tensor<1x2x8x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x8x3xf32>
// CHECK-NEXT:  %dq = mil.mul [[DQ_T]], {{%.+}} : (tensor<1x2x8x3xf32>, tensor<f32>) -> tensor<1x2x8x3xf32>
// CHECK:       [[DK_T:%.+]] = mil.matmul %q, {{%.+}} {transpose_x = false, transpose_y = false} : (tensor<1x2x8x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x8x3xf32>
// CHECK-NEXT:  %dk = mil.mul [[DK_T]], {{%.+}} : (tensor<1x2x8x3xf32>, tensor<f32>) -> tensor<1x2x8x3xf32>
// CHECK:       [[P:%.+]] = mil.softmax
// CHECK-NEXT:  %dv = mil.matmul %dy, [[P]] {transpose_x = false, transpose_y = false} : (tensor<1x2x5x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x3xf32>
func.func @attention_backward_bhds(%q: tensor<1x2x8x3xf32>, %k: tensor<1x2x8x3xf32>, %v: tensor<1x2x5x3xf32>, %dy: tensor<1x2x5x3xf32>) -> (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>) {
  %dq = rlx.attention_backward %q, %k, %v, %dy {layout = "bhds", wrt = "query"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x8x3xf32>
  %dk = rlx.attention_backward %q, %k, %v, %dy {layout = "bhds", wrt = "key"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x8x3xf32>
  %dv = rlx.attention_backward %q, %k, %v, %dy {layout = "bhds", wrt = "value"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  func.return %dq, %dk, %dv : tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>
}
