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
- reduction.py: reduce_sum/mean/max/min, softmax, argmax, cumsum, topk
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

Each family module lists its ops once, in `OPS`; the dialect is built from
the families (`FAMILIES`). A family has the same name where its ops are lowered
(xdsl_ane/passes/rlx_to_mil/<family>.py) and tested
(tests/filecheck/dialects/rlx/<family>.mlir and <family>_invalid.mlir,
tests/filecheck/passes/convert-rlx-to-mil/<family>.mlir). base.py holds
what every family shares: the op base class and operand checks; the lit
cases of the rules shared by all families (property spelling and types)
are in properties_invalid.mlir.
"""

# The package's names are its families' ops and helpers, imported here to be
# re-exported: each op is listed once, in its family's `OPS`.
# ruff: noqa: F401

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
from xdsl_ane.dialects.rlx.activations import (
    AlphaActivationOp,
    ClampOp,
    EluOp,
    HardsigmoidOp,
    HardswishOp,
    LeakyReluOp,
)
from xdsl_ane.dialects.rlx.attention import (
    ATTENTION_WRT,
    LAYOUTS,
    MASKS,
    ROPE_STYLES,
    AttentionBackwardOp,
    AttentionBase,
    AttentionOp,
    RopeBackwardOp,
    RopeOp,
    attention_scale,
    causal_visible,
    check_attention,
    check_rope,
    in_layout,
    layout_of,
    sequence_and_head,
)
from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value
from xdsl_ane.dialects.rlx.convolution import (
    ConvolutionOp,
    ConvOp,
    ConvTransposeOp,
)
from xdsl_ane.dialects.rlx.elementwise import (
    COMPARE_PREDICATES,
    AbsOp,
    AddOp,
    ArithmeticOp,
    BinaryOp,
    CastOp,
    CompareOp,
    ConstantOp,
    CosOp,
    DivOp,
    ErfOp,
    ExpOp,
    FloorOp,
    GeluOp,
    GeluTanhOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    ParamOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RoundOp,
    RsqrtOp,
    SigmoidOp,
    SiluOp,
    SinOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOp,
    WhereOp,
)
from xdsl_ane.dialects.rlx.loss import (
    SoftmaxCrossEntropyBackwardOp,
    SoftmaxCrossEntropyOp,
    check_cross_entropy,
)
from xdsl_ane.dialects.rlx.normalization import LayerNormOp, NormOp, RmsNormOp
from xdsl_ane.dialects.rlx.pooling import AvgPoolOp, MaxPoolOp, PoolOp
from xdsl_ane.dialects.rlx.quantization import (
    DequantizeOp,
    QuantizeOp,
    check_quantization,
)
from xdsl_ane.dialects.rlx.reduction import (
    ArgmaxOp,
    CumsumOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceOp,
    ReduceSumOp,
    SoftmaxOp,
    TopkOp,
)
from xdsl_ane.dialects.rlx.resampling import (
    PadOp,
    PixelShuffleOp,
    PixelUnshuffleOp,
    UpsampleOp,
)
from xdsl_ane.dialects.rlx.shape import (
    ConcatOp,
    DeclaredShapeOp,
    ExpandOp,
    GatherOp,
    MatmulOp,
    NarrowOp,
    ReshapeOp,
    TransposeOp,
)
from xdsl_ane.dialects.rlx.spatial_norm import BatchNormOp, GroupNormOp
from xdsl_ane.dialects.rlx.state import (
    ReadStateOp,
    SliceUpdateOp,
    StateType,
    WriteStateOp,
)
from xdsl_ane.dialects.rlx.training import (
    ACTIVATION_KINDS,
    ActivationBackwardOp,
    RmsNormBackwardGammaOp,
    RmsNormBackwardInputOp,
)

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

RLX = Dialect("rlx", [op for family in FAMILIES for op in family.OPS], [StateType])
"""The rlx dialect: every op of DESIGN.md's rlx table."""
