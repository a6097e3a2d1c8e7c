"""An option the ranking puts after the chosen one whatever its figures says why: priced by estimate (no price list
carries its offering), or an on-demand fleet past what one zone is expected to supply (docs/capacity.md). The
OPTION's `ranked_after` (docs/contracts.md, section 2.1), the table's "ranks after" and the rationale's line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accel.base.units import hours_text as duration, money
from accel.policies.catalog import load_catalog
from accel.policies.plan import Option, Plan
from accel.policies.selection.capacity import beyond_supply, obtaining
from accel.policies.selection.choose import choose, make_plan
from accel.policies.selection.tradeoffs import tradeoffs
from accel.policies.workload import load_workload, workload_from_mapping

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SUPPLY, ESTIMATE = "past a zone's expected supply", "priced by estimate"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def aws_finetune_by_time(catalog):
    return choose(load_workload(EXAMPLES / "llama-70b-finetune-aws.yaml"), catalog, "time")


def test_the_aws_finetune_by_time_names_the_faster_b200_fleet_ranked_after_for_supply(aws_finetune_by_time):
    choice = aws_finetune_by_time
    # 117 whole 4-node replicas (TP8 x PP4: the job's distributed optimizer; 472 in 59 8-node replicas before)
    assert (choice.chosen.machine_type, choice.chosen.hosts) == ("g6e.48xlarge", 468)
    # The fastest of the options ranked after, and faster than the pick (its figures move with the estimator's).
    fastest = min((o for o in choice.options if o.ranked_after), key=lambda o: o.hours)
    assert (fastest.hosts, fastest.machine_type, fastest.region) == (463, "p6-b200.48xlarge", "us-east-1")
    assert fastest.hours < choice.chosen.hours / 4
    lines = [line for line in choice.rationale if line.startswith("Capacity: a faster fleet, ")]
    assert lines == [
        f"Capacity: a faster fleet, B200 on-demand, 463 x p6-b200.48xlarge (3,704 GPUs), aws us-east-1: "
        f"{duration(fastest.hours)}, {money(fastest.total_usd)}, ranks after: past a zone's expected supply: 463 "
        "on-demand hosts against the 64 hosts one zone is expected to supply (estimate); only a negotiated "
        "reservation with the cloud's account team would supply them; the on-demand price is an upper bound."]


def test_the_aws_finetune_by_time_json_says_why_the_b200_fleet_ranks_after(aws_finetune_by_time):
    document = json.loads(json.dumps(aws_finetune_by_time.to_json()))
    b200 = [o for o in document["options"] if o["machine_type"] == "p6-b200.48xlarge" and o["hosts"] == 463]
    assert len(b200) == 3   # us-east-1, us-east-2, us-west-2
    for option in b200:
        assert option["ranked_after"].startswith("past a zone's expected supply: 463 on-demand hosts against the 64 "
                                                 "hosts one zone is expected to supply (estimate)")
        assert list(option)[-1] == "ranked_after"   # an extension after every key the contract had


def test_an_option_without_the_condition_has_no_ranked_after_key(aws_finetune_by_time):
    document = aws_finetune_by_time.to_json()
    assert "ranked_after" not in document["chosen"]
    plain = [o for o in document["options"] if "ranked_after" not in o]
    assert plain and plain[0] == document["chosen"]
    # the keys, in order, an OPTION had before the field existed: its JSON is byte for byte what it was
    assert [list(o) for o in plain] == [[
        "cloud", "region", "accelerator", "family", "chips", "hosts", "slices", "topology", "machine_type", "spot",
        "hourly_usd", "hours", "total_usd", "mfu", "offering", "zone", "chips_per_host", "provisioning", "goodput",
        "price_estimate", "price_source"]] * len(plain)


def test_an_option_ranked_after_round_trips_through_validation(aws_finetune_by_time):
    option = next(o for o in aws_finetune_by_time.options if o.ranked_after)
    again = Option.model_validate(option.model_dump(mode="json"))
    assert again.ranked_after == option.ranked_after and again == option


def test_the_chosen_option_of_a_plan_is_dumped_without_the_field(aws_finetune_by_time, catalog):
    plan = make_plan(aws_finetune_by_time.workload, aws_finetune_by_time, catalog)
    dumped = plan.model_dump(mode="json")
    assert "ranked_after" not in dumped["chosen"]
    assert Plan.model_validate(dumped) == plan


def test_the_table_says_ranks_after_with_the_short_reason(aws_finetune_by_time):
    chosen = aws_finetune_by_time.chosen
    option = next(o for o in aws_finetune_by_time.options if o.ranked_after)
    words = tradeoffs(option, chosen, serving=False)
    assert words[-1] == f"ranks after: {SUPPLY}"
    plain = next(o for o in aws_finetune_by_time.options[1:] if not o.ranked_after)
    assert not any(w.startswith("ranks after") for w in tradeoffs(plain, chosen, serving=False))
    both = option.model_copy(update={"ranked_after": f"{ESTIMATE} and {SUPPLY}: no price list ...; 9 hosts ..."})
    assert tradeoffs(both, chosen, serving=False)[-1] == f"ranks after: {ESTIMATE} and {SUPPLY}"


def test_the_aws_finetune_by_cost_has_no_ranked_after_line_when_nothing_cheaper_ranks_after(catalog):
    choice = choose(load_workload(EXAMPLES / "llama-70b-finetune-aws.yaml"), catalog, "cost")
    assert not any(o.ranked_after and o.total_usd < choice.chosen.total_usd for o in choice.options)
    assert not any(line.startswith("Capacity: a cheaper fleet") for line in choice.rationale)


def test_by_cost_a_cheaper_fleet_past_the_pool_you_set_is_named_with_what_would_supply_it(catalog):
    # A team that expects one TPU host per zone on demand (your figure): the cheaper v6e slices rank after.
    spec = workload_from_mapping({
        "name": "t", "kind": "pretrain", "model": {"parameters": "8B"},
        "training": {"tokens": "100B", "framework": "jax"},
        "constraints": {"clouds": ["gcp"], "spot": "never", "capacity": {"obtainability": {
            "tpu": {"on-demand": {"pool_hosts": 1}}, "frontier-gpu": {"on-demand": {"pool_hosts": 1}}}}}}, "t.yaml")
    choice = choose(spec, catalog, "cost")
    cheaper = [o for o in choice.options if o.ranked_after and o.total_usd < choice.chosen.total_usd]
    assert cheaper
    cheapest = min(cheaper, key=lambda o: o.total_usd)
    lines = [line for line in choice.rationale if line.startswith("Capacity: a cheaper fleet, ")]
    assert len(lines) == 1
    assert (f"{cheapest.hosts} on-demand hosts against the 1 host one zone is expected to supply (your figure)"
            in lines[0])
    assert "a calendar-mode reservation could supply them" in lines[0]
    assert lines[0].endswith(f"ranks after: {cheapest.ranked_after}.")


@pytest.mark.parametrize("objective", ["cost", "time"])
@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_ranked_after_is_set_exactly_for_the_options_the_rank_key_puts_after(catalog, example, objective):
    """Worked out again from the catalog and the capacity model, not from the search: an offering no price list
    carries, and an on-demand fleet past the pool one zone is expected to supply, each put an option after the
    chosen one when the chosen one is not so; those options come after every other, and say which."""
    spec = load_workload(EXAMPLES / example)
    choice = choose(spec, catalog, objective)
    if choice.pinned:
        assert all(o.ranked_after is None for o in choice.options)
        return
    ob = obtaining(spec)

    def pair(option: Option) -> tuple[bool, bool]:
        # (the examples declare no reservation: an option on a declared one is never put after for its price)
        return (catalog.offering(option.offering).unpriced,
                beyond_supply(ob, catalog.offering(option.offering), option.provisioning, option.hosts))

    first = pair(choice.chosen)
    seen_after = False
    for option in choice.options:
        heads = [head for head, flag, chosen_flag in zip((ESTIMATE, SUPPLY), pair(option), first)
                 if flag and not chosen_flag]
        assert (option.ranked_after is not None) == bool(heads), option
        if heads:
            assert option.ranked_after.split(":", 1)[0] == " and ".join(heads)
            seen_after = True
        else:
            assert not seen_after, "an option ranked after comes after every option that is not"


def _fleet(machine_type: str, hosts: int, hours: float, total_usd: float, provisioning: str = "on-demand",
           ranked_after: str | None = None) -> Option:
    return Option(cloud="aws", region="us-east-1", accelerator="b200", family="gpu", chips=8 * hosts, hosts=hosts,
                  machine_type=machine_type, hourly_usd=total_usd / hours, hours=hours, total_usd=total_usd, mfu=0.4,
                  offering=f"aws-{machine_type}", chips_per_host=8, provisioning=provisioning,
                  ranked_after=ranked_after)


def _candidate(booked: bool):
    from types import SimpleNamespace

    return SimpleNamespace(booking=object() if booked else None, reserved=None)


@pytest.mark.parametrize("objective", ["cost", "time"])
def test_the_fleet_a_booked_choice_was_weighed_against_is_named_again_only_by_time(objective):
    """capacity.booked_why names the first fleet of another mode with its price and that it is past the pool; by
    cost a line naming the same fleet would repeat it, by time it adds the run time booked_why does not give."""
    from accel.policies.selection.ranked_after import ranked_after_lines

    why = f"{SUPPLY}: 100 on-demand hosts against the 64 hosts one zone is expected to supply (estimate); ..."
    chosen = _fleet("p6-b200.48xlarge", 64, 300.0, 1_000.0, provisioning="capacity-block")
    past = _fleet("p6-b200.48xlarge", 100, 150.0, 900.0, ranked_after=why)
    # the key's third element: total_usd by cost, hours by time; the fleet past the pool beats the chosen on both
    value = (lambda o: o.total_usd) if objective == "cost" else (lambda o: o.hours)
    assert value(past) < value(chosen)
    ranked = [((False, False, value(chosen)), _candidate(True), "us-east-1"),
              ((False, True, value(past)), _candidate(False), "us-east-1")]
    lines = ranked_after_lines(objective, "pretrain", ranked, [chosen, past])
    if objective == "cost":
        assert lines == []
    else:
        assert lines == [f"Capacity: a faster fleet, B200 on-demand, 100 x p6-b200.48xlarge (800 GPUs), aws us-east-1: "
                         f"{duration(150.0)}, {money(900.0)}, ranks after: {why}."]


def test_by_cost_a_cheaper_fleet_past_the_pool_other_than_the_one_weighed_is_named():
    from accel.policies.selection.ranked_after import ranked_after_lines

    why = f"{SUPPLY}: 100 on-demand hosts ...; ..."
    chosen = _fleet("p6-b200.48xlarge", 64, 300.0, 1_000.0, provisioning="capacity-block")
    spot = _fleet("p6-b200.48xlarge", 32, 600.0, 1_100.0, provisioning="spot")   # booked_why weighs this one
    past = _fleet("p6-b200.48xlarge", 100, 150.0, 900.0, ranked_after=why)
    dearer = _fleet("p6-b200.48xlarge", 200, 80.0, 1_200.0, ranked_after=why)
    ranked = [((False, False, 1_000.0), _candidate(True), "us-east-1"),
              ((False, False, 1_100.0), _candidate(False), "us-east-1"),
              ((False, True, 900.0), _candidate(False), "us-east-1"),
              ((False, True, 1_200.0), _candidate(False), "us-east-1")]
    lines = ranked_after_lines("cost", "pretrain", ranked, [chosen, spot, past, dearer])
    assert len(lines) == 1 and lines[0].startswith("Capacity: a cheaper fleet, B200 on-demand, 100 x p6-b200.48xlarge")
    # nothing cheaper ranks after: no line
    assert ranked_after_lines("cost", "pretrain", ranked[:2] + ranked[3:], [chosen, spot, dearer]) == []
