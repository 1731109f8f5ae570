"""MIL text: the printer (`xdsl_ane.backend.mil_text`) and the importer
(`xdsl_ane.frontend.mil_text`).

Round trips for every mil op: print, write the model directory, import,
print again — the text must be identical and the imported program must
interpret to the very same numbers. The same for the Qwen3 decoder layer
lowered to mil. Hand-written kernels in the style of the ANE training
pipeline (tests/filecheck/tools/import/*.mil) are imported and checked
against numpy; malformed inputs give one `file:line:col: message` line.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_decoder import TINY_DECODER
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.universe import Universe

from xdsl_ane.backend.mil_text import (
    MilTextTarget,
    hex_float,
    module_to_mil_text,
    write_mil_text_dir,
)
from xdsl_ane.backend.names import stable_base
from xdsl_ane.backend.weights import WeightBlob
from xdsl_ane.dialects import mil
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mil_text import (
    MilTextError,
    MilTextFrontend,
    parse_mil_text,
    read_mil_file,
)
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interpreter.core import random_inputs, run_function

KERNELS = Path(__file__).parent / "filecheck" / "tools" / "import"
MIL_DIALECT_TESTS = Path(__file__).parent / "filecheck" / "dialects" / "mil"

# --- round trips per op family ---------------------------------------------------

CASES: dict[str, str] = {
    # The store is idempotent (the same update at the same place), so the
    # second run, on the state the first one left, gives the same numbers.
    "state": """
