// RUN: xdsl-opt %s -t mil-text | filecheck %s

// Variadic, optional and multi-result ops, one function per func.func. Absent
// optional inputs with a default are written explicitly, as coremltools does
// (layer_norm's epsilon then has gamma's dtype, fp32 without gamma); consts
// come in MIL's input order, arguments sorted by name.

// CHECK:      func split_concat<ios18>(tensor<fp16, [1, 8, 1, 4]> x) {
// CHECK-NEXT:   int32 a_num_splits = const()[name = string("a_num_splits"), val = int32(2)];
// CHECK-NEXT:   int32 a_axis = const()[name = string("a_axis"), val = int32(1)];
// CHECK-NEXT:   tensor<fp16, [1, 4, 1, 4]> a, tensor<fp16, [1, 4, 1, 4]> b = split(axis = a_axis, num_splits = a_num_splits, x = x)[name = string("a")];
// CHECK-NEXT:   int32 c_axis = const()[name = string("c_axis"), val = int32(3)];
// CHECK-NEXT:   bool c_interleave = const()[name = string("c_interleave"), val = bool(true)];
// CHECK-NEXT:   tensor<fp16, [1, 4, 1, 12]> c = concat(axis = c_axis, interleave = c_interleave, values = (b, a, b))[name = string("c")];
// CHECK-NEXT: } -> (c);
// CHECK-EMPTY:
// CHECK-NEXT: func norms<ios18>(tensor<fp16, [1, 8, 1, 4]> x) {
// CHECK-NEXT:   tensor<fp16, [4]> gamma = const()[name = string("gamma"), val = tensor<fp16, [4]>([0x1p+0, 0x1p-1, 0x1p+1, -0x1p+0])];
// CHECK-NEXT:   tensor<int32, [1]> n_axes = const()[name = string("n_axes"), val = tensor<int32, [1]>([-1])];
// CHECK-NEXT:   fp16 n_epsilon = const()[name = string("n_epsilon"), val = fp16(0x1.5p-17)];
// CHECK-NEXT:   tensor<fp16, [1, 8, 1, 4]> n = layer_norm(axes = n_axes, epsilon = n_epsilon, gamma = gamma, x = x)[name = string("n")];
// CHECK-NEXT:   tensor<int32, [4]> m_axes = const()[name = string("m_axes"), val = tensor<int32, [4]>([0, 1, 2, 3])];
// CHECK-NEXT:   fp32 m_epsilon = const()[name = string("m_epsilon"), val = fp32(0x1.4f8b58p-17)];
// CHECK-NEXT:   tensor<fp16, [1, 8, 1, 4]> m = layer_norm(axes = m_axes, epsilon = m_epsilon, x = n)[name = string("m")];
// CHECK-NEXT:   tensor<int8, [1, 8, 1, 4]> q = const()[name = string("q"), val = tensor<int8, [1, 8, 1, 4]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
// CHECK-NEXT:   fp16 s = const()[name = string("s"), val = fp16(0x1p-4)];
// CHECK-NEXT:   tensor<fp16, [1, 8, 1, 4]> d = dequantize(input = q, scale = s)[name = string("d")];
// CHECK-NEXT:   tensor<int32, [4]> i = const()[name = string("i"), val = tensor<int32, [4]>([0, 2, 1, 5])];
// CHECK-NEXT:   int32 o_one_hot_vector_size = const()[name = string("o_one_hot_vector_size"), val = int32(3)];
// CHECK-NEXT:   int32 o_axis = const()[name = string("o_axis"), val = int32(-1)];
// CHECK-NEXT:   fp16 o_on_value = const()[name = string("o_on_value"), val = fp16(0x1p+0)];
// CHECK-NEXT:   fp16 o_off_value = const()[name = string("o_off_value"), val = fp16(0x0p+0)];
// CHECK-NEXT:   tensor<fp16, [4, 3]> o = one_hot(axis = o_axis, indices = i, off_value = o_off_value, on_value = o_on_value, one_hot_vector_size = o_one_hot_vector_size)[name = string("o")];
// CHECK-NEXT: } -> (m, d, o);

func.func @split_concat(%x: tensor<1x8x1x4xf16>) -> tensor<1x4x1x12xf16> {
  %a, %b = mil.split %x {axis = 1 : i64, num_splits = 2 : i64} : (tensor<1x8x1x4xf16>) -> (tensor<1x4x1x4xf16>, tensor<1x4x1x4xf16>)
  %c = mil.concat %b, %a, %b {axis = 3 : i64, interleave = true} : (tensor<1x4x1x4xf16>, tensor<1x4x1x4xf16>, tensor<1x4x1x4xf16>) -> tensor<1x4x1x12xf16>
  func.return %c : tensor<1x4x1x12xf16>
}

func.func @norms(%x: tensor<1x8x1x4xf16>) -> (tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<4x3xf16>) {
  %gamma = mil.const dense<[1.0, 0.5, 2.0, -1.0]> : tensor<4xf16>
  %n = mil.layer_norm %x, gamma %gamma {axes = array<i64: -1>, epsilon = 1.0e-5 : f32} : (tensor<1x8x1x4xf16>, tensor<4xf16>) -> tensor<1x8x1x4xf16>
  %m = mil.layer_norm %n : (tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xf16>
  %q = mil.const dense<3> : tensor<1x8x1x4xi8>
  %s = mil.const dense<0.0625> : tensor<f16>
  %d = mil.dequantize %q, %s : (tensor<1x8x1x4xi8>, tensor<f16>) -> tensor<1x8x1x4xf16>
  %i = mil.const dense<[0, 2, 1, 5]> : tensor<4xi32>
  %o = mil.one_hot %i {one_hot_vector_size = 3 : i64, on_value = 1.0 : f16, off_value = 0.0 : f16} : (tensor<4xi32>) -> tensor<4x3xf16>
  func.return %m, %d, %o : tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<4x3xf16>
}
