"""A hardware pin is priced and timed through its capacity mode as the search prices and times the same fleet.

A pin fixes the hardware, not the price: an offering planned through flex-start (A3 Ultra) is billed at the mode's
price (policies/cloud/mode_prices.py: its factor of the on-demand figure, gcp-accel-price-sheet-2026-09) and a
training run on it is chained in legs of at most seven days, each paying the start-up again, whether the search
picked it or the workload pinned it; spot and on-demand pins keep their own prices. So pinning exactly the fleet
the search chose gives back the same hourly price, hours, total and price source. A declared reservation a pinned
flex-start plan lands on bills the on-demand rate, not the queue's.
"""

from __future__ import annotations

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.cloud.reservations import DeclaredReservation, use_reservation
from accel.policies.selection.choose import choose, make_plan, plan_from_pin
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def training(name: str, *, tokens: str, deadline: int, clouds, accelerators, spot: str = "never",
             hardware: dict | None = None):
    data = {"name": name, "kind": "pretrain", "model": {"parameters": "8B", "sequence_length": 8192},
            "training": {"tokens": tokens, "framework": "pytorch", "precision": "bf16"},
            "constraints": {"clouds": clouds, "accelerators": accelerators, "deadline_days": deadline, "spot": spot},
            "owner": "pin-tests", "cost_center": "cc-1"}
    if hardware is not None:
        data["hardware"] = hardware
    return workload_from_mapping(data, name)


