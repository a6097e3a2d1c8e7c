"""The documented public API: package exports that load lazily, and pools written by hand."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings, strategies as st

import accel.components
import accel.components.aws
import accel.components.gcp
import accel.policies
from accel.base.errors import ComponentArgsError
from accel.components.gcp import GpuNodePool, GpuNodePoolArgs, TpuSlice, TpuSliceArgs
from accel.components.gcp.cluster import ClusterRef
from accel.components.gcp.tpu import check_tpu_pool
from accel.components.tags import ResourceTags
from accel.policies import gpu_pool, hardware, tpu_pool
from accel.policies.hardware import shapes
from accel.policies.workload import ACCELERATOR_IDS

TAGS = ResourceTags(workload="llama-70b", stack="dev")
CLUSTER = ClusterRef(name="train", location="us-east5", node_service_account_email="nodes@acme.iam.gserviceaccount.com",
                     upgrades_paused=True)
NODE_POOL = "gcp:container/nodePool:NodePool"

PACKAGES = [accel.components, accel.components.gcp, accel.components.aws, accel.policies]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_every_exported_name_resolves_to_the_object_of_its_module(package):
    for name in package.__all__:
        value = getattr(package, name)
        assert value.__name__ == name
        assert value.__module__.startswith(package._EXPORTS[name])


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.__name__)
def test_an_unknown_name_is_an_attribute_error(package):
    with pytest.raises(AttributeError, match="NoSuchThing"):
        package.NoSuchThing  # noqa: B018


def _modules_loaded_by(code: str) -> set[str]:
    probe = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_a_gcp_only_program_never_imports_the_aws_sdk():
    loaded = _modules_loaded_by("""
        from accel.components.gcp import *
        from accel.components import TrainingCluster, ResourceTags
        from accel.policies import Plan, choose, tpu_pool, gpu_pool
        import accel.components.gcp as gcp
        [getattr(gcp, name) for name in gcp.__all__]
    """)
    assert "pulumi_gcp" in loaded
    assert "pulumi_aws" not in loaded


def test_an_aws_only_program_never_imports_the_gcp_sdk():
    loaded = _modules_loaded_by("""
        import accel.components.aws as aws
        [getattr(aws, name) for name in aws.__all__]
    """)
    assert "accel.components.aws.gpu" in loaded
    assert "pulumi_gcp" not in loaded


def test_importing_the_packages_loads_no_provider_sdk():
    loaded = _modules_loaded_by("import accel.components, accel.components.gcp, accel.components.aws, accel.policies")
    assert not {"pulumi_gcp", "pulumi_aws", "pulumi_kubernetes"} & loaded


# --- TPU pools from generation + topology ---------------------------------------------------------

TPU_SHAPES = st.sampled_from(sorted(hardware.current().tpu_generations)).flatmap(
    lambda gen: st.tuples(st.just(gen), st.sampled_from(shapes.valid_topologies(gen)), st.integers(1, 64)))


@settings(max_examples=60, deadline=None)
@given(TPU_SHAPES)
def test_a_hand_written_tpu_pool_passes_the_components_own_check(shape):
    generation, topology, slices = shape
    pool = tpu_pool(generation, topology, slices)
    assert check_tpu_pool("TpuSlice", pool).name == generation
    assert pool.chips_per_slice == pool.chips_per_host * pool.hosts_per_slice


def test_a_tpu_slice_from_generation_and_topology_declares_one_pool_per_slice(declare):
    args = TpuSliceArgs.from_shape("v5p", "4x4x4", slices=2, cluster=CLUSTER, zone="us-east5-a", tags=TAGS)
    pools = declare(lambda: TpuSlice("tpu", args)).of_type(NODE_POOL)
    assert len(pools) == 2
    assert {p.inputs["nodeConfig"]["machineType"] for p in pools} == {shapes.machine_type("v5p", "4x4x4")}
    assert {p.inputs["nodeCount"] for p in pools} == {shapes.hosts_per_slice("v5p", "4x4x4")}


@pytest.mark.parametrize(("call", "message"), [
    (lambda: tpu_pool("v9", "2x2"), r"^TpuSlice\.generation: 'v9' is not valid; allowed: v4, v5p, v5e, v6e"),
    (lambda: tpu_pool("v5p", "3x3x3"), r"^TpuSlice\.topology: '3x3x3' is not valid"),
    (lambda: tpu_pool("v5e", "2x2", slices=0), r"^TpuSlice\.slices: 0 is not valid; allowed: 1\.\.64"),
    (lambda: TpuSliceArgs.from_shape("v5e", "2x2", cluster=CLUSTER, zone="us-east5-a", tags=TAGS,
                                     provisioning="cheap"), r"^TpuSlice\.provisioning: 'cheap' is not valid"),
    (lambda: gpu_pool("h100", 8), r"^GpuNodePool\.accelerator: 'h100' is not valid; GPUs on gcp: .*h100-80gb"),
    (lambda: gpu_pool("h100-80gb", 3, machine_type="a3-highgpu-2g"),
     r"^GpuNodePool\.gpus: 3 is not valid; a3-highgpu-2g carries 2 GPUs"),
    (lambda: gpu_pool("h100-80gb", 0), r"^GpuNodePool\.gpus: 0 is not valid"),
    (lambda: gpu_pool("l4", 2, machine_type="p5.48xlarge"), r"^GpuNodePool\.machine_type: 'p5.48xlarge' is not valid"),
])
def test_a_hand_written_pool_error_names_the_property(call, message):
    with pytest.raises(ComponentArgsError, match=message):
        call()


# --- GPU pools from accelerator + count -------------------------------------------------------------

GCP_GPUS = sorted({m.chip for m in hardware.current().gcp_gpu_machines.values()} & set(ACCELERATOR_IDS))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(GCP_GPUS), st.integers(1, 16))
def test_a_hand_written_gpu_pool_is_whole_nodes_of_that_gpu_that_the_component_accepts(chip, nodes):
    machine = max((m for m in hardware.current().gcp_gpu_machines.values() if m.chip == chip), key=lambda m: m.gpus)
    # Whole nodes, in the machine's node step (A4X: whole NVL72 racks of 18 nodes).
    gpus = machine.gpus * nodes * hardware.current().node_step(machine.name)
    args = GpuNodePoolArgs.from_gpus(chip, gpus, cluster=CLUSTER, zone="us-east5-a", tags=TAGS)
    assert args.pool.gpus_per_node * args.pool.nodes == gpus
    assert hardware.current().gcp_gpu_machines[args.pool.machine_type].chip == chip


def test_a_gpu_pool_from_accelerator_and_count_declares_a_node_pool_of_that_machine(declare):
    args = GpuNodePoolArgs.from_gpus("h100-80gb", 16, cluster=CLUSTER, zone="us-east5-a", tags=TAGS)
    pools = declare(lambda: GpuNodePool("gpu", args)).of_type(NODE_POOL)
    assert [p.inputs["nodeConfig"]["machineType"] for p in pools] == [args.pool.machine_type]
    assert pools[0].inputs["autoscaling"]["totalMaxNodeCount"] == 2


def test_the_aws_gpu_group_from_accelerator_and_count_picks_an_instance_of_that_gpu():
    from accel.components.aws import GpuNodeGroupArgs
    args = GpuNodeGroupArgs.from_gpus("h100-80gb", 16, cluster_name="train", node_role_arn="arn:aws:iam::1:role/n",
                                      subnet_ids={"us-east-1a": "subnet-1"}, security_group_ids=["sg-1"], tags=TAGS)
    instance = hardware.current().aws_gpu_instances[args.pool.machine_type]
    assert (instance.chip, args.pool.nodes * instance.gpus) == ("h100-80gb", 16)


def test_no_submodule_shadows_an_exported_name_once_imported():
    """Importing a submodule sets it as an attribute of its package: a module named like an exported
    function (accel.policies.choose) would replace the function for everyone after the first import."""
    import importlib
    import pkgutil

    for package in PACKAGES:
        for info in pkgutil.iter_modules(package.__path__):
            if info.name in package._EXPORTS:
                raise AssertionError(f"{package.__name__}.{info.name} is both a submodule and an exported name")
        for name in package.__all__:
            assert not callable(getattr(package, name)) or getattr(package, name).__name__ == name
    importlib.import_module("accel.policies.selection.choose")
    assert accel.policies.choose.__name__ == "choose"
