"""JobSet's admission webhook, for the JobSets accel writes (training and the fabric check).

Ported from kubernetes-sigs/jobset v0.10.1 (the pinned chart) `pkg/webhooks/jobset_webhook.go`
(jobSetWebhook.ValidateCreate) and `pkg/util/placement/placement.go` (GenJobName, GenPodName: the
names the controller gives the Jobs and Pods), plus the CRD's `x-kubernetes-list-map-keys: [name]`
on spec.replicatedJobs (config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml).
"""

from __future__ import annotations

from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, describe, integer, of_kind, repeats, rule, spec

WEBHOOK = "jobset v0.10.1 pkg/webhooks/jobset_webhook.go ValidateCreate"
PLACEMENT = "pkg/util/placement/placement.go"
MAX_INT32 = 2 ** 31 - 1
# The Job controller names a Job's pods <job>-<index>-<5 random characters>; the webhook measures
# the longest with a 5-character stand-in ("-abcde").
POD_SUFFIX = "-abcde"


def _jobsets(scope: Scope):
    for obj in of_kind(scope.objects, "JobSet"):
        name = str((obj.get("metadata") or {}).get("name", ""))
        for index, job in enumerate(spec(obj).get("replicatedJobs") or []):
            yield obj, name, index, job


def job_name(jobset: str, replicated_job: str, job_index: int) -> str:
    return f"{jobset}-{replicated_job}-{job_index}"


def pod_name(jobset: str, replicated_job: str, job_index: int, pod_index: int) -> str:
    """The pod's hostname too, when spec.network.enableDNSHostnames is on."""
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}"


@rule("jobset/job-names", "the Job names a JobSet generates are DNS-1035 labels of at most 63 characters",
      source=f"{WEBHOOK} (IsDNS1035Label of GenJobName(js, rjob, replicas-1), {PLACEMENT})",
      fix="shorten the JobSet name (accel job derives it from the workload name) or the replicated job's name")
def job_names(scope: Scope):
    for obj, name, index, job in _jobsets(scope):
        replicas = integer(job.get("replicas"))
        if replicas is None:
            continue
        longest = job_name(name, str(job.get("name", "")), replicas - 1)
        for problem in names.dns1035_label(longest):
            yield Breach(describe(obj), f"spec.replicatedJobs[{index}].name",
                         f"Invalid value {longest!r}: {problem}"
                         + (" (JobSet name is too long, job names generated for this JobSet will exceed 63 "
                            "characters)" if "63" in problem else ""))


@rule("jobset/pod-names", "the pod names (and DNS hostnames) a JobSet generates fit in 63 characters",
      source=f"{WEBHOOK} (IsDNS1035Label of GenPodName(js, rjob, replicas-1, completions-1) + \"-abcde\" for "
             f"Indexed jobs, {PLACEMENT}); the pod hostname <jobset>-<rjob>-<job>-<pod> is a DNS-1123 label "
             "(kubernetes v1.33 ValidatePodSpec)",
      fix="shorten the JobSet name so that <jobset>-<replicated job>-<last job>-<last pod>-abcde stays within "
          "63 characters")
def pod_names(scope: Scope):
    for obj, name, index, job in _jobsets(scope):
        job_spec = (job.get("template") or {}).get("spec") or {}
        replicas, completions = integer(job.get("replicas")), integer(job_spec.get("completions"), 0)
        if job_spec.get("completionMode") != "Indexed" or not completions or replicas is None:
            continue
        longest = pod_name(name, str(job.get("name", "")), replicas - 1, completions - 1) + POD_SUFFIX
        for problem in names.dns1035_label(longest):
            yield Breach(describe(obj), f"spec.replicatedJobs[{index}].name",
                         f"Invalid value {longest!r}: {problem}"
                         + (" (JobSet name is too long, pod names generated for this JobSet will exceed 63 "
                            "characters)" if "63" in problem else ""))


@rule("jobset/subdomain", "spec.network.subdomain is a DNS subdomain and a DNS-1035 label",
      source=f"{WEBHOOK} (IsDNS1123Subdomain and IsDNS1035Label of spec.network.subdomain)",
      fix="use a subdomain of at most 63 lower-case letters, digits and '-', starting with a letter")
def subdomain(scope: Scope):
    for obj in of_kind(scope.objects, "JobSet"):
        value = (spec(obj).get("network") or {}).get("subdomain")
        if value:
            for problem in dict.fromkeys(names.dns1123_subdomain(value) + names.dns1035_label(value)):
                yield Breach(describe(obj), "spec.network.subdomain", f"Invalid value {value!r}: {problem}")


@rule("jobset/replicas-times-parallelism", "replicas x parallelism of a replicated job fits in an int32",
      source=f"{WEBHOOK} (\"the product of replicas and parallelism must not exceed 2147483647\")",
      fix="use fewer replicas or less parallelism")
def replicas_times_parallelism(scope: Scope):
    for obj, _, index, job in _jobsets(scope):
        parallelism = integer(((job.get("template") or {}).get("spec") or {}).get("parallelism"))
        replicas = integer(job.get("replicas"))
        if parallelism is None or replicas is None:
            continue
        total = replicas * parallelism
        if total > MAX_INT32:
            yield Breach(describe(obj), f"spec.replicatedJobs[{index}]", f"the product of replicas and parallelism "
                         f"must not exceed {MAX_INT32} for replicatedJob '{job.get('name')}' (got {total})")


@rule("jobset/replicated-job-names-unique", "replicated job names are unique within a JobSet",
      source="jobset v0.10.1 CRD jobset.x-k8s.io_jobsets.yaml: spec.replicatedJobs x-kubernetes-list-type: map, "
             "x-kubernetes-list-map-keys: [name] (the API server refuses duplicate keys)",
      fix="name each replicated job differently")
def replicated_job_names_unique(scope: Scope):
    for obj in of_kind(scope.objects, "JobSet"):
        jobs = enumerate(spec(obj).get("replicatedJobs") or [])
        for index, name in repeats((index, job.get("name")) for index, job in jobs):
            yield Breach(describe(obj), f"spec.replicatedJobs[{index}].name", f"Duplicate value: {name!r}")
