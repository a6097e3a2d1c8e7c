"""What a first `pulumi up` of every stack needs beyond ordering: node software, mountable storage,
flavors that match their nodes, capacity the cloud actually sells."""

from __future__ import annotations

import pytest

from tests.conftest import every_stack_id

STACKS = every_stack_id()
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta1:ResourceFlavor"
# Node labels the platforms set themselves; any other label a flavor selects on must be set by a pool.
PLATFORM_LABEL_PREFIXES = ("cloud.google.com/", "node.kubernetes.io/", "eks.amazonaws.com/", "kubernetes.io/")


def of_type(document: dict, type_token: str) -> list[dict]:
    return [r for r in document["resources"] if r["type"] == type_token]


def pool_labels(document: dict) -> list[dict]:
    labels = [(r["inputs"].get("nodeConfig") or {}).get("labels") or {}
              for r in of_type(document, "gcp:container/nodePool:NodePool")]
    labels += [r["inputs"].get("labels") or {} for r in of_type(document, "aws:eks/nodeGroup:NodeGroup")]
    return labels


@pytest.mark.parametrize("stack", STACKS)
def test_every_flavor_selects_labels_some_pool_sets_itself(every_stack, stack):
    document = every_stack[stack]
    if document["plan"]["cloud"] == "kubernetes":
        pytest.skip("bring-your-own cluster: the inventory declares the labels its nodes carry")
    pools = pool_labels(document)
    for flavor in of_type(document, FLAVOR):
        wanted = {k: v for k, v in flavor["inputs"]["spec"]["nodeLabels"].items()
                  if not k.startswith(PLATFORM_LABEL_PREFIXES)}
        assert any(all(labels.get(k) == v for k, v in wanted.items()) for labels in pools), (
            f"{stack}: flavor {flavor['name']} selects {wanted}, which no node pool sets")


@pytest.mark.parametrize("stack", STACKS)
def test_every_filesystem_and_bucket_is_mountable_by_the_training_pods(every_stack, stack):
    document = every_stack[stack]
    plan = document["plan"]
    if plan["cloud"] == "kubernetes":
        pytest.skip("bring-your-own cluster: no storage is created")
    claims = {r["inputs"]["metadata"]["name"]: r for r in
              of_type(document, "kubernetes:core/v1:PersistentVolumeClaim")}
    volumes = {r["inputs"]["metadata"]["name"]: r["inputs"]["spec"]
               for r in of_type(document, "kubernetes:core/v1:PersistentVolume")}
    if plan["storage"]["filesystem"] != "none":
        assert "filesystem" in claims, stack
    if plan["cloud"] == "gcp":
        for role, wanted in (("datasets", "dataset_bucket"), ("checkpoints", "checkpoint_bucket")):
            assert (role in claims) == bool(plan["storage"][wanted]), (stack, role)
    for name, claim in claims.items():
        volume = volumes[claim["inputs"]["spec"]["volumeName"]]
        assert volume["claimRef"]["name"] == name and volume["csi"]["driver"]


def test_the_fsx_stack_installs_the_fsx_csi_driver(every_stack):
    document = every_stack["llama-70b-finetune-aws"]
    addons = {r["inputs"]["addonName"] for r in of_type(document, "aws:eks/addon:Addon")}
    assert "aws-fsx-csi-driver" in addons
    [volume] = [r for r in of_type(document, "kubernetes:core/v1:PersistentVolume")]
    assert volume["inputs"]["spec"]["csi"]["driver"] == "fsx.csi.aws.com"


@pytest.mark.parametrize("spot", ["never", "allowed"])
def test_a3_ultra_is_planned_as_flex_start_or_spot_never_plain_on_demand(spot):
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose_plan
    from accel.policies.workload import workload_from_mapping

    spec = workload_from_mapping({
        "name": "h200-pretrain", "kind": "pretrain", "model": {"parameters": "70B"},
        # 500B tokens: at 1T no A3 Ultra fleet the modes can supply finishes in 30 days under the
        # whole-run model (flex-start is capped at the hosts it is expected to supply, spot at its pool)
        "training": {"tokens": "500B", "framework": "pytorch"},
        "constraints": {"clouds": ["gcp"], "deadline_days": 30, "spot": spot, "accelerators": ["h200-141gb"]},
    }, "test")
    plan = choose_plan(spec, load_catalog())
    assert plan.chosen.machine_type == "a3-ultragpu-8g"
    # A calendar-mode reservation (booked by the search, docs/capacity.md) is a reservation, not plain on-demand.
    assert plan.capacity.provisioning in ("flex-start", "spot", "reservation")
    if plan.capacity.provisioning == "reservation":
        assert plan.capacity.mode == "gcp-calendar"
    if plan.capacity.provisioning == "flex-start":
        # GKE allows COMPACT with flex-start on A3 Ultra, but this fleet of many nodes on RDMA is placed by a Kueue
        # Topology, so it is built with queued provisioning, which takes no COMPACT (policies/cloud/flex_start.py)
        assert plan.gpu.nodes > 1 and plan.gpu.fabric == "rdma" and not plan.gpu.compact_placement


def test_capacity_block_node_groups_start_at_zero_and_are_scheduled_around_the_declared_block(every_stack):
    from datetime import datetime, timedelta

    from accel.policies.cloud.capacity_blocks import load_capacity_block_facts
    from tests.capacity_matrix import CAPACITY_BLOCK_WINDOW

    blocks = {stack: document for stack, document in every_stack.items()
              if document["plan"]["capacity"]["provisioning"] == "capacity-block"}
    assert blocks, "the capacity matrix plans a capacity-block stack"
    declared = tuple(datetime.fromisoformat(CAPACITY_BLOCK_WINDOW[k].replace("Z", "+00:00")) for k in ("start", "end"))
    lead = load_capacity_block_facts().ec2_terminates_before_end
    for stack, document in blocks.items():
        start, end = declared
        if any(n["key"] == "accel:reservations" for n in document["needed_before_up"]):
            # Not bought yet (accel/stack/bookings.py): planned on a placeholder block of the window the search
            # priced, starting at 11:30 UTC after the lead time.
            starts = {a["inputs"]["startTime"] for a in of_type(document, "aws:autoscaling/schedule:Schedule")
                      if a["inputs"]["desiredCapacity"]}
            (first,) = starts
            start = datetime.fromisoformat(first.replace("Z", "+00:00"))
            assert (start.hour, start.minute) == (11, 30) and start > datetime.now(start.tzinfo)
            end = start + timedelta(hours=document["plan"]["chosen"]["hours"])
        groups = [g for g in of_type(document, "aws:eks/nodeGroup:NodeGroup")
                  if g["inputs"]["capacityType"] == "CAPACITY_BLOCK"]  # not the system node group
        assert groups, stack
        for group in groups:
            scaling = group["inputs"]["scalingConfig"]
            assert scaling["desiredSize"] == 0, stack
            actions = {a["inputs"]["desiredCapacity"]: a["inputs"]
                       for a in of_type(document, "aws:autoscaling/schedule:Schedule") if a["parent"] == group["parent"]}
            assert set(actions) == {0, scaling["maxSize"]}, stack
            scale_out, scale_in = actions[scaling["maxSize"]], actions[0]
            assert datetime.fromisoformat(scale_out["startTime"].replace("Z", "+00:00")) == start
            assert end - datetime.fromisoformat(scale_in["startTime"].replace("Z", "+00:00")) > lead
