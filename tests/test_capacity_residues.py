"""Capacity modes priced and sized as what the fleet is really bought through.

- A fleet bought through flex-start where no flex-start rate was found (A4, TPU7x) is priced at on-demand list and
  says it is an upper bound: in the option's price source, the rationale, the Plan's `capacity.price_bound` and
  `accel review`'s capacity line (policies/cloud/mode_prices.py, the one place it is said).
"""

from __future__ import annotations

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose, make_plan, plan_from_pin
from accel.policies.workload import workload_from_mapping

UPPER = "an upper bound of flex-start"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def training(name: str, *, tokens: str = "20B", deadline: int = 5, clouds=("gcp",), accelerators=("b200",),
             spot: str = "never", hardware: dict | None = None, framework: str = "pytorch"):
    data = {"name": name, "kind": "pretrain", "model": {"parameters": "8B", "sequence_length": 8192},
            "training": {"tokens": tokens, "framework": framework, "precision": "bf16"},
            "constraints": {"clouds": list(clouds), "accelerators": list(accelerators), "deadline_days": deadline,
                            "spot": spot},
            "owner": "capacity-tests", "cost_center": "cc-1"}
    if hardware is not None:
        data["hardware"] = hardware
    return workload_from_mapping(data, name)


# --------------------------------------------------------------------------- flex-start with no published rate

@pytest.mark.parametrize("pin", [
    {"accelerator": "b200", "chips": 16, "cloud": "gcp", "region": "us-central1", "machine_type": "a4-highgpu-8g"},
    {"accelerator": "tpu7x", "chips": 64, "cloud": "gcp"},
], ids=["A4", "TPU7x"])
def test_a_flex_start_fleet_with_no_rate_is_labelled_an_upper_bound_everywhere(catalog, pin):
    spec = training("bound", accelerators=[pin["accelerator"]], hardware=pin,
                    framework="jax" if pin["accelerator"] == "tpu7x" else "pytorch")
    plan = plan_from_pin(spec, catalog)
    assert plan.capacity.provisioning == "flex-start" and plan.capacity.mode == "gcp-flex-start"
    assert plan.capacity.price_bound == "upper"
    assert UPPER in plan.chosen.price_source
    assert any("UPPER BOUND" in line and "no flex-start rate" in line for line in plan.rationale)
    from accel.review.comparison import _capacity
    from accel.review.plan_json import PlanView

    assert _capacity(PlanView.model_validate(plan.model_dump(mode="json"))).endswith("price is an upper bound")


def test_a_searched_a4_flex_start_option_says_its_price_is_an_upper_bound(catalog):
    choice = choose(training("search", accelerators=["b200"]), catalog)
    a4 = [o for o in choice.options if o.machine_type == "a4-highgpu-8g" and o.provisioning == "flex-start"]
    assert a4 and all(UPPER in o.price_source for o in a4)


def test_a_flex_start_fleet_at_its_factor_is_not_an_upper_bound(catalog):
    pin = {"accelerator": "h200-141gb", "chips": 64, "cloud": "gcp", "region": "us-central1",
           "machine_type": "a3-ultragpu-8g"}
    plan = plan_from_pin(training("factor", deadline=30, accelerators=["h200-141gb"], hardware=pin), catalog)
    assert plan.capacity.provisioning == "flex-start" and plan.capacity.price_bound is None
    assert UPPER not in plan.chosen.price_source
    assert not any("UPPER BOUND" in line for line in plan.rationale)


# --------------------------------------------------------------------------- a pin names its capacity mode

def h100(name: str, hardware: dict | None = None, **kw):
    """The 70B PyTorch pretrain of the a3-mega stack's workload on GCP H100s: the search puts it on flex-start."""
    data = {"name": name, "kind": "pretrain", "model": {"parameters": "70B", "sequence_length": 8192},
            "training": {"tokens": "200B", "framework": "pytorch", "precision": "bf16"},
            "constraints": {"clouds": ["gcp"], "accelerators": ["h100-80gb"], "deadline_days": 30, "spot": "never",
                            **kw},
            "owner": "capacity-tests", "cost_center": "cc-1"}
    if hardware is not None:
        data["hardware"] = hardware
    return workload_from_mapping(data, name)


