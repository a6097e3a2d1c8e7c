"""LeaderWorkerSet's admission webhook, for the multi-node serving groups accel writes.

Ported from kubernetes-sigs/lws v0.10.0 (the pinned chart) `pkg/webhooks/leaderworkerset_webhook.go`
(generalValidate). The pods LWS creates are StatefulSet pods: the leader of group g is <lws>-<g>,
its workers <lws>-<g>-<w> (`pkg/controllers/leaderworkerset_controller.go`; the leader's name names
the workers' StatefulSet), and a pod's name is its hostname, a DNS-1123 label (kubernetes v1.33
pkg/apis/core/validation/validation.go ValidatePodSpec).
"""

from __future__ import annotations

from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, describe, integer, of_kind, rule, spec

WEBHOOK = "lws v0.10.0 pkg/webhooks/leaderworkerset_webhook.go generalValidate"
MAX_INT32 = 2 ** 31 - 1
MAX_REPLICAS = 1_000_000
SUBGROUP_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"


def _lws(scope: Scope):
    for obj in of_kind(scope.objects, "LeaderWorkerSet"):
        body = spec(obj)
        group = body.get("leaderWorkerTemplate") or {}
        replicas, size = integer(body.get("replicas")), integer(group.get("size"))
        if replicas is not None and size is not None:
            yield obj, str((obj.get("metadata") or {}).get("name", "")), replicas, size, group


@rule("lws/name", "a LeaderWorkerSet's name is a DNS-1035 label",
      source=f"{WEBHOOK} (ValidateObjectMeta with NameIsDNS1035Label)",
      fix="name it with at most 63 lower-case letters, digits and '-', starting with a letter")
def lws_name(scope: Scope):
    for obj, name, *_ in _lws(scope):
        for problem in names.dns1035_label(name):
            yield Breach(describe(obj), "metadata.name", f"Invalid value {name!r}: {problem}")


@rule("lws/size-and-replicas", "size is at least 1, replicas 0 to 1,000,000, and replicas x size fits an int32",
      source=f"{WEBHOOK} (\"size must be equal or greater than 1\", replicas bounds, \"the product of replicas and "
             "worker replicas must not exceed 2147483647\")",
      fix="use a group size of at least 1 and fewer replicas")
def size_and_replicas(scope: Scope):
    for obj, _, replicas, size, _group in _lws(scope):
        if size < 1:
            yield Breach(describe(obj), "spec.leaderWorkerTemplate.size", f"Invalid value {size}: size must be "
                         "equal or greater than 1")
        if not 0 <= replicas <= MAX_REPLICAS:
            yield Breach(describe(obj), "spec.replicas", f"Invalid value {replicas}: replicas must be between 0 and "
                         f"{MAX_REPLICAS}")
        if replicas * size > MAX_INT32:
            yield Breach(describe(obj), "spec.replicas", f"the product of replicas and worker replicas must not "
                         f"exceed {MAX_INT32}")


@rule("lws/subgroup-exclusive-needs-subgroups", "the subgroup exclusive-topology annotation needs subGroupPolicy",
      source=f"{WEBHOOK} (\"cannot have subgroup-exclusive-topology without subGroupSize set\")",
      fix=f"drop {SUBGROUP_EXCLUSIVE} or set spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize")
def subgroup_exclusive(scope: Scope):
    for obj, _, _, _, group in _lws(scope):
        if SUBGROUP_EXCLUSIVE in ((obj.get("metadata") or {}).get("annotations") or {}) and \
                not group.get("subGroupPolicy"):
            yield Breach(describe(obj), f"metadata.annotations[{SUBGROUP_EXCLUSIVE}]",
                         "cannot have subgroup-exclusive-topology without subGroupSize set")


@rule("lws/pod-names", "the pod names (hostnames) of the last group's last worker fit in a DNS-1123 label",
      source="lws v0.10.0 pkg/controllers/leaderworkerset_controller.go (leader <lws>-<group>, workers "
             "<lws>-<group>-<worker>); kubernetes v1.33 ValidatePodSpec (hostname: ValidateDNS1123Label)",
      fix="shorten the LeaderWorkerSet name")
def pod_names(scope: Scope):
    for obj, name, replicas, size, _ in _lws(scope):
        longest = f"{name}-{max(replicas - 1, 0)}-{max(size - 1, 1)}"
        for problem in names.dns1123_label(longest):
            yield Breach(describe(obj), "metadata.name", f"worker pod {longest!r}: {problem}")
