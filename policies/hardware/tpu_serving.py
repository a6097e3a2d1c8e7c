"""Serving on TPUs: a replica stays within the hosts accel serves on, the hardware table's
[limits.tpu_serving_hosts_per_replica] (one host).

A TPU serving replica is one slice. accel serves it with vLLM TPU, which GKE supports on one host only (source
gke-vllm-tpu-serving: multi-host configurations are not supported); across hosts GKE documents only JetStream with
Pathways, which accel's stacks and guardrails do not build. So the serving search sizes a TPU replica within one
host (the generation's single-host slices), a pin past it is refused, and `accel job` refuses a plan that still
spans hosts (accel/job/tpu_serving.py). This module says which slices those are and why.
"""

from __future__ import annotations

from typing import NamedTuple

from accel.policies import hardware
from accel.policies.hardware import shapes

LIMIT = "tpu_serving_hosts_per_replica"
FACT = f"limits.{LIMIT}"


class ServingSlice(NamedTuple):
    """A slice one TPU serving replica can take: its topology, machine type, chips and hosts."""

    topology: str
    machine_type: str
    chips: int
    hosts: int


def max_hosts() -> int:
    """The most hosts one TPU serving replica spans (the hardware table's limit)."""
    return hardware.current().limit(LIMIT)


def serving_slices(generation: str) -> tuple[ServingSlice, ...]:
    """The generation's slices within the serving host limit, smallest first (v6e: 1x1, 2x2, 2x4)."""
    gen = shapes.generation(generation)
    most = max_hosts()
    sized = {}
    for topology in shapes.valid_topologies(gen.name):
        hosts = shapes.hosts_per_slice(gen.name, topology)
        if hosts <= most:
            sized.setdefault(shapes.topology_chips(topology),
                             ServingSlice(topology, shapes.machine_type(gen.name, topology),
                                          shapes.topology_chips(topology), hosts))
    return tuple(sized[chips] for chips in sorted(sized))


def largest_serving_slice(generation: str) -> ServingSlice | None:
    """The largest slice one serving replica of the generation can take, None when it has none."""
    slices = serving_slices(generation)
    return slices[-1] if slices else None


def source_key() -> str:
    """The hardware table's source id of the limit (gke-vllm-tpu-serving): the page saying vLLM TPU serves on one
    host on GKE."""
    return hardware.current().limits[LIMIT].source.split(":")[0]


def single_host_pin(accelerator: str, generation: str) -> str | None:
    """The pin that serves on the generation's largest single-host slice, one replica per slice: what a refused
    multi-host serving replica is told to pin (at choose and plan, and by `accel job`); None when it has none."""
    largest = largest_serving_slice(generation)
    if largest is None:
        return None
    return (f"pin hardware: {{accelerator: {accelerator}, topology: {largest.topology}}} for one {largest.chips}-chip "
            f"replica on one {largest.machine_type} host (add slices: N for N replicas) if the model's weights and KV "
            "cache fit there")


def why_within_hosts(generation: str) -> str:
    """Why a TPU serving replica is held to the generation's largest single-host slice, and what to do instead:
    the text a rejection or a refused pin ends with."""
    gen = shapes.generation(generation)
    largest = largest_serving_slice(gen.name)
    most = max_hosts()
    held = (f"topology {largest.topology}, {largest.machine_type}, {largest.chips} chips"
            if largest is not None else "none")
    source = source_key()
    return (f"a TPU serving replica stays within {'one host' if most == 1 else f'{most} hosts'} "
            f"(largest {gen.accelerator} serving slice: {held}) because accel serves TPUs with vLLM TPU, which GKE "
            f"supports on one host only, and across hosts GKE documents only Pathways, which accel does not deploy "
            f"(hardware table {FACT}, source {source}); serve it on GPUs, where accel writes vLLM across nodes, or "
            "deploy a multi-host server by hand (GKE serve-multihost-tpu-jetstream, Pathways)")
