"""MIL protobuf of states (iOS18), as coremltools 9.0 writes them
(`converters/mil/backend/mil/load.py`):

- a state input is a function input of `ValueType.stateType` wrapping its
  tensor type, and in the model description a `FeatureDescription` of
  `StateFeatureType` (an fp16 multiarray of the state's shape) listed under
  `state`, not `input`, of the model or of each function of a
  multifunction model. Core ML supports fp16 states only.
- `coreml_update_state(state, value)` is written as
  `write_state(input = state, data = value)` named `{name}_write_state`,
  followed, when its result is used, by `read_state(input = state)` named
  `{name}` that defines the result; coremltools' loader merges the pair
  back into one `coreml_update_state`. That loader names each one
  `coreml_update_state_{n}`, n counting through the program in the order
  it reads the functions map, and its exporter names the pair after it;
  `number_state_updates` gives our pairs the same names, so that a
  re-export is identical.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from xdsl_ane.backend.proto_values import (
    ARRAY_DATA_TYPES,
    argument,
    name_attribute,
    tensor_dtype,
    tensor_value_type,
)
from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects import mil
from xdsl_ane.errors import XdslAneError

with quiet_coremltools():
    from coremltools.proto import FeatureTypes_pb2, MIL_pb2, Model_pb2


def state_value_type(t: mil.StateType) -> MIL_pb2.ValueType:
    v = MIL_pb2.ValueType()
    v.stateType.wrappedType.CopyFrom(tensor_value_type(t.wrapped))
    return v


def state_input(
    name: str, t: object, where: str
) -> tuple[MIL_pb2.NamedValueType, Model_pb2.FeatureDescription]:
    """The function input and the description's state feature of a state
    argument; an fp32 state is an error (run mil-fp16 first)."""
    if not isinstance(t, mil.StateType):
        raise XdslAneError(f"{where}: argument '{name}' of type {t} is not a state")
    dtype = tensor_dtype(t.wrapped)
    if dtype != "fp16":
        raise XdslAneError(
            f"{where}: state '{name}' holds {dtype}; Core ML states are fp16 only "
            "(run mil-fp16, or the fp16 ane-pipeline)"
        )
    shape = [int(d) for d in t.wrapped.get_shape()]
    array = FeatureTypes_pb2.ArrayFeatureType(
        shape=shape, dataType=ARRAY_DATA_TYPES[dtype]
    )
    feature_type = FeatureTypes_pb2.FeatureType(
        stateType=FeatureTypes_pb2.StateFeatureType(arrayType=array)
    )
    return (
        MIL_pb2.NamedValueType(name=name, type=state_value_type(t)),
        Model_pb2.FeatureDescription(name=name, type=feature_type),
    )


def update_state_operations(
    name: str, state: str, value: str, result_name: str | None, result: SSAValue | None
) -> list[MIL_pb2.Operation]:
    """`write_state` named `{name}_write_state` and, for a used result, the
    `read_state` named `name` defining it as `result_name`
    (`number_state_updates` then gives the pair coremltools' names)."""
    write = MIL_pb2.Operation(type="write_state")
    write.inputs["input"].CopyFrom(argument([state]))
    write.inputs["data"].CopyFrom(argument([value]))
    write.attributes["name"].CopyFrom(name_attribute(f"{name}_write_state"))
    if result is None or result_name is None:
        return [write]
    read = MIL_pb2.Operation(type="read_state")
    read.inputs["input"].CopyFrom(argument([state]))
    read.outputs.add(name=result_name, type=tensor_value_type(result.type))
    read.attributes["name"].CopyFrom(name_attribute(name))
    return [write, read]


def number_state_updates(
    program: MIL_pb2.Program, order: Sequence[str] | None = None
) -> None:
    """Names every write_state (and the read_state of the same state right
    after it) `coreml_update_state_{n}[_write_state]`, n counting in the
    order coremltools' loader visits them: functions in the map's iteration
    order (or `order`), ops in block order."""
    n = 0
    names = list(program.functions) if order is None else order
    for function in (program.functions[name] for name in names):
        for block in function.block_specializations.values():
            ops = block.operations
            for i, op in enumerate(ops):
                if op.type != "write_state":
                    continue
                name = f"coreml_update_state_{n}"
                n += 1
                op.attributes["name"].CopyFrom(name_attribute(f"{name}_write_state"))
                after = ops[i + 1] if i + 1 < len(ops) else None
                state = op.inputs["input"].arguments[0].name
                if (
                    after is not None
                    and after.type == "read_state"
                    and after.inputs["input"].arguments[0].name == state
                ):
                    after.attributes["name"].CopyFrom(name_attribute(name))
