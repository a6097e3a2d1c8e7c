"""LeaderWorkerSet's admission webhook, for the multi-node serving groups accel writes.

Ported from kubernetes-sigs/lws v0.10.0 (the pinned chart) `pkg/webhooks/leaderworkerset_webhook.go`
(generalValidate). The pods LWS creates are StatefulSet pods: the leader of group g is <lws>-<g>,
its workers <lws>-<g>-<w> (`pkg/controllers/leaderworkerset_controller.go`; the leader's name names
the workers' StatefulSet), and a pod's name is its hostname, a DNS-1123 label (kubernetes v1.33
pkg/apis/core/validation/validation.go ValidatePodSpec).
"""

from __future__ import annotations

from accel.job.pod_templates import LWS_WORKER_INDEX, pod_templates
from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, containers, describe, integer, of_kind, rule, spec

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


# ---- who serves: a group's leader fronts it, its workers may open nothing --------------------------------------

PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def _ports(pod_spec: dict) -> tuple[set[int], set[str]]:
    """(numbers, names) of the ports a pod's containers (and sidecars) declare."""
    numbers: set[int] = set()
    names_: set[str] = set()
    for _, container in containers(pod_spec):
        for port in container.get("ports") or []:
            numbers.add(port.get("containerPort"))
            if port.get("name"):
                names_.add(port["name"])
    return numbers, names_


def _opens(port, pod_ports: tuple[set[int], set[str]]) -> bool:
    numbers, names_ = pod_ports
    return port in names_ if isinstance(port, str) else port in numbers


def _workers(scope: Scope):
    """The worker template of each LeaderWorkerSet whose groups have workers (size above 1)."""
    for template in pod_templates(scope.manifests):
        if template.owner.get("kind") == "LeaderWorkerSet" and not template.leader and \
                any(labels.get(LWS_WORKER_INDEX) != "0" for labels in template.pod_labels()):
            yield template


@rule("lws/service-selects-the-leaders",
      "a Service over a LeaderWorkerSet selects no workers that leave its target ports closed (the leaders serve)",
      source="lws v0.10.0: workers carry the template's labels with leaderworkerset.sigs.k8s.io/worker-index 1 to "
             "size-1 (pkg/webhooks/pod_webhook.go l.141), the leader \"0\" (leaderworkerset_controller.go "
             "l.793-797; its HPA selector, l.545, 'select leaders'); kubernetes v1.33 pkg/controller/endpointslice "
             "sends a Service's traffic to every ready pod its selector matches",
      fix="add leaderworkerset.sigs.k8s.io/worker-index: \"0\" to the Service's selector (or a label only the "
          "leaderTemplate carries), so only the leaders, which run the server, get requests")
def service_selects_the_leaders(scope: Scope):
    workers = list(_workers(scope))
    for obj in of_kind(scope.manifests, "Service"):
        body = spec(obj)
        selector = body.get("selector") or {}
        if not selector:
            continue
        namespace = (obj.get("metadata") or {}).get("namespace")
        targets = [p.get("targetPort", p.get("port")) for p in body.get("ports") or []]
        for template in workers:
            if (template.owner.get("metadata") or {}).get("namespace") != namespace:
                continue
            selected = [labels for labels in template.pod_labels() if labels.get(LWS_WORKER_INDEX) != "0"
                        and all(labels.get(k) == v for k, v in selector.items())]
            missing = [t for t in targets if not _opens(t, _ports(template.spec))]
            if selected and missing:
                yield Breach(describe(obj), "spec.selector",
                             f"{selector} selects the workers of {describe(template.owner)}, which do not open "
                             f"target port(s) {', '.join(map(str, missing))}: requests the Service sends them there "
                             "are refused")


@rule("lws/worker-probes-a-port-it-opens",
      "a LeaderWorkerSet worker's probes ask a port its own pod opens (the leader's front is not on the worker)",
      source="kubernetes v1.33 pkg/kubelet/prober/prober.go runProbe (httpGet, tcpSocket and grpc probes reach the "
             "pod's own IP at the port; a named port resolves from the probed container's ports, "
             "probe.ResolveContainerPort); lws v0.10.0 (the workerTemplate makes pods apart from the leader's)",
      fix="drop the probes from the workerTemplate (its pods serve nothing to probe), or probe a port a worker "
          "container opens")
def worker_probes(scope: Scope):
    for template in _workers(scope):
        pod_ports = _ports(template.spec)
        for where, container in containers(template.spec):
            own = {p.get("name") for p in container.get("ports") or [] if p.get("name")}
            for kind in PROBES:
                probe = container.get(kind) or {}
                for action in ("httpGet", "tcpSocket", "grpc"):
                    port = (probe.get(action) or {}).get("port")
                    if port is None:
                        continue
                    opened = port in own if isinstance(port, str) else _opens(port, pod_ports)
                    if not opened:
                        yield Breach(describe(template.owner), f"{template.path}.spec.{where}.{kind}.{action}.port",
                                     f"the worker's {kind} asks port {port}, which no container of the worker pod "
                                     "opens: it never succeeds, so the worker is never ready (or is restarted)")
