// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// The elementwise ops: unary math and activations (log, rsqrt and inverse
// take an epsilon, gelu a mode, clip its bounds), binary arithmetic and
// comparisons with numpy broadcasting, select and cast.

// CHECK-LABEL: func.func @unary(
// GENERIC-LABEL: "func.func"() <{sym_name = "unary"
func.func @unary(%x: tensor<2x8xf32>, %h: tensor<1x4x1x8xf16>, %n: tensor<3xi32>) {
  // CHECK-NEXT: %relu = mil.relu %x : tensor<2x8xf32>
  // GENERIC: %relu = "mil.relu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %relu = mil.relu %x : tensor<2x8xf32>
  // CHECK-NEXT: %sigmoid = mil.sigmoid %x : tensor<2x8xf32>
  // GENERIC-NEXT: %sigmoid = "mil.sigmoid"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sigmoid = mil.sigmoid %x : tensor<2x8xf32>
  // CHECK-NEXT: %tanh = mil.tanh %x : tensor<2x8xf32>
  // GENERIC-NEXT: %tanh = "mil.tanh"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %tanh = mil.tanh %x : tensor<2x8xf32>
  // CHECK-NEXT: %exp = mil.exp %h : tensor<1x4x1x8xf16>
  // GENERIC-NEXT: %exp = "mil.exp"(%h) : (tensor<1x4x1x8xf16>) -> tensor<1x4x1x8xf16>
  %exp = mil.exp %h : tensor<1x4x1x8xf16>
  // CHECK-NEXT: %sqrt = mil.sqrt %x : tensor<2x8xf32>
  // GENERIC-NEXT: %sqrt = "mil.sqrt"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sqrt = mil.sqrt %x : tensor<2x8xf32>
  // CHECK-NEXT: %sin = mil.sin %x : tensor<2x8xf32>
  // GENERIC-NEXT: %sin = "mil.sin"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %sin = mil.sin %x : tensor<2x8xf32>
  // CHECK-NEXT: %cos = mil.cos %x : tensor<2x8xf32>
  // GENERIC-NEXT: %cos = "mil.cos"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %cos = mil.cos %x : tensor<2x8xf32>
  // CHECK-NEXT: %silu = mil.silu %h : tensor<1x4x1x8xf16>
  // GENERIC-NEXT: %silu = "mil.silu"(%h) : (tensor<1x4x1x8xf16>) -> tensor<1x4x1x8xf16>
  %silu = mil.silu %h : tensor<1x4x1x8xf16>
  // CHECK-NEXT: %round = mil.round %x : tensor<2x8xf32>
  // GENERIC-NEXT: %round = "mil.round"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %round = mil.round %x : tensor<2x8xf32>
  // CHECK-NEXT: %floor = mil.floor %x : tensor<2x8xf32>
  // GENERIC-NEXT: %floor = "mil.floor"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %floor = mil.floor %x : tensor<2x8xf32>
  // CHECK-NEXT: %ceil = mil.ceil %x : tensor<2x8xf32>
  // GENERIC-NEXT: %ceil = "mil.ceil"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %ceil = mil.ceil %x : tensor<2x8xf32>
  // CHECK-NEXT: %erf = mil.erf %x : tensor<2x8xf32>
  // GENERIC-NEXT: %erf = "mil.erf"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %erf = mil.erf %x : tensor<2x8xf32>
  // CHECK-NEXT: %abs = mil.abs %n : tensor<3xi32>
  // GENERIC-NEXT: %abs = "mil.abs"(%n) : (tensor<3xi32>) -> tensor<3xi32>
  %abs = mil.abs %n : tensor<3xi32>
  // CHECK-NEXT: %square = mil.square %n : tensor<3xi32>
  // GENERIC-NEXT: %square = "mil.square"(%n) : (tensor<3xi32>) -> tensor<3xi32>
  %square = mil.square %n : tensor<3xi32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @with_parameters(
// GENERIC-LABEL: "func.func"() <{sym_name = "with_parameters"
func.func @with_parameters(%x: tensor<2x8xf32>) {
  // CHECK-NEXT: %log = mil.log %x : tensor<2x8xf32>
  // GENERIC: %log = "mil.log"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %log = mil.log %x : tensor<2x8xf32>
  // CHECK-NEXT: %log_eps = mil.log %x {epsilon = 1.000000e-07 : f32} : tensor<2x8xf32>
  // GENERIC-NEXT: %log_eps = "mil.log"(%x) <{epsilon = 1.000000e-07 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %log_eps = mil.log %x {epsilon = 1.0e-07 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: %rsqrt = mil.rsqrt %x {epsilon = 1.000000e-05 : f32} : tensor<2x8xf32>
  // GENERIC-NEXT: %rsqrt = "mil.rsqrt"(%x) <{epsilon = 1.000000e-05 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %rsqrt = mil.rsqrt %x {epsilon = 1.0e-05 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: %inverse = mil.inverse %x {epsilon = 1.000000e-04 : f32} : tensor<2x8xf32>
  // GENERIC-NEXT: %inverse = "mil.inverse"(%x) <{epsilon = 1.000000e-04 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %inverse = mil.inverse %x {epsilon = 1.0e-04 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: %gelu = mil.gelu %x : tensor<2x8xf32>
  // GENERIC-NEXT: %gelu = "mil.gelu"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu = mil.gelu %x : tensor<2x8xf32>
  // CHECK-NEXT: %gelu_tanh = mil.gelu %x {mode = "TANH_APPROXIMATION"} : tensor<2x8xf32>
  // GENERIC-NEXT: %gelu_tanh = "mil.gelu"(%x) <{mode = "TANH_APPROXIMATION"}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu_tanh = mil.gelu %x {mode = "TANH_APPROXIMATION"} : tensor<2x8xf32>
  // CHECK-NEXT: %gelu_sigmoid = mil.gelu %x {mode = "SIGMOID_APPROXIMATION"} : tensor<2x8xf32>
  // GENERIC-NEXT: %gelu_sigmoid = "mil.gelu"(%x) <{mode = "SIGMOID_APPROXIMATION"}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %gelu_sigmoid = mil.gelu %x {mode = "SIGMOID_APPROXIMATION"} : tensor<2x8xf32>
  // CHECK-NEXT: %clip = mil.clip %x {alpha = -1.000000e+00 : f32, beta = 6.000000e+00 : f32} : tensor<2x8xf32>
  // GENERIC-NEXT: %clip = "mil.clip"(%x) <{alpha = -1.000000e+00 : f32, beta = 6.000000e+00 : f32}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %clip = mil.clip %x {alpha = -1.0 : f32, beta = 6.0 : f32} : tensor<2x8xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @binary(
// GENERIC-LABEL: "func.func"() <{sym_name = "binary"
func.func @binary(%x: tensor<2x8xf32>, %row: tensor<8xf32>, %col: tensor<2x1xf32>, %i: tensor<4xi32>, %j: tensor<i32>) {
  // CHECK-NEXT: %add = mil.add %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // GENERIC: %add = "mil.add"(%x, %row) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %add = mil.add %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %sub = mil.sub %col, %row : (tensor<2x1xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %sub = "mil.sub"(%col, %row) : (tensor<2x1xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %sub = mil.sub %col, %row : (tensor<2x1xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %mul = mil.mul %x, %col : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %mul = "mil.mul"(%x, %col) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %mul = mil.mul %x, %col : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %real_div = mil.real_div %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %real_div = "mil.real_div"(%x, %x) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %real_div = mil.real_div %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %maximum = mil.maximum %i, %j : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  // GENERIC-NEXT: %maximum = "mil.maximum"(%i, %j) : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %maximum = mil.maximum %i, %j : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  // CHECK-NEXT: %minimum = mil.minimum %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // GENERIC-NEXT: %minimum = "mil.minimum"(%i, %i) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %minimum = mil.minimum %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK-NEXT: %pow = mil.pow %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %pow = "mil.pow"(%x, %row) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %pow = mil.pow %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @comparisons(
// GENERIC-LABEL: "func.func"() <{sym_name = "comparisons"
func.func @comparisons(%x: tensor<2x8xf32>, %row: tensor<8xf32>, %i: tensor<4xi32>) {
  // CHECK-NEXT: %equal = mil.equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC: %equal = "mil.equal"(%x, %row) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %equal = mil.equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %not_equal = mil.not_equal %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  // GENERIC-NEXT: %not_equal = "mil.not_equal"(%i, %i) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %not_equal = mil.not_equal %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  // CHECK-NEXT: %less = mil.less %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %less = "mil.less"(%x, %row) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %less = mil.less %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %less_equal = mil.less_equal %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %less_equal = "mil.less_equal"(%x, %x) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %less_equal = mil.less_equal %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %greater = mil.greater %row, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %greater = "mil.greater"(%row, %x) : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %greater = mil.greater %row, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: %greater_equal = mil.greater_equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // GENERIC-NEXT: %greater_equal = "mil.greater_equal"(%x, %row) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %greater_equal = mil.greater_equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}

// CHECK-LABEL: func.func @select_and_cast(
// GENERIC-LABEL: "func.func"() <{sym_name = "select_and_cast"
func.func @select_and_cast(%c: tensor<2x8xi1>, %row_c: tensor<8xi1>, %x: tensor<2x8xf32>, %row: tensor<8xf32>, %h: tensor<2x8xf16>, %i: tensor<4xi32>, %q: tensor<4xi8>) {
  // CHECK-NEXT: %select = mil.select %c, %x, %row : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // GENERIC: %select = "mil.select"(%c, %x, %row) : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %select = mil.select %c, %x, %row : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %select_row = mil.select %row_c, %x, %x : (tensor<8xi1>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %select_row = "mil.select"(%row_c, %x, %x) : (tensor<8xi1>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %select_row = mil.select %row_c, %x, %x : (tensor<8xi1>, tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK-NEXT: %to_fp16 = mil.cast %x {dtype = "fp16"} : (tensor<2x8xf32>) -> tensor<2x8xf16>
  // GENERIC-NEXT: %to_fp16 = "mil.cast"(%x) <{dtype = "fp16"}> : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %to_fp16 = mil.cast %x {dtype = "fp16"} : (tensor<2x8xf32>) -> tensor<2x8xf16>
  // CHECK-NEXT: %to_fp32 = mil.cast %h {dtype = "fp32"} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  // GENERIC-NEXT: %to_fp32 = "mil.cast"(%h) <{dtype = "fp32"}> : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %to_fp32 = mil.cast %h {dtype = "fp32"} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  // CHECK-NEXT: %to_int32 = mil.cast %x {dtype = "int32"} : (tensor<2x8xf32>) -> tensor<2x8xi32>
  // GENERIC-NEXT: %to_int32 = "mil.cast"(%x) <{dtype = "int32"}> : (tensor<2x8xf32>) -> tensor<2x8xi32>
  %to_int32 = mil.cast %x {dtype = "int32"} : (tensor<2x8xf32>) -> tensor<2x8xi32>
  // CHECK-NEXT: %to_int8 = mil.cast %i {dtype = "int8"} : (tensor<4xi32>) -> tensor<4xi8>
  // GENERIC-NEXT: %to_int8 = "mil.cast"(%i) <{dtype = "int8"}> : (tensor<4xi32>) -> tensor<4xi8>
  %to_int8 = mil.cast %i {dtype = "int8"} : (tensor<4xi32>) -> tensor<4xi8>
  // CHECK-NEXT: %to_bool = mil.cast %q {dtype = "bool"} : (tensor<4xi8>) -> tensor<4xi1>
  // GENERIC-NEXT: %to_bool = "mil.cast"(%q) <{dtype = "bool"}> : (tensor<4xi8>) -> tensor<4xi1>
  %to_bool = mil.cast %q {dtype = "bool"} : (tensor<4xi8>) -> tensor<4xi1>
  // CHECK-NEXT: func.return
  // GENERIC-NEXT: "func.return"() : () -> ()
  func.return
}
