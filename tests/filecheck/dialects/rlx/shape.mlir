// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Linear algebra and shape ops: matmul (transposes, batch broadcasting),
// reshape, transpose, narrow, concat, expand, gather.

// CHECK-LABEL: func.func @matmul(
// GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
func.func @matmul(%x: tensor<4x16xf32>, %w: tensor<16x32xf32>, %wt: tensor<32x16xf32>, %xt: tensor<16x4xf32>) {
  // CHECK-NEXT: %plain = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  // GENERIC: %plain = "rlx.matmul"(%x, %w) : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %plain = rlx.matmul %x, %w : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %tr = rlx.matmul %x, %wt {transpose_rhs = true} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %tr = "rlx.matmul"(%x, %wt) <{transpose_rhs = true}> : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %tr = rlx.matmul %x, %wt {transpose_rhs = true} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %tl = rlx.matmul %xt, %w {transpose_lhs = true} : (tensor<16x4xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %tl = "rlx.matmul"(%xt, %w) <{transpose_lhs = true}> : (tensor<16x4xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %tl = rlx.matmul %xt, %w {transpose_lhs = true} : (tensor<16x4xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %both = rlx.matmul %xt, %wt {transpose_lhs = true, transpose_rhs = true} : (tensor<16x4xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %both = "rlx.matmul"(%xt, %wt) <{transpose_lhs = true, transpose_rhs = true}> : (tensor<16x4xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %both = rlx.matmul %xt, %wt {transpose_lhs = true, transpose_rhs = true} : (tensor<16x4xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %explicit = rlx.matmul %x, %w {transpose_lhs = false, transpose_rhs = false} : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %explicit = "rlx.matmul"(%x, %w) <{transpose_lhs = false, transpose_rhs = false}> : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  %explicit = rlx.matmul %x, %w {transpose_lhs = false, transpose_rhs = false} : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  func.return
}

// CHECK-LABEL: func.func @matmul_batched(
// GENERIC-LABEL: "func.func"() <{sym_name = "matmul_batched"
func.func @matmul_batched(%q: tensor<2x8x5x16xf16>, %k: tensor<2x8x7x16xf16>, %w: tensor<16x3xf16>, %a: tensor<3x1x4x6xf32>, %b: tensor<5x6x2xf32>) {
  // CHECK-NEXT: %scores = rlx.matmul %q, %k {transpose_rhs = true} : (tensor<2x8x5x16xf16>, tensor<2x8x7x16xf16>) -> tensor<2x8x5x7xf16>
  // GENERIC: %scores = "rlx.matmul"(%q, %k) <{transpose_rhs = true}> : (tensor<2x8x5x16xf16>, tensor<2x8x7x16xf16>) -> tensor<2x8x5x7xf16>
  %scores = rlx.matmul %q, %k {transpose_rhs = true} : (tensor<2x8x5x16xf16>, tensor<2x8x7x16xf16>) -> tensor<2x8x5x7xf16>
  // CHECK-NEXT: %proj = rlx.matmul %q, %w : (tensor<2x8x5x16xf16>, tensor<16x3xf16>) -> tensor<2x8x5x3xf16>
  // GENERIC-NEXT: %proj = "rlx.matmul"(%q, %w) : (tensor<2x8x5x16xf16>, tensor<16x3xf16>) -> tensor<2x8x5x3xf16>
  %proj = rlx.matmul %q, %w : (tensor<2x8x5x16xf16>, tensor<16x3xf16>) -> tensor<2x8x5x3xf16>
  // CHECK-NEXT: %bcast = rlx.matmul %a, %b : (tensor<3x1x4x6xf32>, tensor<5x6x2xf32>) -> tensor<3x5x4x2xf32>
  // GENERIC-NEXT: %bcast = "rlx.matmul"(%a, %b) : (tensor<3x1x4x6xf32>, tensor<5x6x2xf32>) -> tensor<3x5x4x2xf32>
  %bcast = rlx.matmul %a, %b : (tensor<3x1x4x6xf32>, tensor<5x6x2xf32>) -> tensor<3x5x4x2xf32>
  func.return
}

