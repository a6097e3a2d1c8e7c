"""How a GPU fleet is laid out as node pools / node groups, each within its cloud's documented limits.

A pure decision over the offering's node limit (catalog `max_nodes`, filled from the hardware facts
table) and the fleet size; docs/scale.md explains the layout and its sources.

- Google Cloud: a multi-node training pool is COMPACT, and GKE places at most
  `gke_compact_placement_max_nodes` nodes in one compact pool; any pool holds at most
  `gke_node_pool_max_nodes` per zone. A cluster holds at most `gke_cluster_max_nodes`.
- AWS: one managed node group holds at most `eks_nodes_per_managed_node_group` nodes, and a cluster
  at most `eks_managed_node_groups_per_cluster` groups (both adjustable quotas).

Each pool is one placement unit (its own compact placement policy / cluster placement group), so a
pool size is a multiple of `group_nodes`, the nodes one tensor- x pipeline-parallel group spans:
such a group never straddles two pools. Kueue's Topology over the clouds' placement labels then keeps
it inside the finest unit the cloud reports (accel.components.kubernetes.kueue_topology).
"""

from __future__ import annotations

from accel.policies import hardware
from accel.policies.catalog.model import Offering


class FleetLayoutError(ValueError):
    """The fleet cannot be split into pools within the cloud's limits."""


def per_pool_limit(offering: Offering, compact: bool, training: bool) -> int | None:
    """The most nodes one pool of this offering may hold (None: no limit known)."""
    limit = offering.max_nodes
    if limit is not None and limit.applies(training):
        return limit.value
    if offering.cloud == "gcp" and offering.family == "gpu":
        return hardware.current().limit("gke_node_pool_max_nodes")
    return None


def nodes_per_pool(nodes: int, limit: int | None, group_nodes: int = 1) -> int | None:
    """The pool size of a fleet of `nodes`: None when one pool holds them all, else the largest multiple of
    `group_nodes` within `limit` (full pools of it, then the remainder)."""
    if group_nodes < 1:
        raise FleetLayoutError(f"group_nodes must be at least 1, got {group_nodes}")
    if limit is None or nodes <= limit:
        return None
    if group_nodes > limit:
        raise FleetLayoutError(f"one parallel group spans {group_nodes} nodes, more than one pool holds ({limit})")
    return limit - limit % group_nodes


def gpu_nodes_per_pool(offering: Offering, nodes: int, *, compact: bool, training: bool,
                       group_nodes: int = 1) -> int | None:
    """`nodes_per_pool` of the Plan's GPU pool for this offering (None: a single pool)."""
    return nodes_per_pool(nodes, per_pool_limit(offering, compact, training), group_nodes)
