"""Weights, below the frontends and the backend: reading checkpoint tensors
(`safetensors`: the format; `checkpoint`: Hugging Face checkpoints, one
file or sharded, read lazily), `.npz`/`.npy` arrays (`arrays`), weights
read only where used (`lazy`), the store that gives each op its weight
through its view (`store`), and checking a program's weights (`check`).

The package sits beside the interpreter, whose errors the store raises;
the interpreter, passes, backend, frontends and models read weights
through it."""
