"""Core ML deployment targets: the specification version, the MIL opset of
the protobuf and of MIL text, and which ops each opset has."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl_ane.dialects import mil
from xdsl_ane.errors import XdslAneError


@dataclass(frozen=True)
class Deployment:
    """A Core ML deployment target: the spec version and MIL opset it means."""

    name: str
    specification_version: int
    opset: str
    """The protobuf's opset string (`CoreML8`)."""
    text_opset: str
    """MIL text's opset (`func main<ios18>`)."""

    def check_available(self, op: mil.MilOp, where: str) -> None:
        """Fails on an op that this target's opset does not have."""
        introduced = op.OPSET
        if TARGET_VERSIONS[introduced] > self.specification_version:
            raise XdslAneError(
                f"{where}: {op.name} needs deployment target {introduced} or "
                f"later, not {self.name}"
            )


DEPLOYMENTS: dict[str, Deployment] = {
    "iOS17": Deployment("iOS17", 8, "CoreML7", "ios17"),
    "iOS18": Deployment("iOS18", 9, "CoreML8", "ios18"),
}
TARGET_VERSIONS = {"iOS15": 6, "iOS16": 7, "iOS17": 8, "iOS18": 9}
MULTIFUNCTION_VERSION = 9
"""Multifunction models need iOS18 (coremltools refuses them before)."""


def deployment_target(target: str) -> Deployment:
    if target not in DEPLOYMENTS:
        raise XdslAneError(
            f"deployment target '{target}': expected one of {', '.join(DEPLOYMENTS)}"
        )
    return DEPLOYMENTS[target]
