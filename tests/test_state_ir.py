"""The state IR end to end: rlx states, slice_update and argmax interpreted
with states that persist across calls, lowered and compiled (the ANE
pipeline, fp32 and fp16), printed to protobuf (validated by coremltools'
loader, single- and multifunction) and MIL text, and read back."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import f16, f32, i32

from xdsl_ane.backend.mil_text import module_to_mil_text
from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mil_text import parse_mil_text
from xdsl_ane.frontend.milproto import read_proto
from xdsl_ane.interpreter.core import InterpretationError, StatefulRuntime, run_function
from xdsl_ane.interpreter.state import StateBuffer
from xdsl_ane.passes.layouts import ane_form_problems, layout_of
from xdsl_ane.passes.pipeline import AnePipelinePass

CTX = 16
WIDTH = 8


def cache_function(name: str, steps: int) -> func.FuncOp:
    """`name(x [steps, W], pos [1], cache) -> scores [steps, CTX]`: writes x
    into the cache at rows pos.. and scores x against every cached row, so
    each result depends on what earlier calls stored."""
    state = rlx.StateType(tensor((CTX, WIDTH), f32))

    def body(x, pos, cache):
        old = rlx.ReadStateOp(cache).result
        zero = rlx.ConstantOp(dense_from_numpy(np.zeros(1, np.int32), i32)).result
        begin = rlx.ConcatOp([pos, zero], 0).result
        new = rlx.SliceUpdateOp(old, x, begin).result
        rlx.WriteStateOp(cache, new)
        scores = rlx.MatmulOp(x, new, transpose_rhs=True).result
        return [scores, rlx.ArgmaxOp(scores, axis=-1).result]

    types = [tensor((steps, WIDTH), f32), tensor((1,), i32), state]
    return build_function(name, types, body, ["x", "pos", "cache"])


def cache_module() -> builtin.ModuleOp:
    return builtin.ModuleOp([cache_function("prefill", 4), cache_function("decode", 1)])


def reference(calls):
    """The same computation in numpy, state and all."""
    cache = np.zeros((CTX, WIDTH), np.float32)
    out = []
    for x, pos in calls:
        cache[pos : pos + len(x)] = x
        scores = x @ cache.T
        out.append((scores, np.argmax(scores, axis=-1).astype(np.int32)))
    return out


def calls(seed: int = 0):
    rng = np.random.default_rng(seed)
    sequence = [("prefill", rng.standard_normal((4, WIDTH)).astype(np.float32), 0)]
    for pos in range(4, 7):
        sequence.append(
            ("decode", rng.standard_normal((1, WIDTH)).astype(np.float32), pos)
        )
    return sequence


def compile_module(fp16: bool) -> builtin.ModuleOp:
    module = cache_module()
    ctx = Context()
    AnePipelinePass(fp16=fp16, lint=False).apply(ctx, module)
    return module


def run_compiled(module, sequence):
    """Runs ANE-form functions on logical data (layouts from the manifest
    records: the same as the logical program's)."""
    runtime = StatefulRuntime(module)
    out = []
    for name, x, pos in sequence:
        f = next(
            o
            for o in module.walk()
            if isinstance(o, func.FuncOp) and o.sym_name.data == name
        )
        dtype = (
            np.float16
            if f.function_type.inputs.data[0].element_type == f16
            else np.float32
        )
        inputs = [
            layout_of(x.shape).to_ane(x.astype(dtype)),
            np.full((1, 1, 1, 1), pos, np.int32),
        ]
        scores, token = runtime.call(name, inputs)
        out.append(
            (
                layout_of((len(x), CTX)).to_logical(scores).astype(np.float32),
                layout_of((len(x),)).to_logical(token),
            )
        )
    return out


def test_rlx_state_persists_across_calls_and_functions():
    module = cache_module()
    module.verify()
    runtime = StatefulRuntime(module)
    sequence = calls()
    expected = reference([(x, pos) for _, x, pos in sequence])
    for (name, x, pos), (scores, token) in zip(sequence, expected):
        got_scores, got_token = runtime.call(name, [x, np.array([pos], np.int32)])
        np.testing.assert_allclose(got_scores, scores, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got_token, token)
    # the decode calls saw the prefill's rows: the last cache holds all 7
    np.testing.assert_allclose(runtime.states["cache"].value[6], sequence[-1][1][0])
    runtime.reset()
    (fresh, _) = runtime.call("decode", [sequence[-1][1], np.array([6], np.int32)])
    assert np.count_nonzero(fresh) == 1  # only its own row is in the cache


def test_state_values_are_never_changed_in_place():
    """A state's values are read-only arrays handed out and taken in
    without copies (interpreter.state): a value read in one call keeps what
    it held after later calls write the state, and the results a caller
    gets are its own to change."""
    state = rlx.StateType(tensor((CTX, WIDTH), f32))

    def body(x, pos, cache):
        old = rlx.ReadStateOp(cache).result
        zero = rlx.ConstantOp(dense_from_numpy(np.zeros(1, np.int32), i32)).result
        new = rlx.SliceUpdateOp(old, x, rlx.ConcatOp([pos, zero], 0).result).result
        rlx.WriteStateOp(cache, new)
        return [old, new]

    types = [tensor((1, WIDTH), f32), tensor((1,), i32), state]
    module = builtin.ModuleOp(
        [build_function("step", types, body, ["x", "pos", "cache"])]
    )
    runtime = StatefulRuntime(module)
    row = np.ones((1, WIDTH), np.float32)
    old0, new0 = runtime.call("step", [row, np.array([0], np.int32)])
    assert not runtime.states["cache"].value.flags.writeable
    old1, new1 = runtime.call("step", [2 * row, np.array([1], np.int32)])
    assert np.count_nonzero(old0) == 0
    np.testing.assert_array_equal(old1, new0)
    np.testing.assert_array_equal(new0[:2], [row[0], np.zeros(WIDTH)])
    new1[:] = 7  # the caller's copy, not the state
    np.testing.assert_array_equal(
        runtime.states["cache"].value[:2], [row[0], 2 * row[0]]
    )


@pytest.mark.parametrize("fp16", [False, True])
def test_compiled_state_program_matches(fp16):
    module = compile_module(fp16)
    module.verify()
    for f in module.walk():
        if isinstance(f, func.FuncOp):
            assert ane_form_problems(f, fp16=fp16) == []
            assert any(isinstance(o, mil.CoremlUpdateStateOp) for o in f.walk())
    sequence = calls(1)
    expected = reference([(x, pos) for _, x, pos in sequence])
    got = run_compiled(module, sequence)
    tol = 2e-2 if fp16 else 1e-5
    for (scores, token), (got_scores, got_token) in zip(expected, got):
        np.testing.assert_allclose(got_scores, scores, rtol=tol, atol=tol * 4)
        if not fp16:
            np.testing.assert_array_equal(got_token, token)


def test_multifunction_state_proto_loads_and_reads_back(tmp_path):
    module = compile_module(fp16=True)
    result = module_to_proto(module, {})
    report = result.validate()
    assert report.ok, str(report)
    functions = result.spec.description.functions
    assert [f.name for f in functions] == ["prefill", "decode"]
    for f in functions:
        assert [s.name for s in f.state] == ["cache"]
        assert list(f.state[0].type.stateType.arrayType.shape) == [CTX, WIDTH]
        assert [i.name for i in f.input] == ["x", "pos"]
    ops = [
        op.type
        for op in result.spec.mlProgram.functions["decode"]
        .block_specializations["CoreML8"]
        .operations
    ]
    assert "write_state" in ops and "slice_update" in ops and "reduce_argmax" in ops
    assert "coreml_update_state" not in ops
    # read back through MIL text and run: the same numbers as the module
    model_dir = tmp_path / "model"
    result.write_weights(model_dir / "weights")
    back, weights = read_proto(result.spec, model_dir, "model")
    sequence = calls(2)
    np.testing.assert_array_equal(
        np.concatenate([s.ravel() for s, _ in run_compiled(back, sequence)]),
        np.concatenate([s.ravel() for s, _ in run_compiled(module, sequence)]),
    )


def test_mil_text_round_trip_runs_the_same():
    module = compile_module(fp16=True)
    text, _ = module_to_mil_text(module, {})
    assert "state<tensor<fp16, [16, 8]>> cache" in text
    assert "write_state(data = " in text
    back, _ = parse_mil_text(text, "k.mil", None)
    back.verify()
    sequence = calls(3)
    a = run_compiled(module, sequence)
    b = run_compiled(back, sequence)
    for (sa, ta), (sb, tb) in zip(a, b):
        np.testing.assert_array_equal(sa, sb)
        np.testing.assert_array_equal(ta, tb)


def test_fp32_state_has_no_core_ml_form():
    module = compile_module(fp16=False)
    with pytest.raises(
        XdslAneError, match="state 'cache' holds fp32; Core ML states are fp16"
    ):
        module_to_proto(module, {})


def test_slice_outside_the_state_is_an_interpreter_error():
    runtime = StatefulRuntime(cache_module())
    x = np.zeros((4, WIDTH), np.float32)
    with pytest.raises(
        InterpretationError, match=r"rlx.slice_update: the slice at begin \[14, 0\]"
    ):
        runtime.call("prefill", [x, np.array([14], np.int32)])


def test_state_argument_needs_a_buffer_of_its_type():
    module = cache_module()
    x = np.zeros((1, WIDTH), np.float32)
    pos = np.array([0], np.int32)
    with pytest.raises(InterpretationError, match="is a state"):
        run_function(
            module, [x, pos, np.zeros((CTX, WIDTH), np.float32)], function="decode"
        )
    wrong = StateBuffer(rlx.StateType(tensor((CTX, 4), f32)))
    with pytest.raises(InterpretationError, match="the buffer holds"):
        run_function(module, [x, pos, wrong], function="decode")


def test_validation_does_not_depend_on_earlier_builder_use():
    """coremltools' loader names write_state pairs from the builder's
    process-wide counters; validation starts them afresh, so a program
    validates the same after anything else used the builder."""
    from coremltools.converters.mil import Builder

    Builder.name_count["coreml_update_state"] += 3
    report = module_to_proto(compile_module(fp16=True), {}).validate()
    assert report.ok, str(report)
