"""The ranked table of `accel choose`: the best few options side by side, what each trades."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, strategies as st
from typer.testing import CliRunner

from accel.policies.plan import Option
from accel.policies.selection.tradeoffs import CAPACITY_RISK, PORTABILITY, cost_words, ranked_alternatives, time_words
from tests.test_choose_cli import cli

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PRETRAIN = str(EXAMPLES / "llama-70b-pretrain.yaml")


def option(**changes) -> Option:
    base = dict(cloud="gcp", region="us-east5", accelerator="tpu-v6e", family="tpu", chips=256, hosts=64,
                slices=1, topology="16x16", machine_type="ct6e-standard-4t", hourly_usd=100.0, hours=100.0,
                total_usd=10_000.0, mfu=0.4, offering="gcp-tpu-v6e", chips_per_host=4)
    return Option(**{**base, **changes})


def test_a_faster_dearer_option_says_how_much_faster_and_how_much_more():
    chosen, faster = option(), option(chips=768, hours=33.0, total_usd=10_400.0, hourly_usd=315.0)
    assert time_words(faster, chosen) == "3.0x faster"
    assert cost_words(faster, chosen) == "+4% ($400 more)"


@given(st.floats(1, 1e4), st.floats(1, 1e4))
def test_time_words_name_the_direction_of_the_difference(chosen_hours, other_hours):
    words = time_words(option(hours=other_hours), option(hours=chosen_hours))
    if words is not None:
        assert ("faster" in words) == (other_hours < chosen_hours)


def test_spot_and_portability_are_said_only_where_they_differ():
    chosen = option()
    rows, _ = ranked_alternatives([chosen, option(provisioning="spot", total_usd=4000.0),
                                   option(family="gpu", accelerator="h100-80gb", offering="gcp-a3-highgpu-8g",
                                          topology=None, machine_type="a3-highgpu-8g", chips_per_host=8,
                                          hosts=32, total_usd=12_000.0)], serving=False, limit=5)
    assert rows[0].chosen and rows[0].tradeoffs[0] == "chosen"
    assert CAPACITY_RISK["spot"] in rows[1].tradeoffs and PORTABILITY["tpu"] not in rows[1].tradeoffs
    assert PORTABILITY["gpu"] in rows[2].tradeoffs and CAPACITY_RISK["on-demand"] not in rows[2].tradeoffs


def test_the_same_option_in_other_regions_is_one_row_listing_them():
    rows, rest = ranked_alternatives([option(), option(region="us-east1"), option(chips=512, hours=50.0)],
                                     serving=False, limit=1)
    assert rows[0].regions == ("us-east5", "us-east1")
    assert [o.chips for o in rest] == [512]


def test_choose_shows_the_faster_fleets_beside_the_chosen_one(tmp_path):
    # Without spot: the TPU ladder's faster multislices rank right behind the chosen one (with spot allowed,
    # the spot GPU fleets of every size crowd the table first; the rest are summarised below it). On demand,
    # the whole-run model needs a $4M budget for it (docs/choose.md, "Whole runs").
    workload = tmp_path / "on-demand.yaml"
    workload.write_text(Path(PRETRAIN).read_text().replace("spot: allowed", "spot: never")
                        .replace("budget_usd: 2.5M", "budget_usd: 4M"))
    outcome = CliRunner().invoke(cli(), ["choose", str(workload)])
    document = json.loads(CliRunner().invoke(cli(), ["choose", str(workload), "--json"]).stdout)
    assert outcome.exit_code == 0, outcome.output
    # Among listed prices: an offering priced only by estimate ranks after them (docs/choose.md).
    fastest = min((o for o in document["options"] if not o["price_estimate"]), key=lambda o: o["hours"])
    assert f"{fastest['chips']:,}" in outcome.stdout
    assert "1 *" in outcome.stdout and "faster" in outcome.stdout


def test_nothing_feasible_names_the_max_chips_cap_that_stopped_the_fleets(tmp_path):
    """At max_chips 256 every fleet of 70B pretraining is too slow; 1,024 chips would meet the deadline."""
    workload = tmp_path / "capped.yaml"
    workload.write_text(Path(PRETRAIN).read_text().replace("max_chips: 8192", "max_chips: 256"))
    outcome = CliRunner().invoke(cli(), ["choose", str(workload)])
    assert outcome.exit_code == 3
    message = outcome.stderr
    eliminated = next(line for line in message.splitlines() if line.strip().startswith("max_chips 256 eliminated"))
    assert "gcp-tpu-v6e" in eliminated
    assert "max_chips 256 stopped it growing" in message.splitlines()[-1]


def test_a_cap_above_what_helps_is_not_blamed(tmp_path):
    """With the 30-day deadline met, a max_chips cap is not an eliminating constraint."""
    outcome = CliRunner().invoke(cli(), ["choose", PRETRAIN, "--json"])
    document = json.loads(outcome.stdout)
    assert not any("max_chips" in reason for item in document["rejected"] for reason in item["reasons"])
