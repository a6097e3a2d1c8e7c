"""GB300 NVL72 (Blackwell Ultra) can be chosen and built where it can be built correctly (docs/scale.md, "GB300
NVL72"): the chip and P6e-GB300 are rows of the hardware table with their sources and labelled estimates; the
catalog prices P6e-GB300 at an estimate by a stated rule; the UltraServer capacity modes cover it by the table's
field, as they do P6e-GB200; `accel choose` takes it pinned and, where GB200 cannot hold the training state, over
GB200 in a search; its plan passes the guardrails and its job claims a ComputeDomain valid against the upstream CRD.
A4X Max (GB300 on Google Cloud) is not offered: its DRANET networking is not built."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from accel.job.service import check_manifests, job_of
from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.cloud import mode_limits
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.cloud.reservations import DeclaredReservation
from accel.policies.hardware import HardwareFactsError
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping
from tests.compute_domain_checks import assert_claims_a_valid_compute_domain
from tests.facts_edits import load_edited

ROOT = Path(__file__).resolve().parent.parent
P6E_GB300, P6E_GB200 = "p6e-gb300.36xlarge", "p6e-gb200.36xlarge"
WEEK = {"zone": "us-east-1-dfw-2a", "start": "2030-01-06T11:30:00Z", "end": "2030-01-13T11:30:00Z"}
GB300_BLOCK = {"name": "cr-0b300e72a1b2c3d4e", "kind": "capacity-block", "machineType": P6E_GB300, "count": 18,
               "ultraserverType": "u-p6e-gb300x72", **WEEK}
GB200_BLOCK = {"name": "cr-0b200e72a1b2c3d4e", "kind": "capacity-block", "machineType": P6E_GB200, "count": 18,
               "ultraserverType": "u-p6e-gb200x72", **WEEK}
GB300_CHIP = '[chips.gb300]\ncompute_capability = "10.3"'


def block(fields: dict) -> DeclaredReservation:
    return DeclaredReservation.model_validate(fields)


# ------------------------------------------------------------------------------------------------ the facts
def test_gb300_is_blackwell_ultra_more_memory_and_fp4_than_gb200_the_same_bf16_and_nvl72():
    facts = hardware.current()
    gb300, gb200 = facts.chips["gb300"], facts.chips["gb200"]
    assert (gb300.peak_bf16_tflops, gb300.peak_fp8_tflops) == (gb200.peak_bf16_tflops, gb200.peak_fp8_tflops)
    assert (gb300.peak_fp4_tflops, gb300.hbm_gb, gb300.hbm_gbps, gb300.tdp_watts) == (15000, 279, 8000, 1400)
    assert gb300.compute_capability == facts.chips["b300"].compute_capability == "10.3"
    assert gb300.selectable and "nvidia-gb300-secondary" in gb300.source
    assert facts.scale_up_domain_chips("gb300") == 72 and facts.nvlink_domain_spans_nodes("gb300")


def test_p6e_gb300_is_a_p6e_gb200_tray_of_gb300_sold_as_one_x72_ultraserver():
    facts = hardware.current()
    machine = facts.aws_gpu_instances[P6E_GB300]
    assert (machine.chip, machine.gpus, machine.arch, machine.fabric) == ("gb300", 4, "arm64", "efa")
    assert machine.ultraserver_types == (("u-p6e-gb300x72", 18),)
    assert "estimate-aws-p6e-gb300" in machine.source and "aws-p6e-gb300-names" in machine.source
    # The node step and the NVLink unit derive from the table: whole x72s, one 18-tray clique each.
    assert facts.node_step(P6E_GB300) == 18 and facts.nvlink_domain_unit_nodes(P6E_GB300) == 18
    assert facts.pool_topology_levels(P6E_GB300, ()) == facts.kubernetes.nvlink_topology_levels
    # EFA as P6e-GB200's: 400 Gb/s per GPU on the machine, the chip's ConnectX-8 800 elsewhere.
    assert facts.collective_fabric("gb300", P6E_GB300).scale_out_gbps == 400
    assert facts.collective_fabric("gb300").scale_out_gbps == 800


def test_gb300_has_no_run_of_its_own_and_steps_at_its_nearest_calibrated_generations_mfu_as_gb200_does():
    """The stated rule (policies/estimator/generations.py), not a fitted row: compute capability 10.3 is Blackwell,
    whose nearest calibrated generation's chip gives GB300 and GB200 the same step-MFU intercept."""
    from accel.policies.estimator import generations, mfu_model

    catalog = load_catalog()
    fitted = mfu_model.calibrated_fit(catalog)
    assert "gb300" not in fitted.accelerator_offsets and generations.generation("gb300") == "blackwell"
    nearest = generations.nearest_calibrated("gb300", fitted.accelerator_offsets)
    assert nearest == generations.nearest_calibrated("gb200", fitted.accelerator_offsets) is not None
    assert mfu_model._intercept(fitted, catalog, "gb300") == mfu_model._intercept(fitted, catalog, "gb200")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("peak_fp4_tflops = 15000", "peak_fp4_tflops = 4000"),
     r"chips.gb300.peak_fp4_tflops: 4000 is below the chip's fp8 peak 5000"),
    (lambda t: t.replace("peak_fp4_tflops = 15000", "peak_fp4_tflops = 0"), r"chips.gb300.peak_fp4_tflops: must be positive"),
    (lambda t: t.replace("tdp_watts = 1400", "tdp_watts = 1400.5"), r"chips.gb300.tdp_watts: expected int"),
    (lambda t: t.replace("tdp_watts = 1400", "tdp_watts = -1"), r"chips.gb300.tdp_watts: must be positive"),
])
def test_the_loader_refuses_a_bad_fp4_peak_or_tdp(tmp_path, edit, message):
    with pytest.raises(HardwareFactsError, match=message):
        load_edited(tmp_path, GB300_CHIP, edit)


