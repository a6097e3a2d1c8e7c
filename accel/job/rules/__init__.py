"""The rules the Kubernetes objects accel writes are checked by, ported from the systems that enforce
them: the API server (meta, pod, workloads), the JobSet, LeaderWorkerSet and Kueue webhooks and
CRDs, Kueue's admission, and the stack's controllers. One registry (`RULES`); every rule cites its
upstream function, file and version, and has a test that catches its bad case
(tests/test_job_rules.py)."""

from accel.job.rules import controllers, images, jobset, kueue, lws, maxtext, meta, nvidia, nvlink_placement, pod, storage, vllm_tpu, workloads  # noqa: F401 (registration)
from accel.job.rules.registry import RULES, Breach, Rule, Scope, Violation, run

__all__ = ["RULES", "Breach", "Rule", "Scope", "Violation", "run"]
