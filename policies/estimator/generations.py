"""Hardware generations, and the rule for a chip with few or no published runs (issue #30).

A chip's step efficiency comes from its own step rows (policies/catalog/published_runs.yaml) and its
whole-run overhead from its generation's whole-run rows (policies/catalog/whole_runs.yaml). A chip or a
generation without enough of its own evidence borrows from its NEAREST CALIBRATED generation: the newest
calibrated generation of the same family (GPU / TPU) that is not newer than its own. GPU generations are
ordered by CUDA compute capability (facts.toml `compute_capability`: Ampere 8.0, Hopper 9.0, Blackwell
10.0), TPU generations by their order in facts.toml (v4, v5e, v5p, v6e, then newer ones).

So B200 and GB200 run at the step MFU an H100 reaches (as a share of their own, higher, peak) and pay
Hopper's whole-run overhead; GB200's 72-GPU NVLink domain enters only where a collective crosses it (the
expert-parallel all-to-all, policies/estimator/moe.py). A TPU generation without step rows (TPU7x when
it lands) runs at Trillium's (v6e) step MFU; TPUs have one whole run between them (PaLM on v4), too few
for an offset of their own, so they take the pooled overhead. The rule is mechanical: a published run
replaces it the moment it is in the tables.
"""

from __future__ import annotations

from collections.abc import Iterable

from accel.policies import hardware

GPU_GENERATION_NAMES = {"8": "ampere", "9": "hopper", "10": "blackwell"}


def _order(chip_id: str) -> tuple[str, float]:
    """(family, rank): chips of a family compare by rank (compute capability; TPU table order)."""
    facts = hardware.current()
    chip = facts.chips[chip_id]
    if chip.family == "tpu":
        tpus = [c.id for c in facts.chips.values() if c.family == "tpu"]
        return "tpu", float(tpus.index(chip_id))
    return "gpu", float(chip.compute_capability or 0.0)


def generation(chip_id: str) -> str:
    """The generation a chip's whole runs are pooled by: 'ampere', 'hopper', 'blackwell' or 'tpu'."""
    chip = hardware.current().chips[chip_id]
    if chip.family == "tpu":
        return "tpu"
    major = (chip.compute_capability or "0").split(".")[0]
    return GPU_GENERATION_NAMES.get(major, f"sm{major}")


def nearest_calibrated(chip_id: str, calibrated: Iterable[str]) -> str | None:
    """The calibrated chip a chip without its own evidence borrows from (None: none qualifies).

    Among `calibrated` chips of the same family and scale-up link class (NVLink GPUs, TPUs; PCIe cards are
    their own class), the newest not newer than `chip_id`; ties go to the first in the facts table."""
    facts = hardware.current()
    if chip_id not in facts.chips:
        return None
    own = facts.chips[chip_id]
    family, rank = _order(chip_id)
    best: tuple[float, int, str] | None = None
    for position, other in enumerate(facts.chips):
        if other not in calibrated or other == chip_id:
            continue
        chip = facts.chips[other]
        if chip.family != own.family or (chip.interconnect == "pcie") != (own.interconnect == "pcie"):
            continue
        other_family, other_rank = _order(other)
        if other_rank > rank:
            continue
        key = (other_rank, -position, other)
        if best is None or key[:2] > best[:2]:
            best = key
    return best[2] if best else None


def nearest_calibrated_generation(name: str, calibrated: Iterable[str]) -> str | None:
    """The calibrated whole-run generation a generation with too few rows borrows from: the newest
    calibrated GPU generation not newer than it (blackwell -> hopper); TPUs have none (pooled)."""
    names = list(GPU_GENERATION_NAMES.values())
    if name not in names:
        return None
    candidates = [g for g in names[:names.index(name) + 1] if g in set(calibrated)]
    return candidates[-1] if candidates else None
