"""One program per mil op family printed to the MIL protobuf, validated by
coremltools (`proto_check.emit`) for iOS18 and iOS17; together they cover
every mil op.
"""

from __future__ import annotations

import pytest
from proto_check import (
    emit,
    immediate,
    op_named,
    operations,
    program,
    random_weights,
    read_blob,
)

from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects import mil

with quiet_coremltools():
    from coremltools.proto import MIL_pb2

FAMILIES = {
    "state": """
func.func @state(%cache: !mil.state<tensor<2x4x8xf16>>, %u: tensor<1x4x2xf16>, %begin: tensor<3xi32>, %x: tensor<2x16xf32>) {
  %old = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  %size = mil.const dense<[1, 4, 2]> : tensor<3xi32>
  %end = mil.add %begin, %size : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %new = mil.slice_update %old, %u, %begin, %end : (tensor<2x4x8xf16>, tensor<1x4x2xf16>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x4x8xf16>
  %unused = mil.coreml_update_state %cache, %new : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %again = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  %stored = mil.coreml_update_state %cache, %again : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %token = mil.reduce_argmax %stored {axis = -1 : i64} : (tensor<2x4x8xf16>) -> tensor<2x4xi32>
  %rows = mil.reduce_argmax %x {axis = 0 : i64, keep_dims = true} : (tensor<2x16xf32>) -> tensor<1x16xi32>
  func.return
}
""",
    "elementwise_unary": """
func.func @unary(%x: tensor<2x8xf32>, %h: tensor<1x4x1x8xf16>, %n: tensor<3xi32>) {
  %relu = mil.relu %x : tensor<2x8xf32>
  %sigmoid = mil.sigmoid %h : tensor<1x4x1x8xf16>
  %tanh = mil.tanh %x : tensor<2x8xf32>
  %exp = mil.exp %h : tensor<1x4x1x8xf16>
  %sqrt = mil.sqrt %x : tensor<2x8xf32>
  %sin = mil.sin %x : tensor<2x8xf32>
  %cos = mil.cos %x : tensor<2x8xf32>
  %silu = mil.silu %h : tensor<1x4x1x8xf16>
  %round = mil.round %x : tensor<2x8xf32>
  %floor = mil.floor %x : tensor<2x8xf32>
  %ceil = mil.ceil %x : tensor<2x8xf32>
  %erf = mil.erf %x : tensor<2x8xf32>
  %abs = mil.abs %n : tensor<3xi32>
  %square = mil.square %n : tensor<3xi32>
  %log = mil.log %x : tensor<2x8xf32>
  %log_h = mil.log %h {epsilon = 1.0e-07 : f32} : tensor<1x4x1x8xf16>
  %rsqrt = mil.rsqrt %h : tensor<1x4x1x8xf16>
  %inverse = mil.inverse %x {epsilon = 1.0e-02 : f32} : tensor<2x8xf32>
  %gelu = mil.gelu %h : tensor<1x4x1x8xf16>
  %gelu_tanh = mil.gelu %x {mode = "TANH_APPROXIMATION"} : tensor<2x8xf32>
  %clip = mil.clip %h {alpha = -1.0 : f32, beta = 6.0 : f32} : tensor<1x4x1x8xf16>
  func.return
}
""",
    "elementwise_binary": """
func.func @binary(%x: tensor<2x8xf32>, %row: tensor<8xf32>, %col: tensor<2x1xf32>, %i: tensor<4xi32>, %h: tensor<2x8xf16>, %c: tensor<2x8xi1>) {
  %two = mil.const dense<2.0> : tensor<f32>
  %ones = mil.const dense<1> : tensor<4xi32>
  %add = mil.add %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %sub = mil.sub %col, %row : (tensor<2x1xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %mul = mil.mul %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %real_div = mil.real_div %x, %col : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %maximum = mil.maximum %i, %ones : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %minimum = mil.minimum %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %pow = mil.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %equal = mil.equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %not_equal = mil.not_equal %i, %ones : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %less = mil.less %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %less_equal = mil.less_equal %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %greater = mil.greater %row, %x : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  %greater_equal = mil.greater_equal %x, %row : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  %select = mil.select %c, %x, %row : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %to_fp16 = mil.cast %x {dtype = "fp16"} : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %to_fp32 = mil.cast %h {dtype = "fp32"} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %to_int32 = mil.cast %x {dtype = "int32"} : (tensor<2x8xf32>) -> tensor<2x8xi32>
  %to_bool = mil.cast %i {dtype = "bool"} : (tensor<4xi32>) -> tensor<4xi1>
  %to_int16 = mil.cast %i {dtype = "int16"} : (tensor<4xi32>) -> tensor<4xi16>
  %from_int16 = mil.cast %to_int16 {dtype = "int32"} : (tensor<4xi16>) -> tensor<4xi32>
  %to_uint16 = mil.cast %x {dtype = "uint16"} : (tensor<2x8xf32>) -> tensor<2x8xui16>
  func.return
}
""",
    "linear": """
func.func @linear(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %x: tensor<2x16x8xf16>, %xs: tensor<1x8x1x16xf16>, %img: tensor<2x4x9x9xf32>, %w_dyn: tensor<6x4x3x3xf32>) {
  %matmul = mil.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %matmul_t = mil.matmul %b, %a {transpose_x = true, transpose_y = true} : (tensor<4x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x3xf32>
  %w = mil.const weight "fc.weight" : tensor<12x8xf16>
  %bias = mil.const weight "fc.bias" : tensor<12xf16>
  %linear = mil.linear %x, %w, bias %bias : (tensor<2x16x8xf16>, tensor<12x8xf16>, tensor<12xf16>) -> tensor<2x16x12xf16>
  %linear_default_bias = mil.linear %x, %w : (tensor<2x16x8xf16>, tensor<12x8xf16>) -> tensor<2x16x12xf16>
  %proj = mil.const weight "proj" {weight_shape = array<i64: 32, 8>} : tensor<32x8x1x1xf16>
  %pointwise = mil.conv %xs, %proj : (tensor<1x8x1x16xf16>, tensor<32x8x1x1xf16>) -> tensor<1x32x1x16xf16>
  %same = mil.conv %img, %w_dyn {pad_type = "same", strides = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
  %custom = mil.conv %img, %w_dyn {pad_type = "custom", pad = array<i64: 1, 0, 2, 2>, strides = array<i64: 1, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x8x4xf32>
  %wd = mil.const weight "dilated" : tensor<6x4x3x3xf32>
  %dilated = mil.conv %img, %wd {dilations = array<i64: 2, 3>} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x3xf32>
  %wg = mil.const weight "grouped" : tensor<6x2x3x3xf32>
  %gb = mil.const dense<0.5> : tensor<6xf32>
  %grouped = mil.conv %img, %wg, bias %gb {groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x7x7xf32>
  func.return
}
""",
    "shape": """
func.func @shape(%x: tensor<2x3x4xf32>, %y: tensor<1x64x1x80xf16>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %s: tensor<1x4x1x6xf16>, %img: tensor<1x8x4x6xf32>) {
  %flat = mil.reshape %x {shape = array<i64: -1, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %keep = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3x8xf32>
  %transpose = mil.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %act = mil.slice_by_size %y {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 64, 1, 16>} : (tensor<1x64x1x80xf16>) -> tensor<1x64x1x16xf16>
  %rest = mil.slice_by_size %y {begin = array<i64: 0, 8, 0, 16>, size = array<i64: -1, 8, -1, -1>} : (tensor<1x64x1x80xf16>) -> tensor<1x8x1x64xf16>
  %concat = mil.concat %a, %b, %a {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  %interleave = mil.concat %a, %a {axis = 0 : i64, interleave = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %tile = mil.tile %a {reps = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<4x9xf32>
  %expand = mil.expand_dims %a {axes = array<i64: 0, -1>} : (tensor<2x3xf32>) -> tensor<1x2x3x1xf32>
  %squeeze_all = mil.squeeze %s : (tensor<1x4x1x6xf16>) -> tensor<4x6xf16>
  %squeeze_one = mil.squeeze %s {axes = array<i64: -2>} : (tensor<1x4x1x6xf16>) -> tensor<1x4x6xf16>
  %even:3 = mil.split %s {axis = 3 : i64, num_splits = 3 : i64} : (tensor<1x4x1x6xf16>) -> (tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>, tensor<1x4x1x2xf16>)
  %sizes:2 = mil.split %a {axis = -1 : i64, split_sizes = array<i64: 1, 2>} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>)
  %shuffled = mil.pixel_shuffle %img {upscale_factor = 2 : i64} : (tensor<1x8x4x6xf32>) -> tensor<1x2x8x12xf32>
  %unshuffled = mil.pixel_unshuffle %img {downscale_factor = 2 : i64} : (tensor<1x8x4x6xf32>) -> tensor<1x32x2x3xf32>
  %shuffled16 = mil.pixel_shuffle %y {upscale_factor = 4 : i64} : (tensor<1x64x1x80xf16>) -> tensor<1x4x4x320xf16>
  func.return
}
""",
    "indexing": """
func.func @indexing(%ids: tensor<2x8xi32>, %x: tensor<2x3x4xf32>, %idx: tensor<2x5xi32>, %labels: tensor<4xi32>, %scores: tensor<1x4x8x8xf16>) {
  %table = mil.const weight "embed" : tensor<100x16xf16>
  %embed = mil.gather %table, %ids : (tensor<100x16xf16>, tensor<2x8xi32>) -> tensor<2x8x16xf16>
  %ids16 = mil.cast %ids {dtype = "int16"} : (tensor<2x8xi32>) -> tensor<2x8xi16>
  %embed16 = mil.gather %table, %ids16 : (tensor<100x16xf16>, tensor<2x8xi16>) -> tensor<2x8x16xf16>
  %uids = mil.const dense<[3, 7]> : tensor<2xui16>
  %embed_u16 = mil.gather %table, %uids : (tensor<100x16xf16>, tensor<2xui16>) -> tensor<2x16xf16>
  %batched = mil.gather %x, %idx {axis = 2 : i64, batch_dims = 1 : i64, validate_indices = true} : (tensor<2x3x4xf32>, tensor<2x5xi32>) -> tensor<2x3x5xf32>
  %one_hot = mil.one_hot %labels {one_hot_vector_size = 10 : i64} : (tensor<4xi32>) -> tensor<4x10xi32>
  %one_hot_fp16 = mil.one_hot %labels {one_hot_vector_size = 10 : i64, on_value = 1.0 : f16, off_value = 0.0 : f16} : (tensor<4xi32>) -> tensor<4x10xf16>
  %one_hot_on = mil.one_hot %labels {one_hot_vector_size = 5 : i64, axis = 0 : i64, on_value = 2.5 : f32} : (tensor<4xi32>) -> tensor<5x4xf32>
  %one_hot_bool = mil.one_hot %labels {one_hot_vector_size = 5 : i64, on_value = true, off_value = false} : (tensor<4xi32>) -> tensor<4x5xi1>
  %band = mil.band_part %scores {lower = -1 : i64, upper = 0 : i64} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %band_all = mil.band_part %scores : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  func.return
}
""",
    "reduction": """
func.func @reduction(%x: tensor<2x3x4xf32>, %i: tensor<5x6xi32>, %h: tensor<1x16x1x8xf16>) {
  %sum = mil.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %mean = mil.reduce_mean %x {axes = array<i64: -1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %max = mil.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %min = mil.reduce_min %i {axes = array<i64: 0, 1>, keep_dims = true} : (tensor<5x6xi32>) -> tensor<1x1xi32>
  %prod = mil.reduce_prod %i {axes = array<i64: 0>} : (tensor<5x6xi32>) -> tensor<6xi32>
  %lse = mil.reduce_log_sum_exp %x {axes = array<i64: 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %softmax = mil.softmax %h {axis = 1 : i64} : tensor<1x16x1x8xf16>
  %softmax_last = mil.softmax %x : tensor<2x3x4xf32>
  %gamma = mil.const weight "ln.gamma" : tensor<16xf16>
  %beta = mil.const weight "ln.beta" : tensor<16xf16>
  %ln = mil.layer_norm %h, gamma %gamma, beta %beta {axes = array<i64: 1>, epsilon = 1.0e-05 : f32} : (tensor<1x16x1x8xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x1x8xf16>
  %g2 = mil.const dense<1.0> : tensor<3x4xf32>
  %gamma_only = mil.layer_norm %x, gamma %g2 {axes = array<i64: -1, 1>} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %b32 = mil.const dense<0.5> : tensor<16xf32>
  %beta_only = mil.layer_norm %h, beta %b32 {axes = array<i64: 1>} : (tensor<1x16x1x8xf16>, tensor<16xf32>) -> tensor<1x16x1x8xf16>
  %plain = mil.layer_norm %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %cumsum = mil.cumsum %x : tensor<2x3x4xf32>
  %cumsum_ids = mil.cumsum %i {axis = -1 : i64, exclusive = true} : tensor<5x6xi32>
  %cumsum_back = mil.cumsum %h {axis = 3 : i64, exclusive = true, reverse = true} : tensor<1x16x1x8xf16>
  %top:2 = mil.topk %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>)
  %sorted:2 = mil.topk %h {k = 8 : i64, axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> (tensor<1x16x1x8xf16>, tensor<1x16x1x8xi32>)
  %top_id:2 = mil.topk %i {axis = 0 : i64} : (tensor<5x6xi32>) -> (tensor<1x6xi32>, tensor<1x6xi32>)
  %order = mil.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  %order_up = mil.argsort %h {axis = 3 : i64, ascending = true} : (tensor<1x16x1x8xf16>) -> tensor<1x16x1x8xi32>
  %order_ids = mil.argsort %i {axis = 0 : i64} : (tensor<5x6xi32>) -> tensor<5x6xi32>
  func.return
}
""",
    "quantization": """
func.func @quantization(%x: tensor<1x4x1x8xf16>, %q: tensor<4x8xi8>, %y: tensor<1x8x1x4xf16>) {
  %scale = mil.const dense<0.05> : tensor<f16>
  %zp = mil.const dense<3> : tensor<i8>
  %quantized = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xi8>
  %channel_scale = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  %per_channel = mil.quantize %x, %channel_scale {axis = 1 : i64, output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xi8>
  %scale32 = mil.const dense<0.5> : tensor<f32>
  %dequantized = mil.dequantize %q, zero_point %zp, %scale32 : (tensor<4x8xi8>, tensor<i8>, tensor<f32>) -> tensor<4x8xf32>
  %channel_zp = mil.const dense<[0, 1, 2, 3]> : tensor<4xi8>
  %per_row = mil.dequantize %q, zero_point %channel_zp, %channel_scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<4xi8>, tensor<4xf16>) -> tensor<4x8xf16>
  %data = mil.const weight "w.int8" : tensor<8x4x1x1xi8>
  %wzp = mil.const dense<0> : tensor<i8>
  %wscale = mil.const dense<0.01> : tensor<f16>
  %w = mil.constexpr_affine_dequantize %data, %wzp, %wscale {axis = 0 : i64} : (tensor<8x4x1x1xi8>, tensor<i8>, tensor<f16>) -> tensor<8x4x1x1xf16>
  %conv = mil.conv %x, %w : (tensor<1x4x1x8xf16>, tensor<8x4x1x1xf16>) -> tensor<1x8x1x8xf16>
  %inline8 = mil.const dense<[1, -2, 3]> : tensor<3xi8>
  %blob8 = mil.const dense<7> : tensor<2x8xi8>
  %cast8 = mil.cast %inline8 {dtype = "int32"} : (tensor<3xi8>) -> tensor<3xi32>
  %deq8 = mil.dequantize %blob8, %scale32 : (tensor<2x8xi8>, tensor<f32>) -> tensor<2x8xf32>
  func.return
}
""",
    "compressed": """
func.func @compressed(%x: tensor<1x16x1x4xf16>) {
  %data = mil.const dense<[[-8, 7, 1, 0, 2, 3, -1, -2, 4, 5, 6, -3, -4, -5, -6, -7], [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1]]> : tensor<2x16xi4>
  %scale = mil.const dense<[[0.5, 0.25, 0.125, 1.0], [1.0, 2.0, 0.5, 0.75]]> : tensor<2x4xf16>
  %blocks = mil.constexpr_blockwise_shift_scale %data, %scale : (tensor<2x16xi4>, tensor<2x4xf16>) -> tensor<2x16xf16>
  %u8 = mil.const dense<[[200, 3], [0, 255]]> : tensor<2x2xui8>
  %zero = mil.const dense<[[128], [128]]> : tensor<2x1xui8>
  %one = mil.const dense<[[0.5], [1.0]]> : tensor<2x1xf32>
  %shifted = mil.constexpr_blockwise_shift_scale %u8, %one, offset %zero : (tensor<2x2xui8>, tensor<2x1xf32>, tensor<2x1xui8>) -> tensor<2x2xf32>
  %indices = mil.const dense<[[[[1]], [[2]], [[3]], [[0]]], [[[3]], [[3]], [[0]], [[1]]], [[[0]], [[0]], [[1]], [[2]]], [[[2]], [[1]], [[0]], [[3]]]]> : tensor<4x4x1x1xui2>
  %lut = mil.const dense<[[[[[[0.0], [1.0], [2.0], [3.0]]]]], [[[[[-1.0], [-2.0], [-3.0], [-4.0]]]]]]> : tensor<2x1x1x1x4x1xf16>
  %w = mil.constexpr_lut_to_dense %indices, %lut : (tensor<4x4x1x1xui2>, tensor<2x1x1x1x4x1xf16>) -> tensor<4x4x1x1xf16>
  %rows = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 0>, size = array<i64: 1, 4, 1, 4>} : (tensor<1x16x1x4xf16>) -> tensor<1x4x1x4xf16>
  %conv = mil.conv %rows, %w : (tensor<1x4x1x4xf16>, tensor<4x4x1x1xf16>) -> tensor<1x4x1x4xf16>
  %vindices = mil.const dense<[[1, 0, 3], [2, 2, 1]]> : tensor<2x3xui2>
  %vlut = mil.const dense<[[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]]]> : tensor<1x1x4x2xf16>
  %vector = mil.constexpr_lut_to_dense %vindices, %vlut {vector_axis = 0 : i64} : (tensor<2x3xui2>, tensor<1x1x4x2xf16>) -> tensor<4x3xf16>
  func.return
}
""",
    "resampling": """
func.func @resampling(%x: tensor<1x3x4x5xf32>, %h: tensor<1x3x4x5xf16>, %s: tensor<1x3x5xf16>) {
  %nearest = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 3 : i64} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x15xf32>
  %bilinear = mil.upsample_bilinear %h {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64, align_corners = false} : (tensor<1x3x4x5xf16>) -> tensor<1x3x8x10xf16>
  %corners = mil.upsample_bilinear %s {scale_factor_width = 2 : i64} : (tensor<1x3x5xf16>) -> tensor<1x3x10xf16>
  %constant = mil.pad %x {pad = array<i64: 1, 0, 2, 3>, constant_val = -1.5 : f32} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x10xf32>
  %reflect = mil.pad %h {pad = array<i64: 1, 2, 3, 4>, mode = "reflect"} : (tensor<1x3x4x5xf16>) -> tensor<1x3x7x12xf16>
  %replicate = mil.pad %s {pad = array<i64: 0, 5>, mode = "replicate"} : (tensor<1x3x5xf16>) -> tensor<1x3x10xf16>
  %leaky = mil.leaky_relu %h {alpha = 0.2 : f32} : tensor<1x3x4x5xf16>
  %elu = mil.elu %x {alpha = 1.0 : f32} : tensor<1x3x4x5xf32>
  %hard = mil.sigmoid_hard %h {alpha = 0.16666667 : f32, beta = 0.5 : f32} : tensor<1x3x4x5xf16>
  func.return
}
""",
    "vision": """
func.func @vision(%x: tensor<1x4x7x6xf32>, %h: tensor<1x4x7x6xf16>, %s: tensor<2x6x5xf16>) {
  %max = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x4x7x6xf32>) -> tensor<1x4x3x2xf32>
  %max_ceil = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x4xf32>
  %avg = mil.avg_pool %h {kernel_sizes = array<i64: 2, 3>, strides = array<i64: 1, 3>, pad_type = "same_lower"} : (tensor<1x4x7x6xf16>) -> tensor<1x4x7x2xf16>
  %avg_excl = mil.avg_pool %s {kernel_sizes = array<i64: 4>, strides = array<i64: 3>, pad_type = "same", exclude_padding_from_average = true} : (tensor<2x6x5xf16>) -> tensor<2x6x2xf16>
  %mean = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %var = mil.const dense<[1.0, 2.0, 0.5, 0.25]> : tensor<4xf32>
  %bn = mil.batch_norm %x, %mean, %var, gamma %var, beta %mean {epsilon = 1.0e-03 : f32} : (tensor<1x4x7x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %mean16 = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  %var16 = mil.const dense<[1.0, 2.0, 0.5, 0.25]> : tensor<4xf16>
  %bn_plain = mil.batch_norm %h, %mean16, %var16 : (tensor<1x4x7x6xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x4x7x6xf16>
  %in = mil.instance_norm %x, gamma %var, beta %mean : (tensor<1x4x7x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %in_plain = mil.instance_norm %h : (tensor<1x4x7x6xf16>) -> tensor<1x4x7x6xf16>
  %w = mil.const weight "up.weight" : tensor<4x3x3x2xf32>
  %b = mil.const dense<0.5> : tensor<3xf32>
  %up = mil.conv_transpose %x, %w : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>) -> tensor<1x3x9x7xf32>
  %up_custom = mil.conv_transpose %x, %w, bias %b {pad = array<i64: 1, 0, 0, 2>, pad_type = "custom", strides = array<i64: 2, 3>} : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>, tensor<3xf32>) -> tensor<1x3x14x15xf32>
  %ws = mil.const weight "up.grouped" : tensor<6x2x3xf16>
  %up_same = mil.conv_transpose %s, %ws {pad_type = "same", strides = array<i64: 2>, dilations = array<i64: 2>, groups = 3 : i64} : (tensor<2x6x5xf16>, tensor<6x2x3xf16>) -> tensor<2x6x10xf16>
  func.return
}
""",
}


