"""xdsl-ane: an xDSL compiler from ML graphs to Apple's Neural Engine.

`xdsl_ane.compile(module_or_path, weights=..., pipeline=...)` runs the
pipeline and returns a `CompiledModel` (MIL protobuf, MIL text, lint report,
`save(path)`); every failure raises `XdslAneError`. See `xdsl_ane.api`.
"""

__version__ = "0.1.0"

from xdsl_ane.api import CompiledModel, compile  # noqa: E402
from xdsl_ane.tools.common import XdslAneError  # noqa: E402

__all__ = ["CompiledModel", "XdslAneError", "compile"]
