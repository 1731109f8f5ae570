"""Op counts against coremltools on the models where xdsl-ane once emitted
more ops than `ct.convert` (the bench's small Swin, ConvNeXt, RoBERTa and
Depth Anything, `bench/torch_models.py`): the same torch.export program
through both, non-const ops of both packages counted alike; ours must be no
more. Each program is also checked by numbers against torch (fp32 and the
fp16 package, `torch_check.check_program`), so the rewrites that removed
the ops (strided slices as a phase of a split axis, layout chains folded,
transposes sunk into convs and matmul flags, matmul + bias as linear) are
tested on the models they were made for."""

from __future__ import annotations

import warnings

import pytest
from torch_check import check_program, export

from bench.common import proto_op_counts
from bench.torch_models import SMALL_MODELS, build

# Exports torch models and converts them with coremltools: -m 'not slow' skips.
pytestmark = pytest.mark.slow


OURS_AT_MOST = {
    "swin_small_config": 138,  # coremltools: 147
    "convnext_small_config": 21,  # 27
    "roberta_small_config": 58,  # 65
    "depth_anything_small_config": 164,  # 185
}
"""Our non-const ops when these rewrites landed (the figures of bench
results.json's torch_models section); fewer is fine."""


@pytest.mark.parametrize("name", sorted(SMALL_MODELS))
def test_no_more_ops_than_coremltools(name, tmp_path):
    from bench.torch_frontend import theirs

    model, args = build(name)
    program = export(model, args)
    checked = check_program(program, args)
    ours = proto_op_counts(checked.compiled.spec).total()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coremltools = theirs(program, tmp_path, 0, decompositions={})["ops"]
    assert ours <= coremltools, (name, ours, coremltools)
    assert ours <= OURS_AT_MOST[name], (name, ours)


def test_swin_patch_merging_reads_phases_without_gathers():
    """x[:, 0::2, 0::2] and its three siblings: each strided slice is the
    axis split into (count, step) and one phase narrowed, not a gather nor
    four narrows and a concat per axis."""
    model, args = build("swin_small_config")
    checked = check_program(export(model, args), args)
    assert not checked.ops("rlx.gather")
    # two narrows and a concat per rolled axis (2 rolls of 2 axes), one
    # narrow per strided slice (4 slices of 2 axes), one concat of the four
    assert len(checked.ops("rlx.narrow")) == 2 * 2 * 2 + 4 * 2
    assert len(checked.ops("rlx.concat")) == 2 * 2 + 1
