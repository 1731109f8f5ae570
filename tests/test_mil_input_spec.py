"""Every mil op's MIL inputs (names and order, as the op class declares them
in `MIL_INPUTS` and the printers write them) against coremltools' own op
definition (`input_spec`) in each opset that has the op; the inputs we fill
in when absent against the ones coremltools makes optional, and the values
we write for them against coremltools' `default_inputs()`."""

from __future__ import annotations

import numpy as np
import pytest
from coremltools.converters.mil._deployment_compatibility import AvailableTarget
from coremltools.converters.mil.mil import Var
from coremltools.converters.mil.mil import types as ct_types
from coremltools.converters.mil.mil.ops.defs.iOS15.control_flow import const
from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, f16, f32, i32
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, OptionalDef

from xdsl_ane.backend.mil_inputs import mil_inputs
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.dialects.typing import element_type_of, shape_of, tensor

TARGETS = {
    "iOS15": AvailableTarget.iOS15,
    "iOS16": AvailableTarget.iOS16,
    "iOS17": AvailableTarget.iOS17,
    "iOS18": AvailableTarget.iOS18,
}

NOT_WRITTEN_THROUGH_INPUTS = {
    mil.ConstOp: "printed as a const's value (`val`), not through MIL inputs",
}
"""The mil dialect's ops that are not written as a MIL operation with
inputs, and why."""

OPS = {
    op.name.removeprefix("mil."): op
    for op in mil.MIL_OPS
    if op not in NOT_WRITTEN_THROUGH_INPUTS
}


def opsets(op_type: str) -> list[str]:
    first = list(TARGETS).index(OPS[op_type].OPSET)
    return [t for t in list(TARGETS)[first:] if t in ("iOS17", "iOS18")]


def coremltools_op(op_type: str, target: str):
    """The op's definition in `target`'s opset (coreml_update_state is an op
    of coremltools' `coreml` dialect, one version for every opset)."""
    versions = SSAOpRegistry.core_ops.get(op_type)
    if versions:
        return versions[TARGETS[target]]
    return SSAOpRegistry.dialect_ops[op_type]


def coremltools_spec(op_type: str, target: str):
    return coremltools_op(op_type, target).input_spec.input_types


# --- declarations ----------------------------------------------------------------


@pytest.mark.parametrize("op", list(mil.MIL.operations), ids=lambda op: op.name)
def test_every_mil_op_declares_its_mil_inputs(op: type[mil.MilOp]):
    """Every op of the dialect written as a MIL operation declares its
    inputs and opset, and each of its operands and properties is one of
    those inputs: an op added without them fails here."""
    if op in NOT_WRITTEN_THROUGH_INPUTS:
        return
    assert hasattr(op, "MIL_INPUTS"), f"{op.name} declares no MIL_INPUTS"
    names = [d.name for d in op.MIL_INPUTS]
    assert len(set(names)) == len(names), op.name
    assert op.OPSET in TARGETS, op.name
    definition = op.get_irdl_definition()
    ours = {n for n, _ in definition.operands} | set(definition.properties)
    ours.discard("operandSegmentSizes")
    assert ours <= set(names), f"{op.name}: {sorted(ours - set(names))}"


@pytest.mark.parametrize("op_type", sorted(OPS))
def test_inputs_are_coremltools_inputs_in_its_order(op_type: str):
    ours = [d.name for d in OPS[op_type].MIL_INPUTS]
    for target in opsets(op_type):
        theirs = list(coremltools_spec(op_type, target))
        assert ours == theirs, f"{op_type} ({target})"


@pytest.mark.parametrize("op_type", sorted(OPS))
def test_inputs_with_a_default_are_optional_in_coremltools(op_type: str):
    for target in opsets(op_type):
        spec = coremltools_spec(op_type, target)
        for declared in OPS[op_type].MIL_INPUTS:
            if declared.default is not None:
                assert spec[declared.name].optional, (
                    f"{op_type}.{declared.name} ({target})"
                )


# --- default values --------------------------------------------------------------

SHAPE = (1, 4, 1, 8)
"""The shape of every operand of a sample op: rank 4, as conv's x."""


def sample(
    op: type[mil.MilOp],
    element: Attribute,
    given: dict[str, Attribute] | None = None,
    properties: dict[str, Attribute] | None = None,
) -> mil.MilOp:
    """An op of class `op` (not verified: only its inputs are read) with its
    required operands, the optional operands in `given` (name -> element
    type) and `properties`; every operand is a SHAPE tensor of `element`
    unless `given` says otherwise."""
    given = given or {}
    types, sizes = [], []
    for name, d in op.get_irdl_definition().operands:
        if isinstance(d, OptionalDef) and name not in given:
            sizes.append(0)
            continue
        types.append(tensor(SHAPE, given.get(name, element)))
        sizes.append(1)
    props = dict(properties or {})
    if any(
        isinstance(o, AttrSizedOperandSegments)
        for o in op.get_irdl_definition().options
    ):
        props["operandSegmentSizes"] = DenseArrayBase.from_list(i32, sizes)
    block = Block(arg_types=types)
    return op.create(operands=block.args, result_types=[], properties=props)


