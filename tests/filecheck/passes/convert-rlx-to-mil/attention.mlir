// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s
// RUN: xdsl-opt %s -p convert-rlx-to-mil | filecheck %s --check-prefix=NO-RLX

// convert-rlx-to-mil, attention family (passes/rlx_to_mil/attention.py):
// P = softmax(q*k^T*scale + mask) over the keys, out = P*v, decomposed into
// matmul, mul, add, softmax and matmul. Masked scores get the additive
// -1e4; a query row that sees no key (causal, S > Skv) is zeroed by a row
// mask. Grouped-query heads are first tiled by the rlx-gqa-tile patterns.

// NO-RLX-NOT: rlx.

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
