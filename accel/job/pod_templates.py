"""Where the pods of a workload manifest are described: each pod template, with its owner, its field path
and the counts of the pods it makes. One walk over the kinds accel writes (JobSet, Job, LeaderWorkerSet,
Deployment) and the other pod-making kinds a hand-written manifest may hold, read by the schedule check
(accel/job/check.py) and the rules (accel/job/rules).

Nothing here validates: a field of the wrong shape raises as reading it does (the callers report it),
and counts are given as written (rule schema/integer-counts reads them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any


# Labels LWS puts on every pod of a group (lws v0.10.0 api/leaderworkerset/v1: SetNameLabelKey, WorkerIndexLabelKey).
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


@dataclass(frozen=True)
class PodTemplate:
    owner: dict[str, Any]   # the object that carries it
    path: str               # field path of the template within the owner ("" for a bare Pod)
    template: Any           # as written; None where the owner leaves the template out
    # (replicas, pods per replica) as written, each None when the field is absent (the API's default is 1):
    # a JobSet's replicated job (replicas, parallelism), a Job (1, parallelism), a LeaderWorkerSet's group
    # (replicas, size) on both its templates. None for a DaemonSet, whose pods follow its nodes.
    counts: tuple[Any, Any] | None
    job_path: str | None = None     # the Job spec the template belongs to (a Job; a JobSet's Job to be)
    job: dict[str, Any] | None = None
    replicated_job: Any = None      # a JobSet replicated job's name, as written
    leader: bool = False            # a LeaderWorkerSet's leaderTemplate (its workerTemplate is the other)

    @property
    def spec(self) -> dict[str, Any]:
        return self.template.get("spec") or {}

    @property
    def metadata(self) -> dict[str, Any]:
        return self.template.get("metadata") or {}

    def pod_labels(self) -> list[dict[str, Any]]:
        """The labels its pods carry once created, one mapping per kind of pod it makes: the template's, plus on a
        LeaderWorkerSet's pods the ones LWS adds, its name and the pod's index in the group, "0" on the leader and
        1 to size-1 on the workers (lws v0.10.0 leaderworkerset_controller.go l.793-797, pod_webhook.go l.141);
        a worker stands for them all. A LeaderWorkerSet without a leaderTemplate makes its leader from the
        workerTemplate (api/leaderworkerset/v1 LeaderWorkerTemplate.LeaderTemplate)."""
        labels = dict(self.metadata.get("labels") or {})
        if self.owner.get("kind") != "LeaderWorkerSet":
            return [labels]
        labels[LWS_NAME] = (self.owner.get("metadata") or {}).get("name")
        if self.leader:
            return [{**labels, LWS_WORKER_INDEX: "0"}]
        group = (self.owner.get("spec") or {}).get("leaderWorkerTemplate") or {}
        pods = [{**labels, LWS_WORKER_INDEX: "1"}] if group.get("size", 1) != 1 else []
        return pods + ([] if group.get("leaderTemplate") else [{**labels, LWS_WORKER_INDEX: "0"}])


def pod_templates(objects: Iterable[dict[str, Any]], *, empty: bool = False) -> Iterator[PodTemplate]:
    """Every pod template in the workload kinds accel writes (and a bare Pod), in the objects' order;
    with `empty`, also each place a template belongs that the owner leaves out (template None)."""
    for template in _walk(objects):
        if empty or template.template is not None:
            yield template


def _walk(objects: Iterable[dict[str, Any]]) -> Iterator[PodTemplate]:
    for obj in objects:
        kind, body = obj.get("kind"), obj.get("spec") or {}
        if kind == "JobSet":
            for index, entry in enumerate(body.get("replicatedJobs") or []):
                job_path = f"spec.replicatedJobs[{index}].template.spec"
                job = (entry.get("template") or {}).get("spec") or {}
                yield PodTemplate(obj, f"{job_path}.template", job.get("template"),
                                  (entry.get("replicas"), job.get("parallelism")), job_path, job, entry.get("name"))
        elif kind == "Job":
            yield PodTemplate(obj, "spec.template", body.get("template"), (1, body.get("parallelism")), "spec", body)
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            yield PodTemplate(obj, "spec.template", body.get("template"), (body.get("replicas"), 1))
        elif kind == "DaemonSet":
            yield PodTemplate(obj, "spec.template", body.get("template"), None)
        elif kind == "LeaderWorkerSet":
            group = body.get("leaderWorkerTemplate") or {}
            counts = (body.get("replicas"), group.get("size"))
            for key in ("leaderTemplate", "workerTemplate"):
                yield PodTemplate(obj, f"spec.leaderWorkerTemplate.{key}", group.get(key), counts,
                                  leader=key == "leaderTemplate")
        elif kind == "Pod":
            yield PodTemplate(obj, "", {"metadata": obj.get("metadata") or {}, "spec": body}, (1, 1))
