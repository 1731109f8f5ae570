// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics | filecheck %s
// RUN: xdsl-opt %s -p ane-lint --verify-diagnostics 2>&1 >/dev/null | filecheck %s --check-prefix=ALL

// A dimension above 65536 is an error on every ANE: here Qwen3's vocabulary
// (151936) as the channel axis of an LM head. The suggestion is to split the
// axis into chunks of at most 16384 (10 of them).

// CHECK:      ane-lint: error: @lm_head: mil.const (%w): tensor<151936x64x1x1xf16>: axis 0 has size 151936, above 65536, the limit even of newer ANEs; split axis 0 into 10 chunks of ≤ 16384
// CHECK-NEXT: ane-lint: 1 function, 1 op, 2 errors, 0 warnings
// CHECK-NOT:  builtin.module

// ALL:      ane-lint: error: @lm_head: mil.const (%w): tensor<151936x64x1x1xf16>: axis 0 has size 151936, above 65536, the limit even of newer ANEs; split axis 0 into 10 chunks of ≤ 16384
// ALL-NEXT: ane-lint: error: @lm_head: mil.conv (%logits): tensor<1x151936x1x8xf16>: axis 1 has size 151936, above 65536, the limit even of newer ANEs; split axis 1 into 10 chunks of ≤ 16384
// ALL-NEXT: ane-lint: 1 function, 1 op, 2 errors, 0 warnings

func.func @lm_head(%h: tensor<1x64x1x8xf16>) -> tensor<1x151936x1x8xf16> {
  %w = mil.const weight "lm_head.weight" : tensor<151936x64x1x1xf16>
  %logits = mil.conv %h, %w : (tensor<1x64x1x8xf16>, tensor<151936x64x1x1xf16>) -> tensor<1x151936x1x8xf16>
  func.return %logits : tensor<1x151936x1x8xf16>
}
