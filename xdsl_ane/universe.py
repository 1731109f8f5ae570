"""Registers xdsl-ane's dialects, passes and targets with xDSL.

The `xdsl.universe` entry point in pyproject.toml points here, so plain
`xdsl-opt` sees everything below once the package is installed. Each entry
imports its module only when used. Importing this module also installs
`xdsl_ane.dialects.float_text`, so `xdsl-opt` reads back the non-finite
float constants it prints (xDSL loads the entry point before parsing).
"""

from importlib import import_module

from xdsl.universe import Universe

import xdsl_ane.dialects.float_text  # noqa: F401 (patches xDSL's dense text)


def lazy(path: str):
    """A factory returning `module:attribute`, imported on first use."""
    module, attribute = path.split(":")

    def load():
        return getattr(import_module(module), attribute)

    return load


def mil_dialect():
    """The mil dialect, with its canonicalization patterns registered
    (`xdsl_ane.passes.canonicalization.register`)."""
    import_module("xdsl_ane.passes.canonicalization").register()
    return import_module("xdsl_ane.dialects.mil").MIL


XDSL_ANE_UNIVERSE = Universe(
    all_dialects={
        "rlx": lazy("xdsl_ane.dialects.rlx:RLX"),
        "mil": mil_dialect,
        "ane": lazy("xdsl_ane.dialects.ane:ANE"),
    },
    all_passes={
        "rlx-gqa-tile": lazy("xdsl_ane.passes.gqa_tile:RlxGqaTilePass"),
        "convert-rlx-to-mil": lazy("xdsl_ane.passes.rlx_to_mil:ConvertRlxToMilPass"),
        "mil-ane-layout": lazy("xdsl_ane.passes.ane_layout:MilAneLayoutPass"),
        "mil-fp16": lazy("xdsl_ane.passes.fp16:MilFp16Pass"),
        "mil-pack-io": lazy("xdsl_ane.passes.pack_io:MilPackIoPass"),
        "mil-io-types": lazy("xdsl_ane.passes.io_types:MilIoTypesPass"),
        "ane-lint": lazy("xdsl_ane.passes.ane_lint:AneLintPass"),
        "mil-compress-weights": lazy(
            "xdsl_ane.passes.compress_weights:MilCompressWeightsPass"
        ),
        "ane-pipeline": lazy("xdsl_ane.passes.pipeline:AnePipelinePass"),
    },
    all_targets={
        "mil-text": lazy("xdsl_ane.backend.mil_text:MilTextTarget"),
        "mil-proto-text": lazy("xdsl_ane.backend.milproto:MilProtoTextTarget"),
    },
    all_frontends={
        "mil": lazy("xdsl_ane.frontend.mil_text:MilTextFrontend"),
    },
)