# ------------------------------------------------------------------------------------------- how it is sold
@pytest.mark.parametrize("machine", [P6E_GB200, P6E_GB300])
def test_the_ultraserver_modes_cover_a_machine_by_the_tables_ultraserver_types(machine):
    table = load_modes()
    assert [m.id for m in table.modes_for("aws", machine)] == ["aws-capacity-block-ultraserver", "aws-negotiated"]
    # The guardrail pack's plain reader of the same file agrees.
    assert "whole UltraServers" in mode_limits.excluded("aws", machine, "aws-capacity-block")
    assert mode_limits.excluded("aws", machine, "aws-capacity-block") == \
        table.applicable("aws", machine).excluded["aws-capacity-block"]


def test_a_machine_the_table_does_not_sell_as_ultraservers_is_not_covered_by_that_row():
    """The row's pattern is "*": only the table's field keeps p6-b300 (and every other P) out of it."""
    table = load_modes()
    row = next(r for r in table.applicability["aws"] if r.sold_as == "ultraservers")
    assert row.machine == "*" and not row.covers("p6-b300.48xlarge") and row.covers(P6E_GB300)
    assert "aws-capacity-block" in {m.id for m in table.modes_for("aws", "p6-b300.48xlarge")}
    facts = hardware.current()
    assert not facts.sold_only_as_ultraservers("p6-b300.48xlarge") and facts.sold_only_as_ultraservers(P6E_GB300)
    assert mode_limits.excluded("aws", "p6-b300.48xlarge", "aws-capacity-block") is None


def test_p6e_gb300_is_priced_at_p6e_gb200s_block_rate_times_awss_b200_to_b300_block_step():
    """The estimate's stated rule (catalog aws-p6e-gb300-estimate-2026), recomputed from the observed rates."""
    rates = load_modes().modes
    ultra = rates["aws-capacity-block-ultraserver"].price.instance_usd
    plain = rates["aws-capacity-block"].price.instance_usd
    rule = ultra[P6E_GB200]["us-east-1-dfw-2a"] * plain["p6-b300.48xlarge"]["us-east-1"] / plain["p6-b200.48xlarge"]["us-east-1"]
    offering = load_catalog().offering("aws-p6e-gb300.36xlarge")
    price = offering.regions["us-east-1"].on_demand
    assert price.estimate and offering.unpriced and offering.provisioning == "capacity-block"
    assert round(rule, 3) == pytest.approx(price.usd * hardware.current().aws_gpu_instances[P6E_GB300].gpus)
    assert P6E_GB300 not in ultra, "no P6e-GB300 block rate was observed: the table must not carry one"


