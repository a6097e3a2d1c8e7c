"""Mixture-of-experts: the expert-parallel layout and the all-to-all it pays, against the fabric it crosses.

A token routed to `experts_per_token` experts is sent to the chips holding them and its outputs sent back:
per MoE layer, a dispatch and a combine in the forward pass and again in the backward pass, each carrying
`hidden` activations of 2 bytes (bf16) per routed expert. With experts spread over `expert_parallel` (EP)
chips, a share (EP - 1) / EP of that leaves the chip; the part that stays inside the scale-up domain (an
NVLink domain, or a TPU slice's ICI) moves at the domain's bandwidth, the rest over the scale-out network
(policies/hardware/facts.toml [collective_fabrics]). Shared experts are replicated: no all-to-all.

    all-to-all seconds per token = layers_moe x 4 x k x hidden x 2 B x (EP-1)/EP
                                   x (inside / scale_up_bw + (1 - inside) / scale_out_bw)
    efficiency = 1 / (1 + (1 - overlap) x all-to-all seconds / compute seconds)

Layout rule (what the sizing picks and says): experts spread across one scale-up domain, EP = min(experts,
domain chips), so the all-to-all stays on NVLink/ICI; data parallelism (with the state sharded, ZeRO-3/FSDP)
across domains. On a TPU the domain is the slice. A published run's own EP is used for its row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from accel.policies import hardware
from accel.policies.parallelism import expert_parallelism

BYTES_PER_ACTIVATION = 2.0   # bf16 dispatch and combine
PASSES = 4                   # dispatch + combine, forward + backward


@dataclass(frozen=True)
class MoeShape:
    """What the all-to-all needs to know of a mixture-of-experts model."""

    experts: int
    experts_per_token: int
    moe_layers: int
    hidden: float


@dataclass(frozen=True)
class ExpertLayout:
    """An expert-parallel layout on one accelerator and its all-to-all cost."""

    expert_parallel: int
    domain_chips: int           # the scale-up domain it was fitted into (0: a TPU slice)
    inside_share: float         # share of the remote traffic that stays in the domain
    seconds_per_token: float    # all-to-all time per token (one chip's share), before overlap
    efficiency: float           # 1 / (1 + exposed all-to-all / compute)

    def describe(self, accelerator: str, domain_name: str) -> str:
        where = ("within one " + domain_name if self.inside_share >= 1.0 else
                 f"across {math.ceil(self.expert_parallel / max(self.domain_chips, 1))} {domain_name}s "
                 f"({self.inside_share:.0%} of the traffic inside)")
        return (f"expert parallelism {self.expert_parallel} on {accelerator} {where}, data parallelism across "
                f"the groups, all-to-all efficiency {self.efficiency:.3g}")


def fabric(accelerator_id: str, machine_type: str | None = None) -> hardware.CollectiveFabric | None:
    """The chip's collective fabric, with the machine type's own NVLink domain where the table states one."""
    return hardware.current().collective_fabric(accelerator_id, machine_type)


def default_expert_parallel(experts: int, accelerator_id: str, chips: int | None = None,
                            machine_type: str | None = None) -> int:
    """The layout rule: experts spread over one scale-up domain (a TPU slice: over the whole fleet's slice; the
    machine's own NVLink domain where the table states one), as the Plan lays them out (policies/plan.py
    plan_parallelism)."""
    return expert_parallelism(experts, hardware.current().scale_up_domain_chips(accelerator_id, machine_type), chips)


def layout(shape: MoeShape, accelerator_id: str, compute_seconds_per_token: float, overlap: float,
           expert_parallel: int | None = None, chips: int | None = None,
           machine_type: str | None = None) -> ExpertLayout:
    """The all-to-all of `shape` at `expert_parallel` (default: the layout rule) on `accelerator_id` (on
    `machine_type`, whose own NVLink domain counts where the table states one)."""
    ep = expert_parallel or default_expert_parallel(shape.experts, accelerator_id, chips, machine_type)
    found = fabric(accelerator_id, machine_type)
    if ep <= 1 or found is None:
        return ExpertLayout(ep, found.domain_chips if found else 0, 1.0, 0.0, 1.0)
    domain = found.domain_chips or ep
    inside = 1.0 if ep <= domain else (domain - 1) / (ep - 1)
    scale_up = found.scale_up_gbytes_per_s * 1e9
    scale_out = found.scale_out_gbps * 1e9 / 8
    per_token_bytes = shape.moe_layers * PASSES * shape.experts_per_token * shape.hidden * BYTES_PER_ACTIVATION
    seconds = per_token_bytes * (ep - 1) / ep * (inside / scale_up + (1.0 - inside) / scale_out)
    efficiency = 1.0 / (1.0 + (1.0 - overlap) * seconds / compute_seconds_per_token)
    return ExpertLayout(ep, found.domain_chips, inside, seconds, efficiency)
