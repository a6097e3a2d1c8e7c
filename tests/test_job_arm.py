"""Jobs on Arm (Grace) GPU nodes: A4X, p6e-gb200 and GB200 inventories run images built for arm64.

An amd64-only image on an Arm node fails with "exec format error"; the fabric check runs the nccl-tests image of its
fabric built for the nodes' architecture; and its pass line is what the all-reduce crosses: NVLink within one NVLink
domain, the scale-out network beyond it.
"""

from __future__ import annotations

import copy

import pytest

from accel.base.errors import UsageError
from accel.job import rules
from accel.job.architectures import chip_arch, image_architectures, machine_arch
from accel.job.check import check
from accel.job.declared import declared_cluster
from accel.job.facts import runtime
from accel.job.manifests import JobOptions
from accel.job.service import job_of
from accel.job.validate import pass_line
from accel.policies.plan import Plan
from tests.conftest import planned_result

# An image the table states for amd64 only (one the job writes: the x86 fabric check's; Google publishes its Arm
# build as a separate image).
AMD64_ONLY = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1"


def pod_spec(manifests):
    jobset = next(m for m in manifests if m["kind"] == "JobSet")
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def arch_findings(stack: str, manifests) -> tuple[list, list]:
    result = planned_result(stack)
    report = check(manifests, declared_cluster(result.capture, result.existing_cluster))
    errors = [e for e in report.errors if "pod/image-architecture" in str(e)]
    warnings = [w for w in report.warnings if "pod/image-architecture" in str(w)]
    return errors, warnings


def plan_of(stack: str) -> Plan:
    return Plan.model_validate(planned_result(stack).plan)


# ---- what runtime.yaml states -------------------------------------------------------------------------------

def test_every_fabric_check_image_is_stated_for_the_architecture_it_runs_on():
    for fabric, by_arch in runtime()["validate"]["nccl_tests_images"].items():
        assert by_arch["source"], fabric
        for arch, image in by_arch.items():
            if arch == "source":
                continue
            stated = image_architectures(image)
            assert stated.status != "unknown", f"{image} ({fabric}, {arch}) has no image_architectures row"
            assert stated.runs_on(arch) is not False, f"{image} is stated without {arch}"


def test_every_default_gpu_image_states_its_architectures_with_a_source():
    for framework in ("pytorch-gpu", "jax-gpu", "vllm"):
        stated = image_architectures(runtime()["defaults"][framework]["image"])
        assert stated.status in ("stated", "unconfirmed") and stated.source, framework


def test_node_architecture_comes_from_the_machine_type_or_the_chip():
    assert machine_arch("a4x-highgpu-4g") == "arm64" and machine_arch("p6e-gb200.36xlarge") == "arm64"
    assert machine_arch("p5.48xlarge") == "amd64"      # EC2 says x86_64: the same architecture
    assert chip_arch("gb200") == "arm64"               # every GB200 machine type is a Grace host
    assert chip_arch("h100-80gb") == "amd64"


def test_one_derivation_of_a_machine_types_kubernetes_arch_serves_the_pools_and_the_job():
    """components/kubernetes/pools.py gpu_node_arch (the node installers, the Arm toleration) and the job's
    machine_arch (its checks and images) both read HardwareFacts.kubernetes_arch: the clouds' spellings (EC2's
    x86_64, Compute Engine's amd64) become Kubernetes' once, for every GPU machine type of the table."""
    from accel.components.kubernetes.pools import gpu_node_arch
    from accel.policies import hardware
    from accel.policies.plan import GpuPool

    facts = hardware.current()
    machines = [*facts.gcp_gpu_machines.values(), *facts.aws_gpu_instances.values()]
    assert {m.arch for m in machines} >= {"amd64", "x86_64", "arm64"}   # the spellings the table holds
    for m in machines:
        arch = facts.kubernetes_arch(m.name)
        assert arch in ("amd64", "arm64"), m.name
        pool = GpuPool.model_construct(accelerator=m.chip, machine_type=m.name, gpus_per_node=m.gpus, nodes=1)
        assert gpu_node_arch(pool) == machine_arch(m.name) == arch, m.name
        assert facts.is_arm(m.name) is (arch == "arm64")
    assert {m.name for m in machines if facts.kubernetes_arch(m.name) == "arm64"} == {"a4x-highgpu-4g",
                                                                                      "p6e-gb200.36xlarge",
                                                                                      "p6e-gb300.36xlarge"}
    assert facts.kubernetes_arch("not-a-machine") is None and machine_arch(None) is None


