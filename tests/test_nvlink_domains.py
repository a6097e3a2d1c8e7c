"""NVLink domains stated once and read everywhere a job needs them.

1. Whether a job's GPUs share an NVLink domain across nodes (and so claim an NVIDIA ComputeDomain, with the DRA
   driver installed beside it) is one decision, over the chip's collective fabric: the same for a cloud machine
   type (a4x-highgpu-4g, p6e-gb200.36xlarge) and for an existing cluster's inventory of that chip (accel:cluster,
   whose pool is named after the inventory entry, not a machine type).
2. A machine type whose own NVLink domain differs from its chip's (a2-megagpu-16g: 16 A100 over NVSwitch, the
   A100 board's 8 elsewhere) states it once, with its source, in [collective_fabrics.<chip>.machines]; the
   expert-parallel layout, the all-to-all the estimate costs and nvlink_spans_nodes all read it there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.components.kubernetes.workloads import needs_compute_domain
from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.estimator import moe
from accel.policies.hardware import HardwareFactsError
from accel.policies.plan import Estimate, GpuPool, Plan, plan_parallelism
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping
from accel.job.service import check_manifests, job_of
from tests.compute_domain_checks import assert_claims_a_valid_compute_domain
from tests.facts_edits import TABLE, load_edited

ROOT = Path(__file__).resolve().parent.parent
MEGA = "[collective_fabrics.a100-40gb.machines.a2-megagpu-16g]\ndomain_chips = 16\n"


# ------------------------------------------------------------------------------------------ one decision
def _gpu_chips_with_machines() -> list[str]:
    facts = hardware.current()
    return [chip.id for chip in facts.chips.values()
            if chip.family == "gpu" and any(facts.machine_types_of_chip(chip.id).values())]


@pytest.mark.parametrize("chip", _gpu_chips_with_machines())
def test_an_inventory_of_a_chip_spans_nodes_exactly_when_the_chips_cloud_machines_do(chip):
    """An inventory names its nodes by chip (InventoryEntry.accelerator) and its pool by the entry's name: the
    decision reads the chip's domain, so it agrees with the chip's machine types of either cloud."""
    facts = hardware.current()
    machines = [m for names in facts.machine_types_of_chip(chip).values() for m in names]
    cloud = {facts.nvlink_spans_nodes(m) for m in machines}
    assert len(cloud) == 1, f"{chip}'s machine types disagree: {machines}"
    assert facts.nvlink_domain_spans_nodes(chip, f"inventory-{chip}") == cloud.pop()


def test_only_the_nvl72_chips_have_a_domain_across_nodes_tpus_and_pcie_cards_have_none():
    facts = hardware.current()
    spanning = {chip for chip in facts.chips if facts.nvlink_domain_spans_nodes(chip)}
    assert spanning == {"gb200", "gb300"}
    assert not facts.nvlink_domain_spans_nodes("tpu-v5p") and not facts.nvlink_domain_spans_nodes("l40s")


def test_a_chip_no_machine_carries_has_no_domain_across_nodes_whatever_its_domain():
    # h800 has a collective fabric (published runs' all-to-all) but no machine type: an 8-GPU domain it cannot be
    # said to outgrow, so no NVIDIA ComputeDomain for it (before: True, as 8 > "no machine" read as 0).
    facts = hardware.current()
    assert facts.scale_up_domain_chips("h800") == 8
    assert not any(facts.machine_types_of_chip("h800").values())
    assert not facts.nvlink_domain_spans_nodes("h800")
    assert {chip for chip in facts.collective_fabrics if facts.nvlink_domain_spans_nodes(chip)} == {"gb200", "gb300"}


@pytest.fixture(scope="module")
def onprem_gb200():
    return plan_stack("onprem-gb200", None, ROOT)


def test_a_job_across_gb200_inventory_nodes_claims_a_compute_domain_as_on_a4x(onprem_gb200):
    """stacks/Pulumi.onprem-gb200.yaml: two NVL72 racks an existing cluster declares as inventory (4 GB200 per
    node). Before, the inventory pool's name was looked up as a cloud machine type and no ComputeDomain was
    written: GPUs on different trays of one rack would have had no IMEX channel."""
    result = onprem_gb200
    plan = result.plan
    assert plan["chosen"]["cloud"] == "kubernetes" and plan["gpu"]["nodes"] > 1
    releases = {r.inputs["name"]: r.inputs for r in result.capture.resources
                if r.type == "kubernetes:helm.sh/v3:Release"}
    assert releases["nvidia-dra-driver-gpu"]["values"]["nvidiaDriverRoot"] == "/"   # not GKE's driver path
    assert_claims_a_valid_compute_domain(result, job_of(result))


def test_a_job_across_inventory_nodes_whose_domain_stays_in_the_node_claims_none(onprem_gb200):
    """The reverse: stacks/Pulumi.onprem-gpus.yaml's L40S nodes (PCIe, no NVLink) write no ComputeDomain and
    install no DRA driver; nor would the same fleet of A100 or H100 nodes (each node a whole 8-GPU domain)."""
    result = plan_stack("onprem-gpus", None, ROOT)
    assert result.plan["gpu"]["accelerator"] == "l40s" and result.plan["gpu"]["nodes"] > 1
    job = job_of(result)
    assert "ComputeDomain" not in {m["kind"] for m in job.manifests}
    assert "nvidia-dra-driver-gpu" not in {r.inputs["name"] for r in result.capture.resources
                                           if r.type == "kubernetes:helm.sh/v3:Release"}
    assert check_manifests(result, job.manifests).ok
    plan = Plan.model_validate(onprem_gb200.plan)
    assert needs_compute_domain(plan)
    for chip in ("a100-80gb", "a100-40gb", "h100-80gb", "h200-141gb", "b200", "l40s"):
        other = plan.model_copy(update={"gpu": plan.gpu.model_copy(update={"accelerator": chip, "gpus_per_node": 8})})
        assert not needs_compute_domain(other), chip


def test_an_inventory_that_does_not_say_its_node_size_gets_the_trays_a_gb200_rack_is_made_of():
    """GB200 comes only as compute trays of 4 in an NVL72 rack: an inventory without gpus_per_node was taken as
    nodes of 8, which no GB200 node is (its pods would ask for 8 GPUs and never schedule). Other GPUs keep the
    8-GPU default, TPUs a multi-host VM's chips; the selection's offering and the job's node check agree."""
    from accel.components.kubernetes.pools import ExistingCluster
    from accel.job.declared import _inventory
    from accel.policies.catalog import offerings_from_inventory

    facts = hardware.current()
    expected = {"gb200": 4, "a100-80gb": 8, "h100-80gb": 8, "l40s": 8, "tpu-v5p": 4, "tpu-v6e": 4}
    assert {chip: facts.inventory_chips_per_node(chip) for chip in expected} == expected
    items = [{"accelerator": chip, "chips": 8 * 9, "usd_per_chip_hour": 1.0, "name": chip} for chip in expected]
    offerings = offerings_from_inventory([{**item, "count": item["chips"]} for item in items])
    assert {o.accelerator: o.chips_per_host for o in offerings} == expected
    cluster = ExistingCluster(name="dc", inventory=items)
    assert {pool.name: pool.nodes for pool in _inventory(cluster)} == {
        f"inventory:{chip}": 72 // per_node for chip, per_node in expected.items()}


# ------------------------------------------------------------------------------------------ per machine
def test_a2_megagpu_16g_states_its_own_16_gpu_domain_once_with_its_source():
    facts = hardware.current()
    assert facts.scale_up_domain_chips("a100-40gb", "a2-megagpu-16g") == 16
    assert facts.scale_up_domain_chips("a100-40gb", "a2-highgpu-8g") == facts.scale_up_domain_chips("a100-40gb") == 8
    own = facts.collective_fabric("a100-40gb").machine_domain("a2-megagpu-16g")
    assert own.machine_type == "a2-megagpu-16g" and "nvidia-hgx-a100" in own.source
    # The machine's fabric is the chip's but for the domain: no second copy of the bandwidths.
    mega, chip = facts.collective_fabric("a100-40gb", "a2-megagpu-16g"), facts.collective_fabric("a100-40gb")
    assert (mega.scale_up_gbytes_per_s, mega.scale_out_gbps) == (chip.scale_up_gbytes_per_s, chip.scale_out_gbps)
    # 16 GPUs in one VM: the domain never leaves the machine.
    assert not facts.nvlink_spans_nodes("a2-megagpu-16g")
    assert TABLE.read_text(encoding="utf-8").count(MEGA) == 1


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace(MEGA, MEGA.replace("domain_chips = 16", "domain_chips = 8")),
     r"machines.a2-megagpu-16g.domain_chips: 8 is a100-40gb's own domain_chips"),
    (lambda t: t.replace(MEGA, MEGA.replace("a100-40gb.machines.a2-megagpu-16g", "a100-40gb.machines.a3-highgpu-8g")),
     r"a3-highgpu-8g carries h100-80gb, not a100-40gb"),
    (lambda t: t.replace(MEGA, MEGA.replace("a2-megagpu-16g", "a2-gigagpu-32g")),
     r"'a2-gigagpu-32g' is neither in \[gcp_gpu_machines\]"),
    (lambda t: t.replace(MEGA, MEGA.replace("domain_chips = 16", "domain_chips = 0")),
     r"machines.a2-megagpu-16g.domain_chips: must be positive"),
    (lambda t: t.replace(MEGA, MEGA + "nvswitches = 12\n"), r"machines.a2-megagpu-16g: unknown key 'nvswitches'"),
])
def test_a_machine_domain_is_refused_unless_it_is_a_new_fact_of_a_machine_of_that_chip(tmp_path, edit, message):
    with pytest.raises(HardwareFactsError, match=message):
        load_edited(tmp_path, MEGA, edit)


