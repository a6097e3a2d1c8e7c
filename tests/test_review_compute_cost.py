"""Compute a program creates outside node pools moves the review's cost, or is named as unpriced.

A pull request that adds a TPU VM, EC2 or Compute Engine instances, an autoscaling group or a
managed instance group beside the components must not show "$0.00/h, the preview does not move
the cost" (reliability finding F10).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel.policies.catalog import load_catalog
from accel.review.changes import changes_from_preview
from accel.review.compute_cost import COMPUTE_TYPES, price_compute
from accel.review.loading import load_input
from accel.review.preview_cost import preview_cost

ROOT = Path(__file__).resolve().parent.parent
DELETE = ROOT / "tests" / "fixtures" / "review" / "preview_delete_checkpoint_bucket.json"
CATALOG = load_catalog()


def cost_with(tmp_path: Path, resource_type: str, inputs: dict):
    document = json.loads(DELETE.read_text(encoding="utf-8"))
    document["steps"].append({"op": "create", "urn": f"urn:pulumi:llama-8b-v5p::accel::{resource_type}::sneaky",
                              "newState": {"type": resource_type, "custom": True, "inputs": inputs}})
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return preview_cost(changes_from_preview(load_input(path)), catalog=CATALOG)


def test_a_tpu_vm_is_priced_at_its_chips_times_the_catalog_chip_price(tmp_path):
    cost = cost_with(tmp_path, "gcp:tpu/v2Vm:V2Vm", {"acceleratorType": "v5p-2048", "zone": "us-east5-a"})
    row = next(r for r in cost.resources if r.type == "gcp:tpu/v2Vm:V2Vm")
    offering = next(o for o in CATALOG.offerings if o.cloud == "gcp" and o.accelerator == "tpu-v5p")
    chip, _host = offering.prices("us-east5", False)
    assert row.after == pytest.approx(1024 * chip.usd) and row.after > 1000
    assert cost.rows[0].after >= row.after
    assert cost.note is None or "does not move the cost" not in cost.note


def test_a_spot_tpu_vm_is_priced_at_the_spot_price(tmp_path):
    on_demand = cost_with(tmp_path, "gcp:tpu/v2Vm:V2Vm", {"acceleratorType": "v5p-8", "zone": "us-east5-a"})
    spot = cost_with(tmp_path, "gcp:tpu/v2Vm:V2Vm", {"acceleratorType": "v5p-8", "zone": "us-east5-a",
                                                     "schedulingConfig": {"spot": True}})
    assert 0 < spot.rows[0].after < on_demand.rows[0].after


@pytest.mark.parametrize("resource_type,inputs", [
    ("aws:ec2/instance:Instance", {"instanceType": "p5.48xlarge"}),
    ("gcp:compute/instance:Instance", {"machineType": "a3-megagpu-8g", "zone": "us-east5-a"}),
])
def test_an_accelerator_instance_is_priced_like_one_node_of_its_machine(tmp_path, resource_type, inputs):
    cost = cost_with(tmp_path, resource_type, inputs)
    row = next(r for r in cost.resources if r.type == resource_type)
    assert row.after > 10 and row.after_priced


@pytest.mark.parametrize("resource_type,inputs,size", [
    ("aws:autoscaling/group:Group", {"desiredCapacity": 500, "maxSize": 500, "launchTemplate": {"id": "lt"}}, "500"),
    ("gcp:compute/instanceGroupManager:InstanceGroupManager", {"targetSize": 500, "zone": "us-east5-a"}, "500"),
    ("aws:ec2/instance:Instance", {"instanceType": "m7i.large"}, "m7i.large"),
    ("gcp:tpu/v2Vm:V2Vm", {"acceleratorType": "v99-8"}, "v99-8"),
])
def test_compute_that_cannot_be_priced_is_listed_and_the_total_is_a_lower_bound(tmp_path, resource_type, inputs, size):
    cost = cost_with(tmp_path, resource_type, inputs)
    assert any(size in line for line in cost.unpriced), cost.unpriced
    assert "lower bound" in cost.note


def test_every_compute_type_is_priced_or_unpriced_never_ignored():
    for resource_type in sorted(COMPUTE_TYPES):
        item = price_compute(resource_type, "x", {}, CATALOG)
        assert item is not None and (item.priced or item.reason), resource_type
