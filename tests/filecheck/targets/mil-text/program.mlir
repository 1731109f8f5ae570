// RUN: xdsl-opt %s -t mil-text | filecheck %s
// RUN: xdsl-opt %s -t mil-text | xdsl-opt -f mil -t mil-text | filecheck %s

// The program(1.3) form: buildInfo, one func per func.func (inputs named by
// their name hints), statements with declared types, inputs sorted by name,
// compile-time properties as named consts `RESULT_PARAM` (sorted), scalars
// and hex floats, several outputs.

// CHECK:      program(1.3)
// CHECK-NEXT: [buildInfo = dict<string, string>({{[{][{]}}"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"coremltools-version", "9.0"}})]
// CHECK-NEXT: {
// CHECK-NEXT:     func main<ios18>(tensor<fp16, [1, 64, 1, 8]> x, tensor<fp16, [1, 64, 1, 8]> gate) {
// CHECK-NEXT:         tensor<fp16, [1, 64, 1, 8]> y = mul(x = x, y = gate)[name = string("y")];
// CHECK-NEXT:         tensor<int32, [1]> sum_axes = const()[name = string("sum_axes"), val = tensor<int32, [1]>([1])];
// CHECK-NEXT:         bool sum_keep_dims = const()[name = string("sum_keep_dims"), val = bool(true)];
// CHECK-NEXT:         tensor<fp16, [1, 1, 1, 8]> sum = reduce_sum(axes = sum_axes, keep_dims = sum_keep_dims, x = y)[name = string("sum")];
// CHECK-NEXT:         fp16 r_epsilon = const()[name = string("r_epsilon"), val = fp16(0x1.5p-17)];
// CHECK-NEXT:         tensor<fp16, [1, 1, 1, 8]> r = rsqrt(epsilon = r_epsilon, x = sum)[name = string("r")];
// CHECK-NEXT:         fp16 scale = const()[name = string("scale"), val = fp16(-0x1.ffcp+15)];
// CHECK-NEXT:         tensor<fp16, [1, 64, 1, 8]> masked = add(x = y, y = scale)[name = string("masked")];
// CHECK-NEXT:         tensor<int32, [4]> t_perm = const()[name = string("t_perm"), val = tensor<int32, [4]>([0, 3, 2, 1])];
// CHECK-NEXT:         tensor<fp16, [1, 8, 1, 64]> t = transpose(perm = t_perm, x = masked)[name = string("t")];
// CHECK-NEXT:         string c_dtype = const()[name = string("c_dtype"), val = string("fp32")];
// CHECK-NEXT:         tensor<fp32, [1, 8, 1, 64]> c = cast(dtype = c_dtype, x = t)[name = string("c")];
// CHECK-NEXT:         int32 s_axis = const()[name = string("s_axis"), val = int32(-1)];
// CHECK-NEXT:         tensor<fp32, [1, 8, 1, 64]> s = softmax(axis = s_axis, x = c)[name = string("s")];
// CHECK-NEXT:         fp32 g_alpha = const()[name = string("g_alpha"), val = fp32(-0x1.99999ap-4)];
// CHECK-NEXT:         fp32 g_beta = const()[name = string("g_beta"), val = fp32(0x1.8p+1)];
// CHECK-NEXT:         tensor<fp32, [1, 8, 1, 64]> g = clip(alpha = g_alpha, beta = g_beta, x = s)[name = string("g")];
// CHECK-NEXT:         tensor<fp32, [1, 8, 1, 64]> g_output = identity(x = g)[name = string("g_output")];
// CHECK-NEXT:     } -> (g, r, g_output);
// CHECK-NEXT: }

func.func @main(%x: tensor<1x64x1x8xf16>, %gate: tensor<1x64x1x8xf16>) -> (tensor<1x8x1x64xf32>, tensor<1x1x1x8xf16>, tensor<1x8x1x64xf32>) {
  %y = mil.mul %x, %gate : (tensor<1x64x1x8xf16>, tensor<1x64x1x8xf16>) -> tensor<1x64x1x8xf16>
  %sum = mil.reduce_sum %y {axes = array<i64: 1>, keep_dims = true} : (tensor<1x64x1x8xf16>) -> tensor<1x1x1x8xf16>
  %r = mil.rsqrt %sum {epsilon = 1.0e-5 : f32} : tensor<1x1x1x8xf16>
  %scale = mil.const dense<-65504.0> : tensor<f16>
  %masked = mil.add %y, %scale : (tensor<1x64x1x8xf16>, tensor<f16>) -> tensor<1x64x1x8xf16>
  %t = mil.transpose %masked {perm = array<i64: 0, 3, 2, 1>} : (tensor<1x64x1x8xf16>) -> tensor<1x8x1x64xf16>
  %c = mil.cast %t {dtype = "fp32"} : (tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf32>
  %s = mil.softmax %c {axis = -1 : i64} : tensor<1x8x1x64xf32>
  %g = mil.clip %s {alpha = -0.1 : f32, beta = 3.0 : f32} : tensor<1x8x1x64xf32>
  func.return %g, %r, %g : tensor<1x8x1x64xf32>, tensor<1x1x1x8xf16>, tensor<1x8x1x64xf32>
}
