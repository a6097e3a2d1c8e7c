"""Which Kueue topology level a GPU training job asks for, from the Plan's parallelism.

Kueue Topology Aware Scheduling (beta and on by default in the pinned Kueue v0.14; KEP 2724,
kubernetes-sigs/kueue keps/2724-topology-aware-scheduling; the annotation names are v0.14.1
apis/kueue/v1beta1/topology_types.go:28-60, their webhook rules pkg/controller/jobframework/tas_validation.go:30-94,
and pods take their slice by rank, consecutive ranks filling one domain after another,
pkg/controller/tas/topology_ungater.go:335-358) reads
pod-template annotations of each PodSet:
- `podset-required-topology` / `podset-preferred-topology` (mutually exclusive): every pod of the
  PodSet in one domain of that level; required waits until one has room, preferred starts at the
  level and climbs to coarser ones when the PodSet does not fit, then spreads;
- `podset-slice-required-topology` with `podset-slice-size`: every slice of that many pods (by pod
  index) in one domain of that level, which must be that level or a finer one than the PodSet's
  required/preferred level (a coarser one is refused: pkg/cache/scheduler/tas_flavor_snapshot.go:715);
  the size must divide the PodSet.

So a job whose model replica spans several nodes requires each replica (a slice of `group_nodes`
pods, one per node) inside the finest level that can hold it, and prefers the next coarser level for
the whole job. A job whose replicas fit in a node only prefers the placement unit for the whole job.
Where a tensor-parallel group spans nodes (`tensor_nodes`, GB200 NVL72 on A4X: the Plan lets it only inside
an NVLink domain the cloud places as a unit, policies/parallelism.py), the group must never straddle two
domains: when no whole replica is required inside one unit (the replica is wider than the unit, or the job is
not a whole number of replicas), each tensor-parallel group (a slice of `tensor_nodes` pods, consecutive by
completion index as torchrun's node ranks and Megatron's rank order lay a group out) is required in one unit.
A level's size is known only where the hardware table documents it (`[placement_units]`,
`[kubernetes] single_node_levels`); a level of unknown size is assumed able to hold the replica, and
Kueue keeps the job queued if it cannot. A pool placed by its NVLink clique (p6e-gb200: levels
nvidia.com/gpu.clique, kubernetes.io/hostname) has no level above one domain: a replica wider than one clique
is required nowhere and only preferred in one. TPU slices need none of this: each slice is its own node
pool (exclusive placement per pool), which is already the finest unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.policies import hardware

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
LEVEL_ANNOTATIONS = (REQUIRED, PREFERRED, SLICE_REQUIRED)
# PodSets naming one group get one flavor and one topology domain (v0.14.1 topology_types.go PodSetGroupName).
PODSET_GROUP = "kueue.x-k8s.io/podset-group-name"
# The node's own label: each node its own domain (a topology spread's or a topology level's).
HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class TopologyRequest:
    annotations: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def level_nodes(level: str, machine_type: str, clique_nodes: int | None = None) -> int | None:
    """Nodes one domain of `level` holds for this machine type: 1 for the host and the node, the
    documented unit size at the unit's level, `clique_nodes` at the NVLink clique where an existing cluster's
    inventory gives its nodes per NVLink domain (HardwareFacts.inventory_clique_nodes), else None (not documented)."""
    facts = hardware.current()
    if level in facts.kubernetes.single_node_levels:
        return 1
    if clique_nodes is not None and level in facts.kubernetes.nvlink_topology_levels[:-1]:
        return facts.nvlink_domain_unit_nodes(machine_type, clique_nodes)
    unit = facts.placement_units.get(machine_type)
    return unit.nodes if unit is not None and unit.level == level else None


def within_one_nvlink_domain(level: str, machine_type: str | None) -> bool:
    """Whether every domain of `level` lies inside one NVLink domain of these nodes: the NVLink clique GPU Feature
    Discovery labels (nvidia.com/gpu.clique: one NVLink partition, whatever the machine), or the machine's placement
    unit where it holds one domain that joins machines (A4X's sub-block, HardwareFacts.nvlink_domain_unit_nodes)."""
    facts = hardware.current()
    if level in facts.kubernetes.nvlink_topology_levels[:-1]:
        return True
    unit = facts.placement_units.get(machine_type) if machine_type else None
    return unit is not None and unit.level == level and facts.nvlink_domain_unit_nodes(unit.machine_type) > 1


def replica_level(levels: tuple[str, ...], machine_type: str, group_nodes: int, clique_nodes: int | None = None) -> str:
    """The finest level (of `levels`, broadest first) that can hold `group_nodes` nodes."""
    for level in reversed(levels):
        size = level_nodes(level, machine_type, clique_nodes)
        if size is None or size >= group_nodes:
            return level
    return levels[0]


def unit_level(levels: tuple[str, ...], machine_type: str, clique_nodes: int | None = None) -> str:
    """The finest level coarser than one node: the cloud's placement unit."""
    several = [level for level in levels if level_nodes(level, machine_type, clique_nodes) != 1]
    return several[-1] if several else levels[0]


def topology_request(levels: tuple[str, ...], machine_type: str, nodes: int, group_nodes: int,
                     tensor_nodes: int = 1, clique_nodes: int | None = None,
                     fleet_nodes: int | None = None) -> TopologyRequest:
    """The annotations of a GPU training PodSet of `nodes` pods (one per node) whose model replica
    spans `group_nodes` of them and whose tensor-parallel group spans `tensor_nodes` (1: inside a node), on a
    pool whose Kueue Topology has `levels` (none: no request); `clique_nodes`, an inventory's nodes per NVLink
    clique (HardwareFacts.inventory_clique_nodes), and `fleet_nodes` the nodes it has, which the job's pods may land on (unset:
    `nodes`, a cloud pool's)."""
    if not levels or nodes <= 1:
        return TopologyRequest()
    request = _replica_request(levels, machine_type, nodes, group_nodes, clique_nodes, fleet_nodes)
    return request if tensor_nodes <= 1 else _tensor_groups_in_one_domain(request, levels, machine_type, tensor_nodes,
                                                                          clique_nodes)


def _tensor_groups_in_one_domain(request: TopologyRequest, levels: tuple[str, ...], machine_type: str,
                                 tensor_nodes: int, clique_nodes: int | None = None) -> TopologyRequest:
    """`request`, when it already keeps every tensor-parallel group inside one unit of the machine's NVLink domain
    (each replica, or the whole job, required at that level or a finer one); else each group of `tensor_nodes`
    pods required in one unit, the whole job as `request` asked for it at a coarser level. The unit is the
    machine's placement unit, or on an inventory labelled by its clique (`clique_nodes`, the pool's levels the
    clique's) that clique: HardwareFacts.nvlink_domain_unit_nodes, the unit the Plan's layout was derived with."""
    facts = hardware.current()
    clique = facts.kubernetes.nvlink_topology_levels[0]
    labelled = clique_nodes is not None and clique in levels
    unit_level = clique if labelled else getattr(facts.placement_units.get(machine_type), "level", None)
    domain_nodes = facts.nvlink_domain_unit_nodes(machine_type, clique_nodes if labelled else None)
    if unit_level is None or unit_level not in levels or domain_nodes == 1 or domain_nodes % tensor_nodes:
        raise ValueError(f"{machine_type}: a tensor-parallel group spans {tensor_nodes} nodes but no placement unit "
                         f"of the pool's topology levels ({', '.join(levels)}) holds one NVLink domain of whole groups")
    domain = levels.index(unit_level)
    held = request.annotations.get(SLICE_REQUIRED) or request.annotations.get(REQUIRED)
    if held is not None and levels.index(held) >= domain:
        return TopologyRequest(request.annotations, [*request.notes, f"topology: each tensor-parallel group "
                                                     f"({tensor_nodes} nodes) stays in that {held}, one NVLink domain "
                                                     "or less"])
    annotations = {SLICE_REQUIRED: unit_level, SLICE_SIZE: str(tensor_nodes)}
    whole = ""
    if REQUIRED in request.annotations:
        annotations[REQUIRED] = request.annotations[REQUIRED]
        whole = f"; the whole job required in one {request.annotations[REQUIRED]}"
    elif domain > 0:
        annotations[PREFERRED] = levels[domain - 1]
        whole = f"; the whole job preferred in one {levels[domain - 1]} (Kueue climbs when it does not fit)"
    elif PREFERRED in request.annotations:
        # No level above the unit (an inventory's Topology is the clique, then the node): the job keeps the
        # preference it had, since Kueue reads the slice annotations only onto a PodSet-level request
        # (jobframework NewPodSetTopologyRequest: no required, preferred or unconstrained level, no request).
        annotations[PREFERRED] = request.annotations[PREFERRED]
        whole = (f"; the whole job preferred in one {request.annotations[PREFERRED]} (Kueue spreads it when none has "
                 "room)")
    return TopologyRequest(annotations, [f"topology: each tensor-parallel group ({tensor_nodes} pods, one per node, "
                                         f"by completion index) required in one {unit_level}, one NVLink domain "
                                         f"({domain_nodes} nodes){whole} (Kueue Topology Aware Scheduling)"])


def _replica_request(levels: tuple[str, ...], machine_type: str, nodes: int, group_nodes: int,
                     clique_nodes: int | None = None, fleet_nodes: int | None = None) -> TopologyRequest:
    """Each model replica of `group_nodes` nodes required in the finest level that holds it, or the whole job."""
    level = replica_level(levels, machine_type, group_nodes, clique_nodes)
    if group_nodes > 1 and nodes % group_nodes == 0 and group_nodes < nodes \
            and not _replicas_overflow(level, machine_type, nodes, group_nodes, clique_nodes, fleet_nodes):
        annotations = {SLICE_REQUIRED: level, SLICE_SIZE: str(group_nodes)}
        index = levels.index(level)
        note = (f"topology: each model replica ({group_nodes} pods, one per node, by completion index) required "
                f"in one {level}")
        if index > 0:
            annotations[PREFERRED] = levels[index - 1]
            note += f"; the whole job preferred in one {levels[index - 1]} (Kueue climbs when it does not fit)"
        return TopologyRequest(annotations, [note + " (Kueue Topology Aware Scheduling)"])
    if group_nodes >= nodes:
        level = replica_level(levels, machine_type, nodes, clique_nodes)
        size = level_nodes(level, machine_type, clique_nodes)
        if size is not None and size < nodes:
            # Even the broadest level is documented too small (p6e-gb200's levels: the 9-node clique, the node):
            # a requirement would keep the job queued forever, so it is only preferred there.
            return TopologyRequest({PREFERRED: level}, [
                f"topology: the job is one model replica of {nodes} nodes, more than one {level} holds ({size}); "
                f"preferred in one {level} (Kueue spreads it over several when none has room)"])
        return TopologyRequest({REQUIRED: level}, [f"topology: the job is one model replica of {nodes} nodes, "
                                                   f"required in one {level}"])
    why = ("a model replica stays inside one node" if group_nodes <= 1 else
           f"{nodes} nodes are not a whole number of {group_nodes}-node replicas, so no per-replica requirement"
           if nodes % group_nodes else
           f"{group_nodes}-node replicas do not pack into {level}s of {level_nodes(level, machine_type, clique_nodes)} "
           "nodes (some would wait for a domain with room forever), so no per-replica requirement")
    level = unit_level(levels, machine_type, clique_nodes)
    return TopologyRequest({PREFERRED: level}, [f"topology: {why}; the whole job preferred in one {level}"])


def _replicas_overflow(level: str, machine_type: str, nodes: int, group_nodes: int,
                       clique_nodes: int | None = None, fleet_nodes: int | None = None) -> bool:
    """Whether the fleet's domains of `level` (of documented size; the fleet in whole domains and a remainder)
    cannot hold all its `group_nodes`-node replicas, each inside one: 36 A4X nodes are two 18-node sub-blocks,
    which hold 8 four-node replicas, not 9."""
    size = level_nodes(level, machine_type, clique_nodes)
    if size is None or size >= nodes:
        return False
    fleet = max(nodes, fleet_nodes or 0)   # an inventory's pods may land on any of its nodes (two NVL72 racks: 36)
    room = (fleet // size) * (size // group_nodes) + (fleet % size) // group_nodes
    return room < nodes // group_nodes
