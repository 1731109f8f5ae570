"""Named weight tensors as the programs see them: `WeightStore` gives the
weight of an `rlx.param` or a `mil.const weight=` op, checked against the
type the IR declares, through the one definition of weight views
(`weight_view`). The interpreter and the weight writers both read weights
through it; its errors are the interpreter's (`InterpretationError`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from xdsl_ane.interpreter.values import InterpretationError, numpy_dtype


class WeightStore:
    """Named weight tensors for `rlx.param` and `mil.const weight=` ops."""

    def __init__(self, weights: Mapping[str, np.ndarray] | None = None):
        self.weights = dict(weights or {})

    def get(
        self,
        name: str,
        t: Attribute,
        op_name: str,
        file_shape: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
    ) -> np.ndarray:
        """The weight `name` as a value of type `t`. The file's tensor must
        have `file_shape` (default: t's shape); it is transposed by `perm`
        and reshaped to t's shape (see mil.const's weight views)."""
        if name not in self.weights:
            raise InterpretationError(
                f"{op_name}: weight '{name}' is not in the weights file"
            )
        value = self.weights[name]
        assert isinstance(t, TensorType)
        expected = tuple(t.get_shape() if file_shape is None else file_shape)
        if tuple(value.shape) != expected:
            raise InterpretationError(
                f"{op_name}: weight '{name}' has shape {list(value.shape)}, "
                f"the IR declares {list(expected)}"
            )
        value = weight_view(value, t.get_shape(), perm)
        dtype = numpy_dtype(t.element_type)
        if value.dtype != dtype:
            # A float weight may be stored at another precision (fp32 data for
            # an f16 program); anything else is a mismatch.
            if value.dtype.kind == "f" and dtype.kind == "f":
                return value.astype(dtype)
            raise InterpretationError(
                f"{op_name}: weight '{name}' has dtype {value.dtype}, the IR "
                f"declares {dtype}"
            )
        return value


def weight_view(
    value: np.ndarray, shape: Sequence[int], perm: Sequence[int] | None
) -> np.ndarray:
    """A weights-file tensor as a const sees it: transposed by `perm`, then
    reshaped row-major to `shape` (the one definition of weight views, used
    by the interpreter and the weight writers)."""
    if perm is not None:
        value = np.transpose(value, perm)
    return np.ascontiguousarray(value).reshape(tuple(shape))