IOS18_FAMILIES = {"state", "compressed"}


@pytest.mark.parametrize("target", ["iOS18", "iOS17"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_op_family_round_trips_through_coremltools(family: str, target: str):
    if family in IOS18_FAMILIES and target != "iOS18":
        pytest.skip(f"{family} ops are iOS18 ops")
    module = program(FAMILIES[family])
    result = emit(module, random_weights(module), target=target)
    version, opset = {"iOS18": (9, "CoreML8"), "iOS17": (8, "CoreML7")}[target]
    assert result.spec.specificationVersion == version
    assert result.spec.mlProgram.version == 1
    function = result.spec.mlProgram.functions["main"]
    assert function.opset == opset
    assert list(function.block_specializations) == [opset]
    for op in operations(result):
        assert op.attributes["name"].immediateValue.tensor.strings.values[0]


def test_every_mil_op_is_covered_by_a_family_program():
    printed = set()
    for text in FAMILIES.values():
        for op in program(text).walk():
            if isinstance(op, mil.MilOp):
                printed.add(op.name)
    assert printed == {op.name for op in mil.MIL_OPS}


def test_int8_consts_and_constexpr_inputs():
    module = program(FAMILIES["quantization"])
    weights = random_weights(module)
    result = emit(module, weights)
    inline8 = op_named(result, "inline8").attributes["val"]
    assert inline8.type.tensorType.dataType == MIL_pb2.INT8
    assert inline8.immediateValue.tensor.bytes.values == bytes([1, 254, 3])
    assert (
        op_named(result, "blob8").attributes["val"].WhichOneof("value")
        == "blobFileValue"
    )
    # constexpr_affine_dequantize carries its inputs as attributes, and the
    # consts that feed only it are not written (as coremltools does)
    constexpr = op_named(result, "w")
    assert not constexpr.inputs
    assert set(constexpr.attributes) == {
        "name",
        "quantized_data",
        "zero_point",
        "scale",
        "axis",
    }
    names = {op.outputs[0].name for op in operations(result)}
    assert not {"data", "wzp", "wscale"} & names
    data = constexpr.attributes["quantized_data"]
    assert data.type.tensorType.dataType == MIL_pb2.INT8
    raw = read_blob(result.weight_bytes(), data.blobFileValue.offset, "int8", 32)
    assert raw == weights["w.int8"].tobytes()
    assert immediate(constexpr.attributes["axis"]) == 0
