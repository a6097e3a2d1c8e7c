"""DWS flex-start as a capacity mode of the search, at its own price (issue #27).

- The price: a machine bought through flex-start (or queued provisioning, billed as flex-start) costs its on-demand
  price times the factor capacity_modes.yaml gives for that machine type (gcp-accel-price-sheet-2026-09, an
  observation of 2026-09-19), and the option's source says so; a machine with no factor (A4, TPU7x) keeps the
  catalog's on-demand figure.
- The search: a GCP GPU training offering sold on demand AND through flex-start is sized on both; flex-start runs
  are chained in legs of at most seven days, each re-queued, and paid per leg (policies/cloud/obtainability.py);
  flex-start is chosen where it is the cheapest way to finish by the deadline, and not where its queue waits and
  legs make it late.
- The plan: a stack written from such a choice plans a flex-start pool and passes the guardrails.
"""

from __future__ import annotations

import math
from datetime import date

import pytest

from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.cloud.mode_prices import queued_prices
from accel.policies.selection.candidates import price_points, search_context
from accel.policies.selection.choose import choose
from tests.test_booked_modes import fresh_project, of_type, workload, write_chosen

FACTORS = load_modes().modes["gcp-flex-start"].price.factor_by_machine
SHEET = "gcp-accel-price-sheet-2026-09"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def mega(deadline: int = 30, capacity=None, tokens: str = "200B", regions=None):
    """A 70B PyTorch pretrain on H100s on Google Cloud, never on spot (the a3-megagpu-8g stack's workload); in
    us-east5 only A3 Mega is offered."""
    spec = workload("mega", clouds=["gcp"], accelerators=["h100-80gb"], tokens=tokens, deadline=deadline,
                    kind="pretrain", capacity=capacity)
    return spec if regions is None else spec.model_copy(update={"constraints": spec.constraints.model_copy(
        update={"regions": regions})})


def offering_of(catalog, machine_type: str):
    return next(o for o in catalog.offerings if o.machine_type == machine_type)


# ------------------------------------------------------------------------------------------------ the price

@pytest.mark.parametrize("machine_type", sorted(FACTORS))
def test_flex_start_costs_the_machines_on_demand_price_times_its_factor(catalog, machine_type):
    offering = offering_of(catalog, machine_type)
    table = load_modes()
    for region in offering.regions:
        chip, host = offering.prices(region, False)
        for mode in ("gcp-flex-start", "gcp-queued"):   # queued: price same_as flex-start
            derived_chip, derived_host = queued_prices(table, mode, machine_type, chip, host)
            assert derived_chip.usd == pytest.approx(chip.usd * FACTORS[machine_type])
            assert (derived_host is None) == (host is None)
            if host is not None:
                assert derived_host.usd == pytest.approx(host.usd * FACTORS[machine_type])
            # The source names the mode's price source first (the option's price_source is its id), then the
            # on-demand figure it multiplies; it is dated by the older of the two and keeps its estimate mark.
            assert derived_chip.source.startswith(f"{SHEET}: ") and chip.source in derived_chip.source
            assert "re-verified" in derived_chip.source
            assert derived_chip.as_of == min(chip.as_of, date(2026, 9, 19))
            assert derived_chip.estimate == chip.estimate


@pytest.mark.parametrize("machine_type", ["a4-highgpu-8g", "tpu7x-standard-4t", "g2-standard-48"])
def test_a_machine_with_no_factor_has_no_derived_price(catalog, machine_type):
    chip = offering_of(catalog, "a3-highgpu-8g").prices("us-central1", False)[0]
    assert queued_prices(load_modes(), "gcp-flex-start", machine_type, chip, None) is None


def test_an_offering_planned_as_flex_start_is_sized_at_its_factor_or_else_at_on_demand(catalog):
    ctx = search_context(workload("w", clouds=["gcp"], accelerators=["h200-141gb", "b200"]), catalog, "cost")
    ultra, a4 = catalog.offering("gcp-a3-ultragpu-8g"), catalog.offering("gcp-a4-highgpu-8g")
    for offering, factor in ((ultra, FACTORS["a3-ultragpu-8g"]), (a4, 1.0)):   # A4: no factor, on-demand kept
        points, _ = price_points(ctx, offering)
        listed = [p for p in points if not p.spot and p.booking is None and p.reserved is None]
        assert listed and all(p.queue is None for p in listed)
        for point in listed:
            chip, host = offering.prices(point.regions[0], False)
            assert point.chip.usd == pytest.approx(chip.usd * factor)
            assert point.host is None or point.host.usd == pytest.approx(host.usd * factor)
        assert all((p.chip.source.startswith(SHEET)) == (factor != 1.0) for p in listed)


