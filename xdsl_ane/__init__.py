"""xdsl-ane: an xDSL compiler from ML graphs to Apple's Neural Engine.

`xdsl_ane.compile(module_or_path, weights=..., pipeline=...)` runs the
pipeline and returns a `CompiledModel` (MIL protobuf, MIL text, lint report,
`save(path)`); every failure raises `XdslAneError`. See `xdsl_ane.api`.
`xdsl_ane.from_torch(program)` imports a `torch.export` program as rlx
(needs the `torch` extra). See `xdsl_ane.frontend.torch`.
`xdsl_ane.compile_llm(checkpoint, context=..., prefill=...)` compiles a
Hugging Face checkpoint directory to a stateful prefill/decode package
(`LlmPackage`, `save(path)`), or with `layers_per_package=K` to a set of
packages chained by one manifest (`LlmPackageSet`). See `xdsl_ane.tools.llm`.
`xdsl_ane.estimate(compiled, chip="m4")` places each op on the chip's ANE or
the CPU/GPU and estimates its time (`Estimate`). See `xdsl_ane.estimator`.
"""

__version__ = "0.1.0"

from xdsl_ane.api import CompiledModel, compile  # noqa: E402
from xdsl_ane.errors import XdslAneError  # noqa: E402
from xdsl_ane.frontend.torch import TorchImport, from_torch  # noqa: E402
from xdsl_ane.tools.estimate import estimate  # noqa: E402
from xdsl_ane.tools.llm import LlmPackage, LlmPackageSet, compile_llm  # noqa: E402

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
