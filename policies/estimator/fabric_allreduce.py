"""A tensor-parallel all-reduce where no measured latency table applies (the NVLink GPUs' allreduce_latency_us):
the one rule, a latency plus the message over a bandwidth,

    seconds = latency + bytes / bandwidth

worked out for the fabric the replica's chips share. The figures and their sources are in
policies/catalog/assumptions.yaml (inference.ici_allreduce, inference.pcie_allreduce).

- A TPU slice's ICI, the JAX scaling book's model: a reduce-scatter then an all-gather, each crossing the slice's
  longest path hop by hop and moving the array over its axes' links. latency = 2 x hops x hop latency, hops the sum
  over the slice's axes of (side - 1): a serving replica is one host's slice (tpu_serving: v5e/v6e 2x2 or 2x4,
  TPU7x/v5p/v4 2x2x1) and no such slice has wraparound links. bandwidth = axes x one link's one-way rate / 2, the
  link the chip's ICI per direction (hardware table [collective_fabrics] scale_up_gbytes_per_s) over its 2 links per
  torus axis. The hop latency and the transfer are added (the book takes the larger; its own v5e measurement of a
  small gather is above its latency bound). On TPU7x vLLM TPU's tensor-parallel ranks are JAX devices, two per
  chip (policies/hardware/facts.toml jax_devices_per_chip), so the all-reduce also crosses each chip's die-to-die
  link between its two TensorCores; the bytes each chip sends over ICI are the chip-level all-reduce's, which is
  what is charged. The die-to-die hop is not: no source read states its bandwidth or latency (the Cloud TPU7x page
  gives ICI per chip only), so a TPU7x replica's all-reduce is a lower bound by that hop.
- PCIe GPUs (L4, L40S, A10G): NCCL's ring all-reduce as NCCL's own cost model prices it on one node
  (src/graph/tuning.cc): per protocol a base latency plus 2(n-1) ring steps of the PCIe hop latency, and the bytes at
  the link's bus bandwidth (the LL protocol's half of it) times n / (2(n-1)); NCCL takes the faster protocol, and so
  does the rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Sequence

from accel.policies import hardware
from accel.policies.hardware import shapes, tpu_serving

if TYPE_CHECKING:
    from accel.policies.catalog.model import PcieProtocolCost


class AllreducePath(NamedTuple):
    """What one all-reduce over a replica's chips pays: a latency and a bandwidth, and how they were worked out."""

    latency_s: float
    bytes_per_s: float
    how: str            # the fabric and the arithmetic, for the plan's assumption

    def seconds(self, message_bytes: float) -> float:
        return self.latency_s + message_bytes / self.bytes_per_s


def replica_topology(generation: str, chips: int) -> str:
    """The slice a TPU serving replica of `chips` chips takes: the one-host serving slice of that size, else the
    smallest slice holding them."""
    for served in tpu_serving.serving_slices(generation):
        if served.chips == chips:
            return served.topology
    return shapes.smallest_topology(generation, chips)


class IciRoute(NamedTuple):
    """What an all-reduce over one TPU replica's slice crosses: its topology, the longest path in hops, the axes
    that move the array and one link's one-way bandwidth."""

    topology: str
    hops: int
    axes: int
    link_bytes_per_s: float


def ici_route(accelerator: str, chips: int) -> IciRoute | None:
    """The route of a `chips`-chip replica of the TPU `accelerator`; None for one chip, a chip that is no TPU
    generation or one the hardware table gives no ICI bandwidth."""
    facts = hardware.current()
    generation = facts.generation_of_chip(accelerator)
    fabric = facts.collective_fabric(accelerator)
    if chips <= 1 or generation is None or fabric is None:
        return None
    topology = replica_topology(generation.name, chips)
    sides = shapes.parse_topology(topology)
    return IciRoute(topology, sum(side - 1 for side in sides), sum(1 for side in sides if side > 1),
                    fabric.scale_up_gbytes_per_s * 1e9 / (2 * generation.dimensions))


def ici_path(accelerator: str, chips: int, hop_latency_s: float) -> AllreducePath | None:
    """The all-reduce over a `chips`-chip TPU replica's slice: 2 x hops of latency, the array over its axes' links
    twice (a reduce-scatter and an all-gather)."""
    route = ici_route(accelerator, chips)
    if route is None:
        return None
    topology, hops, axes, link = route
    return AllreducePath(2 * hops * hop_latency_s, axes * link / 2,
                         f"a {topology} slice over ICI: 2 x ({hops} hops x {hop_latency_s * 1e6:g} us + the bytes over "
                         f"{axes} axis link{'s' if axes != 1 else ''} of {link / 1e9:g} GB/s)")


def pcie_ring(chips: int, link_bytes_per_s: float,
              protocols: Sequence[PcieProtocolCost]) -> tuple[AllreducePath, ...]:
    """NCCL's ring all-reduce over `chips` PCIe GPUs, one path per protocol (assumptions.yaml
    inference.pcie_allreduce.protocols; NCCL takes the fastest for the message: `fastest`); none on one GPU."""
    if chips <= 1:
        return ()
    steps = 2 * (chips - 1)
    return tuple(AllreducePath((p.base_us + steps * p.step_us) * 1e-6,
                               p.bandwidth_share * link_bytes_per_s * chips / steps,
                               f"NCCL ring over PCIe, {p.name}: {p.base_us:g} us + {steps} steps x {p.step_us:g} us + "
                               f"the bytes at {p.bandwidth_share * link_bytes_per_s / 1e9:g} GB/s x {chips}/{steps}")
                 for p in protocols)


def fastest(paths: tuple[AllreducePath, ...], message_bytes: float) -> AllreducePath | None:
    """The path that moves `message_bytes` soonest (None when there is none)."""
    return min(paths, key=lambda path: path.seconds(message_bytes)) if paths else None
