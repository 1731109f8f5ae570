"""One mil op run in the interpreter (`run`) and in coremltools' value
inference (`coreml`), and the check of a result against its reference
(exact dtype and shape, values to the dtype's precision): shared by
test_mil_interpreter and the tests of the ops added since.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute, Block, Operation, Region

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dtypes import DTYPES
from xdsl_ane.interpreter.func import FuncFunctions
from xdsl_ane.interpreter.mil import MilFunctions
from xdsl_ane.weights.store import WeightStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function


ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    d.numpy: d.element for d in DTYPES if d.computes and d.element is not None
}


RNG = np.random.default_rng(0)


def tensor_type(x: np.ndarray) -> TensorType:
    return TensorType(ELEMENT_TYPES[x.dtype], list(x.shape))


def const_op(x: np.ndarray) -> mil.ConstOp:
    t = tensor_type(x)
    return mil.ConstOp(DenseIntOrFPElementsAttr.from_list(t, x.flatten().tolist()))


def run(
    build: Callable[..., Operation],
    *inputs: np.ndarray,
    const: Sequence[int] = (),
    weights: dict[str, np.ndarray] | None = None,
) -> Any:
    """Runs `func.func @kernel` whose body is `build(*values)`: inputs become
    function arguments, or mil.const ops for the indices in `const`. Returns
    the single result, or a tuple of results."""
    runtime = [x for k, x in enumerate(inputs) if k not in const]
    arg_types = [tensor_type(x) for x in runtime]
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block) as args:
        arg_iter = iter(args)
        values = [
            const_op(x).result if k in const else next(arg_iter)
            for k, x in enumerate(inputs)
        ]
        op = build(*values)
        func.ReturnOp(*op.results)
    f = func.FuncOp("kernel", (arg_types, [r.type for r in op.results]), Region(block))
    module = ModuleOp([f])
    module.verify()
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(MilFunctions(WeightStore(weights)))
    results = interpreter.call_op(f, tuple(runtime))
    return results[0] if len(results) == 1 else tuple(results)


def coreml(build: Callable[..., Any], *inputs: Any) -> Any:
    """coremltools' value inference: the op built on const inputs."""
    with Function({"unused": mb.TensorSpec(shape=(1,))}, ct.target.iOS18):
        out = build(*inputs)
        if isinstance(out, list | tuple):
            return tuple(v.val for v in out)
        return out.val


def check(actual: np.ndarray, expected: Any, dtype, rtol=None, atol=None):
    """Exact dtype and shape, values close for the dtype's precision."""
    dtype = np.dtype(dtype)
    assert actual.dtype == dtype
    assert actual.shape == np.shape(expected)
    if dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected)
        return
    if rtol is None:
        rtol = 1e-5 if dtype == np.float32 else 1e-2
    if atol is None:
        atol = 1e-6 if dtype == np.float32 else 1e-2
    np.testing.assert_allclose(
        actual.astype(np.float64),
        np.asarray(expected, np.float64),
        rtol=rtol,
        atol=atol,
    )


def randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)
