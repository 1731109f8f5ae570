// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Index-driven ops: gather (axis, batch_dims), one_hot (result dtype from
// on_value/off_value, MIL's int32 default) and band_part.

// CHECK-LABEL: func.func @gather(
// GENERIC-LABEL: "func.func"() <{sym_name = "gather"
func.func @gather(%table: tensor<100x16xf16>, %ids: tensor<2x8xi32>, %x: tensor<2x3x4xf32>, %idx: tensor<2x5xi32>, %small: tensor<3xi8>) {
  // CHECK-NEXT: %embed = mil.gather %table, %ids : (tensor<100x16xf16>, tensor<2x8xi32>) -> tensor<2x8x16xf16>
  // GENERIC: %embed = "mil.gather"(%table, %ids) : (tensor<100x16xf16>, tensor<2x8xi32>) -> tensor<2x8x16xf16>
  %embed = mil.gather %table, %ids : (tensor<100x16xf16>, tensor<2x8xi32>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %axis = mil.gather %x, %small {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<3xi8>) -> tensor<2x3x3xf32>
  // GENERIC-NEXT: %axis = "mil.gather"(%x, %small) <{axis = -1 : i64}> : (tensor<2x3x4xf32>, tensor<3xi8>) -> tensor<2x3x3xf32>
  %axis = mil.gather %x, %small {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<3xi8>) -> tensor<2x3x3xf32>
  // CHECK-NEXT: %batched = mil.gather %x, %idx {axis = 2 : i64, batch_dims = 1 : i64, validate_indices = true} : (tensor<2x3x4xf32>, tensor<2x5xi32>) -> tensor<2x3x5xf32>
  // GENERIC-NEXT: %batched = "mil.gather"(%x, %idx) <{axis = 2 : i64, batch_dims = 1 : i64, validate_indices = true}> : (tensor<2x3x4xf32>, tensor<2x5xi32>) -> tensor<2x3x5xf32>
  %batched = mil.gather %x, %idx {axis = 2 : i64, batch_dims = 1 : i64, validate_indices = true} : (tensor<2x3x4xf32>, tensor<2x5xi32>) -> tensor<2x3x5xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @one_hot(
// GENERIC-LABEL: "func.func"() <{sym_name = "one_hot"
func.func @one_hot(%labels: tensor<4xi32>, %grid: tensor<2x3xi32>) {
  // CHECK-NEXT: %default = mil.one_hot %labels {one_hot_vector_size = 10 : i64} : (tensor<4xi32>) -> tensor<4x10xi32>
  // GENERIC: %default = "mil.one_hot"(%labels) <{one_hot_vector_size = 10 : i64}> : (tensor<4xi32>) -> tensor<4x10xi32>
  %default = mil.one_hot %labels {one_hot_vector_size = 10 : i64} : (tensor<4xi32>) -> tensor<4x10xi32>
  // CHECK-NEXT: %fp16 = mil.one_hot %labels {one_hot_vector_size = 10 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16} : (tensor<4xi32>) -> tensor<4x10xf16>
  // GENERIC-NEXT: %fp16 = "mil.one_hot"(%labels) <{one_hot_vector_size = 10 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16}> : (tensor<4xi32>) -> tensor<4x10xf16>
  %fp16 = mil.one_hot %labels {one_hot_vector_size = 10 : i64, on_value = 1.0 : f16, off_value = 0.0 : f16} : (tensor<4xi32>) -> tensor<4x10xf16>
  // CHECK-NEXT: %first_axis = mil.one_hot %grid {one_hot_vector_size = 5 : i64, axis = 0 : i64, on_value = 2.500000e+00 : f32} : (tensor<2x3xi32>) -> tensor<5x2x3xf32>
  // GENERIC-NEXT: %first_axis = "mil.one_hot"(%grid) <{one_hot_vector_size = 5 : i64, axis = 0 : i64, on_value = 2.500000e+00 : f32}> : (tensor<2x3xi32>) -> tensor<5x2x3xf32>
  %first_axis = mil.one_hot %grid {one_hot_vector_size = 5 : i64, axis = 0 : i64, on_value = 2.5 : f32} : (tensor<2x3xi32>) -> tensor<5x2x3xf32>
  // CHECK-NEXT: %bool = mil.one_hot %grid {one_hot_vector_size = 5 : i64, axis = -2 : i64, on_value = true, off_value = false} : (tensor<2x3xi32>) -> tensor<2x5x3xi1>
  // GENERIC-NEXT: %bool = "mil.one_hot"(%grid) <{one_hot_vector_size = 5 : i64, axis = -2 : i64, on_value = true, off_value = false}> : (tensor<2x3xi32>) -> tensor<2x5x3xi1>
  %bool = mil.one_hot %grid {one_hot_vector_size = 5 : i64, axis = -2 : i64, on_value = true, off_value = false} : (tensor<2x3xi32>) -> tensor<2x5x3xi1>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @band_part(
// GENERIC-LABEL: "func.func"() <{sym_name = "band_part"
func.func @band_part(%scores: tensor<1x4x8x8xf16>) {
  // CHECK-NEXT: %lower = mil.band_part %scores {lower = -1 : i64, upper = 0 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  // GENERIC: %lower = "mil.band_part"(%scores) <{lower = -1 : i64, upper = 0 : i64}> : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %lower = mil.band_part %scores {lower = -1 : i64, upper = 0 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  // CHECK-NEXT: %all = mil.band_part %scores : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  // GENERIC-NEXT: %all = "mil.band_part"(%scores) : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %all = mil.band_part %scores : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}
