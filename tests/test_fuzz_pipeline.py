"""Differential fuzzing of `ane-pipeline` on random well-typed rlx programs
(see fuzz_programs.py): each compiled program must verify, be in ANE form,
print to a MIL protobuf that coremltools' loader rebuilds, print to MIL text
that imports back, and compute what the rlx program computes (f32 tight,
fp16 within fp16 tolerance) — both as compiled and as re-imported from its
MIL text. Bounded and derandomized: a failure reproduces on every run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ane_form import ane_inputs, function_of, run_ane_form
from fuzz_programs import FuzzProgram, programs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context

from xdsl_ane.backend.mil_text import write_mil_text_dir
from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.frontend.mil_text import read_mil_file
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.layouts import ane_form_problems
from xdsl_ane.passes.pipeline import AnePipelinePass

# Random programs through the whole pipeline: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
EXAMPLES = {"activation": 250, "attention": 120, "cross_entropy": 60}


def assert_close(expected: np.ndarray, actual: np.ndarray, fp16: bool, what: str):
    assert actual.shape == expected.shape, what
    e, a = expected.astype(np.float64), actual.astype(np.float64)
    assert np.all(np.isfinite(a)), f"{what}: not finite\n{a}"
    scale = max(float(np.abs(e).max()), 1.0) if e.size else 1.0
    tolerance = 3e-2 if fp16 else 1e-4
    error = float(np.abs(e - a).max()) / scale if e.size else 0.0
    assert error <= tolerance, f"{what}: error {error:.3g} > {tolerance}\n{e}\n{a}"


def check_compiled(program: FuzzProgram, weights_mode: str, fp16: bool, tmp: Path):
    module, weights, inputs = program.module, program.weights, program.inputs
    expected = run_function(module, inputs, weights)
    loose = fp16 or any(y.dtype == np.float16 for y in expected)
    compiled = module.clone()
    AnePipelinePass(weights=weights_mode, fp16=fp16, lint=False).apply(
        Context(), compiled
    )
    compiled.verify()
    function = function_of(compiled)
    assert ane_form_problems(function) == []
    shapes = [y.shape for y in expected]
    actual = run_ane_form(compiled, inputs, weights, shapes)
    for i, (e, a) in enumerate(zip(expected, actual)):
        assert_close(e, a, loose, f"result {i}")

    report = module_to_proto(compiled, weights).validate(reexport=False)
    assert report.ok, str(report)

    directory = tmp / f"mil-{weights_mode}-{int(fp16)}"
    write_mil_text_dir(compiled, weights, directory)
    imported, blob_weights = read_mil_file(directory / "model.mil")
    imported.verify()
    arguments = ane_inputs(function, inputs, weights)
    again = run_function(imported, arguments, blob_weights)
    direct = run_function(compiled, arguments, weights)
    for i, (d, r) in enumerate(zip(direct, again)):
        np.testing.assert_array_equal(r, d, err_msg=f"imported result {i}")


MODES = st.tuples(st.sampled_from(["static", "dynamic"]), st.booleans())


@pytest.mark.parametrize("family", sorted(EXAMPLES))
def test_pipeline_agrees_with_rlx(family, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(family)

    @settings(FUZZ, max_examples=EXAMPLES[family])
    @given(mode=MODES, data=st.data())
    def check(mode: tuple[str, bool], data: st.DataObject):
        weights_mode, fp16 = mode
        program = data.draw(programs(family, exact=not fp16), label="program")
        check_compiled(program, weights_mode, fp16, tmp)

    check()
