// RUN: xdsl-opt %s -p mil-ane-layout | filecheck %s
// RUN: xdsl-opt %s -p 'mil-ane-layout{weights=dynamic}' | filecheck %s --check-prefix=DYN

// Elementwise ops, a [C] broadcast operand and a channel reduction with kept
// dims run on the [1, C, 1, S] form; nothing is converted.
// CHECK-LABEL: func.func @rms_scale(%x: tensor<1x8x1x4xf32>, %g: tensor<1x8x1x1xf32>) -> tensor<1x8x1x4xf32>
// CHECK-SAME: ane.arg_layouts = [#ane.layout<bsc, logical = [1, 4, 8], ane = [1, 8, 1, 4]>, #ane.layout<c, logical = [8], ane = [1, 8, 1, 1]>]
// CHECK-SAME: ane.result_layouts = [#ane.layout<bsc, 
// CHECK-NEXT: %[[M:.*]] = mil.mul %x, %g : (tensor<1x8x1x4xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x4xf32>
// CHECK-NEXT: %[[R:.*]] = mil.reduce_mean %[[M]] {axes = array<i64: 1>, keep_dims = true} : (tensor<1x8x1x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NEXT: %[[S:.*]] = mil.sub %[[M]], %[[R]] : (tensor<1x8x1x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x8x1x4xf32>
// CHECK-NEXT: func.return %[[S]] : tensor<1x8x1x4xf32>
func.func @rms_scale(%x: tensor<1x4x8xf32>, %g: tensor<8xf32>) -> tensor<1x4x8xf32> {
  %0 = mil.mul %x, %g : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %1 = mil.reduce_mean %0 {axes = array<i64: -1>, keep_dims = true} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %2 = mil.sub %0, %1 : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  func.return %2 : tensor<1x4x8xf32>
}

// x·Wᵀ with W [Cout, Cin] from the weights file: a 1×1 conv whose weight
// views the same tensor as [Cout, Cin, 1, 1] (static); with dynamic weights
// W becomes an argument [1, Cin, 1, Cout] and the product is computed
// transposed, yᵀ = W·xᵀ: reshapes of x and W, one matmul with transpose_x,
// and the reshape of [1, 1, Cout, S] to the result's form.
// CHECK-LABEL: func.func @linear(%x: tensor<1x8x1x4xf32>) -> tensor<1x6x1x4xf32>
// CHECK-NEXT: %[[W:.*]] = mil.const weight "w" {weight_shape = array<i64: 6, 8>} : tensor<6x8x1x1xf32>
// CHECK-NEXT: %[[C:.*]] = mil.conv %x, %[[W]] : (tensor<1x8x1x4xf32>, tensor<6x8x1x1xf32>) -> tensor<1x6x1x4xf32>
// CHECK-NEXT: func.return %[[C]] : tensor<1x6x1x4xf32>
// DYN-LABEL: func.func @linear(%x: tensor<1x8x1x4xf32>, %w: tensor<1x8x1x6xf32>) -> tensor<1x6x1x4xf32>
// DYN-SAME: ane.weight_args = [#ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cin]>]
// DYN-NEXT: %[[XS:.*]] = mil.reshape %x {shape = array<i64: 1, 1, 8, 4>} : (tensor<1x8x1x4xf32>) -> tensor<1x1x8x4xf32>
// DYN-NEXT: %[[WS:.*]] = mil.reshape %w {shape = array<i64: 1, 1, 8, 6>} : (tensor<1x8x1x6xf32>) -> tensor<1x1x8x6xf32>
// DYN-NEXT: %[[MM:.*]] = mil.matmul %[[WS]], %[[XS]] {transpose_x = true, transpose_y = false} : (tensor<1x1x8x6xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x6x4xf32>
// DYN-NEXT: %[[Y:.*]] = mil.reshape %[[MM]] {shape = array<i64: 1, 6, 1, 4>} : (tensor<1x1x6x4xf32>) -> tensor<1x6x1x4xf32>
// DYN-NEXT: func.return %[[Y]] : tensor<1x6x1x4xf32>
func.func @linear(%x: tensor<1x4x8xf32>) -> tensor<1x4x6xf32> {
  %w = mil.const weight "w" : tensor<6x8xf32>
  %0 = mil.matmul %x, %w {transpose_y = true} : (tensor<1x4x8xf32>, tensor<6x8xf32>) -> tensor<1x4x6xf32>
  func.return %0 : tensor<1x4x6xf32>
}

