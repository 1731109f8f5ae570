"""Registers xdsl-ane's dialects, passes and targets with xDSL.

The `xdsl.universe` entry point in pyproject.toml points here, so plain
`xdsl-opt` sees everything below once the package is installed.
"""

from xdsl.universe import Universe


def get_rlx():
    from xdsl_ane.dialects.rlx import RLX

    return RLX


def get_mil():
    from xdsl_ane.dialects.mil import MIL

    return MIL


def get_rlx_gqa_tile():
    from xdsl_ane.passes.gqa_tile import RlxGqaTilePass

    return RlxGqaTilePass


def get_convert_rlx_to_mil():
    from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

    return ConvertRlxToMilPass


XDSL_ANE_UNIVERSE = Universe(
    all_dialects={"rlx": get_rlx, "mil": get_mil},
    all_passes={
        "rlx-gqa-tile": get_rlx_gqa_tile,
        "convert-rlx-to-mil": get_convert_rlx_to_mil,
    },
)
