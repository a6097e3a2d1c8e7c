"""What every guardrail needs to read a resource the way the policy engine hands it over.

Policies receive camelCase input properties (`nodeConfig.machineType`), wrapped by
pulumi_policy so that reading a value that is unknown during preview raises. A guardrail
must not give up on a whole resource because one unrelated field is unknown, so every read
goes through `get`, which answers UNKNOWN instead of raising; rules skip a check whose
inputs are UNKNOWN rather than guessing.

Marker keys are the ones components/tags.py stamps: bare keys in GCP labels, `accel:` keys
in AWS tags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyConfigSchema, PolicyResource, ResourceValidationArgs
from pulumi_policy.proxy import UnknownValueError
from accel.base.units import UnitError, parse_ttl
from accel.policies.storage_types import STORAGE_TYPES  # noqa: F401 (re-exported to the rules)


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()
"""A value the engine does not know yet (preview); never equal to anything a rule expects."""

TRAINING_CLUSTER = "accel:cluster:TrainingCluster"
AWS_PREFIX = "accel:"

# --- reading properties -----------------------------------------------------------------


def get(props: Any, *path: str | int, default: Any = None) -> Any:
    """props[path[0]][path[1]]...; `default` when absent, UNKNOWN when not known yet."""
    current = props
    for key in path:
        if current is None or current is UNKNOWN:
            return default if current is None else UNKNOWN
        try:
            if isinstance(key, int):
                if not isinstance(current, Sequence) or isinstance(current, str):
                    return default
                current = current[key]
            else:
                if not isinstance(current, Mapping):
                    return default
                if key not in current:
                    return default
                current = current[key]
        except UnknownValueError:
            return UNKNOWN
        except (IndexError, KeyError, TypeError):
            return default
    return default if current is None else current


def items(value: Any) -> list[Any]:
    """A list property as a plain list (empty when absent or unknown)."""
    if value is None or value is UNKNOWN or isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return []
    out = []
    for index in range(len(value)):
        try:
            out.append(value[index])
        except UnknownValueError:
            out.append(UNKNOWN)
    return out


def mapping(value: Any) -> dict[str, Any]:
    """A map property (labels, tags) as a plain dict; unknown entries read as UNKNOWN."""
    if not isinstance(value, Mapping):
        return {}
    out = {}
    for key in list(value):
        try:
            out[str(key)] = value[key]
        except UnknownValueError:
            out[str(key)] = UNKNOWN
    return out


def plain(value: Any) -> Any:
    """Deep copy of a property into plain dicts/lists (unknowns become UNKNOWN)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in mapping(value).items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in items(value)]
    return value


def is_true(value: Any) -> bool:
    """True for true and "true" (AWS launch templates carry booleans as strings)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() == "false")


def number(value: Any) -> float | None:
    if isinstance(value, bool) or value is UNKNOWN or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return None


# --- which cloud, which markers ---------------------------------------------------------


def cloud(resource_type: str) -> str:
    return resource_type.split(":", 1)[0]


def marker_key(resource_type: str, key: str) -> str:
    """`data-role` on GCP labels, `accel:data-role` on AWS tags."""
    return f"{AWS_PREFIX}{key}" if cloud(resource_type) == "aws" else key


# Where each billable resource keeps its cloud labels/tags.
_LABEL_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "gcp:container/cluster:Cluster": (("resourceLabels",),),
    "gcp:container/nodePool:NodePool": (("nodeConfig", "resourceLabels"),),
    "gcp:tpu/v2Vm:V2Vm": (("labels",),),
    "gcp:storage/bucket:Bucket": (("labels",),),
    "gcp:filestore/instance:Instance": (("labels",),),
    "gcp:lustre/instance:Instance": (("labels",),),
    "gcp:compute/disk:Disk": (("labels",),),
    "gcp:compute/regionDisk:RegionDisk": (("labels",),),
    "gcp:compute/snapshot:Snapshot": (("labels",),),
    "gcp:parallelstore/instance:Instance": (("labels",),),
    "gcp:compute/instance:Instance": (("labels",),),
    "aws:eks/cluster:Cluster": (("tags",),),
    "aws:eks/nodeGroup:NodeGroup": (("tags",),),
    "aws:s3/bucket:Bucket": (("tags",),),
    "aws:s3/bucketV2:BucketV2": (("tags",),),
    "aws:fsx/lustreFileSystem:LustreFileSystem": (("tags",),),
    "aws:ebs/volume:Volume": (("tags",),),
    "aws:efs/fileSystem:FileSystem": (("tags",),),
    "aws:ebs/snapshot:Snapshot": (("tags",),),
    "aws:fsx/openZfsFileSystem:OpenZfsFileSystem": (("tags",),),
    "aws:fsx/ontapFileSystem:OntapFileSystem": (("tags",),),
    "aws:ec2/instance:Instance": (("tags",),),
    "aws:ec2/launchTemplate:LaunchTemplate": (("tags",),),
}
BILLABLE_TYPES = frozenset(t for t in _LABEL_PATHS if t != "aws:ec2/launchTemplate:LaunchTemplate")


class _UnknownLabels(dict):
    """A label map the engine does not know yet: every key reads as UNKNOWN."""

    def get(self, key: Any, default: Any = None) -> Any:
        return UNKNOWN


def labels(resource_type: str, props: Any) -> dict[str, Any]:
    """The cloud labels (GCP) or tags (AWS) of a resource, merged from where it keeps them."""
    merged: dict[str, Any] = {}
    for path in _LABEL_PATHS.get(resource_type, ()):
        value = get(props, *path)
        if value is UNKNOWN:
            return _UnknownLabels()
        merged.update(mapping(value))
    if resource_type == "aws:ec2/launchTemplate:LaunchTemplate":
        for spec in items(get(props, "tagSpecifications")):
            merged.update(mapping(get(spec, "tags")))
    return merged


def label(resource_type: str, props: Any, key: str) -> Any:
    """One marker (`owner`, `data-role`, `ephemeral`, ...) in the resource's dialect."""
    return labels(resource_type, props).get(marker_key(resource_type, key))


