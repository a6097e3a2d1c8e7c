"""Every serving plan says what a million generated tokens cost, at the workload's target rate and flat out.

One rule prices them (policies/plan.py serving_token_prices): a searched fleet and a pinned one,
GPU or TPU, carry `usd_per_million_tokens` (every replica the fleet runs busy) and
`usd_per_million_tokens_at_target` (at inference.tokens_per_second) on their options and in the estimate's
details, so `accel choose`, `accel plan` and `accel review` can show it, and a review compares it before and after.
Training plans carry neither.
"""

from __future__ import annotations

import functools
import json

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import NoFeasibleOption, choose
from accel.policies.selection.pin import plan_from_pin
from accel.policies.plan import serving_token_prices, usd_per_million_tokens
from accel.policies.workload import workload_from_mapping
from accel.review import load_review, review_files

SERVING = {"name": "llama-8b-serving", "kind": "inference", "model": {"parameters": "8B"},
           "inference": {"tokens_per_second": 4000, "p99_latency_ms": 80, "framework": "pytorch"},
           "constraints": {"clouds": ["aws"], "spot": "never", "accelerators": ["l40s"]}}
TPU_SERVING = {"name": "llama-8b-tpu", "kind": "inference", "model": {"parameters": "8B"},
               "inference": {"tokens_per_second": 4000, "p99_latency_ms": 80, "framework": "jax"},
               "constraints": {"clouds": ["gcp"], "spot": "never", "accelerators": ["tpu-v6e"]}}
PRICES = ("usd_per_million_tokens", "usd_per_million_tokens_at_target")


def workload(data: dict, hardware: dict | None = None):
    return workload_from_mapping({**data, **({"hardware": hardware} if hardware else {})}, f"{data['name']}.yaml")


@functools.cache
def searched(name: str):
    return choose(workload({"serving": SERVING, "tpu": TPU_SERVING}[name]), load_catalog(), "cost")


def pin_of(option, nodes: int | None = None) -> dict:
    """The hardware pin of `option`'s fleet (`nodes` of its machine instead, for a GPU)."""
    if option.topology is not None:
        return {"accelerator": option.accelerator, "chips": option.chips, "topology": option.topology,
                "slices": option.slices, "cloud": option.cloud, "region": option.region, "spot": option.spot}
    hosts = nodes or option.hosts
    return {"accelerator": option.accelerator, "chips": hosts * option.chips_per_host,
            "machine_type": option.machine_type, "cloud": option.cloud, "region": option.region, "spot": option.spot}


def test_the_price_per_token_is_the_fleet_price_over_the_tokens_it_serves():
    prices = serving_token_prices(36.0, served=10_000.0, target=5_000.0)
    assert prices["usd_per_million_tokens"] == pytest.approx(1.0)          # $36/h over 36M tokens an hour
    assert prices["usd_per_million_tokens_at_target"] == pytest.approx(2.0)
    # A fleet that cannot reach the target is never priced busier than flat out.
    short = serving_token_prices(36.0, served=2_500.0, target=5_000.0)
    assert short["usd_per_million_tokens_at_target"] == short["usd_per_million_tokens"] == pytest.approx(4.0)


@pytest.mark.parametrize("name", ["serving", "tpu"])
def test_a_pinned_fleet_is_priced_per_token_as_the_search_prices_the_same_fleet(name):
    choice = searched(name)
    chosen = choice.chosen
    pinned = plan_from_pin(workload({"serving": SERVING, "tpu": TPU_SERVING}[name], pin_of(chosen)), load_catalog())
    assert (pinned.chosen.hosts, pinned.chosen.hourly_usd) == (chosen.hosts, chosen.hourly_usd)
    for field in PRICES:
        assert getattr(chosen, field) is not None and getattr(chosen, field) > 0
        assert getattr(pinned.chosen, field) == pytest.approx(getattr(chosen, field), rel=1e-3), field
        # the estimate's details carry the same figures the option does (one computation)
        assert choice.estimate.details[field] == getattr(chosen, field)
        assert pinned.estimate.details[field] == getattr(pinned.chosen, field)
    flat_out = chosen.hourly_usd / (chosen.usd_per_million_tokens / 1e6) / 3600   # tok/s implied by the price
    details = choice.estimate.details
    assert flat_out == pytest.approx(details["replicas"] * details["tokens_per_second_per_replica"], rel=1e-3)
    assert chosen.usd_per_million_tokens_at_target == pytest.approx(usd_per_million_tokens(chosen.hourly_usd, 4000),
                                                                    rel=1e-3)


def test_every_serving_option_carries_its_price_per_token_and_no_training_option_does():
    choice = searched("serving")
    dumped = choice.to_json()
    assert all(set(PRICES) <= option.keys() for option in dumped["options"])
    # each option priced at its own fleet's price: the cheapest per hour of equal fleets is the cheapest per token
    for option in choice.options:
        assert option.usd_per_million_tokens_at_target == pytest.approx(
            usd_per_million_tokens(option.hourly_usd, 4000), rel=2e-3)
    training = choose(workload({"name": "t", "kind": "finetune", "model": {"parameters": "8B"},
                                "training": {"tokens": "1B"}, "constraints": {"clouds": ["aws"]}}),
                      load_catalog(), "cost").to_json()
    assert not any(set(PRICES) & option.keys() for option in [training["chosen"], *training["options"]])
    assert not set(PRICES) & training["estimate"]["details"].keys()


