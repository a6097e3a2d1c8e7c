"""The Kubernetes layer: pinned charts, Kueue flavors and quota from the plan's chips, identity, ordering."""

from __future__ import annotations

import pulumi
import re

import pytest
from pydantic import ValidationError

from accel.components.kubernetes import (
    AcceleratorPool,
    AcceleratorStack,
    AcceleratorStackArgs,
    AcceleratorStackError,
    CloudIdentity,
    ExistingCluster,
    Toleration,
    eks_gpu_pool,
    existing_cluster_provider,
    gke_gpu_pool,
    gke_tpu_pool,
    inventory_pools,
    plan_pools,
)
from accel.components.kubernetes import GkeNetworkAttachment, gpudirect_attachments
from accel.components.kubernetes.charts import load_chart_pins
from accel.components.tags import ResourceTags
from accel.policies.hardware import shapes
from accel.policies.plan import Capacity, CatalogRef, Estimate, GpuPool, Option, Plan, TpuPool
from accel.policies.workload import WorkloadSpec
from tests.harness import rejected

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform")
KUEUE = "kueue.x-k8s.io/v1beta1"
PINS = load_chart_pins()


def v5p_pool(topology: str = "4x4x8", slices: int = 2, spot: bool = False) -> AcceleratorPool:
    tpu = TpuPool(accelerator="tpu-v5p", topology=topology, chips_per_slice=shapes.topology_chips(topology),
                  slices=slices, machine_type=shapes.machine_type("v5p", topology),
                  chips_per_host=shapes.chips_per_host("v5p", topology),
                  hosts_per_slice=shapes.hosts_per_slice("v5p", topology), gke_accelerator="tpu-v5p-slice",
                  tpu_vm_type=shapes.tpu_vm_type("v5p", shapes.topology_chips(topology)),
                  runtime_version="v2-alpha-tpuv5")
    return gke_tpu_pool(tpu, capacity=Capacity(provisioning="spot" if spot else "on-demand"))


def h100_pool(nodes: int = 4, efa: bool = True) -> AcceleratorPool:
    gpu = GpuPool(accelerator="h100-80gb", machine_type="p5.48xlarge", gpus_per_node=8, nodes=nodes,
                  **({"fabric": "efa", "efa_interfaces": 32} if efa else {}))
    return eks_gpu_pool(gpu)


def stack_program(pools, **overrides):
    def program():
        import pulumi_kubernetes as k8s

        provider = k8s.Provider("cluster", kubeconfig="{}")
        args = AcceleratorStackArgs(tags=TAGS, pools=pools, **overrides)
        AcceleratorStack("llama", args, opts=pulumi.ResourceOptions(provider=provider))
    return program


def crd(capture, kind):
    found = capture.of_type(f"kubernetes:{KUEUE}:{kind}")
    assert found, f"no {kind} declared"
    return found


# ---- charts ---------------------------------------------------------------------------------------

