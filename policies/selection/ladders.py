"""Fleet sizes an offering can take: whole GPU nodes, valid TPU slices and multislices, serving replicas."""

from __future__ import annotations

import bisect
import math
from functools import lru_cache
from typing import Callable, NamedTuple

from accel.policies import hardware
from accel.policies.hardware import shapes, tpu_serving
from accel.policies.catalog.model import Offering
from accel.policies.parallelism import tensor_parallel_nodes
from accel.policies.selection.pools import MAX_SLICES


# A NamedTuple, not a dataclass: a search builds ~2,500 (a faster constructor), and defining it generates no code.
class Size(NamedTuple):
    """A fleet: its chips, hosts and slices (identical TPU slices of `topology`; one for GPU nodes, whose topology
    is None), on hosts of `machine_type` with `chips_per_host` chips each."""

    chips: int
    hosts: int
    slices: int
    topology: str | None
    machine_type: str
    chips_per_host: int
    stages: int = 1     # a serving replica's pipeline stages: one per node over the scale-out network (else 1)


def gpu_fleet(offering: Offering, nodes: int) -> Size:
    """`nodes` whole nodes of a GPU offering: the one place a GPU fleet's size is built."""
    return Size(nodes * offering.chips_per_host, nodes, 1, None, offering.machine_type, offering.chips_per_host)


def tpu_fleet(generation: str, topology: str, slices: int = 1) -> Size:
    """`slices` identical slices of `topology`: the one place a TPU fleet's size is built."""
    return Size(shapes.topology_chips(topology) * slices, shapes.hosts_per_slice(generation, topology) * slices,
                slices, topology, shapes.machine_type(generation, topology), shapes.chips_per_host(generation, topology))


