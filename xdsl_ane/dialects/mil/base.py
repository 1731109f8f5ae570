"""Shared machinery of the mil dialect: the op base class, MIL's dtype
domains, operand look-up by MIL name, MIL's compile-time-constant rule and the
short syntax of ops with optional operands.

MIL's typing rules are those of coremltools 9.0's type inference for the iOS18
opset (``coremltools/converters/mil/mil/ops/defs``); each op's
``infer_result_types`` cites the rules it applies.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, TypeVar

from typing_extensions import Self
from xdsl.dialects.builtin import DenseArrayBase, TensorType, f16, f32, i1, i8, i32
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    OptionalDef,
    ParsePropInAttrDict,
    VariadicDef,
    irdl_op_definition,
    traits_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, HasFolder, Pure
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.ane.cost import output_elements
from xdsl_ane.ane.rules import OpRule
from xdsl_ane.dialects.dtypes import BY_ELEMENT, BY_MIL, DTYPES
from xdsl_ane.dialects.mil.inputs import MilInput, PerSpatialAxis, Scalar
from xdsl_ane.dialects.mil.traits import CopiesElements
from xdsl_ane.dialects.typing import (
    InferredTypeOp,
    KnownAttributesOnly,
    OpTypeError,
    checks_property_types,
    element_name,
    normalize_axes,
    normalize_axis,
    tensor_of,
)

Value = SSAValue | Operation
OperandArg = Value | Sequence[Value] | None
"""What a builder takes per MIL input: a value, a list (variadic) or None
(an absent optional input)."""

FUNCTIONAL = "operands attr-dict `:` functional-type(operands, results)"
"""The short syntax of most mil ops: `mil.op %a, %b {props} : (A, B) -> R`."""

SEGMENTS = "operandSegmentSizes"

# MIL type domains, restricted to the element types the project supports
# (MIL fp16, fp32, int32, int16, uint16, int8, bool).
FLOAT = (f16, f32)
FLOAT_INT32 = (f16, f32, i32)
FLOAT_INT32_BOOL = (f16, f32, i32, i1)
INT16 = (BY_MIL["int16"].element, BY_MIL["uint16"].element)
"""int16 and uint16: what coremltools casts gather indices to (and back)."""
ANY_TYPE = (f16, f32, i32, *INT16, i8, i1)

MIL_DTYPES: dict[str, Attribute] = {
    d.mil: d.element for d in DTYPES if d.computes and d.element is not None
}
"""MIL's dtype strings (cast's `dtype`, quantize's `output_dtype`) for the
element types we support."""

MIL_STORAGE_DTYPES: dict[str, Attribute] = {
    d.mil: d.element for d in DTYPES if not d.computes and d.element is not None
}
"""MIL's dtypes of compressed weight data (consts feeding the iOS18
constexpr ops), which no computing op takes."""


def mil_dtype_name(element_type: Attribute) -> str:
    """MIL's dtype string of a supported element type ("fp16", "int32",
    "uint4", ...)."""
    found = BY_ELEMENT.get(element_type)
    if found is None:
        raise ValueError(f"no MIL dtype for {element_name(element_type)}")
    return found.mil


def require_element_type(
    op_name: str, operand: str, t: TensorType, allowed: Sequence[Attribute]
) -> Attribute:
    """Checks `t`'s element type against a MIL type domain."""
    if t.element_type not in allowed:
        raise OpTypeError(
            op_name,
            f"operand '{operand}' has element type {element_name(t.element_type)}, "
            f"expected one of {', '.join(element_name(a) for a in allowed)}",
        )
    return t.element_type


def operand_axis(
    op_name: str,
    prop: str,
    axis: int,
    operand: tuple[str, Sequence[int]],
    rank: int | None = None,
) -> int:
    """`normalize_axis` of an axis of `operand` (name, shape), rank
    defaulting to the operand's (expand_dims and one_hot index their larger
    result)."""
    rank = len(operand[1]) if rank is None else rank
    return normalize_axis(op_name, prop, axis, rank, operand)


def operand_axes(
    op_name: str,
    prop: str,
    axes: Sequence[int],
    operand: tuple[str, Sequence[int]],
    rank: int | None = None,
) -> tuple[int, ...]:
    """`normalize_axes` of axes of `operand`, as `operand_axis`."""
    rank = len(operand[1]) if rank is None else rank
    return normalize_axes(op_name, prop, axes, rank, operand)