@pytest.mark.parametrize(("fields", "message"), [
    ({**GB300_BLOCK, "count": 9, "ultraserverType": None},
     r"count: 9 instances of p6e-gb300.36xlarge are not whole UltraServers \(it is sold only as UltraServers: "
     r"u-p6e-gb300x72 of 18 instances\)"),
    ({**GB200_BLOCK, "count": 10, "ultraserverType": None}, r"count: 10 instances of p6e-gb200.36xlarge are not whole"),
    ({**GB300_BLOCK, "count": 9}, r"count: 9 instances is not a whole number of u-p6e-gb300x72 UltraServers of 18"),
    ({**GB300_BLOCK, "ultraserverType": "u-p6e-gb200x72"}, r"'u-p6e-gb200x72' is not an UltraServer type of p6e-gb300"),
])
def test_a_declared_block_of_an_ultraserver_machine_is_whole_ultraservers_of_its_own_types(fields, message):
    with pytest.raises(ValueError, match=message):
        block({k: v for k, v in fields.items() if v is not None})


def test_whole_ultraservers_of_an_unsaid_type_are_accepted_and_other_machines_keep_any_count():
    assert block({**GB200_BLOCK, "count": 9, "ultraserverType": None}).count == 9      # one x36, unsaid
    assert block({**GB300_BLOCK, "count": 36, "ultraserverType": None}).count == 36    # two x72, unsaid
    assert block({**GB300_BLOCK, "machineType": "p5.48xlarge", "count": 3, "zone": "us-east-1a",
                  "ultraserverType": None}).count == 3


# ------------------------------------------------------------------------------------------------ choose
def workload(accelerator: str | None = None, **constraints):
    hardware_pin = {"hardware": {"accelerator": accelerator, "chips": 72, "cloud": "aws", "spot": False}} \
        if accelerator else {}
    return workload_from_mapping({
        "name": "w", "kind": "pretrain", "model": {"parameters": "405B", "sequence_length": 8192},
        "training": {"tokens": "10B", "framework": "pytorch", "precision": "bf16"},
        "constraints": {"clouds": ["aws"], "spot": "never", **constraints}, **hardware_pin}, "test")


def moe_workload():
    """A DeepSeek-V3-shaped 671B mixture of experts (examples/deepseek-v3-moe.yaml's model), a short run."""
    return workload_from_mapping({
        "name": "moe", "kind": "pretrain",
        "model": {"parameters": "671B", "active_parameters": "37B", "experts": 256, "experts_per_token": 8,
                  "shared_experts": 1, "layers": 61, "hidden": 7168, "sequence_length": 4096},
        "training": {"tokens": "20B", "framework": "pytorch", "precision": "fp8"},
        "constraints": {"clouds": ["aws"], "spot": "never", "accelerators": ["gb200", "gb300"]}}, "test")


def test_a_gb300_pin_is_sized_on_its_declared_x72_block():
    choice = choose(workload("gb300"), load_catalog(), reservations=[block(GB300_BLOCK)])
    chosen = choice.chosen
    assert (chosen.offering, chosen.hosts, chosen.provisioning) == ("aws-p6e-gb300.36xlarge", 18, "capacity-block")
    assert chosen.price_estimate and chosen.zone == "us-east-1-dfw-2a"


def test_without_a_declared_block_p6e_gb300_says_what_to_declare():
    choice = choose(workload(accelerators=["gb300", "b200"]), load_catalog())
    assert not any(o.offering == "aws-p6e-gb300.36xlarge" for o in choice.options)
    reasons = {r["offering"]: r["reasons"] for r in choice.rejected}
    assert any("sold only through Capacity Blocks" in reason for reason in reasons["aws-p6e-gb300.36xlarge"])


def test_a_search_takes_the_gb300_ultraserver_where_gb200s_cannot_hold_the_training_state():
    """671B of training state (13.4 TB) needs 81 GB200, more than an x72 UltraServer's 72; 72 GB300 hold it."""
    choice = choose(moe_workload(), load_catalog(), reservations=[block(GB300_BLOCK), block(GB200_BLOCK)])
    assert (choice.chosen.accelerator, choice.chosen.offering, choice.chosen.hosts) == \
        ("gb300", "aws-p6e-gb300.36xlarge", 18)
    reasons = {r["offering"]: r["reasons"] for r in choice.rejected}
    assert any(re.search(r"needs at least 8\d chips", reason) for reason in reasons["aws-p6e-gb200.36xlarge"])


