// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Rotary embedding and its gradient, and scaled dot-product attention:
// masks none / causal / bias, explicit scale, grouped-query attention (H a
// multiple of Hkv), and attention_backward for each wrt (under grouped-query
// attention the key/value gradients have Hkv heads).

// CHECK-LABEL: func.func @rope(
// GENERIC-LABEL: "func.func"() <{sym_name = "rope"
func.func @rope(%x: tensor<1x8x16x64xf32>, %cos: tensor<16x32xf32>, %sin: tensor<16x32xf32>, %h: tensor<2x4x3x8xf16>, %ch: tensor<3x4xf16>, %sh: tensor<3x4xf16>) {
  // CHECK-NEXT: %half = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  // GENERIC: %half = "rlx.rope"(%x, %cos, %sin) <{style = "half"}> : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  %half = rlx.rope %x, %cos, %sin {style = "half"} : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  // CHECK-NEXT: %inter = rlx.rope %h, %ch, %sh {style = "interleaved"} : (tensor<2x4x3x8xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x4x3x8xf16>
  // GENERIC-NEXT: %inter = "rlx.rope"(%h, %ch, %sh) <{style = "interleaved"}> : (tensor<2x4x3x8xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x4x3x8xf16>
  %inter = rlx.rope %h, %ch, %sh {style = "interleaved"} : (tensor<2x4x3x8xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x4x3x8xf16>
  func.return
}

// CHECK-LABEL: func.func @rope_backward(
// GENERIC-LABEL: "func.func"() <{sym_name = "rope_backward"
func.func @rope_backward(%dy: tensor<1x8x16x64xf32>, %cos: tensor<16x32xf32>, %sin: tensor<16x32xf32>) {
  // CHECK-NEXT: %half = rlx.rope_backward %dy, %cos, %sin {style = "half"} : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  // GENERIC: %half = "rlx.rope_backward"(%dy, %cos, %sin) <{style = "half"}> : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  %half = rlx.rope_backward %dy, %cos, %sin {style = "half"} : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  // CHECK-NEXT: %inter = rlx.rope_backward %dy, %cos, %sin {style = "interleaved"} : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  // GENERIC-NEXT: %inter = "rlx.rope_backward"(%dy, %cos, %sin) <{style = "interleaved"}> : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  %inter = rlx.rope_backward %dy, %cos, %sin {style = "interleaved"} : (tensor<1x8x16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<1x8x16x64xf32>
  func.return
}

// CHECK-LABEL: func.func @attention_masks(
// GENERIC-LABEL: "func.func"() <{sym_name = "attention_masks"
func.func @attention_masks(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %bias: tensor<1x1x5x5xf32>, %full: tensor<1x4x5x5xf32>) {
  // CHECK-NEXT: %plain = rlx.attention %q, %k, %v : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC: %plain = "rlx.attention"(%q, %k, %v) : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %plain = rlx.attention %q, %k, %v : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %none = rlx.attention %q, %k, %v {mask = "none"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %none = "rlx.attention"(%q, %k, %v) <{mask = "none"}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %none = rlx.attention %q, %k, %v {mask = "none"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %causal = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %causal = "rlx.attention"(%q, %k, %v) <{mask = "causal"}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %causal = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %biased = rlx.attention %q, %k, %v, %bias {mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %biased = "rlx.attention"(%q, %k, %v, %bias) <{mask = "bias"}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  %biased = rlx.attention %q, %k, %v, %bias {mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %full_bias = rlx.attention %q, %k, %v, %full {mask = "bias", scale = 1.250000e-01 : f32} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %full_bias = "rlx.attention"(%q, %k, %v, %full) <{mask = "bias", scale = 1.250000e-01 : f32}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x16xf32>
  %full_bias = rlx.attention %q, %k, %v, %full {mask = "bias", scale = 1.250000e-01 : f32} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x5xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %scaled = rlx.attention %q, %k, %v {mask = "causal", scale = 5.000000e-01 : f32} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %scaled = "rlx.attention"(%q, %k, %v) <{mask = "causal", scale = 5.000000e-01 : f32}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %scaled = rlx.attention %q, %k, %v {mask = "causal", scale = 5.000000e-01 : f32} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// CHECK-LABEL: func.func @attention_gqa(
// GENERIC-LABEL: "func.func"() <{sym_name = "attention_gqa"
func.func @attention_gqa(%q: tensor<2x8x3x16xf16>, %k: tensor<2x2x7x16xf16>, %v: tensor<2x2x7x16xf16>, %k1: tensor<2x1x7x16xf16>, %v1: tensor<2x1x7x32xf16>) {
  // CHECK-NEXT: %gqa = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<2x8x3x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x7x16xf16>) -> tensor<2x8x3x16xf16>
  // GENERIC: %gqa = "rlx.attention"(%q, %k, %v) <{mask = "causal"}> : (tensor<2x8x3x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x7x16xf16>) -> tensor<2x8x3x16xf16>
  %gqa = rlx.attention %q, %k, %v {mask = "causal"} : (tensor<2x8x3x16xf16>, tensor<2x2x7x16xf16>, tensor<2x2x7x16xf16>) -> tensor<2x8x3x16xf16>
  // CHECK-NEXT: %mqa = rlx.attention %q, %k1, %v1 : (tensor<2x8x3x16xf16>, tensor<2x1x7x16xf16>, tensor<2x1x7x32xf16>) -> tensor<2x8x3x32xf16>
  // GENERIC-NEXT: %mqa = "rlx.attention"(%q, %k1, %v1) : (tensor<2x8x3x16xf16>, tensor<2x1x7x16xf16>, tensor<2x1x7x32xf16>) -> tensor<2x8x3x32xf16>
  %mqa = rlx.attention %q, %k1, %v1 : (tensor<2x8x3x16xf16>, tensor<2x1x7x16xf16>, tensor<2x1x7x32xf16>) -> tensor<2x8x3x32xf16>
  func.return
}

// CHECK-LABEL: func.func @attention_backward(
// GENERIC-LABEL: "func.func"() <{sym_name = "attention_backward"
func.func @attention_backward(%q: tensor<1x4x5x16xf32>, %k: tensor<1x4x5x16xf32>, %v: tensor<1x4x5x16xf32>, %dy: tensor<1x4x5x16xf32>, %bias: tensor<1x1x5x5xf32>) {
  // CHECK-NEXT: %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC: %dq = "rlx.attention_backward"(%q, %k, %v, %dy) <{wrt = "query"}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %dk = rlx.attention_backward %q, %k, %v, %dy {wrt = "key", mask = "causal"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %dk = "rlx.attention_backward"(%q, %k, %v, %dy) <{wrt = "key", mask = "causal"}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %dk = rlx.attention_backward %q, %k, %v, %dy {wrt = "key", mask = "causal"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %dv = rlx.attention_backward %q, %k, %v, %dy {wrt = "value", mask = "none", scale = 2.500000e-01 : f32} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %dv = "rlx.attention_backward"(%q, %k, %v, %dy) <{wrt = "value", mask = "none", scale = 2.500000e-01 : f32}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  %dv = rlx.attention_backward %q, %k, %v, %dy {wrt = "value", mask = "none", scale = 2.500000e-01 : f32} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>) -> tensor<1x4x5x16xf32>
  // CHECK-NEXT: %dqb = rlx.attention_backward %q, %k, %v, %dy, %bias {wrt = "query", mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  // GENERIC-NEXT: %dqb = "rlx.attention_backward"(%q, %k, %v, %dy, %bias) <{wrt = "query", mask = "bias"}> : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  %dqb = rlx.attention_backward %q, %k, %v, %dy, %bias {wrt = "query", mask = "bias"} : (tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x1x5x5xf32>) -> tensor<1x4x5x16xf32>
  func.return
}

// CHECK-LABEL: func.func @attention_backward_gqa(
// GENERIC-LABEL: "func.func"() <{sym_name = "attention_backward_gqa"
func.func @attention_backward_gqa(%q: tensor<2x6x3x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %dy: tensor<2x6x3x8xf32>) {
  // CHECK-NEXT: %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x6x3x8xf32>
  // GENERIC: %dq = "rlx.attention_backward"(%q, %k, %v, %dy) <{wrt = "query", mask = "causal"}> : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x6x3x8xf32>
  %dq = rlx.attention_backward %q, %k, %v, %dy {wrt = "query", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x6x3x8xf32>
  // CHECK-NEXT: %dk = rlx.attention_backward %q, %k, %v, %dy {wrt = "key", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  // GENERIC-NEXT: %dk = "rlx.attention_backward"(%q, %k, %v, %dy) <{wrt = "key", mask = "causal"}> : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  %dk = rlx.attention_backward %q, %k, %v, %dy {wrt = "key", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  // CHECK-NEXT: %dv = rlx.attention_backward %q, %k, %v, %dy {wrt = "value", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  // GENERIC-NEXT: %dv = "rlx.attention_backward"(%q, %k, %v, %dy) <{wrt = "value", mask = "causal"}> : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  %dv = rlx.attention_backward %q, %k, %v, %dy {wrt = "value", mask = "causal"} : (tensor<2x6x3x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x6x3x8xf32>) -> tensor<2x2x4x8xf32>
  func.return
}

// layout = "bhds": the head dimension before the sequence, [B, H, D, S]; the RoPE tables stay [S, D/2].
// CHECK-LABEL: func.func @bhds(
// GENERIC-LABEL: "func.func"() <{sym_name = "bhds"
func.func @bhds(%x: tensor<1x2x8x3xf32>, %g: tensor<1x2x8x1xf32>, %dy: tensor<1x2x8x3xf32>, %cos: tensor<3x4xf32>, %sin: tensor<3x4xf32>, %v: tensor<1x2x5x3xf32>) {
  // CHECK-NEXT: %r = rlx.rope %x, %cos, %sin {style = "half", layout = "bhds"} : (tensor<1x2x8x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x8x3xf32>
  // GENERIC: %r = "rlx.rope"(%x, %cos, %sin) <{style = "half", layout = "bhds"}> : (tensor<1x2x8x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x8x3xf32>
  %r = rlx.rope %x, %cos, %sin {style = "half", layout = "bhds"} : (tensor<1x2x8x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x8x3xf32>
  // CHECK-NEXT: %rb = rlx.rope_backward %x, %cos, %sin {style = "interleaved", layout = "bhds"} : (tensor<1x2x8x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x8x3xf32>
  // GENERIC-NEXT: %rb = "rlx.rope_backward"(%x, %cos, %sin) <{style = "interleaved", layout = "bhds"}> : (tensor<1x2x8x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x8x3xf32>
  %rb = rlx.rope_backward %x, %cos, %sin {style = "interleaved", layout = "bhds"} : (tensor<1x2x8x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x8x3xf32>
  // CHECK-NEXT: %a = rlx.attention %x, %x, %v {layout = "bhds", mask = "causal"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  // GENERIC-NEXT: %a = "rlx.attention"(%x, %x, %v) <{layout = "bhds", mask = "causal"}> : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  %a = rlx.attention %x, %x, %v {layout = "bhds", mask = "causal"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x5x3xf32>
  // CHECK-NEXT: %ab = rlx.attention_backward %x, %x, %v, %a {layout = "bhds", wrt = "key"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x8x3xf32>
  // GENERIC-NEXT: %ab = "rlx.attention_backward"(%x, %x, %v, %a) <{layout = "bhds", wrt = "key"}> : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x8x3xf32>
  %ab = rlx.attention_backward %x, %x, %v, %a {layout = "bhds", wrt = "key"} : (tensor<1x2x8x3xf32>, tensor<1x2x8x3xf32>, tensor<1x2x5x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x8x3xf32>
  func.return
}
