"""A serving fleet on a reservation declared already paid for (`marginal: zero`) states no price per million tokens.

Its $/h is $0 (the machines cost nothing more to use), and a token priced off that would read "$0.00 per million
tokens", as though the service were free. Instead the fleet carries `usd_per_million_tokens_unpriced`, the reason,
and neither price: `accel choose` shows "held (prepaid)" in its $/M tok column, `accel plan` and its --json say why,
and `accel review` says it under Cost. A reservation that declares its committed rate prices tokens at that rate,
the same in `accel choose` and `accel plan` (a pin used to keep the catalog's token price on a committed $/h).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from accel.policies.catalog import load_catalog
from accel.policies.cloud.reservations import DeclaredReservation, use_reservation
from accel.policies.plan import PREPAID_CELL, TOKENS_UNPRICED, usd_per_million_tokens
from accel.policies.selection.choose import choose
from accel.policies.selection.pin import plan_from_pin
from accel.policies.workload import workload_from_mapping
from accel.review import load_review, review_files

PRICES = ("usd_per_million_tokens", "usd_per_million_tokens_at_target")
SERVING = {"name": "llama-405b-serving-a4x", "kind": "inference", "model": {"parameters": "405B",
                                                                            "sequence_length": 8192},
           "inference": {"tokens_per_second": 15000, "p99_latency_ms": 60, "framework": "pytorch"},
           "constraints": {"clouds": ["gcp"], "spot": "never", "accelerators": ["gb200"]}}
PIN = {"accelerator": "gb200", "chips": 72, "cloud": "gcp", "machine_type": "a4x-highgpu-4g", "spot": False}
RESERVATION = {"name": "a4x-nvl72-reservation", "machineType": "a4x-highgpu-4g", "count": 18, "zone": "us-central1-b"}
PREPAID = {**RESERVATION, "marginal": "zero"}
COMMITTED = {**RESERVATION, "committedUsdPerMachineHour": 40.0}


def workload(pinned: bool):
    return workload_from_mapping({**SERVING, **({"hardware": PIN} if pinned else {})}, "serving.yaml")


def held(declared: dict) -> list[DeclaredReservation]:
    return [DeclaredReservation.model_validate(declared)]


def pinned_plan(declared: dict):
    """`accel plan`'s plan of the pinned stack with `declared` as its accel:reservations."""
    reservations = held(declared)
    return use_reservation(plan_from_pin(workload(True), load_catalog(), reservations=reservations), reservations)


def test_a_searched_fleet_on_a_prepaid_reservation_states_why_and_no_price_per_token():
    choice = choose(workload(False), load_catalog(), "cost", reservations=held(PREPAID))
    chosen = choice.chosen
    assert chosen.provisioning == "reservation" and chosen.hourly_usd == 0.0
    assert chosen.usd_per_million_tokens is None and chosen.usd_per_million_tokens_at_target is None
    assert chosen.usd_per_million_tokens_unpriced.startswith(PREPAID_CELL)
    assert "a4x-nvl72-reservation" in chosen.usd_per_million_tokens_unpriced
    dumped = choice.to_json()
    assert not set(PRICES) & dumped["chosen"].keys()
    assert not set(PRICES) & dumped["estimate"]["details"].keys()
    assert dumped["estimate"]["details"][TOKENS_UNPRICED] == chosen.usd_per_million_tokens_unpriced


def test_a_pin_put_on_a_prepaid_reservation_drops_the_catalog_token_price_it_was_sized_at():
    plan = pinned_plan(PREPAID)
    assert plan.chosen.hourly_usd == 0.0
    for field in PRICES:
        assert getattr(plan.chosen, field) is None and field not in plan.estimate.details
    assert plan.chosen.usd_per_million_tokens_unpriced == plan.estimate.details[TOKENS_UNPRICED]
    # nor does the pin's own line keep the catalog's $/h it was sized at
    pinned = next(line for line in plan.rationale if line.startswith("Pinned: "))
    assert "Serves at $0.00/h, $0.00 in total, as the reservation bills it." in pinned
    dumped = plan.model_dump(mode="json")
    assert dumped["chosen"][TOKENS_UNPRICED].startswith(PREPAID_CELL)
    assert not set(PRICES) & dumped["chosen"].keys()


