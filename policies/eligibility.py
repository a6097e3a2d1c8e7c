"""Hard constraints: offerings that can never serve a workload, whatever their size or price."""

from __future__ import annotations

from policies.catalog.model import Offering
from policies.workload import XLA_FRAMEWORKS, WorkloadSpec


def hard_filter(spec: WorkloadSpec, offering: Offering) -> tuple[str, str] | None:
    """(constraint, reason) when the offering can never serve this workload, else None."""
    constraints = spec.constraints
    if offering.cloud not in constraints.clouds:
        return "clouds", f"cloud {offering.cloud} is not in constraints.clouds ({', '.join(constraints.clouds)})"
    if offering.family == "tpu":
        if constraints.custom_cuda_kernels:
            return "framework", "custom CUDA kernels need NVIDIA GPUs; TPUs run only what XLA compiles"
        if spec.framework not in XLA_FRAMEWORKS:
            return "framework", (f"framework {spec.framework} runs on TPUs only through XLA "
                                 f"(use jax, tensorflow or pytorch-xla)")
        if constraints.portability:
            return "portability", "portability is required and TPUs exist only on Google Cloud"
    if constraints.accelerators is not None and offering.accelerator not in constraints.accelerators:
        return "accelerators", (f"{offering.accelerator} is not in constraints.accelerators "
                                f"({', '.join(constraints.accelerators)})")
    if constraints.regions is not None and not set(offering.regions) & set(constraints.regions):
        return "regions", (f"offered only in {', '.join(offering.regions)}; constraints.regions allows "
                           f"{', '.join(constraints.regions)}")
    if constraints.spot == "required" and not offering.has_spot():
        return "spot", "spot is required and this offering has no spot capacity"
    return None
