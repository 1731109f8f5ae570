// RUN: xdsl-opt %s -t mil-text | filecheck %s
// RUN: xdsl-opt %s -t 'mil-text{blob_path="@model_path/other.bin"}' | filecheck %s --check-prefix=PATH

// Weight consts and inline consts of 10 or more elements live in the weight
// blob: BLOBFILE offsets point at each blob's 64-byte metadata record, and
// records are 64-byte aligned (64 + 64 + 2·64·64 = 8320, ...). Consts
// with fewer elements, and bool consts, stay inline; weight consts always go
// to the blob; a weight view (weight_shape, perm) is stored as viewed, one
// record per view. A weight used twice through the same view is stored once,
// whatever trailing 1s its shape has (proj [16, 64, 1, 1] and lin [16, 64]).
// linear's absent bias is written as explicit zeros, as coremltools does.
// Unnamed values are named after their weight or op type.

// CHECK:      func main<ios18>(tensor<fp16, [1, 64, 1, 16]> x, tensor<fp16, [1, 16, 64]> rows) {
// CHECK-NEXT:   tensor<fp16, [64, 64, 1, 1]> w = const()[name = string("w"), val = tensor<fp16, [64, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
// CHECK:        tensor<fp16, [1, 64, 1, 16]> conv = conv(dilations = conv_dilations, groups = conv_groups, pad = conv_pad, pad_type = conv_pad_type, strides = conv_strides, weight = w, x = x)[name = string("conv")];
// CHECK-NEXT:   tensor<fp16, [64, 64, 1, 1]> w_again = const()[name = string("w_again"), val = tensor<fp16, [64, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
// CHECK-NEXT:   tensor<fp16, [64]> layer0_bias = const()[name = string("layer0_bias"), val = tensor<fp16, [64]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(8320)))];
// CHECK:        tensor<fp16, [1, 64, 1, 16]> conv_1 = conv(bias = layer0_bias, dilations = conv_1_dilations, groups = conv_1_groups, pad = conv_1_pad, pad_type = conv_1_pad_type, strides = conv_1_strides, weight = w_again, x = conv)[name = string("conv_1")];
// CHECK-NEXT:   tensor<fp16, [16, 64, 1, 1]> proj = const()[name = string("proj"), val = tensor<fp16, [16, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(8512)))];
// CHECK:        tensor<fp16, [1, 16, 1, 16]> p = conv({{.*}}, weight = proj, x = conv_1)[name = string("p")];
// CHECK-NEXT:   tensor<fp16, [16, 64]> lin = const()[name = string("lin"), val = tensor<fp16, [16, 64]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(8512)))];
// CHECK-NEXT:   tensor<fp16, [16]> l_bias = const()[name = string("l_bias"), val = tensor<fp16, [16]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(10624)))];
// CHECK-NEXT:   tensor<fp16, [1, 16, 16]> l = linear(bias = l_bias, weight = lin, x = rows)[name = string("l")];
// CHECK-NEXT:   tensor<int32, [10]> big = const()[name = string("big"), val = tensor<int32, [10]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(10752)))];
// CHECK-NEXT:   tensor<int32, [9]> small = const()[name = string("small"), val = tensor<int32, [9]>([0, 1, 2, 3, 4, 5, 6, 7, 8])];
// CHECK-NEXT:   tensor<bool, [2, 6]> mask = const()[name = string("mask"), val = tensor<bool, [2, 6]>([true, false, true, false, true, false, true, false, true, false, true, false])];
// CHECK-NEXT:   tensor<fp32, [2, 5]> f = const()[name = string("f"), val = tensor<fp32, [2, 5]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(10880)))];
// CHECK-NEXT: } -> (p, l, big, small, mask, f);

// PATH: val = tensor<fp16, [64, 64, 1, 1]>(BLOBFILE(path = string("@model_path/other.bin"), offset = uint64(64)))

func.func @main(%x: tensor<1x64x1x16xf16>, %rows: tensor<1x16x64xf16>) -> (tensor<1x16x1x16xf16>, tensor<1x16x16xf16>, tensor<10xi32>, tensor<9xi32>, tensor<2x6xi1>, tensor<2x5xf32>) {
  %w = mil.const weight "layer0.weight" : tensor<64x64x1x1xf16>
  %conv = mil.conv %x, %w : (tensor<1x64x1x16xf16>, tensor<64x64x1x1xf16>) -> tensor<1x64x1x16xf16>
  %w_again = mil.const weight "layer0.weight" : tensor<64x64x1x1xf16>
  %0 = mil.const weight "layer0.bias" : tensor<64xf16>
  %1 = mil.conv %conv, %w_again, bias %0 : (tensor<1x64x1x16xf16>, tensor<64x64x1x1xf16>, tensor<64xf16>) -> tensor<1x64x1x16xf16>
  %proj = mil.const weight "proj" {weight_shape = array<i64: 64, 16>, perm = array<i64: 1, 0>} : tensor<16x64x1x1xf16>
  %p = mil.conv %1, %proj : (tensor<1x64x1x16xf16>, tensor<16x64x1x1xf16>) -> tensor<1x16x1x16xf16>
  %lin = mil.const weight "proj" {weight_shape = array<i64: 64, 16>, perm = array<i64: 1, 0>} : tensor<16x64xf16>
  %l = mil.linear %rows, %lin : (tensor<1x16x64xf16>, tensor<16x64xf16>) -> tensor<1x16x16xf16>
  %big = mil.const dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]> : tensor<10xi32>
  %small = mil.const dense<[0, 1, 2, 3, 4, 5, 6, 7, 8]> : tensor<9xi32>
  %mask = mil.const dense<[[true, false, true, false, true, false], [true, false, true, false, true, false]]> : tensor<2x6xi1>
  %f = mil.const dense<0.5> : tensor<2x5xf32>
  func.return %p, %l, %big, %small, %mask, %f : tensor<1x16x1x16xf16>, tensor<1x16x16xf16>, tensor<10xi32>, tensor<9xi32>, tensor<2x6xi1>, tensor<2x5xf32>
}
