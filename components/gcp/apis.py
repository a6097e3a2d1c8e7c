"""GoogleApis: the Google Cloud APIs a stack calls, enabled by the stack itself before anything uses them.

A fresh project has almost every API off, and the first create of a disabled one fails with "API has not
been used in project ... or it is disabled" (every GKE how-to starts with "Enable the Google Kubernetes
Engine API"; Managed Lustre on GKE: "Enable the Managed Lustre API and GKE API" and `gcloud services
enable servicenetworking.googleapis.com`, docs.cloud.google.com/kubernetes-engine/docs/how-to/
persistent-volumes/lustre-csi-driver-new-volume, read 2026-11-26). One `gcp.projects.Service` per API,
`disable_on_destroy=False`: destroying a training stack must not switch off an API other workloads of
the project use. Every GCP component of TrainingCluster depends on this one, so each API is on before
the first call that needs it.

Which API serves which resource is a table (policies/cloud/google_apis.py, keyed by the pulumi_gcp
module of the resource type); the mandatory guardrail google-apis-enabled checks that every resource a
stack declares has its API enabled and waits for it, and tests/test_gcp_apis.py mutates both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from accel.base.errors import invalid_arg
from accel.components.gcp._common import check_name, child_opts
from accel.policies.cloud.google_apis import (
    API_OF_MODULE,
    WORKLOAD_IDENTITY_API,
    DeclaredResource,
    api_order_problems as _api_order_problems,
)
from accel.policies.plan import Plan

COMPONENT = "GoogleApis"

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
    """The google-apis-enabled rule (policies/cloud/google_apis.py) over `accel plan --json` resources."""
    declared = [DeclaredResource(type=r.get("type", ""), name=r.get("name", ""), urn=r.get("urn", ""),
                                 dependencies=tuple(r.get("dependencies") or ()),
                                 service=(r.get("inputs") or {}).get("service"))
                for r in resources]
    return [problem.message() for problem in _api_order_problems(declared)]
