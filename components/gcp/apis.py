"""GoogleApis: the Google Cloud APIs a stack calls, enabled by the stack itself before anything uses them.

A fresh project has almost every API off, and the first create of a disabled one fails with "API has not
been used in project ... or it is disabled" (every GKE how-to starts with "Enable the Google Kubernetes
Engine API"; Managed Lustre on GKE: "Enable the Managed Lustre API and GKE API" and `gcloud services
enable servicenetworking.googleapis.com`, docs.cloud.google.com/kubernetes-engine/docs/how-to/
persistent-volumes/lustre-csi-driver-new-volume, read 2026-11-26). One `gcp.projects.Service` per API,
`disable_on_destroy=False`: destroying a training stack must not switch off an API other workloads of
the project use. Every GCP component of TrainingCluster depends on this one, so each API is on before
the first call that needs it.

Which API serves which resource is a table (`API_OF_MODULE`, keyed by the pulumi_gcp module of the
resource type); tests/test_gcp_apis.py checks that every resource a planned stack declares has its API
here and waits for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from accel.base.errors import invalid_arg
from accel.components.gcp._common import check_name, child_opts
from accel.policies.plan import Plan

COMPONENT = "GoogleApis"

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
# APIs a stack needs that no resource of its own calls: GKE Workload Identity exchanges tokens through
# the IAM Service Account Credentials API (GKE "Authenticate to Google Cloud APIs from GKE workloads":
# "Enable the IAM Service Account Credentials API").
WORKLOAD_IDENTITY_API = "iamcredentials.googleapis.com"
_SERVICE = "serviceusage.googleapis.com"  # enables the others; on in every project that can call it


def plan_apis(plan: Plan) -> tuple[str, ...]:
    """The APIs a GKE stack for `plan` calls (TrainingCluster's GCP build), in a stable order."""
    modules = ["compute", "container", "serviceaccount", "projects"]
    if plan.storage.dataset_bucket or plan.storage.checkpoint_bucket:
        modules.append("storage")
    if plan.storage.filesystem == "managed-lustre":
        modules += ["servicenetworking", "lustre"]
    elif plan.storage.filesystem == "filestore":
        modules.append("filestore")
    apis = [API_OF_MODULE[m] for m in modules]
    if not plan.storage.is_empty:
        apis.append(WORKLOAD_IDENTITY_API)  # pods reach storage as a Google service account
    return tuple(dict.fromkeys(apis))


@dataclass(frozen=True)
class GoogleApisArgs:
    project: str
    apis: Sequence[str]

    @classmethod
    def for_plan(cls, plan: Plan, *, project: str) -> "GoogleApisArgs":
        return cls(project=project, apis=plan_apis(plan))

    def __post_init__(self) -> None:
        if not self.project:
            raise invalid_arg(COMPONENT, "project", self.project, "the project whose APIs to enable")
        apis = list(self.apis)
        bad = [a for a in apis if not (isinstance(a, str) and a.endswith(".googleapis.com"))]
        if bad or not apis:
            raise invalid_arg(COMPONENT, "apis", bad or apis, "service names such as container.googleapis.com")
        if len(set(apis)) != len(apis):
            raise invalid_arg(COMPONENT, "apis", apis, "each API once")
        if _SERVICE in apis:
            raise invalid_arg(COMPONENT, "apis", _SERVICE, "the Service Usage API enables the others; it cannot "
                              "enable itself")


class GoogleApis(pulumi.ComponentResource):
    """One `gcp.projects.Service` per API; pass `services` as `depends_on` to whatever calls them."""

    def __init__(self, name: str, args: GoogleApisArgs, opts: pulumi.ResourceOptions | None = None):
        check_name(COMPONENT, name, longest_suffix="-servicenetworking")
        super().__init__("accel:gcp:GoogleApis", name, None, opts)
        self.services = [
            gcp.projects.Service(
                f"{name}-{api.split('.', 1)[0]}",
                project=args.project,
                service=api,
                # Leave the API on when the stack goes: other workloads of the project may use it.
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=child_opts(self),
            )
            for api in args.apis
        ]
        self.apis = tuple(args.apis)
        self.register_outputs({"apis": list(self.apis)})


def api_order_problems(resources: Sequence[dict]) -> list[str]:
    """Resources of a planned stack (`accel plan --json` shape) whose API is not enabled by the stack, or
    that do not wait for it: one message each naming the resource, the API and the fix. The rule:
    every `gcp:<module>/...` resource depends on the `gcp:projects/service:Service` of API_OF_MODULE[module]."""
    services = {r["inputs"].get("service"): r["urn"] for r in resources
                if r.get("type") == "gcp:projects/service:Service"}
    problems = []
    for resource in resources:
        kind = resource.get("type", "")
        if not kind.startswith("gcp:") or kind == "gcp:projects/service:Service" or "/" not in kind:
            continue
        module = kind.split(":", 2)[1].split("/", 1)[0]
        api = API_OF_MODULE.get(module)
        if api is None:
            problems.append(f"{resource['name']} ({kind}): no API is known for module {module!r}; add it to "
                            "API_OF_MODULE in components/gcp/apis.py")
        elif api not in services:
            problems.append(f"{resource['name']} ({kind}) calls {api}, which the stack does not enable; add it to "
                            "plan_apis (components/gcp/apis.py)")
        elif services[api] not in resource.get("dependencies", ()):
            problems.append(f"{resource['name']} ({kind}) does not wait for {api} to be enabled; build it with "
                            "depends_on=GoogleApis.services (its component's child_opts passes them on)")
    return problems
