// RUN: xdsl-opt %s -p rlx-gqa-tile | filecheck %s

// rlx-gqa-tile (passes/gqa_tile.py): grouped-query rlx.attention and
// rlx.attention_backward (H query heads over Hkv < H key/value heads,
// R = H / Hkv) become attention over H key/value heads, head j repeated R
// times in place (k0, k0, k1, k1 for R = 2: query head h reads h // R):
//   [B, Hkv, S, D] -reshape-> [B*Hkv, 1, S, D] -concat R x on axis 1->
//   [B*Hkv, R, S, D] -reshape-> [B, H, S, D]
// Key/value gradients are summed back over each group of R heads:
//   [B, H, S, D] -reshape-> [B*Hkv, R, S, D] -reduce_sum axis 1 (keep)->
//   [B*Hkv, 1, S, D] -reshape-> [B, Hkv, S, D]

// R = 2, B = 2: the mask is kept.
// CHECK-LABEL: func.func @attention_r2(
// CHECK-NEXT:  [[K_FLAT:%.+]] = rlx.reshape %k : tensor<2x2x3x8xf32> -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[K_TILED:%.+]] = rlx.concat [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64} : (tensor<4x1x3x8xf32>, tensor<4x1x3x8xf32>) -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[K:%.+]] = rlx.reshape [[K_TILED]] : tensor<4x2x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[V_FLAT:%.+]] = rlx.reshape %v : tensor<2x2x3x8xf32> -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[V_TILED:%.+]] = rlx.concat [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64} : (tensor<4x1x3x8xf32>, tensor<4x1x3x8xf32>) -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[V:%.+]] = rlx.reshape [[V_TILED]] : tensor<4x2x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = rlx.attention %q, [[K]], [[V]] {mask = "causal"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x4x3x8xf32>
func.func @attention_r2(%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x3x8xf32>, %v: tensor<2x2x3x8xf32>) -> tensor<2x4x3x8xf32> {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<2x4x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x2x3x8xf32>) -> tensor<2x4x3x8xf32>
  func.return %y : tensor<2x4x3x8xf32>
}

// R = 4 (one key/value head), Skv = 5 != S, a value head size 4 != D: k and
// v are each repeated by their own shape; the bias, mask and scale are kept.
// CHECK-LABEL: func.func @attention_r4_bias_scale(
// CHECK-NEXT:  [[K_FLAT:%.+]] = rlx.reshape %k : tensor<2x1x5x8xf16> -> tensor<2x1x5x8xf16>
// CHECK-NEXT:  [[K_TILED:%.+]] = rlx.concat [[K_FLAT]], [[K_FLAT]], [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64} : (tensor<2x1x5x8xf16>, tensor<2x1x5x8xf16>, tensor<2x1x5x8xf16>, tensor<2x1x5x8xf16>) -> tensor<2x4x5x8xf16>
// CHECK-NEXT:  [[K:%.+]] = rlx.reshape [[K_TILED]] : tensor<2x4x5x8xf16> -> tensor<2x4x5x8xf16>
// CHECK-NEXT:  [[V_FLAT:%.+]] = rlx.reshape %v : tensor<2x1x5x4xf16> -> tensor<2x1x5x4xf16>
// CHECK-NEXT:  [[V_TILED:%.+]] = rlx.concat [[V_FLAT]], [[V_FLAT]], [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64} : (tensor<2x1x5x4xf16>, tensor<2x1x5x4xf16>, tensor<2x1x5x4xf16>, tensor<2x1x5x4xf16>) -> tensor<2x4x5x4xf16>
// CHECK-NEXT:  [[V:%.+]] = rlx.reshape [[V_TILED]] : tensor<2x4x5x4xf16> -> tensor<2x4x5x4xf16>
// CHECK-NEXT:  [[Y:%.+]] = rlx.attention %q, [[K]], [[V]], %bias {mask = "bias", scale = 2.500000e-01 : f32} : (tensor<2x4x3x8xf16>, tensor<2x4x5x8xf16>, tensor<2x4x5x4xf16>, tensor<1x1x3x5xf16>) -> tensor<2x4x3x4xf16>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x4x3x4xf16>
func.func @attention_r4_bias_scale(%q: tensor<2x4x3x8xf16>, %k: tensor<2x1x5x8xf16>, %v: tensor<2x1x5x4xf16>, %bias: tensor<1x1x3x5xf16>) -> tensor<2x4x3x4xf16> {
  %y = rlx.attention %q, %k, %v, %bias {mask = "bias", scale = 2.500000e-01 : f32} : (tensor<2x4x3x8xf16>, tensor<2x1x5x8xf16>, tensor<2x1x5x4xf16>, tensor<1x1x3x5xf16>) -> tensor<2x4x3x4xf16>
  func.return %y : tensor<2x4x3x4xf16>
}

