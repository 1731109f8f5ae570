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
layer_norm, running sums and sorts), `spatial_norm` (batch_norm, instance_norm), `pooling`
(max_pool, avg_pool), `quantization`, `state`; `base` holds the shared machinery,
`inputs` the declaration of MIL inputs. `resampling` (upsample_nearest_neighbor,
upsample_bilinear, pad) and `activations` (leaky_relu, elu, sigmoid_hard)
serve the vision models. Each family module lists its ops once, in `OPS`;
the dialect, `MIL_OPS` and the package's names of the ops (`mil.AddOp`) are
built from the families (`FAMILIES`).

Each op also states what it is on the ANE, which the lint, the placement,
the estimate and the passes ask of it: its rules, its FLOPs (`MilOp`) and
traits for its layout and fp16 behaviour (`traits`).
"""

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

# The helpers other packages name through the package; the ops are the
# families' (`OPS`), named below.
from xdsl_ane.dialects.mil.base import (  # noqa: F401
    MIL_DTYPES,
    MIL_STORAGE_DTYPES,
    MilOp,
    mil_dtype_name,
)
from xdsl_ane.dialects.mil.const import ConstOp
from xdsl_ane.dialects.mil.convolution import conv_transpose_crop  # noqa: F401
from xdsl_ane.dialects.mil.elementwise import UnaryWithEpsilonOp  # noqa: F401
from xdsl_ane.dialects.mil.linear import conv_padding  # noqa: F401
from xdsl_ane.dialects.mil.state import StateType

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

globals().update({op.__name__: op for op in MIL_OPS})
# Each op is also a name of the package (`mil.AddOp`), taken from its
# family's `OPS`: the one list of the ops.


class MilConstantMaterialization(ConstantMaterializationInterface):
    """Folded values become inline `mil.const`s."""

    def materialize_constant(
        self, value: Attribute, type: Attribute
    ) -> Operation | None:
        if isinstance(value, DenseIntOrFPElementsAttr) and value.type == type:
            return ConstOp(value)
        return None


MIL = Dialect("mil", MIL_OPS, [StateType], [MilConstantMaterialization()])
