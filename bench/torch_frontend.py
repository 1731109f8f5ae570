"""PyTorch in, side by side: the same `torch.export` program of Hugging
Face Qwen3 (0.6B sizes, random weights from the config) through coremltools'
`ct.convert` and through xdsl-ane (`from_torch` + `compile` + `save`):
compile-and-save time and non-const op counts, for the full model
(ids -> logits) and the hidden-state stack, at several depths.

    python -m bench.torch_frontend [--layers 2,4] [--parts full,stack] [--seq 128]
                                   [--vocab 151936] [--output FILE.json]

Each case runs in a process of its own (`--case`), exported once and
compiled by both; the fastest of `--repeats` runs of each is reported.
coremltools needs two patches for these programs, applied here and recorded
in the results (`COREMLTOOLS_PATCHES`); its trace path fails on `diff` and
`new_ones` and is not used.
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
from bench.common import proto_op_counts, run_child

COREMLTOOLS_PATCHES = [
    "program.run_decompositions() first: ct.convert refuses the default export "
    "(it keeps scaled_dot_product_attention and linear, which its "
    "ExportedProgram frontend does not take)",
    "aten.alias registered as a no-op (torch_alias of coremltools' noop)",
]

QWEN3_0_6B = dict(
    hidden_size=1024,
    intermediate_size=3072,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)


def export_qwen3(layers: int, part: str, seq: int, vocab: int):
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.Qwen3Config(
        vocab_size=vocab, num_hidden_layers=layers, use_cache=False, **QWEN3_0_6B
    )
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    if part == "full":
        model = transformers.Qwen3ForCausalLM(config).eval()
        args, kwargs = (torch.randint(0, vocab, (1, seq), generator=generator),), {}
    else:
        model = transformers.Qwen3Model(config).eval()
        x = torch.randn(1, seq, config.hidden_size, generator=generator)
        args, kwargs = (), {"inputs_embeds": x}
    with torch.no_grad():
        # use_cache=False from the config, not as an argument: ct.convert
        # takes no non-tensor input.
        return torch.export.export(model, args, kwargs=kwargs)


def patch_coremltools() -> None:
    from coremltools.converters.mil.frontend.torch import ops
    from coremltools.converters.mil.frontend.torch.torch_op_registry import (
        _TORCH_OPS_REGISTRY,
    )

    if "alias" not in _TORCH_OPS_REGISTRY:
        _TORCH_OPS_REGISTRY.set_func_by_name(ops.noop, "alias")


def ours(program, workdir: Path, run: int) -> dict[str, Any]:
    import xdsl_ane

    start = time.perf_counter()
    imported = xdsl_ane.from_torch(program)
    imported_at = time.perf_counter()
    # A 151936-row head is an ane-lint error on every chip (> 65536); the
    # package is still written, as ct.convert writes its own.
    model = xdsl_ane.compile(
        imported.module, weights=imported.weights, allow_lint_errors=True
    )
    compiled_at = time.perf_counter()
    model.save(workdir / f"ours-{run}.mlpackage")
    end = time.perf_counter()
    counts = proto_op_counts(model.spec)
    return {
        "import_s": round(imported_at - start, 3),
        "compile_s": round(compiled_at - imported_at, 3),
        "save_s": round(end - compiled_at, 3),
        "total_s": round(end - start, 3),
        "ops": sum(counts.values()),
        "by_type": dict(sorted(counts.items())),
        "lint": model.lint.summary(),
    }


def theirs(
    program, workdir: Path, run: int, decompositions: dict | None = None
) -> dict[str, Any]:
    """ct.convert + save of `program` after `run_decompositions` (torch's
    default table, or `decompositions`: `{}` only lowers the export to the
    ATen dialect ct.convert requires)."""
    import coremltools as ct

    patch_coremltools()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if decompositions is None:
            decomposed = program.run_decompositions()
        else:
            decomposed = program.run_decompositions(decompositions)
        decomposed_at = time.perf_counter()
        mlmodel = ct.convert(
            decomposed,
            convert_to="mlprogram",
            compute_precision=ct.precision.FLOAT16,
            minimum_deployment_target=ct.target.iOS18,
            skip_model_load=True,
        )
    converted_at = time.perf_counter()
    mlmodel.save(str(workdir / f"theirs-{run}.mlpackage"))
    end = time.perf_counter()
    counts = proto_op_counts(mlmodel.get_spec())
    return {
        "decompose_s": round(decomposed_at - start, 3),
        "convert_s": round(converted_at - decomposed_at, 3),
        "save_s": round(end - converted_at, 3),
        "total_s": round(end - start, 3),
        "ops": sum(counts.values()),
        "by_type": dict(sorted(counts.items())),
    }


def measure_case(args: argparse.Namespace) -> dict[str, Any]:
    import coremltools  # noqa: F401  (imports outside the clocks)

    import xdsl_ane.backend.milproto  # noqa: F401
    import xdsl_ane.backend.mlpackage  # noqa: F401

    layers, part = int(args.case[0]), args.case[1]
    start = time.perf_counter()
    program = export_qwen3(layers, part, args.seq, args.vocab)
    export_s = time.perf_counter() - start
    workdir = Path(args.workdir)
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "theirs": []}
    for run in range(args.repeats):
        runs["ours"].append(ours(program, workdir, run))
        runs["theirs"].append(theirs(program, workdir, run))
    best = {k: min(v, key=lambda r: r["total_s"]) for k, v in runs.items()}
    for k, v in runs.items():
        best[k] = {**best[k], "runs_s": [r["total_s"] for r in v]}
    return {
        "layers": layers,
        "part": part,
        "seq": args.seq,
        "vocab": args.vocab,
        "export_s": round(export_s, 3),
        **best,
        "time_ratio": round(best["ours"]["total_s"] / best["theirs"]["total_s"], 3),
    }


def table(cases: list[dict[str, Any]]) -> str:
    lines = [
        "| model | layers | xdsl-ane s | ct.convert s | ratio | xdsl-ane ops | ct.convert ops |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        name = "Qwen3 ids -> logits" if c["part"] == "full" else "Qwen3 stack"
        lines.append(
            f"| {name} | {c['layers']} | {c['ours']['total_s']:.2f} | "
            f"{c['theirs']['total_s']:.2f} | {c['time_ratio']:.3f} | "
            f"{c['ours']['ops']} | {c['theirs']['ops']} |"
        )
    return "\n".join(lines)


def measure_torch_frontend(
    layers: list[int] | None = None,
    parts: tuple[str, ...] = ("full", "stack"),
    seq: int = 128,
    vocab: int = 151936,
    repeats: int = 1,
) -> dict[str, Any]:
    """Every case in a child process; the results and the patches used."""
    cases = []
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-torch-bench-") as scratch:
        for count in layers or [2, 4]:
            for part in parts:
                arguments = ["--case", str(count), part, "--seq", str(seq)]
                arguments += ["--vocab", str(vocab), "--repeats", str(repeats)]
                print(f"torch frontend: Qwen3 {part}, {count} layers ...", flush=True)
                cases.append(
                    run_child(
                        "torch_frontend",
                        arguments,
                        Path(scratch),
                        f"torch frontend case {count} {part}",
                    )
                )
    print(table(cases), flush=True)
    return {"coremltools_patches": COREMLTOOLS_PATCHES, "cases": cases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="2,4")
    parser.add_argument("--parts", default="full,stack")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", nargs=2, metavar=("LAYERS", "PART"))
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        args.output.write_text(json.dumps(measure_case(args), indent=2) + "\n")
        return 0
    results = measure_torch_frontend(
        [int(n) for n in args.layers.split(",")],
        tuple(args.parts.split(",")),
        args.seq,
        args.vocab,
        args.repeats,
    )
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.output}")
    else:
        report.store_section("torch_frontend", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
