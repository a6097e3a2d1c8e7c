"""The Plan's parallelism rationale says how its pools hold whole model replicas as it is: a replica stays inside one
pool, so a pool that is not a whole number of replicas has nodes that hold none, and the line says how many
(policies/selection/plan_builder.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.policies.plan import Plan
from accel.policies.selection.plan_builder import _replicas_in_pools
from tests.test_job import planned


def layout_line(stack: str) -> str:
    plan = Plan.model_validate(planned(stack).plan)
    return next(line for line in plan.rationale if line.startswith("Parallelism:"))


@pytest.mark.parametrize("stack, words", [
    # 36 A4X nodes (two 18-node sub-blocks) hold four 8-node replicas of TP8 x PP4 (the PyTorch run's distributed
    # optimizer shards the optimizer state over them; TP8 x PP8 holding the whole state before); 4 trays hold none.
    ("llama-405b-a4x", "one pool of 36 nodes holding 4 replicas of 8 nodes; 4 nodes hold no whole replica."),
    # One 18-instance p6e-gb200 UltraServer, pinned by hand, holds one 16-node replica of TP4 x PP16; 2 hold none.
    ("llama-405b-p6e", "one pool of 18 nodes holding 1 replica of 16 nodes; 2 nodes hold no whole replica."),
])
def test_a_pool_that_is_not_a_whole_number_of_replicas_says_which_nodes_hold_none(stack, words):
    line = layout_line(stack)
    assert line.endswith(words)
    assert "whole number of replicas" not in line


@pytest.mark.parametrize("sizes, group, words", [
    ([200], 2, ", a whole number of replicas"),
    ([150, 50], 2, ", each a whole number of replicas"),
    ([148, 51], 4, " holding 49 replicas of 4 nodes; 3 nodes hold no whole replica"),
    ([17], 16, " holding 1 replica of 16 nodes; 1 node holds no whole replica"),
    ([8, 8], 16, ": a replica is wider than one pool may hold, so it crosses pools"),
])
def test_the_words_count_the_replicas_the_pools_hold(sizes, group, words):
    assert _replicas_in_pools(sizes, group) == words


def test_the_shipped_pin_says_what_its_pools_hold():
    # 132 p4d nodes in pools of 64 + 64 + 4 hold thirty-three 4-node replicas (TP8 x PP4: the job's distributed
    # optimizer shards the optimizer state over the replicas); holding the whole state, 136 nodes in 64 + 64 + 8 held
    # seventeen 8-node replicas, since the search times a fleet on its whole replicas.
    import yaml

    from accel.policies.selection.plan_builder import _layout_words

    root = Path(__file__).resolve().parent.parent
    document = yaml.safe_load((root / "stacks" / "Pulumi.llama-70b-finetune-aws.yaml").read_text())
    plan = Plan.model_validate(document["config"]["accel:plan"])
    line = _layout_words(plan.gpu, plan.parallelism)
    assert line.endswith("3 pools: 2 x 64 + 4 nodes, each a whole number of replicas.")
    assert line in plan.rationale
