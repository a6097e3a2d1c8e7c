"""HGX B300 (Blackwell Ultra on x86) can be chosen and built where AWS sells it, p6-b300.48xlarge (docs/aws.md, "P6"):
the chip's figures are NVIDIA's HGX B300 ones as quoted (B200's bf16/fp8 rates, 288 GB) and EC2's own memory figure;
the machine's 16 EFA interfaces sit on network cards 1-16, card 0 being ENA only, so its launch template's primary is a
plain ENA interface; AWS's list price and Capacity Block rate price it, with no spot offered (none observed); its step
efficiency follows the generation rule; a pin is sized on it, a search takes it where B200 cannot hold a model in one
node and leaves it where B200 does the same work for less; its plan passes the guardrails and its job the checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from accel.job.service import check_manifests, job_of
from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.hardware import HardwareFactsError
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping
from tests.facts_edits import load_edited

ROOT = Path(__file__).resolve().parent.parent
P6_B300, P6_B200 = "p6-b300.48xlarge", "p6-b200.48xlarge"
P6_B300_ROW = f'"{P6_B300}" = {{ fabric = "efa", chip = "b300"'


# ------------------------------------------------------------------------------------------------ the facts
def test_hgx_b300_runs_at_b200s_bf16_and_fp8_rates_with_288_gb_as_ec2_reports_it():
    facts = hardware.current()
    b300, b200, gb300 = facts.chips["b300"], facts.chips["b200"], facts.chips["gb300"]
    assert (b300.peak_bf16_tflops, b300.peak_fp8_tflops) == (b200.peak_bf16_tflops, b200.peak_fp8_tflops) == (2250, 4500)
    # The Grace part is quoted higher: HGX B300 is not GB300 at 1.1 kW.
    assert (gb300.peak_bf16_tflops, gb300.tdp_watts) == (2500, 1400) and b300.tdp_watts == 1100
    # EC2 reports 275,040 MiB per GPU (Karpenter's DescribeInstanceTypes data), as its 183,359 MiB is B200's 192.3 GB.
    assert b300.hbm_gb == pytest.approx(275_040 * 2**20 / 1e9, abs=0.05)
    assert (b300.compute_capability, b300.hbm_gbps, b300.selectable) == ("10.3", 8000, True)
    assert "nvidia-hgx-b300-secondary" in b300.source and "karpenter-ec2-types" in b300.source
    assert facts.scale_up_domain_chips("b300") == 8 and not facts.nvlink_domain_spans_nodes("b300")
    assert facts.collective_fabric("b300", P6_B300).scale_out_gbps == 800


def test_p6_b300_has_16_efa_interfaces_on_cards_1_to_16_card_0_being_ena_only():
    machine = hardware.current().aws_gpu_instances[P6_B300]
    assert (machine.chip, machine.gpus, machine.vcpus, machine.memory_gb, machine.arch) == ("b300", 8, 192, 4096, "x86_64")
    assert (machine.efa_cards, machine.efa_first_card, machine.efa_only_secondaries) == (16, 1, True)
    assert "karpenter-ec2-types" in machine.source and "aws-p6-b300-efa-layout" in machine.source
    assert hardware.current().aws_gpu_instances[P6_B200].efa_first_card == 0
    # The VPC CNI's addresses ride card 0: 4 interfaces of 50 addresses, EKS's 198 pods (= 4 x 49 + 2).
    # p6-b200 alike (the same generated table), no longer counted as the table's smallest entry (4 x 15).
    for instance_type in (P6_B300, P6_B200):
        limit = hardware.current().aws_eni_limits[instance_type]
        assert (limit.enis, limit.ipv4_per_eni) == (4, 50) and limit.enis * (limit.ipv4_per_eni - 1) + 2 == 198


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("efa_secondary_device_index = 0, efa_first_card = 1,",
                         "efa_secondary_device_index = 0, efa_first_card = 2,"), r"p6-b300.48xlarge.*efa_first_card: 0, or 1"),
    (lambda t: t.replace('"p3.2xlarge" = { chip = "v100", gpus = 1, efa_cards = 0,',
                         '"p3.2xlarge" = { chip = "v100", gpus = 1, efa_cards = 0, efa_first_card = 1,'),
     r"p3.2xlarge.*efa_first_card: 0, or 1 where card 0 is ENA only and efa_cards > 0"),
])
def test_the_loader_refuses_an_efa_first_card_other_than_0_or_1_or_on_a_machine_without_efa(tmp_path, edit, message):
    with pytest.raises(HardwareFactsError, match=message):
        load_edited(tmp_path, P6_B300_ROW, edit)


def test_b300_has_no_run_of_its_own_and_steps_at_its_nearest_calibrated_generations_mfu_as_b200_does():
    """The stated rule (policies/estimator/generations.py), not a fitted row: 10.3 is Blackwell, as B200's 10.0."""
    from accel.policies.estimator import generations, mfu_model

    catalog = load_catalog()
    fitted = mfu_model.calibrated_fit(catalog)
    assert "b300" not in fitted.accelerator_offsets and generations.generation("b300") == "blackwell"
    nearest = generations.nearest_calibrated("b300", fitted.accelerator_offsets)
    assert nearest is not None and nearest == generations.nearest_calibrated("b200", fitted.accelerator_offsets)
    assert mfu_model._intercept(fitted, catalog, "b300") == mfu_model._intercept(fitted, catalog, "b200")


