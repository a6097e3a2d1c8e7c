"""A machine's scale-out bandwidth per GPU is its own where its NICs differ from its chip's: Google's A3 High puts
4 x 200 Gb/s of GPUDirect-TCPX under 8 H100 (100 Gb/s each) and A3 Mega 8 x 200 of TCPXO (200), where the H100's
figure is 400 (P5's 3,200 Gb/s of EFA over 8); P4d's 400 Gb/s of EFA is 50 per A100. The hardware table states it
once, in [collective_fabrics.<chip>.machines.<machine type>] with its source, and every reader of a chip's fabric on
a machine (the serving pipeline's hand-offs, the expert-parallel all-to-all, the fabric check) takes it."""

from __future__ import annotations

import copy
import json

import pytest

from accel.job import validate
from accel.job.plan_view import Hardware
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.estimator import moe
from accel.policies.estimator.estimate import InferenceModel, resolve
from accel.policies.hardware import HardwareFactsError
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping
from tests.facts_edits import load_edited

HIGH = "[collective_fabrics.h100-80gb.machines.a3-highgpu-8g]\nscale_out_gbps = 100\n"


@pytest.mark.parametrize(("machine", "chip", "gbps"), [
    ("a3-highgpu-8g", "h100-80gb", 100), ("a3-megagpu-8g", "h100-80gb", 200), ("p5.48xlarge", "h100-80gb", 400),
    ("a3-ultragpu-8g", "h200-141gb", 400), ("p4d.24xlarge", "a100-40gb", 50), ("p4de.24xlarge", "a100-80gb", 50),
])
def test_each_machine_reads_its_own_scale_out(machine, chip, gbps):
    fabric = hardware.current().collective_fabric(chip, machine)
    assert fabric.scale_out_gbps == gbps
    assert fabric.domain_chips == 8                      # the chip's NVLink domain is untouched
    assert hardware.current().collective_fabric(chip).scale_out_gbps in (400, 200)   # the chip's figure stays


@pytest.mark.parametrize(("machine", "gbytes"), [
    ("a3-highgpu-8g", 100), ("a3-megagpu-8g", 200), ("a3-ultragpu-8g", 400), ("p5.48xlarge", 400),
    ("p5en.48xlarge", 400), ("p4d.24xlarge", 50), ("p4de.24xlarge", 50), ("a4-highgpu-8g", 400),
    ("a4x-highgpu-4g", 200), ("p6-b200.48xlarge", 400), ("p6e-gb200.36xlarge", 200),
])
def test_the_fabric_check_starts_from_the_machines_own_scale_out(machine, gbytes):
    """accel job --validate's pass line across nodes starts from GPUs x the machine's scale-out per GPU / 8, read
    from the table the estimate reads (A3 High's 4 x 200 Gbps of TCPX: 100 GB/s per node; P4d's 400 Gbps EFA: 50),
    with the table's source."""
    found = hardware.current().gpu_machine(machine)
    hw = Hardware(family="gpu", cloud="gcp", accelerator=found.chip, machine_type=machine, chips_per_node=found.gpus,
                  nodes_per_slice=2, slices=1, topology=None, tpu_generation=None, gke_accelerator=None,
                  fabric="rdma", efa_interfaces=0, spot=False, provisioning="on-demand")
    line = validate._scale_out(hw)
    assert line["value"] == gbytes
    assert f"{machine}'s scale-out" in line["source"] and "policies/hardware" in line["source"]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace(HIGH, HIGH.replace("= 100", "= 400")),
     r"a3-highgpu-8g.scale_out_gbps: 400 is h100-80gb's own scale_out_gbps"),
    (lambda t: t.replace(HIGH, HIGH.replace("= 100", "= 0")), r"a3-highgpu-8g.scale_out_gbps: must be positive"),
    (lambda t: t.replace(HIGH, HIGH.replace("scale_out_gbps = 100\n", "")), r"states neither domain_chips nor"),
    (lambda t: t.replace(HIGH, HIGH.replace("h100-80gb.machines.a3-highgpu-8g", "h100-80gb.machines.p4d.24xlarge")),
     r"not valid TOML|neither in \[gcp_gpu_machines\]|carries a100-40gb"),
    (lambda t: t.replace(HIGH, HIGH.replace('h100-80gb.machines.a3-highgpu-8g', 'h100-80gb.machines."p4d.24xlarge"')),
     r"p4d.24xlarge carries a100-40gb, not h100-80gb"),
])
def test_a_machine_scale_out_is_refused_unless_it_is_a_new_fact_of_a_machine_of_that_chip(tmp_path, edit, message):
    with pytest.raises(HardwareFactsError, match=message):
        load_edited(tmp_path, HIGH, edit)


SERVICE_405B = {"name": "llama-405b-serving", "kind": "inference", "model": {"architecture": "llama3.1-405b"},
                "inference": {"tokens_per_second": 2000, "p99_latency_ms": 100, "framework": "pytorch",
                              "precision": "bf16"},
                "constraints": {"spot": "never", "accelerators": ["h100-80gb"]}}


def model_on(machine: str | None) -> InferenceModel:
    catalog = load_catalog()
    spec = workload_from_mapping(SERVICE_405B, "t.yaml")
    return InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator("h100-80gb"), machine_type=machine)


def test_a_pipeline_hand_off_rides_the_machines_nics():
    chip, high, mega = model_on(None), model_on("a3-highgpu-8g"), model_on("a3-megagpu-8g")
    assert high.scale_out_bytes_per_s * 4 == chip.scale_out_bytes_per_s == mega.scale_out_bytes_per_s * 2
    batch = 64
    latency = chip.pipeline_hops_seconds(2, 0)   # the hops' latency alone, the same on each
    bytes_time = chip.pipeline_hops_seconds(2, batch) - latency
    assert high.pipeline_hops_seconds(2, batch) - latency == pytest.approx(4 * bytes_time, rel=1e-6)


def test_the_chosen_a3_high_plan_states_the_machines_figure():
    data = copy.deepcopy(SERVICE_405B)
    data["hardware"] = {"accelerator": "h100-80gb", "chips": 32, "cloud": "gcp", "machine_type": "a3-highgpu-8g"}
    plan = choose_plan(workload_from_mapping(json.loads(json.dumps(data)), "t.yaml"), load_catalog())
    [hand_off] = [a for a in plan.estimate.assumptions if a.name == "pipeline hand-off"]
    assert "at 100 Gb/s per GPU" in hand_off.value and "gce-gpu-network" in hand_off.source


def test_the_all_to_all_crosses_the_machines_nics():
    shape = moe.MoeShape(experts=64, experts_per_token=8, moe_layers=32, hidden=4096)
    on = {m: moe.layout(shape, "h100-80gb", 1e-3, 0.0, expert_parallel=32, machine_type=m).seconds_per_token
          for m in (None, "p5.48xlarge", "a3-megagpu-8g", "a3-highgpu-8g")}
    assert on[None] == on["p5.48xlarge"] < on["a3-megagpu-8g"] < on["a3-highgpu-8g"]