func.func @main(%cache: !mil.state<tensor<2x4x8xf16>>, %u: tensor<1x4x2xf16>, %x: tensor<3x5xf32>) -> (tensor<2x4xi32>, tensor<1x5xi32>, tensor<2x4x8xf16>) {
  %old = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  %begin = mil.const dense<[1, 0, 5]> : tensor<3xi32>
  %end = mil.const dense<[2, 4, 7]> : tensor<3xi32>
  %new = mil.slice_update %old, %u, %begin, %end : (tensor<2x4x8xf16>, tensor<1x4x2xf16>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x4x8xf16>
  %stored = mil.coreml_update_state %cache, %new : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %token = mil.reduce_argmax %stored : (tensor<2x4x8xf16>) -> tensor<2x4xi32>
  %rows = mil.reduce_argmax %x {axis = 0 : i64, keep_dims = true} : (tensor<3x5xf32>) -> tensor<1x5xi32>
  %unused = mil.coreml_update_state %cache, %stored : (!mil.state<tensor<2x4x8xf16>>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %last = mil.read_state %cache : (!mil.state<tensor<2x4x8xf16>>) -> tensor<2x4x8xf16>
  func.return %token, %rows, %last : tensor<2x4xi32>, tensor<1x5xi32>, tensor<2x4x8xf16>
}
""",
    "unary": """
func.func @main(%x: tensor<2x5xf32>, %h: tensor<1x4x1x3xf16>) -> (tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>) {
  %relu = mil.relu %x : tensor<2x5xf32>
  %sigmoid = mil.sigmoid %x : tensor<2x5xf32>
  %tanh = mil.tanh %x : tensor<2x5xf32>
  %exp = mil.exp %x : tensor<2x5xf32>
  %abs = mil.abs %x : tensor<2x5xf32>
  %log = mil.log %abs {epsilon = 1.0e-3 : f32} : tensor<2x5xf32>
  %sqrt = mil.sqrt %abs : tensor<2x5xf32>
  %rsqrt = mil.rsqrt %abs : tensor<2x5xf32>
  %sin = mil.sin %x : tensor<2x5xf32>
  %cos = mil.cos %h : tensor<1x4x1x3xf16>
  %gelu = mil.gelu %h {mode = "TANH_APPROXIMATION"} : tensor<1x4x1x3xf16>
  %silu = mil.silu %h : tensor<1x4x1x3xf16>
  %inverse = mil.inverse %h {epsilon = 1.0e-2 : f32} : tensor<1x4x1x3xf16>
  %round = mil.round %h : tensor<1x4x1x3xf16>
  %square = mil.square %h : tensor<1x4x1x3xf16>
  %floor = mil.floor %h : tensor<1x4x1x3xf16>
  %ceil = mil.ceil %h : tensor<1x4x1x3xf16>
  %erf = mil.erf %h : tensor<1x4x1x3xf16>
  %clip = mil.clip %h {alpha = -0.5 : f32, beta = 0.75 : f32} : tensor<1x4x1x3xf16>
  %eps16 = mil.rsqrt %square {epsilon = 1.0e-6 : f32} : tensor<1x4x1x3xf16>
  func.return %relu, %sigmoid, %tanh, %exp, %log, %sqrt, %rsqrt, %sin, %abs, %cos, %gelu, %silu, %inverse, %round, %square, %floor, %ceil, %erf, %clip, %eps16 : tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<2x5xf32>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>, tensor<1x4x1x3xf16>
}
""",
    "binary": """
func.func @main(%x: tensor<2x3xf16>, %y: tensor<3xf16>, %i: tensor<2x3xi32>, %j: tensor<2x3xi32>) -> (tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf16>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xi8>) {
  %add = mil.add %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %sub = mil.sub %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %mul = mil.mul %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %div = mil.real_div %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %max = mil.maximum %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %min = mil.minimum %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %two = mil.const dense<2.0> : tensor<f16>
  %pow = mil.pow %x, %two : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
  %eq = mil.equal %i, %j : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %ne = mil.not_equal %i, %j : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %lt = mil.less %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  %le = mil.less_equal %i, %j : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %gt = mil.greater %x, %y : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xi1>
  %ge = mil.greater_equal %i, %j : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %select = mil.select %lt, %x, %y : (tensor<2x3xi1>, tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  %three = mil.const dense<3> : tensor<i32>
  %int_div = mil.real_div %i, %three : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  %f32 = mil.cast %x {dtype = "fp32"} : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %i8 = mil.cast %i {dtype = "int8"} : (tensor<2x3xi32>) -> tensor<2x3xi8>
  func.return %add, %sub, %mul, %div, %max, %min, %pow, %eq, %ne, %lt, %le, %gt, %ge, %select, %int_div, %f32, %i8 : tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xf16>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf16>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xi8>
}
""",
    "linear": """
func.func @main(%x: tensor<2x8x16xf16>, %a: tensor<2x3x4xf32>, %b: tensor<5x4xf32>, %img: tensor<1x4x9x9xf32>) -> (tensor<2x8x6xf16>, tensor<2x3x5xf32>, tensor<2x5x3xf32>, tensor<1x6x8x4xf32>, tensor<1x4x5x5xf32>, tensor<2x8x6xf16>) {
  %w = mil.const weight "fc.weight" : tensor<6x16xf16>
  %bias = mil.const dense<[0.5, -1.0, 0.25, 0.0, 2.0, -0.125]> : tensor<6xf16>
  %fc = mil.linear %x, %w, bias %bias : (tensor<2x8x16xf16>, tensor<6x16xf16>, tensor<6xf16>) -> tensor<2x8x6xf16>
  %mm = mil.matmul %a, %b {transpose_y = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %mm_t = mil.matmul %b, %a {transpose_x = false, transpose_y = true} : (tensor<5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x5x3xf32>
  %k = mil.const weight "conv.weight" : tensor<6x4x3x3xf32>
  %conv = mil.conv %img, %k {pad_type = "custom", pad = array<i64: 1, 0, 2, 2>, strides = array<i64: 1, 3>} : (tensor<1x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x8x4xf32>
  %dw = mil.const weight "depthwise" : tensor<4x1x3x3xf32>
  %grouped = mil.conv %img, %dw {pad_type = "same", strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x9x9xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x5x5xf32>
  %w_view = mil.const weight "fc.weight_t" {weight_shape = array<i64: 16, 6>, perm = array<i64: 1, 0>} : tensor<6x16xf16>
  %fc_view = mil.linear %x, %w_view : (tensor<2x8x16xf16>, tensor<6x16xf16>) -> tensor<2x8x6xf16>
  func.return %fc, %mm, %mm_t, %conv, %grouped, %fc_view : tensor<2x8x6xf16>, tensor<2x3x5xf32>, tensor<2x5x3xf32>, tensor<1x6x8x4xf32>, tensor<1x4x5x5xf32>, tensor<2x8x6xf16>
}
""",
    "shape": """
func.func @main(%x: tensor<1x4x6xf16>, %y: tensor<1x4x6xf16>) -> (tensor<4x6xf16>, tensor<6x4x1xf16>, tensor<1x2x3xf16>, tensor<1x4x12xf16>, tensor<1x8x6xf16>, tensor<2x4x12xf16>, tensor<1x1x4x6x1xf16>, tensor<4x6xf16>, tensor<1x4x6xf16>, tensor<1x4x2xf16>, tensor<1x4x4xf16>, tensor<1x2x6xf16>, tensor<1x2x6xf16>) {
  %reshape = mil.reshape %x {shape = array<i64: 0, -1>} : (tensor<1x4x6xf16>) -> tensor<4x6xf16>
  %transpose = mil.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<1x4x6xf16>) -> tensor<6x4x1xf16>
  %slice = mil.slice_by_size %x {begin = array<i64: 0, 1, 3>, size = array<i64: -1, 2, 3>} : (tensor<1x4x6xf16>) -> tensor<1x2x3xf16>
  %concat = mil.concat %x, %y {axis = -1 : i64} : (tensor<1x4x6xf16>, tensor<1x4x6xf16>) -> tensor<1x4x12xf16>
  %interleave = mil.concat %x, %y {axis = 1 : i64, interleave = true} : (tensor<1x4x6xf16>, tensor<1x4x6xf16>) -> tensor<1x8x6xf16>
  %tile = mil.tile %concat {reps = array<i64: 2, 1, 1>} : (tensor<1x4x12xf16>) -> tensor<2x4x12xf16>
  %expand = mil.expand_dims %x {axes = array<i64: 0, -1>} : (tensor<1x4x6xf16>) -> tensor<1x1x4x6x1xf16>
  %squeeze_all = mil.squeeze %x : (tensor<1x4x6xf16>) -> tensor<4x6xf16>
  %squeeze_none = mil.squeeze %x {axes = array<i64: 1>} : (tensor<1x4x6xf16>) -> tensor<1x4x6xf16>
  %p0, %p1, %p2 = mil.split %x {axis = 2 : i64, num_splits = 3 : i64} : (tensor<1x4x6xf16>) -> (tensor<1x4x2xf16>, tensor<1x4x2xf16>, tensor<1x4x2xf16>)
  %q0, %q1 = mil.split %x {axis = -1 : i64, split_sizes = array<i64: 2, 4>} : (tensor<1x4x6xf16>) -> (tensor<1x4x2xf16>, tensor<1x4x4xf16>)
  %h0, %h1 = mil.split %y {axis = 1 : i64, num_splits = 2 : i64, split_sizes = array<i64: 2, 2>} : (tensor<1x4x6xf16>) -> (tensor<1x2x6xf16>, tensor<1x2x6xf16>)
  func.return %reshape, %transpose, %slice, %concat, %interleave, %tile, %expand, %squeeze_all, %squeeze_none, %p1, %q1, %h1, %h0 : tensor<4x6xf16>, tensor<6x4x1xf16>, tensor<1x2x3xf16>, tensor<1x4x12xf16>, tensor<1x8x6xf16>, tensor<2x4x12xf16>, tensor<1x1x4x6x1xf16>, tensor<4x6xf16>, tensor<1x4x6xf16>, tensor<1x4x2xf16>, tensor<1x4x4xf16>, tensor<1x2x6xf16>, tensor<1x2x6xf16>
}
""",
    "indexing": """
func.func @main(%table: tensor<10x4xf16>, %ids: tensor<2x3xi32>, %x: tensor<2x8x4xf32>, %scores: tensor<1x2x4x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x3x4xf32>, tensor<2x3x9xf16>, tensor<2x3x10xi32>, tensor<9x2x3xi1>, tensor<1x2x4x4xf16>, tensor<2x3xf32>) {
  %embed = mil.gather %table, %ids : (tensor<10x4xf16>, tensor<2x3xi32>) -> tensor<2x3x4xf16>
  %batched = mil.gather %x, %ids {axis = 1 : i64, batch_dims = 1 : i64, validate_indices = false} : (tensor<2x8x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %hot = mil.one_hot %ids {one_hot_vector_size = 9 : i64, on_value = 1.0 : f16, off_value = -0.5 : f16} : (tensor<2x3xi32>) -> tensor<2x3x9xf16>
  %hot_int = mil.one_hot %ids {one_hot_vector_size = 10 : i64} : (tensor<2x3xi32>) -> tensor<2x3x10xi32>
  %hot_bool = mil.one_hot %ids {one_hot_vector_size = 9 : i64, axis = 0 : i64, on_value = true, off_value = false} : (tensor<2x3xi32>) -> tensor<9x2x3xi1>
  %band = mil.band_part %scores {lower = -1 : i64, upper = 0 : i64} : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  %c = mil.const dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  func.return %embed, %batched, %hot, %hot_int, %hot_bool, %band, %c : tensor<2x3x4xf16>, tensor<2x3x4xf32>, tensor<2x3x9xf16>, tensor<2x3x10xi32>, tensor<9x2x3xi1>, tensor<1x2x4x4xf16>, tensor<2x3xf32>
}
""",
    "reduction": """
func.func @main(%x: tensor<2x3x4xf32>, %h: tensor<1x8x1x4xf16>, %i: tensor<2x3xi32>) -> (tensor<2x1x4xf32>, tensor<3xf32>, tensor<f32>, tensor<2x3x1xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<2xi32>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<2x3x4xf32>) {
  %sum = mil.reduce_sum %x {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %mean = mil.reduce_mean %x {axes = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %max = mil.reduce_max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %min = mil.reduce_min %x {axes = array<i64: 2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %prod = mil.reduce_prod %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %lse = mil.reduce_log_sum_exp %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %isum = mil.reduce_sum %i {axes = array<i64: 1>} : (tensor<2x3xi32>) -> tensor<2xi32>
  %softmax = mil.softmax %h {axis = 1 : i64} : tensor<1x8x1x4xf16>
  %gamma = mil.const dense<[1.0, 0.5, 2.0, -1.0]> : tensor<4xf16>
  %beta = mil.const dense<0.25> : tensor<4xf16>
  %norm = mil.layer_norm %h, gamma %gamma, beta %beta {axes = array<i64: -1>, epsilon = 1.0e-5 : f32} : (tensor<1x8x1x4xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x8x1x4xf16>
  %plain = mil.layer_norm %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %sum, %mean, %max, %min, %prod, %lse, %isum, %softmax, %norm, %plain : tensor<2x1x4xf32>, tensor<3xf32>, tensor<f32>, tensor<2x3x1xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<2xi32>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>, tensor<2x3x4xf32>
}
""",
    "cumsum": """
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>, %h: tensor<1x8x1x4xf16>) -> (tensor<2x3x4xf32>, tensor<1x8xi32>, tensor<1x8x1x4xf16>, tensor<2x3x4xf32>) {
  %first = mil.cumsum %x : tensor<2x3x4xf32>
  %ids = mil.cumsum %i {axis = -1 : i64, exclusive = true} : tensor<1x8xi32>
  %back = mil.cumsum %h {axis = 1 : i64, reverse = true} : tensor<1x8x1x4xf16>
  %both = mil.cumsum %x {axis = 2 : i64, exclusive = true, reverse = true} : tensor<2x3x4xf32>
  func.return %first, %ids, %back, %both : tensor<2x3x4xf32>, tensor<1x8xi32>, tensor<1x8x1x4xf16>, tensor<2x3x4xf32>
}
""",
    "topk": """
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>, %h: tensor<1x8x1x4xf16>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>, tensor<1x8xi32>, tensor<1x8xi32>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xi32>) {
  %top:2 = mil.topk %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi32>)
  %ids:2 = mil.topk %i {k = 8 : i64, axis = -1 : i64, ascending = true} : (tensor<1x8xi32>) -> (tensor<1x8xi32>, tensor<1x8xi32>)
  %sorted:2 = mil.topk %h {k = 8 : i64, axis = 1 : i64} : (tensor<1x8x1x4xf16>) -> (tensor<1x8x1x4xf16>, tensor<1x8x1x4xi32>)
  func.return %top#0, %top#1, %ids#0, %ids#1, %sorted#0, %sorted#1 : tensor<2x3x2xf32>, tensor<2x3x2xi32>, tensor<1x8xi32>, tensor<1x8xi32>, tensor<1x8x1x4xf16>, tensor<1x8x1x4xi32>
}
""",
    "argsort": """
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<1x8xi32>, %h: tensor<1x8x1x4xf16>) -> (tensor<2x3x4xi32>, tensor<1x8xi32>, tensor<1x8x1x4xi32>) {
  %order = mil.argsort %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  %ids = mil.argsort %i {axis = -1 : i64, ascending = true} : (tensor<1x8xi32>) -> tensor<1x8xi32>
  %heads = mil.argsort %h {axis = 1 : i64} : (tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xi32>
  func.return %order, %ids, %heads : tensor<2x3x4xi32>, tensor<1x8xi32>, tensor<1x8x1x4xi32>
}
""",
    "pixel_shuffle": """
func.func @main(%x: tensor<1x8x4x6xf32>, %h: tensor<1x9x3x3xf16>) -> (tensor<1x2x8x12xf32>, tensor<1x32x2x3xf32>, tensor<1x1x9x9xf16>, tensor<1x9x3x3xf16>) {
  %up = mil.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<1x8x4x6xf32>) -> tensor<1x2x8x12xf32>
  %down = mil.pixel_unshuffle %x {downscale_factor = 2 : i64} : (tensor<1x8x4x6xf32>) -> tensor<1x32x2x3xf32>
  %up16 = mil.pixel_shuffle %h {upscale_factor = 3 : i64} : (tensor<1x9x3x3xf16>) -> tensor<1x1x9x9xf16>
  %back = mil.pixel_unshuffle %up16 {downscale_factor = 3 : i64} : (tensor<1x1x9x9xf16>) -> tensor<1x9x3x3xf16>
  func.return %up, %down, %up16, %back : tensor<1x2x8x12xf32>, tensor<1x32x2x3xf32>, tensor<1x1x9x9xf16>, tensor<1x9x3x3xf16>
}
""",
    "quantization": """
func.func @main(%x: tensor<1x4x1x8xf16>) -> (tensor<1x4x1x8xi8>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xi8>, tensor<4x8xf32>, tensor<4x8xf16>) {
  %scale = mil.const dense<0.05> : tensor<f16>
  %zp = mil.const dense<3> : tensor<i8>
  %q = mil.quantize %x, zero_point %zp, %scale {output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xi8>
  %dq = mil.dequantize %q, zero_point %zp, %scale : (tensor<1x4x1x8xi8>, tensor<i8>, tensor<f16>) -> tensor<1x4x1x8xf16>
  %channel_scale = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  %per_channel = mil.quantize %x, %channel_scale {axis = 1 : i64, output_dtype = "int8"} : (tensor<1x4x1x8xf16>, tensor<4xf16>) -> tensor<1x4x1x8xi8>
  %data = mil.const dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1], [127, -128, 0, 0, 9, 9, 9, 9]]> : tensor<4x8xi8>
  %zp32 = mil.const dense<[0.0, 1.0, -1.0, 0.5]> : tensor<4xf32>
  %scale32 = mil.const dense<[0.5, 0.25, 2.0, 1.0]> : tensor<4xf32>
  %deq = mil.constexpr_affine_dequantize %data, %zp32, %scale32 {axis = 0 : i64} : (tensor<4x8xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  %qw = mil.const weight "qweight" : tensor<4x8xi8>
  %zp8 = mil.const dense<[0, 1, 2, 3]> : tensor<4xi8>
  %deq_weight = mil.constexpr_affine_dequantize %qw, %zp8, %channel_scale {axis = 0 : i64} : (tensor<4x8xi8>, tensor<4xi8>, tensor<4xf16>) -> tensor<4x8xf16>
  func.return %q, %dq, %per_channel, %deq, %deq_weight : tensor<1x4x1x8xi8>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xi8>, tensor<4x8xf32>, tensor<4x8xf16>
}
""",
    "compressed": """
func.func @main(%x: tensor<1x8x1x4xf16>) -> (tensor<8x16xf16>, tensor<1x8x1x4xf16>, tensor<4x3xf16>) {
  %data = mil.const dense<[[-8, 7, 1, 0, 2, 3, -1, -2, 4, 5, 6, -3, -4, -5, -6, -7], [0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1], [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4], [-1, -1, -1, -1, -2, -2, -2, -2, -3, -3, -3, -3, -4, -4, -4, -4], [0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7], [5, -5, 5, -5, 5, -5, 5, -5, 5, -5, 5, -5, 5, -5, 5, -5], [3, 2, 1, 0, -1, -2, -3, -4, 3, 2, 1, 0, -1, -2, -3, -4], [6, 6, 6, 6, 6, 6, 6, 6, -6, -6, -6, -6, -6, -6, -6, -6]]> : tensor<8x16xi4>
  %scale = mil.const dense<[[0.5, 0.25], [1.0, 2.0], [0.5, 0.5], [1.0, 1.0], [0.125, 0.25], [2.0, 4.0], [1.0, 0.5], [0.25, 0.125]]> : tensor<8x2xf16>
  %blocks = mil.constexpr_blockwise_shift_scale %data, %scale : (tensor<8x16xi4>, tensor<8x2xf16>) -> tensor<8x16xf16>
  %indices = mil.const dense<[[[[1]], [[2]], [[3]], [[0]], [[1]], [[1]], [[2]], [[2]]], [[[3]], [[3]], [[0]], [[1]], [[0]], [[0]], [[1]], [[2]]], [[[2]], [[1]], [[0]], [[3]], [[3]], [[2]], [[1]], [[0]]], [[[0]], [[0]], [[0]], [[0]], [[3]], [[3]], [[3]], [[3]]], [[[1]], [[2]], [[3]], [[0]], [[1]], [[1]], [[2]], [[2]]], [[[3]], [[3]], [[0]], [[1]], [[0]], [[0]], [[1]], [[2]]], [[[2]], [[1]], [[0]], [[3]], [[3]], [[2]], [[1]], [[0]]], [[[0]], [[1]], [[0]], [[1]], [[3]], [[2]], [[3]], [[2]]]]> : tensor<8x8x1x1xui2>
  %lut = mil.const dense<[[[[[[0.0], [1.0], [2.0], [3.0]]]]], [[[[[-1.0], [-2.0], [-3.0], [-4.0]]]]]]> : tensor<2x1x1x1x4x1xf16>
  %w = mil.constexpr_lut_to_dense %indices, %lut : (tensor<8x8x1x1xui2>, tensor<2x1x1x1x4x1xf16>) -> tensor<8x8x1x1xf16>
  %conv = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<8x8x1x1xf16>) -> tensor<1x8x1x4xf16>
  %vindices = mil.const dense<[[1, 0, 3], [2, 2, 1]]> : tensor<2x3xui2>
  %vlut = mil.const dense<[[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]]]> : tensor<1x1x4x2xf16>
  %vector = mil.constexpr_lut_to_dense %vindices, %vlut {vector_axis = 0 : i64} : (tensor<2x3xui2>, tensor<1x1x4x2xf16>) -> tensor<4x3xf16>
  func.return %blocks, %conv, %vector : tensor<8x16xf16>, tensor<1x8x1x4xf16>, tensor<4x3xf16>
}
""",
    "resampling": """
func.func @main(%x: tensor<1x3x4x5xf32>, %h: tensor<1x3x4x5xf16>, %s: tensor<1x3x5xf16>) -> (tensor<1x3x8x15xf32>, tensor<1x3x8x10xf16>, tensor<1x3x10xf16>, tensor<1x3x5x10xf32>, tensor<1x3x7x12xf16>, tensor<1x3x10xf16>, tensor<1x3x4x5xf16>, tensor<1x3x4x5xf32>, tensor<1x3x4x5xf16>) {
  %nearest = mil.upsample_nearest_neighbor %x {scale_factor_height = 2 : i64, scale_factor_width = 3 : i64} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x15xf32>
  %bilinear = mil.upsample_bilinear %h {scale_factor_height = 2 : i64, scale_factor_width = 2 : i64, align_corners = false} : (tensor<1x3x4x5xf16>) -> tensor<1x3x8x10xf16>
  %corners = mil.upsample_bilinear %s {scale_factor_width = 2 : i64} : (tensor<1x3x5xf16>) -> tensor<1x3x10xf16>
  %constant = mil.pad %x {pad = array<i64: 1, 0, 2, 3>, constant_val = -1.5 : f32} : (tensor<1x3x4x5xf32>) -> tensor<1x3x5x10xf32>
  %reflect = mil.pad %h {pad = array<i64: 1, 2, 3, 4>, mode = "reflect"} : (tensor<1x3x4x5xf16>) -> tensor<1x3x7x12xf16>
  %replicate = mil.pad %s {pad = array<i64: 0, 5>, mode = "replicate"} : (tensor<1x3x5xf16>) -> tensor<1x3x10xf16>
  %leaky = mil.leaky_relu %h {alpha = 0.2 : f32} : tensor<1x3x4x5xf16>
  %elu = mil.elu %x {alpha = 1.0 : f32} : tensor<1x3x4x5xf32>
  %hard = mil.sigmoid_hard %h {alpha = 0.16666667 : f32, beta = 0.5 : f32} : tensor<1x3x4x5xf16>
  func.return %nearest, %bilinear, %corners, %constant, %reflect, %replicate, %leaky, %elu, %hard : tensor<1x3x8x15xf32>, tensor<1x3x8x10xf16>, tensor<1x3x10xf16>, tensor<1x3x5x10xf32>, tensor<1x3x7x12xf16>, tensor<1x3x10xf16>, tensor<1x3x4x5xf16>, tensor<1x3x4x5xf32>, tensor<1x3x4x5xf16>
}
""",
    "vision": """
func.func @main(%x: tensor<1x4x7x6xf32>, %h: tensor<1x4x7x6xf16>, %s: tensor<2x6x5xf16>) -> (tensor<1x4x3x2xf32>, tensor<1x4x4x4xf32>, tensor<1x4x7x2xf16>, tensor<2x6x2xf16>, tensor<1x4x7x6xf32>, tensor<1x4x7x6xf16>, tensor<1x4x7x6xf32>, tensor<1x4x7x6xf16>, tensor<1x3x9x7xf32>, tensor<1x3x14x15xf32>, tensor<2x6x10xf16>) {
  %max = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "valid"} : (tensor<1x4x7x6xf32>) -> tensor<1x4x3x2xf32>
  %max_ceil = mil.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x4x7x6xf32>) -> tensor<1x4x4x4xf32>
  %avg = mil.avg_pool %h {kernel_sizes = array<i64: 2, 3>, strides = array<i64: 1, 3>, pad_type = "same_lower"} : (tensor<1x4x7x6xf16>) -> tensor<1x4x7x2xf16>
  %avg_excl = mil.avg_pool %s {kernel_sizes = array<i64: 4>, strides = array<i64: 3>, pad_type = "same", exclude_padding_from_average = true} : (tensor<2x6x5xf16>) -> tensor<2x6x2xf16>
  %mean = mil.const weight "bn.mean" : tensor<4xf32>
  %var = mil.const dense<[1.0, 2.0, 0.5, 0.25]> : tensor<4xf32>
  %bn = mil.batch_norm %x, %mean, %var, gamma %var, beta %mean {epsilon = 1.0e-03 : f32} : (tensor<1x4x7x6xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %mean16 = mil.const dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf16>
  %var16 = mil.const dense<[1.0, 2.0, 0.5, 0.25]> : tensor<4xf16>
  %bn_plain = mil.batch_norm %h, %mean16, %var16 : (tensor<1x4x7x6xf16>, tensor<4xf16>, tensor<4xf16>) -> tensor<1x4x7x6xf16>
  %in = mil.instance_norm %x, gamma %var, beta %mean : (tensor<1x4x7x6xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x7x6xf32>
  %in_plain = mil.instance_norm %h : (tensor<1x4x7x6xf16>) -> tensor<1x4x7x6xf16>
  %w = mil.const weight "up.weight" : tensor<4x3x3x2xf32>
  %b = mil.const weight "up.bias" : tensor<3xf32>
  %up = mil.conv_transpose %x, %w : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>) -> tensor<1x3x9x7xf32>
  %up_custom = mil.conv_transpose %x, %w, bias %b {pad = array<i64: 1, 0, 0, 2>, pad_type = "custom", strides = array<i64: 2, 3>} : (tensor<1x4x7x6xf32>, tensor<4x3x3x2xf32>, tensor<3xf32>) -> tensor<1x3x14x15xf32>
  %ws = mil.const weight "up.grouped" : tensor<6x2x3xf16>
  %up_same = mil.conv_transpose %s, %ws {pad_type = "same", strides = array<i64: 2>, dilations = array<i64: 2>, groups = 3 : i64} : (tensor<2x6x5xf16>, tensor<6x2x3xf16>) -> tensor<2x6x10xf16>
  func.return %max, %max_ceil, %avg, %avg_excl, %bn, %bn_plain, %in, %in_plain, %up, %up_custom, %up_same : tensor<1x4x3x2xf32>, tensor<1x4x4x4xf32>, tensor<1x4x7x2xf16>, tensor<2x6x2xf16>, tensor<1x4x7x6xf32>, tensor<1x4x7x6xf16>, tensor<1x4x7x6xf32>, tensor<1x4x7x6xf16>, tensor<1x3x9x7xf32>, tensor<1x3x14x15xf32>, tensor<2x6x10xf16>
}
""",
    "consts": """
func.func @main(%x: tensor<2x8xf32>) -> (tensor<f16>, tensor<f32>, tensor<i32>, tensor<i8>, tensor<i1>, tensor<12xi1>, tensor<2x8xi32>, tensor<3xf16>, tensor<2x8xf32>, tensor<4xf16>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %h = mil.const dense<-65504.0> : tensor<f16>
  %f = mil.const dense<0.1> : tensor<f32>
  %i = mil.const dense<-7> : tensor<i32>
  %b = mil.const dense<-128> : tensor<i8>
  %t = mil.const dense<true> : tensor<i1>
  %mask = mil.const dense<[true, false, true, true, false, false, true, false, true, true, true, false]> : tensor<12xi1>
  %big_int = mil.const dense<[[0, 1, 2, 3, 4, 5, 6, 7], [-8, -7, -6, -5, -4, -3, -2, -1]]> : tensor<2x8xi32>
  %special = mil.const dense<[0x7C00, 0xFC00, 0x0001]> : tensor<3xf16>
  %big = mil.const dense<[[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5]]> : tensor<2x8xf32>
  %tiny_weight = mil.const weight "tiny" : tensor<4xf16>
  %shared_a = mil.const weight "shared" : tensor<2x8xf32>
  %shared_b = mil.const weight "shared" : tensor<2x8xf32>
  %sum = mil.add %shared_a, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %h, %f, %i, %b, %t, %mask, %big_int, %special, %big, %tiny_weight, %shared_b, %sum : tensor<f16>, tensor<f32>, tensor<i32>, tensor<i8>, tensor<i1>, tensor<12xi1>, tensor<2x8xi32>, tensor<3xf16>, tensor<2x8xf32>, tensor<4xf16>, tensor<2x8xf32>, tensor<2x8xf32>
}
""",
    "functions": """
func.func @main(%x: tensor<1x4x1x6xf16>) -> tensor<1x4x1x6xf16> {
  %y = mil.relu %x : tensor<1x4x1x6xf16>
  func.return %y : tensor<1x4x1x6xf16>
}
func.func @layer_0(%x: tensor<1x4x1x6xf16>, %const: tensor<1x4x1x6xf16>) -> (tensor<1x4x1x6xf16>, tensor<1x4x1x6xf16>, tensor<1x4x1x6xf16>) {
  %y = mil.mul %x, %const : (tensor<1x4x1x6xf16>, tensor<1x4x1x6xf16>) -> tensor<1x4x1x6xf16>
  %y_1 = mil.add %y, %x : (tensor<1x4x1x6xf16>, tensor<1x4x1x6xf16>) -> tensor<1x4x1x6xf16>
  %y_perm = mil.transpose %y_1 {perm = array<i64: 0, 1, 2, 3>} : (tensor<1x4x1x6xf16>) -> tensor<1x4x1x6xf16>
  func.return %y_perm, %y, %y_perm : tensor<1x4x1x6xf16>, tensor<1x4x1x6xf16>, tensor<1x4x1x6xf16>
}
""",
}


def case_weights(module: builtin.ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    """Random data for every weight const (int8 weights as int8, compressed
    data — int4, uint1..uint8 — in its range)."""
    rng = np.random.default_rng(seed)
    weights: dict[str, np.ndarray] = {}
    for op in module.walk():
        if isinstance(op, mil.ConstOp) and op.weight is not None:
            shape = op.file_shape()
            element = op.result.type.element_type
            if element == builtin.i8:
                weights[op.weight.data] = rng.integers(-128, 128, shape, np.int8)
            elif element in mil.MIL_STORAGE_DTYPES.values():
                bits = element.width.data
                signed = element.signedness.data != builtin.Signedness.UNSIGNED
                low, high = (
                    (-(2 ** (bits - 1)), 2 ** (bits - 1)) if signed else (0, 2**bits)
                )
                dtype = np.int8 if signed else np.uint8
                weights[op.weight.data] = rng.integers(low, high, shape).astype(dtype)
            else:
                weights[op.weight.data] = rng.standard_normal(shape).astype(np.float32)
    return weights


def round_trip(
    module: builtin.ModuleOp, weights: dict[str, np.ndarray], tmp_path: Path
) -> tuple[str, builtin.ModuleOp, dict[str, np.ndarray]]:
    """Prints and writes `module`, imports it, prints it again: the two texts
    must be equal. Returns the text and the imported program."""
    text, entries = module_to_mil_text(module, weights)
    directory = write_mil_text_dir(module, weights, tmp_path / "model")
    assert (directory / "model.mil").read_text() == text
    imported, imported_weights = read_mil_file(directory / "model.mil")
    again, again_entries = module_to_mil_text(imported, imported_weights)
    assert again == text
    assert [(e.offset, e.dtype, e.shape) for e in again_entries] == [
        (e.offset, e.dtype, e.shape) for e in entries
    ]
    return text, imported, imported_weights


def assert_same_numbers(
    a: builtin.ModuleOp,
    a_weights: dict[str, np.ndarray],
    b: builtin.ModuleOp,
    b_weights: dict[str, np.ndarray],
    seed: int = 1,
) -> None:
    functions_a = [op for op in a.ops if isinstance(op, func.FuncOp)]
    functions_b = [op for op in b.ops if isinstance(op, func.FuncOp)]
    assert [f.sym_name.data for f in functions_a] == [
        f.sym_name.data for f in functions_b
    ]
    for fa, fb in zip(functions_a, functions_b):
        assert fa.function_type == fb.function_type
        inputs = random_inputs(fa, seed)
        expected = run_function(a, inputs, a_weights, fa.sym_name.data)
        actual = run_function(b, inputs, b_weights, fb.sym_name.data)
        for e, r in zip(expected, actual, strict=True):
            assert e.dtype == r.dtype
            np.testing.assert_array_equal(e, r)


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip(case: str, tmp_path: Path):
    module = parse_module_text(CASES[case], case)
    weights = case_weights(module)
    _, imported, imported_weights = round_trip(module, weights, tmp_path)
    assert_same_numbers(module, weights, imported, imported_weights)


def test_cases_cover_every_mil_op():
    used = {
        op.name
        for case in CASES.values()
        for op in parse_module_text(case, "case").walk()
    }
    missing = {op.name for op in mil.MIL_OPS} - used
    assert not missing, f"no MIL text round trip for {sorted(missing)}"


@pytest.mark.parametrize(
    "path",
    sorted(p for p in MIL_DIALECT_TESTS.glob("*.mlir") if "invalid" not in p.name),
    ids=lambda p: p.stem,
)
def test_mil_dialect_lit_tests_round_trip(path: Path, tmp_path: Path):
    """Every function of the mil dialect's own lit tests prints, imports
    and prints again to the same text."""
    module = parse_module_text(path.read_text(), str(path))
    round_trip(module, case_weights(module), tmp_path)


def test_qwen3_decoder_layer_round_trip(tmp_path: Path):
    from xdsl_ane.models.transformer import (
        build_decoder_layer,
        make_weights,
    )
    from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

    module = build_decoder_layer(TINY_DECODER)
    weights = make_weights(module, TINY_DECODER)
    ConvertRlxToMilPass().apply(Context(), module)
    text, imported, imported_weights = round_trip(module, weights, tmp_path)
    assert text.count("BLOBFILE") == len(imported_weights) >= len(weights)
    assert_same_numbers(module, weights, imported, imported_weights)
    # the imported program is the same program, op for op
    kinds = [op.name for op in module.walk()]
    assert [op.name for op in imported.walk()] == kinds


# --- format ----------------------------------------------------------------------


def test_hex_floats_are_exact():
    assert hex_float(1.0) == "0x1p+0"
    assert hex_float(10.0) == "0x1.4p+3"
    assert hex_float(-65504.0) == "-0x1.ffcp+15"
    assert hex_float(0.0) == "0x0p+0"
    assert hex_float(-0.0) == "-0x0p+0"
    assert hex_float(float("inf")) == "inf"
    values = np.random.default_rng(0).standard_normal(1000)
    for dtype in (np.float16, np.float32):
        for v in values.astype(dtype):
            assert dtype(float.fromhex(hex_float(float(v)))) == v


def test_program_layout():
    module = parse_module_text(
        """
func.func @kernel(%x: tensor<1x64x1x256xf16>, %b: tensor<1x64x1x256xf16>) -> (tensor<1x64x1x256xf16>, tensor<1x64x256x1xf16>) {
  %y = mil.mul %x, %b : (tensor<1x64x1x256xf16>, tensor<1x64x1x256xf16>) -> tensor<1x64x1x256xf16>
  %t = mil.transpose %y {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x64x1x256xf16>) -> tensor<1x64x256x1xf16>
  func.return %y, %t : tensor<1x64x1x256xf16>, tensor<1x64x256x1xf16>
}
""",
        "layout",
    )
    text, entries = module_to_mil_text(module)
    assert entries == []
    assert text == (
        "program(1.3)\n"
        '[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, '
        '{"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, '
        '{"coremltools-version", "9.0"}})]\n'
        "{\n"
        "    func kernel<ios18>(tensor<fp16, [1, 64, 1, 256]> x, "
        "tensor<fp16, [1, 64, 1, 256]> b) {\n"
        "        tensor<fp16, [1, 64, 1, 256]> y = mul(x = x, y = b)"
        '[name = string("y")];\n'
        '        tensor<int32, [4]> t_perm = const()[name = string("t_perm"), '
        "val = tensor<int32, [4]>([0, 1, 3, 2])];\n"
        "        tensor<fp16, [1, 64, 256, 1]> t = transpose(perm = t_perm, x = y)"
        '[name = string("t")];\n'
        "    } -> (y, t);\n"
        "}\n"
    )


def test_weight_offsets_without_data_match_the_written_blob(tmp_path: Path):
    """The target prints offsets without weight data; they are the offsets
    coremltools' writer gives, and its reader finds the data there."""
    module = parse_module_text(CASES["linear"], "linear")
    weights = case_weights(module)
    text, entries = module_to_mil_text(module)
    assert all(e.data is None for e in entries if e.source in weights)
    stream = io.StringIO()
    MilTextTarget().emit(Context(), module, stream)
    assert stream.getvalue() == text
    write_mil_text_dir(module, weights, tmp_path / "m")
    assert (tmp_path / "m" / "model.mil").read_text() == text
    assert [e.offset for e in entries] == [64, 320, 1280, 1536]

    from coremltools.libmilstoragepython import _BlobStorageReader

    reader = _BlobStorageReader(str(tmp_path / "m" / "weights" / "weight.bin"))
    _, data = module_to_mil_text(module, weights)
    for entry in data:
        if entry.dtype == "fp16":
            stored = reader.read_fp16_data(entry.offset).view(np.float16)
        else:
            stored = reader.read_float_data(entry.offset)
        np.testing.assert_array_equal(stored, entry.data.reshape(-1))
    # the transposed view is stored transposed
    view = next(e for e in data if e.source == "fc.weight_t")
    np.testing.assert_array_equal(
        view.data, weights["fc.weight_t"].T.astype(np.float16)
    )


def test_function_names_keep_their_suffix():
    module = parse_module_text(CASES["functions"], "functions")
    text, _ = module_to_mil_text(module)
    assert "    func main<ios18>(" in text
    assert "    func layer_0<ios18>(" in text
    # %y_1's hint is "y" (xDSL drops `_N`); it is renamed apart from %y, and
    # an input named like a MIL keyword gets a suffix
    assert "tensor<fp16, [1, 4, 1, 6]> y_1 = add(x = y, y = x)" in text
    assert "tensor<fp16, [1, 4, 1, 6]> const_workaround) {" in text
    # y_perm is returned twice: the second time through a copy
    assert "y_perm_output = identity(x = y_perm)" in text
    assert "} -> (y_perm, y, y_perm_output);" in text


def test_names_stay_stable_through_import():
    assert stable_base("layers.0.q_proj.weight") == "layers_0_q_proj_weight"
    assert stable_base("y_1") == "y"
    assert stable_base("w_1_2") == "w"
    assert stable_base("0.weight") == "var_0_weight"
    assert stable_base("fp16") == "fp16_workaround"
    assert stable_base("fp16_1") == "fp16_workaround"
    assert stable_base("_7") == "var"


def test_write_mil_text_dir_replaces_atomically(tmp_path: Path):
    module = parse_module_text(CASES["linear"], "linear")
    weights = case_weights(module)
    target = tmp_path / "out"
    target.mkdir()
    (target / "notes.txt").write_text("the user's")
    with pytest.raises(XdslAneError, match="did not write"):
        write_mil_text_dir(module, weights, target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    (target / "notes.txt").unlink()
    write_mil_text_dir(module, weights, target)
    write_mil_text_dir(module, weights, target)  # a compiled model: replaced
    assert sorted(p.name for p in target.iterdir()) == ["model.mil", "weights"]
    before = (target / "model.mil").read_text()
    missing = dict(weights)
    del missing["conv.weight"]
    with pytest.raises(XdslAneError, match="conv.weight"):
        write_mil_text_dir(module, missing, target)
    assert (target / "model.mil").read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_printer_rejects_non_mil_ops():
    module = parse_module_text(
        """
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = rlx.relu %x : tensor<2xf32>
  func.return %y : tensor<2xf32>
}
""",
        "rlx",
    )
    with pytest.raises(XdslAneError, match="rlx.relu is not a mil op"):
        module_to_mil_text(module)


# --- hand-written kernels --------------------------------------------------------


def test_packed_dynamic_weight_matmul_kernel():
    module, weights = read_mil_file(KERNELS / "packed_matmul.mil")
    assert weights == {}
    ops = [op.name for op in module.walk() if op.name.startswith("mil.")]
    assert len(ops) == 8
    ic, s, oc = 16, 8, 12
    x = np.random.default_rng(3).standard_normal((1, ic, 1, s + oc)).astype(np.float16)
    (y,) = run_function(module, [x], weights)
    activation = x[0, :, 0, :s].astype(np.float64)  # [IC, S]
    weight = x[0, :, 0, s:].astype(np.float64)  # [IC, OC]
    expected = (activation.T @ weight).T.reshape(1, oc, 1, s)
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, expected, rtol=1e-2, atol=1e-2)


def test_rmsnorm_silu_kernel():
    module, _ = read_mil_file(KERNELS / "rmsnorm_silu.mil")
    x = np.random.default_rng(4).standard_normal((1, 8, 1, 4)).astype(np.float16)
    y, y2 = run_function(module, [x], {})
    gamma = np.array([1.0, 1.1, 0.7, -0.5, 2.5, 0.5, 1.25, 0.25], np.float16)
    x64 = x.astype(np.float64)
    normed = x64 / np.sqrt((x64**2).mean(axis=1, keepdims=True) + 1e-5)
    normed *= gamma.astype(np.float64).reshape(1, 8, 1, 1)
    silu = normed / (1 + np.exp(-normed))
    np.testing.assert_allclose(y, silu, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(y2, np.clip(silu, -2, 65504), rtol=2e-2, atol=2e-2)


# Hand-written int8 kernels give a constexpr's tensors, and any op's
# compile-time parameters, as attributes; the same program with them as inputs.
PARAMETERS_AS_ATTRIBUTES = """program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 2, 1, 3]> x) {
        tensor<fp16, [4, 2]> w = constexpr_affine_dequantize()[axis = int32(0), name = string("w"), quantized_data = tensor<int8, [4, 2]>([1, 2, 3, 4, 5, -6, 7, -8]), scale = fp16(0x1p-3), zero_point = int8(1)];
        tensor<fp16, [4, 2, 1, 1]> w4 = reshape(x = w)[name = string("w4"), shape = tensor<int32, [4]>([4, 2, 1, 1])];
        tensor<fp16, [1, 4, 1, 3]> y = conv(x = x, weight = w4)[name = string("y")];
        tensor<fp16, [1, 4, 1, 1]> s = reduce_sum(x = y)[axes = tensor<int32, [2]>([2, 3]), keep_dims = bool(true), name = string("s")];
    } -> (s);
}
"""
PARAMETERS_AS_INPUTS = """program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 2, 1, 3]> x) {
        tensor<fp16, [4, 2]> w = constexpr_affine_dequantize(axis = int32(0), quantized_data = tensor<int8, [4, 2]>([1, 2, 3, 4, 5, -6, 7, -8]), scale = fp16(0x1p-3), zero_point = int8(1))[name = string("w")];
        tensor<fp16, [4, 2, 1, 1]> w4 = reshape(shape = tensor<int32, [4]>([4, 2, 1, 1]), x = w)[name = string("w4")];
        tensor<fp16, [1, 4, 1, 3]> y = conv(x = x, weight = w4)[name = string("y")];
        tensor<fp16, [1, 4, 1, 1]> s = reduce_sum(axes = tensor<int32, [2]>([2, 3]), keep_dims = bool(true), x = y)[name = string("s")];
    } -> (s);
}
"""


def test_compile_time_parameters_given_as_attributes(tmp_path: Path):
    """Parameters written as attributes import as the same program as when
    written as inputs: the same ops, the same numbers, and the printer's form
    round-trips."""
    attributes, weights = parse_mil_text(PARAMETERS_AS_ATTRIBUTES)
    inputs, _ = parse_mil_text(PARAMETERS_AS_INPUTS)
    assert str(attributes) == str(inputs)
    assert_same_numbers(attributes, weights, inputs, {})
    x = np.random.default_rng(8).standard_normal((1, 2, 1, 3)).astype(np.float16)
    (s,) = run_function(attributes, [x], weights)
    q = np.array([[1, 2], [3, 4], [5, -6], [7, -8]], np.float64)
    w = (q - 1) * 0.125
    expected = (w @ x.astype(np.float64)[0, :, 0, :]).sum(axis=1).reshape(1, 4, 1, 1)
    np.testing.assert_allclose(s.astype(np.float64), expected, rtol=1e-2, atol=1e-2)
    text, imported, imported_weights = round_trip(attributes, weights, tmp_path)
    assert "constexpr_affine_dequantize(" in text
    assert_same_numbers(attributes, weights, imported, imported_weights)


def conv_kernel_weights() -> tuple[np.ndarray, np.ndarray]:
    """The data of tests/filecheck/tools/import/weights/weight.bin."""
    rng = np.random.default_rng(7)
    weight = (0.25 * rng.standard_normal((24, 16, 1, 1))).astype(np.float16)
    bias = (0.1 * rng.standard_normal(24)).astype(np.float16)
    return weight, bias


def write_conv_kernel_blob(path: Path) -> None:
    weight, bias = conv_kernel_weights()
    blob = WeightBlob()
    assert blob.add("W", "fp16", weight.shape, "W", weight).offset == 64
    assert blob.add("b", "fp16", bias.shape, "b", bias).offset == 896
    blob.write(path)


def test_conv_kernel_with_blobfile_weights(tmp_path: Path):
    committed = KERNELS / "weights" / "weight.bin"
    write_conv_kernel_blob(tmp_path / "weight.bin")
    assert committed.read_bytes() == (tmp_path / "weight.bin").read_bytes()
    module, weights = read_mil_file(KERNELS / "conv_blobfile.mil")
    weight, bias = conv_kernel_weights()
    assert sorted(weights) == ["W", "b"]
    np.testing.assert_array_equal(weights["W"], weight)
    np.testing.assert_array_equal(weights["b"], bias)
    x = np.random.default_rng(5).standard_normal((1, 16, 1, 8)).astype(np.float32)
    (y,) = run_function(module, [x], weights)
    x16 = x.astype(np.float16).astype(np.float64)[0, :, 0, :]  # [16, 8]
    expected = weight.astype(np.float64)[:, :, 0, 0] @ x16 + bias[:, None]
    expected = np.maximum(expected, 0).reshape(1, 24, 1, 8)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(
    "kernel", ["packed_matmul", "rmsnorm_silu", "conv_blobfile", "split_concat"]
)
def test_hand_written_kernels_round_trip(kernel: str, tmp_path: Path):
    """Imported kernels print in the printer's form, which round-trips and
    computes the same numbers as the kernel."""
    module, weights = read_mil_file(KERNELS / f"{kernel}.mil")
    _, imported, imported_weights = round_trip(module, weights, tmp_path)
    assert_same_numbers(module, weights, imported, imported_weights)


@pytest.mark.parametrize(
    "kernel", ["packed_matmul", "rmsnorm_silu", "conv_blobfile", "split_concat"]
)
def test_imported_kernels_pass_coremltools_type_inference(kernel: str):
    """The importer's typing agrees with coremltools': the imported kernel,
    written as MIL protobuf, reloads through coremltools' milproto loader
    (which re-runs MIL type inference on every op) without findings."""
    from xdsl_ane.backend.milproto import module_to_proto

    module, weights = read_mil_file(KERNELS / f"{kernel}.mil")
    report = module_to_proto(module, weights).validate(reexport=False)
    assert report.ok, report


def test_weights_dir_and_model_path(tmp_path: Path):
    text = (KERNELS / "conv_blobfile.mil").read_text()
    (tmp_path / "blobs" / "weights").mkdir(parents=True)
    shutil.copy(KERNELS / "weights" / "weight.bin", tmp_path / "blobs" / "weights")
    _, weights = parse_mil_text(
        text, tmp_path / "k.mil", weights_dir=tmp_path / "blobs"
    )
    assert sorted(weights) == ["W", "b"]
    with pytest.raises(MilTextError, match="blob file"):
        parse_mil_text(text, tmp_path / "k.mil")


def test_frontend_and_target_are_registered():
    universe = Universe.get_multiverse()
    assert universe.all_targets["mil-text"]() is MilTextTarget
    assert universe.all_frontends["mil"]() is MilTextFrontend
    source = (KERNELS / "conv_blobfile.mil").read_bytes()
    module = MilTextFrontend(inline_weights=True).parse(
        Context(), io.BytesIO(source), str(KERNELS / "conv_blobfile.mil")
    )
    consts = [op for op in module.walk() if isinstance(op, mil.ConstOp)]
    assert consts and all(op.val is not None for op in consts)


# --- malformed input -------------------------------------------------------------

GOOD = """program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4]> x) {
        tensor<fp16, [1, 4]> y = relu(x = x)[name = string("y")];
    } -> (y);
}
"""


def blob_program(offset: int, dtype: str = "fp16", shape: str = "[4]") -> str:
    return (
        "program(1.3)\n{\n    func main<ios18>() {\n"
        f'        tensor<{dtype}, {shape}> w = const()[name = string("w"), '
        f"val = tensor<{dtype}, {shape}>(BLOBFILE(path = "
        f'string("@model_path/weights/weight.bin"), offset = uint64({offset})))];\n'
        "    } -> (w);\n}\n"
    )


MALFORMED: dict[str, tuple[str, str]] = {
    "truncated": (GOOD[:-30], "4:53: expected a type, got end of input"),
    "truncated statement": (
        GOOD.split("[name")[0],
        "4:45: expected ';', got end of input",
    ),
    "unknown op": (
        GOOD.replace("relu(", "frobnicate("),
        "4:34: unknown MIL op 'frobnicate'",
    ),
    "bad type": (
        GOOD.replace("tensor<fp16, [1, 4]> y", "tensor<fp8, [1, 4]> y"),
        "4:16: unknown type 'fp8'",
    ),
    "unsupported dtype": (
        GOOD.replace("tensor<fp16, [1, 4]> x", "tensor<uint8, [1, 4]> x"),
        "3:29: dtype 'uint8' is not supported",
    ),
    "dynamic shape": (
        GOOD.replace("[1, 4]> x", "[1, ?]> x"),
        "3:39: dynamic shapes are not supported",
    ),
    "unknown value": (
        GOOD.replace("relu(x = x)", "relu(x = z)"),
        "4:43: unknown value 'z'",
    ),
    "unknown output": (GOOD.replace("-> (y)", "-> (q)"), "5:11: unknown value 'q'"),
    "declared type differs": (
        GOOD.replace("tensor<fp16, [1, 4]> y", "tensor<fp16, [4, 1]> y"),
        "4:30: 'y' is declared tensor<fp16, [4, 1]>, but relu gives "
        "tensor<fp16, [1, 4]>",
    ),
    "op type error": (
        GOOD.replace("relu(x = x)", "matmul(x = x, y = x)"),
        "4:34: mil.matmul: contraction dimensions differ",
    ),
    "unknown input": (
        GOOD.replace("relu(x = x)", "relu(x = x, alpha = x)"),
        "4:46: relu has no input 'alpha' (its inputs are x)",
    ),
    "missing input": (
        GOOD.replace("relu(x = x)", "add(x = x)"),
        "4:34: add is missing its input 'y'",
    ),
    "parameter not const": (
        GOOD.replace("relu(x = x)", "softmax(x = x, axis = x)"),
        "4:56: input 'axis' of softmax must be a const, 'x' is computed",
    ),
    "parameter of wrong type": (
        GOOD.replace("relu(x = x)", "softmax(x = x, axis = fp16(1))"),
        "4:56: input 'axis' of softmax must be an int32 scalar, got fp16",
    ),
    "redefined value": (
        GOOD.replace("tensor<fp16, [1, 4]> y", "tensor<fp16, [1, 4]> x"),
        "4:30: value 'x' is already defined",
    ),
    "const type differs": (
        GOOD.replace(
            "        tensor<fp16, [1, 4]> y",
            '        tensor<int32, [2]> p = const()[name = string("p"), '
            "val = tensor<int32, [3]>([1, 2, 3])];\n        tensor<fp16, [1, 4]> y",
        ),
        "4:66: const 'p' is declared tensor<int32, [2]>, its val is tensor<int32, [3]>",
    ),
    "literal count": (
        GOOD.replace("relu(x = x)", "add(x = x, y = tensor<fp16, [1, 4]>([1, 2, 3]))"),
        "4:49: tensor<fp16, [1, 4]> literal has 3 values, expected 4",
    ),
    "int out of range": (
        GOOD.replace("relu(x = x)", "softmax(x = x, axis = int32(3000000000))"),
        "4:62: 3000000000 is out of range for int32",
    ),
    "unterminated string": (
        GOOD.replace('string("y")', 'string("y)'),
        "4:60: unterminated string",
    ),
    "stray character": (
        GOOD.replace("relu(x = x)", "relu(x = x) @"),
        "4:46: unexpected character '@'",
    ),
    "missing blob file": (
        blob_program(64),
        "4:99: blob file '@model_path/weights/weight.bin' not found",
    ),
    "bad blob offset": (blob_program(72), "4:157: no blob metadata at offset 72"),
    "blob offset outside": (blob_program(4096), "4:157: offset 4096 is outside"),
    "blob dtype differs": (
        blob_program(64, "fp32"),
        "4:157: the blob at offset 64 holds fp16, the const is tensor<fp32, [4]>",
    ),
    "blob size differs": (
        blob_program(64, shape="[8]"),
        "4:157: the blob at offset 64 holds 4 fp16 values, tensor<fp16, [8]> needs 8",
    ),
    "fp16 out of range": (
        GOOD.replace("relu(x = x)", "add(x = x, y = fp16(70000))"),
        "4:54: 70000 is out of range for fp16",
    ),
    "string input": (
        GOOD.replace("tensor<fp16, [1, 4]> x)", "string x)"),
        "3:22: function inputs must be tensors or scalars, not strings",
    ),
    "tuple for a single input": (
        GOOD.replace("relu(x = x)", "relu(x = (x, x))"),
        "4:43: input 'x' of relu takes one value, not a tuple",
    ),
    "input given twice": (
        GOOD.replace("relu(x = x)", "relu(x = x, x = x)"),
        "4:46: input 'x' is given twice",
    ),
    "string as tensor": (
        GOOD.replace("relu(x = x)", 'relu(x = string("x"))'),
        "4:43: a string is no tensor input",
    ),
    "input given as input and attribute": (
        GOOD.replace(
            "relu(x = x)[", "relu(x = x)[x = tensor<fp16, [1, 4]>([0, 1, 2, 3]), "
        ),
        "4:46: input 'x' is given both as an input and as an attribute",
    ),
    "attribute given twice": (
        GOOD.replace("relu(x = x)[", 'relu(x = x)[name = string("a"), '),
        "4:66: attribute 'name' is given twice",
    ),
    "unknown attribute": (
        GOOD.replace("relu(x = x)[", "relu(x = x)[alpha = fp16(1), "),
        "4:46: relu has no input 'alpha' (its inputs are x)",
    ),
    "trailing input": (GOOD + "}", "7:1: unexpected '}' after the program"),
    "not a program": ("func main<ios18>() {}", "1:1: expected 'program', got 'func'"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_gives_one_line(case: str, tmp_path: Path):
    text, expected = MALFORMED[case]
    if "blob" in case and "missing" not in case:
        (tmp_path / "weights").mkdir()
        blob = WeightBlob()
        blob.add("w", "fp16", (4,), "w", np.arange(4, dtype=np.float16))
        blob.write(tmp_path / "weights" / "weight.bin")
    path = tmp_path / "bad.mil"
    with pytest.raises(MilTextError) as info:
        parse_mil_text(text, path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{expected}"), message
    assert isinstance(info.value, XdslAneError)