def test_the_plan_and_the_estimator_spread_experts_over_the_machines_own_domain():
    estimate = Estimate(flops=1.0, min_chips_for_memory=16, hours=1.0, hourly_usd=1.0, total_usd=1.0, mfu=0.4,
                        goodput=0.7)
    mega = GpuPool(accelerator="a100-40gb", machine_type="a2-megagpu-16g", gpus_per_node=16, nodes=4)
    high = GpuPool(accelerator="a100-40gb", machine_type="a2-highgpu-8g", gpus_per_node=8, nodes=8)
    assert plan_parallelism("pretrain", mega, estimate, 64).expert == 16
    assert plan_parallelism("pretrain", high, estimate, 64).expert == 8
    assert moe.default_expert_parallel(64, "a100-40gb", machine_type="a2-megagpu-16g") == 16
    assert moe.default_expert_parallel(64, "a100-40gb", machine_type="a2-highgpu-8g") == 8
    shape = moe.MoeShape(experts=64, experts_per_token=6, moe_layers=27, hidden=2048.0)
    # EP16 on a2-megagpu-16g stays inside its domain; the same EP16 on a2-highgpu-8g crosses two 8-GPU domains.
    inside = moe.layout(shape, "a100-40gb", 1e-4, 0.5, expert_parallel=16, machine_type="a2-megagpu-16g")
    across = moe.layout(shape, "a100-40gb", 1e-4, 0.5, expert_parallel=16, machine_type="a2-highgpu-8g")
    assert inside.inside_share == 1.0 and across.inside_share < 1.0
    assert inside.efficiency > across.efficiency