// CHECK-LABEL: func.func @reshape(
// GENERIC-LABEL: "func.func"() <{sym_name = "reshape"
func.func @reshape(%x: tensor<2x3x4xf32>, %i: tensor<6xi32>) {
  // CHECK-NEXT: %flat = rlx.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  // GENERIC: %flat = "rlx.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %flat = rlx.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  // CHECK-NEXT: %split = rlx.reshape %x : tensor<2x3x4xf32> -> tensor<1x6x1x4xf32>
  // GENERIC-NEXT: %split = "rlx.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<1x6x1x4xf32>
  %split = rlx.reshape %x : tensor<2x3x4xf32> -> tensor<1x6x1x4xf32>
  // CHECK-NEXT: %ints = rlx.reshape %i : tensor<6xi32> -> tensor<2x3xi32>
  // GENERIC-NEXT: %ints = "rlx.reshape"(%i) : (tensor<6xi32>) -> tensor<2x3xi32>
  %ints = rlx.reshape %i : tensor<6xi32> -> tensor<2x3xi32>
  func.return
}

// CHECK-LABEL: func.func @transpose(
// GENERIC-LABEL: "func.func"() <{sym_name = "transpose"
func.func @transpose(%x: tensor<2x3x4x5xf32>, %m: tensor<3x7xi8>) {
  // CHECK-NEXT: %heads = rlx.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  // GENERIC: %heads = "rlx.transpose"(%x) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  %heads = rlx.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
  // CHECK-NEXT: %rev = rlx.transpose %x {perm = array<i64: 3, 2, 1, 0>} : (tensor<2x3x4x5xf32>) -> tensor<5x4x3x2xf32>
  // GENERIC-NEXT: %rev = "rlx.transpose"(%x) <{perm = array<i64: 3, 2, 1, 0>}> : (tensor<2x3x4x5xf32>) -> tensor<5x4x3x2xf32>
  %rev = rlx.transpose %x {perm = array<i64: 3, 2, 1, 0>} : (tensor<2x3x4x5xf32>) -> tensor<5x4x3x2xf32>
  // CHECK-NEXT: %t = rlx.transpose %m {perm = array<i64: 1, 0>} : (tensor<3x7xi8>) -> tensor<7x3xi8>
  // GENERIC-NEXT: %t = "rlx.transpose"(%m) <{perm = array<i64: 1, 0>}> : (tensor<3x7xi8>) -> tensor<7x3xi8>
  %t = rlx.transpose %m {perm = array<i64: 1, 0>} : (tensor<3x7xi8>) -> tensor<7x3xi8>
  func.return
}

// CHECK-LABEL: func.func @narrow(
// GENERIC-LABEL: "func.func"() <{sym_name = "narrow"
func.func @narrow(%x: tensor<2x10x8xf32>) {
  // CHECK-NEXT: %head = rlx.narrow %x {axis = 1 : i64, start = 0 : i64, length = 4 : i64} : (tensor<2x10x8xf32>) -> tensor<2x4x8xf32>
  // GENERIC: %head = "rlx.narrow"(%x) <{axis = 1 : i64, start = 0 : i64, length = 4 : i64}> : (tensor<2x10x8xf32>) -> tensor<2x4x8xf32>
  %head = rlx.narrow %x {axis = 1 : i64, start = 0 : i64, length = 4 : i64} : (tensor<2x10x8xf32>) -> tensor<2x4x8xf32>
  // CHECK-NEXT: %tail = rlx.narrow %x {axis = -1 : i64, start = 6 : i64, length = 2 : i64} : (tensor<2x10x8xf32>) -> tensor<2x10x2xf32>
  // GENERIC-NEXT: %tail = "rlx.narrow"(%x) <{axis = -1 : i64, start = 6 : i64, length = 2 : i64}> : (tensor<2x10x8xf32>) -> tensor<2x10x2xf32>
  %tail = rlx.narrow %x {axis = -1 : i64, start = 6 : i64, length = 2 : i64} : (tensor<2x10x8xf32>) -> tensor<2x10x2xf32>
  // CHECK-NEXT: %all = rlx.narrow %x {axis = 0 : i64, start = 0 : i64, length = 2 : i64} : (tensor<2x10x8xf32>) -> tensor<2x10x8xf32>
  // GENERIC-NEXT: %all = "rlx.narrow"(%x) <{axis = 0 : i64, start = 0 : i64, length = 2 : i64}> : (tensor<2x10x8xf32>) -> tensor<2x10x8xf32>
  %all = rlx.narrow %x {axis = 0 : i64, start = 0 : i64, length = 2 : i64} : (tensor<2x10x8xf32>) -> tensor<2x10x8xf32>
  func.return
}