def serving_fleet(offering: Offering, replica: Size, replicas: int, spread: int = 1) -> Size:
    """The fleet of `replicas` serving replicas of size `replica`: one TPU slice per replica, or the whole GPU nodes
    that hold them, on at least `spread` nodes where a replica is a share of one node (the replicas the service's
    minimum asks for, assumptions.yaml inference.min_replicas, each on its own node: a node lost keeps the others
    serving; replicas past the minimum may share), in the machine's node step (hardware table `node_step`: the
    unit its cloud places, an A4X pool whole 18-tray NVLink domains, components/gcp/gpu.py refuses any other)."""
    if replica.topology is not None:
        return Size(replica.chips * replicas, replica.hosts * replicas, replicas, replica.topology,
                    replica.machine_type, replica.chips_per_host)
    nodes = max(packed_nodes(offering, replica, replicas), min(replicas, spread))
    step = hardware.current().node_step(offering.machine_type)
    return gpu_fleet(offering, -(-nodes // step) * step)


def replicas_held(offering: Offering, replica: Size, fleet: Size) -> int:
    """The whole replicas of size `replica` a serving fleet holds: one per TPU slice; on GPU nodes placed in units
    (hardware table `node_step` > 1: an A4X pool whole 18-tray NVLink domains, p6e-gb200 whole UltraServers) each
    replica inside one unit, its tensor-parallel group within the unit's NVLink domain (a replica of pipeline
    stages larger than a unit spans units over the scale-out network), so a unit's trays a replica cannot fill stay
    spare; on other GPU nodes the fleet's GPUs over the replica's."""
    if replica.topology is not None:
        return fleet.slices
    if replica.chips <= offering.chips_per_host:
        return fleet.hosts * (offering.chips_per_host // replica.chips)
    replica_nodes = -(-replica.chips // offering.chips_per_host)
    step = hardware.current().node_step(offering.machine_type)
    if 1 < step and replica_nodes <= step:
        return fleet.hosts // step * (step // replica_nodes)
    return fleet.hosts // replica_nodes


def filled_replicas(offering: Offering, replica: Size, replicas: int, fleet: Size, most_chips: int) -> int:
    """The replicas a serving fleet runs: the `replicas` its target needs, or, where the fleet was rounded up to the
    unit its cloud places (node_step > 1: an A4X pool is whole 18-tray NVLink domains, paid whole), every whole
    replica those units hold (replicas_held) within `most_chips` (max_chips, an inventory's chips), so the fleet's
    throughput and its price per token are those of what was bought. Machines placed node by node keep the
    target's replicas: the spare GPUs of the last node are the packing's remainder, not a unit left idle."""
    if replica.topology is not None or hardware.current().node_step(offering.machine_type) == 1:
        return replicas
    return max(replicas, min(replicas_held(offering, replica, fleet), most_chips // replica.chips))


def packed_nodes(offering: Offering, replica: Size, replicas: int) -> int:
    """The nodes `replicas` GPU replicas of size `replica` fill packed as tightly as their size allows, before any
    spread or node step (serving_fleet): what the rationale compares the fleet against."""
    return math.ceil(replicas * replica.chips / offering.chips_per_host)


class GpuLadder:
    """Whole nodes up to max_nodes, in the machine's node step (hardware table `node_step`: a p6e-gb200 fleet
    is whole UltraServers of 9, an A4X fleet whole NVL72 racks of 18, others 1); index i is (i+1) steps.
    Nothing is materialized."""

    def __init__(self, offering: Offering, max_nodes: int) -> None:
        self.offering = offering
        self.per_node = offering.chips_per_host
        self.step = hardware.current().node_step(offering.machine_type)
        self.count = max(0, max_nodes) // self.step
        self._sizes: dict[int, Size] = {}   # built on first use: a search reads the same sizes for every region

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> Size:
        size = self._sizes.get(index)
        if size is None:
            size = self._sizes[index] = gpu_fleet(self.offering, (index + 1) * self.step)
        return size

    def first_at_least(self, chips: int) -> int:
        return max(0, math.ceil(math.ceil(chips / self.per_node) / self.step) - 1)

    def within_hosts(self, hosts: float) -> tuple[Size, ...]:
        """The sizes of at most `hosts` hosts, smallest first: a prefix (size i has (i+1) x step nodes), so
        the larger sizes are never built."""
        count = self.count if math.isinf(hosts) else min(self.count, max(0, math.floor(hosts)) // self.step)
        return tuple(self[i] for i in range(count))


class TpuLadder:
    def __init__(self, sizes: tuple[Size, ...]) -> None:
        self.sizes = sizes
        self.chips = [s.chips for s in sizes]

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, index: int) -> Size:
        return self.sizes[index]

    def first_at_least(self, chips: int) -> int:
        return bisect.bisect_left(self.chips, chips)

    def within_hosts(self, hosts: float) -> tuple[Size, ...]:
        """The sizes of at most `hosts` hosts, smallest first."""
        return tuple(s for s in self.sizes if s.hosts <= hosts)


class CountLadder:
    """Whole GPU nodes in the given node counts only (a booked mode's fleets: Capacity Blocks), built on first use
    like GpuLadder: a search reads a few of them by binary search."""

    def __init__(self, offering: Offering, counts: tuple[int, ...]) -> None:
        self.offering = offering
        self.counts = counts
        self._sizes: dict[int, Size] = {}

    def __len__(self) -> int:
        return len(self.counts)

    def __getitem__(self, index: int) -> Size:
        size = self._sizes.get(index)
        if size is None:
            size = self._sizes[index] = gpu_fleet(self.offering, self.counts[index])
        return size

    def first_at_least(self, chips: int) -> int:
        return bisect.bisect_left(self.counts, math.ceil(chips / self.offering.chips_per_host))


@lru_cache(maxsize=None)
def tpu_sizes(generation: str, cap: int, min_slice_chips: int = 1, max_slice_hosts: int | None = None) -> tuple[Size, ...]:
    """Every fleet size of a TPU generation up to `cap` chips, smallest first: one slice per valid
    topology (the most cubic per chip count), then, past the largest slice, identical multislices
    of slices at least half the largest (fewest slices per total), of at most MAX_SLICES slices: the most one
    TpuSlice builds (components/gcp/tpu.py), so the search offers no fleet its stack would refuse.

    A multislice is data-parallel across slices, so each of its slices must hold the whole training state
    on its own: `min_slice_chips` (the chips that hold it) bounds the slices a multislice is built from.
    `max_slice_hosts` drops slices whose node pool would hold more hosts than the offering allows."""
    gen = shapes.generation(generation)
    topologies = shapes.valid_topologies(gen.name)

    singles: dict[int, str] = {}
    for topology in topologies:
        if max_slice_hosts is not None and shapes.hosts_per_slice(gen.name, topology) > max_slice_hosts:
            continue
        singles.setdefault(shapes.topology_chips(topology), topology)
    if not singles:
        return ()
    largest = max(singles)
    sizes = [tpu_fleet(gen.name, t) for c, t in sorted(singles.items()) if c <= cap]
    multi: dict[int, tuple[int, str]] = {}
    for chips, topology in sorted(singles.items(), reverse=True):
        if chips * 2 < largest or chips < min_slice_chips:   # pod-scale slices, each holding the state
            continue
        for slices in range(2, min(cap // chips, MAX_SLICES) + 1):
            total = chips * slices
            if total > largest and (total not in multi or slices < multi[total][0]):
                multi[total] = (slices, topology)
    # A multislice is `slices` copies of one slice: each slice's shape is looked up once, not per multislice.
    one = {topology: tpu_fleet(gen.name, topology) for topology in {t for _, t in multi.values()}}
    sizes += [Size(one[t].chips * s, one[t].hosts * s, s, t, one[t].machine_type, one[t].chips_per_host)
              for _, (s, t) in sorted(multi.items())]
    return tuple(sizes)


def tpu_layout(generation: str, chips: int) -> Size:
    """The TPU fleet a pin of `chips` chips is laid out as: the smallest size of the search's ladder
    (`tpu_sizes`) that holds them, so a pin and a search lay the same chip count out the same way
    (384 v6e chips: 3 x 8x16, not 2 x 16x16). Exact when the ladder has the count."""
    if chips <= 0:
        raise ValueError("chips must be positive")
    if chips > MAX_SLICES * largest_slice_chips(generation):
        raise ValueError(f"{chips} chips of TPU {generation} are more than {MAX_SLICES} slices of its largest hold")
    # Identical multislices of the largest slice cover any count within one more slice.
    cap = chips + largest_slice_chips(generation)
    sizes = tpu_sizes(generation, cap)
    return sizes[bisect.bisect_left([s.chips for s in sizes], chips)]


def largest_slice_chips(generation: str, max_slice_hosts: int | None = None) -> int:
    """Chips of the generation's largest single slice (within `max_slice_hosts` hosts when given)."""
    gen = shapes.generation(generation)
    return max((shapes.topology_chips(t) for t in shapes.valid_topologies(gen.name)
                if max_slice_hosts is None or shapes.hosts_per_slice(gen.name, t) <= max_slice_hosts), default=0)


def replica_sizes(offering: Offering, max_replica_chips: int, hold_chips: int = 0, max_stages: int = 0,
                  accepts: Callable[[Size], bool] | None = None) -> list[Size]:
    """Sizes one serving replica can take: a power-of-two share of a GPU node, or whole nodes of one NVLink domain
    where a tensor-parallel group may span nodes (A4X: 2 trays of an NVL72 rack, the training layout's rule,
    policies/parallelism.py tensor_parallel_nodes), or one TPU slice within the hosts a TPU serving replica may span
    (the hardware table's limits.tpu_serving_hosts_per_replica, one: vLLM TPU serves on one host on GKE,
    policies/hardware/tpu_serving.py).

    Only where none of those holds `hold_chips` (the chips whose memory holds the weights and one sequence's KV
    cache), whole nodes over the scale-out network: 2, 4, ... nodes, tensor parallel within each and one pipeline
    stage per node (the engine's rule, assumptions.yaml inference.pipeline_serving), from the fewest that hold it,
    to at most `max_stages` stages (the model's layers: each stage holds some; 0: no bound), on a machine with a
    scale-out fabric whose bandwidth the hardware table states (the hand-offs are costed on it,
    policies/estimator/estimate.py InferenceModel.pipeline_hops_seconds).

    `accepts` (None: every size) keeps only the sizes the serving engine runs (a named model's heads over the
    size's tensor degree: policies/selection/served_sizes.py), before the pipeline sizes are weighed: a replica the
    engine refuses holds nothing."""
    def kept(sizes: list[Size]) -> list[Size]:
        return sizes if accepts is None else [s for s in sizes if accepts(s)]

    generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
    if generation is None:
        per_node = offering.chips_per_host
        counts = [n for n in (1, 2, 4, 8, 16) if n <= per_node and per_node % n == 0 and n <= max_replica_chips]
        # A share of one node: `n` of its GPUs on that one host.
        sizes = [Size(n, 1, 1, None, offering.machine_type, per_node) for n in counts]
        # Whole nodes of one NVLink domain: the replica's tensor-parallel group stays inside the domain its cloud
        # places as a unit; its pods claim the domain's IMEX channel (components/kubernetes/workloads.py).
        span = tensor_parallel_nodes(hardware.current().nvlink_domain_unit_nodes(offering.machine_type,
                                                                                 offering.nvlink_clique_nodes))
        nodes = 2
        while nodes <= span and nodes * per_node <= max_replica_chips:
            sizes.append(Size(nodes * per_node, nodes, 1, None, offering.machine_type, per_node))
            nodes *= 2
        # The widest NVLink group the machine offers, kept or not: pipeline stages start past it (pipeline_sizes).
        domain_nodes = max((s.hosts for s in sizes), default=1)
        sizes = kept(sizes)
        if sizes and max(s.chips for s in sizes) >= hold_chips:
            return sizes
        return sizes + kept(pipeline_sizes(offering, max_replica_chips, hold_chips, domain_nodes, max_stages))
    # The generation's serving slices are listed once (tpu_serving.serving_slices); a replica is one of them.
    cap = max(1, max_replica_chips)
    return kept([tpu_fleet(generation.name, s.topology) for s in tpu_serving.serving_slices(generation.name)
                 if s.chips <= cap])


def pipeline_sizes(offering: Offering, max_replica_chips: int, hold_chips: int, domain_nodes: int = 1,
                   max_stages: int = 0) -> list[Size]:
    """Replicas of 2, 4, ... whole GPU nodes as pipeline stages over the scale-out network, past the `domain_nodes`
    one tensor-parallel group spans (an A4X pair of trays is one group, not two stages), from the fewest that hold
    `hold_chips` up to max_replica_chips and `max_stages` stages (0: no bound); none on a machine without a
    scale-out fabric (offering.fabric none) or whose chip the hardware table gives no scale-out bandwidth."""
    if offering.fabric == "none" or hardware.current().collective_fabric(offering.accelerator) is None:
        return []
    per_node = offering.chips_per_host
    nodes = 2 * max(1, domain_nodes)
    while nodes * per_node < hold_chips:
        nodes *= 2
    sizes = []
    while nodes * per_node <= max_replica_chips and (max_stages <= 0 or nodes <= max_stages):
        sizes.append(Size(nodes * per_node, nodes, 1, None, offering.machine_type, per_node, nodes))
        nodes *= 2
    return sizes
