"""Blackwell and Ironwood (issue #29): TPU7x, B200 and GB200 are chips of the hardware table, offerings of the
catalog with observed or estimated prices (an estimate never passes as a listed price), sized in the units
they are sold in, built with their placement and NVLink domains, and run by jobs that claim what they need;
`accel job --validate` fails closed when NCCL falls back to a slow path (recorded public log lines)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.catalog.loader import CatalogError
from accel.policies.hardware import shapes
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping
from accel.job.nccl_log import judge, shell_check
from accel.job.service import check_manifests, job_of
from tests.compute_domain_checks import assert_claims_a_valid_compute_domain

ROOT = Path(__file__).resolve().parent.parent
NCCL_LOGS = Path(__file__).parent / "fixtures" / "nccl"
NEW_OFFERINGS = ("gcp-tpu7x", "gcp-a4-highgpu-8g", "gcp-a4x-highgpu-4g", "aws-p6-b200.48xlarge",
                 "aws-p6e-gb200.36xlarge")


@pytest.fixture(scope="module")
def planned():
    return {stack: plan_stack(stack, None, ROOT)
            for stack in ("llama-70b-tpu7x", "llama-70b-a4", "llama-405b-a4x", "llama-70b-p6-b200", "llama-405b-p6e")}


def resources(result, type_token):
    return [r for r in result.capture.resources if r.type == type_token]


def workload(**constraints):
    base = {"clouds": ["gcp", "aws"], "spot": "never", "deadline_days": 30}
    return workload_from_mapping({"name": "w", "kind": "pretrain", "model": {"parameters": "70B"},
                                  "training": {"tokens": "1T", "framework": constraints.pop("framework", "jax")},
                                  "constraints": {**base, **constraints}}, "test")


# ------------------------------------------------------------------------------------------ the table
def test_the_new_chips_carry_their_peaks_memory_and_nvlink_domain_with_sources():
    facts = hardware.current()
    tpu7x, b200, gb200 = facts.chips["tpu7x"], facts.chips["b200"], facts.chips["gb200"]
    assert (tpu7x.peak_bf16_tflops, tpu7x.peak_fp8_tflops, tpu7x.hbm_gbps) == (2307, 4614, 7380)
    assert tuple(map(facts.scale_up_domain_chips, ("b200", "gb200", "h100-80gb"))) == (8, 72, 8)
    assert gb200.source.startswith("estimate"), "GB200's peaks are not read off a datasheet and say so"
    assert facts.chips["b300"].selectable and "nvidia-hgx-b300-secondary" in facts.chips["b300"].source
    for chip in (tpu7x, b200, gb200):
        assert chip.selectable and chip.source


def test_tpu7x_slices_are_the_base_shapes_then_cubes_of_4_up_to_144_cubes():
    topologies = shapes.valid_topologies("tpu7x")
    assert topologies[:4] == ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
    assert "12x12x64" in topologies and shapes.topology_chips("12x12x64") == 144 * 64
    for bad in ("4x4x6", "16x16x40", "4x4x260"):
        with pytest.raises(shapes.ShapeError):
            shapes.check_topology("tpu7x", bad)
    assert shapes.hosts_per_slice("tpu7x", "4x4x8") == 32 and shapes.tpu_vm_type("tpu7x", 128) == "tpu7x-256"
    assert hardware.current().tpu_generations["tpu7x"].placement == "workload-policy"


def test_fleets_come_in_whole_ultraservers_and_nvl72_racks():
    facts = hardware.current()
    assert facts.node_step("p6e-gb200.36xlarge") == 9 and facts.node_step("a4x-highgpu-4g") == 18
    assert facts.node_step("p6-b200.48xlarge") == 1 and facts.node_step("a4-highgpu-8g") == 1
    assert facts.nvlink_spans_nodes("a4x-highgpu-4g") and not facts.nvlink_spans_nodes("a4-highgpu-8g")


# ------------------------------------------------------------------------------------------ prices
def test_every_new_offering_is_in_the_catalog_with_dated_prices():
    catalog = load_catalog()
    for offering_id in NEW_OFFERINGS:
        offering = catalog.offering(offering_id)
        for info in offering.regions.values():
            assert info.on_demand.as_of is not None and info.on_demand.source
    # Listed: p6-b200 on-demand (EC2 list, two snapshots) and p6e's Capacity Block rate; estimated: the rest.
    assert not catalog.offering("aws-p6-b200.48xlarge").regions["us-east-1"].on_demand.estimate
    assert not catalog.offering("aws-p6e-gb200.36xlarge").regions["us-east-1"].on_demand.estimate
    for offering_id in ("gcp-tpu7x", "gcp-a4-highgpu-8g", "gcp-a4x-highgpu-4g"):
        assert catalog.offering(offering_id).unpriced, offering_id


def test_an_estimate_cannot_be_passed_off_as_a_listed_price(tmp_path):
    overlay = tmp_path / "sneaky.yaml"
    overlay.write_text("version: sneaky\nprices:\n  - offering: gcp-tpu7x\n"
                       "    on_demand: {usd: 6.785, source: gcp-tpu7x-estimate-2026, estimate: false}\n")
    with pytest.raises(CatalogError, match="estimate"):
        load_catalog(overlay)


def test_an_estimated_offering_is_labelled_and_ranks_after_listed_prices():
    choice = choose(workload(clouds=["gcp"], deadline_days=60), load_catalog())  # flex-start TPU7x is capped at the hosts the mode supplies (docs/capacity.md): 30 days is too tight for it
    tpu7x = [o for o in choice.options if o.offering == "gcp-tpu7x"]
    assert tpu7x and all(o.price_estimate for o in tpu7x)
    assert not choice.chosen.price_estimate
    first_estimate = next(i for i, o in enumerate(choice.options) if o.offering == "gcp-tpu7x")
    assert all(not o.price_estimate or o.offering != "gcp-tpu7x" for o in choice.options[:first_estimate])
    # The rationale says what the estimate would cost and why it was not chosen on it.
    assert any(line.startswith("Price: TPU7x") and "(price: estimate)" in line for line in choice.rationale)


def test_tpu7x_runs_jax_and_pytorch_xla_not_tensorflow():
    choice = choose(workload(clouds=["gcp"], framework="tensorflow"), load_catalog())
    assert not any(o.offering == "gcp-tpu7x" for o in choice.options)
    reasons = {r["offering"]: r["reasons"] for r in choice.rejected}
    assert any("TPU tpu7x runs jax and pytorch-xla" in reason for reason in reasons["gcp-tpu7x"])


def test_reserved_only_machines_are_sized_only_on_declared_capacity():
    choice = choose(workload(clouds=["aws"], framework="pytorch"), load_catalog())
    assert not any(o.offering == "aws-p6e-gb200.36xlarge" for o in choice.options)
    reasons = {r["offering"]: r["reasons"] for r in choice.rejected}
    assert any("sold only through Capacity Blocks" in reason for reason in reasons["aws-p6e-gb200.36xlarge"])


# ------------------------------------------------------------------------------------------ what gets built
def test_a_tpu7x_slice_is_placed_by_a_workload_policy_of_its_topology(planned):
    result = planned["llama-70b-tpu7x"]
    [policy] = resources(result, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x8x8"}
    assert policy.inputs["region"] == "us-central1"
    [pool] = [r for r in resources(result, "gcp:container/nodePool:NodePool") if r.name.endswith("-tpu-s0")]
    assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "policyName": policy.inputs["name"],
                                              "tpuTopology": "4x8x8"}
    assert pool.inputs["nodeConfig"]["machineType"] == "tpu7x-standard-4t"
    [cluster] = resources(result, "gcp:container/cluster:Cluster")
    assert cluster.inputs["minMasterVersion"] == hardware.current().tpu_generations["tpu7x"].gke_min_version


def test_a4x_racks_are_placed_1x72_and_run_the_dra_driver(planned):
    result = planned["llama-405b-a4x"]
    [policy] = resources(result, "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"]["acceleratorTopology"] == "1x72"
    [pool] = [r for r in resources(result, "gcp:container/nodePool:NodePool") if r.name.endswith("-gpu-pool")]
    assert pool.inputs["placementPolicy"]["policyName"] == policy.inputs["name"]
    releases = {r.inputs["name"]: r.inputs for r in resources(result, "kubernetes:helm.sh/v3:Release")}
    dra = releases["nvidia-dra-driver-gpu"]
    assert dra["version"] == "25.12.0" and dra["values"]["resources"] == {"gpus": {"enabled": False}}
    assert dra["values"]["nvidiaDriverRoot"] == "/home/kubernetes/bin/nvidia"


def test_a4_runs_rdma_with_eight_subnets_and_the_paired_gib_installer(planned):
    result = planned["llama-70b-a4"]
    [pool] = [r for r in resources(result, "gcp:container/nodePool:NodePool") if r.name.endswith("-gpu-pool")]
    assert len(pool.inputs["networkConfig"]["additionalNodeNetworkConfigs"]) == 1 + 8
    assert "nvidia-dra-driver-gpu" not in {r.inputs["name"] for r in resources(result, "kubernetes:helm.sh/v3:Release")}


def test_p6e_ultraserver_launches_into_its_capacity_block_on_arm(planned):
    result = planned["llama-405b-p6e"]
    [group] = [r for r in resources(result, "aws:eks/nodeGroup:NodeGroup") if r.name.endswith("-gpu-nodes")]
    assert group.inputs["amiType"] == "AL2023_ARM_64_NVIDIA" and group.inputs["capacityType"] == "CAPACITY_BLOCK"
    [template] = [r for r in resources(result, "aws:ec2/launchTemplate:LaunchTemplate") if r.name.endswith("-gpu-template")]
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    interfaces = template.inputs["networkInterfaces"]
    assert len(interfaces) == 4 and interfaces[0]["interfaceType"] == "efa"
    # EC2's multi-card rule for P6: every further card's EFA-only interface at device 0 (the P5 section: 1).
    assert [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces[1:]] == \
        [(card, 0, "efa-only") for card in (1, 2, 3)]
    assert group.inputs["scalingConfig"]["maxSize"] == 18


# ------------------------------------------------------------------------------------------ the jobs
@pytest.mark.parametrize("stack", ["llama-405b-a4x", "llama-405b-p6e"])
def test_gb200_jobs_claim_a_compute_domain_valid_against_the_upstream_crd(planned, stack):
    result = planned[stack]
    pod = assert_claims_a_valid_compute_domain(result, job_of(result))
    assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in pod["tolerations"]


@pytest.mark.parametrize("stack", ["llama-70b-tpu7x", "llama-70b-a4", "llama-70b-p6-b200"])
def test_the_other_new_stacks_write_a_schedulable_job_without_a_compute_domain(planned, stack):
    job = job_of(planned[stack])
    assert "ComputeDomain" not in {m["kind"] for m in job.manifests}
    assert check_manifests(planned[stack], job.manifests).ok


# ------------------------------------------------------------------------------------------ NCCL transport
CASES = [
    ("efa-healthy-p5en.log", "efa", True),
    ("efa-broken-devices.log", "efa", False),     # the provider failed: a slow-path line and no fast network
    ("efa-old-plugin-ring.log", "efa", False),    # no "Using network" line: cannot prove the fast path
    ("socket-fallback.log", "rdma", False),
    ("ib-healthy-with-bootstrap-socket.log", "rdma", True),   # NET/Socket bootstrap line is not a fallback
    ("ib-healthy-with-bootstrap-socket.log", "efa", False),   # IB is not the EFA transport
]


@pytest.mark.parametrize("fixture,fabric,healthy", CASES)
def test_the_nccl_transport_check_on_recorded_logs(fixture, fabric, healthy):
    log = (NCCL_LOGS / fixture).read_text()
    verdict = judge(log, fabric)
    assert verdict.ok is healthy, verdict.problems
    # The validation pod runs the same judgement as shell: it agrees on every recorded log.
    run = subprocess.run(["bash", "-c", shell_check(fabric, str(NCCL_LOGS / fixture))], capture_output=True, text=True)
    assert (run.returncode == 0) is healthy, run.stdout + run.stderr


def test_a_socket_fallback_line_is_named_in_the_verdict():
    verdict = judge("NCCL INFO Using network Socket\n", "rdma")
    assert not verdict.ok and any("slow path" in p for p in verdict.problems)
    assert judge("NCCL INFO Using network gIB\n", "rdma").ok


def test_the_fabric_check_sets_nccl_info_and_fails_closed(planned):
    from accel.job.manifests import JobOptions
    job = job_of(planned["llama-70b-p6-b200"], JobOptions(validate=True))
    [jobset] = job.manifests
    container = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NCCL_DEBUG"] == "INFO" and [e["name"] for e in container["env"]].count("NCCL_DEBUG") == 1
    assert "Using network (Libfabric|AWS Libfabric)" in container["command"][-1]


def test_a_declared_ultraserver_block_is_sized_within_its_count_in_whole_ultraservers():
    from accel.policies.cloud.reservations import DeclaredReservation

    # Eight weeks (a 7-day step of the block grid): the run on 36 trays is longer than two weeks, and a block
    # shorter than the run is not sized on at all (tests/test_capacity_residues.py).
    block = DeclaredReservation(name="cr-0b200e72a1b2c3d4e", kind="capacity-block", machineType="p6e-gb200.36xlarge",
                                count=36, zone="us-east-1-dfw-2a", start="2030-01-06T11:30:00Z",
                                end="2030-03-03T11:30:00Z")
    choice = choose(workload(clouds=["aws"], framework="pytorch", deadline_days=60), load_catalog(), reservations=[block])
    p6e = [o for o in choice.options if o.offering == "aws-p6e-gb200.36xlarge"]
    assert p6e and all(o.hosts <= 36 and o.hosts % 9 == 0 and o.provisioning == "capacity-block" for o in p6e)


def test_a_workload_policy_is_replaced_delete_first_because_its_name_is_fixed(monkeypatch):
    """Every field of a resource policy forces a new one and its name is the pool's: created before the old one
    is deleted, the replacement would collide with it."""
    import pulumi

    from accel.components.gcp import workload_policy as module

    made = {}

    def capture(resource_name, opts=None, **args):
        made.update(resource_name=resource_name, opts=opts, args=args)

    monkeypatch.setattr(module.gcp.compute, "ResourcePolicy", capture)
    module.workload_policy("c-tpu-placement", zone="us-central1-c", accelerator_topology="4x8x8", project=None,
                           opts=pulumi.ResourceOptions(protect=False))
    assert made["opts"].delete_before_replace is True and made["args"]["region"] == "us-central1"
