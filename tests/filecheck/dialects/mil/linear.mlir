// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Linear algebra: matmul (transposes, batch broadcasting, a rank-1 x),
// linear (const weight, optional bias) and conv (pad types, strides,
// dilations, groups, 1 to 3 spatial axes, optional bias).

// CHECK-LABEL: func.func @matmul(
// GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %bt: tensor<5x4xf32>, %c: tensor<6x1x4x5xf16>, %d: tensor<3x4x5xf16>, %v: tensor<4xf32>, %i: tensor<2x3xi32>) {
  // CHECK-NEXT: %plain = mil.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  // GENERIC: %plain = "mil.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %plain = mil.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  // CHECK-NEXT: %transposed = mil.matmul %a, %bt {transpose_y = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  // GENERIC-NEXT: %transposed = "mil.matmul"(%a, %bt) <{transpose_y = true}> : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %transposed = mil.matmul %a, %bt {transpose_y = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  // CHECK-NEXT: %both = mil.matmul %b, %a {transpose_x = true, transpose_y = true} : (tensor<4x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x3xf32>
  // GENERIC-NEXT: %both = "mil.matmul"(%b, %a) <{transpose_x = true, transpose_y = true}> : (tensor<4x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x3xf32>
  %both = mil.matmul %b, %a {transpose_x = true, transpose_y = true} : (tensor<4x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x3xf32>
  // CHECK-NEXT: %batched = mil.matmul %d, %c {transpose_y = true} : (tensor<3x4x5xf16>, tensor<6x1x4x5xf16>) -> tensor<6x3x4x4xf16>
  // GENERIC-NEXT: %batched = "mil.matmul"(%d, %c) <{transpose_y = true}> : (tensor<3x4x5xf16>, tensor<6x1x4x5xf16>) -> tensor<6x3x4x4xf16>
  %batched = mil.matmul %d, %c {transpose_y = true} : (tensor<3x4x5xf16>, tensor<6x1x4x5xf16>) -> tensor<6x3x4x4xf16>
  // CHECK-NEXT: %vector = mil.matmul %v, %b : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  // GENERIC-NEXT: %vector = "mil.matmul"(%v, %b) : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  %vector = mil.matmul %v, %b : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  // CHECK-NEXT: %int = mil.matmul %i, %i {transpose_y = false, transpose_x = true} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<3x3xi32>
  // GENERIC-NEXT: %int = "mil.matmul"(%i, %i) <{transpose_y = false, transpose_x = true}> : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<3x3xi32>
  %int = mil.matmul %i, %i {transpose_y = false, transpose_x = true} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<3x3xi32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @linear(
// GENERIC-LABEL: "func.func"() <{sym_name = "linear"
func.func @linear(%x: tensor<2x16x8xf16>, %v: tensor<8xf32>) {
  // CHECK-NEXT: %w = mil.const weight "fc.weight" : tensor<4x8xf16>
  // GENERIC: %w = "mil.const"() <{weight = "fc.weight"}> : () -> tensor<4x8xf16>
  %w = mil.const weight "fc.weight" : tensor<4x8xf16>
  // CHECK-NEXT: %b = mil.const weight "fc.bias" : tensor<4xf16>
  // GENERIC-NEXT: %b = "mil.const"() <{weight = "fc.bias"}> : () -> tensor<4xf16>
  %b = mil.const weight "fc.bias" : tensor<4xf16>
  // CHECK-NEXT: %w32 = mil.const weight "fc32.weight" : tensor<4x8xf32>
  // GENERIC-NEXT: %w32 = "mil.const"() <{weight = "fc32.weight"}> : () -> tensor<4x8xf32>
  %w32 = mil.const weight "fc32.weight" : tensor<4x8xf32>
  // CHECK-NEXT: %with_bias = mil.linear %x, %w, bias %b : (tensor<2x16x8xf16>, tensor<4x8xf16>, tensor<4xf16>) -> tensor<2x16x4xf16>
  // GENERIC-NEXT: %with_bias = "mil.linear"(%x, %w, %b) : (tensor<2x16x8xf16>, tensor<4x8xf16>, tensor<4xf16>) -> tensor<2x16x4xf16>
  %with_bias = mil.linear %x, %w, bias %b : (tensor<2x16x8xf16>, tensor<4x8xf16>, tensor<4xf16>) -> tensor<2x16x4xf16>
  // CHECK-NEXT: %no_bias = mil.linear %v, %w32 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
  // GENERIC-NEXT: %no_bias = "mil.linear"(%v, %w32) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
  %no_bias = mil.linear %v, %w32 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %mixed = mil.linear %x, %w32 : (tensor<2x16x8xf16>, tensor<4x8xf32>) -> tensor<2x16x4xf16>
  // GENERIC-NEXT: %mixed = "mil.linear"(%x, %w32) : (tensor<2x16x8xf16>, tensor<4x8xf32>) -> tensor<2x16x4xf16>
  %mixed = mil.linear %x, %w32 : (tensor<2x16x8xf16>, tensor<4x8xf32>) -> tensor<2x16x4xf16>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @conv(
// GENERIC-LABEL: "func.func"() <{sym_name = "conv"
func.func @conv(%x: tensor<1x8x1x16xf16>, %img: tensor<2x4x9x9xf32>, %seq: tensor<1x4x10xf32>, %vol: tensor<1x2x4x4x4xf32>, %w_dyn: tensor<6x4x3x3xf32>) {
  // CHECK-NEXT: %w = mil.const weight "proj" : tensor<32x8x1x1xf16>
  // GENERIC: %w = "mil.const"() <{weight = "proj"}> : () -> tensor<32x8x1x1xf16>
  %w = mil.const weight "proj" : tensor<32x8x1x1xf16>
  // CHECK-NEXT: %b = mil.const weight "proj.bias" : tensor<32xf16>
  // GENERIC-NEXT: %b = "mil.const"() <{weight = "proj.bias"}> : () -> tensor<32xf16>
  %b = mil.const weight "proj.bias" : tensor<32xf16>
  // CHECK-NEXT: %pointwise = mil.conv %x, %w, bias %b : (tensor<1x8x1x16xf16>, tensor<32x8x1x1xf16>, tensor<32xf16>) -> tensor<1x32x1x16xf16>
  // GENERIC-NEXT: %pointwise = "mil.conv"(%x, %w, %b) : (tensor<1x8x1x16xf16>, tensor<32x8x1x1xf16>, tensor<32xf16>) -> tensor<1x32x1x16xf16>
  %pointwise = mil.conv %x, %w, bias %b : (tensor<1x8x1x16xf16>, tensor<32x8x1x1xf16>, tensor<32xf16>) -> tensor<1x32x1x16xf16>
  // CHECK-NEXT: %valid = mil.conv %img, %w_dyn {pad_type = "valid"} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x7x7xf32>
  // GENERIC-NEXT: %valid = "mil.conv"(%img, %w_dyn) <{pad_type = "valid"}> : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x7x7xf32>
  %valid = mil.conv %img, %w_dyn {pad_type = "valid"} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x7x7xf32>
  // CHECK-NEXT: %same = mil.conv %img, %w_dyn {pad_type = "same", strides = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
  // GENERIC-NEXT: %same = "mil.conv"(%img, %w_dyn) <{pad_type = "same", strides = array<i64: 2, 2>}> : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
  %same = mil.conv %img, %w_dyn {pad_type = "same", strides = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
  // CHECK-NEXT: %same_lower = mil.conv %img, %w_dyn {pad_type = "same_lower"} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x9x9xf32>
  // GENERIC-NEXT: %same_lower = "mil.conv"(%img, %w_dyn) <{pad_type = "same_lower"}> : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x9x9xf32>
  %same_lower = mil.conv %img, %w_dyn {pad_type = "same_lower"} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x9x9xf32>
  // CHECK-NEXT: %custom = mil.conv %img, %w_dyn {pad_type = "custom", pad = array<i64: 1, 0, 2, 2>, strides = array<i64: 1, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x4xf32>
  // GENERIC-NEXT: %custom = "mil.conv"(%img, %w_dyn) <{pad_type = "custom", pad = array<i64: 1, 0, 2, 2>, strides = array<i64: 1, 3>}> : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x4xf32>
  %custom = mil.conv %img, %w_dyn {pad_type = "custom", pad = array<i64: 1, 0, 2, 2>, strides = array<i64: 1, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x4xf32>
  // CHECK-NEXT: %wd = mil.const weight "dilated" : tensor<6x4x3x3xf32>
  // GENERIC-NEXT: %wd = "mil.const"() <{weight = "dilated"}> : () -> tensor<6x4x3x3xf32>
  %wd = mil.const weight "dilated" : tensor<6x4x3x3xf32>
  // CHECK-NEXT: %dilated = mil.conv %img, %wd {dilations = array<i64: 2, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x3xf32>
  // GENERIC-NEXT: %dilated = "mil.conv"(%img, %wd) <{dilations = array<i64: 2, 3>}> : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x3xf32>
  %dilated = mil.conv %img, %wd {dilations = array<i64: 2, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x3xf32>
  // CHECK-NEXT: %wg = mil.const weight "grouped" : tensor<6x2x3x3xf32>
  // GENERIC-NEXT: %wg = "mil.const"() <{weight = "grouped"}> : () -> tensor<6x2x3x3xf32>
  %wg = mil.const weight "grouped" : tensor<6x2x3x3xf32>
  // CHECK-NEXT: %grouped = mil.conv %img, %wg {groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x7xf32>
  // GENERIC-NEXT: %grouped = "mil.conv"(%img, %wg) <{groups = 2 : i64}> : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x7xf32>
  %grouped = mil.conv %img, %wg {groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x7xf32>
  // CHECK-NEXT: %w1 = mil.const weight "conv1d" : tensor<3x4x3xf32>
  // GENERIC-NEXT: %w1 = "mil.const"() <{weight = "conv1d"}> : () -> tensor<3x4x3xf32>
  %w1 = mil.const weight "conv1d" : tensor<3x4x3xf32>
  // CHECK-NEXT: %conv1d = mil.conv %seq, %w1 {pad_type = "same"} : (tensor<1x4x10xf32>, tensor<3x4x3xf32>) -> tensor<1x3x10xf32>
  // GENERIC-NEXT: %conv1d = "mil.conv"(%seq, %w1) <{pad_type = "same"}> : (tensor<1x4x10xf32>, tensor<3x4x3xf32>) -> tensor<1x3x10xf32>
  %conv1d = mil.conv %seq, %w1 {pad_type = "same"} : (tensor<1x4x10xf32>, tensor<3x4x3xf32>) -> tensor<1x3x10xf32>
  // CHECK-NEXT: %w3 = mil.const weight "conv3d" : tensor<5x2x2x2x2xf32>
  // GENERIC-NEXT: %w3 = "mil.const"() <{weight = "conv3d"}> : () -> tensor<5x2x2x2x2xf32>
  %w3 = mil.const weight "conv3d" : tensor<5x2x2x2x2xf32>
  // CHECK-NEXT: %conv3d = mil.conv %vol, %w3 {strides = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xf32>, tensor<5x2x2x2x2xf32>) -> tensor<1x5x2x2x2xf32>
  // GENERIC-NEXT: %conv3d = "mil.conv"(%vol, %w3) <{strides = array<i64: 2, 2, 2>}> : (tensor<1x2x4x4x4xf32>, tensor<5x2x2x2x2xf32>) -> tensor<1x5x2x2x2xf32>
  %conv3d = mil.conv %vol, %w3 {strides = array<i64: 2, 2, 2>} : (tensor<1x2x4x4x4xf32>, tensor<5x2x2x2x2xf32>) -> tensor<1x5x2x2x2xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}
