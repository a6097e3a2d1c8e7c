"""How many machines one declaration (a reservation, a Capacity Block, a committed-use discount) may name.

No cloud publishes a per-reservation ceiling, so the bound is a sanity one, stated once here: a stack builds
one cluster, and no cluster holds more nodes than GKE's largest (the hardware table's
`gke_cluster_max_nodes_by_request`, 65,000 by request; EKS's default node-group quotas hold far fewer). A count
above it cannot be used by any stack and is a typo (10^30 was priced and ranked before this check).
"""

from __future__ import annotations


def machine_count_problem(count: int) -> str | None:
    """Why `count` machines is not a count one declaration can hold, or None."""
    from accel.policies import hardware

    limit = hardware.current().limits["gke_cluster_max_nodes_by_request"]
    if count > limit.value:
        return (f"{count:,} machines is more than any one cluster holds: at most {limit.value:,} "
                f"(source: {limit.source}); declare the machines the reservation or commitment really holds")
    return None
