"""Every custom resource kind accel writes has its CRD and controller installed by the stack.

An object of a kind whose CustomResourceDefinition the cluster does not serve is refused by the API
server ("no matches for kind"); a CRD without its controller accepts objects that nothing acts on.
The stack installs each controller with its CRDs from a pinned Helm chart
(components/kubernetes/charts.yaml: JobSet v0.10.1, Kueue v0.14.1, LeaderWorkerSet v0.10.0, each
chart's crds/), or the stack's existing cluster says it already runs it (accel:cluster
install_kueue / install_jobset: false), or the cloud serves it (GKE multi-networking).
"""

from __future__ import annotations

from accel.job.rules.registry import Breach, Scope, describe, rule

# API group -> (Helm release the stack installs, what to install)
CONTROLLERS = {
    "jobset.x-k8s.io": ("jobset", "the JobSet controller (charts.yaml 'jobset')"),
    "kueue.x-k8s.io": ("kueue", "Kueue (charts.yaml 'kueue')"),
    "leaderworkerset.x-k8s.io": ("lws", "the LeaderWorkerSet controller (charts.yaml 'lws'; AcceleratorStack installs "
                                 "it when the plan serves a replica across nodes)"),
    "resource.nvidia.com": ("nvidia-dra-driver-gpu", "NVIDIA's DRA driver (charts.yaml 'nvidia-dra-driver-gpu'; "
                            "AcceleratorStack installs it when a GPU pool's NVLink domain spans nodes)"),
    # Not a chart: GKE serves Network and GKENetworkParamSet when the cluster enables multi-networking
    # on Dataplane V2 (GKE "Set up multi-network support for Pods", requirements; components/gcp/cluster.py).
    "networking.gke.io": ("gke-multi-networking", "a GKE cluster with multi-networking and Dataplane V2 "
                          "(GkeClusterArgs.multi_networking)"),
}


@rule("stack/crd-controller-installed", "each custom resource's CRD and controller are installed by the stack",
      source="kubernetes v1.33 apiextensions-apiserver: a custom resource is served only once its CRD is "
             "established (\"no matches for kind\" otherwise); jobset v0.10.1 charts/jobset/crds, kueue v0.14.1 "
             "charts/kueue/templates/crd, lws v0.10.0 charts/lws/crds",
      fix="install the controller's pinned chart in the stack (AcceleratorStack), or run the workload on a cluster "
          "that has it and say so in accel:cluster")
def crd_controller_installed(scope: Scope):
    cluster = scope.cluster
    if cluster is None:
        return
    seen: set[str] = set()
    for obj in scope.objects:
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if group not in CONTROLLERS or (obj.get("kind"), group) in seen:
            continue
        release, what = CONTROLLERS[group]
        if release in cluster.releases or release in cluster.preinstalled:
            continue
        seen.add((obj.get("kind"), group))
        yield Breach(describe(obj), "apiVersion", f"{obj.get('kind')} ({group}) needs {what}, which the stack "
                     "does not install: the API server would answer \"no matches for kind\"")