// A head split [1, S, H·D] -> [1, H, S, D] keeps the ANE element order
// (channel h·D + d at position s): it costs no op.
// CHECK-LABEL: func.func @heads(%x: tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32>
// CHECK-SAME: ane.result_layouts = [#ane.layout<bhsd, logical = [1, 2, 4, 4], ane = [1, 8, 1, 4]>]
// CHECK-NEXT: func.return %x : tensor<1x8x1x4xf32>
func.func @heads(%x: tensor<1x4x8xf32>) -> tensor<1x2x4x4xf32> {
  %0 = mil.reshape %x {shape = array<i64: 1, 4, 2, 4>} : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %1 = mil.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %1 : tensor<1x2x4x4xf32>
}

// Attention reads [1, H, S, D] in logical form: the head-shaped argument is
// converted back (reshape, transpose) before the matmuls, and the result
// laid out again.
// CHECK-LABEL: func.func @scores(%q: tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32>
// CHECK-NEXT: %[[A:.*]] = mil.reshape %q {shape = array<i64: 1, 2, 4, 4>} : (tensor<1x8x1x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[B:.*]] = mil.transpose %[[A]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[S:.*]] = mil.matmul %[[B]], %[[B]] {transpose_x = false, transpose_y = true} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[T:.*]] = mil.transpose %[[S]] {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT: %[[R:.*]] = mil.reshape %[[T]] {shape = array<i64: 1, 8, 1, 4>} : (tensor<1x2x4x4xf32>) -> tensor<1x8x1x4xf32>
// CHECK-NEXT: func.return %[[R]] : tensor<1x8x1x4xf32>
func.func @scores(%q: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %0 = mil.matmul %q, %q {transpose_x = false, transpose_y = true} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}

// The returned values are replaced by their ANE forms, so their names are
// recorded first (`ane.result_names`: the hint, else `output_i`); names
// recorded already are kept.
// CHECK-LABEL: func.func @named(%x: tensor<1x8x1x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>)
// CHECK-SAME: ane.result_names = ["logits", "output_1"]
// CHECK-LABEL: func.func @recorded(%x: tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32>
// CHECK-SAME: ane.result_names = ["next_token"]
func.func @named(%x: tensor<1x4x8xf32>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>) {
  %logits = mil.relu %x : tensor<1x4x8xf32>
  %0 = mil.sigmoid %x : tensor<1x4x8xf32>
  func.return %logits, %0 : tensor<1x4x8xf32>, tensor<1x4x8xf32>
}
func.func @recorded(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {ane.result_names = ["next_token"]} {
  %y = mil.relu %x : tensor<1x4x8xf32>
  func.return %y : tensor<1x4x8xf32>
}

// A cumsum of an [S, C] value runs on its [1, C, 1, S] form along the axis
// its axis becomes there: the channels (logical 1) at axis 1, the sequence
// (logical 0, MIL's default) at axis 3; exclusive and reverse stay.
// CHECK-LABEL: func.func @cumsum(%x: tensor<1x8x1x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>)
// CHECK-NEXT: %[[R:.*]] = mil.relu %x : tensor<1x8x1x4xf32>
// CHECK-NEXT: %[[C:.*]] = mil.cumsum %[[R]] {axis = 1 : i64} : tensor<1x8x1x4xf32>
// CHECK-NEXT: %[[S:.*]] = mil.cumsum %[[R]] {axis = 3 : i64, exclusive = true, reverse = true} : tensor<1x8x1x4xf32>
// CHECK-NEXT: func.return %[[C]], %[[S]] : tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>
func.func @cumsum(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = mil.relu %x : tensor<4x8xf32>
  %1 = mil.cumsum %0 {axis = -1 : i64} : tensor<4x8xf32>
  %2 = mil.cumsum %0 {exclusive = true, reverse = true} : tensor<4x8xf32>
  func.return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}
