// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s

// mil-fp16, epsilons (passes/fp16.py): in fp16 an epsilon below ~3e-8 rounds
// to 0 and one below 1e-7 is a one- or two-ulp subnormal, so log, rsqrt,
// inverse and layer_norm epsilons below 1e-7 (MIL's defaults included: log
// 1e-45, rsqrt 1e-12) become 1e-7. Epsilons of 1e-7 and above stay: RMSNorm's
// 1e-6, layer_norm's 1e-5, inverse's default 1e-4.

// The lowering's "no epsilon" log and rsqrt (1e-45), and absent epsilons
// whose MIL default is below 1e-7.
// CHECK-LABEL: func.func @raised(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
// CHECK-NEXT:  %a = mil.log %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
// CHECK-NEXT:  %b = mil.log %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
// CHECK-NEXT:  %c = mil.rsqrt %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
// CHECK-NEXT:  %d = mil.rsqrt %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
// CHECK-NEXT:  %e = mil.inverse %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
// CHECK-NEXT:  func.return %a, %b, %c, %d, %e
func.func @raised(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = mil.log %x {epsilon = 1.0e-45 : f32} : tensor<4xf32>
  %b = mil.log %x : tensor<4xf32>
  %c = mil.rsqrt %x {epsilon = 1.0e-45 : f32} : tensor<4xf32>
  %d = mil.rsqrt %x : tensor<4xf32>
  %e = mil.inverse %x {epsilon = 1.0e-09 : f32} : tensor<4xf32>
  func.return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// RMSNorm's 1e-6 and other epsilons >= 1e-7 stay, as do absent ones whose
// default is large enough.
// CHECK-LABEL: func.func @kept(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
// CHECK-NEXT:  %a = mil.rsqrt %x {epsilon = 1.000000e-06 : f32} : tensor<4xf16>
// CHECK-NEXT:  %b = mil.log %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
// CHECK-NEXT:  %c = mil.inverse %x : tensor<4xf16>
// CHECK-NEXT:  %d = mil.log %x {epsilon = 1.000000e-03 : f32} : tensor<4xf16>
// CHECK-NEXT:  func.return %a, %b, %c, %d
func.func @kept(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = mil.rsqrt %x {epsilon = 1.0e-06 : f32} : tensor<4xf32>
  %b = mil.log %x {epsilon = 1.0e-07 : f32} : tensor<4xf32>
  %c = mil.inverse %x : tensor<4xf32>
  %d = mil.log %x {epsilon = 1.0e-03 : f32} : tensor<4xf32>
  func.return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// layer_norm: a tiny epsilon is raised, the default (1e-5) stays absent.
// CHECK-LABEL: func.func @layer_norm(%x: tensor<2x3xf16>) -> (tensor<2x3xf16>, tensor<2x3xf16>) {
// CHECK-NEXT:  %a = mil.layer_norm %x {axes = array<i64: -1>, epsilon = 1.000000e-07 : f32} : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  %b = mil.layer_norm %x {axes = array<i64: -1>} : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:  func.return %a, %b
func.func @layer_norm(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = mil.layer_norm %x {axes = array<i64: -1>, epsilon = 1.0e-12 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = mil.layer_norm %x {axes = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// Programs already in fp16 get the same treatment.
// CHECK-LABEL: func.func @f16_input(%x: tensor<4xf16>) -> tensor<4xf16> {
// CHECK-NEXT:  %a = mil.log %x {epsilon = 1.000000e-07 : f32} : tensor<4xf16>
func.func @f16_input(%x: tensor<4xf16>) -> tensor<4xf16> {
  %a = mil.log %x {epsilon = 1.0e-45 : f32} : tensor<4xf16>
  func.return %a : tensor<4xf16>
}