BUCKET_TYPES = frozenset({"gcp:storage/bucket:Bucket", "aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})
DATA_ROLES = ("dataset", "checkpoint")


def data_role(resource_type: str, props: Any) -> str | None:
    """`dataset` or `checkpoint` when the resource is marked as holding data, else None."""
    if resource_type not in STORAGE_TYPES:
        return None
    role = label(resource_type, props, "data-role")
    return role if role in DATA_ROLES else None


# --- retention options ------------------------------------------------------------------


def retain_on_delete(opts: Any) -> bool | None:
    """retainOnDelete when the runner can see it, None when it cannot.

    The analyzer protocol (pulumi-policy 1.21) carries protect but not retainOnDelete, so
    under `pulumi preview --policy-pack` this is None; the offline runner fills it in.
    """
    value = getattr(opts, "retain_on_delete", None)
    return None if value is None else bool(value)


def abandons_on_delete(props: Any) -> bool:
    """GCP resources can also say so in their own inputs: deletionPolicy ABANDON or PREVENT."""
    policy = get(props, "deletionPolicy")
    return isinstance(policy, str) and policy.upper() in ("ABANDON", "PREVENT")


# --- spot capacity ----------------------------------------------------------------------


def uses_spot(resource_type: str, props: Any) -> bool:
    if resource_type == "gcp:container/nodePool:NodePool":
        return is_true(get(props, "nodeConfig", "spot")) or is_true(get(props, "nodeConfig", "preemptible"))
    if resource_type == "gcp:tpu/v2Vm:V2Vm":
        return is_true(get(props, "schedulingConfig", "spot")) or is_true(get(props, "schedulingConfig", "preemptible"))
    if resource_type == "gcp:compute/instance:Instance":
        model = get(props, "scheduling", "provisioningModel")
        return (isinstance(model, str) and model.upper() == "SPOT") or is_true(get(props, "scheduling", "preemptible"))
    if resource_type == "aws:eks/nodeGroup:NodeGroup":
        capacity = get(props, "capacityType")
        return isinstance(capacity, str) and capacity.upper() == "SPOT"
    if resource_type in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance"):
        market = get(props, "instanceMarketOptions", "marketType")
        return isinstance(market, str) and market.lower() == "spot"
    return False


# --- the composing component's plan-level facts ------------------------------------------


class ClusterFacts:
    """What `accel:cluster:TrainingCluster` says about the run: plan, cost, lifetime."""

    def __init__(self, props: Any):
        plan = get(props, "plan")
        if isinstance(plan, str):
            try:
                plan = json.loads(plan)
            except ValueError:
                plan = None
        self.plan: dict[str, Any] = plain(plan) if isinstance(plan, Mapping) else {}
        self.hourly_usd = _first_number(get(props, "hourlyUsd"), get(self.plan, "estimate", "hourly_usd"))
        self.run_usd = _first_number(get(props, "runUsd"), get(self.plan, "estimate", "total_usd"))
        self.ephemeral = is_true(get(props, "ephemeral"))
        self.expires_at = _text(get(props, "expiresAt"))
        self.ttl = _text(get(props, "ttl"))
        self.spot_policy = get(self.plan, "workload", "constraints", "spot")
        self.workload_budget_usd = number(get(self.plan, "workload", "constraints", "budget_usd"))
        # Plan schema 2 keeps the capacity type in one field; `spot` beside it is derived from it.
        self.spot = get(self.plan, "capacity", "provisioning") == "spot"
        self.workload_name = get(self.plan, "workload", "name")

    @property
    def short_lived(self) -> bool:
        """Ephemeral by declaration, or on spot capacity (which is reaped the same way)."""
        return self.ephemeral or self.spot


def _first_number(*values: Any) -> float | None:
    for value in values:
        parsed = number(value)
        if parsed is not None:
            return parsed
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def cluster_facts(resources: Sequence[PolicyResource]) -> tuple[PolicyResource, ClusterFacts] | None:
    for resource in resources:
        if resource.resource_type == TRAINING_CLUSTER:
            return resource, ClusterFacts(resource.props)
    return None


# --- messages and config ----------------------------------------------------------------


def describe(resource: ResourceValidationArgs | PolicyResource) -> str:
    return f"{resource.resource_type} '{resource.name}'"


def violation(resource: ResourceValidationArgs | PolicyResource, rule_id: str, what: str, fix: str) -> str:
    """One line a person can act on: which resource, which rule, what is wrong, how to fix it."""
    return f"{describe(resource)} violates {rule_id}: {what}. Fix: {fix}."


def flagger(resource: ResourceValidationArgs | PolicyResource, report: Callable[[str], None],
            rule_id: str) -> Callable[[str, str], None]:
    """`flag(what, fix)`: report one violation of `rule_id` on `resource` (a rule that can find
    several things wrong with one resource calls it once per finding)."""
    return lambda what, fix: report(violation(resource, rule_id, what, fix))


def schema(**properties: dict[str, Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=properties)


def config(args: Any) -> Mapping[str, Any]:
    return args.get_config() or {}


def ttl_hours(ttl: str) -> float | None:
    """Hours in a TTL of the grammar `accel reap` reads (accel.base.units.parse_ttl); None when unreadable."""
    try:
        return parse_ttl(ttl).total_seconds() / 3600
    except UnitError:
        return None
