"""Every mil op's MIL inputs (names and order, as the op class declares them
in `MIL_INPUTS` and the printers write them) against coremltools' own op
definition (`input_spec`) in each opset that has the op, and the inputs we
fill in when absent against the ones coremltools makes optional."""

from __future__ import annotations

import pytest
from coremltools.converters.mil._deployment_compatibility import AvailableTarget
from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry

from xdsl_ane.dialects import mil

TARGETS = {
    "iOS15": AvailableTarget.iOS15,
    "iOS16": AvailableTarget.iOS16,
    "iOS17": AvailableTarget.iOS17,
    "iOS18": AvailableTarget.iOS18,
}
OPS = {op.name.removeprefix("mil."): op for op in mil.MIL_OPS if op is not mil.ConstOp}


def opsets(op_type: str) -> list[str]:
    first = list(TARGETS).index(OPS[op_type].OPSET)
    return [t for t in list(TARGETS)[first:] if t in ("iOS17", "iOS18")]


def coremltools_spec(op_type: str, target: str):
    """The op's inputs in `target`'s opset (coreml_update_state is an op of
    coremltools' `coreml` dialect, one version for every opset)."""
    versions = SSAOpRegistry.core_ops.get(op_type)
    if versions:
        op = versions[TARGETS[target]]
    else:
        op = SSAOpRegistry.dialect_ops[op_type]
    return op.input_spec.input_types


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