def test_a_committed_rate_prices_the_tokens_of_a_pin_and_of_a_search_alike():
    plan = pinned_plan(COMMITTED)
    assert "Serves at $720/h, $525.6k in total, as the reservation bills it." in plan.rationale[0]
    served = float(plan.estimate.details["tokens_per_second"])
    assert plan.chosen.hourly_usd == pytest.approx(18 * 40.0)
    assert plan.chosen.usd_per_million_tokens == usd_per_million_tokens(18 * 40.0, served)
    assert plan.chosen.usd_per_million_tokens_at_target == usd_per_million_tokens(18 * 40.0, 15000)
    assert plan.chosen.usd_per_million_tokens_unpriced is None
    for field in PRICES:
        assert plan.estimate.details[field] == getattr(plan.chosen, field)
    searched = choose(workload(False), load_catalog(), "cost", reservations=held(COMMITTED)).chosen
    assert searched.hourly_usd == pytest.approx(plan.chosen.hourly_usd)
    assert searched.usd_per_million_tokens_at_target == pytest.approx(plan.chosen.usd_per_million_tokens_at_target,
                                                                      rel=1e-3)


def test_a_reservation_billed_at_the_catalog_price_leaves_the_pins_token_prices_as_they_were():
    reservations = held(RESERVATION)
    before = plan_from_pin(workload(True), load_catalog(), reservations=reservations)
    after = use_reservation(before, reservations)
    for field in PRICES:
        assert getattr(after.chosen, field) == getattr(before.chosen, field) is not None


def test_a_prepaid_fleet_past_the_reservation_says_its_overflow_is_billed():
    words = held(PREPAID)[0].prepaid_words(20)
    assert words is not None and "2 machines beyond its 18 are billed on demand" in words
    assert held(COMMITTED)[0].prepaid_words(20) is None and held(RESERVATION)[0].prepaid_words(18) is None


def choose_output(tmp_path: Path, declared: dict, *args: str) -> str:
    from accel.commands import choose as choose_command

    path, reservations = tmp_path / "workload.yaml", tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump({**SERVING, "hardware": PIN}))
    reservations.write_text(yaml.safe_dump([declared]))
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    result = CliRunner().invoke(app, ["choose", str(path), "--reservations", str(reservations), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_choose_shows_a_pin_on_a_prepaid_reservation_as_held_never_as_zero_dollars_a_token(tmp_path):
    table = choose_output(tmp_path, PREPAID)
    row = next(line for line in table.splitlines() if line.startswith("│ 1 *"))
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[6] == "$0.00" and cells[7] == PREPAID_CELL   # $/h as the reservation bills it, and $/M tok
    assert "usd_per_million_tokens_unpriced" in table          # the caption says where the reason is
    # --json states the pin as `accel plan` prices it: on the reservation, no token price, the reason
    output = choose_output(tmp_path, PREPAID, "--json")
    dumped = json.loads(output[output.index("{"):])
    plan = pinned_plan(PREPAID).model_dump(mode="json")
    assert dumped["chosen"] == plan["chosen"]


def test_review_says_why_a_prepaid_fleet_has_no_price_per_token(tmp_path):
    document = {"stack": "serving", "resources": [], "plan": pinned_plan(PREPAID).model_dump(mode="json")}
    (tmp_path / "head.json").write_text(json.dumps(document))
    review = load_review(tmp_path / "head.json", tmp_path / "head.json", None)
    labels = {row.label for row in review.cost.rows}
    assert not any(label.startswith("Per million tokens") for label in labels)
    assert review.cost.note is not None and review.cost.note.startswith(f"Per million tokens: {PREPAID_CELL}")
    comment = review_files(tmp_path / "head.json", tmp_path / "head.json", None)
    assert f"Per million tokens: {PREPAID_CELL}" in comment
    assert not [line for line in comment.splitlines() if "million tokens" in line and "0.00" in line]


def test_a_near_miss_on_a_prepaid_reservation_reads_held_not_a_price_per_token():
    from types import SimpleNamespace

    from accel.commands.choose import closest_words

    closest = SimpleNamespace(hourly_usd=0.0, total_usd=0.0, hours=730.0, chips=72, hosts=18, slices=1, topology=None,
                              machine_type="a4x-highgpu-4g", cloud="gcp", region="us-central1",
                              provisioning="reservation", usd_per_million_tokens_at_target=None,
                              usd_per_million_tokens_unpriced=held(PREPAID)[0].prepaid_words(18))
    chosen = SimpleNamespace(total_usd=1000.0)
    words = closest_words(closest, chosen, inference=True)
    assert f"$0.00/h, {PREPAID_CELL};" in words and "per million tokens" not in words
