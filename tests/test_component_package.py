"""The component package other languages use (provider/): every public component of the Python API is
served, the SDK's own analyzer infers each one's schema, and each served component, built from
hand-written inputs, declares the Python component it stands for."""

import importlib
import json
import runpy
from pathlib import Path
from typing import get_type_hints

import pulumi
import pulumi.provider.experimental
import pytest
import yaml
from packaging.requirements import Requirement
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider

from accel.base.errors import ComponentArgsError
from accel.components import package
from accel.components.package.common import served, snake_name
from accel.policies.hardware import shapes
from tests import harness

ROOT = Path(__file__).resolve().parent.parent
PROVIDER = ROOT / "provider"
OWNERSHIP = {"workload": "llama-8b", "owner": "ml-platform"}
GKE = {"cluster": "ml-cluster", "location": "us-east5", "zone": "us-east5-a", "ownership": OWNERSHIP}
PUBLIC_PACKAGES = ("accel.components", "accel.components.gcp", "accel.components.aws", "accel.components.kubernetes")
KUBECONFIG = yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": [], "contexts": [], "users": []})
STACK_PLAN = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml").read_text())["config"]["accel:plan"]

# What a person writes for each served component: only the fields that matter.
HAND_WRITTEN = {
    "TpuSlice": {"generation": "v5e", "topology": "4x4", "slices": 3, **GKE},
    "GpuNodePool": {"accelerator": "l4", "gpus": 8, **GKE},
    "TpuVmSlice": {"generation": "v5p", "topology": "2x2x4", "slices": 2, "zone": "us-east5-a", "network": "ml-vpc",
                   "subnetwork": "ml-nodes", "provisioning": "spot", "ownership": OWNERSHIP},
    "GkeCluster": {"project": "acme-ml", "location": "us-east5", "network": "ml-vpc", "subnetwork": "ml-nodes",
                   "nodeZones": ["us-east5-a"], "masterAuthorizedCidrs": ["35.190.10.0/24"], "ownership": OWNERSHIP},
    "GcpNetwork": {"region": "us-east5", "project": "acme-ml", "ownership": OWNERSHIP},
    "GcpTrainingStorage": {"project": "acme-ml", "location": "us-east5", "storage": {"checkpointRetentionDays": 14},
                           "ownership": OWNERSHIP},
    "AwsGpuNodeGroup": {"accelerator": "h100-80gb", "gpus": 16, "clusterName": "ml",
                        "nodeRoleArn": "arn:aws:iam::123456789012:role/nodes", "subnetIds": {"us-east-1a": "subnet-1"},
                        "securityGroupIds": ["sg-1"], "ownership": OWNERSHIP},
    "EksCluster": {"region": "us-east-1", "subnetIds": ["subnet-a", "subnet-b"], "controlPlaneSecurityGroupId": "sg-cp",
                   "nodeSecurityGroupId": "sg-nodes", "publicAccessCidrs": ["35.190.10.0/24"], "ownership": OWNERSHIP},
    "AwsNetwork": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"], "nat": "single",
                   "ownership": OWNERSHIP},
    "AwsTrainingStorage": {"oidcProviderArn": "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/AB12",
                           "oidcIssuer": "oidc.eks.us-east-1.amazonaws.com/id/AB12", "ownership": OWNERSHIP},
    "AcceleratorStack": {"pools": [{"accelerator": "tpu-v5p", "chips": 32, "topology": "2x4x4"}],
                         "kubeconfig": KUBECONFIG, "gkeServiceAccountEmail": "trainer@acme-ml.iam.gserviceaccount.com",
                         "ownership": OWNERSHIP},
    "TrainingCluster": {"planJson": json.dumps(STACK_PLAN), "gcpProject": "acme-ml",
                        "apiAccessCidrs": ["35.190.10.0/24"], "ownership": OWNERSHIP},
}


