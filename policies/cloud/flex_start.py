"""GKE flex-start capacity: which pools get it alone, and which get it with queued provisioning.

One rule, called by the plan that lays the pool out (policies/selection/plan_builder.py: GKE takes no COMPACT
placement on a queued-provisioning GPU pool), by the node pool that is built (components/gcp/gpu.py,
components/gcp/tpu.py) and by the Kueue objects that place work on it (components/kubernetes/pools.py), so none of
them disagrees:

- A pool Kueue places by a Topology (topology-aware scheduling: a GPU fleet on a scale-out fabric) assigns
  topology domains only from nodes that exist, and reaches the cluster autoscaler only through a
  ProvisioningRequest admission check (Kueue v0.14.1 site/content/en/docs/concepts/topology_aware_scheduling.md,
  "ClusterAutoscaler support"). GKE answers ProvisioningRequests of class queued-provisioning.gke.io only for node
  pools built with queued provisioning. So such a pool on flex-start is built as flex-start *with queued
  provisioning* (--flex-start --enable-queued-provisioning), its flavor tolerates the queued taint, and its
  ClusterQueue gates it with the ProvisioningRequest check. GKE's own advice matches: flex-start with queued
  provisioning when the workload must run on several nodes at once, flex-start VMs alone for small workloads that run
  on one node (docs.cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest, "Best practice", read
  2026-11-27).
- Every other flex-start pool (one without a fabric, and every TPU slice: GKE builds a flex-start slice whole, and
  its flavor names no Topology) stays plain flex-start; a `queued` plan is queued provisioning everywhere.

The plan keeps saying `flex-start`: the capacity bought, its price and its seven-day legs are the same
(policies/cloud/capacity_modes.yaml gcp-queued: price same_as gcp-flex-start, 168 hours), so the search, its
options and `accel choose` are unchanged by it; only how GKE hands the capacity to Kueue (and so the pool's
placement) follows from it.
"""

from __future__ import annotations

from accel.policies.plan import Capacity, GpuPool, TpuPool


def placed_by_topology(fabric: str) -> bool:
    """Kueue places a GPU pool's pods by a Topology (its flavor names one) where the pool is on a scale-out `fabric`
    (GpuPool.fabric), where a tensor- or pipeline-parallel group must stay close (components/kubernetes/pools.py,
    docs/scale.md). Only the fabric decides, so the planner asks it of a pool not built yet."""
    return fabric != "none"


def gke_provisioning(provisioning: str, fabric: str) -> str:
    """How GKE provisions a GPU pool of the plan's `provisioning` on `fabric`: `queued` for a queued plan and for a
    flex-start one Kueue places by a Topology; the plan's own mode otherwise."""
    if provisioning == "flex-start" and placed_by_topology(fabric):
        return "queued"
    return provisioning


def queued_provisioning(pool: GpuPool | TpuPool, capacity: Capacity) -> bool:
    """The GKE node pool is built with queued provisioning: nodes come only through ProvisioningRequests. A TPU
    slice only when the plan says `queued`: its flavor names no Topology."""
    if isinstance(pool, GpuPool):
        return gke_provisioning(capacity.provisioning, pool.fabric) == "queued"
    return capacity.provisioning == "queued"
