"""Guardrail rules as specifications: for each rule, a compliant graph passes and a violating graph
fails with the expected message, both through the offline runner and through policy arguments
built by hand the way the CLI's analyzer builds them.

Fixtures are captured-resource dicts (the `accel plan --json` shape) with camelCase inputs, as
the engine sees them; numbers are floats because the engine's protobuf structs carry them so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from pulumi_policy import (
    PolicyConfigSchema,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE, unknown_checking_proxy

from accel.policies.guardrails import offline
from accel.policies.guardrails.rules import all_policies

STACK = "urn:pulumi:test::accel"


def resource(type_: str, name: str, inputs: dict[str, Any] | None = None, *, parent: str | None = None,
             retain: bool = False, protect: bool = False, custom: bool = True) -> dict[str, Any]:
    return {
        "type": type_,
        "name": name,
        "urn": f"{STACK}::{type_}::{name}",
        "parent": parent,
        "custom": custom,
        "inputs": inputs or {},
        "retain_on_delete": retain,
        "protect": protect,
    }


def plan(*, cloud: str = "gcp", spot: bool = False, spot_policy: str = "allowed", budget_usd: float | None = None,
         hourly_usd: float = 100.0, total_usd: float = 10_000.0, gpu: dict | None = None) -> dict[str, Any]:
    """The parts of a Plan (policies/plan.py, model_dump(mode='json')) the guardrails read."""
    constraints: dict[str, Any] = {"clouds": [cloud], "spot": spot_policy}
    if budget_usd is not None:
        constraints["budget_usd"] = budget_usd
    return {
        "schema_version": 1,
        "workload": {"name": "llama-8b-finetune", "kind": "finetune", "constraints": constraints},
        "cloud": cloud,
        "region": "us-central1" if cloud == "gcp" else "us-east-1",
        "zones": ["us-central1-a"] if cloud == "gcp" else ["us-east-1a"],
        "family": "gpu" if gpu else "tpu",
        "chosen": {"cloud": cloud, "spot": spot, "hourly_usd": hourly_usd, "total_usd": total_usd},
        "capacity": {"spot": spot, "provisioning": "spot" if spot else "on-demand"},
        "gpu": gpu,
        "estimate": {"hourly_usd": hourly_usd, "total_usd": total_usd, "hours": total_usd / hourly_usd},
    }


def training_cluster(name: str = "train", *, plan_json: dict | None = None, hourly_usd: float | None = None,
                     run_usd: float | None = None, ephemeral: bool = False, expires_at: str | None = None,
                     ttl: str | None = None) -> dict[str, Any]:
    plan_json = plan_json or plan()
    return resource("accel:cluster:TrainingCluster", name, {
        "plan": plan_json,
        "hourlyUsd": plan_json["estimate"]["hourly_usd"] if hourly_usd is None else hourly_usd,
        "runUsd": plan_json["estimate"]["total_usd"] if run_usd is None else run_usd,
        "ephemeral": ephemeral,
        "expiresAt": expires_at,
        "ttl": ttl,
    }, custom=False)


OWNER_LABELS = {"owner": "ml-platform", "workload": "llama-8b-finetune", "cost-center": "research"}
OWNER_TAGS = {f"accel:{k}": v for k, v in OWNER_LABELS.items()}


def gcs_bucket(name: str = "ckpt", *, role: str | None = "checkpoint", retain: bool = True, protect: bool = False,
               **inputs: Any) -> dict[str, Any]:
    labels = dict(OWNER_LABELS)
    if role:
        labels["data-role"] = role
    body = {"location": "US", "forceDestroy": False, "publicAccessPrevention": "enforced",
            "uniformBucketLevelAccess": True, "versioning": {"enabled": True}, "labels": labels}
    body.update(inputs)
    return resource("gcp:storage/bucket:Bucket", name, body, retain=retain, protect=protect)


def s3_bucket(name: str = "ckpt", *, role: str | None = "checkpoint", retain: bool = True, **inputs: Any) -> dict:
    tags = dict(OWNER_TAGS)
    if role:
        tags["accel:data-role"] = role
    return resource("aws:s3/bucket:Bucket", name, {"forceDestroy": False, "tags": tags, **inputs}, retain=retain)


def gke_pool(name: str = "pool", *, machine: str = "a3-highgpu-8g", accelerators: list | None = None,
             taints: list | None = None, labels: dict | None = None, **inputs: Any) -> dict[str, Any]:
    node_config: dict[str, Any] = {
        "machineType": machine,
        "resourceLabels": OWNER_LABELS if labels is None else labels,
        "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
    }
    if accelerators is not None:
        node_config["guestAccelerators"] = accelerators
    if taints is not None:
        node_config["taints"] = taints
    node_config.update(inputs.pop("node_config", {}))
    body = {"location": "us-central1", "nodeLocations": ["us-central1-a"], "nodeCount": 2.0,
            "nodeConfig": node_config, **inputs}
    return resource("gcp:container/nodePool:NodePool", name, body)


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}
H100_X8 = [{"type": "nvidia-h100-80gb", "count": 8.0}]


def tpu_pool(name: str = "slice-0", *, machine: str = "ct5p-hightpu-4t", topology: str | None = "2x2x2",
             nodes: float = 2.0, placement: str = "COMPACT") -> dict[str, Any]:
    body: dict[str, Any] = {
        "location": "us-east5", "nodeLocations": ["us-east5-a"], "nodeCount": nodes,
        "nodeConfig": {"machineType": machine, "resourceLabels": OWNER_LABELS,
                       "shieldedInstanceConfig": {"enableSecureBoot": True}},
    }
    if topology is not None:
        body["placementPolicy"] = {"type": placement, "tpuTopology": topology}
    return resource("gcp:container/nodePool:NodePool", name, body)


def eks_block_group(name: str = "gpu-nodes", *, desired: float = 0.0) -> dict[str, Any]:
    """An EKS managed node group on a capacity block (what GpuNodeGroup declares, trimmed)."""
    return resource("aws:eks/nodeGroup:NodeGroup", name, {
        "capacityType": "CAPACITY_BLOCK", "amiType": "AL2023_x86_64_NVIDIA",
        "scalingConfig": {"minSize": 0.0, "desiredSize": desired, "maxSize": 4.0},
        "launchTemplate": {"id": "lt-1", "version": "1"}, "tags": OWNER_TAGS,
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]})


def block_schedules(group: str = "gpu-nodes") -> list[dict[str, Any]]:
    """Scale out at the block's start, in before its end; each depends on the node group (its ASG name)."""
    actions = []
    for role, start, desired in (("scale-out", "2030-01-06T11:30:00Z", 4.0), ("scale-in", "2030-01-13T10:30:00Z", 0.0)):
        action = resource("aws:autoscaling/schedule:Schedule", f"gpu-{role}", {
            "autoscalingGroupName": None, "scheduledActionName": f"gpu-{role}", "startTime": start,
            "minSize": 0.0, "maxSize": 4.0, "desiredCapacity": desired})
        action["dependencies"] = [f"{STACK}::aws:eks/nodeGroup:NodeGroup::{group}"]
        actions.append(action)
    return actions


