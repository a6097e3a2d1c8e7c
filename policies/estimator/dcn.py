"""The data-centre-network (DCN) cost of a TPU multislice, as a function of the slice count.

A multislice runs data-parallel across slices: every step, the slices all-reduce their gradients over
the DCN (within a slice, over ICI). A ring all-reduce over S slices moves 2 (S-1)/S of the gradient
bytes through each slice, spread over the slice's chips (each holds its shard of the gradients, FSDP),
each with its DCN bandwidth (policies/hardware/facts.toml, `dcn_gbps_per_chip`):

    dcn_seconds     = 2 (S-1)/S x parameters x gradient bytes per parameter / (chips per slice x DCN bytes/s per chip)
    compute_seconds = 6 x parameters x global batch tokens / (chips x peak FLOP/s x MFU within a slice)
    exposed         = max(0, dcn_seconds - overlap x compute_seconds)
    efficiency      = compute_seconds / (compute_seconds + exposed)

`overlap` is the share of a step's compute the reduction can hide under (assumptions.yaml,
training.dcn_overlap). More slices move more bytes per step over the same per-chip bandwidth while
the step's compute per chip shrinks (the global batch is shared by more chips), so efficiency falls
as slices grow; a larger model has more gradient bytes per token of its batch, so it pays more.
"""

from __future__ import annotations

from typing import NamedTuple

GBPS_TO_BYTES = 1e9 / 8


class DcnStep(NamedTuple):
    """One step's compute and cross-slice all-reduce, in seconds."""

    compute_seconds: float
    dcn_seconds: float
    overlap: float

    @property
    def exposed_seconds(self) -> float:
        return max(0.0, self.dcn_seconds - self.overlap * self.compute_seconds)

    @property
    def efficiency(self) -> float:
        return self.compute_seconds / (self.compute_seconds + self.exposed_seconds)


def dcn_seconds(parameters: float, chips: int, slices: int, dcn_gbps_per_chip: float,
                gradient_bytes_per_parameter: float) -> float:
    """Seconds of one cross-slice gradient all-reduce (0 for one slice)."""
    if slices <= 1:
        return 0.0
    per_slice_chips = chips / slices
    moved = 2.0 * (slices - 1) / slices * parameters * gradient_bytes_per_parameter
    return moved / (per_slice_chips * dcn_gbps_per_chip * GBPS_TO_BYTES)


def dcn_step(parameters: float, global_batch_tokens: float, chips: int, slices: int, peak_flops_per_chip: float,
             mfu: float, dcn_gbps_per_chip: float, gradient_bytes_per_parameter: float, overlap: float) -> DcnStep:
    """One step at `mfu` within a slice, and its cross-slice all-reduce."""
    compute = 6.0 * parameters * global_batch_tokens / (chips * peak_flops_per_chip * mfu)
    return DcnStep(compute, dcn_seconds(parameters, chips, slices, dcn_gbps_per_chip, gradient_bytes_per_parameter),
                   overlap)


def efficiency_from_observed(step_seconds: float, dcn: float, overlap: float) -> float:
    """The share of an observed step that is compute, when `dcn` seconds of all-reduce ran in it: the
    inverse of DcnStep (used to calibrate the within-slice MFU on published multislice runs)."""
    if dcn <= overlap * step_seconds:   # hidden entirely: compute is the whole step
        return 1.0
    exposed = (dcn - overlap * step_seconds) / (1.0 - overlap) if overlap < 1.0 else 0.0
    return max(1e-3, (step_seconds - exposed) / step_seconds)
