"""The stack's node pools a pod can be placed on: its nodeSelector matched by the pool's labels, every scheduling
taint of the pool tolerated (kubernetes v1.33 pkg/scheduler/framework/plugins/nodeaffinity and tainttoleration, as
accel/job/check.py applies them). Read by the rules that depend on the nodes a pod lands on (its architecture, its
NVLink domain)."""

from __future__ import annotations

from typing import Any


def placeable_pools(pod_spec: dict[str, Any], cluster) -> list:
    """The pools of `cluster` (accel.job.declared.DeclaredCluster) the pod can be placed on; [] without a cluster."""
    if cluster is None:
        return []
    # Imported here: accel.job.check imports the rules package, so a module-level import would be circular.
    from accel.job.check import SCHEDULING_EFFECTS, tolerates

    selector = {str(k): str(v) for k, v in (pod_spec.get("nodeSelector") or {}).items()}
    tolerations = list(pod_spec.get("tolerations") or [])
    return [pool for pool in cluster.pools
            if all(pool.labels.get(k) == v for k, v in selector.items())
            and all(t.effect not in SCHEDULING_EFFECTS or tolerates(tolerations, t) for t in pool.taints)]
