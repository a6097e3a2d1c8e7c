"""The declared resources are priced against the catalog, and a pinned Plan must say what is built."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from accel.base.errors import UsageError
from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.cloud.pin_check import check_pin
from accel.policies.plan import Plan
from accel.policies.cloud.pricing import (EKS_NODE_GROUP, GKE_NODE_POOL, MANAGED_LUSTRE, price_resource,
                                    price_resources)

ROOT = Path(__file__).resolve().parent.parent
CATALOG = load_catalog()


def offering(machine_type: str):
    return next(o for o in CATALOG.offerings if o.machine_type == machine_type)


def tpu_pool(name: str, nodes: int, machine: str = "ct6e-standard-4t", spot: bool = False) -> tuple:
    return (GKE_NODE_POOL, name, {"nodeCount": nodes, "location": "us-east5",
                                  "nodeConfig": {"machineType": machine, "spot": spot}})


@given(nodes=st.integers(1, 4096), spot=st.booleans())
@settings(max_examples=50, deadline=None)
def test_a_gke_pool_costs_its_nodes_times_the_offerings_per_node_price(nodes, spot):
    item = price_resource(*tpu_pool("p", nodes, spot=spot), CATALOG)
    chip, host = offering("ct6e-standard-4t").prices("us-east5", spot)
    per_node = 4 * chip.usd + (host.usd if host else 0.0)
    assert item.kind == "accelerator-pool" and item.chips == nodes * 4
    assert item.hourly_usd == pytest.approx(nodes * per_node)


def test_an_autoscaled_pool_is_priced_at_its_ceiling_when_the_work_runs():
    inputs = {"initialNodeCount": 0, "autoscaling": {"totalMaxNodeCount": 3}, "location": "us-central1",
              "nodeConfig": {"machineType": "a3-highgpu-8g"}}
    assert price_resource(GKE_NODE_POOL, "gpu", inputs, CATALOG).nodes == 3


def test_an_eks_group_is_priced_at_its_desired_size_in_the_providers_region():
    group = (EKS_NODE_GROUP, "gpu", {"instanceTypes": ["p5en.48xlarge"], "capacityType": "ON_DEMAND",
                                     "scalingConfig": {"desiredSize": 50, "maxSize": 50}})
    provider = ("pulumi:providers:aws", "default", {"region": "us-east-1"})
    built = price_resources([group, provider], CATALOG)
    chip, host = offering("p5en.48xlarge").prices("us-east-1", False)
    assert built.nodes == 50
    assert built.accelerator_hourly_usd == pytest.approx(50 * (8 * chip.usd + (host.usd if host else 0)))


def test_an_unknown_machine_type_is_listed_unpriced_never_guessed():
    built = price_resources([tpu_pool("odd", 4, machine="zz9-plural-z-alpha")], CATALOG)
    [item] = built.unpriced
    assert item.hourly_usd is None and "zz9-plural-z-alpha is not in catalog" in item.reason
    assert built.hourly_usd == 0


def test_a_filesystem_costs_its_capacity_at_the_price_of_its_tier():
    offer = CATALOG.defaults.storage.filesystems["gcp"]
    item = price_resource(MANAGED_LUSTRE, "fs", {"capacityGib": "18000", "perUnitStorageThroughput": "500"}, CATALOG)
    assert item.hourly_usd == pytest.approx(18000 * offer.prices_per_gib_month[500].usd / 730)


def test_a_tier_the_catalog_does_not_price_is_unpriced():
    item = price_resource(MANAGED_LUSTRE, "fs", {"capacityGib": 9000, "perUnitStorageThroughput": 77}, CATALOG)
    assert item.hourly_usd is None and "77 MB/s per TiB tier" in item.reason


# ---- the pinned Plan against what is built ---------------------------------------------------------

@pytest.fixture(scope="module")
def tpu_plan(planned_stacks) -> Plan:
    return Plan.model_validate(planned_stacks["llama-70b-tpu"]["plan"])


def test_a_built_shape_that_disagrees_with_the_plan_names_the_field_and_both_values(tpu_plan):
    built = price_resources([tpu_pool(f"s{i}", 64) for i in range(40)], CATALOG)
    problems, _ = check_pin(tpu_plan, built, "llama-70b-tpu")
    assert "accel:plan.tpu.slices says 4 but the program builds 40 node pools" in problems
    assert "accel:plan.chosen.chips says 1,024 but the program builds 10,240 chips" in problems


def test_a_price_change_under_an_earlier_catalog_is_drift_not_a_refusal(tpu_plan):
    older = tpu_plan.model_copy(update={"catalog": tpu_plan.catalog.model_copy(update={"version": "2026.04.1"}),
                                        "chosen": tpu_plan.chosen.model_copy(update={"hourly_usd": 2000.0})})
    built = price_resources([tpu_pool(f"s{i}", 64) for i in range(4)], CATALOG)
    problems, drift = check_pin(older, built, "llama-70b-tpu")
    assert problems == []
    assert (drift.pinned_hourly_usd, drift.now_hourly_usd) == (2000.0, pytest.approx(built.accelerator_hourly_usd))
    assert "2026.04.1" in drift.note and CATALOG.version in drift.note
    assert "unverified" in drift.note and f"repriced from catalog {CATALOG.version}" in drift.note


@pytest.mark.parametrize("version", ["1999.1.1", "2027.1.1", "2026.11.2-forged", "x"])
def test_a_pin_naming_a_catalog_accel_does_not_know_is_refused_not_called_drift(tpu_plan, version):
    """Halved prices under a made-up catalog version: nothing to check them against, so refused."""
    forged = tpu_plan.model_copy(update={"catalog": tpu_plan.catalog.model_copy(update={"version": version}),
                                         "chosen": tpu_plan.chosen.model_copy(
                                             update={"hourly_usd": tpu_plan.chosen.hourly_usd / 2})})
    built = price_resources([tpu_pool(f"s{i}", 64) for i in range(4)], CATALOG)
    problems, drift = check_pin(forged, built, "llama-70b-tpu")
    assert drift is None
    assert len(problems) == 1 and f"catalog.version is {version!r}, a catalog accel does not know" in problems[0]


def test_a_tampered_pin_is_refused_with_the_field_both_values_and_how_to_re_pin(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml").read_text()
    for old, new in (("      slices: 4\n", "      slices: 40\n"), ("      chips: 1024\n", "      chips: 10240\n"),
                     ("      hosts: 256\n", "      hosts: 2560\n")):
        assert old in text
        text = text.replace(old, new)
    tampered = tmp_path / "Pulumi.tampered.yaml"
    tampered.write_text(text)
    with pytest.raises(UsageError) as refused:
        plan_stack(None, tampered, ROOT)
    message = str(refused.value)
    assert "accel:plan.chosen.hourly_usd says $2,764.80/h" in message
    assert "40 pools it builds cost $27,648.00/h" in message
    assert "--write-stack tampered" in message
