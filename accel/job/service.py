"""From an offline plan result (the mock-engine run of the stack's program) to a job and its check."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from accel.policies.plan import Plan

from accel.job.check import Finding, ScheduleReport, check
from accel.job.context import JobContext, context_from_capture
from accel.job.declared import declared_cluster
from accel.job.manifests import GeneratedJob, JobOptions, dns_name, generate
from accel.job.tpu_serving import MultiHostTpuServing


def plan_of(result: Any) -> Plan | None:
    return Plan.model_validate(result.plan) if result.plan else None


def context_of(result: Any, plan: Plan) -> JobContext:
    return context_from_capture(result.stack, result.capture, result.existing_cluster, plan.chosen.accelerator)


def job_of(result: Any, options: JobOptions = JobOptions()) -> GeneratedJob | None:
    plan = plan_of(result)
    return generate(plan, context_of(result, plan), options) if plan else None


def check_manifests(result: Any, manifests: list[dict[str, Any]]) -> ScheduleReport:
    return check(manifests, declared_cluster(result.capture, result.existing_cluster))


def job_report(result: Any) -> dict[str, Any] | None:
    """The `job` key of `accel plan --json`: the generated job's name, kinds and its schedule check.

    None when the program exported no accel Plan (another project's program, a partial plan).
    """
    try:
        job = job_of(result)
    except ValidationError:
        return None
    except MultiHostTpuServing as refused:
        # No job is written for it (accel job exits 2 saying why): the plan says so as its job's error.
        name = dns_name(plan_of(result).workload.name)
        finding = Finding(f"LeaderWorkerSet {name}", "plan.chosen", refused.reason, fix=refused.fix)
        return {"name": name, "kinds": [], **ScheduleReport(errors=[finding]).to_json()}
    if job is None:
        return None
    report = check_manifests(result, job.manifests)
    return {"name": job.name, "kinds": [m["kind"] for m in job.manifests], **report.to_json()}
