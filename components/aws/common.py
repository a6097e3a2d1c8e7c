"""What the AWS components share: the argument error, tag rendering, IAM document helpers.

Nothing here imports pulumi_aws, so importing an args class never loads the provider.
"""

from __future__ import annotations

import inspect
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from accel.base.errors import invalid_arg
from accel.components.tags import ResourceTags, aws_tags_problem

# Tag keys that say "this goes away": data outlives the compute stack, so it never carries them.
_EXPIRY_KEYS = ("accel:ephemeral", "accel:expires-at", "accel:ttl")
DATA_ROLE_KEY = "accel:data-role"
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d$")
# The EKS system node group (EksClusterArgs' defaults) and the most nodes it scales to: EksCluster builds it
# from these and AwsNetworkArgs.for_plan sizes the GPU zone's subnet for it at that maximum, each node as the
# type of the list that holds the most addresses.
SYSTEM_NODES = 2
SYSTEM_INSTANCE_TYPES = ("m6i.xlarge",)


def system_max_nodes(system_nodes: int) -> int:
    """The system node group's max_size: twice its desired size (room for a rolling update and a burst)."""
    return 2 * system_nodes


def check_region(args_class: str, region: str) -> None:
    if not isinstance(region, str) or not _REGION.fullmatch(region):
        raise invalid_arg(args_class, "region", region, "expected an AWS region such as us-east-1 or us-west-2")


def check_zone(args_class: str, field: str, zone: str, region: str) -> None:
    # An Availability Zone (us-east-1a) or a Local Zone of the region (us-east-1-dfw-2a: P6e-GB200 UltraServers
    # are in the Dallas Local Zone, per the EKS UltraServer guide); a Local Zone must be opted in to first.
    if not isinstance(zone, str) or not re.fullmatch(re.escape(region) + r"([a-z]|-[a-z]{3}-\d[a-z])", zone):
        raise invalid_arg(args_class, field, zone,
                          f"expected an availability zone of {region}, e.g. {region}a, or a Local Zone such as {region}-dfw-2a")


def is_availability_zone(zone: str, region: str) -> bool:
    """An Availability Zone of the region (us-east-1a), not a Local Zone (us-east-1-dfw-2a): the EKS control plane
    takes subnets in Availability Zones only, two of them at least (EKS User Guide, "Amazon EKS and AWS Local
    Zones": the cluster's control plane runs in the Region; Local Zone subnets are for nodes)."""
    return re.fullmatch(re.escape(region) + "[a-z]", zone) is not None


def check_cidr(args_class: str, field: str, cidr: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(cidr, strict=True)
    except (ValueError, TypeError) as error:
        raise invalid_arg(args_class, field, cidr, f"expected an IPv4 CIDR block such as 10.0.0.0/16 ({error})") from None


def resource_tags(tags: ResourceTags, name: str | None = None, **extra: str) -> dict[str, str]:
    """The stack's tags in AWS form, plus a console `Name` when given."""
    rendered = tags.aws_tags(**extra)
    if name:
        rendered["Name"] = name
        problem = aws_tags_problem(rendered)
        if problem:
            raise invalid_arg("ResourceTags", "Name", name, problem)
    return rendered


def data_tags(tags: ResourceTags, role: str, name: str | None = None) -> dict[str, str]:
    """Tags for data that must survive the stack: the data role, and no expiry or ephemeral marker."""
    rendered = {k: v for k, v in resource_tags(tags, name, **{"data-role": role}).items() if k not in _EXPIRY_KEYS}
    assert rendered[DATA_ROLE_KEY] == role
    return rendered


def assume_role_policy(statements: Iterable[Mapping[str, Any]]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def service_trust(service: str, *actions: str) -> str:
    """A trust policy that lets one AWS service principal assume the role."""
    return assume_role_policy([{
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": list(actions) or ["sts:AssumeRole"],
    }])


def irsa_trust(provider_arn: str, issuer_url: str, subjects: Iterable[str]) -> str:
    """Trust for IAM Roles for Service Accounts: only these Kubernetes service accounts, audience STS."""
    host = issuer_url.removeprefix("https://")
    subject_list = sorted(subjects)
    return assume_role_policy([{
        "Effect": "Allow",
        "Principal": {"Federated": provider_arn},
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": {"StringEquals": {
            f"{host}:aud": "sts.amazonaws.com",
            f"{host}:sub": subject_list[0] if len(subject_list) == 1 else subject_list,
        }},
    }])


def managed_policy_arn(partition: str, policy: str) -> str:
    return f"arn:{partition}:iam::aws:policy/{policy}"


def template_version(version: Any) -> str:
    """EKS takes a launch template version as a string; "$Default" only before the template exists."""
    return str(version) if version is not None else "$Default"


def register_declared_outputs(component: Any) -> None:
    """Register as a component's outputs the attributes its class declares, in their order: the list of
    outputs is written once, at the top of the class; what it sets without declaring is for the code that
    builds on it, not an output."""
    component.register_outputs({name: getattr(component, name) for name in inspect.get_annotations(type(component))})