def is_compile_time_constant(value: SSAValue) -> bool:
    """MIL's const rule: a value is const when it is computed from `mil.const`
    and `mil.constexpr_*` ops only (coremltools' `is_descendant_of_const`)."""
    seen: set[SSAValue] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if not isinstance(v, OpResult) or not isinstance(v.op, MilOp):
            return False
        if v.op.name == "mil.const" or v.op.name.startswith("mil.constexpr_"):
            continue
        stack.extend(v.op.operands)
    return True


CANONICALIZATION_PATTERNS: dict[type[HasCanonicalizationPatternsTrait], tuple] = {}
"""The patterns of each canonicalization trait of the mil ops. They fold
with the interpreter, a layer above the dialect, so they are registered from
there: `xdsl_ane.passes.canonicalization.register()`, called explicitly by
the contexts for the mil ops (its `knowing_mil`, `passes.driver.
make_context`, the `mil` dialect's entry in `xdsl_ane.universe`)."""


def register_canonicalization(
    trait: type[HasCanonicalizationPatternsTrait], *patterns: RewritePattern
) -> None:
    CANONICALIZATION_PATTERNS[trait] = patterns


class MilCanonicalization(HasCanonicalizationPatternsTrait):
    """A family's canonicalization patterns, as registered for its trait."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return CANONICALIZATION_PATTERNS.get(cls, ())


CONSTANT_FOLDER: list[Callable[[Operation], Sequence[Attribute] | None]] = []
"""The function that folds a mil op of inline consts into the values of its
results (or None). It evaluates with the interpreter, a layer above the
dialect, so `xdsl_ane.passes.canonicalization` registers it."""


def register_constant_folder(
    folder: Callable[[Operation], Sequence[Attribute] | None],
) -> None:
    CONSTANT_FOLDER[:] = [folder]


class MilFolder(HasFolder):
    """Every mil op folds into `mil.const`s when its operands are inline
    consts (xDSL's folding: `canonicalize` asks, and the dialect's
    constant materialization makes the consts); a const folds to its own
    value."""

    @classmethod
    def fold(cls, op: Operation) -> Sequence[SSAValue | Attribute] | None:
        return CONSTANT_FOLDER[0](op) if CONSTANT_FOLDER else None


class MilOp(InferredTypeOp, ABC):
    """Base of every mil op.

    Operands and properties carry MIL's parameter names. ``MIL_INPUTS``
    lists MIL's inputs of the op in coremltools' order with their defaults
    (`xdsl_ane.dialects.mil.inputs`); every op written as a MIL operation
    declares it. ``OPSET`` is the deployment target whose opset introduced
    the op. ``CONST_OPERANDS`` names the tensor inputs MIL requires to be
    compile-time constants; the verifier checks them after the type rules.

    What the op is on the ANE, which the lint, the placement and the
    estimate ask of it rather than keep tables of op names: its rules
    (``ANE_RULES``, `xdsl_ane.ane.rules`), its int32 values the ANE computes
    (``ANE_INDEX_RESULT``, ``ANE_INDEX_OPERANDS``) and its FLOPs
    (``flops()``, by default ``FLOPS_PER_ELEMENT`` per result element).
    Its layout and fp16 behaviour are traits (`xdsl_ane.dialects.mil.traits`).
    """

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure(), KnownAttributesOnly(), MilFolder())
    MIL_INPUTS: ClassVar[tuple[MilInput, ...]]
    """MIL's inputs in coremltools' `input_spec` order, operands and
    properties alike, each with the value written when it is absent."""
    OPSET: ClassVar[str] = "iOS15"
    """The deployment target that introduced the op (ML programs start at
    iOS15)."""
    CONST_OPERANDS: ClassVar[tuple[str, ...]] = ()
    ANE_RULES: ClassVar[tuple[OpRule, ...]] = ()
    """The rules that keep the op off the ANE (ANE_FACTS.md), in the order
    the placement tries them."""
    ANE_INDEX_RESULT: ClassVar[bool] = False
    """Whether its int32 result is an index the ANE computes (argmax), not
    an int32 tensor the ANE has no type for."""
    ANE_INDEX_OPERANDS: ClassVar[bool] = False
    """Whether its runtime int32 operands are positions the ANE reads
    (slice_update's begin and end: a KV-cache write at a runtime position
    ran on the ANE, Anemll #27)."""
    FLOPS_PER_ELEMENT: ClassVar[int] = 1
    """FLOPs per result element of the default `flops` (`xdsl_ane.ane.cost`)."""

    def flops(self) -> int:
        """The op's FLOPs (a multiply-add counts 2): `FLOPS_PER_ELEMENT` per
        result element, none for an op that copies elements; a family whose
        work is not per result element overrides it."""
        if self.has_trait(CopiesElements):
            return 0
        return output_elements(self) * self.FLOPS_PER_ELEMENT

    @classmethod
    def mil_input(cls, name: str) -> MilInput:
        """The declaration of the MIL input `name`."""
        for declared in cls.MIL_INPUTS:
            if declared.name == name:
                return declared
        raise KeyError(f"{cls.name} has no MIL input '{name}'")

    @classmethod
    def input_default(cls, name: str) -> Scalar:
        """MIL's constant default of the input `name` (an epsilon, an axis,
        a mode), which an absent property means."""
        default = cls.mil_input(name).default
        assert default is not None and not callable(default), (cls.name, name)
        return default

    @classmethod
    def spatial_input_default(cls, name: str, spatial: int) -> tuple[int, ...]:
        """MIL's default of the input `name` for an x with `spatial` spatial
        axes (conv's strides, pad and dilations), which an absent property
        means."""
        default = cls.mil_input(name).default
        assert isinstance(default, PerSpatialAxis), (cls.name, name)
        return default.for_spatial_axes(spatial)

    @classmethod
    def named_operand_types(
        cls, operand_types: Sequence[Attribute], properties: Mapping[str, Attribute]
    ) -> dict[str, Attribute | list[Attribute] | None]:
        """Splits the flat operand types by MIL input name: a type for a
        single input, a type or None for an optional one, a list for a
        variadic one."""
        defs = cls.get_irdl_definition().operands
        sizes = _segment_sizes(cls, len(operand_types), properties)
        named: dict[str, Attribute | list[Attribute] | None] = {}
        start = 0
        for (name, d), size in zip(defs, sizes):
            group = list(operand_types[start : start + size])
            start += size
            if isinstance(d, OptionalDef):
                named[name] = group[0] if group else None
            elif isinstance(d, VariadicDef):
                named[name] = group
            else:
                named[name] = group[0]
        return named

    @classmethod
    def tensor_operands(
        cls, operand_types: Sequence[Attribute], properties: Mapping[str, Attribute]
    ) -> dict[str, TensorType | None]:
        """Like `named_operand_types` for ops without variadic inputs, with
        every present operand checked to be a supported static tensor."""
        named = cls.named_operand_types(operand_types, properties)
        out: dict[str, TensorType | None] = {}
        for name, t in named.items():
            assert not isinstance(t, list)
            out[name] = None if t is None else tensor_of(cls.name, name, t)
        return out

    def init_mil(
        self,
        operands: Mapping[str, OperandArg],
        properties: Mapping[str, Attribute | None] | None = None,
    ) -> None:
        """Builds the op from its MIL inputs by name, inferring result types."""
        groups = _operand_groups(type(self), operands)
        props = dict(properties or {})
        if _has_segments(type(self)):
            props[SEGMENTS] = DenseArrayBase.from_list(i32, [len(g) for g in groups])
        self.init_inferred(groups, props)

    def verify_(self) -> None:
        super().verify_()
        for name in self.CONST_OPERANDS:
            value = getattr(self, name)
            if value is not None and not is_compile_time_constant(value):
                raise OpTypeError(
                    self.name,
                    f"operand '{name}' must be a compile-time constant (computed "
                    "from mil.const ops only), as MIL requires",
                )


MilOpClass = TypeVar("MilOpClass", bound=type[MilOp])


def mil_op_definition(cls: MilOpClass) -> MilOpClass:
    """`irdl_op_definition` for a mil op: a property of the wrong kind
    (`axis = true`, `perm = array<f32: ...>`) is an error naming the op and
    the property, before anything reads it. The short syntax checks required
    properties while parsing; its error becomes a parse error at the op that
    names it (instead of an exception without a location)."""
    cls = checks_property_types(irdl_op_definition(cls))
    parse = cls.parse

    def parse_naming_the_op(op_type: type[MilOp], parser: Parser) -> MilOp:
        start = parser.pos
        try:
            return parse(parser)
        except VerifyException as e:
            parser.raise_error(f"{op_type.name}: {e}", start, parser.pos)

    cls.parse = classmethod(parse_naming_the_op)  # type: ignore[method-assign]
    return cls


def _has_segments(cls: type[MilOp]) -> bool:
    return any(
        isinstance(o, AttrSizedOperandSegments)
        for o in cls.get_irdl_definition().options
    )


def _segment_sizes(
    cls: type[MilOp], count: int, properties: Mapping[str, Attribute]
) -> list[int]:
    defs = cls.get_irdl_definition().operands
    if _has_segments(cls):
        attr = properties.get(SEGMENTS)
        if not isinstance(attr, DenseArrayBase):
            raise OpTypeError(cls.name, f"property '{SEGMENTS}' is missing")
        return [int(v) for v in attr.get_values()]
    variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
    sizes = [1] * len(defs)
    if variadic:
        sizes[variadic[0]] = count - (len(defs) - 1)
    return sizes


def _operand_groups(
    cls: type[MilOp], operands: Mapping[str, OperandArg]
) -> list[Sequence[Value]]:
    groups: list[Sequence[Value]] = []
    for name, d in cls.get_irdl_definition().operands:
        value = operands.get(name)
        if isinstance(d, VariadicDef):
            if value is None:
                groups.append([])
            elif isinstance(value, Sequence):
                groups.append(list(value))
            else:
                groups.append([value])
        else:
            assert value is not None and not isinstance(value, Sequence), name
            groups.append([value])
    return groups


class TaggedOptionalOperandsOp(MilOp, ABC):
    """Ops with optional MIL inputs. Their short syntax writes required inputs
    positionally and optional ones tagged with their MIL name, in MIL's input
    order: `mil.conv %x, %weight, bias %b {props} : (X, W, B) -> R`."""

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        defs = cls.get_irdl_definition().operands
        start = parser.pos

        def parse_item() -> tuple[str | None, UnresolvedOperand]:
            tag = parser.parse_optional_identifier()
            return tag, parser.parse_unresolved_operand()

        items = parser.parse_comma_separated_list(parser.Delimiter.NONE, parse_item)
        sizes: list[int] = []
        ordered: list[UnresolvedOperand] = []
        for name, d in defs:
            optional = isinstance(d, OptionalDef)
            # an optional input is present iff the next operand carries its tag
            if items and (items[0][0] == name or not optional):
                tag, operand = items.pop(0)
                if tag is not None and tag != name:
                    parser.raise_error(
                        f"{cls.name}: expected operand '{name}', got '{tag}'", start
                    )
                ordered.append(operand)
                sizes.append(1)
            elif optional:
                sizes.append(0)
            else:
                parser.raise_error(f"{cls.name}: missing operand '{name}'", start)
        if items:
            parser.raise_error(
                f"{cls.name}: unexpected operand"
                + (f" '{items[0][0]}'" if items[0][0] else "")
                + f"; operands are {', '.join(n for n, _ in defs)} in this order, "
                "optional ones written `name %value`",
                start,
            )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        function_type = parser.parse_function_type()
        operands = parser.resolve_operands(ordered, function_type.inputs.data, type_pos)
        prop_names = cls.get_irdl_definition().properties.keys()
        props = {k: v for k, v in attrs.items() if k in prop_names}
        others = {k: v for k, v in attrs.items() if k not in prop_names}
        if _has_segments(cls):
            props[SEGMENTS] = DenseArrayBase.from_list(i32, sizes)
        return cls.create(
            operands=operands,
            result_types=function_type.outputs.data,
            properties=props,
            attributes=others,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        parts: list[tuple[str | None, SSAValue]] = []
        for name, d in self.get_irdl_definition().operands:
            value = getattr(self, name)
            if value is not None:
                parts.append((name if isinstance(d, OptionalDef) else None, value))

        def print_part(part: tuple[str | None, SSAValue]) -> None:
            if part[0] is not None:
                printer.print_string(part[0] + " ")
            printer.print_operand(part[1])

        printer.print_list(parts, print_part)
        props = {k: v for k, v in self.properties.items() if k != SEGMENTS}
        printer.print_op_attributes(self.attributes | props)
        printer.print_string(" : ")
        printer.print_function_type(
            [o.type for o in self.operands], [r.type for r in self.results]
        )
