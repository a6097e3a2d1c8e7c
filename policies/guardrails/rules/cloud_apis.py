"""Cloud APIs: a Google Cloud stack enables every API it calls, and each resource waits for its API.

The table of which API each resource type calls, and the rule, are policies/cloud/google_apis.py (shared
with the component that enables them, components/gcp/apis.py).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationPolicy

from accel.policies.cloud.google_apis import DeclaredResource, api_order_problems
from accel.policies.guardrails.rules.common import get, violation

GOOGLE_APIS = "google-apis-enabled"


def _validate_google_apis(args, report) -> None:
    # A stack that enables no API leaves them to whoever owns the project (a library user's program on
    # an existing cluster); one that enables any (TrainingCluster always does) must enable all it calls.
    if not any(r.resource_type == "gcp:projects/service:Service" for r in args.resources):
        return
    by_urn = {}
    declared = []
    for resource in args.resources:
        service = get(resource.props, "service") if resource.resource_type == "gcp:projects/service:Service" else None
        item = DeclaredResource(type=resource.resource_type, name=resource.name, urn=resource.urn,
                                dependencies=tuple(d.urn for d in (getattr(resource, "dependencies", None) or [])),
                                service=service if isinstance(service, str) else None)
        by_urn[item.urn] = resource
        declared.append(item)
    for problem in api_order_problems(declared):
        resource = by_urn[problem.resource.urn]
        report(violation(resource, GOOGLE_APIS, problem.what, problem.fix), resource.urn)


POLICIES = [
    StackValidationPolicy(
        name=GOOGLE_APIS,
        description="Every Google Cloud API the stack calls is enabled by the stack, before the resources that call it.",
        validate=_validate_google_apis,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