def v5p_slices(count: int) -> list[dict[str, Any]]:
    """`count` TPU v5p 2x2x2 slice pools (2 hosts, 8 chips each): what a pinned `tpu.slices: count` builds."""
    return [tpu_pool(f"slice-{index}") for index in range(count)]


@dataclass
class Case:
    """One rule's specification: a compliant graph passes it, a violating graph fails it with `expect`."""

    rule: str
    compliant: list[dict[str, Any]]
    violating: list[dict[str, Any]]
    expect: str
    level: str
    config: dict[str, Any] = field(default_factory=dict)
    stack_tags: dict[str, str] = field(default_factory=dict)

    @property
    def culprit(self) -> str:
        """The name of the resource the violation must name (the last one in the violating graph)."""
        return self.violating[-1]["name"]


CASES = [
    Case("budget-hourly-limit",
         [*v5p_slices(4), training_cluster()], [*v5p_slices(40), training_cluster()],
         "the declared fleet costs", "mandatory", config={"maxHourlyUsd": 1000}),
    Case("budget-run-limit",
         [*v5p_slices(4), training_cluster(plan_json=plan(budget_usd=100_000, hourly_usd=100.0, total_usd=50_000.0))],
         [*v5p_slices(40), training_cluster(plan_json=plan(budget_usd=100_000, hourly_usd=100.0, total_usd=50_000.0))],
         "over the budget $100,000 (the workload's constraints.budget_usd)", "mandatory"),
    Case("data-retained-on-delete",
         [gcs_bucket(retain=True)], [gcs_bucket(retain=False)],
         "it holds checkpoints but neither retain_on_delete nor protect is set", "mandatory"),
    Case("data-no-force-destroy",
         [gcs_bucket(forceDestroy=False)], [s3_bucket(forceDestroy=True)],
         "forceDestroy is true, so deleting the bucket deletes every object in it", "mandatory"),
    Case("checkpoint-versioning",
         [s3_bucket("ckpt"), resource("aws:s3/bucketVersioning:BucketVersioning", "ckpt-versioning",
                                      {"versioningConfiguration": {"status": "Enabled"}})],
         [s3_bucket("ckpt")],
         "versioning is off (no BucketVersioning resource enables it)", "mandatory"),
    Case("ephemeral-stack-keeps-data",
         [training_cluster(ephemeral=True, ttl="72h"), gcs_bucket(retain=True)],
         [training_cluster(ephemeral=True, ttl="72h"), gcs_bucket(retain=False, protect=True)],
         "this checkpoint store is protect=True, so `accel reap` cannot tear the stack down", "mandatory"),
    Case("storage-declares-data-role",
         [gcs_bucket("scratch", role="scratch")], [gcs_bucket("scratch", role=None)],
         "it has no data-role label", "advisory"),
    Case("ephemeral-has-expiry",
         [gke_pool(accelerators=H100_X8, taints=[GPU_TAINT], labels={**OWNER_LABELS, "ephemeral": "true",
                                                                      "expires-at": "2026-11-22t18-00-00z"},
                   node_config={"spot": True})],
         [gke_pool(accelerators=H100_X8, taints=[GPU_TAINT], node_config={"spot": True})],
         "it runs on spot capacity but has no expires-at or ttl label", "mandatory"),
    Case("spot-allowed-by-workload",
         [training_cluster(plan_json=plan(spot_policy="never")), gke_pool(accelerators=H100_X8)],
         [training_cluster(plan_json=plan(spot_policy="never")),
          gke_pool(accelerators=H100_X8, node_config={"spot": True})],
         "it runs on spot capacity but workload 'llama-8b-finetune' sets constraints.spot: never", "mandatory"),
    Case("no-public-node-ips",
         [resource("gcp:tpu/v2Vm:V2Vm", "vm", {"acceleratorType": "v5p-16", "networkConfig": {"enableExternalIps": False}})],
         [resource("gcp:tpu/v2Vm:V2Vm", "vm", {"acceleratorType": "v5p-16", "networkConfig": {"enableExternalIps": True}})],
         "networkConfig.enableExternalIps is true, so every TPU host gets a public IP", "mandatory"),
    Case("no-public-buckets",
         [resource("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "ckpt-pab",
                   {"blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True,
                    "restrictPublicBuckets": True})],
         [resource("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "ckpt-pab",
                   {"blockPublicAcls": True, "blockPublicPolicy": False, "ignorePublicAcls": True,
                    "restrictPublicBuckets": True})],
         "blockPublicPolicy is not true, so public access is not fully blocked", "mandatory"),
    Case("no-open-ingress",
         [resource("gcp:compute/firewall:Firewall", "ssh", {"direction": "INGRESS", "sourceRanges": ["35.235.240.0/20"],
                                                            "allows": [{"protocol": "tcp", "ports": ["22"]}]})],
         [resource("gcp:compute/firewall:Firewall", "ssh", {"direction": "INGRESS", "sourceRanges": ["0.0.0.0/0"],
                                                            "allows": [{"protocol": "tcp", "ports": ["22"]}]})],
         "it allows tcp 22 from 0.0.0.0/0", "mandatory"),
    Case("control-plane-not-world-open",
         [resource("aws:eks/cluster:Cluster", "eks", {"vpcConfig": {"endpointPublicAccess": False,
                                                                    "endpointPrivateAccess": True}})],
         [resource("aws:eks/cluster:Cluster", "eks", {"vpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]}})],
         "its Kubernetes API endpoint is public and open to 0.0.0.0/0", "mandatory"),
    Case("exposure-on-development-stack",
         [resource("aws:eks/cluster:Cluster", "eks", {"vpcConfig": {"endpointPublicAccess": False,
                                                                    "endpointPrivateAccess": True}})],
         [resource("aws:eks/cluster:Cluster", "eks", {"vpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]}})],
         "(control-plane-not-world-open, not blocking on a development stack) its Kubernetes API endpoint is public",
         "advisory", stack_tags={"accel:environment": "development"}),
    Case("imdsv2-required",
         [resource("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt", {"metadataOptions": {"httpTokens": "required"}})],
         [resource("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt", {"metadataOptions": {"httpTokens": "optional"}})],
         "metadataOptions.httpTokens is optional, so IMDSv1 stays reachable", "mandatory"),
    Case("workload-identity",
         [resource("gcp:container/cluster:Cluster", "gke", {"workloadIdentityConfig": {"workloadPool": "p.svc.id.goog"}})],
         [resource("gcp:container/cluster:Cluster", "gke", {"location": "us-central1"})],
         "Workload Identity is off, so pods act with the node service account", "advisory"),
    Case("shielded-nodes",
         [gke_pool(accelerators=H100_X8, taints=[GPU_TAINT])],
         [gke_pool(accelerators=H100_X8, taints=[GPU_TAINT], node_config={"shieldedInstanceConfig": {}})],
         "secure boot is not enabled", "advisory"),
    Case("tpu-topology-valid",
         [tpu_pool(topology="2x2x2", nodes=2.0)], [tpu_pool(topology="2x2x2", nodes=3.0)],
         "a 2x2x2 slice on ct5p-hightpu-4t is 2 node(s), but the pool asks for 3", "mandatory"),
    Case("gpu-node-pool-tainted",
         [gke_pool(accelerators=H100_X8, taints=[GPU_TAINT])], [gke_pool(accelerators=H100_X8, taints=[])],
         "GPU nodes have no nvidia.com/gpu NoSchedule taint", "mandatory"),
    Case("gpu-count-matches-machine",
         [gke_pool(machine="a3-megagpu-8g", accelerators=[{"type": "nvidia-h100-mega-80gb", "count": 8.0}],
                   taints=[GPU_TAINT])],
         [gke_pool(machine="a3-megagpu-8g", accelerators=[{"type": "nvidia-h100-mega-80gb", "count": 4.0}],
                   taints=[GPU_TAINT])],
         "a3-megagpu-8g comes with 8 x nvidia-h100-mega-80gb, the pool declares 4 x nvidia-h100-mega-80gb",
         "mandatory"),
    Case("compact-placement-single-zone",
         [tpu_pool()],
         [gke_pool(accelerators=H100_X8, taints=[GPU_TAINT], placementPolicy={"type": "COMPACT"},
                   nodeLocations=["us-central1-a", "us-central1-b"])],
         "COMPACT placement spans 2 zones (us-central1-a, us-central1-b); it needs one", "mandatory"),
    Case("gpu-fabric-present",
         [training_cluster(plan_json=plan(gpu={"machine_type": "a3-megagpu-8g", "fabric": "gpudirect-tcpxo",
                                               "extra_networks": 8, "gpus_per_node": 8, "nodes": 2})),
          gke_pool(machine="a3-megagpu-8g", taints=[GPU_TAINT],
                   networkConfig={"additionalNodeNetworkConfigs": [{"network": f"gpu-{i}", "subnetwork": f"gpu-{i}"}
                                                                   for i in range(8)]})],
         [training_cluster(plan_json=plan(gpu={"machine_type": "a3-megagpu-8g", "fabric": "gpudirect-tcpxo",
                                               "extra_networks": 8, "gpus_per_node": 8, "nodes": 2})),
          gke_pool(machine="a3-megagpu-8g", taints=[GPU_TAINT],
                   networkConfig={"additionalNodeNetworkConfigs": [{"network": f"gpu-{i}", "subnetwork": f"gpu-{i}"}
                                                                   for i in range(4)]})],
         "the plan asks for gpudirect-tcpxo with 8 extra networks, the pool attaches 4", "mandatory"),
    Case("gke-capacity-rules",
         [gke_pool(taints=[GPU_TAINT], queuedProvisioning={"enabled": True}, node_config={"flexStart": True})],
         [gke_pool(taints=[GPU_TAINT], placementPolicy={"type": "COMPACT"}, queuedProvisioning={"enabled": True},
                   node_config={"flexStart": True})],
         "GKE rejects COMPACT placement on a queued-provisioning GPU pool (a3-highgpu-8g)", "mandatory"),
    Case("capacity-mode-limits",
         [gke_pool(taints=[GPU_TAINT], node_config={"flexStart": True, "maxRunDuration": "604800s"})],
         [gke_pool(taints=[GPU_TAINT], node_config={"flexStart": True, "maxRunDuration": "1209600s"})],
         "flex-start capacity runs at most 7 days per request", "mandatory"),
    Case("capacity-block-scheduled",
         [eks_block_group(desired=0), *block_schedules()],
         [*block_schedules()[:1], eks_block_group(desired=0)],
         "its Auto Scaling group has no scheduled scale-in to 0 before its end", "mandatory"),
    Case("google-apis-enabled",
         [resource("gcp:projects/service:Service", "storage-api", {"service": "storage.googleapis.com"}),
          {**gcs_bucket(), "dependencies": [f"{STACK}::gcp:projects/service:Service::storage-api"]}],
         [resource("gcp:projects/service:Service", "storage-api", {"service": "storage.googleapis.com"}),
          gcs_bucket()],
         "does not wait for storage.googleapis.com to be enabled", "mandatory"),
    Case("ownership-labels",
         [gcs_bucket()], [gcs_bucket(labels={**OWNER_LABELS, "owner": "unknown", "data-role": "checkpoint"})],
         "placeholder values owner='unknown', so its cost cannot be attributed", "advisory"),
]


# --- policy arguments built by hand, the way the CLI's analyzer builds them -------------

POLICIES = {p.name: p for p in all_policies()}


def hand_options(raw: dict[str, Any], *, with_retain: bool = True) -> PolicyResourceOptions:
    opts = PolicyResourceOptions(raw["protect"], [], None, [], PolicyCustomTimeouts(0, 0, 0), [], raw["parent"])
    if with_retain:  # the analyzer protocol has no retainOnDelete; the offline runner adds it
        opts.retain_on_delete = raw["retain_on_delete"]
    return opts


def hand_props(raw: dict[str, Any]) -> Any:
    return unknown_checking_proxy(deserialize_properties(raw["inputs"]))


def schema_defaults(schema: PolicyConfigSchema | None) -> dict[str, Any]:
    return {k: v["default"] for k, v in (schema.properties if schema else {}).items() if "default" in v}


def run_by_hand(rule: str, graph: list[dict[str, Any]], config: dict[str, Any] | None = None,
                *, with_retain: bool = True, stack_tags: dict[str, str] | None = None) -> list[str]:
    """Messages one policy reports for `graph`, called directly with hand-built arguments."""
    policy = POLICIES[rule]
    settings = {**schema_defaults(policy.config_schema), **(config or {})}
    messages: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        messages.append(message)

    if isinstance(policy, ResourceValidationPolicy):
        for raw in graph:
            args = ResourceValidationArgs(raw["type"], hand_props(raw), raw["urn"], raw["name"],
                                          hand_options(raw, with_retain=with_retain), None, settings,
                                          stack_tags)
            policy.validate(args, report)
    else:
        resources = [PolicyResource(raw["type"], hand_props(raw), raw["urn"], raw["name"],
                                    hand_options(raw, with_retain=with_retain), None, None, [], {})
                     for raw in graph]
        by_urn = {resource.urn: resource for resource in resources}
        for resource, raw in zip(resources, graph):  # as the CLI's analyzer links them
            resource.dependencies = [by_urn[urn] for urn in raw.get("dependencies", []) if urn in by_urn]
        policy.validate(StackValidationArgs(resources, settings, stack_tags), report)
    return messages


def offline_violations(rule: str, graph: list[dict[str, Any]], config: dict[str, Any] | None = None,
                       stack_tags: dict[str, str] | None = None) -> list[dict]:
    pack_config = {rule: config} if config else None
    return [v for v in offline.evaluate(graph, pack_config, stack_tags=stack_tags) if v["policy"] == rule]


def test_every_rule_has_a_specification():
    assert sorted(c.rule for c in CASES) == sorted(POLICIES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.rule)
def test_compliant_graph_passes_offline(case: Case):
    assert offline_violations(case.rule, case.compliant, case.config, case.stack_tags) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.rule)
def test_violating_graph_fails_offline_with_a_message_that_names_resource_rule_and_fix(case: Case):
    found = offline_violations(case.rule, case.violating, case.config, case.stack_tags)
    assert len(found) == 1, found
    violation = found[0]
    assert violation["level"] == case.level
    assert violation["resource"] == case.violating[-1]["urn"]
    assert case.expect in violation["message"]
    assert f"'{case.culprit}'" in violation["message"]
    assert f"violates {case.rule}:" in violation["message"]
    assert ". Fix: " in violation["message"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.rule)
def test_compliant_graph_passes_with_hand_built_args(case: Case):
    assert run_by_hand(case.rule, case.compliant, case.config, stack_tags=case.stack_tags) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.rule)
def test_violating_graph_fails_with_hand_built_args(case: Case):
    messages = run_by_hand(case.rule, case.violating, case.config, stack_tags=case.stack_tags)
    assert len(messages) == 1 and case.expect in messages[0], messages


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.rule)
def test_default_level_is_the_documented_one(case: Case):
    assert POLICIES[case.rule].enforcement_level.value == case.level


# --- rule details beyond the one-line specification -------------------------------------


def messages_for(rule: str, graph: list[dict[str, Any]], config: dict[str, Any] | None = None) -> list[str]:
    return [v["message"] for v in offline_violations(rule, graph, config)]


def test_budget_rules_say_nothing_about_a_stack_that_declares_nothing_priced():
    assert offline.evaluate([gcs_bucket()], {"budget-hourly-limit": {"maxHourlyUsd": 1},
                                             "budget-run-limit": {"maxRunUsd": 1}}) == []


def test_budget_hourly_limit_says_nothing_when_no_limit_is_configured():
    assert messages_for("budget-hourly-limit", [*v5p_slices(400), training_cluster()]) == []


def test_budget_hourly_limit_prices_the_declared_pools_not_the_plan_figures():
    cheap_plan = training_cluster(hourly_usd=1.0, run_usd=1.0, plan_json=plan(hourly_usd=1.0, total_usd=1.0))
    [message] = messages_for("budget-hourly-limit", [*v5p_slices(40), cheap_plan], {"maxHourlyUsd": 1_000})
    assert "40 accelerator pool(s), 80 node(s), 320 chip(s) declared" in message


def test_budget_hourly_limit_applies_to_a_stack_without_a_training_cluster():
    [violation] = offline_violations("budget-hourly-limit", v5p_slices(40), {"maxHourlyUsd": 1_000})
    assert violation["message"].startswith("the stack violates budget-hourly-limit:")


def test_budget_lists_unpriced_resources_instead_of_guessing_them():
    unknown = tpu_pool("mystery", machine="ct9z-imaginary-4t", topology=None)
    [message] = messages_for("budget-hourly-limit", [*v5p_slices(40), unknown, training_cluster()],
                             {"maxHourlyUsd": 1_000})
    assert "unpriced, not counted: mystery (machine type ct9z-imaginary-4t is not in catalog" in message


def test_budget_refuses_a_limit_it_cannot_confirm_when_a_pool_size_is_unknown():
    from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE

    pool = tpu_pool("slice-x")
    pool["inputs"]["nodeCount"] = UNKNOWN_NUMBER_VALUE
    [message] = messages_for("budget-hourly-limit", [pool, training_cluster()], {"maxHourlyUsd": 1_000_000})
    assert "1 accelerator pool(s) cannot be priced (slice-x)" in message


def test_budget_run_limit_uses_the_stricter_of_config_and_workload_budget():
    cluster = training_cluster(plan_json=plan(budget_usd=500_000, hourly_usd=100.0, total_usd=50_000.0))
    [message] = messages_for("budget-run-limit", [*v5p_slices(40), cluster], {"maxRunUsd": 150_000})
    assert "$150,000 (maxRunUsd in the policy config)" in message


def test_budget_run_limit_can_ignore_the_workload_budget():
    cluster = training_cluster(plan_json=plan(budget_usd=100_000, hourly_usd=100.0, total_usd=50_000.0))
    assert messages_for("budget-run-limit", [*v5p_slices(40), cluster], {"useWorkloadBudget": False}) == []


def test_budget_run_limit_multiplies_the_declared_cost_by_the_plan_run_length():
    from accel.policies.catalog import load_catalog
    from accel.policies.cloud.pricing import price_resources

    pools = v5p_slices(40)
    hourly = price_resources([(p["type"], p["name"], p["inputs"]) for p in pools], load_catalog()).hourly_usd
    cluster = training_cluster(plan_json=plan(hourly_usd=100.0, total_usd=50_000.0))  # a 500 h run
    [message] = messages_for("budget-run-limit", [*pools, cluster], {"maxRunUsd": 1})
    assert f"the declared fleet costs ${hourly * 500:,.0f} over the Plan's 500.0 h run" in message


def test_plan_may_arrive_as_a_json_string():
    import json
    cluster = training_cluster(plan_json=plan(budget_usd=100_000, hourly_usd=100.0, total_usd=50_000.0))
    cluster["inputs"]["plan"] = json.dumps(cluster["inputs"]["plan"])
    assert len(messages_for("budget-run-limit", [*v5p_slices(40), cluster])) == 1


def test_gcp_deletion_policy_abandon_counts_as_retained():
    bucket = gcs_bucket(retain=False, deletionPolicy="ABANDON")
    assert messages_for("data-retained-on-delete", [bucket]) == []


def test_protect_counts_as_retained_outside_ephemeral_stacks():
    assert messages_for("data-retained-on-delete", [gcs_bucket(retain=False, protect=True)]) == []


def test_unmarked_storage_is_not_held_to_data_rules():
    assert messages_for("data-retained-on-delete", [gcs_bucket("tmp", role=None, retain=False)]) == []


def test_without_retain_on_delete_in_the_options_the_cli_cannot_judge_retention():
    # Under `pulumi preview --policy-pack` the analyzer sends protect but not retainOnDelete.
    assert run_by_hand("data-retained-on-delete", [gcs_bucket(retain=False)], with_retain=False) == []


def test_gcp_checkpoint_bucket_with_soft_delete_but_no_versioning_passes():
    bucket = gcs_bucket(versioning={"enabled": False}, softDeletePolicy={"retentionDurationSeconds": 604800.0})
    assert messages_for("checkpoint-versioning", [bucket]) == []


def test_gcp_checkpoint_bucket_without_versioning_or_soft_delete_fails():
    bucket = gcs_bucket(versioning={"enabled": False}, softDeletePolicy={"retentionDurationSeconds": 0.0})
    [message] = messages_for("checkpoint-versioning", [bucket])
    assert "neither object versioning nor a soft delete policy" in message


def test_aws_versioning_resource_is_linked_by_bucket_name():
    bucket = s3_bucket("ckpt", bucket="llama-ckpt")
    versioning = resource("aws:s3/bucketVersioning:BucketVersioning", "v",
                          {"bucket": "llama-ckpt", "versioningConfiguration": {"status": "Suspended"}})
    [message] = messages_for("checkpoint-versioning", [bucket, versioning])
    assert "its BucketVersioning says 'Suspended'" in message


def test_ephemeral_stack_is_recognised_from_resource_labels_alone():
    pool = gke_pool(accelerators=H100_X8, taints=[GPU_TAINT],
                    labels={**OWNER_LABELS, "ephemeral": "true", "ttl": "24h"})
    [message] = messages_for("ephemeral-stack-keeps-data", [pool, gcs_bucket(retain=False)])
    assert "tearing it down would delete this checkpoint store" in message


def test_spot_cluster_without_expiry_fails():
    cluster = training_cluster(plan_json=plan(spot=True))
    [message] = messages_for("ephemeral-has-expiry", [cluster])
    assert "the cluster is on spot capacity but has no expiresAt or ttl" in message


def test_ttl_longer_than_the_configured_cap_fails():
    cluster = training_cluster(ephemeral=True, ttl="30d")
    [message] = messages_for("ephemeral-has-expiry", [cluster], {"maxTtlHours": 336})
    assert "exceeds maxTtlHours=336" in message


def test_unparseable_expiry_fails():
    [message] = messages_for("ephemeral-has-expiry", [training_cluster(ephemeral=True, expires_at="next friday")])
    assert "'next friday' is neither ISO 8601" in message


def test_platform_can_forbid_spot_everywhere():
    node_group = resource("aws:eks/nodeGroup:NodeGroup", "gpus", {"capacityType": "SPOT"})
    [message] = messages_for("spot-allowed-by-workload", [node_group], {"allowSpot": False})
    assert "the policy config sets allowSpot=false" in message


def test_open_ingress_on_an_allowed_public_port_passes():
    rule = resource("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "https",
                    {"cidrIpv4": "0.0.0.0/0", "ipProtocol": "tcp", "fromPort": 443.0, "toPort": 443.0})
    assert messages_for("no-open-ingress", [rule], {"allowedPublicPorts": [443]}) == []
    assert len(messages_for("no-open-ingress", [rule])) == 1


def test_all_traffic_security_group_rule_is_described_as_such():
    group = resource("aws:ec2/securityGroup:SecurityGroup", "sg",
                     {"ingress": [{"protocol": "-1", "fromPort": 0.0, "toPort": 0.0, "cidrBlocks": ["0.0.0.0/0"]}]})
    [message] = messages_for("no-open-ingress", [group])
    assert "opens all traffic to 0.0.0.0/0" in message


def test_eks_remote_access_without_source_groups_is_open_ssh():
    group = resource("aws:eks/nodeGroup:NodeGroup", "gpus", {"remoteAccess": {"ec2SshKey": "ops"}})
    [message] = messages_for("no-open-ingress", [group])
    assert "opens SSH (22)" in message


def test_public_subnet_and_public_launch_template_interfaces_fail():
    subnet = resource("aws:ec2/subnet:Subnet", "nodes-a", {"mapPublicIpOnLaunch": True})
    template = resource("aws:ec2/launchTemplate:LaunchTemplate", "lt", {
        "networkInterfaces": [{"interfaceType": "efa", "associatePublicIpAddress": "true"}]})
    assert len(messages_for("no-public-node-ips", [subnet, template])) == 2


def test_private_gke_cluster_passes_and_public_one_fails():
    private = resource("gcp:container/cluster:Cluster", "gke", {"privateClusterConfig": {"enablePrivateNodes": True}})
    public = resource("gcp:container/cluster:Cluster", "gke2", {})
    assert [m.split(" violates")[0] for m in messages_for("no-public-node-ips", [private, public])] == [
        "gcp:container/cluster:Cluster 'gke2'"]


def test_world_readable_bucket_policy_and_all_users_binding_fail():
    policy = resource("aws:s3/bucketPolicy:BucketPolicy", "p", {"policy": (
        '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*",'
        '"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}')})
    member = resource("gcp:storage/bucketIAMMember:BucketIAMMember", "m",
                      {"bucket": "b", "role": "roles/storage.objectViewer", "member": "allUsers"})
    assert len(messages_for("no-public-buckets", [policy, member])) == 2


def test_node_group_without_launch_template_fails_imdsv2():
    [message] = messages_for("imdsv2-required", [resource("aws:eks/nodeGroup:NodeGroup", "gpus", {})])
    assert "no launch template" in message


def test_eks_with_irsa_provider_passes_workload_identity():
    eks = resource("aws:eks/cluster:Cluster", "eks", {})
    oidc = resource("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "oidc", {})
    assert messages_for("workload-identity", [eks, oidc]) == []
    assert len(messages_for("workload-identity", [eks])) == 1


@pytest.mark.parametrize("pool, expect", [
    (tpu_pool(topology="3x3x3", nodes=7.0), "TPU v5p has no topology '3x3x3'"),
    (tpu_pool(topology="4x4", nodes=4.0), "TPU v5p slices are 3D"),
    (tpu_pool(machine="ct5lp-hightpu-8t", topology="4x4", nodes=2.0),
     "machine type ct5lp-hightpu-8t cannot form a 4x4 slice"),
    (tpu_pool(topology="2x2x4", nodes=4.0, placement="SPREAD"), "needs COMPACT placement"),
])
def test_invalid_tpu_slices_fail(pool, expect):
    [message] = messages_for("tpu-topology-valid", [pool])
    assert expect in message


@pytest.mark.parametrize("machine, topology, nodes", [
    ("ct5lp-hightpu-4t", "4x4", 4.0), ("ct5lp-hightpu-8t", "2x4", 1.0), ("ct6e-standard-4t", "16x16", 64.0),
    ("ct4p-hightpu-4t", "4x4x8", 32.0), ("ct5p-hightpu-4t", "2x2x1", 1.0),
])
def test_valid_tpu_slices_pass(machine, topology, nodes):
    assert messages_for("tpu-topology-valid", [tpu_pool(machine=machine, topology=topology, nodes=nodes)]) == []


def dws_tpu_pool(ceiling: float | None, *, queued: bool = True) -> dict[str, Any]:
    """A flex-start (or queued) v6e 16x16 pool as TpuSlice declares it: empty, growing to the slice."""
    pool = tpu_pool(machine="ct6e-standard-4t", topology="16x16", nodes=0.0)
    del pool["inputs"]["nodeCount"]
    pool["inputs"]["initialNodeCount"] = 0.0
    pool["inputs"]["nodeConfig"]["flexStart"] = True
    if queued:
        pool["inputs"]["queuedProvisioning"] = {"enabled": True}
    if ceiling is not None:
        pool["inputs"]["autoscaling"] = {"minNodeCount": 0.0, "maxNodeCount": ceiling, "locationPolicy": "ANY"}
    return pool


@pytest.mark.parametrize("queued", [True, False])
def test_flex_start_and_queued_tpu_slices_pass_when_they_grow_to_the_whole_slice(queued):
    assert messages_for("tpu-topology-valid", [dws_tpu_pool(64.0, queued=queued)]) == []


@pytest.mark.parametrize("ceiling, shown", [(32.0, "32"), (None, "missing")])
def test_flex_start_tpu_slices_fail_when_they_cannot_grow_to_the_whole_slice(ceiling, shown):
    [message] = messages_for("tpu-topology-valid", [dws_tpu_pool(ceiling)])
    assert f"grows to 64 node(s), but its autoscaling maximum is {shown}" in message


def test_flex_start_compact_gpu_pool_passes_only_on_a3_ultra():
    def pool(machine):
        return gke_pool(machine=machine, taints=[GPU_TAINT], placementPolicy={"type": "COMPACT"},
                        node_config={"flexStart": True})
    assert messages_for("gke-capacity-rules", [pool("a3-ultragpu-8g")]) == []
    [message] = messages_for("gke-capacity-rules", [pool("a3-megagpu-8g")])
    assert "flex-start only on a3-ultragpu, a4-highgpu, h4d machines, not a3-megagpu-8g" in message


def test_tpu_vm_with_an_impossible_size_fails():
    vm = resource("gcp:tpu/v2Vm:V2Vm", "vm", {"acceleratorType": "v5p-12"})
    [message] = messages_for("tpu-topology-valid", [vm])
    assert "no TPU v5p slice has 6 chips" in message


def test_eks_gpu_group_needs_its_taint_and_matching_alternates():
    group = resource("aws:eks/nodeGroup:NodeGroup", "gpus", {
        "instanceTypes": ["p5.48xlarge", "g6e.12xlarge"], "launchTemplate": {"id": "lt", "version": "1"}})
    assert len(messages_for("gpu-node-pool-tainted", [group])) == 1
    [message] = messages_for("gpu-count-matches-machine", [group])
    assert "g6e.12xlarge differs from p5.48xlarge: 4 GPUs per node against 8" in message
    assert "accel:plan.gpu.alternate_machine_types" in message


def test_an_alternate_with_a_gpu_that_runs_the_same_kernels_and_more_memory_is_accepted():
    # p4de (A100 80GB) stands in for p4d (A100 40GB): what `accel choose` offers on p4d spot.
    group = resource("aws:eks/nodeGroup:NodeGroup", "gpus", {"instanceTypes": ["p4d.24xlarge", "p4de.24xlarge"]})
    assert messages_for("gpu-count-matches-machine", [group]) == []


def test_an_alternate_with_less_memory_or_another_gpu_model_is_refused_saying_what_differs():
    smaller = resource("aws:eks/nodeGroup:NodeGroup", "gpus", {"instanceTypes": ["p4de.24xlarge", "p4d.24xlarge"]})
    [message] = messages_for("gpu-count-matches-machine", [smaller])
    assert "a100-40gb has 42.9 GB per GPU against a100-80gb's 85.9 GB" in message
    assert "GPUs per node" not in message
    other_model = resource("aws:eks/nodeGroup:NodeGroup", "gpus", {"instanceTypes": ["p5.48xlarge", "p4de.24xlarge"]})
    [message] = messages_for("gpu-count-matches-machine", [other_model])
    assert "GPU model a100-80gb" in message and "h100-80gb" in message and "GPUs per node" not in message
    assert "accel:plan.gpu.alternate_machine_types" in message


def test_gpu_machine_without_declared_accelerators_fails():
    [message] = messages_for("gpu-count-matches-machine", [gke_pool(machine="g2-standard-24", taints=[GPU_TAINT])])
    assert "g2-standard-24 has 2 x nvidia-l4 but the pool declares no guestAccelerators" in message


def test_compact_pool_in_a_region_without_node_locations_fails():
    pool = gke_pool(accelerators=H100_X8, taints=[GPU_TAINT], placementPolicy={"type": "COMPACT"})
    del pool["inputs"]["nodeLocations"]
    [message] = messages_for("compact-placement-single-zone", [pool])
    assert "regional location us-central1" in message


def test_a_capacity_block_group_created_above_zero_fails():
    [message] = messages_for("capacity-block-scheduled", [eks_block_group(desired=4.0), *block_schedules()])
    assert "starts at desired size 4 on a capacity block" in message


def test_a_capacity_block_group_without_any_scheduled_action_fails():
    [message] = messages_for("capacity-block-scheduled", [eks_block_group()])
    assert "no scheduled scale-out at the block's start and no scheduled scale-in to 0" in message


def test_schedules_of_another_group_do_not_count():
    [message] = messages_for("capacity-block-scheduled", [eks_block_group(), *block_schedules("other-nodes")])
    assert "gpu-nodes" in message


def test_other_capacity_needs_no_schedule():
    group = eks_block_group(desired=4.0)
    group["inputs"]["capacityType"] = "ON_DEMAND"
    assert messages_for("capacity-block-scheduled", [group]) == []


def test_efa_plan_needs_efa_interfaces_on_the_launch_template():
    cluster = training_cluster(plan_json=plan(cloud="aws", gpu={"fabric": "efa", "efa_interfaces": 32}))
    template = resource("aws:ec2/launchTemplate:LaunchTemplate", "lt", {
        "networkInterfaces": [{"interfaceType": "efa", "networkCardIndex": float(i)} for i in range(8)]})
    [message] = messages_for("gpu-fabric-present", [cluster, template])
    assert "the plan asks for 32 EFA interfaces per node, the launch template has 8" in message


def test_efa_only_interfaces_on_later_network_cards_count_as_efa():
    cluster = training_cluster(plan_json=plan(cloud="aws", gpu={"fabric": "efa", "efa_interfaces": 16}))
    interfaces = [{"interfaceType": "efa", "networkCardIndex": 0.0}] + [
        {"interfaceType": "efa-only", "networkCardIndex": float(i)} for i in range(1, 16)]
    template = resource("aws:ec2/launchTemplate:LaunchTemplate", "lt", {"networkInterfaces": interfaces})
    assert messages_for("gpu-fabric-present", [cluster, template]) == []


def test_missing_efa_is_reported_on_the_template_closest_to_the_plan():
    cluster = training_cluster(plan_json=plan(cloud="aws", gpu={"fabric": "efa", "efa_interfaces": 16}))
    system = resource("aws:ec2/launchTemplate:LaunchTemplate", "system-lt", {"networkInterfaces": []})
    gpu = resource("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt", {
        "networkInterfaces": [{"interfaceType": "efa", "networkCardIndex": 0.0}]})
    [message] = messages_for("gpu-fabric-present", [cluster, system, gpu])
    assert "'gpu-lt'" in message and "has 1" in message


def test_missing_ownership_tags_on_aws_are_named_with_their_prefix():
    bucket = resource("aws:s3/bucket:Bucket", "logs", {"tags": {"accel:owner": "ml"}})
    [message] = messages_for("ownership-labels", [bucket])
    assert "missing tags accel:workload, accel:cost-center" in message


# --- values the engine does not know during preview -------------------------------------


def test_unknown_values_during_preview_skip_checks_instead_of_failing_them():
    bucket = gcs_bucket(retain=True, labels=UNKNOWN_STRING_VALUE, publicAccessPrevention=UNKNOWN_STRING_VALUE)
    pool = gke_pool(accelerators=H100_X8, node_config={"taints": UNKNOWN_ARRAY_VALUE})
    assert run_by_hand("ownership-labels", [bucket]) == []
    assert run_by_hand("no-public-buckets", [bucket]) == []
    assert run_by_hand("gpu-node-pool-tainted", [pool]) == []


@pytest.mark.parametrize("ttl, ok", [("72h", True), ("1d12h", True), ("90m", True), ("2w", True),
                                     ("72", False), ("12h1d", False), ("soon", False)])
def test_ttl_uses_the_grammar_accel_reap_reads(ttl, ok):
    messages = messages_for("ephemeral-has-expiry", [training_cluster(ephemeral=True, ttl=ttl)])
    assert (messages == []) is ok, messages


# --- exposure: mandatory unless the stack is explicitly marked for development ------------

DEVELOPMENT_TAGS = {"accel:environment": "development"}
OPEN_EKS = resource("aws:eks/cluster:Cluster", "eks", {"vpcConfig": {"subnetIds": ["subnet-a"]}})
PUBLIC_SUBNET = resource("aws:ec2/subnet:Subnet", "public", {"mapPublicIpOnLaunch": True})
PUBLIC_GCS = gcs_bucket(publicAccessPrevention="inherited")
EXPOSURE_RULES = ["no-public-node-ips", "no-public-buckets", "control-plane-not-world-open"]


@pytest.mark.parametrize("tags", [{}, {"accel:environment": "production"}, {"accel:environment": "dev"}],
                         ids=["untagged", "production", "not-the-exact-word"])
def test_exposure_blocks_every_stack_not_explicitly_marked_for_development(tags):
    found = offline.evaluate([OPEN_EKS, PUBLIC_SUBNET, PUBLIC_GCS], stack_tags=tags)
    blocking = sorted({v["policy"] for v in found if v["level"] == "mandatory" and v["policy"] in EXPOSURE_RULES})
    assert blocking == sorted(EXPOSURE_RULES)
    assert not [v for v in found if v["policy"] == "exposure-on-development-stack"]


def test_exposure_on_a_development_stack_is_reported_but_does_not_block():
    found = offline.evaluate([OPEN_EKS, PUBLIC_SUBNET, PUBLIC_GCS], stack_tags=DEVELOPMENT_TAGS)
    exposure = [v for v in found if v["policy"] in [*EXPOSURE_RULES, "exposure-on-development-stack"]]
    assert {(v["policy"], v["level"]) for v in exposure} == {("exposure-on-development-stack", "advisory")}
    assert sorted(v["resource"] for v in exposure) == sorted(r["urn"] for r in (OPEN_EKS, PUBLIC_SUBNET, PUBLIC_GCS))


@pytest.mark.parametrize("type_, markers", [
    ("gcp:parallelstore/instance:Instance", "labels"), ("gcp:compute/regionDisk:RegionDisk", "labels"),
    ("gcp:compute/snapshot:Snapshot", "labels"), ("aws:ebs/snapshot:Snapshot", "tags"),
    ("aws:fsx/openZfsFileSystem:OpenZfsFileSystem", "tags"), ("aws:fsx/ontapFileSystem:OntapFileSystem", "tags")])
def test_a_checkpoint_store_of_any_guarded_type_must_survive_deletion_and_say_its_role(type_, markers):
    """Not only buckets, Filestore and Lustre: a Parallelstore instance, a regional disk, a snapshot or another FSx
    filesystem holding checkpoints is held to the same rules (and the same store, retained, passes)."""
    key = "data-role" if markers == "labels" else "accel:data-role"
    marked = {markers: {key: "checkpoint"}}
    assert messages_for("data-retained-on-delete", [resource(type_, "ckpt", marked, retain=False)])
    assert messages_for("data-retained-on-delete", [resource(type_, "ckpt", marked, retain=True)]) == []
    assert messages_for("storage-declares-data-role", [resource(type_, "ckpt", {markers: {}}, retain=True)])


@pytest.mark.parametrize("type_, props, key, says", [
    # GCP label keys start with a lowercase letter; AWS tag keys take no '#' (policies/tagging/rules.yaml)
    ("gcp:storage/bucket:Bucket", {"labels": {"team": "ml"}}, "Team", "starts with a lowercase letter"),
    ("aws:s3/bucket:Bucket", {"tags": {"accel:team": "ml"}}, "team#", "not '#'"),
])
def test_a_required_ownership_key_the_cloud_refuses_is_named_as_a_config_mistake(type_, props, key, says):
    good = key.lower().rstrip("#")
    bucket = resource(type_, "logs", props)
    assert messages_for("ownership-labels", [bucket], {"requiredKeys": [good]}) == []
    [message] = messages_for("ownership-labels", [bucket], {"requiredKeys": [good, key]})
    assert f"requiredKeys has {key!r}" in message and says in message
