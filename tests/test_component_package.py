"""The component package other languages use (provider/): the SDK's own analyzer infers its schema,
and each served component declares the Python component it stands for."""

import json
import runpy
from pathlib import Path
from typing import get_type_hints

import pulumi.provider.experimental
import pytest
import yaml
from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.component import ComponentProvider

from accel.base.errors import ComponentArgsError
from accel.components import package
from accel.policies import shapes
from tests import harness

ROOT = Path(__file__).resolve().parent.parent
PROVIDER = ROOT / "provider"
OWNERSHIP = {"workload": "llama-8b", "owner": "ml-platform"}
GKE = {"cluster": "ml-cluster", "location": "us-east5", "zone": "us-east5-a", "ownership": OWNERSHIP}


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(ComponentProvider(package.COMPONENTS, "accel", version="0.1.0").schema)


@pytest.mark.parametrize("component", package.COMPONENTS, ids=lambda c: c.__name__)
def test_the_sdk_analyzer_infers_a_schema_for_the_component(component):
    definition = Analyzer("accel").analyze_component(component)
    inputs_type = get_type_hints(component.__init__)["args"]
    assert set(definition.inputs) == set(inputs_type.__annotations__)
    assert set(definition.outputs) == set(component.__annotations__)


@pytest.mark.parametrize("component", package.COMPONENTS, ids=lambda c: c.__name__)
def test_the_package_schema_has_the_component_with_its_required_inputs(schema, component):
    resource = schema["resources"][f"accel:index:{component.__name__}"]
    assert resource["isComponent"] is True
    inputs_type = get_type_hints(component.__init__)["args"]
    assert set(resource["requiredInputs"]) == set(inputs_type.__required_keys__)


def test_the_provider_entry_hosts_every_served_component_as_package_accel(monkeypatch):
    hosted = []
    monkeypatch.setattr(pulumi.provider.experimental, "component_provider_host",
                        lambda components, name, **kw: hosted.append((components, name)))
    runpy.run_path(str(PROVIDER / "__main__.py"), run_name="__main__")
    assert hosted == [(package.COMPONENTS, "accel")]


def test_the_plugin_manifest_sits_beside_the_entry_and_names_the_python_runtime():
    manifest = yaml.safe_load((PROVIDER / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    assert (PROVIDER / manifest["runtime"]["options"]["virtualenv"]).name == "venv"
    assert "accel" in (PROVIDER / "requirements.txt").read_text()


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
