"""A SmolVLM-256M-shaped vision package (issue 45): the vision tower and
connector of an Idefics3 model (SigLIP, 768 wide, 12 layers, 512×512
tiles of 16×16 patches, pixel shuffle by 4 to the 576-wide text model's
width; random weights), as compile-llm builds its vision package
(`FeaturesOf` of transformers' modules, the patch embedding as patches and
a linear layer), exported once and compiled by xdsl-ane and by
coremltools' `ct.convert`: time, peak RSS, ops, and our estimate on M4
and M2; where coremltools fails, the error it gives.

    python -m bench.vlm [--output FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from bench import report
from bench.common import proc_status_mb, proto_op_counts, run_child

LABEL = "SmolVLM-256M shape (SigLIP 768 × 12 layers, 512² tile, pixel shuffle 4)"
VISION = dict(
    hidden_size=768,
    intermediate_size=3072,
    num_hidden_layers=12,
    num_attention_heads=12,
    patch_size=16,
    image_size=512,
)


def exported():
    """The vision package's program: transformers' Idefics3 vision model
    and connector behind `FeaturesOf`, its patch embedding as a linear."""
    import torch
    import transformers

    from xdsl_ane.models.vision_language import FeaturesOf, patches_as_linear

    transformers.logging.set_verbosity_error()
    config = transformers.Idefics3Config(
        vision_config=VISION,
        text_config=dict(
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=1,
            num_attention_heads=9,
            num_key_value_heads=3,
            vocab_size=64,
        ),
        scale_factor=4,
    )
    torch.manual_seed(0)
    inner = transformers.Idefics3ForConditionalGeneration(config).model.eval()
    patches_as_linear(inner.vision_model)
    module = FeaturesOf(inner, tiles=True).eval()
    x = torch.randn(1, 3, 512, 512, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return torch.export.export(module, (x,))


def ours(program, workdir: Path) -> dict[str, Any]:
    import xdsl_ane
    from xdsl_ane.estimator import estimate

    start = time.perf_counter()
    compiled = xdsl_ane.compile(program)
    compiled.save(workdir / "ours.mlpackage")
    seconds = time.perf_counter() - start
    counts = compiled.op_counts()
    return {
        "total_s": round(seconds, 2),
        "ops": sum(sum(c.values()) for c in counts.values()),
        "est_ms_m4": round(estimate(compiled, "m4").total_ms, 3),
        "est_ms_m2": round(estimate(compiled, "m2").total_ms, 3),
    }


def theirs(program, workdir: Path) -> dict[str, Any]:
    import coremltools as ct

    from bench.torch_frontend import patch_coremltools

    patch_coremltools()
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ct.convert(
                program.run_decompositions({}),
                convert_to="mlprogram",
                compute_precision=ct.precision.FLOAT16,
                minimum_deployment_target=ct.target.iOS18,
                skip_model_load=True,
            )
    except Exception as e:  # what it does not convert, recorded
        seconds = time.perf_counter() - start
        return {
            "failed": f"{type(e).__name__}: {str(e).splitlines()[0]}",
            "total_s": round(seconds, 2),
        }
    model.save(str(workdir / "theirs.mlpackage"))
    seconds = time.perf_counter() - start
    counts = proto_op_counts(model.get_spec())
    return {"total_s": round(seconds, 2), "ops": sum(counts.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=["ours", "theirs"])
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        import coremltools  # noqa: F401  (imported outside the clock)

        program = exported()
        result = (ours if args.case == "ours" else theirs)(program, args.workdir)
        result["peak_rss_mb"] = round(proc_status_mb("VmHWM"), 1)
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        return 0
    section: dict[str, Any] = {"model": LABEL}
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-vlm-") as scratch:
        for case in ("ours", "theirs"):
            section[case] = run_child("vlm", ["--case", case], Path(scratch), case)
            print(case, json.dumps(section[case]), flush=True)
    if "failed" not in section["theirs"]:
        section["ours_over_theirs"] = round(
            section["ours"]["total_s"] / section["theirs"]["total_s"], 3
        )
    report.output_section("vlm", section, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
