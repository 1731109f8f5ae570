"""PyTorch in: a `torch.export` program as an rlx module and its weights.

    import torch, xdsl_ane
    imported = xdsl_ane.from_torch(model, (input_ids,))   # or an ExportedProgram
    imported.module          # builtin.module { func.func @main(...) }
    imported.weights         # state_dict key -> numpy array
    xdsl_ane.compile(imported.module, weights=imported.weights)

The program is decomposed to core ATen except for the ops rlx has whole
(`scaled_dot_product_attention`, `linear`, `rms_norm`, `layer_norm`, `gelu`,
`silu`); every node that does not depend on a user input is computed here
by torch (masks, RoPE tables, position arithmetic); int64 inputs become i32,
bool i1, bfloat16 f32 (exact) and float64 f32 (narrowed, with a note in
`TorchImport.notes`); empty tensors fold away; the patterns Hugging Face
writes by hand become rlx's own ops (`patterns.py`). torch is imported only
when this module is used; without it, an `XdslAneError` names the extra to
install.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin

from xdsl_ane.errors import XdslAneError

INSTALL_HINT = "pip install 'xdsl-ane[torch]'"


def require_torch() -> Any:
    """torch, or an `XdslAneError` saying how to install it."""
    try:
        import torch
    except ImportError:
        raise XdslAneError(
            f"the PyTorch frontend needs torch: {INSTALL_HINT}"
        ) from None
    return torch


@dataclass
class TorchImport:
    """An imported program: `module` holds `func.func @main` in rlx,
    `weights` its parameters, buffers and constants by state_dict key
    (tied weights once; tensors folded from them as `folded.<node>`,
    RoPE tables as `rope.cos` / `rope.sin`), and the names of `@main`'s
    arguments and results. `notes` says what the program holds otherwise
    than torch did (bfloat16 or float64 values held as f32), one line each."""

    module: builtin.ModuleOp
    weights: dict[str, np.ndarray]
    input_names: list[str]
    output_names: list[str]
    source: str = "<torch>"
    input_dtypes: list[np.dtype] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def numpy_inputs(self, *tensors: Any) -> list[np.ndarray]:
        """Tensors (in `input_names` order) as the arrays `@main` takes:
        int64 as int32, bool as bool, bfloat16 and float64 as float32."""
        arrays = []
        for t, dtype in zip(tensors, self.input_dtypes, strict=True):
            if hasattr(t, "detach"):
                t = t.detach().cpu()
                if t.dtype == require_torch().bfloat16:
                    t = t.float()  # numpy has no bfloat16; float32 holds it exactly
                t = t.numpy()
            arrays.append(np.asarray(t).astype(dtype))
        return arrays


def is_torch_input(value: Any) -> bool:
    """An ExportedProgram, an nn.Module or a `.pt2` path. torch is not
    imported for this: an object of torch's can only exist once it is."""
    if isinstance(value, str | Path):
        return Path(value).suffix == ".pt2"
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return isinstance(value, torch.nn.Module | torch.export.ExportedProgram)


def from_torch(
    program: Any,
    example_args: tuple[Any, ...] | list[Any] | None = None,
    example_kwargs: dict[str, Any] | None = None,
) -> TorchImport:
    """Imports a `torch.export.ExportedProgram`, an `nn.Module` (exported on
    `example_args` / `example_kwargs`; Hugging Face models with
    `use_cache=False`) or the path of a `.pt2` file written by
    `torch.export.save`. Raises `XdslAneError`."""
    torch = require_torch()
    aten = register_translations()
    from xdsl_ane.frontend.torch.program import (
        decompose,
        export_module,
        load_program,
        read_signature,
    )
    from xdsl_ane.frontend.torch.translate import Translator
    from xdsl_ane.passes.fold_batch_norm import fold_batch_norms

    where = "from_torch"
    if isinstance(program, str | Path):
        where = str(program)
        program = load_program(program)
    elif isinstance(program, torch.nn.Module):
        where = type(program).__name__
        program = export_module(program, example_args, example_kwargs)
    elif not isinstance(program, torch.export.ExportedProgram):
        raise XdslAneError(
            "from_torch: expected a torch.export.ExportedProgram, an nn.Module or "
            f"a .pt2 path, got {type(program).__name__}"
        )

    # torch.export's own graph when every op of it translates (the
    # re-trace of run_decompositions is most of an import's time), else
    # the core ATen decomposition
    if needs_decomposition(program, where):
        program = decompose(program, where)
    signature = read_signature(program, where)
    translator = Translator(
        signature, aten.TRANSLATIONS, aten.SHAPE_ONLY, aten.NO_OPS, where
    )
    module = translator.build(program.graph_module.graph)
    fold_batch_norms(module, translator.weights)
    dtypes = [
        np.dtype(np.bool_)
        if n.meta["val"].dtype == torch.bool
        else np.dtype(np.int32)
        if not n.meta["val"].is_floating_point()
        else np.dtype(
            np.float16 if n.meta["val"].dtype == torch.float16 else np.float32
        )
        for n in signature.user_inputs
    ]
    return TorchImport(
        module,
        translator.weights,
        [n.name for n in signature.user_inputs],
        signature.output_names,
        where,
        dtypes,
        translator.notes,
    )


def register_translations() -> Any:
    """Imports the modules whose `@translates` handlers the importer uses
    (each registers its ATen ops when imported); returns `aten`, which
    holds the tables."""
    from xdsl_ane.frontend.torch import (  # noqa: F401 (registers)
        aten,
        aten_math,
        aten_pooling,
        aten_quantize,
        aten_recurrent,
        aten_resampling,
        aten_scatter,
        aten_signal,
        aten_spatial,
    )

    return aten


def needs_decomposition(program: Any, where: str = "from_torch") -> bool:
    """Whether `from_torch` decomposes the ExportedProgram `program` to core
    ATen first: unless torch.export's own graph translates as it is
    (`program.translatable_as_is`)."""
    aten = register_translations()
    from xdsl_ane.frontend.torch.program import read_signature, translatable_as_is
    from xdsl_ane.frontend.torch.translate import Translator

    try:
        signature = read_signature(program, where)
    except XdslAneError:  # (said again of the decomposed program)
        return True
    translator = Translator(
        signature, aten.TRANSLATIONS, aten.SHAPE_ONLY, aten.NO_OPS, where
    )
    runtime = translator.runtime_nodes(program.graph)
    return not translatable_as_is(program, runtime, translator.translatable)