def _moe_workload(**hardware_pin):
    spec = {"name": "moe-a100", "kind": "pretrain",
            "model": {"parameters": "15.7B", "active_parameters": "2.4B", "experts": 64, "experts_per_token": 6,
                      "shared_experts": 2, "layers": 27, "hidden": 2048, "sequence_length": 4096},
            "training": {"tokens": "1T", "framework": "pytorch"},
            "constraints": {"clouds": ["gcp"], "deadline_days": 60, "spot": "never"}}
    if hardware_pin:
        spec["hardware"] = {"accelerator": "a100-40gb", "chips": 64, **hardware_pin}
    return workload_from_mapping(spec, "test")


@pytest.mark.parametrize(("machine_type", "ep"), [("a2-megagpu-16g", 16), ("a2-highgpu-8g", 8)])
def test_a_pinned_a100_mixture_of_experts_is_laid_out_and_costed_on_its_machines_domain(a2_mega_catalog,
                                                                                        machine_type, ep):
    plan = choose_plan(_moe_workload(machine_type=machine_type), a2_mega_catalog)
    assert plan.gpu.machine_type == machine_type and plan.parallelism.expert == ep
    assert f", EP{ep} " in next(r for r in plan.rationale if r.startswith("Parallelism:"))
    expert = next(a for a in plan.estimate.assumptions if a.name == "mixture of experts")
    assert f"expert parallelism {ep} on a100-40gb within one {ep}-chip NVLink domain" in str(expert.value)
    assert ("machines.a2-megagpu-16g" in expert.source) is (machine_type == "a2-megagpu-16g")


def test_one_search_costs_each_machine_on_its_own_domain_not_the_first_ones(a2_mega_catalog):
    """The search shares a training model (and its run hours) between offerings of one chip and cloud: only
    between machines of the same NVLink domain, or a2-megagpu-16g would be timed with a2-highgpu-8g's EP8."""
    from accel.policies.selection.candidates import search_context

    spec = _moe_workload()
    ctx = search_context(spec, a2_mega_catalog, "cost")
    offerings = {o.machine_type: o for o in a2_mega_catalog.offerings if o.accelerator == "a100-40gb"}
    mega = ctx.training_model(offerings["a2-megagpu-16g"], False).moe
    high = ctx.training_model(offerings["a2-highgpu-8g"], False).moe
    assert "expert parallelism 16" in mega.summary and "expert parallelism 8" in high.summary
    assert ctx.model_key(offerings["a2-megagpu-16g"], False) != ctx.model_key(offerings["a2-highgpu-8g"], False)


def test_accel_choose_prints_the_fabric_entry_the_all_to_all_was_costed_on(a2_mega_catalog):
    """The assumptions table prints sources as text: '[collective_fabrics.a100-40gb]' was taken for rich markup and
    dropped, leaving 'facts.toml' without the entry it names."""
    from io import StringIO

    from rich.console import Console

    from accel.commands.choose import render
    from accel.policies.selection.choose import choose, make_plan

    spec = _moe_workload(machine_type="a2-megagpu-16g")
    choice = choose(spec, a2_mega_catalog)
    console = Console(file=StringIO(), width=1000, color_system=None)
    render(choice, make_plan(spec, choice, a2_mega_catalog), console)
    assert ("policies/hardware/facts.toml [collective_fabrics.a100-40gb], machines.a2-megagpu-16g (its own 16-GPU "
            "NVLink domain)") in console.file.getvalue()
