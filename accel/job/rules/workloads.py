"""The batch, apps and Service rules of the API server for the workload kinds accel writes.

Ported from Kubernetes v1.33: `pkg/apis/batch/validation/validation.go` (validateJobSpec), which
the API server applies to each Job the JobSet controller creates; `pkg/apis/apps/validation/
validation.go` (ValidateDeploymentSpec, ValidateStatefulSetSpec: LWS creates StatefulSets from its
templates); `pkg/apis/core/validation/validation.go` (ValidateService).
"""

from __future__ import annotations

from accel.job.pod_templates import pod_templates
from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, describe, integer, of_kind, rule, spec

BATCH = "kubernetes v1.33 pkg/apis/batch/validation/validation.go"
APPS = "kubernetes v1.33 pkg/apis/apps/validation/validation.go"
CORE = "kubernetes v1.33 pkg/apis/core/validation/validation.go"
MAX_PARALLELISM_INDEXED = 100_000   # maxParallelismForIndexedJob
BATCH_KINDS = ("JobSet", "Job")
LONG_RUNNING_KINDS = ("Deployment", "LeaderWorkerSet", "StatefulSet")


def _job_specs(scope: Scope):
    """(owner, field, Job spec): the Jobs', then each JobSet replicated job's template (a Job to be)."""
    for kind in ("Job", "JobSet"):
        for template in pod_templates(of_kind(scope.objects, kind), empty=True):
            yield template.owner, template.job_path, template.job


@rule("batch/restart-policy", "a Job's pods restart OnFailure or Never",
      source=f"{BATCH} validateJobSpec (restartPolicy NotSupported unless OnFailure or Never)",
      fix="set restartPolicy: Never (JobSet restarts failed jobs itself) or OnFailure")
def batch_restart_policy(scope: Scope):
    yield from _restart_policies(scope, BATCH_KINDS, ("OnFailure", "Never"), None)


def _restart_policies(scope: Scope, kinds: tuple[str, ...], supported: tuple[str, ...], default: str | None):
    """The pods of `kinds` whose restartPolicy (`default` when unset) is not one the controller supports."""
    for template in pod_templates(of_kind(scope.objects, *kinds)):
        policy = template.spec.get("restartPolicy", default)
        if policy not in supported:
            yield Breach(describe(template.owner), f"{template.path}.spec.restartPolicy",
                         f"Unsupported value: {policy!r}: supported values: " + ", ".join(f'"{p}"' for p in supported))


@rule("batch/indexed-job", "an Indexed Job has completions and at most 100,000 parallel pods",
      source=f"{BATCH} validateJobSpec (completions Required when completion mode is Indexed; "
             "maxParallelismForIndexedJob)",
      fix="set completions (pods per slice) and keep parallelism at most 100000")
def indexed_job(scope: Scope):
    for owner, where, job in _job_specs(scope):
        if job.get("completionMode") != "Indexed":
            continue
        if job.get("completions") is None:
            yield Breach(describe(owner), f"{where}.completions", "Required value: when completion mode is Indexed")
        parallelism = job.get("parallelism", 1)
        if isinstance(parallelism, int) and parallelism > MAX_PARALLELISM_INDEXED:
            yield Breach(describe(owner), f"{where}.parallelism", f"Invalid value {parallelism}: must be less than "
                         f"or equal to {MAX_PARALLELISM_INDEXED} when completion mode is Indexed")


@rule("batch/non-negative", "a Job's parallelism, completions and backoffLimit are not negative",
      source=f"{BATCH} validateJobSpec (ValidateNonnegativeField)",
      fix="use 0 or more")
def batch_non_negative(scope: Scope):
    for owner, where, job in _job_specs(scope):
        for key in ("parallelism", "completions", "backoffLimit"):
            value = job.get(key)
            if isinstance(value, int) and value < 0:
                yield Breach(describe(owner), f"{where}.{key}", f"Invalid value {value}: must be greater than or "
                             "equal to 0")


@rule("apps/restart-policy", "a Deployment's or StatefulSet's pods restart Always",
      source=f"{APPS} ValidatePodTemplateSpecForReplicaSet, ValidateStatefulSetSpec (restartPolicy: \"Always\")",
      fix="set restartPolicy: Always (or leave it unset)")
def apps_restart_policy(scope: Scope):
    yield from _restart_policies(scope, LONG_RUNNING_KINDS, ("Always",), "Always")


@rule("apps/selector-matches-template", "a Deployment's selector is non-empty and matches its pod labels",
      source=f"{APPS} ValidateDeploymentSpec (\"empty selector is invalid for deployment\"; \"`selector` does not "
             "match template `labels`\")",
      fix="put every selector label on spec.template.metadata.labels")
