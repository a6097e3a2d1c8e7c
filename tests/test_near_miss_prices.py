"""An offering nothing fits says what its closest fleet would have cost, so a user can weigh the miss.

"Just missed p99 by 12 ms, but at what price?": each `rejected` entry of an offering the search sized keeps its near
miss (the fleet that overshoots its constraints least) as an optional `closest` OPTION, priced as an option is:
$/h and total, and for serving its price per million tokens (the p99-ruled fleet at batch 1 too). `accel choose`
prints it under the offering's reason, against the chosen's cost. Entries ruled out before a fleet was priced keep
exactly the keys they had.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from accel.policies.catalog import load_catalog
from accel.policies.plan import usd_per_million_tokens
from accel.policies.selection.choose import choose
from accel.policies.workload import load_workload

ROOT = Path(__file__).resolve().parents[1]
SERVING = ROOT / "examples" / "llama-70b-inference.yaml"   # 50 ms p99: g5.48xlarge's fastest replica makes 62 ms
TRAINING = ROOT / "examples" / "llama-70b-pretrain.yaml"   # a $4M budget and 30 days most offerings miss


@functools.cache
def chosen(path: Path):
    return choose(load_workload(str(path)), load_catalog(), "cost")


def rejected(path: Path, offering: str) -> dict:
    return next(item for item in chosen(path).to_json()["rejected"] if item["offering"] == offering)


def test_a_serving_offering_ruled_out_by_p99_keeps_its_fastest_fleet_priced_per_hour_and_per_token():
    item = rejected(SERVING, "aws-g5.48xlarge")
    assert "over the 50 ms bound" in item["reasons"][0]
    closest = item["closest"]
    assert closest["offering"] == "aws-g5.48xlarge" and closest["hourly_usd"] > 0
    assert closest["total_usd"] == pytest.approx(closest["hourly_usd"] * closest["hours"], rel=1e-6)
    target = chosen(SERVING).workload.inference.tokens_per_second
    # batch 1 serves at least the target (replicas for it), so the price at the target is the fleet's $/h over it
    assert closest["usd_per_million_tokens_at_target"] == pytest.approx(
        usd_per_million_tokens(closest["hourly_usd"], target), rel=1e-3)
    assert 0 < closest["usd_per_million_tokens"] <= closest["usd_per_million_tokens_at_target"]


def test_an_offering_ruled_out_before_any_fleet_was_priced_keeps_exactly_its_offering_and_reasons():
    item = rejected(SERVING, "aws-g5.xlarge")   # 140 GB of weights fit no replica: nothing was sized
    assert "do not fit" in item["reasons"][0]
    assert set(item) == {"offering", "reasons"}


def test_every_closest_is_a_whole_option_of_its_own_offering():
    document = chosen(SERVING).to_json()
    with_closest = [item for item in document["rejected"] if "closest" in item]
    assert with_closest
    keys = set(document["chosen"])
    for item in with_closest:
        assert item["closest"]["offering"] == item["offering"]
        assert set(item["closest"]) <= keys | {"ranked_after", "usd_per_million_tokens_unpriced"}
    json.dumps(document)   # every entry JSON as it stands


def test_a_training_offering_over_budget_or_late_keeps_its_closest_fleet_with_its_cost():
    document = chosen(TRAINING).to_json()
    priced = [item for item in document["rejected"] if "closest" in item]
    assert priced
    for item in priced:
        closest = item["closest"]
        assert closest["hourly_usd"] > 0 and closest["total_usd"] > 0 and closest["hours"] > 0
        assert "usd_per_million_tokens" not in closest


def choose_output(path: Path) -> str:
    from accel.commands import choose as choose_command

    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    result = CliRunner().invoke(app, ["choose", str(path)])
    assert result.exit_code == 0, result.output
    return result.output


def test_choose_prints_each_near_miss_priced_under_its_offering():
    output = choose_output(SERVING)
    rejected_part = output.split("Rejected", 1)[1]
    item = rejected(SERVING, "aws-g5.48xlarge")["closest"]
    line = next(line for line in rejected_part.split("  - aws-g5.48xlarge:", 1)[1].splitlines()
                if line.strip().startswith("closest:"))
    assert f"{item['hosts']} x g5.48xlarge" in line and "aws us-east-1, on-demand" in line
    assert "/h" in line and "per million tokens at the target" in line
    assert f"${item['usd_per_million_tokens_at_target']:,.2f}" in line
    assert re.search(r"; ([\d,.]+x the|\d+% (cheaper|dearer) than the|about the)", line), line
    # an offering with no near miss prints none
    after = rejected_part.split("  - aws-g5.xlarge:", 1)[1].split("  - ", 1)[0]
    assert "closest:" not in after


def test_a_refusal_prices_its_closest_serving_fleet_per_token_too():
    from accel.policies.selection.choice import NoFeasibleOption
    from accel.policies.workload import workload_from_mapping

    spec = workload_from_mapping({"name": "tight", "kind": "inference", "model": {"parameters": "70B"},
                                  "inference": {"tokens_per_second": 2000, "p99_latency_ms": 8,
                                                "framework": "pytorch"},
                                  "constraints": {"clouds": ["aws"], "spot": "never"}}, "tight.yaml")
    with pytest.raises(NoFeasibleOption) as refused:
        choose(spec, load_catalog(), "cost")
    closest = refused.value.closest
    assert closest is not None and closest.usd_per_million_tokens_at_target == pytest.approx(
        usd_per_million_tokens(closest.hourly_usd, 2000), rel=1e-3)
    line = next(line for line in str(refused.value).splitlines() if line.startswith("closest:"))
    assert f"${closest.usd_per_million_tokens_at_target:,.2f} per million tokens at the target" in line
    assert all(set(item) == {"offering", "reasons", "closest"} or set(item) == {"offering", "reasons"}
               for item in refused.value.to_json()["rejected"])