def test_a_fleet_of_twice_the_nodes_doubles_the_price_at_the_target_and_not_flat_out():
    chosen = searched("serving").chosen
    spec = SERVING
    one = plan_from_pin(workload(spec, pin_of(chosen)), load_catalog()).chosen
    two = plan_from_pin(workload(spec, pin_of(chosen, nodes=2 * chosen.hosts)), load_catalog()).chosen
    assert two.hosts == 2 * one.hosts
    assert two.usd_per_million_tokens_at_target == pytest.approx(2 * one.usd_per_million_tokens_at_target, rel=1e-3)
    # twice the price for twice the replicas: a token flat out costs what it did
    assert two.usd_per_million_tokens == pytest.approx(one.usd_per_million_tokens, rel=1e-3)


def plan_document(plan) -> dict:
    """`accel plan --json`'s document around a Plan, as a review reads it."""
    return {"stack": "llama-8b-serving", "resources": [], "plan": plan.model_dump(mode="json")}


def test_review_shows_the_price_per_token_before_and_after_a_change_of_fleet(tmp_path):
    chosen = searched("serving").chosen
    base = plan_from_pin(workload(SERVING, pin_of(chosen)), load_catalog())
    head = plan_from_pin(workload(SERVING, pin_of(chosen, nodes=2 * chosen.hosts)), load_catalog())
    (tmp_path / "base.json").write_text(json.dumps(plan_document(base)))
    (tmp_path / "head.json").write_text(json.dumps(plan_document(head)))
    review = load_review(tmp_path / "head.json", tmp_path / "head.json", tmp_path / "base.json")
    rows = {row.label: row for row in review.cost.rows}
    at_target = rows["Per million tokens (at the target rate)"]
    assert (at_target.before, at_target.after) == (base.chosen.usd_per_million_tokens_at_target,
                                                   head.chosen.usd_per_million_tokens_at_target)
    assert at_target.percent == pytest.approx(100.0, abs=0.5)
    comment = review_files(tmp_path / "head.json", tmp_path / "head.json", tmp_path / "base.json")
    line = next(line for line in comment.splitlines() if line.startswith("| Per million tokens (at the target rate)"))
    cells = [cell.strip() for cell in line.strip("|").split("|")]
    money = lambda value: f"\\${value:,.2f}"   # noqa: E731  (markdown escapes the dollar sign)
    assert cells[1:3] == [money(base.chosen.usd_per_million_tokens_at_target),
                          money(head.chosen.usd_per_million_tokens_at_target)]
    assert cells[4].startswith("+") and cells[4].endswith("%")
    # the at-a-glance line keeps to $/h and $/run: a price per token is not a per-run figure
    assert "Per million tokens (flat out)" in comment


def test_review_of_a_training_plan_has_no_price_per_token_row(tmp_path):
    spec = workload({"name": "t", "kind": "finetune", "model": {"parameters": "8B"}, "training": {"tokens": "1B"},
                     "constraints": {"clouds": ["aws"]}},
                    {"accelerator": "h100-80gb", "chips": 8, "cloud": "aws", "region": "us-east-1"})
    document = plan_document(plan_from_pin(spec, load_catalog()))
    (tmp_path / "plan.json").write_text(json.dumps(document))
    review = load_review(tmp_path / "plan.json", tmp_path / "plan.json", tmp_path / "plan.json")
    assert not any(row.label.startswith("Per million tokens") for row in review.cost.rows)


def test_choose_shows_each_serving_option_s_price_per_token_and_plan_its_summary_line():
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from accel.commands.choose import render
    from accel.commands.plan import render_decision
    from accel.policies.selection.plan_builder import make_plan

    choice = searched("serving")
    plan = make_plan(choice.workload, choice, load_catalog())
    buffer = io.StringIO()
    render(choice, plan, Console(file=buffer, width=250, color_system=None))
    table = buffer.getvalue()
    assert "$/M tok" in table and "total: over 730 h" in table
    chosen_row = next(line for line in table.splitlines() if "1 *" in line)
    assert f"${choice.chosen.usd_per_million_tokens_at_target:,.2f}" in chosen_row

    buffer = io.StringIO()
    render_decision(SimpleNamespace(plan=plan.model_dump(mode="json") | {"workload": {"kind": "inference"}},
                                    hourly_usd=plan.chosen.hourly_usd, run_usd=plan.chosen.total_usd),
                    Console(file=buffer, width=200, color_system=None))
    summary = buffer.getvalue()
    assert (f"per million tokens: ${plan.chosen.usd_per_million_tokens_at_target:,.2f} at the target rate, "
            f"${plan.chosen.usd_per_million_tokens:,.2f} flat out") in summary


def test_a_pin_too_small_to_hold_one_replica_is_refused_not_priced_at_zero_tokens():
    """A 278B model at a 117k context pinned to one H100 (a3-highgpu-8g: 8) holds no replica: an 8-GPU replica has
    no room for one sequence's KV cache and every larger one exceeds the pin. It used to be kept as a fleet of 0
    replicas serving 0 tok/s, whose price per token divided by zero (found by test_choose's hypothesis search); it
    is refused, saying both."""
    spec = workload({"name": "tiny-pin", "kind": "inference",
                     "model": {"parameters": 277805953126.0, "sequence_length": 117166},
                     "inference": {"hours": 3.0, "p99_latency_ms": 54.0, "tokens_per_second": 4.0},
                     "constraints": {"clouds": ["gcp"]}}, {"accelerator": "h100-80gb", "chips": 1})
    with pytest.raises(NoFeasibleOption) as refused:
        plan_from_pin(spec, load_catalog())
    assert "8-chip replica: no room for a single sequence's KV cache" in str(refused.value)
    assert "a replica of 16 chips or more is larger than the pinned 8 chips" in str(refused.value)
