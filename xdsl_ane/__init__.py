"""xdsl-ane: an xDSL compiler from ML graphs to Apple's Neural Engine.

`xdsl_ane.compile(module_or_path, weights=..., pipeline=...)` runs the
pipeline and returns a `CompiledModel` (MIL protobuf, MIL text, lint report,
`save(path)`); every failure raises `XdslAneError`. See `xdsl_ane.api`.
`xdsl_ane.from_torch(program)` imports a `torch.export` program as rlx
(needs the `torch` extra). See `xdsl_ane.frontend.torch`.
`xdsl_ane.compile_llm(checkpoint, context=..., prefill=...)` compiles a
Hugging Face checkpoint directory to a stateful prefill/decode package
(`LlmPackage`, `save(path)`), or with `layers_per_package=K` to a set of
packages chained by one manifest (`LlmPackageSet`). See `xdsl_ane.api.llm`.
`xdsl_ane.estimate(compiled, chip="m4")` places each op on the chip's ANE or
the CPU/GPU and estimates its time (`Estimate`). See `xdsl_ane.estimator`.
"""

__version__ = "0.1.0"

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl_ane.api import CompiledModel, compile
    from xdsl_ane.api.estimation import estimate
    from xdsl_ane.api.llm import LlmPackage, LlmPackageSet
    from xdsl_ane.api.llm_compile import compile_llm
    from xdsl_ane.errors import XdslAneError
    from xdsl_ane.frontend.torch import TorchImport, from_torch

# Each name is imported on first use, so that importing the package (which
# every submodule import, `xdsl-opt`'s universe entry point included, does
# first) loads none of the compiler.
_EXPORTS = {
    "CompiledModel": "xdsl_ane.api",
    "compile": "xdsl_ane.api",
    "XdslAneError": "xdsl_ane.errors",
    "TorchImport": "xdsl_ane.frontend.torch",
    "from_torch": "xdsl_ane.frontend.torch",
    "estimate": "xdsl_ane.api.estimation",
    "LlmPackage": "xdsl_ane.api.llm",
    "LlmPackageSet": "xdsl_ane.api.llm",
    "compile_llm": "xdsl_ane.api.llm_compile",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xdsl_ane' has no attribute '{name}'")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "CompiledModel",
    "LlmPackage",
    "LlmPackageSet",
    "TorchImport",
    "XdslAneError",
    "compile",
    "compile_llm",
    "estimate",
    "from_torch",
]