# Each capacity mode a pin is bought through: flex-start with a factor (one request; chained in legs), flex-start
# without one (A4: the on-demand figure, an upper bound), spot, and on demand.
CASES = {
    "flex-start, one request (A3 Ultra)": dict(tokens="20B", deadline=30, clouds=["gcp"], accelerators=["h200-141gb"]),
    "flex-start, five legs (A3 Ultra)": dict(tokens="300B", deadline=60, clouds=["gcp"], accelerators=["h200-141gb"]),
    "flex-start, no factor (A4)": dict(tokens="20B", deadline=5, clouds=["gcp"], accelerators=["b200"]),
    "spot (A3 High)": dict(tokens="20B", deadline=30, clouds=["gcp"], accelerators=["h100-80gb"], spot="required"),
    "on demand (p5en)": dict(tokens="20B", deadline=10, clouds=["aws"], accelerators=["h200-141gb"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pinning_the_chosen_fleet_gives_back_its_price_hours_and_source(catalog, case):
    searched = choose(training("searched", **CASES[case]), catalog)
    chosen = searched.chosen
    pin = {"accelerator": chosen.accelerator, "chips": chosen.chips, "cloud": chosen.cloud, "region": chosen.region,
           "machine_type": chosen.machine_type, "spot": chosen.provisioning == "spot"}
    pinned = choose(training("pinned", **CASES[case], hardware=pin), catalog).chosen
    assert (pinned.provisioning, pinned.hosts) == (chosen.provisioning, chosen.hosts)
    assert pinned.hourly_usd == pytest.approx(chosen.hourly_usd, rel=1e-9)
    assert pinned.hours == pytest.approx(chosen.hours, rel=1e-9)
    assert pinned.total_usd == pytest.approx(chosen.total_usd, abs=0.01)
    assert pinned.price_source == chosen.price_source


def test_a_pinned_a3_ultra_is_billed_at_flex_starts_price_with_its_source(catalog):
    spec = training("pinned", tokens="20B", deadline=30, clouds=["gcp"], accelerators=["h200-141gb"],
                    hardware={"accelerator": "h200-141gb", "chips": 64, "cloud": "gcp", "region": "us-central1",
                              "machine_type": "a3-ultragpu-8g"})
    choice = choose(spec, catalog)
    offering = catalog.offering("gcp-a3-ultragpu-8g")
    chip, host = offering.prices("us-central1", False)
    factor = load_modes().price_factor("gcp-flex-start", "a3-ultragpu-8g")[0]
    assert choice.chosen.provisioning == "flex-start"
    assert choice.chosen.hourly_usd == pytest.approx(8 * factor * (8 * chip.usd + host.usd))
    assert choice.chosen.price_source.startswith("gcp-accel-price-sheet-2026-09")
    assert any(line.startswith("Capacity mode gcp-flex-start:") for line in choice.rationale)


def test_a_long_pinned_flex_start_run_is_chained_in_legs_in_the_plan(catalog):
    spec = training("pinned", tokens="300B", deadline=60, clouds=["gcp"], accelerators=["h200-141gb"],
                    hardware={"accelerator": "h200-141gb", "chips": 32, "cloud": "gcp", "region": "us-central1",
                              "machine_type": "a3-ultragpu-8g"})
    plan = plan_from_pin(spec, catalog)
    assert plan.capacity.provisioning == "flex-start" and plan.capacity.mode == "gcp-flex-start"
    assert plan.capacity.legs is not None and plan.capacity.legs > 1
    # Legs because the run outlives one request; the wall-clock adds the queue's waits to the billed hours.
    assert plan.chosen.hours > load_modes().modes["gcp-flex-start"].limits.max_duration_hours
    assert plan.estimate.details["capacity_legs"] == plan.capacity.legs
    assert plan.estimate.details["capacity_wall_hours"] > plan.chosen.hours


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "searched"])
def test_a_declared_reservation_under_a_flex_start_plan_bills_the_on_demand_rate(catalog, pinned):
    """A stack's reservation of the machine takes the plan (accel/stack/program.py use_reservation) and bills
    on-demand for the machines it holds, not the flex-start price the plan was sized at."""
    pin = {"accelerator": "h200-141gb", "chips": 64, "cloud": "gcp", "region": "us-central1",
           "machine_type": "a3-ultragpu-8g"}
    spec = training("flex", tokens="20B", deadline=30, clouds=["gcp"], accelerators=["h200-141gb"],
                    hardware=pin if pinned else None)
    plan = plan_from_pin(spec, catalog) if pinned else make_plan(spec, choose(spec, catalog), catalog)
    assert plan.capacity.provisioning == "flex-start" and plan.region == "us-central1"
    hosts = plan.chosen.hosts
    reservation = DeclaredReservation(name="a3u", machineType="a3-ultragpu-8g", count=hosts, zone="us-central1-b")
    reserved = use_reservation(plan, [reservation])
    chip, host = catalog.offering("gcp-a3-ultragpu-8g").prices("us-central1", False)
    assert reserved.capacity.provisioning == "reservation"
    assert reserved.chosen.hourly_usd == pytest.approx(hosts * (8 * chip.usd + host.usd), rel=1e-6)


def test_a_pinned_week_long_service_on_a3_ultra_is_billed_as_the_search_bills_it(catalog):
    def service(pin=None):
        data = {"name": "chat", "kind": "inference", "model": {"parameters": "70B", "sequence_length": 4096},
                "inference": {"tokens_per_second": 20000, "p99_latency_ms": 50, "framework": "jax", "hours": 168},
                "constraints": {"clouds": ["gcp"], "spot": "never", "accelerators": ["h200-141gb"]}}
        if pin is not None:
            data["hardware"] = pin
        return workload_from_mapping(data, "chat.yaml")

    searched = choose(service(), catalog)
    chosen = searched.chosen
    assert chosen.provisioning == "flex-start"
    pin = choose(service({"accelerator": chosen.accelerator, "chips": chosen.chips, "cloud": "gcp",
                          "region": chosen.region, "machine_type": chosen.machine_type}), catalog)
    pinned = pin.chosen
    assert (pinned.hourly_usd, pinned.total_usd, pinned.price_source) == pytest.approx(
        (chosen.hourly_usd, chosen.total_usd, chosen.price_source))
    # And its capacity mode and risk: one request, every node removed when it ends, the wait before it serves (the
    # pin carried none, so its plan had no capacity.mode and its rationale no line about the queue).
    for key in ("capacity_mode", "capacity_risk"):
        assert pin.estimate.details[key] == searched.estimate.details[key]
    assert "before it serves" in pin.estimate.details["capacity_risk"]
    line = next(line for line in searched.rationale if line.startswith("Capacity mode gcp-flex-start"))
    assert line in pin.rationale
