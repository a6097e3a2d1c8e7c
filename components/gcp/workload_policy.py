"""The Compute Engine workload policy a rack-scale accelerator's node pool is placed by.

TPU7x multi-host slices and A4X NVL72 racks are not placed by GKE's plain COMPACT policy: their node pool
names a regional `compute.ResourcePolicy` whose `workload_policy` is HIGH_THROUGHPUT with the accelerator
topology the pool must fill (TPU7x: the slice's, e.g. 4x4x8; A4X: 1x72, one NVL72 domain of 18 VMs).
Sources: GKE "About Ironwood (TPU7x) in GKE" (a workload policy through the placement policy, replacing the
TPU topology), xpk `src/xpk/core/nodepool.py` (`resource-policies create workload-policy --type=HIGH_THROUGHPUT
--accelerator-topology=TOPO --region=<zone's region>`), Cluster Toolkit `modules/compute/resource-policy` and
`gke-node-pool/main.tf` (the node pool's `placement_policy {type = "COMPACT", policy_name, tpu_topology}`).

Open question, recorded rather than guessed away: gcloud (xpk) passes only `--placement-policy=NAME` and says
COMPACT and `--tpu-topology` must not be given with a workload policy, while the Terraform/Pulumi node-pool
schema requires `placement_policy.type` and Cluster Toolkit, which goes through the same provider, passes
`type = "COMPACT"` with `policy_name` and, for TPUs, `tpu_topology` equal to the policy's topology. These
components follow Cluster Toolkit (`placement_args`), and check that the two topologies are the same.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from accel.base.errors import invalid_arg
from accel.components.gcp._common import region_of

WORKLOAD_POLICY_TYPE = "HIGH_THROUGHPUT"   # the only type that takes an accelerator topology (SDK docstring)


def workload_policy(name: str, *, zone: str, accelerator_topology: str, project: str | None,
                    opts: pulumi.ResourceOptions) -> gcp.compute.ResourcePolicy:
    """One HIGH_THROUGHPUT workload policy for `accelerator_topology` in the zone's region."""
    # Named explicitly: the node pool refers to it by name, known at preview (xpk names it by its topology).
    args: dict = {"name": name, "region": region_of(zone),   # regional, in the pool's zone's region
                  "description": f"accel: place {accelerator_topology} accelerator node pools",
                  "workload_policy": {"type": WORKLOAD_POLICY_TYPE, "accelerator_topology": accelerator_topology}}
    if project:
        args["project"] = project
    # Every field of a resource policy forces a new one, and its name is fixed: replaced create-first, the new
    # policy would collide with the old name. Deleted first instead (Pulumi deletes the node pools that use it,
    # which a new placement replaces anyway, before the policy).
    return gcp.compute.ResourcePolicy(name, **args, opts=pulumi.ResourceOptions.merge(
        opts, pulumi.ResourceOptions(delete_before_replace=True)))


def placement_args(component: str, policy_name: str, policy_topology: str, tpu_topology: str | None = None) -> dict:
    """A node pool's `placement_policy` naming the workload policy (Cluster Toolkit's form, see the module); the
    name is the one `workload_policy` gave it, known at preview (the pool also depends on the policy)."""
    if tpu_topology is not None and tpu_topology != policy_topology:
        raise invalid_arg(component, "pool.topology", tpu_topology,
                          f"the workload policy places {policy_topology}; the node pool's TPU topology must match")
    placement: dict = {"type": "COMPACT", "policy_name": policy_name}
    if tpu_topology is not None:
        placement["tpu_topology"] = tpu_topology
    return placement
