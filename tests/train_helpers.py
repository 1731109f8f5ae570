"""What the training tests share: the sequence and options of their runs,
token files, and transformers' model trained as `train` trains."""

from __future__ import annotations

import numpy as np
import torch

SEQ = 16
OPTIONS = dict(
    seq_len=SEQ,
    batch=2,
    lr=3e-3,
    weight_decay=0.1,
    betas=(0.9, 0.95),
    warmup=1,
    schedule="cosine",
    grad_clip=1.0,
    precision="fp32",
)


def token_file(directory, count: int, seed: int = 0, vocab: int = 300):
    ids = np.random.default_rng(seed).integers(0, vocab, count).astype(np.int32)
    path = directory / "tokens.npy"
    np.save(path, ids)
    return path, ids


def torch_reference(model, ids: np.ndarray, steps: int, options: dict):
    """transformers' model trained as `train` trains: the losses and the
    model after `steps`."""
    from transformers import get_cosine_schedule_with_warmup

    s, b = options["seq_len"], options["batch"]
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": options["weight_decay"]},
            {"params": rest, "weight_decay": 0.0},
        ],
        lr=options["lr"],
        betas=options["betas"],
        eps=1e-8,
        foreach=False,
    )
    schedule = get_cosine_schedule_with_warmup(optimizer, options["warmup"], steps)
    losses = []
    model.eval()  # no dropout: `train` has none
    for k in range(steps):
        rows = [
            ids[(k * b + j) * (s + 1) : (k * b + j + 1) * (s + 1)] for j in range(b)
        ]
        batch = torch.tensor(np.stack(rows), dtype=torch.long)
        logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)
        )
        losses.append(float(loss.detach()))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), options["grad_clip"])
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    return losses, model


def relative(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
