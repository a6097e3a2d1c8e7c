"""Which CPU architecture a job's nodes are, and which architectures each image it runs is published for.

A node's architecture comes from the hardware facts table: a machine type states its own (A4X and p6e-gb200 are
Arm, Grace hosts); a Kubernetes inventory names only its chip, whose architecture is the one every machine type
of that chip shares (GB200 is Grace + Blackwell on every cloud). An image's architectures are stated once, in
runtime.yaml `image_architectures`, with their source, or said to be unconfirmed there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accel.components.kubernetes.node_installers import ARCH_LABEL  # noqa: F401 (the one spelling, re-exported)
from accel.policies import hardware

from accel.job.facts import runtime


def normalized(arch: str | None) -> str | None:
    """A node or image architecture as Kubernetes names it (kubernetes.io/arch: amd64 | arm64), None if unknown:
    the hardware table's one spelling map (policies/hardware kubernetes_arch_name)."""
    return hardware.kubernetes_arch_name(arch)


def machine_arch(machine_type: str | None) -> str | None:
    """The architecture of a cloud machine type in the hardware table, None for one it does not list."""
    return hardware.current().kubernetes_arch(machine_type)


def chip_arch(chip: str | None) -> str | None:
    """The architecture every machine type carrying `chip` shares (gb200: arm64), None when they differ or the
    table lists none: an inventory of that chip is that architecture."""
    facts = hardware.current()
    arches = {facts.kubernetes_arch(m.name) for m in (*facts.gcp_gpu_machines.values(),
                                                        *facts.aws_gpu_instances.values()) if m.chip == chip}
    return arches.pop() if len(arches) == 1 else None


def node_arch(machine_type: str | None, chip: str | None) -> str | None:
    """The nodes' architecture: the machine type's own, else its chip's."""
    return machine_arch(machine_type) or chip_arch(chip)


@dataclass(frozen=True)
class ImageArchitectures:
    image: str
    status: Literal["stated", "unconfirmed", "unknown"]   # unknown: the table does not list the image
    architectures: tuple[str, ...] = ()
    source: str = ""

    def runs_on(self, arch: str) -> bool | None:
        """True/False when stated, None when unconfirmed or unknown."""
        return arch in self.architectures if self.status == "stated" else None


def image_architectures(image: str) -> ImageArchitectures:
    """What runtime.yaml states of `image`'s architectures."""
    row = (runtime().get("image_architectures") or {}).get(image)
    if row is None:
        return ImageArchitectures(image, "unknown")
    stated = row["architectures"]
    if stated == "unconfirmed":
        return ImageArchitectures(image, "unconfirmed", (), row["source"])
    return ImageArchitectures(image, "stated", tuple(normalized(a) or a for a in stated), row["source"])