def test_a4x_max_is_not_offered_and_a_gb300_workload_on_google_cloud_finds_no_offering():
    """A4X Max's GKE pool and RDMA (DRANET ResourceClaimTemplates) are not built: choose must never pick it."""
    catalog = load_catalog()
    assert not any(o.machine_type.startswith("a4x-max") for o in catalog.offerings)
    assert "a4x-maxgpu-4g-metal" not in hardware.current().gcp_gpu_machines
    assert {o.cloud for o in catalog.offerings if o.accelerator == "gb300"} == {"aws"}
    with pytest.raises(Exception) as raised:
        choose(workload(clouds=["gcp"], accelerators=["gb300"]), catalog)
    assert "gb300" in str(raised.value).lower() or "no " in str(raised.value).lower()
    assert "A4X Max" in (ROOT / "docs" / "scale.md").read_text()


# ------------------------------------------------------------------------------------------ plan and job
@pytest.fixture(scope="module")
def gb300_stack(tmp_path_factory):
    """stacks/Pulumi.llama-405b-p6e.yaml with GB300: the same 405B slice on one declared u-p6e-gb300x72."""
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-405b-p6e.yaml").read_text())
    config = stack["config"]
    config["accel:workload"]["name"] = "llama-405b-p6e-gb300"
    config["accel:hardware"]["accelerator"] = "gb300"
    config["accel:reservations"] = [GB300_BLOCK]
    path = tmp_path_factory.mktemp("gb300") / "Pulumi.llama-405b-p6e-gb300.yaml"
    path.write_text(yaml.safe_dump(stack))
    return plan_stack(None, path, ROOT)


def test_the_gb300_stack_plans_an_arm_capacity_block_node_group_passing_the_guardrails(gb300_stack):
    result = gb300_stack
    assert result.exit_code == 0 and not result.violations and not result.mandatory_violations
    [group] = [r for r in result.capture.resources if r.type == "aws:eks/nodeGroup:NodeGroup"
               and r.name.endswith("-gpu-nodes")]
    assert group.inputs["amiType"] == "AL2023_ARM_64_NVIDIA" and group.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert group.inputs["scalingConfig"]["maxSize"] == 18
    [template] = [r for r in result.capture.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate"
                  and r.name.endswith("-gpu-template")]
    assert P6E_GB300 in (template.inputs.get("instanceType"), *group.inputs.get("instanceTypes", ()))
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert len(template.inputs["networkInterfaces"]) == 4
    # One x72 is one 18-tray NVLink clique: tensor groups span two trays of it, as on A4X.
    assert result.plan["parallelism"]["tensor"] == 8 and result.plan["parallelism"]["tensor_nodes"] == 2


def test_the_gb300_job_claims_a_compute_domain_valid_against_the_upstream_crd(gb300_stack):
    job = job_of(gb300_stack)
    pod = assert_claims_a_valid_compute_domain(gb300_stack, job)
    assert pod["nodeSelector"]["node.kubernetes.io/instance-type"] == P6E_GB300
    assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in pod["tolerations"]
    assert check_manifests(gb300_stack, job.manifests).ok


def test_a_gb300_serving_replica_runs_vllms_arm_image_in_one_clique_with_a_compute_domain(tmp_path):
    """The same block served: an LWS whose pods claim the domain's channel, schedulable on the UltraServer."""
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-405b-p6e.yaml").read_text())
    config = stack["config"]
    config["accel:workload"] = {
        "name": "llama-405b-serve-gb300", "kind": "inference", "model": {"parameters": "405B", "sequence_length": 4096},
        "inference": {"tokens_per_second": 5000, "p99_latency_ms": 100, "framework": "pytorch", "hours": 150},
        "constraints": {"clouds": ["aws"], "spot": "never"}}
    config["accel:hardware"]["accelerator"] = "gb300"
    config["accel:reservations"] = [GB300_BLOCK]
    path = tmp_path / "Pulumi.llama-405b-serve-gb300.yaml"
    path.write_text(yaml.safe_dump(stack))
    result = plan_stack(None, path, ROOT)
    assert result.exit_code == 0 and not result.violations and not result.job_errors
    job = job_of(result)
    assert {m["kind"] for m in job.manifests} >= {"ComputeDomain", "LeaderWorkerSet"}
    assert check_manifests(result, job.manifests).ok
