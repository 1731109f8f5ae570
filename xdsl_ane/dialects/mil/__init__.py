"""The mil dialect: CoreML's Model Intermediate Language, one op per MIL op.

Each op is named `mil.<MIL op type>`; tensor inputs are operands and
compile-time parameters are properties, both under MIL's own names, so
printing MIL is a direct mapping. Properties are typed as in rlx: integers
`i64` IntegerAttr, lists `array<i64: ...>`, floats `f32` FloatAttr, flags
BoolAttr, choices StringAttr; one of another kind is a verifier error naming
the op and the property. An absent optional property means MIL's default. Every op infers its result types from its operands and properties
with MIL's typing rules (the iOS18 opset as implemented by coremltools 9.0);
builders take only operands and properties, and verifiers recompute the types
and compare. Numpy semantics live in `xdsl_ane.interpreter.mil`.

Each op class also states what MIL says of the op: its inputs in
coremltools' order with their defaults (`MIL_INPUTS`, see `inputs`) and the
opset that introduced it (`OPSET`).

Modules: `const`, `elementwise`, `linear` (matmul, linear, conv), `convolution`
(conv_transpose), `shape` (with pixel_shuffle, pixel_unshuffle),
`indexing` (gather, one_hot, band_part), `reduction` (reduce_*, softmax,
layer_norm, cumsum, topk), `spatial_norm` (batch_norm, instance_norm), `pooling`
(max_pool, avg_pool), `quantization`, `state`; `base` holds the shared machinery,
`inputs` the declaration of MIL inputs. `resampling` (upsample_nearest_neighbor,
upsample_bilinear, pad) and `activations` (leaky_relu, elu, sigmoid_hard)
serve the vision models. Each family module lists its ops once, in `OPS`;
the dialect and `MIL_OPS` are built from the families (`FAMILIES`).
"""

# The package's names are its families' ops and helpers, imported here to be
# re-exported: each op is listed once, in its family's `OPS`.
# ruff: noqa: F401

from xdsl.dialect_interfaces.constant_materialization import (
    ConstantMaterializationInterface,
)
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute, Dialect, Operation

from xdsl_ane.dialects.mil import (
    activations,
    const,
    convolution,
    elementwise,
    indexing,
    linear,
    pooling,
    quantization,
    reduction,
    resampling,
    shape,
    spatial_norm,
    state,
)
from xdsl_ane.dialects.mil.activations import (
    AlphaActivationOp,
    EluOp,
    LeakyReluOp,
    SigmoidHardOp,
)
from xdsl_ane.dialects.mil.base import (
    MIL_DTYPES,
    MIL_STORAGE_DTYPES,
    MilOp,
    is_compile_time_constant,
    mil_dtype_name,
)
from xdsl_ane.dialects.mil.const import ConstOp
from xdsl_ane.dialects.mil.convolution import ConvTransposeOp, conv_transpose_crop
from xdsl_ane.dialects.mil.elementwise import (
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    CeilOp,
    ClipOp,
    ComparisonOp,
    CosOp,
    EqualOp,
    ErfOp,
    ExpOp,
    FloorOp,
    GeluOp,
    GreaterEqualOp,
    GreaterOp,
    InverseOp,
    LessEqualOp,
    LessOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NotEqualOp,
    PowOp,
    RealDivOp,
    ReluOp,
    RoundOp,
    RsqrtOp,
    SelectOp,
    SigmoidOp,
    SiluOp,
    SinOp,
    SqrtOp,
    SquareOp,
    SubOp,
    TanhOp,
    UnaryOp,
    UnaryWithEpsilonOp,
)
from xdsl_ane.dialects.mil.indexing import BandPartOp, GatherOp, OneHotOp
from xdsl_ane.dialects.mil.linear import ConvOp, LinearOp, MatmulOp, conv_padding
from xdsl_ane.dialects.mil.pooling import AvgPoolOp, MaxPoolOp, PoolingOp
from xdsl_ane.dialects.mil.quantization import (
    ConstexprAffineDequantizeOp,
    ConstexprBlockwiseShiftScaleOp,
    ConstexprLutToDenseOp,
    DequantizeOp,
    QuantizeOp,
)
from xdsl_ane.dialects.mil.reduction import (
    CumsumOp,
    LayerNormOp,
    ReduceLogSumExpOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceProdOp,
    ReduceSumOp,
    ReductionOp,
    SoftmaxOp,
    TopkOp,
)
from xdsl_ane.dialects.mil.resampling import (
    PadOp,
    UpsampleBilinearOp,
    UpsampleNearestNeighborOp,
    UpsampleOp,
)
from xdsl_ane.dialects.mil.shape import (
    ConcatOp,
    ExpandDimsOp,
    PixelShuffleOp,
    PixelUnshuffleOp,
    ReshapeOp,
    SliceBySizeOp,
    SplitOp,
    SqueezeOp,
    TileOp,
    TransposeOp,
)
from xdsl_ane.dialects.mil.spatial_norm import BatchNormOp, InstanceNormOp
from xdsl_ane.dialects.mil.state import (
    CoremlUpdateStateOp,
    ReadStateOp,
    ReduceArgmaxOp,
    SliceUpdateOp,
    StateType,
)

FAMILIES = (
    const,
    elementwise,
    activations,
    linear,
    convolution,
    shape,
    indexing,
    reduction,
    spatial_norm,
    pooling,
    resampling,
    quantization,
    state,
)
"""The op families, one module each, in the order the dialect lists them."""

MIL_OPS: tuple[type[MilOp], ...] = tuple(op for family in FAMILIES for op in family.OPS)
"""Every mil op, family by family."""


class MilConstantMaterialization(ConstantMaterializationInterface):
    """Folded values become inline `mil.const`s."""

    def materialize_constant(
        self, value: Attribute, type: Attribute
    ) -> Operation | None:
        if isinstance(value, DenseIntOrFPElementsAttr) and value.type == type:
            return ConstOp(value)
        return None


MIL = Dialect("mil", MIL_OPS, [StateType], [MilConstantMaterialization()])