def public_components() -> list[type]:
    """Every ComponentResource the public API exports (each package's __all__)."""
    found = []
    for name in PUBLIC_PACKAGES:
        module = importlib.import_module(name)
        for export in module.__all__:
            value = getattr(module, export)
            if isinstance(value, type) and issubclass(value, pulumi.ComponentResource) and value not in found:
                found.append(value)
    return found


PUBLIC = public_components()


def facade_of(component: type) -> type:
    facades = [f for f in package.COMPONENTS if served(f) is component]
    assert len(facades) == 1, f"{component.__module__}.{component.__name__} is served by {len(facades)} facades, not 1"
    return facades[0]


def test_the_public_api_has_the_components_the_readme_lists():
    assert {c.__name__ for c in PUBLIC} >= {"TrainingCluster", "GkeCluster", "TpuSlice", "TpuVmSlice", "GpuNodePool",
                                            "GcpNetwork", "TrainingStorage", "EksCluster", "GpuNodeGroup",
                                            "AwsNetwork", "AcceleratorStack"}
    assert len(PUBLIC) == 12  # the two clouds' TrainingStorage are two components


def test_the_package_serves_exactly_the_public_components():
    assert sorted(served(f).__module__ + "." + served(f).__name__ for f in package.COMPONENTS) == sorted(
        c.__module__ + "." + c.__name__ for c in PUBLIC)


@pytest.mark.parametrize("public", PUBLIC, ids=lambda c: f"{c.__module__.rsplit('.', 1)[-1]}.{c.__name__}")
def test_the_sdk_analyzer_infers_a_schema_for_every_public_component(public):
    component = facade_of(public)
    definition = Analyzer("accel").analyze_component(component)
    inputs_type = get_type_hints(component.__init__)["args"]
    assert set(definition.inputs) == set(inputs_type.__annotations__)
    assert set(definition.outputs) == set(component.__annotations__)


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(ComponentProvider(package.COMPONENTS, "accel", version="0.1.0").schema)


@pytest.mark.parametrize("component", package.COMPONENTS, ids=lambda c: c.__name__)
def test_the_package_schema_has_the_component_with_its_required_inputs(schema, component):
    resource = schema["resources"][f"accel:index:{component.__name__}"]
    assert resource["isComponent"] is True
    inputs_type = get_type_hints(component.__init__)["args"]
    assert set(resource["requiredInputs"]) == set(inputs_type.__required_keys__)


def test_every_input_and_output_reaches_other_languages_with_its_description(schema):
    """Why inputs repeat shared fields instead of inheriting them from a base TypedDict: the analyzer
    follows TypedDict inheritance for the fields but reads descriptions only from the declaring class."""
    undocumented = [f"{token}.{kind}.{name}" for token, resource in schema["resources"].items()
                    for kind in ("inputProperties", "properties")
                    for name, prop in resource.get(kind, {}).items() if not prop.get("description")]
    undocumented += [f"{token}.{name}" for token, typ in schema["types"].items()
                     for name, prop in typ["properties"].items() if not prop.get("description")]
    assert undocumented == []


def test_the_provider_entry_hosts_every_served_component_as_package_accel(monkeypatch):
    hosted = []
    monkeypatch.setattr(pulumi.provider.experimental, "component_provider_host",
                        lambda components, name, **kw: hosted.append((components, name)))
    runpy.run_path(str(PROVIDER / "__main__.py"), run_name="__main__")
    assert hosted == [(package.COMPONENTS, "accel")]


