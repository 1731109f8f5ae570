// RUN: xdsl-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Verifier errors of rlx.rope, rlx.rope_backward, rlx.attention and
// rlx.attention_backward.

// Rotary embedding rotates pairs, so the head dimension D must be even.
// CHECK: Operation does not verify: rlx.rope: operand 'input' [1, 2, 4, 7] needs an even head dimension
func.func @rope_odd_head_dim(%x: tensor<1x2x4x7xf32>, %cos: tensor<4x3xf32>, %sin: tensor<4x3xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x2x4x7xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<1x2x4x7xf32>
  func.return
}

// -----

// cos and sin are [S, D/2].
// CHECK: Operation does not verify: rlx.rope: operand 'cos' [4, 8] must be [4, 4] for operand 'input' [1, 2, 4, 8]
func.func @rope_cos_shape(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x4xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope: operand 'sin' [16, 4] must be [4, 4] for operand 'input' [1, 2, 4, 8]
func.func @rope_sin_seq(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<16x4xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "interleaved"} : (tensor<1x2x4x8xf32>, tensor<4x4xf32>, tensor<16x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope: property 'style' is "neox", expected one of "half", "interleaved"
func.func @rope_bad_style(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "neox"} : (tensor<1x2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'style' expected in operation 'rlx.rope'
func.func @rope_missing_style(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) {
  %y = rlx.rope %x, %cos, %sin : (tensor<1x2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope: operand 'input' must have rank 4, got shape [2, 4, 8]
func.func @rope_rank3(%x: tensor<2x4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope: operands 'input' (f16) and 'cos' (f32) must have the same element type
func.func @rope_table_element(%x: tensor<1x2x4x8xf16>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x2x4x8xf16>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope_backward: property 'style' is "rotate_half", expected one of "half", "interleaved"
func.func @rope_backward_bad_style(%dy: tensor<1x2x4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) {
  %dx = rlx.rope_backward %dy, %cos, %sin {style = "rotate_half"} : (tensor<1x2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope_backward: operand 'cos' [4, 8] must be [4, 4] for operand 'd_out' [1, 2, 4, 8]
func.func @rope_backward_cos_shape(%dy: tensor<1x2x4x8xf32>, %cos: tensor<4x8xf32>, %sin: tensor<4x8xf32>) {
  %dx = rlx.rope_backward %dy, %cos, %sin {style = "half"} : (tensor<1x2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.rope_backward: operand 'd_out' [1, 2, 4, 5] needs an even head dimension
func.func @rope_backward_odd_head_dim(%dy: tensor<1x2x4x5xf32>, %cos: tensor<4x2xf32>, %sin: tensor<4x2xf32>) {
  %dx = rlx.rope_backward %dy, %cos, %sin {style = "interleaved"} : (tensor<1x2x4x5xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<1x2x4x5xf32>
  func.return
}

// -----

// Grouped-query attention needs H (6) to be a multiple of Hkv (4).
// CHECK: Operation does not verify: rlx.attention: query heads (6, operand 'q') must be a multiple of key/value heads (4, operand 'k') for grouped-query attention
func.func @attention_heads(%q: tensor<1x6x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<1x6x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x6x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: mask "bias" needs the operand 'bias'
func.func @attention_bias_missing(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v {mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'bias' is given but mask is "none" (expected "bias")
func.func @attention_bias_with_none(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %b: tensor<1x1x5x5xf32>) {
  %y = rlx.attention %q, %k, %v, %b {mask = "none"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// Without a mask property the mask is "none".
// CHECK: Operation does not verify: rlx.attention: operand 'bias' is given but mask is "none" (expected "bias")
func.func @attention_bias_default_mask(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %b: tensor<1x1x5x5xf32>) {
  %y = rlx.attention %q, %k, %v, %b : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'bias' is given but mask is "causal" (expected "bias")
func.func @attention_bias_with_causal(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %b: tensor<1x1x5x5xf32>) {
  %y = rlx.attention %q, %k, %v, %b {mask = "causal"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: property 'mask' is "upper", expected one of "none", "causal", "bias"
func.func @attention_bad_mask(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v {mask = "upper"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// The bias must broadcast to the scores [B, H, S, Skv] = [1, 4, 5, 5].
// CHECK: Operation does not verify: rlx.attention: operand 'bias' [2, 1, 5, 5] does not broadcast to the scores [1, 4, 5, 5]
func.func @attention_bias_grows_scores(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %b: tensor<2x1x5x5xf32>) {
  %y = rlx.attention %q, %k, %v, %b {mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<2x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'k' [1, 4, 5, 8] must be [1, Hkv, Skv, 16] for operand 'q' [1, 4, 5, 16]
func.func @attention_key_head_dim(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<1x4x5x16xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'v' [1, 4, 6, 16] must be [1, 4, 5, Dv] for operand 'k' [1, 4, 5, 16]
func.func @attention_value_seq(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x6x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x6x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'k' [1, 4, 5, 16] must be [2, Hkv, Skv, 16] for operand 'q' [2, 4, 5, 16]
func.func @attention_batch(%q: tensor<2x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<2x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<2x4x5x16xf32>
  func.return
}

// -----

// Under grouped-query attention the output has the query heads (8), not Hkv.
// CHECK: Operation does not verify: rlx.attention: result type [1, 2, 5, 16] f16 does not match the inferred type [1, 8, 5, 16] f16
func.func @attention_gqa_result(%q: tensor<1x8x5x16xf16>, %k: tensor<1x2x5x16xf16>, %v: tensor<1x2x5x16xf16>) {
  %y = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x8x5x16xf16>, tensor<1x2x5x16xf16>, tensor<1x2x5x16xf16>) -> tensor<1x2x5x16xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'q' must have rank 4, got shape [4, 5, 16]
func.func @attention_rank3(%q: tensor<4x5x16xf32>, %k: tensor<4x5x16xf32>, %v: tensor<4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<4x5x16xf32>, tensor<4x5x16xf32>, tensor<4x5x16xf32>) -> tensor<4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operands 'q' (f16) and 'k' (f32) must have the same element type
func.func @attention_element(%q: tensor<1x4x5x16xf16>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<1x4x5x16xf16>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf16>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention: operand 'q' has a dynamic shape tensor<1x4x?x16xf32>; only static shapes are supported
func.func @attention_dynamic(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>) {
  %y = rlx.attention %q, %k, %v : (tensor<1x4x?x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x?x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention_backward: property 'wrt' is "q", expected one of "query", "key", "value"
func.func @attention_backward_bad_wrt(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %dy: tensor<1x4x5x16xf32>) {
  %g = rlx.attention_backward %q, %k, %v, %dy {wrt = "q"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: property 'wrt' expected in operation 'rlx.attention_backward'
func.func @attention_backward_missing_wrt(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %dy: tensor<1x4x5x16xf32>) {
  %g = rlx.attention_backward %q, %k, %v, %dy : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// Under grouped-query attention the key gradient has the key's Hkv = 2 heads,
// summed over the query heads that share each key head.
// CHECK: Operation does not verify: rlx.attention_backward: result type [2, 6, 4, 8] f32 does not match the inferred type [2, 2, 4, 8] f32
func.func @attention_backward_gqa_key_result(%q: tensor<2x6x3x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %dy: tensor<2x6x3x8xf32>) {
  %dk = rlx.attention_backward %q, %k, %v, %dy {wrt = "key", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x6x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention_backward: result type [2, 2, 4, 8] f32 does not match the inferred type [2, 6, 3, 8] f32
func.func @attention_backward_gqa_query_result(%q: tensor<2x6x3x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %dy: tensor<2x6x3x8xf32>) {
  %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  func.return
}

// -----

// d_out has the attention output's shape [B, H, S, Dv].
// CHECK: Operation does not verify: rlx.attention_backward: operand 'd_out' [2, 2, 3, 8] must be [2, 6, 3, 8], the attention output shape
func.func @attention_backward_d_out(%q: tensor<2x6x3x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %dy: tensor<2x2x3x8xf32>) {
  %dv = rlx.attention_backward %q, %k, %v, %dy {wrt = "value"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x3x8xf32>) -> tensor<2x2x4x8xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention_backward: query heads (6, operand 'q') must be a multiple of key/value heads (4, operand 'k') for grouped-query attention
func.func @attention_backward_heads(%q: tensor<1x6x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %dy: tensor<1x6x5x16xf32>) {
  %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query"} : (tensor<1x6x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x6x5x16xf32>) -> tensor<1x6x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention_backward: mask "bias" needs the operand 'bias'
func.func @attention_backward_bias_missing(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %dy: tensor<1x4x5x16xf32>) {
  %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query", mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// CHECK: Operation does not verify: rlx.attention_backward: property 'mask' is "Causal", expected one of "none", "causal", "bias"
func.func @attention_backward_bad_mask(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %dy: tensor<1x4x5x16xf32>) {
  %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query", mask = "Causal"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// -----

// The layout is "bhsd" or "bhds".
// CHECK: Operation does not verify: rlx.rope: property 'layout' is "bshd", expected one of "bhsd", "bhds"
func.func @rope_bad_layout(%x: tensor<1x2x4x8xf32>, %cos: tensor<4x4xf32>, %sin: tensor<4x4xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "half", layout = "bshd"} : (tensor<1x2x4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x8xf32>
  func.return
}


// -----

// In "bhds" the input is [B, H, D, S]; the tables stay [S, D/2].
// CHECK: Operation does not verify: rlx.rope: operand 'cos' [8, 2] must be [4, 4] for operand 'input' [1, 2, 8, 4]
func.func @rope_bhds_tables(%x: tensor<1x2x8x4xf32>, %cos: tensor<8x2xf32>, %sin: tensor<8x2xf32>) {
  %y = rlx.rope %x, %cos, %sin {style = "half", layout = "bhds"} : (tensor<1x2x8x4xf32>, tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<1x2x8x4xf32>
  func.return
}


// -----

// In "bhds" k is [B, Hkv, D, Skv]: its D must be q's (axis 2).
// CHECK: Operation does not verify: rlx.attention: operand 'k' [1, 2, 4, 8] must be [1, Hkv, 8, Skv] for operand 'q' [1, 2, 8, 4]
func.func @attention_bhds_k(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x8x4xf32>) {
  %y = rlx.attention %q, %k, %v {layout = "bhds"} : (tensor<1x2x8x4xf32>, tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  func.return
}

