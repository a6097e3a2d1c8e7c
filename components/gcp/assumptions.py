"""What a GKE plan assumes but cannot confirm offline: each assumption with its source, said at plan time.

`accel plan` prints these as warnings (TrainingCluster's GCP build logs them), so an assumption that
turns out wrong on a real project is named before `pulumi up`, with how to check it and what to do.
"""

from __future__ import annotations

from accel.components.kubernetes.node_installers import load_node_installers
from accel.components.kubernetes.pools import gpu_node_arch
from accel.policies.plan import Plan

# The GPUDirect-TCPX/TCPXO fabrics are A3 High's and A3 Mega's (policies/hardware/facts.toml): their
# pools get Kueue Topology-Aware Scheduling over GKE's gce-topology labels, which Google documents for
# reservation capacity only.
_TAS_LABEL_UNCONFIRMED_FABRICS = ("gpudirect-tcpx", "gpudirect-tcpxo")


def gcp_assumptions(plan: Plan) -> list[str]:
    """The plan's unconfirmed assumptions, one message each (empty when there are none)."""
    messages: list[str] = []
    gpu = plan.gpu
    if gpu is not None:
        for floating in load_node_installers().floating_upstream(gpu.fabric, gpu_node_arch(gpu)):
            messages.append(
                f"assumption: the GPUDirect node installer {floating}. accel applies Google's manifest as "
                "published at the pinned commit (components/kubernetes/node_installers.yaml); mirror that image "
                "with a tag into your registry if your policy forbids floating images")
        if gpu.fabric in _TAS_LABEL_UNCONFIRMED_FABRICS:
            messages.append(
                f"assumption: GKE labels {gpu.machine_type} nodes with cloud.google.com/gce-topology-block, "
                "-subblock and -host, which the job's Kueue topology request needs. Google documents them for "
                "compactly placed reservation capacity (cloud.google.com/ai-hypercomputer/docs/workloads/"
                "schedule-gke-workloads-tas) and ships a DaemonSet that labels A3 Mega/Ultra nodes itself "
                "(container-engine-accelerators gke-topology-scheduler); not confirmed for on-demand "
                f"{gpu.machine_type}. Check with `kubectl get nodes -L cloud.google.com/gce-topology-subblock` "
                "after the first nodes join; if empty, run the job with a preferred rather than required topology")
    if plan.tpu is not None and plan.storage.filesystem == "managed-lustre":
        messages.append(
            "assumption: Managed Lustre mounts on TPU nodes with Secure Boot on (the TPU pools enable it). An "
            "older Managed Lustre page limited Secure Boot node pools to GPU machine types (cloud.google.com/"
            "managed-lustre/docs/connect-from-kubernetes-engine-existing-instance, Limitations); the current CSI "
            "driver overview no longer lists it. If the mount fails with a kernel-module error, set "
            "TrainingClusterArgs.plan.storage.filesystem to 'none' (buckets through GCS FUSE) or ask Google "
            "whether the limit stands")
    return messages
