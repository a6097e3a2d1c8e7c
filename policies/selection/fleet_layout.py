"""How a GPU fleet is laid out as node pools / node groups, each within its cloud's documented limits.

A pure decision over the offering's node limit (catalog `max_nodes`, filled from the hardware facts
table) and the fleet size; docs/scale.md explains the layout and its sources.

- Google Cloud: a multi-node training pool is COMPACT (and so is a serving pool whose replicas are pipeline
  stages over nodes, policies/selection/ladders.py pipeline_sizes), and GKE places at most
  `gke_compact_placement_max_nodes` nodes in one compact pool; any pool holds at most
  `gke_node_pool_max_nodes` per zone. A cluster holds at most `gke_cluster_max_nodes`.
- AWS: one managed node group holds at most `eks_nodes_per_managed_node_group` nodes, and a cluster
  at most `eks_managed_node_groups_per_cluster` groups (both adjustable quotas).

Each pool is its own compact placement policy / cluster placement group, so a pool size is a
multiple of `group_nodes`, the nodes one tensor- x pipeline-parallel model replica spans
(policies/parallelism.py): such a replica never straddles two pools. Where the cloud documents the
size of its placement unit below the block (`[placement_units]` of the hardware table: an A4X
sub-block is 18 nodes), a pool is also a whole number of units when such a pool fits the limit.
Which nodes of a pool form a replica is Kueue's to decide: `accel job` requires each replica inside
the finest topology level that can hold it (accel/job/topology.py).
"""

from __future__ import annotations

import math

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.catalog.model import Offering


class FleetLayoutError(UsageError, ValueError):
    """The fleet cannot be split into pools within the cloud's limits (exit 2)."""


def per_pool_limit(offering: Offering, compact: bool, training: bool) -> int | None:
    """The most nodes one pool of this offering may hold (None: no limit known); a compact pool of a serving fleet
    (pipelined replicas) is held to the compact placement's limit as a training pool is."""
    limit = offering.max_nodes
    if limit is not None and limit.applies(training or compact):
        return limit.value
    if offering.cloud == "gcp" and offering.family == "gpu":
        return hardware.current().limit("gke_node_pool_max_nodes")
    return None


def nodes_per_pool(nodes: int, limit: int | None, group_nodes: int = 1, unit_nodes: int | None = None) -> int | None:
    """The pool size of a fleet of `nodes`: None when one pool holds them all, else the largest multiple of
    `group_nodes` within `limit` (full pools of it, then the remainder). With `unit_nodes` (the cloud's
    documented placement-unit size), the largest multiple of both when one fits the limit."""
    if group_nodes < 1 or (unit_nodes is not None and unit_nodes < 1):
        raise FleetLayoutError(f"group_nodes and unit_nodes must be at least 1, got {group_nodes}, {unit_nodes}")
    if limit is None or nodes <= limit:
        return None
    if group_nodes > limit:
        raise FleetLayoutError(f"one model replica (tensor- x pipeline-parallel group) spans {group_nodes} nodes, more "
                               f"than one node pool / node group holds ({limit}): a replica cannot straddle two pools; "
                               "raise the limit in a catalog overlay (max_nodes) where it is a quota (docs/scale.md)")
    step = group_nodes
    if unit_nodes is not None and math.lcm(group_nodes, unit_nodes) <= limit:
        step = math.lcm(group_nodes, unit_nodes)
    return limit - limit % step


def placement_unit_nodes(machine_type: str) -> int | None:
    """Nodes in one placement unit of this machine type, where the cloud documents a fixed size."""
    unit = hardware.current().placement_units.get(machine_type)
    return unit.nodes if unit is not None else None


def gpu_nodes_per_pool(offering: Offering, nodes: int, *, compact: bool, training: bool,
                       group_nodes: int = 1) -> int | None:
    """`nodes_per_pool` of the Plan's GPU pool for this offering (None: a single pool). A model replica wider
    than one pool may hold cannot stay in one pool: its fleet is then cut at the limit in whole nodes (the
    Plan says so in its rationale)."""
    limit = per_pool_limit(offering, compact, training)
    if limit is not None and group_nodes > limit:
        group_nodes = 1
    return nodes_per_pool(nodes, limit, group_nodes, placement_unit_nodes(offering.machine_type))