def coremltools_defaults(op: mil.MilOp, target: str) -> dict[str, object]:
    """coremltools' `default_inputs()` for `op`, evaluated on stand-ins for
    the op's operands (what it reads: x's rank and dtype, weight's shape and
    dtype), each as its builder writes it (the value of the const it makes,
    `const._get_type_val`); inputs it leaves unwritten are absent."""
    inputs: dict[str, object] = {}
    for name, _ in op.get_irdl_definition().operands:
        value = getattr(op, name)
        if isinstance(value, tuple | list):  # variadic
            inputs[name] = [stand_in_var(name, v) for v in value]
        else:
            inputs[name] = None if value is None else stand_in_var(name, value)
    for declared in type(op).MIL_INPUTS:  # an absent input reads as None
        inputs.setdefault(declared.name, None)
    definition = coremltools_op(op.name.removeprefix("mil."), target)
    # an instance of the op's class, unconstructed (its __init__ builds a
    # whole op), so that a default_inputs() calling super() (avg_pool's) runs
    stand_in = definition.__new__(definition)
    stand_in.__dict__.update(name="sample", **inputs)
    defaults = definition.default_inputs(stand_in)
    written = {}
    for name, value in defaults.items():
        if value is None:
            continue
        if isinstance(value, range):
            value = list(value)
        _, written[name] = const._get_type_val(stand_in, value)
    return written


def stand_in_var(name: str, value: SSAValue) -> Var:
    """A coremltools Var of the value's type."""
    element = ct_types.numpy_type_to_builtin_type(
        numpy_dtype_of(element_type_of(value))
    )
    return Var(name, ct_types.tensor(element, shape_of(value)))


def differences(op: mil.MilOp, target: str) -> dict[str, tuple[object, object]]:
    """The inputs `op` lacks whose written value (ours) differs from
    coremltools' default (theirs), as (ours, theirs); None where one side
    writes nothing."""
    given = {name for name in op.properties if name != "operandSegmentSizes"}
    for name, _ in op.get_irdl_definition().operands:
        if getattr(op, name) is not None:
            given.add(name)
    ours = {name: value for name, value in mil_inputs(op) if name not in given}
    theirs = coremltools_defaults(op, target)
    found = {}
    for declared in type(op).MIL_INPUTS:
        name = declared.name
        if name in given:
            continue
        a, b = ours.get(name), theirs.get(name)
        if not same_value(a, b):
            found[name] = (a, b)
    return found


def same_value(ours: object, theirs: object) -> bool:
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if isinstance(ours, str) or isinstance(theirs, str):
        return ours == theirs
    a, b = np.asarray(ours), np.asarray(theirs)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("element", [f16, f32], ids=["fp16", "fp32"])
@pytest.mark.parametrize("op_type", sorted(OPS))
def test_defaults_we_write_are_coremltools_defaults(op_type: str, element):
    """With every optional input absent, each input we write for an absent
    one is the value coremltools' builder writes (type and value), and we
    write none it does not."""
    deliberate = {
        name
        for (t, name), (inputs, _) in DELIBERATE_DIFFERENCES.items()
        if t == op_type and not inputs and element == f16
    }
    for target in opsets(op_type):
        op = sample(OPS[op_type], element)
        assert set(differences(op, target)) == deliberate, f"{op_type} ({target})"


DELIBERATE_DIFFERENCES: dict[tuple[str, str], tuple[dict, str]] = {
    ("one_hot", "on_value"): (
        {"properties": {"off_value": FloatAttr(0.0, f16)}},
        "an absent on_value is 1 of off_value's type, not MIL's int32 1, which "
        "would clash with a float off_value",
    ),
    ("one_hot", "off_value"): (
        {"properties": {"on_value": FloatAttr(1.0, f16)}},
        "an absent off_value is 0 of on_value's type, not MIL's int32 0",
    ),
    ("layer_norm", "gamma"): (
        {"given": {"beta": f32}},
        "with beta but no gamma, gamma is written as ones: coremltools' type "
        "inference checks beta against gamma's shape and fails without it",
    ),
    ("layer_norm", "epsilon"): (
        {"given": {"gamma": f16}},
        "epsilon takes gamma's (or beta's) dtype, as MIL types gamma, beta and "
        "epsilon alike; coremltools' default is a Python float (fp32)",
    ),
    ("batch_norm", "epsilon"): (
        {},
        "epsilon takes mean's dtype, as MIL types mean, variance, gamma, beta "
        "and epsilon alike (domain U); coremltools' default is a Python float "
        "(fp32), which fails that check for an fp16 mean",
    ),
    ("pad", "constant_val"): (
        {},
        "constant_val has x's dtype (MIL's type domain T, which the loader "
        "checks); coremltools' default is a Python float (fp32) for an fp16 x too",
    ),
}
"""Where the value we write for an absent input deliberately differs from
coremltools' default: the inputs given to show it, and why."""


@pytest.mark.parametrize(
    ("op_type", "input_name"),
    sorted(DELIBERATE_DIFFERENCES),
    ids=[f"{t}.{n}" for t, n in sorted(DELIBERATE_DIFFERENCES)],
)
def test_deliberate_differences_from_coremltools_defaults(
    op_type: str, input_name: str
):
    """Each listed difference is real, and is the only one in its case."""
    inputs, _reason = DELIBERATE_DIFFERENCES[(op_type, input_name)]
    for target in opsets(op_type):
        op = sample(OPS[op_type], f16, **inputs)
        assert set(differences(op, target)) == {input_name}, f"{op_type} ({target})"
