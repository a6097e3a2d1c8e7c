"""Which Google API each Google Cloud resource calls, and the rule that a stack enables it before the call.

A fresh project has almost every API off; the first create against a disabled one fails with "API has
not been used in project ... or it is disabled" (every GKE how-to starts with "Enable the Google
Kubernetes Engine API"). The stack enables what it calls (components/gcp/apis.py, one
`gcp.projects.Service` each) and every resource waits for its API. This module is the table and the
rule, standard library only, so the guardrail pack (google-apis-enabled) and the component share it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# pulumi_gcp module of a resource type (gcp:<module>/<name>:<Type>) -> the API its calls go to.
API_OF_MODULE: dict[str, str] = {
    "compute": "compute.googleapis.com",
    "container": "container.googleapis.com",
    "storage": "storage.googleapis.com",
    "serviceaccount": "iam.googleapis.com",
    "projects": "cloudresourcemanager.googleapis.com",   # project IAM bindings (getIamPolicy/setIamPolicy)
    "servicenetworking": "servicenetworking.googleapis.com",
    "lustre": "lustre.googleapis.com",
    "filestore": "file.googleapis.com",
    "tpu": "tpu.googleapis.com",
}
# An API no resource of the stack calls but its pods do: GKE Workload Identity exchanges tokens through
# the IAM Service Account Credentials API (GKE "Authenticate to Google Cloud APIs from GKE workloads").
WORKLOAD_IDENTITY_API = "iamcredentials.googleapis.com"
SERVICE_TYPE = "gcp:projects/service:Service"


def module_of(resource_type: str) -> str | None:
    """'container' for 'gcp:container/nodePool:NodePool'; None for what is not a Google resource."""
    if not resource_type.startswith("gcp:") or "/" not in resource_type:
        return None
    return resource_type.split(":", 2)[1].split("/", 1)[0]


@dataclass(frozen=True)
class DeclaredResource:
    """What the rule reads of a declared resource: its type, name, URN, the URNs it waits for, and for
    a Service the API it enables."""

    type: str
    name: str
    urn: str
    dependencies: tuple[str, ...] = ()
    service: str | None = None


@dataclass(frozen=True)
class ApiProblem:
    resource: DeclaredResource
    what: str
    fix: str

    def message(self) -> str:
        return f"{self.resource.name} ({self.resource.type}) {self.what}; {self.fix}"


def api_order_problems(resources: Iterable[DeclaredResource]) -> list[ApiProblem]:
    """Every Google resource whose API the stack does not enable, or that does not wait for it."""
    resources = list(resources)
    services = {r.service: r.urn for r in resources if r.type == SERVICE_TYPE and r.service}
    problems = []
    for resource in resources:
        module = module_of(resource.type)
        if module is None or resource.type == SERVICE_TYPE:
            continue
        api = API_OF_MODULE.get(module)
        if api is None:
            problems.append(ApiProblem(resource, f"calls an API accel does not know (module {module!r})",
                                       "add the module's API to API_OF_MODULE in policies/cloud/google_apis.py"))
        elif api not in services:
            problems.append(ApiProblem(resource, f"calls {api}, which the stack does not enable",
                                       f"declare gcp.projects.Service(service=\"{api}\", disable_on_destroy=False) "
                                       "(components/gcp/apis.py: plan_apis)"))
        elif services[api] not in resource.dependencies:
            problems.append(ApiProblem(resource, f"does not wait for {api} to be enabled",
                                       "build it with depends_on=GoogleApis.services (a GCP component passes its "
                                       "depends_on to its children through child_opts)"))
    return problems