def test_an_on_demand_gcp_gpu_offering_gets_a_flex_start_price_point_beside_on_demand(catalog):
    ctx = search_context(mega(), catalog, "cost")
    offering = catalog.offering("gcp-a3-megagpu-8g")
    points, _ = price_points(ctx, offering)
    on_demand = [p for p in points if not p.spot and p.booking is None and p.reserved is None and p.queue is None]
    flex = [p for p in points if p.queue == "flex-start"]
    assert [p.regions for p in flex] == [p.regions for p in on_demand]
    for od, fs in zip(on_demand, flex):
        assert fs.chip.usd == pytest.approx(od.chip.usd * FACTORS["a3-megagpu-8g"])


@pytest.mark.parametrize("why, spec, offering_id", [
    ("flex-start is not sold for A4X", workload("w", clouds=["gcp"], accelerators=["gb200"]), "gcp-a4x-highgpu-4g"),
    ("a service outlives a seven-day request",
     workload("w", clouds=["gcp"], accelerators=["h100-80gb"]).model_copy(update={"kind": "inference"}),
     "gcp-a3-megagpu-8g"),
])
def test_no_flex_start_point_where_the_mode_does_not_apply(catalog, why, spec, offering_id):
    if spec.kind == "inference":
        from tests.test_capacity_modes import EXAMPLES
        from accel.policies.workload import load_workload

        base = load_workload(EXAMPLES / "llama-70b-inference.yaml")
        spec = base.model_copy(update={"constraints": base.constraints.model_copy(update={"clouds": ["gcp"]})})
    ctx = search_context(spec, catalog, "cost")
    points, _ = price_points(ctx, catalog.offering(offering_id))
    assert not [p for p in points if p.queue is not None], why


# ----------------------------------------------------------------------------------------------- the choice

def test_flex_start_is_chosen_where_it_is_the_cheapest_way_to_finish_in_time(catalog):
    choice = choose(mega(), catalog)
    chosen = choice.chosen
    assert chosen.provisioning == "flex-start" and chosen.price_source.startswith(SHEET)
    # Its price is the on-demand fleet's times the machine's factor, size for size.
    offering = catalog.offering(chosen.offering)
    chip, host = offering.prices(chosen.region, False)
    on_demand_hourly = chosen.chips * chip.usd + chosen.hosts * (host.usd if host else 0.0)
    assert chosen.hourly_usd == pytest.approx(on_demand_hourly * FACTORS[chosen.machine_type], rel=1e-6)
    assert any(line.startswith("Capacity mode gcp-flex-start") for line in choice.rationale)
    # Why: the same machines on demand cost more (and the price it was chosen at is an observation, dated).
    why = next(line for line in choice.rationale if line.startswith("Capacity: bought through flex-start"))
    assert SHEET in why and "2026-09-19" in why and "on demand" in why
    assert "on demand, which neither waits in the queue nor restarts between legs" in why   # a training run's words
    # The on-demand fleets are still offered, and dearer.
    on_demand = [o for o in choice.options if o.provisioning == "on-demand"]
    assert on_demand and min(o.total_usd for o in on_demand) > chosen.total_usd


def test_a_run_past_seven_days_is_chained_in_legs_and_pays_each_leg(catalog):
    choice = choose(mega(), catalog)
    detail = choice.option_details[choice.options.index(choice.chosen)]
    legs = int(detail["capacity_legs"])
    chosen = choice.chosen
    assert legs == math.ceil(chosen.hours / 168 - 1e-9) > 1   # billed hours: each leg within seven days
    assert chosen.hours / legs <= 168
    assert float(detail["capacity_wall_hours"]) > chosen.hours   # the re-queues between legs, at P90
    assert "2 legs" in detail["capacity_risk"] or f"{legs} legs" in detail["capacity_risk"]