@pytest.mark.parametrize("stack, pool_arch", [("onprem-gb200", "arm64"), ("llama-405b-a4x", "arm64"),
                                              ("llama-405b-p6e", "arm64"), ("llama-70b-a4", "amd64")])
def test_the_declared_gpu_pools_know_their_architecture(stack, pool_arch):
    result = planned_result(stack)
    cluster = declared_cluster(result.capture, result.existing_cluster)
    gpu_pools = [p for p in cluster.pools if any("gpu" in r for r in p.allocatable)]
    assert gpu_pools and {p.arch for p in gpu_pools} == {pool_arch}


# ---- the rule: an image of another architecture is refused ----------------------------------------------------

def test_an_amd64_only_image_on_arm_nodes_is_refused_naming_the_image_option():
    assert image_architectures(AMD64_ONLY).architectures == ("amd64",)
    job = job_of(planned_result("llama-405b-a4x"), JobOptions(image=AMD64_ONLY))
    errors, _ = arch_findings("llama-405b-a4x", job.manifests)
    assert errors and "exec format error" in str(errors[0]) and "--image" in str(errors[0])
    assert errors[0].field.endswith("containers[0].image")


def test_the_same_image_on_amd64_nodes_is_not_flagged():
    job = job_of(planned_result("llama-70b-a4"), JobOptions(image=AMD64_ONLY))
    assert arch_findings("llama-70b-a4", job.manifests) == ([], [])


def test_an_image_without_a_confirmed_arm64_build_is_a_warning_on_arm_nodes():
    # The default PyTorch image states arm64 (Megatron-LM's CI builds on it for arm64): nothing to warn of.
    assert arch_findings("onprem-gb200", job_of(planned_result("onprem-gb200"), JobOptions()).manifests) == ([], [])
    job = job_of(planned_result("onprem-gb200"), JobOptions(image="ghcr.io/nvidia/jax:maxtext-2026-03-21"))
    errors, warnings = arch_findings("onprem-gb200", job.manifests)
    assert errors == [] and len(warnings) == 1 and "unconfirmed" in str(warnings[0])
    job = job_of(planned_result("onprem-gb200"), JobOptions(image="registry.example/team/trainer:1.0"))
    assert "states no architectures" in str(arch_findings("onprem-gb200", job.manifests)[1][0])


def test_a_pod_that_selects_arm64_itself_is_checked_without_the_cluster():
    manifests = copy.deepcopy(job_of(planned_result("llama-70b-a4"), JobOptions(image=AMD64_ONLY)).manifests)
    scope = rules.Scope(manifests)
    rule = rules.RULES["pod/image-architecture"]
    assert rules.run(scope, [rule]) == []
    pod_spec(manifests).setdefault("nodeSelector", {})["kubernetes.io/arch"] = "arm64"
    assert [v.breach.field for v in rules.run(scope, [rule])] == [
        "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image"]


# ---- the fabric check on Arm nodes ----------------------------------------------------------------------------

# One node runs nccl-tests in the fabric's image (accel/job/validate.py tests_image); across nodes the check is
# torchrun's in the training image (tests/test_job_fabric_launch.py). The image each machine's nodes would get:

def nccl_tests_image(stack: str) -> tuple[str, list[str]]:
    from accel.job import plan_view
    from accel.job.validate import tests_image

    return tests_image(plan_view.hardware(plan_of(stack)), "the pass line")


