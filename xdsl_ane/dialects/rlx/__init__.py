"""The rlx dialect: a tensor-level ML IR modelled on the RLX compiler's IR.

Semantics are row-major and numpy-like; binary ops broadcast like numpy and
negative axes count from the end. Every op infers its result type from its
operands and properties (``infer_result_types``), so builders take only
operands and properties, and verifiers recompute the type and compare.
The op table in DESIGN.md is the specification. The ops live by family, one
module each:

- elementwise.py: the sources (constant, param), unary and binary ops,
  compare, where, cast
- shape.py: matmul, reshape, expand, transpose, narrow, concat, gather
- reduction.py: reduce_sum/mean/max/min, softmax, argmax, running sums and
  sorts (cumsum, topk, ...)
- normalization.py: rms_norm, layer_norm
- spatial_norm.py: batch_norm, group_norm (over the channels of [N, C, ...])
- pooling.py: max_pool, avg_pool
- convolution.py: conv, conv_transpose
- resampling.py: upsample, pad, pixel_shuffle, pixel_unshuffle
- activations.py: hardswish, hardsigmoid, leaky_relu, elu, clamp
- attention.py: rope, rope_backward, attention, attention_backward
- loss.py: softmax_cross_entropy and its backward
- training.py: rms_norm_backward_input/gamma, activation_backward
- quantization.py: quantize, dequantize
- state.py: the state type, read_state, write_state, slice_update

Each family module lists its ops once, in `OPS`; the dialect, `RLX_OPS` and
the package's names of the ops (`rlx.AddOp`) are built from the families
(`FAMILIES`). A family has the same name where its ops are lowered
(xdsl_ane/passes/rlx_to_mil/<family>.py) and tested
(tests/filecheck/dialects/rlx/<family>.mlir and <family>_invalid.mlir,
tests/filecheck/passes/convert-rlx-to-mil/<family>.mlir). base.py holds
what every family shares: the op base class and operand checks; the lit
cases of the rules shared by all families (property spelling and types)
are in properties_invalid.mlir.
"""

from xdsl.ir import Dialect

from xdsl_ane.dialects.rlx import (
    activations,
    attention,
    convolution,
    elementwise,
    loss,
    normalization,
    pooling,
    quantization,
    reduction,
    resampling,
    shape,
    spatial_norm,
    state,
    training,
)

# The helpers other packages name through the package; the ops are the
# families' (`OPS`), named below.
from xdsl_ane.dialects.rlx.attention import (  # noqa: F401
    ATTENTION_WRT,
    ROPE_STYLES,
    attention_scale,
    causal_visible,
    in_layout,
    sequence_and_head,
)
from xdsl_ane.dialects.rlx.base import RlxOp
from xdsl_ane.dialects.rlx.elementwise import (  # noqa: F401
    COMPARE_PREDICATES,
    BinaryOp,
    UnaryOp,
)
from xdsl_ane.dialects.rlx.pooling import PoolOp  # noqa: F401
from xdsl_ane.dialects.rlx.state import StateType
from xdsl_ane.dialects.rlx.training import ACTIVATION_KINDS  # noqa: F401

FAMILIES = (
    elementwise,
    shape,
    reduction,
    normalization,
    spatial_norm,
    pooling,
    convolution,
    resampling,
    activations,
    attention,
    loss,
    training,
    quantization,
    state,
)
"""The op families, one module each, in the order the dialect lists them."""

RLX_OPS: tuple[type[RlxOp], ...] = tuple(op for family in FAMILIES for op in family.OPS)
"""Every rlx op, family by family."""

globals().update({op.__name__: op for op in RLX_OPS})
# Each op is also a name of the package (`rlx.AddOp`), taken from its
# family's `OPS`: the one list of the ops.

RLX = Dialect("rlx", RLX_OPS, [StateType])
"""The rlx dialect: every op of DESIGN.md's rlx table."""
