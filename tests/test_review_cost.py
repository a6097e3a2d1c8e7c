"""`accel review PREVIEW.json` prices the preview's own steps: no `--plan` needed for $/h."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from accel.review import load_review
from accel.review.render import render
from tests.preview_documents import create_everything

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "review"
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def review_of(tmp_path: Path, preview: dict, plan: dict | None = None):
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(preview))
    plan_path = None
    if plan is not None:
        plan_path = tmp_path / "plan.json"
        plan_path.write_text(json.dumps(plan))
    return load_review(path, plan_path, None)


def row(review, label: str):
    return next(r for r in review.cost.rows if r.label.startswith(label))


@pytest.mark.parametrize("stack", STACKS)
def test_a_preview_that_creates_everything_costs_what_accel_plan_says(planned_stacks, stack, tmp_path):
    plan = planned_stacks[stack]
    review = review_of(tmp_path, create_everything(plan))
    built = plan["cost"]["built"]
    assert row(review, "Per hour").before == 0
    assert row(review, "Per hour").after == pytest.approx(built["hourly_usd"], abs=0.01)
    if built["accelerator_hourly_usd"]:  # a stack on an existing cluster builds no pools: it adds the Plan's
        assert row(review, "Per hour").after == pytest.approx(plan["cost"]["hourly_usd"], abs=0.01)
        assert row(review, "Per run").after == pytest.approx(plan["cost"]["run_usd"], abs=1.0)


def test_a_tpu_slice_resize_is_priced_before_and_after_without_a_plan(tmp_path):
    preview = json.loads((FIXTURES / "preview_replace_tpu_pool.json").read_text())
    review = review_of(tmp_path, preview)
    [pool] = [r for r in review.cost.resources if r.kind == "accelerator-pool"]
    old_nodes, new_nodes = 2, 4  # the fixture's nodeCount before and after
    assert pool.after == pytest.approx(pool.before * new_nodes / old_nodes) and pool.before > 0
    comment = render(review)
    assert "Not computed" not in comment and "catalog 2026" in comment


def test_an_unknown_machine_type_in_a_preview_is_listed_unpriced(tmp_path):
    preview = json.loads((FIXTURES / "preview_replace_tpu_pool.json").read_text())
    for step in preview["steps"]:
        if step.get("newState", {}).get("type") == "gcp:container/nodePool:NodePool":
            step["newState"]["inputs"]["nodeConfig"]["machineType"] = "ct9z-imaginary-4t"
    review = review_of(tmp_path, preview)
    assert any("ct9z-imaginary-4t" in u for u in review.cost.unpriced)
    assert "unpriced" in render(review)


def test_the_plan_adds_the_run_length(planned_stacks, tmp_path):
    plan = copy.deepcopy(planned_stacks["llama-70b-tpu"])
    review = review_of(tmp_path, create_everything(plan), plan)
    assert row(review, "Run length").after == pytest.approx(plan["plan"]["estimate"]["hours"], rel=1e-6)
