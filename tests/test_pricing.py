"""The declared resources are priced against the catalog, and a pinned Plan must say what is built."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
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
    slices, chips = tpu_plan.tpu.slices, tpu_plan.chosen.chips   # the pinned default stack's shape
    built = price_resources([tpu_pool(f"s{i}", 64) for i in range(10 * slices)], CATALOG)
    problems, _ = check_pin(tpu_plan, built, "llama-70b-tpu")
    assert f"accel:plan.tpu.slices says {slices} but the program builds {10 * slices} node pools" in problems
    assert f"accel:plan.chosen.chips says {chips:,} but the program builds {10 * chips:,} chips" in problems


def test_a_price_change_under_an_earlier_catalog_is_drift_not_a_refusal(tpu_plan):
    older = tpu_plan.model_copy(update={"catalog": tpu_plan.catalog.model_copy(update={"version": "2026.04.1"}),
                                        "chosen": tpu_plan.chosen.model_copy(update={"hourly_usd": 2000.0})})
    built = price_resources([tpu_pool(f"s{i}", 64) for i in range(tpu_plan.tpu.slices)], CATALOG)
    problems, drift = check_pin(older, built, "llama-70b-tpu")
    assert problems == []
    assert (drift.pinned_hourly_usd, drift.now_hourly_usd) == (2000.0, pytest.approx(built.accelerator_hourly_usd))
    assert "2026.04.1" in drift.note and CATALOG.version in drift.note
    assert "unverified" in drift.note and f"repriced from catalog {CATALOG.version}" in drift.note


@pytest.mark.parametrize("factor", [0.5, 1.0])
@pytest.mark.parametrize("version", ["1999.1.1", "2027.1.1", "2026.11.2-forged", "x"])
def test_a_pin_naming_a_catalog_accel_does_not_know_is_refused_not_called_drift(tpu_plan, version, factor):
    """Halved (or unchanged) prices under a made-up catalog version: nothing to check them against, so refused."""
    forged = tpu_plan.model_copy(update={"catalog": tpu_plan.catalog.model_copy(update={"version": version}),
                                         "chosen": tpu_plan.chosen.model_copy(
                                             update={"hourly_usd": tpu_plan.chosen.hourly_usd * factor})})
    built = price_resources([tpu_pool(f"s{i}", 64) for i in range(tpu_plan.tpu.slices)], CATALOG)
    problems, drift = check_pin(forged, built, "llama-70b-tpu")
    assert drift is None
    assert len(problems) == 1 and f"catalog.version is {version!r}, a catalog accel does not know" in problems[0]


def test_a_tampered_pin_is_refused_with_the_field_both_values_and_how_to_re_pin(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml").read_text()
    plan = yaml.safe_load(text)["config"]["accel:plan"]
    slices, chips, hosts, hourly = (plan["tpu"]["slices"], plan["chosen"]["chips"], plan["chosen"]["hosts"],
                                    plan["chosen"]["hourly_usd"])
    for old, new in ((f"      slices: {slices}\n", f"      slices: {5 * slices}\n"),
                     (f"      chips: {chips}\n", f"      chips: {5 * chips}\n"),
                     (f"      hosts: {hosts}\n", f"      hosts: {5 * hosts}\n")):
        assert old in text
        text = text.replace(old, new)
    tampered = tmp_path / "Pulumi.tampered.yaml"
    tampered.write_text(text)
    with pytest.raises(UsageError) as refused:
        plan_stack(None, tampered, ROOT)
    message = str(refused.value)
    assert f"accel:plan.chosen.hourly_usd says ${hourly:,.2f}/h" in message
    assert f"{5 * slices} pools it builds cost ${5 * hourly:,.2f}/h" in message
    assert "--write-stack tampered" in message
