"""Hardware facts about the EC2 GPU instance types the AWS components can build.

Only what a node group needs to be declared correctly: how many GPUs a type has (so spot
alternates stay interchangeable), how many network cards can carry an EFA interface, and
whether the secondary cards accept EFA-only interfaces. These are hardware facts, not
prices; prices live in the policy catalog.

Sources (AWS EC2 User Guide, as of 2026-01): "Accelerated computing instance specifications"
(GPUs, network cards), "Elastic Fabric Adapter: supported instance types", "Maximize network
bandwidth on Amazon EC2 instances with multiple network cards" (one EFA per network card;
primary interface card 0 / device 0 of type efa, the others device index 1) and "EFA
configuration for P5 instances" (EFA-only secondaries on the Nitro v5 P5 family).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInstanceType:
    name: str
    accelerator: str      # policies accelerator id (h100-80gb, l40s, ...)
    gpus: int
    efa_cards: int        # network cards that can each carry one EFA interface; 0 = no EFA
    efa_only_secondaries: bool = False  # secondary cards may use interface type "efa-only"

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def chip(self) -> str:
        """GPUs that run the same kernels at the same speed class: A100 40/80 GB, H100/H200."""
        return GPU_CHIPS[self.accelerator]

    @property
    def hbm_gib(self) -> int:
        return GPU_MEMORY_GIB[self.accelerator]

    def can_stand_in_for(self, primary: "GpuInstanceType") -> bool:
        """A spot alternate: same GPU count and chip, at least as much memory per GPU."""
        return self.gpus == primary.gpus and self.chip == primary.chip and self.hbm_gib >= primary.hbm_gib


GPU_CHIPS = {"a100-40gb": "a100", "a100-80gb": "a100", "h100-80gb": "hopper", "h200-141gb": "hopper",
             "l4": "l4", "l40s": "l40s", "a10g": "a10g"}
GPU_MEMORY_GIB = {"a100-40gb": 40, "a100-80gb": 80, "h100-80gb": 80, "h200-141gb": 141,
                  "l4": 24, "l40s": 48, "a10g": 24}


def _table(*types: GpuInstanceType) -> dict[str, GpuInstanceType]:
    return {t.name: t for t in types}


GPU_INSTANCE_TYPES: dict[str, GpuInstanceType] = _table(
    # H100 / H200 / A100: eight GPUs, multi-card EFA, the training workhorses.
    GpuInstanceType("p5.48xlarge", "h100-80gb", 8, 32, efa_only_secondaries=True),
    GpuInstanceType("p5e.48xlarge", "h200-141gb", 8, 32, efa_only_secondaries=True),
    GpuInstanceType("p5en.48xlarge", "h200-141gb", 8, 16, efa_only_secondaries=True),
    GpuInstanceType("p4d.24xlarge", "a100-40gb", 8, 4),
    GpuInstanceType("p4de.24xlarge", "a100-80gb", 8, 4),
    # L40S.
    GpuInstanceType("g6e.xlarge", "l40s", 1, 0),
    GpuInstanceType("g6e.2xlarge", "l40s", 1, 0),
    GpuInstanceType("g6e.4xlarge", "l40s", 1, 0),
    GpuInstanceType("g6e.8xlarge", "l40s", 1, 1),
    GpuInstanceType("g6e.16xlarge", "l40s", 1, 1),
    GpuInstanceType("g6e.12xlarge", "l40s", 4, 1),
    GpuInstanceType("g6e.24xlarge", "l40s", 4, 2),
    GpuInstanceType("g6e.48xlarge", "l40s", 8, 4),
    # L4.
    GpuInstanceType("g6.xlarge", "l4", 1, 0),
    GpuInstanceType("g6.2xlarge", "l4", 1, 0),
    GpuInstanceType("g6.4xlarge", "l4", 1, 0),
    GpuInstanceType("g6.8xlarge", "l4", 1, 1),
    GpuInstanceType("g6.16xlarge", "l4", 1, 1),
    GpuInstanceType("g6.12xlarge", "l4", 4, 1),
    GpuInstanceType("g6.24xlarge", "l4", 4, 1),
    GpuInstanceType("g6.48xlarge", "l4", 8, 1),
    # A10G.
    GpuInstanceType("g5.xlarge", "a10g", 1, 0),
    GpuInstanceType("g5.2xlarge", "a10g", 1, 0),
    GpuInstanceType("g5.4xlarge", "a10g", 1, 0),
    GpuInstanceType("g5.8xlarge", "a10g", 1, 1),
    GpuInstanceType("g5.16xlarge", "a10g", 1, 1),
    GpuInstanceType("g5.12xlarge", "a10g", 4, 1),
    GpuInstanceType("g5.24xlarge", "a10g", 4, 1),
    GpuInstanceType("g5.48xlarge", "a10g", 8, 1),
)


def gpu_instance_type(name: str) -> GpuInstanceType | None:
    return GPU_INSTANCE_TYPES.get(name)