def selector_matches_template(scope: Scope):
    for obj in of_kind(scope.objects, "Deployment"):
        body = spec(obj)
        selector = (body.get("selector") or {}).get("matchLabels") or {}
        expressions = (body.get("selector") or {}).get("matchExpressions") or []
        labels = ((body.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not selector and not expressions:
            yield Breach(describe(obj), "spec.selector", "Invalid value: empty selector is invalid for deployment")
        elif any(labels.get(k) != v for k, v in selector.items()):
            yield Breach(describe(obj), "spec.template.metadata.labels",
                         f"Invalid value {labels}: `selector` does not match template `labels`")


@rule("apps/replicas-non-negative", "a Deployment's replicas are not negative",
      source=f"{APPS} ValidateDeploymentSpec (ValidateNonnegativeField)",
      fix="use 0 or more replicas")
def apps_replicas(scope: Scope):
    for obj in of_kind(scope.objects, "Deployment"):
        value = spec(obj).get("replicas")
        if isinstance(value, int) and value < 0:
            yield Breach(describe(obj), "spec.replicas", f"Invalid value {value}: must be greater than or equal to 0")


@rule("service/ports", "a Service's ports are valid, named when there are several, and uniquely named",
      source=f"{CORE} ValidateService, validateServicePort (name Required with more than one port; "
             "field.Duplicate; IsValidPortName; IsValidPortNum for port and a numeric targetPort)",
      fix="name every port (unique IANA service names) and use numbers from 1 to 65535")
def service_ports(scope: Scope):
    for obj in of_kind(scope.objects, "Service"):
        ports = spec(obj).get("ports") or []
        seen: set[str] = set()
        for index, port in enumerate(ports):
            where, name = f"spec.ports[{index}]", port.get("name")
            if len(ports) > 1 and not name:
                yield Breach(describe(obj), f"{where}.name", "Required value")
            if name:
                for problem in names.port_name(str(name)):
                    yield Breach(describe(obj), f"{where}.name", f"Invalid value {name!r}: {problem}")
                if name in seen:
                    yield Breach(describe(obj), f"{where}.name", f"Duplicate value: {name!r}")
                seen.add(name)
            for problem in names.port_number(port.get("port")):
                yield Breach(describe(obj), f"{where}.port", f"Invalid value {port.get('port')!r}: {problem}")
            target = port.get("targetPort")
            if isinstance(target, int):
                for problem in names.port_number(target):
                    yield Breach(describe(obj), f"{where}.targetPort", f"Invalid value {target!r}: {problem}")
            elif isinstance(target, str):
                for problem in names.port_name(target):
                    yield Breach(describe(obj), f"{where}.targetPort", f"Invalid value {target!r}: {problem}")


@rule("service/selects-the-pods", "a Service's selector matches the pods of the workload it fronts",
      source="accel: a Service whose selector matches no pod has no endpoints (kubernetes v1.33 "
             "pkg/controller/endpointslice: endpoints are the pods matching spec.selector)",
      fix="select the serving pods by a label their template carries")
def service_selects_the_pods(scope: Scope):
    templates = [t for t in pod_templates(scope.manifests)]
    for obj in of_kind(scope.manifests, "Service"):
        selector = spec(obj).get("selector") or {}
        if not selector or not templates:
            continue
        namespace = (obj.get("metadata") or {}).get("namespace")
        matched = [t for t in templates if (t.owner.get("metadata") or {}).get("namespace") == namespace
                   and any(all(labels.get(k) == v for k, v in selector.items()) for labels in t.pod_labels())]
        if not matched:
            yield Breach(describe(obj), "spec.selector", f"{selector} matches no pod template in the manifests")


# Count fields the controllers (and accel's schedule check) read: integers in every upstream schema
# (kubernetes v1.33 api/openapi-spec: Deployment/Job int32 fields; jobset v0.10.1 and lws v0.10.0 CRDs:
# replicas, size `type: integer, format: int32`); the API server refuses a string or a fraction.
COUNT_FIELDS = {
    "JobSet": lambda body: [(f"spec.replicatedJobs[{i}].replicas", j.get("replicas"))
                            for i, j in enumerate(body.get("replicatedJobs") or [])]
    + [(f"spec.replicatedJobs[{i}].template.spec.{k}", ((j.get("template") or {}).get("spec") or {}).get(k))
       for i, j in enumerate(body.get("replicatedJobs") or []) for k in ("parallelism", "completions", "backoffLimit")],
    "Job": lambda body: [(f"spec.{k}", body.get(k)) for k in ("parallelism", "completions", "backoffLimit")],
    "Deployment": lambda body: [("spec.replicas", body.get("replicas"))],
    "LeaderWorkerSet": lambda body: [("spec.replicas", body.get("replicas")),
                                     ("spec.leaderWorkerTemplate.size",
                                      (body.get("leaderWorkerTemplate") or {}).get("size"))],
}


@rule("schema/integer-counts", "replicas, parallelism, completions, backoffLimit and size are integers",
      source="kubernetes v1.33 api/openapi-spec (apps/v1 Deployment, batch/v1 Job: int32); jobset v0.10.1 and lws "
             "v0.10.0 CRDs (type: integer, format: int32)",
      fix="write the count as a whole number, unquoted")
def integer_counts(scope: Scope):
    for obj in scope.objects:
        fields = COUNT_FIELDS.get(str(obj.get("kind")))
        for where, value in (fields(spec(obj)) if fields else []):
            if value is not None and integer(value) is None:
                yield Breach(describe(obj), where, f"Invalid value {value!r}: must be an integer")
