"""A refusal states a deadline's miss in the figure the deadline is judged by: the capacity mode's wall-clock at
the confidence quantile (spot's reclaim waves, flex-start's legs), said as such, never the mean billed hours."""
from __future__ import annotations

import re

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choice import NoFeasibleOption
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping


@pytest.mark.parametrize("spot", ["required", "never"])
def test_the_closest_line_misses_the_deadline_by_the_wall_clock_it_was_judged_by(spot):
    workload = workload_from_mapping({
        "name": "late", "kind": "pretrain", "model": {"parameters": "70B"},
        "training": {"tokens": "15T", "framework": "pytorch"},
        "constraints": {"clouds": ["gcp"], "accelerators": ["h200-141gb"], "spot": spot, "deadline_days": 7,
                        "max_chips": 256}}, "late.yaml")
    with pytest.raises(NoFeasibleOption) as refused:
        choose(workload, load_catalog())
    [closest] = [line for line in str(refused.value).splitlines() if line.startswith("closest:")]
    found = re.search(r": ([\d.]+) days wall-clock at P90, .*\(misses the 7-day deadline by ([\d.]+) days", closest)
    assert found, closest
    assert float(found[1]) - 7 == pytest.approx(float(found[2]), abs=0.06)