// The query gradient already has H heads: no group sum.
// CHECK-LABEL: func.func @attention_backward_query(
// CHECK-NEXT:  [[K_FLAT:%.+]] = rlx.reshape %k : tensor<2x2x3x8xf32> -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[K_TILED:%.+]] = rlx.concat [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64} : (tensor<4x1x3x8xf32>, tensor<4x1x3x8xf32>) -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[K:%.+]] = rlx.reshape [[K_TILED]] : tensor<4x2x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[V_FLAT:%.+]] = rlx.reshape %v : tensor<2x2x3x8xf32> -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[V_TILED:%.+]] = rlx.concat [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64} : (tensor<4x1x3x8xf32>, tensor<4x1x3x8xf32>) -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[V:%.+]] = rlx.reshape [[V_TILED]] : tensor<4x2x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = rlx.attention_backward %q, [[K]], [[V]], %dy {wrt = "query", mask = "causal"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x4x3x8xf32>
func.func @attention_backward_query(%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x3x8xf32>, %v: tensor<2x2x3x8xf32>, %dy: tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "query", mask = "causal"} : (tensor<2x4x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
  func.return %y : tensor<2x4x3x8xf32>
}

// The key gradient over H heads is summed per group of R = 2 to Hkv = 2.
// CHECK-LABEL: func.func @attention_backward_key(
// CHECK-NEXT:  [[K_FLAT:%.+]] = rlx.reshape %k : tensor<2x2x3x8xf32> -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[K_TILED:%.+]] = rlx.concat [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64} : (tensor<4x1x3x8xf32>, tensor<4x1x3x8xf32>) -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[K:%.+]] = rlx.reshape [[K_TILED]] : tensor<4x2x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[V_FLAT:%.+]] = rlx.reshape %v : tensor<2x2x3x8xf32> -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[V_TILED:%.+]] = rlx.concat [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64} : (tensor<4x1x3x8xf32>, tensor<4x1x3x8xf32>) -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[V:%.+]] = rlx.reshape [[V_TILED]] : tensor<4x2x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[D_K:%.+]] = rlx.attention_backward %q, [[K]], [[V]], %dy {wrt = "key"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[GROUPED:%.+]] = rlx.reshape [[D_K]] : tensor<2x4x3x8xf32> -> tensor<4x2x3x8xf32>
// CHECK-NEXT:  [[SUMMED:%.+]] = rlx.reduce_sum [[GROUPED]] {axes = array<i64: 1>, keep_dims = true} : (tensor<4x2x3x8xf32>) -> tensor<4x1x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = rlx.reshape [[SUMMED]] : tensor<4x1x3x8xf32> -> tensor<2x2x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x2x3x8xf32>
func.func @attention_backward_key(%q: tensor<2x4x3x8xf32>, %k: tensor<2x2x3x8xf32>, %v: tensor<2x2x3x8xf32>, %dy: tensor<2x4x3x8xf32>) -> tensor<2x2x3x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "key"} : (tensor<2x4x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x2x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x2x3x8xf32>
  func.return %y : tensor<2x2x3x8xf32>
}

// The value gradient with R = 4 (Hkv = 1), mask and scale kept.
// CHECK-LABEL: func.func @attention_backward_value(
// CHECK-NEXT:  [[K_FLAT:%.+]] = rlx.reshape %k : tensor<2x1x3x8xf32> -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[K_TILED:%.+]] = rlx.concat [[K_FLAT]], [[K_FLAT]], [[K_FLAT]], [[K_FLAT]] {axis = 1 : i64} : (tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[K:%.+]] = rlx.reshape [[K_TILED]] : tensor<2x4x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[V_FLAT:%.+]] = rlx.reshape %v : tensor<2x1x3x8xf32> -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[V_TILED:%.+]] = rlx.concat [[V_FLAT]], [[V_FLAT]], [[V_FLAT]], [[V_FLAT]] {axis = 1 : i64} : (tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[V:%.+]] = rlx.reshape [[V_TILED]] : tensor<2x4x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[D_V:%.+]] = rlx.attention_backward %q, [[K]], [[V]], %dy {wrt = "value", mask = "causal", scale = 5.000000e-01 : f32} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[GROUPED:%.+]] = rlx.reshape [[D_V]] : tensor<2x4x3x8xf32> -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[SUMMED:%.+]] = rlx.reduce_sum [[GROUPED]] {axes = array<i64: 1>, keep_dims = true} : (tensor<2x4x3x8xf32>) -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  [[Y:%.+]] = rlx.reshape [[SUMMED]] : tensor<2x1x3x8xf32> -> tensor<2x1x3x8xf32>
// CHECK-NEXT:  func.return [[Y]] : tensor<2x1x3x8xf32>
func.func @attention_backward_value(%q: tensor<2x4x3x8xf32>, %k: tensor<2x1x3x8xf32>, %v: tensor<2x1x3x8xf32>, %dy: tensor<2x4x3x8xf32>) -> tensor<2x1x3x8xf32> {
  %y = rlx.attention_backward %q, %k, %v, %dy {wrt = "value", mask = "causal", scale = 5.000000e-01 : f32} : (tensor<2x4x3x8xf32>, tensor<2x1x3x8xf32>, tensor<2x1x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x1x3x8xf32>
  func.return %y : tensor<2x1x3x8xf32>
}

// Hkv = H: already tiled, left unchanged.
// CHECK-LABEL: func.func @already_tiled(
// CHECK-NEXT:  [[Y:%.+]] = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  [[D_K:%.+]] = rlx.attention_backward %q, %k, %v, %dy {wrt = "key"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
// CHECK-NEXT:  func.return [[Y]], [[D_K]] : tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>
func.func @already_tiled(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x3x8xf32>, %v: tensor<2x4x3x8xf32>, %dy: tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
  %dk = rlx.attention_backward %q, %k, %v, %dy {wrt = "key"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> tensor<2x4x3x8xf32>
  func.return %y, %dk : tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>
}
