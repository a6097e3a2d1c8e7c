"""Would this job schedule on what the stack declares? The Kubernetes scheduler's and Kueue's rules,
applied offline: node selectors and tolerations against pool labels and taints, requests against a
node's allocatable, a topology spread against the nodes that hold the pods (accel/job/spread_check.py), pods per
TPU slice against the slice's hosts, and the job's total against the ClusterQueue's flavor quota. Every problem
names the pod, the field, the pool and why.

Kueue adds its flavor's node labels and tolerations to the pods it admits (ResourceFlavor docs),
so a queued pod is matched with those added; a pod that relies on them gets a warning.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from accel.components.kubernetes.accelerator_stack import TPU_RESOURCE
from accel.job.declared import DeclaredCluster, Flavor, NodePool, Taint
from accel.job import rules
from accel.job.manifests import EXCLUSIVE_TOPOLOGY, LWS_EXCLUSIVE_TOPOLOGY, QUEUE_LABEL
from accel.job.pod_templates import pod_templates
from accel.job.quantities import parse_quantity
from accel.job.spread_check import spread_problems
from accel.job.topology import LEVEL_ANNOTATIONS, PREFERRED, REQUIRED, SLICE_REQUIRED, SLICE_SIZE

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
GROUP_KINDS = ("JobSet", "Job", "Deployment", "LeaderWorkerSet")   # the kinds whose pods the check places


@dataclass(frozen=True)
class Finding:
    pod: str            # the pod group, or the object ("JobSet training/x") a rule names
    field: str
    message: str
    pool: str | None = None
    rule: str | None = None     # the rule's id (accel/job/rules), with its upstream source
    source: str | None = None
    fix: str | None = None

    def __str__(self) -> str:
        where = f" (pool {self.pool})" if self.pool else ""
        text = f"{self.pod}: {self.field}{where}: {self.message}"
        if self.rule:
            text += f" [rule {self.rule}: {self.source}]"
        return text + (f"; fix: {self.fix}" if self.fix else "")

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "field": self.field, "pool": self.pool, "message": self.message,
                "rule": self.rule, "source": self.source, "fix": self.fix}

    @classmethod
    def of(cls, violation: rules.Violation) -> "Finding":
        breach = violation.breach
        return cls(breach.object, breach.field, breach.message, rule=violation.rule.id,
                   source=violation.rule.source, fix=violation.fix)


@dataclass
class PodGroup:
    """Identical pods: `replicas` groups (slices, serving replicas) of `per_replica` pods each."""

    name: str
    kind: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    replicas: int
    per_replica: int
    template: dict[str, Any]
    template_field: str

    @property
    def pods(self) -> int:
        return self.replicas * self.per_replica


@dataclass
class ScheduleReport:
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    placements: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {"schedulable": self.ok, "errors": [e.to_json() for e in self.errors],
                "warnings": [w.to_json() for w in self.warnings], "placements": self.placements,
                "notes": self.notes}


def pod_groups(manifests: list[dict[str, Any]]) -> list[PodGroup]:
    """The pod groups of the workload kinds (a LeaderWorkerSet's group by its worker template, `size` pods); a
    group whose counts are not integers is left to the rule schema/integer-counts, which reports it."""
    groups = []
    whole = rules.registry.integer
    for manifest in manifests:
        kind, meta = manifest.get("kind"), manifest.get("metadata") or {}
        name, namespace = meta.get("name", "?"), meta.get("namespace", "default")
        labels, annotations = dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
        for template in pod_templates([manifest], empty=True) if kind in GROUP_KINDS else ():
            replicas, per_replica = (whole(count) for count in template.counts)
            if template.leader or replicas is None or per_replica is None:
                continue
            group_name = f"{name}/{template.replicated_job}" if kind == "JobSet" else name
            groups.append(PodGroup(group_name, kind, namespace, labels, annotations, replicas, per_replica,
                                   template.template or {}, template.path))
    return groups


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, Fraction]:
    """Per-pod requests as the scheduler counts them: containers summed (a request defaults to its limit)."""
    total: dict[str, Fraction] = {}
    containers = list(pod_spec.get("containers") or [])
    containers += [c for c in pod_spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in containers:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in merged.items():
            try:
                total[name] = total.get(name, Fraction(0)) + parse_quantity(value)
            except ValueError:
                continue  # not a quantity: the rule pod/resource-quantities reports it
    return total


def tolerates(tolerations: list[dict], taint: Taint) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", taint.effect):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == taint.key):
            return True
        if t.get("key") == taint.key and (t.get("operator", "Equal") == "Equal") and \
                str(t.get("value", "")) == str(taint.value or ""):
            return True
    return False


def _mismatch(pool: NodePool, selector: dict[str, str], tolerations: list[dict]) -> tuple[str, str] | None:
    """(field, why) the pod cannot go to `pool`, or None when it can."""
    for key, value in selector.items():
        if pool.labels.get(key) != value:
            have = pool.labels.get(key)
            return (f"nodeSelector[{key}]", f"wants {value!r}; the pool's nodes have "
                    + (f"{have!r}" if have is not None else "no such label"))
    for taint in pool.taints:
        if taint.effect in SCHEDULING_EFFECTS and not tolerates(tolerations, taint):
            return ("tolerations", f"no toleration for the taint {taint.key}={taint.value or ''}:{taint.effect}")
    return None


def _flavor_fits(flavor: Flavor, selector: dict[str, str]) -> bool:
    return all(selector.get(k, v) == v for k, v in flavor.node_labels.items())


def _fmt(resource: str, value: Fraction) -> str:
    if resource == "memory":
        return f"{float(value) / 2 ** 30:.1f} GiB"
    return f"{float(value):g}"


def check(manifests: list[dict[str, Any]], cluster: DeclaredCluster) -> ScheduleReport:
    """The schedule check, then every rule of accel/job/rules over the manifests and the stack's objects."""
    report = ScheduleReport(notes=list(cluster.notes))
    groups: list[PodGroup] = []
    for index, manifest in enumerate(manifests):
        try:
            groups += pod_groups([manifest])
        except rules.registry.MALFORMED as error:  # a hand-edited metadata or spec of the wrong shape
            report.errors.append(Finding(f"document {index + 1} ({manifest.get('kind')})", "metadata, spec",
                                         "cannot be read: a field does not have the shape Kubernetes defines "
                                         f"({type(error).__name__}: {error})"))
    if not groups and not any(m.get("kind") in GROUP_KINDS for m in manifests):
        report.errors.append(Finding("(manifests)", "kind", "no JobSet, Job, Deployment or LeaderWorkerSet to check"))
    for group in groups:
        try:
            _check_group(group, cluster, report)
        except rules.registry.MALFORMED as error:  # a hand-edited field of the wrong shape
            report.errors.append(Finding(f"{group.name} pod", group.template_field, "cannot be read: a field does "
                                         f"not have the shape Kubernetes defines ({type(error).__name__}: {error})"))
    for violation in rules.run(rules.Scope(manifests, cluster.objects, cluster)):
        finding = Finding.of(violation)
        (report.errors if violation.rule.severity == "error" else report.warnings).append(finding)
    return report


def _check_group(group: PodGroup, cluster: DeclaredCluster, report: ScheduleReport) -> None:
    pod = f"{group.name} pod"
    base = group.template_field + ".spec"
    pod_meta = group.template.get("metadata") or {}
    spec = group.template.get("spec") or {}
    queue = group.labels.get(QUEUE_LABEL) or (pod_meta.get("labels") or {}).get(QUEUE_LABEL)
    flavor: Flavor | None = None
    cluster_queue = None
    if group.namespace not in cluster.namespaces:
        report.errors.append(Finding(pod, "metadata.namespace", f"namespace {group.namespace!r} is not declared by "
                                     f"the stack (declared: {', '.join(sorted(cluster.namespaces)) or 'none'})"))
    if not queue:
        report.errors.append(Finding(pod, f"metadata.labels[{QUEUE_LABEL}]",
                                     "missing: Kueue will not admit the job against the stack's quota; "
                                     "label it with the stack's LocalQueue"))
    else:
        cq_name = cluster.local_queues.get((group.namespace, queue))
        if cq_name is None:
            known = ", ".join(f"{ns}/{n}" for ns, n in sorted(cluster.local_queues)) or "none"
            report.errors.append(Finding(pod, f"metadata.labels[{QUEUE_LABEL}]",
                                         f"LocalQueue {group.namespace}/{queue} is not declared (declared: {known}); "
                                         "the job would wait forever"))
        else:
            cluster_queue = cluster.cluster_queues.get(cq_name)
            if cluster_queue is None:
                report.errors.append(Finding(pod, f"metadata.labels[{QUEUE_LABEL}]",
                                             f"LocalQueue {queue} points at ClusterQueue {cq_name}, which is not declared"))
            elif cluster_queue.namespaces.get("kubernetes.io/metadata.name", group.namespace) != group.namespace:
                report.errors.append(Finding(pod, "metadata.namespace", f"ClusterQueue {cq_name} admits only "
                                             f"namespace {cluster_queue.namespaces}"))
    account = spec.get("serviceAccountName")
    if account and (group.namespace, account) not in cluster.service_accounts:
        report.errors.append(Finding(pod, f"{base}.serviceAccountName",
                                     f"ServiceAccount {group.namespace}/{account} is not declared by the stack"))
    priority = spec.get("priorityClassName")
    if priority and priority not in cluster.priority_classes:
        report.errors.append(Finding(pod, f"{base}.priorityClassName", f"PriorityClass {priority!r} is not declared "
                                     f"(declared: {', '.join(sorted(cluster.priority_classes)) or 'none'})"))
    _check_networks(group, pod, cluster, report)

    requests = pod_requests(spec)
    selector = dict(spec.get("nodeSelector") or {})
    tolerations = list(spec.get("tolerations") or [])
    if cluster_queue is not None:
        flavor = _admit(group, pod, requests, selector, cluster_queue, cluster, report)
    if flavor is not None:
        _check_topology(group, pod, flavor, cluster, report)
    effective_selector = {**selector, **(flavor.node_labels if flavor else {})}
    effective_tolerations = tolerations + (flavor.tolerations if flavor else [])

    candidates, reasons = [], []
    for pool in cluster.pools:
        why = _mismatch(pool, effective_selector, effective_tolerations)
        if why is None:
            candidates.append(pool)
        elif any(k in pool.allocatable for k in requests if "/" in k):  # report accelerator pools only
            reasons.append((pool, why))
    if not candidates:
        if not reasons:
            report.errors.append(Finding(pod, f"{base}.nodeSelector", "no declared node pool offers "
                                         + ", ".join(k for k in requests if "/" in k) or "a node"))
        for pool, (field_name, why) in reasons:
            report.errors.append(Finding(pod, f"{base}.{field_name}", why, pool.name))
        return
    for pool in candidates:
        if _mismatch(pool, selector, tolerations) is not None and flavor is not None:
            field_name, why = _mismatch(pool, selector, tolerations)
            report.warnings.append(Finding(pod, f"{base}.{field_name}", f"{why}; Kueue's flavor {flavor.name} adds "
                                           "it on admission, so the pod schedules only through the queue", pool.name))
            break
    _check_fit(group, pod, base, requests, candidates, report)


def _check_topology(group: PodGroup, pod: str, flavor: Flavor, cluster: DeclaredCluster,
                    report: ScheduleReport) -> None:
    """Kueue's topology request rules (accel/job/topology.py): the flavor names a declared Topology, every
    requested level is one of its levels, required and preferred exclude each other, and a slice is no coarser
    than the PodSet's level and its size divides the PodSet."""
    annotations = (group.template.get("metadata") or {}).get("annotations") or {}
    requested = {key: annotations[key] for key in LEVEL_ANNOTATIONS if key in annotations}
    if not requested and SLICE_SIZE not in annotations:
        return
    where = "metadata.annotations"
    if flavor.topology_name is None:
        report.errors.append(Finding(pod, f"{where}[{next(iter(requested), SLICE_SIZE)}]",
                                     f"requests a topology level, but flavor {flavor.name} names no Kueue Topology "
                                     "(spec.topologyName): Kueue cannot admit a topology request on it"))
        return
    levels = cluster.topologies.get(flavor.topology_name)
    if levels is None:
        report.errors.append(Finding(pod, f"{where}[{next(iter(requested), SLICE_SIZE)}]",
                                     f"flavor {flavor.name} names Topology {flavor.topology_name}, which the stack "
                                     "does not declare"))
        return
    for key, level in requested.items():
        if level not in levels:
            report.errors.append(Finding(pod, f"{where}[{key}]", f"level {level!r} is not a level of Topology "
                                         f"{flavor.topology_name} ({', '.join(levels)}): Kueue would deactivate the "
                                         "workload"))
    if REQUIRED in requested and PREFERRED in requested:
        report.errors.append(Finding(pod, f"{where}[{PREFERRED}]", f"{REQUIRED} and {PREFERRED} exclude each other"))
    podset_level = requested.get(REQUIRED) or requested.get(PREFERRED)
    slice_level = requested.get(SLICE_REQUIRED)
    if (slice_level is None) != (SLICE_SIZE not in annotations):
        report.errors.append(Finding(pod, f"{where}[{SLICE_SIZE}]", f"{SLICE_REQUIRED} and {SLICE_SIZE} go together"))
        return
    if slice_level is None:
        return
    # Kueue refuses only a slice level above the PodSet's; the same level is taken (kueue v0.14.1
    # pkg/cache/scheduler/tas_flavor_snapshot.go:715, "podset slice topology %s is above the podset topology %s").
    if podset_level in levels and slice_level in levels and levels.index(slice_level) < levels.index(podset_level):
        report.errors.append(Finding(pod, f"{where}[{SLICE_REQUIRED}]", f"the slice level {slice_level} is above the "
                                     f"job's {podset_level}: it must be that level or a finer one"))
    size = annotations[SLICE_SIZE]
    if not str(size).isdigit() or int(size) < 1 or group.pods % int(size):
        report.errors.append(Finding(pod, f"{where}[{SLICE_SIZE}]", f"{size!r} must be a whole number of pods that "
                                     f"divides the job's {group.pods} pods"))


def _check_networks(group: PodGroup, pod: str, cluster: DeclaredCluster, report: ScheduleReport) -> None:
    annotations = (group.template.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get("networking.gke.io/interfaces")
    if raw:
        try:
            wanted = [i.get("network") for i in json.loads(raw)]
        except (ValueError, AttributeError):
            report.errors.append(Finding(pod, "metadata.annotations[networking.gke.io/interfaces]", "not a JSON list"))
            return
        for network in wanted:
            if network != "default" and network not in cluster.gke_networks:
                report.errors.append(Finding(pod, "metadata.annotations[networking.gke.io/interfaces]",
                                             f"network {network!r} is not declared (declared: "
                                             f"{', '.join(sorted(cluster.gke_networks)) or 'none'})"))
    if annotations.get("gke-gcsfuse/volumes") == "true" and not cluster.gcsfuse:
        report.errors.append(Finding(pod, "metadata.annotations[gke-gcsfuse/volumes]",
                                     "the cluster does not enable the GCS FUSE CSI driver"))


def _admit(group: PodGroup, pod: str, requests: dict[str, Fraction], selector: dict[str, str], queue,
           cluster: DeclaredCluster, report: ScheduleReport) -> Flavor | None:
    """Kueue's flavor assignment: a flavor of the ClusterQueue whose labels the pod accepts and whose quota
    holds the whole job (Kueue admits a JobSet all at once)."""
    total = {k: v * group.pods for k, v in requests.items()}
    uncovered = [r for r in total if r not in queue.covered]
    if uncovered:
        report.errors.append(Finding(pod, "resources", f"requests {', '.join(uncovered)}, which ClusterQueue "
                                     f"{queue.name} does not cover ({', '.join(queue.covered)}): Kueue cannot admit it"))
        return None
    problems = []
    for flavor_name, quotas in queue.quotas.items():
        flavor = cluster.flavors.get(flavor_name)
        if flavor is None:
            problems.append(f"flavor {flavor_name} is not declared")
            continue
        if not _flavor_fits(flavor, selector):
            problems.append(f"flavor {flavor_name} selects {flavor.node_labels}, the pod's nodeSelector {selector}")
            continue
        short = [f"{r} {_fmt(r, total[r])} > quota {_fmt(r, quotas.get(r, Fraction(0)))}"
                 for r in total if total[r] > quotas.get(r, Fraction(0))]
        if short:
            problems.append(f"flavor {flavor_name}: {'; '.join(short)} for {group.pods} pods")
            continue
        return flavor
    report.errors.append(Finding(pod, "resources", f"ClusterQueue {queue.name} cannot admit the whole job: "
                                 + "; ".join(problems)))
    return None


def _check_fit(group: PodGroup, pod: str, base: str, requests: dict[str, Fraction], pools: list[NodePool],
               report: ScheduleReport) -> None:
    capacity = 0
    fitting: list[tuple[NodePool, int]] = []
    admitted: list[tuple[NodePool, int]] = []   # every pool the pod's selectors admit, with the pods a node takes
    misfits = []
    for pool in pools:
        per_node = None
        for resource, amount in requests.items():
            if amount == 0:
                continue
            have = pool.allocatable.get(resource)
            if have is None:
                if resource in ("cpu", "memory"):
                    continue  # not declared for this pool (existing-cluster nodes): cannot be checked
                misfits.append((pool, resource, amount, Fraction(0)))
                per_node = 0
                break
            fits = int(have // amount)
            if fits == 0:
                misfits.append((pool, resource, amount, have))
            per_node = fits if per_node is None else min(per_node, fits)
        per_node = 1 if per_node is None else per_node
        admitted.append((pool, per_node))
        if per_node:
            fitting.append((pool, per_node))
            capacity += per_node * pool.nodes
    if not fitting:
        for pool, resource, amount, have in misfits:
            report.errors.append(Finding(pod, f"{base}.containers[].resources[{resource}]",
                                         f"requests {_fmt(resource, amount)} per pod; a {pool.machine_type or 'node'} "
                                         f"node has {_fmt(resource, have)} allocatable", pool.name))
        return
    tpu = requests.get(TPU_RESOURCE)
    slices = [p for p, _ in fitting if p.is_tpu_slice]
    if tpu and slices:
        _check_slices(group, pod, base, tpu, slices, report)
        return
    if group.pods > capacity:
        report.errors.append(Finding(pod, "replicas", f"{group.pods} pods, but the matching pools hold "
                                     f"{capacity} ({', '.join(f'{p.name}: {p.nodes} nodes x {n}' for p, n in fitting)})"))
        return
    # The pods fit the nodes; whether their topology spread lets them all place there (accel/job/spread_check.py):
    # a node the selectors admit but the requests do not fit is still a domain of the spread, holding none.
    problems = spread_problems(group.template, group.template_field, group.pods, admitted)
    for problem in problems:
        (report.errors if problem.blocking else report.warnings).append(Finding(pod, problem.field, problem.message))
    if any(problem.blocking for problem in problems):
        return
    report.placements.append({"pods": group.name, "count": group.pods, "pools": [p.name for p, _ in fitting]})


def _check_slices(group: PodGroup, pod: str, base: str, chips: Fraction, slices: list[NodePool],
                  report: ScheduleReport) -> None:
    """A TPU slice is one node pool; each replica (slice) of the job takes one pool whole."""
    ok = True
    for pool in slices:
        per_host = pool.allocatable.get(TPU_RESOURCE, Fraction(0))
        if chips != per_host:
            report.errors.append(Finding(pod, f"{base}.containers[].resources[{TPU_RESOURCE}]",
                                         f"requests {chips} chips; a multi-host TPU pod must take all {per_host} of its "
                                         "host", pool.name))
            ok = False
        if group.per_replica != pool.nodes:
            report.errors.append(Finding(pod, "parallelism", f"{group.per_replica} pods per slice, but the slice "
                                         f"({pool.tpu_topology}) has {pool.nodes} hosts; a slice runs one pod per "
                                         "host, all of them", pool.name))
            ok = False
        break  # identical pools: the first one's verdict stands for all
    if group.replicas > len(slices):
        report.errors.append(Finding(pod, "replicas", f"{group.replicas} slices wanted, {len(slices)} declared "
                                     f"slice pools match ({', '.join(p.name for p in slices)})"))
        ok = False
    # JobSet and LeaderWorkerSet each have their own exclusive-placement annotation on the object (jobset
    # v0.10.1 api/jobset/v1alpha2/jobset_types.go ExclusiveKey; lws v0.10.0 api/leaderworkerset/v1
    # leaderworkerset_types.go ExclusiveKeyAnnotationKey).
    exclusive = LWS_EXCLUSIVE_TOPOLOGY if group.kind == "LeaderWorkerSet" else EXCLUSIVE_TOPOLOGY
    if group.replicas > 1 and exclusive not in group.annotations:
        report.errors.append(Finding(pod, f"metadata.annotations[{exclusive}]",
                                     "missing: without one node pool per slice, pods of two slices can share a pool "
                                     "and neither slice completes",
                                     fix=f"annotate the {group.kind} with {exclusive}: cloud.google.com/gke-nodepool"))
        ok = False
    if ok:
        report.placements.append({"pods": group.name, "count": group.pods,
                                  "pools": [p.name for p in slices[:group.replicas]]})