def test_the_plugin_manifest_sits_beside_the_entry_and_installs_the_same_accel_reference_as_the_pack():
    manifest = yaml.safe_load((PROVIDER / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    assert (PROVIDER / manifest["runtime"]["options"]["virtualenv"]).name == "venv"
    provider_lines = [line for line in (PROVIDER / "requirements.txt").read_text().splitlines()
                      if line.strip() and not line.startswith("#")]
    pack_lines = (ROOT / "policies" / "guardrails" / "requirements.txt").read_text().splitlines()
    [accel] = [Requirement(line) for line in provider_lines if Requirement(line).name == "accel"]
    assert accel.url and accel.url.startswith("git+https://"), "a bare `accel` is the unrelated PyPI project"
    assert str(accel) in [str(Requirement(line)) for line in pack_lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("component", package.COMPONENTS, ids=lambda c: c.__name__)
def test_a_served_component_built_from_hand_written_inputs_declares_the_component_it_serves(declare, component):
    capture = declare(lambda: component("ml", HAND_WRITTEN[component.__name__]))
    [facade] = capture.of_type(f"accel:index:{component.__name__}")
    assert facade.parent_name is None or facade.parent_name.endswith("-test"), "the facade is not top-level"
    children = [r for r in capture.children_of(facade) if not r.custom]
    assert [(r.name, r.type.rsplit(":", 1)[-1]) for r in children] == [("ml", served(component).__name__)]
    assert not children[0].type.startswith("accel:index:")
    assert [r for r in capture.resources if r.custom], "the served component declared no cloud resource"


@pytest.mark.parametrize("component", package.COMPONENTS, ids=lambda c: c.__name__)
def test_a_served_component_sets_every_output_its_class_declares(declare, component):
    built = []
    declare(lambda: built.append(component("ml", HAND_WRITTEN[component.__name__])))
    [facade] = built
    missing = [name for name in component.__annotations__ if not isinstance(getattr(facade, name, None), pulumi.Output)]
    assert missing == []


@pytest.mark.parametrize("component", package.COMPONENTS, ids=lambda c: c.__name__)
def test_a_renamed_output_is_one_the_facade_declares_under_another_name(component):
    """common.serve takes an output from the served component's attribute of the same snake_case name;
    RENAMED_OUTPUTS lists only the outputs where that name differs."""
    renamed = getattr(component, "RENAMED_OUTPUTS", {})
    assert set(renamed) <= set(component.__annotations__)
    assert [output for output, attribute in renamed.items() if attribute == snake_name(output)] == []


def test_a_served_tpu_slice_declares_the_python_tpu_slice_with_one_pool_per_slice(declare):
    inputs = {"generation": "v5e", "topology": "4x4", "slices": 3, **GKE}
    capture = declare(lambda: package.TpuSlice("pretrain", inputs))
    assert [r.type for r in capture.resources if r.type.startswith("accel:")] == [
        "accel:index:TpuSlice", "accel:gcp:TpuSlice"]
    pools = capture.of_type("gcp:container/nodePool:NodePool")
    assert len(pools) == 3
    assert {p.inputs["nodeConfig"]["machineType"] for p in pools} == {shapes.machine_type("v5e", "4x4")}


def test_a_served_gpu_node_pool_declares_the_python_gpu_node_pool(declare):
    capture = declare(lambda: package.GpuNodePool("serve", {"accelerator": "l4", "gpus": 8, **GKE}))
    assert "accel:gcp:GpuNodePool" in [r.type for r in capture.resources]


def test_a_served_aws_gpu_node_group_declares_the_python_node_group(declare):
    inputs = {"accelerator": "h100-80gb", "gpus": 16, "clusterName": "ml", "nodeRoleArn": "arn:aws:iam::1:role/n",
              "subnetIds": {"us-east-1a": "subnet-1"}, "securityGroupIds": ["sg-1"], "ownership": OWNERSHIP}
    capture = declare(lambda: package.AwsGpuNodeGroup("train", inputs))
    assert "accel:aws:GpuNodeGroup" in [r.type for r in capture.resources]


def test_a_served_training_cluster_builds_the_plan_of_a_stack_file(declare):
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml").read_text())["config"]
    inputs = {"planJson": json.dumps(config["accel:plan"]), "gcpProject": "acme-ml",
              "apiAccessCidrs": ["35.190.10.0/24"], "ownership": OWNERSHIP}
    capture = declare(lambda: package.TrainingCluster("train", inputs))
    types = {r.type for r in capture.resources}
    assert {"accel:index:TrainingCluster", "accel:gcp:GkeCluster", "accel:gcp:TpuSlice"} <= types


@pytest.mark.parametrize(("inputs", "message"), [
    ({"generation": "v5p", "topology": "3x3x3"}, r"^TpuSlice\.topology: '3x3x3' is not valid"),
    ({"generation": "v9", "topology": "2x2"}, r"^TpuSlice\.generation: 'v9' is not valid"),
    ({"generation": "v5e", "topology": "2x2", "provisioning": "cheap"}, r"^TpuSlice\.provisioning: 'cheap'"),
])
def test_a_bad_input_is_refused_naming_the_property_before_anything_is_declared(declare, inputs, message):
    harness.rejected(declare, lambda: package.TpuSlice("bad", {**inputs, **GKE}), ComponentArgsError, message)


@pytest.mark.parametrize(("component", "change", "message"), [
    (package.GcpTrainingStorage, {"storage": {"filesystem": "nfs"}},
     r"^GcpTrainingStorage\.storage\.filesystem: .*'managed-lustre'.*\(got 'nfs'\)"),
    (package.AwsTrainingStorage, {"storage": {"checkpointRetentionDays": 0}},
     r"^AwsTrainingStorage\.storage\.checkpointRetentionDays: .*greater than 0"),
    (package.AcceleratorStack, {"pools": [{"accelerator": "tpu-v5p", "chips": 32, "topology": "2x2x8"}]},
     r"^AcceleratorStack\.pools\[0\]: TPU v5p has no topology '2x2x8'"),
    (package.AcceleratorStack, {"pools": [{"accelerator": "h100-80gb", "chips": 8, "nodeLabel": {}}]},
     r"^AcceleratorStack\.pools\[0\]\.nodeLabel: Extra inputs"),
    (package.AcceleratorStack, {"eksRoleArn": "arn:aws:iam::123456789012:role/trainer"},
     r"^AcceleratorStack\.eksRoleArn: .*give one identity"),
    (package.TpuVmSlice, {"provisioning": "flex-start"}, r"^TpuVmSlice\.capacity\.provisioning: 'flex-start'"),
    (package.TrainingCluster, {"planJson": "{}"}, r"^TrainingCluster\.planJson: "),
])
def test_a_bad_nested_or_combined_input_is_refused_naming_the_property_as_written(declare, component, change, message):
    inputs = {**HAND_WRITTEN[component.__name__], **change}
    harness.rejected(declare, lambda: component("bad", inputs), ComponentArgsError, message)


def test_a_served_accelerator_stack_queues_exactly_the_pools_chips_through_its_own_kubeconfig(declare):
    capture = declare(lambda: package.AcceleratorStack("queue", HAND_WRITTEN["AcceleratorStack"]))
    [provider] = capture.of_type("pulumi:providers:kubernetes")
    [cluster_queue] = [r for r in capture.resources if r.inputs.get("kind") == "ClusterQueue"]
    assert provider.inputs["kubeconfig"] == KUBECONFIG
    assert cluster_queue.provider_urn == provider.urn
    quotas = {q["name"]: q["nominalQuota"] for group in cluster_queue.inputs["spec"]["resourceGroups"]
              for flavor in group["flavors"] for q in flavor["resources"]}
    assert quotas["google.com/tpu"] == 32


def test_a_served_tpu_vm_slice_declares_one_spot_vm_per_slice(declare):
    capture = declare(lambda: package.TpuVmSlice("vms", HAND_WRITTEN["TpuVmSlice"]))
    vms = capture.of_type("gcp:tpu/v2Vm:V2Vm")
    assert len(vms) == 2
    assert {vm.inputs["acceleratorType"] for vm in vms} == {shapes.tpu_vm_type("v5p", 16)}
    assert all(vm.inputs["schedulingConfig"]["spot"] for vm in vms)