def test_flex_start_is_not_chosen_where_its_queue_makes_it_late(catalog):
    """The same workload when each flex-start request is expected to wait a week: the legs miss the deadline,
    so on-demand (dearer, on time) is chosen and flex-start is said to be late."""
    slow_queue = {"obtainability": {"frontier-gpu": {"flex-start": {"expected_wait_hours": 24 * 7}}}}
    choice = choose(mega(deadline=14, capacity=slow_queue), catalog)
    assert choice.chosen.provisioning == "on-demand"
    assert not [o for o in choice.options if o.provisioning == "flex-start"]
    fast = choose(mega(deadline=14), catalog)
    assert fast.chosen.provisioning == "flex-start" and fast.chosen.total_usd < choice.chosen.total_usd


def test_by_time_a_flex_start_fleet_is_timed_by_its_legs_and_queue_waits(catalog):
    """--objective time ranks a flex-start fleet by its wall-clock (legs and the waits before them), not by the
    hours it bills: what is chosen is within the time tolerance of the fastest wall-clock of any option."""
    from accel.policies.estimator.estimate import resolve
    from accel.policies.selection.capacity import beyond_supply, obtaining

    spec = mega()
    choice = choose(spec, catalog, "time")
    # Among the fleets a mode is expected to supply (an on-demand fleet past the zone's pool ranks after them).
    supplied = [(o, d) for o, d in zip(choice.options, choice.option_details)
                if not beyond_supply(obtaining(spec), catalog.offering(o.offering), o.provisioning, o.hosts)]
    walls = [float(d.get("capacity_wall_hours", o.hours)) if o.provisioning == "flex-start" else o.hours
             for o, d in supplied]
    assert supplied[0][0] == choice.chosen and any(o.provisioning == "flex-start" for o, _ in supplied)
    tolerance = resolve(spec, catalog.defaults)["time_objective_tolerance"]
    assert walls[0] <= min(walls) * (1 + tolerance) + 1e-9


# ------------------------------------------------------------------------------------------------- the plan

def test_a_stack_written_from_an_a3_mega_flex_start_choice_plans_a_flex_start_pool(tmp_path):
    project = fresh_project(tmp_path)
    config = write_chosen(project, "mega-flex", mega(regions=["us-east5"]))
    plan = config["accel:plan"]
    assert (plan["chosen"]["machine_type"], plan["capacity"]["provisioning"], plan["capacity"]["mode"]) == (
        "a3-megagpu-8g", "flex-start", "gcp-flex-start")
    assert plan["capacity"]["legs"] > 1 and "price_bound" not in plan["capacity"]
    document = plan_stack("mega-flex", None, project).to_json()
    pools = [p["inputs"] for p in of_type(document, "gcp:container/nodePool:NodePool") if "gpu" in p["name"]]
    assert pools and all(p["nodeConfig"]["flexStart"] is True for p in pools)
    assert all(p["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"} for p in pools)
    assert sum(p["autoscaling"]["totalMaxNodeCount"] for p in pools) >= plan["chosen"]["hosts"]
    assert not [v for v in document["policy"]["violations"] if v["level"] == "mandatory"]


@pytest.mark.parametrize("machine_type, node_config, pool, factor", [
    ("a3-megagpu-8g", {"flexStart": True}, {}, FACTORS["a3-megagpu-8g"]),
    ("a2-highgpu-8g", {"flexStart": True}, {"queuedProvisioning": {"enabled": True}}, FACTORS["a2-highgpu-8g"]),
    ("a3-megagpu-8g", {}, {}, 1.0),                                   # on demand
    ("a3-megagpu-8g", {"flexStart": True, "spot": True}, {}, None),   # spot: the spot price, not the factor
    ("a4-highgpu-8g", {"flexStart": True}, {}, 1.0),                  # no factor: on demand, an upper bound
])
def test_a_built_pool_is_priced_by_accel_plan_as_the_search_priced_it(catalog, machine_type, node_config, pool,
                                                                      factor):
    from accel.policies.cloud.pricing import GKE_NODE_POOL, price_resource

    offering = offering_of(catalog, machine_type)
    region = next(iter(offering.regions))
    inputs = {"location": region, "nodeCount": 4, "nodeConfig": {"machineType": machine_type, **node_config}, **pool}
    priced = price_resource(GKE_NODE_POOL, "gpu", inputs, catalog)
    chip, host = offering.prices(region, factor is None)
    per_node = offering.chips_per_host * chip.usd + (host.usd if host else 0.0)
    assert priced.hourly_usd == pytest.approx(4 * per_node * (factor or 1.0))
    assert priced.source.startswith(SHEET) == (factor not in (None, 1.0))