def test_a_pin_puts_an_a3_high_fleet_on_flex_start_as_the_search_prices_and_times_it(catalog):
    searched = choose(h100("searched"), catalog).chosen
    assert (searched.machine_type, searched.provisioning) == ("a3-highgpu-8g", "flex-start")
    pin = {"accelerator": "h100-80gb", "chips": searched.chips, "cloud": "gcp", "region": searched.region,
           "machine_type": "a3-highgpu-8g", "provisioning": "flex-start"}
    plan = plan_from_pin(h100("pinned", pin), catalog)
    pinned = plan.chosen
    assert (pinned.provisioning, pinned.hosts) == ("flex-start", searched.hosts)
    assert pinned.hourly_usd == pytest.approx(searched.hourly_usd, rel=1e-9)
    assert pinned.hours == pytest.approx(searched.hours, rel=1e-9)
    assert pinned.price_source == searched.price_source
    assert plan.capacity.mode == "gcp-flex-start" and plan.capacity.legs == 2 and plan.capacity.price_bound is None
    # Unset, the same pin is bought on demand, the offering's own.
    del pin["provisioning"]
    assert plan_from_pin(h100("on-demand", pin), catalog).chosen.provisioning == "on-demand"


@pytest.mark.parametrize("pin, words", [
    ({"accelerator": "h200-141gb", "chips": 64, "cloud": "gcp", "machine_type": "a3-ultragpu-8g",
      "provisioning": "on-demand"}, "is not sold through on-demand: not sold on demand (gcp-consumption-options)"),
    ({"accelerator": "h100-80gb", "chips": 64, "cloud": "aws", "provisioning": "flex-start"},
     "is not sold through flex-start: flex-start is Google Cloud's Dynamic Workload Scheduler mode"),
], ids=["A3 Ultra on demand", "AWS on flex-start"])
def test_a_pin_naming_a_mode_its_machine_is_not_sold_through_is_refused_naming_the_field(catalog, pin, words):
    from accel.policies.workload import WorkloadFieldError

    spec = training("refused", deadline=30, clouds=[pin["cloud"]], accelerators=[pin["accelerator"]], hardware=pin)
    with pytest.raises(WorkloadFieldError) as raised:
        choose(spec, catalog)
    assert raised.value.field == "hardware.provisioning"
    assert words in raised.value.problem and "may name provisioning" in raised.value.problem


@pytest.mark.parametrize("hardware, constraint, where", [
    ({"spot": True, "provisioning": "flex-start"}, "never", "hardware.provisioning"),
    ({"provisioning": "flex-start"}, "required", "hardware.provisioning"),
    ({"provisioning": "spot"}, "never", "hardware.provisioning"),
], ids=["spot and flex-start", "flex-start under spot required", "spot under spot never"])
def test_a_pinned_mode_that_contradicts_spot_is_an_error_naming_the_field(hardware, constraint, where):
    from accel.base.errors import UsageError

    pin = {"accelerator": "h100-80gb", "chips": 8, **hardware}
    with pytest.raises(UsageError) as raised:
        training("contradiction", accelerators=["h100-80gb"], spot=constraint, hardware=pin)
    assert f"{where}: " in str(raised.value) and "contradicts" in str(raised.value)


# --------------------------------------------------------------------------- a searched plan on a held reservation

def an_8b_run(name: str, tokens: str, cloud: str, accelerator: str, region: str, deadline_days: int,
              hardware: dict | None = None):
    """An 8B PyTorch pretrain of `tokens` on one accelerator in one region, on demand (a pin where `hardware`)."""
    data = {"name": name, "kind": "pretrain", "model": {"parameters": "8B", "sequence_length": 8192},
            "training": {"tokens": tokens, "framework": "pytorch", "precision": "bf16"},
            "constraints": {"clouds": [cloud], "accelerators": [accelerator], "deadline_days": deadline_days,
                            "spot": "never", "regions": [region]},
            "owner": "capacity-tests", "cost_center": "cc-1"}
    if hardware is not None:
        data["hardware"] = hardware
    return workload_from_mapping(data, name)


def h200_in_us_central1(hardware: dict | None = None):
    return an_8b_run("held", "300B", "gcp", "h200-141gb", "us-central1", 60, hardware)


