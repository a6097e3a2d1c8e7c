"""Every resource of every stack against the real schemas: provider SDK input types, upstream CRDs,
GKE's documented networking objects. The mock engine accepts anything; `pulumi up` does not."""

from __future__ import annotations

from functools import cache

import jsonschema
import pytest

from tests.conftest import every_stack_id
from tests.crds import CRDS, served_schemas
from tests.schema_walk import resource_problems

STACKS = every_stack_id()
CRD_GROUPS = ("kueue.x-k8s.io", "jobset.x-k8s.io")
# GKE multi-networking objects (networking.gke.io/v1), the fields GKE documents for them
# ("Set up multi-network support for Pods" and "Maximize GPU network bandwidth" guides).
GKE_NETWORKING_SCHEMAS = {
    "GKENetworkParamSet": {
        "type": "object", "required": ["vpc", "vpcSubnet", "deviceMode"], "additionalProperties": False,
        "properties": {"vpc": {"type": "string", "minLength": 1}, "vpcSubnet": {"type": "string", "minLength": 1},
                       "deviceMode": {"enum": ["NetDevice", "DPDK-VFIO", "RDMA"]}},
    },
    "Network": {
        "type": "object", "required": ["type"], "additionalProperties": False,
        "properties": {"type": {"enum": ["L3", "Device"]},
                       "parametersRef": {"type": "object", "required": ["group", "kind", "name"],
                                         "additionalProperties": False,
                                         "properties": {"group": {"const": "networking.gke.io"},
                                                        "kind": {"const": "GKENetworkParamSet"},
                                                        "name": {"type": "string"}}}},
    },
}


def crd_schema(group: str, version: str, kind: str) -> dict | None:
    return served_schemas().get((f"{group}/{version}", kind))


@cache
def crd_validator(group: str, version: str, kind: str):
    """What `jsonschema.validate` builds for the CRD's schema, the schema checked once per process."""
    schema = crd_schema(group, version, kind)
    if schema is None:
        return None
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def known_after_apply(value):
    """Preview shows values computed by the cloud (ids, names of other resources) as null; stand in a string."""
    if value is None:
        return "<known after apply>"
    if isinstance(value, dict):
        return {k: known_after_apply(v) for k, v in value.items()}
    if isinstance(value, list):
        return [known_after_apply(v) for v in value]
    return value


def custom_resources(document: dict, groups: tuple[str, ...]) -> list[dict]:
    found = []
    for resource in document["resources"]:
        api_version = resource["inputs"].get("apiVersion") if resource["type"].startswith("kubernetes:") else None
        if isinstance(api_version, str) and api_version.split("/", 1)[0] in groups:
            found.append(resource)
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_matches_its_provider_sdk_input_type(every_stack, stack):
    problems, checked = [], 0
    for resource in every_stack[stack]["resources"]:
        found = resource_problems(resource)
        if found is not None:
            checked += 1
            problems += found
    assert checked > 0
    assert problems == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_kueue_and_jobset_object_validates_against_the_upstream_crd(every_stack, stack):
    if not CRDS.is_dir():
        pytest.skip(f"{CRDS} is absent: the upstream CRDs live in ../shared/crds beside the checkout")
    objects = custom_resources(every_stack[stack], CRD_GROUPS)
    assert objects, f"{stack}: no Kueue object declared"
    for resource in objects:
        inputs = resource["inputs"]
        group, version = inputs["apiVersion"].split("/")
        validator = crd_validator(group, version, inputs["kind"])
        assert validator is not None, f"{inputs['apiVersion']} {inputs['kind']} is not served by the pinned CRDs"
        document = {k: v for k, v in inputs.items() if k in ("apiVersion", "kind", "metadata", "spec")}
        validator.validate(document)


@pytest.mark.parametrize("stack", STACKS)
def test_gke_networking_objects_carry_only_documented_fields(every_stack, stack):
    for resource in custom_resources(every_stack[stack], ("networking.gke.io",)):
        inputs = resource["inputs"]
        jsonschema.validate(known_after_apply(inputs["spec"]), GKE_NETWORKING_SCHEMAS[inputs["kind"]])


# ---- the walker itself: a mistake of each kind is found ---------------------------------------------

def node_pool(**inputs) -> dict:
    return {"type": "gcp:container/nodePool:NodePool", "name": "pool", "inputs": {"cluster": "c", **inputs}}


def test_the_walker_reports_a_misspelt_nested_property():
    [problem] = resource_problems(node_pool(nodeConfig={"machineTyp": "a3-highgpu-8g"}))
    assert "pool.nodeConfig.machineTyp: not a property" in problem


def test_the_walker_reports_a_wrong_value_kind():
    [problem] = resource_problems(node_pool(autoscaling={"totalMaxNodeCount": "sixteen"}))
    assert "expects number" in problem


def test_the_walker_reports_a_missing_required_property():
    problems = resource_problems({"type": "gcp:container/nodePool:NodePool", "name": "pool", "inputs": {}})
    assert problems == ["pool.cluster: required by NodePoolArgs, missing"]


def test_the_walker_accepts_a_correct_resource():
    assert resource_problems(node_pool(nodeConfig={"machineType": "a3-highgpu-8g", "spot": True,
                                                   "labels": {"a": "b"}})) == []


def test_the_crd_schema_rejects_an_unknown_kueue_field():
    if not CRDS.is_dir():
        pytest.skip(f"{CRDS} is absent")
    schema = crd_schema("kueue.x-k8s.io", "v1beta1", "ClusterQueue")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {},
                             "spec": {"queueingStrategy": "Sometimes"}}, schema)