// CHECK-LABEL: func.func @concat(
// GENERIC-LABEL: "func.func"() <{sym_name = "concat"
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<4x3xf32>, %i: tensor<1xi32>) {
  // CHECK-NEXT: %cols = rlx.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // GENERIC: %cols = "rlx.concat"(%a, %b) <{axis = 1 : i64}> : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %cols = rlx.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %rows = rlx.concat %a, %c, %a {axis = -2 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>
  // GENERIC-NEXT: %rows = "rlx.concat"(%a, %c, %a) <{axis = -2 : i64}> : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>
  %rows = rlx.concat %a, %c, %a {axis = -2 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>
  // CHECK-NEXT: %one = rlx.concat %i {axis = 0 : i64} : (tensor<1xi32>) -> tensor<1xi32>
  // GENERIC-NEXT: %one = "rlx.concat"(%i) <{axis = 0 : i64}> : (tensor<1xi32>) -> tensor<1xi32>
  %one = rlx.concat %i {axis = 0 : i64} : (tensor<1xi32>) -> tensor<1xi32>
  func.return
}

// CHECK-LABEL: func.func @expand(
// GENERIC-LABEL: "func.func"() <{sym_name = "expand"
func.func @expand(%x: tensor<1x4xf32>, %v: tensor<4xi32>, %s: tensor<f16>) {
  // CHECK-NEXT: %rows = rlx.expand %x : tensor<1x4xf32> -> tensor<3x4xf32>
  // GENERIC: %rows = "rlx.expand"(%x) : (tensor<1x4xf32>) -> tensor<3x4xf32>
  %rows = rlx.expand %x : tensor<1x4xf32> -> tensor<3x4xf32>
  // CHECK-NEXT: %rank = rlx.expand %v : tensor<4xi32> -> tensor<2x5x4xi32>
  // GENERIC-NEXT: %rank = "rlx.expand"(%v) : (tensor<4xi32>) -> tensor<2x5x4xi32>
  %rank = rlx.expand %v : tensor<4xi32> -> tensor<2x5x4xi32>
  // CHECK-NEXT: %fill = rlx.expand %s : tensor<f16> -> tensor<2x2xf16>
  // GENERIC-NEXT: %fill = "rlx.expand"(%s) : (tensor<f16>) -> tensor<2x2xf16>
  %fill = rlx.expand %s : tensor<f16> -> tensor<2x2xf16>
  func.return
}

// CHECK-LABEL: func.func @gather(
// GENERIC-LABEL: "func.func"() <{sym_name = "gather"
func.func @gather(%table: tensor<2048x64xf32>, %ids: tensor<4x7xi32>, %x: tensor<3x5x6xf16>, %j: tensor<2xi32>, %k: tensor<i32>) {
  // CHECK-NEXT: %emb = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<2048x64xf32>, tensor<4x7xi32>) -> tensor<4x7x64xf32>
  // GENERIC: %emb = "rlx.gather"(%table, %ids) <{axis = 0 : i64}> : (tensor<2048x64xf32>, tensor<4x7xi32>) -> tensor<4x7x64xf32>
  %emb = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<2048x64xf32>, tensor<4x7xi32>) -> tensor<4x7x64xf32>
  // CHECK-NEXT: %mid = rlx.gather %x, %j {axis = 1 : i64} : (tensor<3x5x6xf16>, tensor<2xi32>) -> tensor<3x2x6xf16>
  // GENERIC-NEXT: %mid = "rlx.gather"(%x, %j) <{axis = 1 : i64}> : (tensor<3x5x6xf16>, tensor<2xi32>) -> tensor<3x2x6xf16>
  %mid = rlx.gather %x, %j {axis = 1 : i64} : (tensor<3x5x6xf16>, tensor<2xi32>) -> tensor<3x2x6xf16>
  // CHECK-NEXT: %last = rlx.gather %x, %ids {axis = -1 : i64} : (tensor<3x5x6xf16>, tensor<4x7xi32>) -> tensor<3x5x4x7xf16>
  // GENERIC-NEXT: %last = "rlx.gather"(%x, %ids) <{axis = -1 : i64}> : (tensor<3x5x6xf16>, tensor<4x7xi32>) -> tensor<3x5x4x7xf16>
  %last = rlx.gather %x, %ids {axis = -1 : i64} : (tensor<3x5x6xf16>, tensor<4x7xi32>) -> tensor<3x5x4x7xf16>
  // CHECK-NEXT: %scalar = rlx.gather %table, %k {axis = 0 : i64} : (tensor<2048x64xf32>, tensor<i32>) -> tensor<64xf32>
  // GENERIC-NEXT: %scalar = "rlx.gather"(%table, %k) <{axis = 0 : i64}> : (tensor<2048x64xf32>, tensor<i32>) -> tensor<64xf32>
  %scalar = rlx.gather %table, %k {axis = 0 : i64} : (tensor<2048x64xf32>, tensor<i32>) -> tensor<64xf32>
  func.return
}