def test_a_searched_plan_on_a_declared_reservation_is_sized_on_it_as_a_pin_is(catalog):
    """Four A3 Ultra held in us-central1: a 29-day run there is the reservation's, with no flex-start legs or
    re-queued start-ups (use_reservation would put a flex-start plan on it anyway), and the search and the pin give
    the same hours and price."""
    from accel.policies.cloud.reservations import DeclaredReservation, use_reservation

    reservation = DeclaredReservation(name="a3u", machineType="a3-ultragpu-8g", count=4, zone="us-central1-b")
    unreserved = choose(h200_in_us_central1(), catalog).chosen
    assert (unreserved.provisioning, unreserved.hosts) == ("flex-start", 4)   # 5 legs without the reservation
    searched = use_reservation(make_plan(h200_in_us_central1(), choose(h200_in_us_central1(), catalog,
                                                                       reservations=[reservation]), catalog),
                               [reservation])
    pin = {"accelerator": "h200-141gb", "chips": 32, "cloud": "gcp", "region": "us-central1",
           "machine_type": "a3-ultragpu-8g"}
    pinned = use_reservation(plan_from_pin(h200_in_us_central1(pin), catalog, reservations=[reservation]),
                             [reservation])
    for plan in (searched, pinned):
        assert (plan.capacity.provisioning, plan.capacity.reservation, plan.capacity.mode) == (
            "reservation", "a3u", "gcp-reservation")
        assert plan.capacity.legs is None and "capacity_legs" not in plan.estimate.details
    assert searched.chosen.hours == pytest.approx(pinned.chosen.hours, rel=1e-9)
    assert searched.chosen.hours < unreserved.hours   # four fewer start-ups
    assert searched.chosen.hourly_usd == pytest.approx(pinned.chosen.hourly_usd, rel=1e-9)


# --------------------------------------------------------------------------- a declared Capacity Block

BLOCK = dict(name="cr-0123456789abcdef0", kind="capacity-block", machineType="p5.48xlarge", count=4,
             zone="us-east-1a", start="2030-01-06T11:30:00Z", end="2030-01-08T11:30:00Z")   # 48 h, 47 h usable
P5_BLOCK_RATE = 41.528   # capacity_modes.yaml aws-capacity-block, p5.48xlarge us-east-1 (aws-cb-price-scrape)


def h100_on_aws(hardware: dict | None = None):
    return an_8b_run("block", "20B", "aws", "h100-80gb", "us-east-1", 10, hardware)


P5_PIN = {"accelerator": "h100-80gb", "chips": 32, "cloud": "aws", "region": "us-east-1",
          "machine_type": "p5.48xlarge"}


def test_an_on_demand_plan_put_on_a_declared_capacity_block_is_billed_at_the_blocks_rate_for_its_window(catalog):
    from accel.policies.cloud.reservations import DeclaredReservation, reservation_problems, use_reservation

    block = DeclaredReservation(**BLOCK)
    on_demand = plan_from_pin(h100_on_aws(P5_PIN), catalog)
    assert on_demand.chosen.provisioning == "on-demand" and on_demand.chosen.hosts == 4
    run = on_demand.chosen.hours
    assert run < block.window.usable_hours
    moved = use_reservation(on_demand, [block])
    assert moved.capacity.provisioning == "capacity-block" and moved.capacity.reservation == block.name
    # The block's rate, not the $55.04 on-demand one, for the whole 48-hour window it is paid for, used or not.
    assert moved.chosen.hourly_usd == pytest.approx(4 * P5_BLOCK_RATE)
    assert moved.chosen.hours == 48 and moved.chosen.total_usd == pytest.approx(48 * 4 * P5_BLOCK_RATE, abs=0.01)
    assert moved.estimate.details["capacity_wall_hours"] == pytest.approx(run, abs=0.01)
    assert reservation_problems(moved, [block]) == []
    assert "Capacity Block rate $41.528/h per instance" in moved.rationale[-1]
    # The search sizes the declared block the same way and picks it (cheaper than any on-demand fleet).
    searched = choose(h100_on_aws(), catalog, reservations=[block]).chosen
    assert (searched.provisioning, searched.hosts, searched.hours) == ("capacity-block", 4, 48)
    assert searched.total_usd == pytest.approx(moved.chosen.total_usd, abs=0.01)
    # And the pin, timed on the block it lands on.
    pinned = use_reservation(plan_from_pin(h100_on_aws(P5_PIN), catalog, reservations=[block]), [block])
    assert (pinned.chosen.hours, pinned.chosen.total_usd) == (moved.chosen.hours, moved.chosen.total_usd)


def test_a_run_longer_than_its_declared_capacity_block_is_refused_and_not_searched_onto_it(catalog):
    from accel.policies.cloud.reservations import DeclaredReservation, reservation_problems, use_reservation

    short = DeclaredReservation(**{**BLOCK, "end": "2030-01-07T11:30:00Z"})   # 24 h, 23 h usable
    moved = use_reservation(plan_from_pin(h100_on_aws(P5_PIN), catalog), [short])
    problems = reservation_problems(moved, [short])
    assert len(problems) == 1 and "but capacity block 'cr-0123456789abcdef0' has 23.0 h" in problems[0]
    searched = choose(h100_on_aws(), catalog, reservations=[short]).chosen
    assert searched.provisioning == "on-demand"
