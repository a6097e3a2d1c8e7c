"""Hard constraints: offerings that can never serve a workload, whatever their size or price."""

from __future__ import annotations

import difflib
from typing import Sequence

from accel.policies.catalog.model import Offering
from accel.policies.workload import XLA_FRAMEWORKS, WorkloadFieldError, WorkloadSpec, framework_label


def hard_filter(spec: WorkloadSpec, offering: Offering) -> tuple[str, str] | None:
    """(constraint, reason) when the offering can never serve this workload, else None."""
    constraints = spec.constraints
    if offering.cloud not in constraints.clouds:
        return "clouds", f"cloud {offering.cloud} is not in constraints.clouds ({', '.join(constraints.clouds)})"
    if offering.family == "tpu":
        if constraints.custom_cuda_kernels:
            return "framework", "custom CUDA kernels need NVIDIA GPUs; TPUs run only what XLA compiles"
        if spec.framework not in XLA_FRAMEWORKS:
            return "framework", (f"{framework_label(spec)} runs on TPUs only through XLA "
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


def check_regions(regions: Sequence[str] | None, offerings: Sequence[Offering], field: str) -> None:
    """A region that no offering has is a typo, not a constraint: WorkloadFieldError (exit 2) naming the field,
    the nearest known region and every known one."""
    known = sorted({region for offering in offerings for region in offering.regions})
    unknown = [region for region in regions or [] if region not in known]
    if not unknown:
        return
    problems = []
    for region in unknown:
        hint = difflib.get_close_matches(region, known, n=1, cutoff=0.6)
        problems.append(f"{region!r} is in no catalog offering" + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    raise WorkloadFieldError(field, f"{'; '.join(problems)}; known regions: {', '.join(known)}")
