"""The state type shared by the rlx and mil dialects: a tensor held across
calls of a function (Core ML's iOS18 state, a model's KV cache).

`!rlx.state<tensor<...>>` and `!mil.state<tensor<...>>` wrap one static
tensor type. A state is a function argument only; ops read it
(`read_state`) and store into it (`write_state` / `coreml_update_state`),
and what was stored is what the next call reads.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.dialects.typing import OpTypeError, fmt_type, tensor_of


class StateTypeBase(ParametrizedAttribute, TypeAttribute):
    """A state holding values of one static tensor type (`wrapped`).
    Each dialect's state type declares the `wrapped` parameter itself (IRDL
    compares and hashes the parameters of the concrete class)."""

    wrapped: TensorType

    def __init__(self, wrapped: TensorType):
        super().__init__(wrapped)

    def verify(self) -> None:
        try:
            tensor_of(self.name, "wrapped", self.wrapped, what="property")
        except VerifyException as e:
            raise VerifyException(f"!{self.name}: {e}") from None


def is_state(t: Attribute) -> bool:
    """Whether `t` is a state type of either dialect."""
    return isinstance(t, StateTypeBase)


def wrapped_type(
    op_name: str, operand: str, t: Attribute, state_type: type
) -> TensorType:
    """The tensor type inside the state type `t`; the error names the operand."""
    if not isinstance(t, state_type):
        raise OpTypeError(
            op_name,
            f"operand '{operand}' must be a !{state_type.name}<...>, got {fmt_type(t)}",
        )
    assert isinstance(t, StateTypeBase)
    return t.wrapped


def require_state_argument(op_name: str, operand: str, value: SSAValue) -> None:
    """A state comes from a function argument (MIL's rule: states are
    inputs only, never computed)."""
    from xdsl.ir import BlockArgument

    if not isinstance(value, BlockArgument):
        raise OpTypeError(
            op_name, f"operand '{operand}' must be a function argument (a state input)"
        )