def test_kueue_and_jobset_are_installed_at_the_pinned_versions(declare):
    capture = declare(stack_program([v5p_pool()]))
    releases = {r.inputs["name"]: r.inputs for r in capture.of_type("kubernetes:helm.sh/v3:Release")}
    assert releases["kueue"]["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert releases["kueue"]["version"] == PINS.kueue.version == "0.14.1"
    assert releases["kueue"]["namespace"] == "kueue-system"
    assert releases["jobset"]["chart"] == "oci://registry.k8s.io/jobset/charts/jobset"
    assert releases["jobset"]["version"] == PINS.jobset.version == "0.10.1"


def test_a_tpu_stack_installs_no_nvidia_software(declare):
    capture = declare(stack_program([v5p_pool()]))
    names = {r.inputs["name"] for r in capture.of_type("kubernetes:helm.sh/v3:Release")}
    assert names == {"kueue", "jobset"}


def test_the_device_plugin_comes_from_nvidias_repository_at_its_pin(declare):
    capture = declare(stack_program([h100_pool()], install_device_plugin=True))
    plugin = capture.named("llama-nvidia-device-plugin").inputs
    assert plugin["chart"] == "nvidia-device-plugin"
    assert plugin["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    assert plugin["version"] == PINS.nvidia_device_plugin.version == "0.17.1"


def test_the_device_plugin_runs_on_the_gpu_pools_nodes(declare):
    capture = declare(stack_program([h100_pool()], install_device_plugin=True))
    values = capture.named("llama-nvidia-device-plugin").inputs["values"]
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [
        {"key": "eks.amazonaws.com/capacityType", "operator": "In", "values": ["ON_DEMAND"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
    ]}]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]


def test_the_gpu_operator_replaces_the_device_plugin_on_driverless_nodes(declare):
    capture = declare(stack_program([h100_pool(efa=False)], install_gpu_operator=True))
    names = {r.inputs["name"] for r in capture.of_type("kubernetes:helm.sh/v3:Release")}
    assert names == {"gpu-operator", "kueue", "jobset"}
    operator = capture.named("llama-gpu-operator").inputs
    assert (operator["chart"], operator["version"]) == ("gpu-operator", "v25.3.0")
    assert operator["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}


def test_efa_pools_get_the_efa_device_plugin_from_the_eks_charts_repository(declare):
    capture = declare(stack_program([h100_pool()], install_device_plugin=True))
    plugin = capture.named("llama-aws-efa-k8s-device-plugin").inputs
    assert (plugin["chart"], plugin["version"]) == ("aws-efa-k8s-device-plugin", PINS.aws_efa_device_plugin.version)
    assert plugin["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}
    assert plugin["namespace"] == "kube-system"
    # The daemonset must run on the GPU nodes, which carry the nvidia.com/gpu taint.
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in plugin["values"]["tolerations"]


def test_pools_without_efa_get_no_efa_device_plugin(declare):
    capture = declare(stack_program([h100_pool(efa=False)], install_device_plugin=True))
    names = {r.inputs["name"] for r in capture.of_type("kubernetes:helm.sh/v3:Release")}
    assert names == {"nvidia-device-plugin", "kueue", "jobset"}


def test_asking_for_the_efa_plugin_without_an_efa_pool_is_rejected(declare):
    with pytest.raises(AcceleratorStackError, match="install_efa_device_plugin: true, but no pool provides"):
        declare(stack_program([h100_pool(efa=False)], install_efa_device_plugin=True))


def test_a_cluster_with_kueue_already_gets_only_the_kueue_objects(declare):
    capture = declare(stack_program([v5p_pool()], install_kueue=False, install_jobset=False))
    assert capture.of_type("kubernetes:helm.sh/v3:Release") == []
    assert len(crd(capture, "ClusterQueue")) == 1


def test_every_chart_pin_is_exact():
    for pin in (PINS.kueue, PINS.jobset, PINS.nvidia_device_plugin, PINS.gpu_operator, PINS.aws_efa_device_plugin):
        assert pin.version[0].isdigit() or pin.version.startswith("v")
        assert not any(c in pin.version for c in "^~*<>= ")


# ---- Kueue objects ----------------------------------------------------------------------------------

def test_a_tpu_flavor_selects_the_slice_by_accelerator_and_topology(declare):
    capture = declare(stack_program([v5p_pool("4x4x8")]))
    flavor = crd(capture, "ResourceFlavor")[0].inputs
    assert flavor["metadata"]["name"] == "training-tpu-v5p-4x4x8"
    assert flavor["spec"]["nodeLabels"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v5p-slice",
                                            "cloud.google.com/gke-tpu-topology": "4x4x8"}
    assert flavor["spec"]["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_a_spot_tpu_flavor_selects_and_tolerates_spot_nodes(declare):
    capture = declare(stack_program([v5p_pool(spot=True)]))
    spec = crd(capture, "ResourceFlavor")[0].inputs["spec"]
    assert spec["nodeLabels"]["cloud.google.com/gke-spot"] == "true"
    assert {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true",
            "effect": "NoSchedule"} in spec["tolerations"]


def test_a_gpu_flavor_tolerates_the_gpu_taint(declare):
    capture = declare(stack_program([h100_pool()]))
    spec = crd(capture, "ResourceFlavor")[0].inputs["spec"]
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert spec["nodeLabels"]["node.kubernetes.io/instance-type"] == "p5.48xlarge"


@pytest.mark.parametrize("topology, slices, chips", [("2x2x1", 1, 4), ("4x4x8", 2, 256), ("8x8x8", 4, 2048)])
def test_cluster_queue_quota_equals_the_provisioned_tpu_chips(declare, topology, slices, chips):
    capture = declare(stack_program([v5p_pool(topology, slices)]))
    group = crd(capture, "ClusterQueue")[0].inputs["spec"]["resourceGroups"][0]
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert quota["google.com/tpu"] == chips


def test_cluster_queue_quota_equals_whole_gpu_nodes(declare):
    capture = declare(stack_program([h100_pool(nodes=16)]))
    flavor = crd(capture, "ClusterQueue")[0].inputs["spec"]["resourceGroups"][0]["flavors"][0]
    assert {r["name"]: r["nominalQuota"] for r in flavor["resources"]}["nvidia.com/gpu"] == 128


def test_efa_interfaces_are_quota_so_efa_pods_are_admissible(declare):
    # Pods that request vpc.amazonaws.com/efa are admitted only if the ClusterQueue covers it.
    capture = declare(stack_program([h100_pool(nodes=4)]))
    group = crd(capture, "ClusterQueue")[0].inputs["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu", "vpc.amazonaws.com/efa"]
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert quota["vpc.amazonaws.com/efa"] == 128  # 32 interfaces x 4 nodes


def test_cluster_queue_covers_cpu_and_memory_so_pods_are_admissible(declare):
    capture = declare(stack_program([v5p_pool()]))
    group = crd(capture, "ClusterQueue")[0].inputs["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "google.com/tpu"]


def test_mixed_pools_share_one_group_and_each_flavor_holds_only_its_chips(declare):
    capture = declare(stack_program([v5p_pool("2x2x2", 1), h100_pool(nodes=2)]))
    group = crd(capture, "ClusterQueue")[0].inputs["spec"]["resourceGroups"]
    assert len(group) == 1
    quotas = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"] if r["name"] not in ("cpu", "memory")}
              for f in group[0]["flavors"]}
    assert quotas == {"training-tpu-v5p-2x2x2": {"google.com/tpu": 8, "nvidia.com/gpu": 0, "vpc.amazonaws.com/efa": 0},
                      "training-h100-80gb": {"google.com/tpu": 0, "nvidia.com/gpu": 16, "vpc.amazonaws.com/efa": 64}}


def v6e_pod() -> TpuPool:
    return TpuPool(accelerator="tpu-v6e", topology="16x16", chips_per_slice=256, slices=1,
                   machine_type=shapes.machine_type("v6e", "16x16"), chips_per_host=4,
                   hosts_per_slice=shapes.hosts_per_slice("v6e", "16x16"), gke_accelerator="tpu-v6e-slice",
                   tpu_vm_type="v6e-256", runtime_version="v2-alpha-tpuv6e")


def queued_v6e_pool() -> AcceleratorPool:
    return gke_tpu_pool(v6e_pod(), capacity=Capacity(provisioning="queued"))


def test_a_queued_pool_is_admitted_only_through_a_provisioning_request(declare):
    # GKE queued-provisioning pools scale up only for ProvisioningRequests: Kueue must create one.
    capture = declare(stack_program([queued_v6e_pool()]))
    (config,) = crd(capture, "ProvisioningRequestConfig")
    (check,) = crd(capture, "AdmissionCheck")
    assert config.inputs["metadata"]["name"] == check.inputs["metadata"]["name"] == "training-queued-provisioning"
    assert config.inputs["spec"] == {"provisioningClassName": "queued-provisioning.gke.io",
                                     "managedResources": ["google.com/tpu"]}
    assert check.inputs["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request",
                                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                                   "name": "training-queued-provisioning"}}
    queue = crd(capture, "ClusterQueue")[0]
    assert queue.inputs["spec"]["admissionChecksStrategy"] == {"admissionChecks": [
        {"name": "training-queued-provisioning", "onFlavors": ["training-tpu-v6e-16x16"]}]}
    assert check.urn in queue.dependencies
    assert capture.named("llama-kueue").urn in config.dependencies


def test_a_queued_flavor_selects_the_label_its_pool_sets_and_tolerates_the_queued_taint(declare):
    capture = declare(stack_program([queued_v6e_pool()]))
    spec = crd(capture, "ResourceFlavor")[0].inputs["spec"]
    assert spec["nodeLabels"]["accel.dev/capacity"] == "queued"
    assert {"key": "cloud.google.com/gke-queued", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_on_demand_and_flex_start_pools_need_no_admission_check(declare):
    tpu = queued_v6e_pool()
    flex = tpu.model_copy(update={"provisioning_request_class": None})
    capture = declare(stack_program([flex, h100_pool()]))
    assert capture.of_type(f"kubernetes:{KUEUE}:AdmissionCheck") == []
    assert "admissionChecksStrategy" not in crd(capture, "ClusterQueue")[0].inputs["spec"]


def test_cluster_queue_admits_only_the_workload_namespace(declare):
    capture = declare(stack_program([v5p_pool()], namespace="llama"))
    spec = crd(capture, "ClusterQueue")[0].inputs["spec"]
    assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "llama"}}


def test_the_local_queue_lives_in_the_workload_namespace_and_feeds_the_cluster_queue(declare):
    capture = declare(stack_program([v5p_pool()], namespace="llama", queue="runs"))
    local = crd(capture, "LocalQueue")[0].inputs
    cluster = crd(capture, "ClusterQueue")[0].inputs
    assert local["metadata"]["namespace"] == "llama"
    assert local["metadata"]["name"] == "runs"
    assert local["spec"] == {"clusterQueue": cluster["metadata"]["name"]}
    assert capture.named("llama-namespace").inputs["metadata"]["name"] == "llama"


def test_priority_classes_order_training_above_experiments(declare):
    capture = declare(stack_program([v5p_pool()]))
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in
               capture.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")}
    assert classes["training-high"]["value"] > classes["training-normal"]["value"] > classes["training-low"]["value"]
    assert not any(c["globalDefault"] for c in classes.values())


# ---- identity -------------------------------------------------------------------------------------

def test_the_service_account_is_bound_to_the_gke_service_account(declare):
    identity = CloudIdentity.gke_workload_identity("trainer@proj.iam.gserviceaccount.com")
    capture = declare(stack_program([v5p_pool()], identity=identity, service_account="trainer"))
    account = capture.named("llama-service-account").inputs["metadata"]
    assert account["name"] == "trainer"
    assert account["namespace"] == "training"
    assert account["annotations"] == {"iam.gke.io/gcp-service-account": "trainer@proj.iam.gserviceaccount.com"}


def test_the_service_account_takes_an_irsa_role_arn_output(declare):
    def program():
        # Outputs belong to the run's event loop, so this one is made inside the program.
        role_arn = pulumi.Output.from_input("arn:aws:iam::123456789012:role/llama-trainer")
        stack_program([h100_pool()], identity=CloudIdentity.eks_irsa(role_arn))()

    capture = declare(program)
    annotations = capture.named("llama-service-account").inputs["metadata"]["annotations"]
    assert annotations == {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/llama-trainer"}


# ---- structure --------------------------------------------------------------------------------------

def test_every_child_is_parented_to_the_component_and_uses_its_provider(declare):
    capture = declare(stack_program([v5p_pool()], install_device_plugin=False))
    component = capture.named("llama")
    assert component.type == "accel:kubernetes:AcceleratorStack"
    children = [r for r in capture.resources if r.type.startswith("kubernetes:")]
    assert len(children) == 10  # kueue, jobset, namespace, service account, 3 priority classes, flavor, CQ, LQ
    assert all(r.parent == component.urn for r in children)
    assert all("pulumi:providers:kubernetes::cluster" in r.provider for r in children)


def test_every_kueue_object_waits_for_the_kueue_release(declare):
    capture = declare(stack_program([v5p_pool(), h100_pool()]))
    kueue = capture.named("llama-kueue")
    kueue_objects = [r for r in capture.resources if r.type.startswith(f"kubernetes:{KUEUE}:")]
    assert len(kueue_objects) == 5  # two flavors, cluster queue, local queue, the EFA pool's Topology
    assert all(kueue.urn in r.dependencies for r in kueue_objects)


def test_kueue_starts_after_jobset_so_its_jobset_integration_is_on(declare):
    capture = declare(stack_program([v5p_pool()]))
    assert capture.named("llama-jobset").urn in capture.named("llama-kueue").dependencies


def test_namespaced_objects_wait_for_the_namespace(declare):
    capture = declare(stack_program([v5p_pool()]))
    namespace = capture.named("llama-namespace").urn
    assert namespace in capture.named("llama-service-account").dependencies
    assert namespace in capture.named("llama-local-queue").dependencies


def test_every_kubernetes_object_carries_the_stack_labels(declare):
    capture = declare(stack_program([v5p_pool()]))
    objects = [r for r in capture.resources if r.type.startswith("kubernetes:") and "metadata" in r.inputs]
    assert objects
    for resource in objects:
        assert resource.inputs["metadata"]["labels"] == TAGS.kubernetes_labels(), resource.name


# ---- validation happens before anything registers --------------------------------------------------

@pytest.mark.parametrize("overrides, message", [
    ({"namespace": "Training"}, "namespace: 'Training' is not a Kubernetes name"),
    ({"queue": "runs_1"}, "queue: 'runs_1' is not a Kubernetes name"),
    ({"install_device_plugin": True}, "install_device_plugin: true, but no pool provides nvidia.com/gpu"),
    ({"pools": []}, "pools: at least one accelerator pool"),
])
def test_bad_args_are_rejected(declare, overrides, message):
    overrides = dict(overrides)  # parametrize shares the dict between the preview and up runs
    pools = overrides.pop("pools", [v5p_pool()])
    with pytest.raises(AcceleratorStackError, match=message):
        declare(stack_program(pools, **overrides))


def test_both_gpu_installers_at_once_are_rejected(declare):
    with pytest.raises(AcceleratorStackError, match="choose one"):
        declare(stack_program([h100_pool()], install_device_plugin=True, install_gpu_operator=True))


def test_a_rejected_stack_leaves_nothing_declared(declare):
    def program():
        try:
            AcceleratorStack("bad", AcceleratorStackArgs(tags=TAGS, pools=[v5p_pool(), v5p_pool()]))
        except AcceleratorStackError:
            pass
    capture = declare(program)
    assert capture.resources == []


def test_a_tpu_pool_must_name_its_gke_accelerator():
    with pytest.raises(ValidationError, match="needs the node label cloud.google.com/gke-tpu-accelerator"):
        AcceleratorPool(name="tpu", resource="google.com/tpu", chips=8, node_labels={})


def test_an_exists_toleration_takes_no_value():
    with pytest.raises(ValidationError, match="operator Exists takes no value"):
        Toleration(key="nvidia.com/gpu", value="present")


# ---- pools from a plan or an inventory ----------------------------------------------------------------

def _plan(**fields) -> Plan:
    workload = WorkloadSpec.model_validate({"name": "llama-70b", "kind": "pretrain", "model": {"parameters": "70B"},
                                            "training": {"tokens": "2T"}})
    return Plan(workload=workload, catalog=CatalogRef(version="test", as_of="2026-01-01"),
                estimate=Estimate(flops=1e24, min_chips_for_memory=64, hours=100, hourly_usd=10, total_usd=1000,
                                  mfu=0.4, goodput=0.9), **fields)


def test_plan_pools_for_a_gke_gpu_plan_select_by_gke_accelerator():
    chosen = Option(cloud="gcp", region="us-central1", accelerator="h100-80gb", family="gpu", chips=64, hosts=8,
                    machine_type="a3-megagpu-8g", spot=True, hourly_usd=10, hours=100, total_usd=1000, mfu=0.4,
                    offering="gcp-a3-mega", chips_per_host=8)
    gpu = GpuPool(accelerator="h100-80gb", machine_type="a3-megagpu-8g", gpus_per_node=8, nodes=8, guest_accelerator="nvidia-h100-mega-80gb")
    plan = _plan(chosen=chosen, cloud="gcp", region="us-central1", zones=["us-central1-a"], family="gpu", gpu=gpu,
                 capacity=Capacity(provisioning="spot"))
    [pool] = plan_pools(plan)
    assert pool.chips == 64
    assert pool.node_labels == {"node.kubernetes.io/instance-type": "a3-megagpu-8g",
                                "cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb",
                                "cloud.google.com/gke-spot": "true"}


def test_gke_gpu_pool_without_guest_accelerator_selects_by_machine_type():
    gpu = GpuPool(accelerator="l4", machine_type="g2-standard-48", gpus_per_node=4, nodes=2)
    pool = gke_gpu_pool(gpu)
    assert pool.node_labels == {"node.kubernetes.io/instance-type": "g2-standard-48"}


def _eks_plan(provisioning: str, reservation: str | None = None) -> Plan:
    chosen = Option(cloud="aws", region="us-east-1", accelerator="h200-141gb", family="gpu", chips=64, hosts=8,
                    machine_type="p5en.48xlarge", spot=False, hourly_usd=10, hours=100, total_usd=1000, mfu=0.4,
                    offering="aws-p5en", chips_per_host=8, provisioning=provisioning)
    gpu = GpuPool(accelerator="h200-141gb", machine_type="p5en.48xlarge", gpus_per_node=8, nodes=8, fabric="efa", efa_interfaces=16)
    return _plan(chosen=chosen, cloud="aws", region="us-east-1", zones=["us-east-1a"], family="gpu", gpu=gpu,
                 capacity=Capacity(provisioning=provisioning, reservation=reservation))


@pytest.mark.parametrize("provisioning, reservation, capacity_type", [
    ("on-demand", None, "ON_DEMAND"),
    ("reservation", "cr-0123456789abcdef0", "ON_DEMAND"),
    ("capacity-block", "cr-0123456789abcdef0", "CAPACITY_BLOCK"),
])
def test_an_eks_flavor_selects_the_capacity_type_eks_puts_on_the_nodes(provisioning, reservation, capacity_type):
    # EKS copies the node group's capacity type into eks.amazonaws.com/capacityType (CAPACITY_BLOCK included).
    [pool] = plan_pools(_eks_plan(provisioning, reservation))
    assert pool.node_labels["eks.amazonaws.com/capacityType"] == capacity_type


def test_an_eks_efa_plan_pool_carries_its_efa_interfaces_as_quota():
    [pool] = plan_pools(_eks_plan("on-demand"))
    assert pool.extra_resources == {"vpc.amazonaws.com/efa": 16 * 8}


def test_a_gke_queued_plan_pool_needs_a_provisioning_request():
    [pool] = plan_pools(_plan(
        chosen=Option(cloud="gcp", region="us-east5", accelerator="tpu-v6e", family="tpu", chips=256, hosts=64,
                      slices=1, topology="16x16", machine_type="ct6e-standard-4t", spot=False, hourly_usd=10,
                      hours=100, total_usd=1000, mfu=0.4, offering="gcp-v6e", chips_per_host=4, provisioning="queued"),
        cloud="gcp", region="us-east5", zones=["us-east5-a"], family="tpu",
        tpu=v6e_pod(), capacity=Capacity(provisioning="queued")))
    assert pool.provisioning_request_class == "queued-provisioning.gke.io"
    assert pool.node_labels["accel.dev/capacity"] == "queued"


A4_FLEET = GpuPool(accelerator="b200", machine_type="a4-highgpu-8g", gpus_per_node=8, nodes=32,
                  guest_accelerator="nvidia-b200", fabric="rdma", extra_networks=1)
QUEUED = Toleration(key="cloud.google.com/gke-queued")


def test_a_gke_flex_start_fleet_placed_by_a_topology_is_admitted_through_a_provisioning_request():
    # Kueue finds no topology domain on nodes to come; only a ProvisioningRequest check brings them
    # (policies/cloud/flex_start.py), so the flex-start pool is built with queued provisioning and gated.
    pool = gke_gpu_pool(A4_FLEET, capacity=Capacity(provisioning="flex-start"))
    assert pool.topology_levels
    assert pool.provisioning_request_class == "queued-provisioning.gke.io"
    assert QUEUED in pool.tolerations and pool.node_labels["accel.dev/capacity"] == "flex-start"


@pytest.mark.parametrize("case", ["no fabric", "tpu slice"])
def test_a_flex_start_pool_no_topology_places_stays_plain_flex_start(case):
    capacity = Capacity(provisioning="flex-start")
    pool = (gke_gpu_pool(A4_FLEET.model_copy(update={"fabric": "none", "extra_networks": 0}), capacity=capacity)
            if case == "no fabric" else gke_tpu_pool(v6e_pod(), capacity=capacity))
    assert not pool.topology_levels
    assert pool.provisioning_request_class is None and QUEUED not in pool.tolerations


def test_an_eks_spot_pool_with_alternates_does_not_pin_the_instance_type():
    gpu = GpuPool(accelerator="h100-80gb", machine_type="p5.48xlarge", alternate_machine_types=["p5e.48xlarge"], gpus_per_node=8, nodes=2)
    pool = eks_gpu_pool(gpu, capacity=Capacity(provisioning="spot"))
    assert pool.node_labels == {"eks.amazonaws.com/capacityType": "SPOT"}


def test_an_inventory_becomes_one_pool_per_entry():
    cluster = ExistingCluster.model_validate({
        "name": "onprem", "kubeconfig": "~/.kube/onprem", "context": "lab",
        "inventory": [
            {"accelerator": "h100-80gb", "chips": 64, "usd_per_chip_hour": 2.1,
             "node_labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            {"accelerator": "a100-80gb", "chips": 16, "usd_per_chip_hour": 1.2, "name": "a100"},
        ],
    })
    h100, a100 = inventory_pools(cluster)
    assert (h100.name, h100.resource, h100.chips) == ("h100-80gb", "nvidia.com/gpu", 64)
    assert h100.node_labels == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert h100.tolerations == (Toleration(key="nvidia.com/gpu"),)
    assert (a100.name, a100.chips, a100.node_labels) == ("a100", 16, {})
    assert cluster.hourly_usd == pytest.approx(64 * 2.1 + 16 * 1.2)


def test_a_tpu_inventory_entry_gets_the_gke_tpu_labels():
    cluster = ExistingCluster.model_validate({"name": "gke", "inventory": [
        {"accelerator": "tpu-v6e", "chips": 16, "usd_per_chip_hour": 2.7, "topology": "4x4"}]})
    [pool] = inventory_pools(cluster)
    assert pool.node_labels == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                "cloud.google.com/gke-tpu-topology": "4x4"}
    assert pool.resource == "google.com/tpu"


def test_an_inventory_topology_the_generation_cannot_have_is_rejected():
    with pytest.raises(ValidationError, match="TPU v5e has no topology '3x3'"):
        ExistingCluster.model_validate({"name": "gke", "inventory": [
            {"accelerator": "tpu-v5e", "chips": 9, "usd_per_chip_hour": 1, "topology": "3x3"}]})


def test_an_inventory_needs_at_least_one_entry():
    with pytest.raises(ValidationError, match="inventory"):
        ExistingCluster.model_validate({"name": "onprem", "inventory": []})


def test_the_existing_cluster_provider_reads_its_kubeconfig_and_context(declare, monkeypatch):
    monkeypatch.setenv("HOME", "/home/trainer")
    cluster = ExistingCluster.model_validate({"name": "onprem", "kubeconfig": "~/.kube/onprem", "context": "lab",
                                              "inventory": [{"accelerator": "l40s", "chips": 8,
                                                             "usd_per_chip_hour": 0.9}]})
    capture = declare(lambda: existing_cluster_provider(cluster, "onprem"))
    provider = capture.named("onprem")
    assert provider.type == "pulumi:providers:kubernetes"
    assert provider.inputs["kubeconfig"] == "/home/trainer/.kube/onprem"
    assert provider.inputs["context"] == "lab"


# ---- GKE GPUDirect networks ---------------------------------------------------------------------------

PARAM_SET = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"
GKE_NETWORK = "kubernetes:networking.gke.io/v1:Network"


class NodeNetwork:
    """What GcpNetwork.extra_networks holds: a VPC name and a subnet name."""

    def __init__(self, network: str, subnetwork: str):
        self.network, self.subnetwork = network, subnetwork


def gke_h100_pool(machine_type: str = "a3-megagpu-8g", accelerator: str = "nvidia-h100-mega-80gb") -> AcceleratorPool:
    return gke_gpu_pool(GpuPool(accelerator="h100-80gb", machine_type=machine_type, gpus_per_node=8, nodes=2,
                                guest_accelerator=accelerator))


def tcp_networks(fabric: str, count: int) -> list[GkeNetworkAttachment]:
    return gpudirect_attachments(fabric, [NodeNetwork(f"a3-gpunet-{i}", f"a3-gpusub-{i}") for i in range(count)])


def rdma_networks() -> list[GkeNetworkAttachment]:
    return gpudirect_attachments("rdma", [NodeNetwork("a3u-gvnic", "a3u-gvnic-sub"),
                                          *(NodeNetwork("a3u-rdma", f"a3u-rdma-sub-{i}") for i in range(8))])


# The GKE GPU pool each fabric's node installers admit (their node affinity, node_installers.yaml).
FABRIC_POOLS = {"gpudirect-tcpx": ("a3-highgpu-8g", "nvidia-h100-80gb"),
                "gpudirect-tcpxo": ("a3-megagpu-8g", "nvidia-h100-mega-80gb"),
                "rdma": ("a3-ultragpu-8g", "nvidia-h200-141gb")}


def gpudirect_stack(fabric: str, networks, built: list | None = None, pool: AcceleratorPool | None = None,
                    gpu_arch: str = "amd64"):
    def program():
        import pulumi_kubernetes as k8s

        provider = k8s.Provider("cluster", kubeconfig="{}")
        args = AcceleratorStackArgs(tags=TAGS, pools=[pool or gke_h100_pool(*FABRIC_POOLS.get(fabric, ()))],
                                    gpu_fabric=fabric, gke_networks=networks, gpu_arch=gpu_arch)
        stack = AcceleratorStack("llama", args, opts=pulumi.ResourceOptions(provider=provider))
        if built is not None:
            built.append(stack)
    return program


def interfaces(annotations: dict[str, str]) -> list[tuple[str, str]]:
    import json

    return [(i["interfaceName"], i["network"]) for i in json.loads(annotations["networking.gke.io/interfaces"])]


def test_an_a3_mega_stack_declares_a_param_set_per_gpu_nic_vpc(declare):
    capture = declare(gpudirect_stack("gpudirect-tcpxo", tcp_networks("gpudirect-tcpxo", 8)))
    param_sets = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in capture.of_type(PARAM_SET)}
    assert param_sets == {f"vpc{i + 1}": {"vpc": f"a3-gpunet-{i}", "vpcSubnet": f"a3-gpusub-{i}",
                                          "deviceMode": "NetDevice"} for i in range(8)}


def test_an_a3_mega_stack_declares_a_device_network_per_param_set(declare):
    capture = declare(gpudirect_stack("gpudirect-tcpxo", tcp_networks("gpudirect-tcpxo", 8)))
    networks = capture.of_type(GKE_NETWORK)
    assert sorted(n.inputs["metadata"]["name"] for n in networks) == [f"vpc{i}" for i in range(1, 9)]
    for network in networks:
        name = network.inputs["metadata"]["name"]
        assert network.inputs["spec"] == {"type": "Device", "parametersRef": {
            "group": "networking.gke.io", "kind": "GKENetworkParamSet", "name": name}}
        # GKE accepts a Network only once the param set it points at exists.
        assert capture.named(f"llama-gke-params-{name}").urn in network.dependencies


def test_gke_network_objects_are_cluster_scoped_labelled_children_of_the_stack(declare):
    capture = declare(gpudirect_stack("gpudirect-tcpx", tcp_networks("gpudirect-tcpx", 4)))
    objects = capture.of_type(PARAM_SET) + capture.of_type(GKE_NETWORK)
    assert len(objects) == 8
    component = capture.named("llama")
    for resource in objects:
        assert resource.parent == component.urn
        assert resource.inputs["metadata"]["labels"] == TAGS.kubernetes_labels()
        assert "namespace" not in resource.inputs["metadata"]


def test_the_pod_annotation_puts_each_gpu_nic_after_the_default_interface(declare):
    built: list = []
    declare(gpudirect_stack("gpudirect-tcpxo", tcp_networks("gpudirect-tcpxo", 8), built))
    annotations = built[0].pod_network_annotations
    assert annotations["networking.gke.io/default-interface"] == "eth0"
    assert interfaces(annotations) == [("eth0", "default")] + [(f"eth{i}", f"vpc{i}") for i in range(1, 9)]
    assert built[0].gke_network_names == [f"vpc{i}" for i in range(1, 9)]


def test_an_a3_ultra_stack_hands_the_gvnic_as_a_netdevice_and_each_cx7_nic_as_rdma(declare):
    built: list = []
    capture = declare(gpudirect_stack("rdma", rdma_networks(), built,
                                      pool=gke_h100_pool("a3-ultragpu-8g", "nvidia-h200-141gb")))
    param_sets = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in capture.of_type(PARAM_SET)}
    assert param_sets["gvnic-1"] == {"vpc": "a3u-gvnic", "vpcSubnet": "a3u-gvnic-sub", "deviceMode": "NetDevice"}
    assert {name: spec["deviceMode"] for name, spec in param_sets.items() if name != "gvnic-1"} == {
        f"rdma-{i}": "RDMA" for i in range(8)}
    assert {spec["vpc"] for name, spec in param_sets.items() if name != "gvnic-1"} == {"a3u-rdma"}
    # GKE's A3 Ultra guide: gVNIC on eth1, the eight RDMA NICs on eth2..eth9.
    assert interfaces(built[0].pod_network_annotations) == (
        [("eth0", "default"), ("eth1", "gvnic-1")] + [(f"eth{i + 2}", f"rdma-{i}") for i in range(8)])


def test_a_stack_without_gpudirect_declares_no_gke_networks(declare):
    built: list = []
    capture = declare(gpudirect_stack("none", (), built))
    assert capture.of_type(PARAM_SET) == capture.of_type(GKE_NETWORK) == []
    assert built[0].pod_network_annotations == {}
    assert built[0].gke_network_names == []


@pytest.mark.parametrize("fabric, networks, message", [
    ("gpudirect-tcpxo", (), r"gke_networks: none given, but gpu_fabric 'gpudirect-tcpxo'"),
    ("rdma", (), r"gke_networks: none given, but gpu_fabric 'rdma'"),
    ("gpudirect-tcpxo", "tcpx-4", r"4 network\(s\); gpudirect-tcpxo needs exactly 8"),
    ("gpudirect-tcpx", "sriov", r"gke_networks\[0\]\.device_mode: 'SRIOV' is not a GPUDirect device mode; "
                                r"allowed: NetDevice, RDMA"),
    ("gpudirect-tcpx", "rdma-mode", r"gpudirect-tcpx NICs are handed to pods as NetDevice"),
    ("rdma", "tcpx-4", r"none in RDMA mode"),
    ("none", "tcpx-4", r"gpu_fabric is 'none'; GKE network objects are for the GPUDirect fabrics"),
    ("efa", "tcpx-4", r"gpu_fabric is 'efa'"),
    ("infiniband", (), r"gpu_fabric: 'infiniband' is not a GPU fabric; allowed: none, gpudirect-tcpx"),
    ("gpudirect-tcpx", "default-name", r"gke_networks\[0\]\.name: 'default' is the pod's primary network"),
    ("gpudirect-tcpx", "bad-name", r"gke_networks\[0\]\.name: 'VPC_1' is not a Kubernetes name"),
    ("gpudirect-tcpx", "repeated", r"names must be unique \(they are cluster-scoped\); repeated: vpc1"),
    ("gpudirect-tcpx", "no-subnet", r"gke_networks\[3\]\.subnet: '': name the subnet"),
])
def test_bad_gke_networks_are_rejected_before_anything_registers(declare, fabric, networks, message):
    tcpx = tcp_networks("gpudirect-tcpx", 4)
    variants = {
        "tcpx-4": tcpx,
        "sriov": [GkeNetworkAttachment("vpc1", "n", "s", "SRIOV"), *tcpx[1:]],
        "rdma-mode": [*tcpx[:3], GkeNetworkAttachment("vpc4", "n", "s", "RDMA")],
        "default-name": [GkeNetworkAttachment("default", "n", "s"), *tcpx[1:]],
        "bad-name": [GkeNetworkAttachment("VPC_1", "n", "s"), *tcpx[1:]],
        "repeated": [*tcpx[:3], GkeNetworkAttachment("vpc1", "n", "s")],
        "no-subnet": [*tcpx[:3], GkeNetworkAttachment("vpc4", "n", "")],
    }
    chosen = variants[networks] if isinstance(networks, str) else networks

    def build():
        AcceleratorStack("llama", AcceleratorStackArgs(tags=TAGS, pools=[gke_h100_pool()], gpu_fabric=fabric,
                                                       gke_networks=chosen))
    rejected(declare, build, AcceleratorStackError, message)


def test_gpudirect_networks_without_a_gpu_pool_are_rejected(declare):
    def build():
        AcceleratorStack("llama", AcceleratorStackArgs(tags=TAGS, pools=[v5p_pool()], gpu_fabric="gpudirect-tcpx",
                                                       gke_networks=tcp_networks("gpudirect-tcpx", 4)))
    rejected(declare, build, AcceleratorStackError, "no pool provides nvidia.com/gpu")


# ---- the GKE builder wires a plan's GPU fabric into the Kubernetes layer -------------------------------

def gke_gpu_plan(gpu: GpuPool, accelerator: str = "h100-80gb") -> Plan:
    chosen = Option(cloud="gcp", region="us-central1", accelerator=accelerator, family="gpu",
                    chips=gpu.gpus_per_node * gpu.nodes, hosts=gpu.nodes, machine_type=gpu.machine_type, spot=False,
                    hourly_usd=10, hours=100, total_usd=1000, mfu=0.4, offering="gcp-test",
                    chips_per_host=gpu.gpus_per_node)
    return _plan(chosen=chosen, cloud="gcp", region="us-central1", zones=["us-central1-a"], family="gpu", gpu=gpu)


A3_MEGA_TCPXO = GpuPool(accelerator="h100-80gb", machine_type="a3-megagpu-8g", gpus_per_node=8, nodes=2,
                        guest_accelerator="nvidia-h100-mega-80gb", fabric="gpudirect-tcpxo", extra_networks=8)


def cluster_program(plan: Plan, built: list):
    def program():
        from accel.components.training_cluster import TrainingCluster, TrainingClusterArgs

        built.append(TrainingCluster("a3", TrainingClusterArgs(plan=plan, tags=TAGS, gcp_project="acme-ml")))
    return program


def test_a_gke_a3_mega_plan_declares_gke_networks_over_its_eight_gpu_vpcs(declare):
    built: list = []
    capture = declare(cluster_program(gke_gpu_plan(A3_MEGA_TCPXO), built))
    param_sets = {p.inputs["metadata"]["name"]: p for p in capture.of_type(PARAM_SET)}
    assert sorted(param_sets) == [f"vpc{i}" for i in range(1, 9)]
    assert {p.inputs["spec"]["deviceMode"] for p in param_sets.values()} == {"NetDevice"}
    assert len(capture.of_type(GKE_NETWORK)) == 8
    # VPC and subnet names are generated by GCP, so follow the references: vpcN is GPU NIC N-1's VPC and subnet.
    for i in range(8):
        params = param_sets[f"vpc{i + 1}"]
        assert capture.named(f"a3-net-gpunet-{i}").urn in params.dependencies
        assert capture.named(f"a3-net-gpusub-{i}").urn in params.dependencies
    assert all(p.parent == capture.named("a3-k8s").urn for p in param_sets.values())
    assert interfaces(built[0].pod_network_annotations)[1:] == [(f"eth{i}", f"vpc{i}") for i in range(1, 9)]


def test_a_gke_gpu_plan_without_a_fabric_declares_no_gke_networks(declare):
    built: list = []
    single_node = GpuPool(accelerator="h100-80gb", machine_type="a3-highgpu-8g", gpus_per_node=8, nodes=1, guest_accelerator="nvidia-h100-80gb")
    capture = declare(cluster_program(gke_gpu_plan(single_node), built))
    assert capture.of_type(PARAM_SET) == capture.of_type(GKE_NETWORK) == []
    assert built[0].pod_network_annotations == {}


# ---- GPUDirect node installers and storage volumes ------------------------------------------------

CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"


@pytest.mark.parametrize("fabric, networks, expected", [
    ("gpudirect-tcpx", lambda: tcp_networks("gpudirect-tcpx", 4), ["nri-device-injector", "nccl-tcpx-installer"]),
    ("gpudirect-tcpxo", lambda: tcp_networks("gpudirect-tcpxo", 8), ["nri-device-injector", "nccl-tcpxo-installer"]),
    ("rdma", rdma_networks, ["nccl-rdma-installer"]),
])
def test_a_gpudirect_fabric_gets_the_node_installers_nccl_needs_pinned_to_commits(declare, fabric, networks,
                                                                                  expected):
    from accel.components.kubernetes.node_installers import load_node_installers

    capture = declare(gpudirect_stack(fabric, networks()))
    files = [r.inputs["file"] for r in capture.of_type(CONFIG_FILE)]
    installers = load_node_installers()
    assert sorted(files) == sorted(installers.url(name) for name in expected)
    for url in files:  # a full commit id in the path, never a branch such as master
        assert re.search(r"/[0-9a-f]{40}/", url) and "/master/" not in url


def test_a_stack_without_a_gpudirect_fabric_installs_no_node_software(declare):
    assert declare(stack_program([h100_pool()])).of_type(CONFIG_FILE) == []


def test_storage_mounts_become_bound_static_volumes_in_the_training_namespace(declare):
    from accel.components.kubernetes.storage_mounts import StorageMount

    mounts = [StorageMount.gcs_bucket("datasets", "acme-data", read_only=True),
              StorageMount.fsx_lustre("filesystem", "fs-0123", "fs-0123.fsx.us-east-1.amazonaws.com", "abcd", 4800)]
    capture = declare(stack_program([h100_pool()], storage_mounts=mounts))
    volumes = {r.inputs["metadata"]["name"]: r for r in capture.of_type("kubernetes:core/v1:PersistentVolume")}
    claims = {r.inputs["metadata"]["name"]: r for r in capture.of_type("kubernetes:core/v1:PersistentVolumeClaim")}
    assert set(claims) == {"datasets", "filesystem"}
    for claim_name, claim in claims.items():
        volume = volumes[claim.inputs["spec"]["volumeName"]]
        assert volume.inputs["spec"]["claimRef"] == {"namespace": "training", "name": claim_name}
        assert volume.inputs["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert volume.urn in claim.dependencies
    assert volumes["training-datasets"].inputs["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert volumes["training-filesystem"].inputs["spec"]["csi"]["volumeAttributes"] == {
        "dnsname": "fs-0123.fsx.us-east-1.amazonaws.com", "mountname": "abcd"}


def test_duplicate_claim_names_are_rejected():
    from accel.components.kubernetes.storage_mounts import StorageMount

    mounts = [StorageMount.gcs_bucket("data", "a", read_only=True), StorageMount.gcs_bucket("data", "b", read_only=True)]
    with pytest.raises(AcceleratorStackError, match="claim names must be unique"):
        AcceleratorStackArgs(tags=TAGS, pools=[h100_pool()], storage_mounts=mounts).validate()


# ---- the fabric's node installers for the GPU nodes' architecture (A4X: Arm) ---------------------------

GIB_X86_URL = ("https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/"
               "155bfa49b7459a55c2352495d3eeb46a55637be6/gpudirect-rdma/nccl-rdma-installer.yaml")
GIB_ARM64_URL = GIB_X86_URL.replace("nccl-rdma-installer.yaml", "nccl-rdma-installer-a4x.yaml")


def rdma_plan(accelerator: str, machine_type: str, gpus: int, guest: str, nodes: int = 2) -> Plan:
    gpu = GpuPool(accelerator=accelerator, machine_type=machine_type, gpus_per_node=gpus, nodes=nodes,
                  guest_accelerator=guest, fabric="rdma", extra_networks=1)
    return gke_gpu_plan(gpu, accelerator)


@pytest.mark.parametrize("plan, url", [
    (rdma_plan("gb200", "a4x-highgpu-4g", 4, "nvidia-gb200", nodes=18), GIB_ARM64_URL),  # A4X: Grace (Arm) hosts
    (rdma_plan("b200", "a4-highgpu-8g", 8, "nvidia-b200"), GIB_X86_URL),            # A4
    (rdma_plan("h200-141gb", "a3-ultragpu-8g", 8, "nvidia-h200-141gb"), GIB_X86_URL),  # A3 Ultra
], ids=["a4x", "a4", "a3-ultra"])
def test_an_rdma_plan_installs_the_gib_build_for_its_nodes_architecture(declare, plan, url):
    capture = declare(cluster_program(plan, []))
    [installer] = capture.of_type(CONFIG_FILE)
    # One resource name for both builds: their manifests make the same DaemonSet (kube-system/nccl-rdma-installer),
    # so A4/A3 Ultra stacks declare exactly what they did, and an A4X stack that had the x86 one updates in place.
    assert installer.name == "a3-k8s-nccl-rdma-installer"
    assert installer.inputs["file"] == url


def test_an_a4x_pool_with_the_x86_gib_installer_is_refused_by_its_node_affinity():
    a4x = gke_gpu_pool(GpuPool(accelerator="gb200", machine_type="a4x-highgpu-4g", gpus_per_node=4, nodes=2,
                               guest_accelerator="nvidia-gb200", fabric="rdma", extra_networks=1))
    networks = gpudirect_attachments("rdma", [NodeNetwork("a4x-gvnic", "a4x-gvnic-sub"),
                                              *(NodeNetwork("a4x-rdma", f"a4x-rdma-sub-{i}") for i in range(4))])
    with pytest.raises(AcceleratorStackError, match=r"nccl-rdma-installer \(cloud.google.com/gke-accelerator="
                                                    r"nvidia-gb200 not in \[nvidia-h200-141gb, nvidia-b200\]\)"):
        AcceleratorStackArgs(tags=TAGS, pools=[a4x], gpu_fabric="rdma", gke_networks=networks)  # gpu_arch: amd64
    AcceleratorStackArgs(tags=TAGS, pools=[a4x], gpu_fabric="rdma", gke_networks=networks, gpu_arch="arm64")


def test_an_x86_pool_with_the_arm64_gib_installer_is_refused():
    with pytest.raises(AcceleratorStackError, match=r"nccl-rdma-installer-a4x \(cloud.google.com/gke-accelerator="
                                                    r"nvidia-h200-141gb not in \[nvidia-gb200\]\)"):
        AcceleratorStackArgs(tags=TAGS, pools=[gke_h100_pool(*FABRIC_POOLS["rdma"])], gpu_fabric="rdma",
                             gke_networks=rdma_networks(), gpu_arch="arm64")


def test_a_fabric_without_arm64_installers_refuses_arm64_nodes():
    with pytest.raises(AcceleratorStackError,
                       match=r"gpu_arch: fabric 'gpudirect-tcpxo': .* amd64 nodes only, not arm64"):
        AcceleratorStackArgs(tags=TAGS, pools=[gke_h100_pool(*FABRIC_POOLS["gpudirect-tcpxo"])],
                             gpu_fabric="gpudirect-tcpxo", gke_networks=tcp_networks("gpudirect-tcpxo", 8),
                             gpu_arch="arm64")


def test_a_pool_on_another_fabrics_gpus_is_refused():
    # A3 High's nvidia-h100-80gb nodes are not admitted by the TCPXO installer (nvidia-h100-mega-80gb only).
    with pytest.raises(AcceleratorStackError, match=r"pools.h100-80gb: the gpudirect-tcpxo node installers .* "
                                                    r"nccl-tcpxo-installer \(cloud.google.com/gke-accelerator="
                                                    r"nvidia-h100-80gb not in \[nvidia-h100-mega-80gb\]\)"):
        AcceleratorStackArgs(tags=TAGS, pools=[gke_h100_pool(*FABRIC_POOLS["gpudirect-tcpx"])],
                             gpu_fabric="gpudirect-tcpxo", gke_networks=tcp_networks("gpudirect-tcpxo", 8))


def test_an_unknown_gpu_arch_is_refused():
    with pytest.raises(AcceleratorStackError, match=r"gpu_arch: 'x86_64' is not a node architecture"):
        AcceleratorStackArgs(tags=TAGS, pools=[h100_pool()], gpu_arch="x86_64")