def test_a4x_nccl_tests_image_is_googles_arm64_gib_diagnostic_image():
    image, _ = nccl_tests_image("llama-405b-a4x")
    assert image == "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic-arm64:v1.1.0"
    assert image_architectures(image).runs_on("arm64") is True


def test_x86_rdma_nccl_tests_image_is_the_gib_diagnostic_image_not_the_tcpxo_plugin():
    image, _ = nccl_tests_image("llama-70b-a4")
    assert image == "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.1"


def test_p6e_nccl_tests_image_is_aws_arm64_gb200_image_and_says_its_tag_moves():
    image, notes = nccl_tests_image("llama-405b-p6e")
    assert image == "public.ecr.aws/u1m6g1t5/nccl-tests-arm64:latest"
    assert any("moving tag" in line for line in notes)


def test_one_arm_node_without_a_stated_nccl_tests_image_is_refused_with_its_pass_line():
    # One node runs nccl-tests' all_reduce_perf, and no arm64 image is stated for a GB200 inventory's own network.
    from accel.job.service import context_of
    from accel.job.validate import validation_job

    result = planned_result("onprem-gb200")
    one_node = with_nodes(plan_of("onprem-gb200"), 1)
    with pytest.raises(UsageError, match=r"no nccl-tests image for arm64 nodes.*at least \d+(\.\d+)? GB/s"):
        validation_job(one_node, context_of(result, one_node))


def test_an_arm_inventory_across_nodes_runs_the_torchrun_check_in_the_training_image():
    # Across nodes the check is torchrun's (tests/test_job_fabric_launch.py): no nccl-tests image is needed.
    job = job_of(planned_result("onprem-gb200"), JobOptions(validate=True))
    assert pod_spec(job.manifests)["containers"][0]["image"] == runtime()["defaults"]["pytorch-gpu"]["image"]


# ---- the pass line: NVLink within one domain, the scale-out network beyond it ---------------------------------

def with_nodes(plan: Plan, nodes: int) -> Plan:
    return plan.model_copy(update={"gpu": plan.gpu.model_copy(update={"nodes": nodes})})


def test_a_gb200_inventory_beyond_one_nvlink_domain_passes_on_the_scale_out_figure():
    plan = plan_of("onprem-gb200")
    assert plan.gpu.nodes * plan.gpu.gpus_per_node > 72          # 24 nodes of 4: one rack and part of another
    line, why = pass_line(plan)
    # 4 GPUs x 400 Gb/s ([collective_fabrics.gb200] scale_out_gbps) = 200 GB/s per node, 0.7 of it; not NVLink's 630.
    assert line == 140.0 and "scale-out" in why


def test_gb200_nodes_within_one_nvlink_domain_pass_on_the_nvlink_figure():
    line, why = pass_line(with_nodes(plan_of("onprem-gb200"), 18))     # 72 GPUs: one NVL72 rack
    assert line == 630.0 and "within one NVLink domain" in why
    line, why = pass_line(plan_of("llama-405b-p6e"))                    # one u-p6e-gb200x72 UltraServer
    assert line == 630.0 and "within one NVLink domain" in why


def test_a4x_across_two_racks_passes_on_its_nic_line_rate():
    line, why = pass_line(plan_of("llama-405b-a4x"))                    # 36 nodes: two 18-node racks
    assert line == 140.0 and "a4x-highgpu-4g's scale-out" in why and "A4X: 4 x 400 Gb/s" in why


def test_multi_node_x86_pass_lines_are_unchanged():
    assert pass_line(plan_of("llama-70b-a4"))[0] == 280.0               # 0.7 x 400 GB/s (8 x 400 Gbps CX-7)
    assert pass_line(plan_of("llama-405b-h100-aws"))[0] == 280.0        # 0.7 x 400 GB/s (P5 3,200 Gbps EFA)
