"""The one check of a job that claims an NVIDIA ComputeDomain (GB200 NVL72 on A4X, P6e-GB200 or an inventory):
the domain valid against the upstream CRD, every pod claiming its IMEX channel, and the job schedulable."""

from __future__ import annotations

from accel.job.service import check_manifests
from tests.crds import CRDS, validate


def assert_claims_a_valid_compute_domain(result, job) -> dict:
    """The JobSet's pod spec, after checking the job's ComputeDomain claim (see the module docstring)."""
    [domain] = [m for m in job.manifests if m["kind"] == "ComputeDomain"]
    validate(domain, CRDS / "nvidia-dra" / "resource.nvidia.com_computedomains.yaml", "v1beta1")
    [jobset] = [m for m in job.manifests if m["kind"] == "JobSet"]
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    assert pod["resourceClaims"] == [{"name": "compute-domain-channel", "resourceClaimTemplateName": template}]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "compute-domain-channel"}]
    report = check_manifests(result, job.manifests)
    assert report.ok, report
    return pod