# ------------------------------------------------------------------------------------------- how it is sold
def test_p6_b300_is_sold_on_demand_at_awss_list_price_and_through_capacity_blocks_with_no_spot():
    offering = load_catalog().offering(f"aws-{P6_B300}")
    assert set(offering.regions) == {"us-east-1", "us-west-2"}
    for region in offering.regions.values():
        assert region.on_demand.usd * 8 == pytest.approx(142.416) and not region.on_demand.estimate
        assert region.spot is None
    modes = load_modes()
    assert {"aws-on-demand", "aws-capacity-block"} <= {m.id for m in modes.modes_for("aws", P6_B300)}
    assert modes.modes["aws-capacity-block"].price.instance_usd[P6_B300] == {"us-east-1": 112.32, "us-west-2": 112.32}


# ------------------------------------------------------------------------------------------------ choose
def training(accelerators: list[str]):
    return workload_from_mapping({
        "name": "w", "kind": "pretrain", "model": {"parameters": "70B", "sequence_length": 8192},
        "training": {"tokens": "200B", "framework": "pytorch", "precision": "bf16"},
        "constraints": {"clouds": ["aws"], "spot": "never", "accelerators": accelerators}}, "test")


def serving(accelerators: list[str]):
    """DeepSeek-V3 (671B) in bf16: 1.34 TB of weights, more than one B200 node holds, less than one B300 node."""
    return workload_from_mapping({
        "name": "s", "kind": "inference", "model": {"architecture": "deepseek3-671b"},
        "inference": {"tokens_per_second": 4000, "p99_latency_ms": 100, "framework": "pytorch"},
        "constraints": {"clouds": ["aws"], "spot": "never", "accelerators": accelerators}}, "test")


def test_a_workload_that_allows_only_b300_is_sized_on_p6_b300():
    choice = choose(training(["b300"]), load_catalog())
    assert (choice.chosen.accelerator, choice.chosen.offering) == ("b300", f"aws-{P6_B300}")
    assert choice.chosen.provisioning in ("on-demand", "capacity-block")


def test_a_search_takes_b300_where_one_node_holds_what_b200_needs_more_nodes_for():
    choice = choose(serving(["b200", "b300"]), load_catalog())
    assert (choice.chosen.accelerator, choice.chosen.offering) == ("b300", f"aws-{P6_B300}")
    runner_up = next(o for o in choice.options if o.accelerator == "b200")
    assert runner_up.total_usd > choice.chosen.total_usd


