"""A pin says when the catalog's answer for its workload has changed; the shipped pins are the answer.

A pinned Plan keeps its hardware on purpose, and its rationale says why it won when it was chosen. If
`accel choose` of the same workload on the current catalog picks something else, `accel plan` says what
and at what cost against the pin (warnings and `fresh_choice` in --json): never a silent contradiction,
like the default stack's old "No GPU option is feasible" beside a `choose` that picked H100 spot.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.selection.pin_freshness import fresh_choice
from accel.policies.plan import Plan
from accel.stack.settings import settings_from_config

ROOT = Path(__file__).resolve().parent.parent
PINNED = sorted(p for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
                if "accel:plan" in (yaml.safe_load(p.read_text(encoding="utf-8"))["config"]))


def stack_config(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["config"]


def fresh(config: dict, source: str):
    settings = settings_from_config(config, source)
    catalog = load_catalog(None if settings.catalog is None else ROOT / settings.catalog)
    return fresh_choice(Plan.model_validate(config["accel:plan"]), catalog, settings.reservations)


def test_the_shipped_stacks_pin_something():
    assert {p.name for p in PINNED} >= {"Pulumi.llama-70b-tpu.yaml", "Pulumi.llama-70b-finetune-aws.yaml"}


@pytest.mark.parametrize("path", PINNED, ids=lambda p: p.name)
def test_every_shipped_pin_is_what_choose_answers_today_for_its_workload(path):
    """Else its rationale is stale: re-pin it (the header's command), or change its workload to say why not."""
    changed = fresh(stack_config(path), path.name)
    assert changed is None, changed.note


# The capacity model's generous override (docs/capacity.md): no waves, no drains, an unbounded spot pool. With the
# bundled estimates a 146-host spot fleet for four weeks is not offered, so the pinned TPU fleet is still the answer.
GENEROUS = {"obtainability": {"frontier-gpu": {"spot": {"pool_hosts": 1e9, "obtain_hosts_per_hour": 1e12,
                                                        "waves_per_week": 0, "drains_per_week": 0}}}}


def spot_allowed(config: dict) -> dict:
    """The default stack as it was shipped before: pinned to on-demand TPUs while its workload allowed spot, and
    (so that spot wins) with the generous obtainability override."""
    config = {**config}
    constraints = {**config["accel:workload"]["constraints"], "spot": "allowed", "capacity": GENEROUS}
    config["accel:workload"] = {**config["accel:workload"], "constraints": constraints}
    plan = {**config["accel:plan"]}
    plan["workload"] = {**plan["workload"], "constraints": {**plan["workload"]["constraints"], "spot": "allowed",
                                                            "capacity": GENEROUS}}
    config["accel:plan"] = plan
    return config


def test_the_default_stack_says_why_it_is_not_the_spot_answer():
    config = stack_config(ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml")
    assert config["accel:workload"]["constraints"]["spot"] == "never"
    assert any("spot: never" in line for line in config["accel:plan"]["rationale"])


def test_a_pin_the_catalog_no_longer_picks_is_reported_with_the_new_answer_and_the_cost_gap():
    config = spot_allowed(stack_config(ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml"))
    changed = fresh(config, "old default stack")
    assert changed is not None
    assert " spot, " in changed.hardware  # the spot market undercuts the TPU pin (which GPU depends on the day's prices)
    # The pin's cost is the estimate it was chosen with: the gap is worded by its sign.
    words = "cheaper" if changed.run_usd < changed.pinned_run_usd else "dearer"
    assert words in changed.note and "TPU v6e on-demand, 6 x 16x16" in changed.note


def test_plan_of_such_a_pin_warns_and_reports_it_in_json(tmp_path):
    stack_file = tmp_path / "Pulumi.old-default.yaml"
    stack_file.write_text(yaml.safe_dump({"config": spot_allowed(stack_config(ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml"))}),
                          encoding="utf-8")
    result = plan_stack("llama-70b-tpu", stack_file, ROOT)
    document = result.to_json()
    assert document["fresh_choice"]["hardware"].startswith("B200 spot")
    [warning] = [w for w in document["warnings"] if "fresh `accel choose`" in w]
    assert "The pinned hardware is kept" in warning and "--write-stack" in warning
    assert result.plan["chosen"]["accelerator"] == "tpu-v6e"  # informs; never changes the hardware


def test_a_pin_whose_workload_nothing_meets_now_says_so_with_the_closest_option():
    """The estimate or the capacity model can move past a workload's own limits (a budget the pin met when it
    was chosen): the plan must say so rather than stay silent because there is nothing to compare."""
    config = stack_config(ROOT / "stacks" / "Pulumi.llama-70b-tpu.yaml")
    plan = {**config["accel:plan"]}
    workload = {**plan["workload"], "constraints": {**plan["workload"]["constraints"], "budget_usd": 1e5}}
    stated = {**config["accel:workload"], "constraints": {**config["accel:workload"]["constraints"], "budget_usd": 1e5}}
    config = {**config, "accel:workload": stated, "accel:plan": {**plan, "workload": workload}}
    changed = fresh(config, "a pin over its budget now")
    assert changed is not None and changed.hardware == "nothing feasible"
    assert changed.hourly_usd is None and changed.run_usd is None
    assert "finds nothing that meets its limits now" in changed.note and "closest" in changed.note
    assert changed.pinned_run_usd == pytest.approx(plan["chosen"]["total_usd"], abs=0.01)
