// RUN: xdsl-opt %s -p mil-fp16 | filecheck %s

// mil-fp16, casts (passes/fp16.py): a cast to "fp32" becomes a cast to
// "fp16"; a cast to fp16 of a value that is now fp16 is dropped. Casts to
// int32 or bool stay (MIL's one_hot needs int32 indices); none is added.

// int32 -> fp32 becomes int32 -> fp16.
// CHECK-LABEL: func.func @from_int(%i: tensor<4xi32>) -> tensor<4xf16> {
// CHECK-NEXT:  %y = mil.cast %i {dtype = "fp16"} : (tensor<4xi32>) -> tensor<4xf16>
// CHECK-NEXT:  func.return %y : tensor<4xf16>
func.func @from_int(%i: tensor<4xi32>) -> tensor<4xf32> {
  %y = mil.cast %i {dtype = "fp32"} : (tensor<4xi32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// fp32 -> fp16 of an argument that is now fp16: dropped.
// CHECK-LABEL: func.func @to_fp16(%x: tensor<4xf16>) -> tensor<4xf16> {
// CHECK-NEXT:  %y = mil.relu %x : tensor<4xf16>
// CHECK-NEXT:  func.return %y : tensor<4xf16>
func.func @to_fp16(%x: tensor<4xf32>) -> tensor<4xf16> {
  %h = mil.cast %x {dtype = "fp16"} : (tensor<4xf32>) -> tensor<4xf16>
  %y = mil.relu %h : tensor<4xf16>
  func.return %y : tensor<4xf16>
}

// fp16 -> fp32 becomes fp16 -> fp16: dropped.
// CHECK-LABEL: func.func @to_fp32(%x: tensor<4xf16>) -> tensor<4xf16> {
// CHECK-NEXT:  %y = mil.relu %x : tensor<4xf16>
// CHECK-NEXT:  func.return %y : tensor<4xf16>
func.func @to_fp32(%x: tensor<4xf16>) -> tensor<4xf32> {
  %w = mil.cast %x {dtype = "fp32"} : (tensor<4xf16>) -> tensor<4xf32>
  %y = mil.relu %w : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Float labels cast to int32 for one_hot: the cast stays (its input is now
// fp16, which holds integers exactly up to 2048).
// CHECK-LABEL: func.func @to_int(%labels: tensor<2xf16>) -> (tensor<2x3xf16>, tensor<2xi1>) {
// CHECK-NEXT:  %i = mil.cast %labels {dtype = "int32"} : (tensor<2xf16>) -> tensor<2xi32>
// CHECK-NEXT:  %h = mil.one_hot %i {one_hot_vector_size = 3 : i64, on_value = 1.000000e+00 : f16, off_value = 0.000000e+00 : f16} : (tensor<2xi32>) -> tensor<2x3xf16>
// CHECK-NEXT:  %b = mil.cast %labels {dtype = "bool"} : (tensor<2xf16>) -> tensor<2xi1>
// CHECK-NEXT:  func.return %h, %b : tensor<2x3xf16>, tensor<2xi1>
func.func @to_int(%labels: tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2xi1>) {
  %i = mil.cast %labels {dtype = "int32"} : (tensor<2xf32>) -> tensor<2xi32>
  %h = mil.one_hot %i {one_hot_vector_size = 3 : i64, on_value = 1.0 : f32, off_value = 0.0 : f32} : (tensor<2xi32>) -> tensor<2x3xf32>
  %b = mil.cast %labels {dtype = "bool"} : (tensor<2xf32>) -> tensor<2xi1>
  func.return %h, %b : tensor<2x3xf32>, tensor<2xi1>
}