def test_a_search_leaves_b300_where_b200_does_the_same_work_for_less():
    """Same bf16 rate, a dearer node: a 70B pretrain that fits either takes B200."""
    choice = choose(training(["b200", "b300"]), load_catalog())
    assert choice.chosen.accelerator == "b200"
    b300 = [o for o in choice.options if o.accelerator == "b300"]
    assert b300 and min(o.total_usd for o in b300) > choice.chosen.total_usd


# ------------------------------------------------------------------------------------------ plan and job
@pytest.fixture(scope="module")
def b300_stack(tmp_path_factory):
    """stacks/Pulumi.llama-70b-p6-b200.yaml pinned to B300: the same 256-GPU pretrain on p6-b300.48xlarge."""
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-p6-b200.yaml").read_text())
    config = stack["config"]
    config["accel:workload"]["name"] = "llama-70b-p6-b300"
    config["accel:hardware"]["accelerator"] = "b300"
    path = tmp_path_factory.mktemp("b300") / "Pulumi.llama-70b-p6-b300.yaml"
    path.write_text(yaml.safe_dump(stack))
    return plan_stack(None, path, ROOT)


def test_the_b300_stack_plans_an_efa_node_group_whose_primary_interface_is_plain_ena(b300_stack):
    result = b300_stack
    assert result.exit_code == 0 and not result.violations and not result.mandatory_violations
    assert (result.plan["gpu"]["machine_type"], result.plan["gpu"]["efa_interfaces"]) == (P6_B300, 16)
    [template] = [r for r in result.capture.resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate"
                  and r.name.endswith("-gpu-template")]
    interfaces = template.inputs["networkInterfaces"]
    assert [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces] == \
        [(0, 0, "interface")] + [(card, 0, "efa-only") for card in range(1, 17)]


def test_the_b300_job_asks_for_its_16_efa_interfaces_and_passes_the_checks(b300_stack):
    job = job_of(b300_stack)
    assert check_manifests(b300_stack, job.manifests).ok
    text = yaml.safe_dump_all(job.manifests)
    assert "vpc.amazonaws.com/efa: 16" in text and P6_B300 in text


def test_an_efa_group_refuses_alternates_whose_first_efa_interface_sits_on_another_card(tmp_path):
    """One launch template serves every type of a group: p5en with card 0 ENA only (an edited table) cannot stand in
    for p5e, whose card 0 carries EFA."""
    from accel.base.errors import ComponentArgsError
    from accel.components.aws.gpu import GpuNodeGroupArgs
    from accel.components.tags import ResourceTags
    from accel.policies.plan import Capacity, GpuPool

    edited = load_edited(tmp_path, '"p5en.48xlarge" = { fabric = "efa"', lambda t: t.replace(
        '"p5en.48xlarge" = { fabric = "efa",', '"p5en.48xlarge" = { fabric = "efa", efa_first_card = 1,'))
    pool = GpuPool(accelerator="h200-141gb", machine_type="p5e.48xlarge", alternate_machine_types=["p5en.48xlarge"],
                   gpus_per_node=8, nodes=2, fabric="efa", efa_interfaces=16)

    def group_args():
        return GpuNodeGroupArgs(pool=pool, capacity=Capacity(provisioning="spot"), cluster_name="train",
                                node_role_arn="arn:aws:iam::123456789012:role/n", subnet_ids={"us-east-1a": "subnet-a"},
                                security_group_ids=["sg-nodes"], availability_zone="us-east-1a",
                                tags=ResourceTags(workload="w", stack="s", owner="o"))

    group_args()   # the bundled table: both put EFA on card 0
    with hardware.using(edited), pytest.raises(ComponentArgsError, match="same network card as p5e.48xlarge"):
        group_args()
