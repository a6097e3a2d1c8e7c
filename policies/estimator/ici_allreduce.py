"""A tensor-parallel TPU replica's all-reduce over ICI: the one rule (policies/catalog/assumptions.yaml
inference.ici_allreduce has its figures and sources).

No measured small all-reduce latency is published for TPUs (the NVLink GPUs' table, allreduce_latency_us, has none),
so the latency-and-bandwidth model of the JAX scaling book stands in: an all-reduce is a reduce-scatter then an
all-gather, each crossing the slice's longest path hop by hop and moving the array over its axes' links,

    seconds = 2 x (hops x hop latency + bytes / (axes x link bandwidth))

- hops: sum over the slice's axes of (side - 1). A serving replica is one host's slice (tpu_serving: v5e/v6e 2x2 or
  2x4, TPU7x/v5p/v4 2x2x1), and no such slice has wraparound links, so a ring cannot halve the path.
- link bandwidth: one link's one way, the chip's ICI bandwidth per direction (hardware table [collective_fabrics]
  scale_up_gbytes_per_s) over its links, 2 per axis of its torus (4 on v5e/v6e, 6 on v4/v5p/TPU7x); without a
  wraparound ring each axis moves the array at one link's one-way rate.
- the hop latency and the transfer are added rather than the larger taken: the book's own v5e measurement of a
  small gather is above its latency bound.
"""

from __future__ import annotations

from typing import NamedTuple

from accel.policies import hardware
from accel.policies.hardware import shapes, tpu_serving


class IciPath(NamedTuple):
    """What an all-reduce over one TPU replica's slice crosses: its topology, hops, axes and per-link bandwidth."""

    topology: str
    hops: int                   # the longest path, one phase: sum of (side - 1)
    axes: int                   # axes of more than one chip, each moving its share of the array
    link_bytes_per_s: float     # one ICI link, one direction

    def seconds(self, message_bytes: float, hop_latency_s: float) -> float:
        """One all-reduce of `message_bytes`: a reduce-scatter and an all-gather, each the path's hops plus the
        array over the axes' links."""
        return 2.0 * (self.hops * hop_latency_s + message_bytes / (self.axes * self.link_bytes_per_s))


def replica_topology(generation: str, chips: int) -> str:
    """The slice a serving replica of `chips` chips takes: the one-host serving slice of that size, else the
    smallest slice holding them."""
    for served in tpu_serving.serving_slices(generation):
        if served.chips == chips:
            return served.topology
    return shapes.smallest_topology(generation, chips)


def ici_path(accelerator: str, chips: int) -> IciPath | None:
    """The ICI path of a `chips`-chip replica of the TPU `accelerator`; None for one chip, a chip that is no TPU
    generation or one the hardware table gives no ICI bandwidth."""
    facts = hardware.current()
    generation = facts.generation_of_chip(accelerator)
    fabric = facts.collective_fabric(accelerator)
    if chips <= 1 or generation is None or fabric is None:
        return None
    topology = replica_topology(generation.name, chips)
    sides = shapes.parse_topology(topology)
    links = 2 * generation.dimensions
    return IciPath(topology, sum(side - 1 for side in sides), sum(1 for side in sides if side > 1),
                   fabric.scale_up_gbytes_per_s * 1e9 / links)
