"""Whisper at real size (issue 45): Whisper-base- and Whisper-small-shaped
random bf16 checkpoints (transformers' names and shapes, cached under
~/.cache/xdsl-ane-bench) through compile-asr's defaults in a child
process: time, peak RSS, bytes written; the estimated encoder time on the
M2 and the decoder's ms per token; beside coremltools converting the same
encoder (torch.jit.trace, ct.convert to an fp16 ML program) in a child of
its own; and the numpy log-mel front end's time per 30-second window.

    python -m bench.asr [--models base,small] [--output FILE.json]
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
from bench.common import proc_status_mb, run_child
from bench.decoders import CACHE, write_random_checkpoint

MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "base": (
        "Whisper-base shape (d 512, 6 + 6 layers, 8 heads)",
        dict(d_model=512, encoder_layers=6, decoder_layers=6, heads=8, ffn=2048),
    ),
    "small": (
        "Whisper-small shape (d 768, 12 + 12 layers, 12 heads)",
        dict(d_model=768, encoder_layers=12, decoder_layers=12, heads=12, ffn=3072),
    ),
}
GENERATION = {
    "decoder_start_token_id": 50258,
    "eos_token_id": 50257,
    "pad_token_id": 50257,
    "no_timestamps_token_id": 50363,
    "begin_suppress_tokens": [220, 50257],
    "suppress_tokens": [],
}
"""Whisper's special tokens (multilingual vocabulary of 51865)."""


def write_checkpoint(name: str) -> Path:
    """The model's random bf16 checkpoint, with a generation_config.json."""
    _, shape = MODELS[name]
    heads, ffn = shape["heads"], shape["ffn"]
    fields = dict(
        vocab_size=51865,
        num_mel_bins=80,
        d_model=shape["d_model"],
        encoder_layers=shape["encoder_layers"],
        decoder_layers=shape["decoder_layers"],
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
    )
    directory = CACHE / f"whisper-{name}-random-bf16"
    write_random_checkpoint(directory, "WhisperForConditionalGeneration", fields)
    (directory / "generation_config.json").write_text(json.dumps(GENERATION))
    return directory


def ours(args: argparse.Namespace) -> dict[str, Any]:
    """compile-asr's defaults (in this child): time, peak RSS, bytes
    written, the estimates on the M2."""
    from xdsl_ane.api.asr import compile_asr
    from xdsl_ane.api.estimation import estimate

    out = Path(args.workdir) / "asr"
    start = time.perf_counter()
    compile_asr(args.checkpoint, output=out)
    seconds = time.perf_counter() - start
    written = [f for f in out.rglob("*") if f.is_file()]
    functions = estimate(out, "m2").function_ms()  # (encoder parts, decoder)
    encode = {k: v for k, v in functions.items() if k.endswith("/encode")}
    decoder = {k.removeprefix("decoder/"): v for k, v in functions.items()}
    return {
        "compile_and_write_s": round(seconds, 1),
        "peak_rss_mb": round(proc_status_mb("VmHWM"), 1),
        "written_mb": round(sum(f.stat().st_size for f in written) / 2**20, 1),
        "encode_ms_m2": round(sum(encode.values()), 2),
        "prefill_ms_m2": round(decoder["prefill"], 3),
        "decode_ms_m2": round(decoder["decode"], 3),
    }


def theirs(args: argparse.Namespace) -> dict[str, Any]:
    """coremltools converting the checkpoint's encoder (in this child):
    transformers' loading apart, then trace, convert and save."""
    import coremltools as ct
    import torch
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    start = time.perf_counter()
    model = transformers.WhisperForConditionalGeneration.from_pretrained(
        args.checkpoint, dtype=torch.float32
    ).eval()
    loaded = time.perf_counter()

    class Encoder(torch.nn.Module):  # its output tensor alone, for the trace
        def __init__(self):
            super().__init__()
            self.encoder = model.model.encoder

        def forward(self, x):
            return self.encoder(x).last_hidden_state

    features = torch.zeros(1, model.config.num_mel_bins, 3000)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(Encoder().eval(), features)
        mlmodel = ct.convert(
            traced,
            inputs=[ct.TensorType(name="input_features", shape=features.shape)],
            compute_precision=ct.precision.FLOAT16,
            minimum_deployment_target=ct.target.iOS18,
            skip_model_load=True,
        )
    out = Path(args.workdir) / "encoder.mlpackage"
    mlmodel.save(str(out))
    seconds = time.perf_counter() - start
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return {
        "load_s": round(loaded - start, 1),
        "encoder_convert_s": round(seconds - (loaded - start), 1),
        "peak_rss_mb": round(proc_status_mb("VmHWM"), 1),
        "encoder_mb": round(size / 2**20, 1),
    }


def front_end() -> dict[str, Any]:
    """The numpy log-mel features of one 30-second window: the best of 5."""
    import numpy as np

    from xdsl_ane.models.audio import log_mel

    samples = np.random.default_rng(0).standard_normal(480000).astype(np.float32)
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        log_mel(0.1 * samples, 80)
        runs.append(time.perf_counter() - start)
    return {"log_mel_ms": round(1000 * min(runs), 1)}


def row(name: str, scratch: Path) -> dict[str, Any]:
    checkpoint = write_checkpoint(name)
    arguments = ["--checkpoint", str(checkpoint)]
    result = {"model": MODELS[name][0]}
    result["ours"] = run_child("asr", ["--case", "ours", *arguments], scratch, name)
    result["theirs"] = run_child(
        "asr", ["--case", "theirs", *arguments], scratch, f"{name} (coremltools)"
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="base,small")
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=["ours", "theirs"])
    parser.add_argument("--checkpoint")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        measure = ours if args.case == "ours" else theirs
        args.output.write_text(json.dumps(measure(args), indent=2) + "\n")
        return 0
    section: dict[str, Any] = {"front_end": front_end()}
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-asr-") as scratch:
        for name in args.models.split(","):
            section[name] = row(name, Path(scratch))
            print(json.dumps(section[name]), flush=True)
    report.output_section("asr", section, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
