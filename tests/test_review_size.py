"""A preview with thousands of steps still becomes one comment under GitHub's limit, tables whole."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accel.review import build_review, render
from accel.review.preview_json import PreviewDigest
from accel.review.render import GITHUB_COMMENT_LIMIT, size

STACK_URN = "urn:pulumi:prod::accel::pulumi:pulumi:Stack::accel-prod"
CLUSTER = "accel:cluster:TrainingCluster"
SLICE = "accel:gcp:TpuSlice"
TYPES = ["gcp:compute/firewall:Firewall", "gcp:projects/iAMMember:IAMMember", "kubernetes:core/v1:ConfigMap",
         "kubernetes:apps/v1:Deployment", "gcp:compute/address:Address", "aws:ec2/securityGroupRule:SecurityGroupRule"]
# What the generated preview holds, per action.
SLICES, CREATES, UPDATES, REPLACES, DELETES, BUCKET_DELETES = 300, 3000, 900, 300, 600, 40


def _state(type_token: str, name: str, parents: tuple[tuple[str, str], ...], custom: bool = True,
           inputs: dict | None = None) -> dict:
    chain = "$".join([t for t, _ in parents] + [type_token])
    parent = STACK_URN
    if parents:
        parent_chain = "$".join(t for t, _ in parents)
        parent = f"urn:pulumi:prod::accel::{parent_chain}::{parents[-1][1]}"
    return {"urn": f"urn:pulumi:prod::accel::{chain}::{name}", "custom": custom, "type": type_token,
            "parent": parent, "inputs": inputs or {}}


def _step(op: str, state: dict, **extra) -> dict:
    body = {"op": op, "urn": state["urn"], **extra}
    if op != "delete":
        body["newState"] = state
    if op != "create":
        body["oldState"] = state
    return body


def large_preview() -> dict:
    """Thousands of steps: a cluster of 300 TPU slices, churn in every resource kind."""
    steps = [{"op": "same", "urn": STACK_URN}]
    root = (CLUSTER, "llama-405b-pretrain-cluster")
    steps.append(_step("create", _state(CLUSTER, root[1], (), custom=False)))
    for i in range(SLICES):
        name = f"llama-405b-pretrain-slice-{i:04d}"
        steps.append(_step("create", _state(SLICE, name, (root,), custom=False)))
        pool = _state("gcp:container/nodePool:NodePool", f"{name}-pool", (root, (SLICE, name)), inputs={
            "nodeCount": 16, "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4x4"},
            "nodeConfig": {"machineType": "ct5p-hightpu-4t", "spot": True}})
        if i < REPLACES:
            old = dict(pool, inputs={**pool["inputs"], "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4x8"},
                                     "nodeCount": 32})
            steps.append({"op": "replace", "urn": pool["urn"], "oldState": old, "newState": pool,
                          "replaceReasons": ["placementPolicy"],
                          "detailedDiff": {"placementPolicy.tpuTopology": {"kind": "update-replace"}}})
    for i in range(CREATES):
        steps.append(_step("create", _state(TYPES[i % len(TYPES)], f"llama-405b-pretrain-resource-{i:05d}", (root,))))
    for i in range(UPDATES):
        steps.append(_step("update", _state(TYPES[i % len(TYPES)], f"llama-405b-pretrain-updated-{i:05d}", (root,)),
                           diffReasons=["labels"]))
    for i in range(DELETES):
        steps.append(_step("delete", _state(TYPES[i % len(TYPES)], f"llama-405b-pretrain-old-{i:05d}", (root,))))
    for i in range(BUCKET_DELETES):
        steps.append(_step("delete", _state("gcp:storage/bucket:Bucket", f"llama-405b-ckpt-{i:03d}", (root,),
                                            inputs={"forceDestroy": False})))
    creates = 1 + SLICES + CREATES
    return {"steps": steps, "changeSummary": {"create": creates, "update": UPDATES, "replace": REPLACES,
                                              "delete": DELETES + BUCKET_DELETES, "same": 1}}


@pytest.fixture(scope="module")
def large_review():
    return build_review(PreviewDigest.model_validate(large_preview()))


@pytest.fixture(scope="module")
def large_comment(large_review) -> str:
    return render(large_review)


def split_cells(line: str) -> list[str]:
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def assert_tables_whole(markdown: str) -> int:
    """Every table has a header, a separator and rows with the header's cell count. Returns how many."""
    blocks, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    for block in blocks:
        assert len(block) >= 2, block
        width = len(split_cells(block[0]))
        assert all(re.fullmatch(r"\s*-{3}:?\s*", cell) for cell in split_cells(block[1])), block[1]
        for row in block:
            assert len(split_cells(row)) == width, row
    return len(blocks)


def test_large_preview_has_thousands_of_steps():
    assert len(large_preview()["steps"]) > 5000


def test_large_preview_comment_fits_githubs_limit(large_comment):
    assert size(large_comment) <= 60_000 < GITHUB_COMMENT_LIMIT


def test_large_preview_headline_counts_everything(large_comment):
    headline = large_comment.splitlines()[3]
    assert headline == (f"**{1 + SLICES + CREATES} to create** · **{UPDATES} to update** · "
                        f"**{REPLACES} to replace** · **{DELETES + BUCKET_DELETES} to delete** · 1 unchanged")


def test_large_preview_is_summarised_not_cut(large_comment):
    assert assert_tables_whole(large_comment) >= 3
    assert large_comment.count("<details>") == large_comment.count("</details>")
    assert large_comment.count("```mermaid") == 1 and large_comment.count("```") == 2
    assert large_comment.rstrip().endswith("changes from `pulumi preview --json`</sub>")


def test_large_preview_still_lists_deleted_buckets_first(large_comment):
    start = large_comment.index("### ⚠️ Replacements and deletions")
    attention = large_comment[start:large_comment.index("\n### ", start + 1)]
    last_bucket = attention.index(f"llama-405b-ckpt-{BUCKET_DELETES - 1:03d}")
    assert all(f"llama-405b-ckpt-{i:03d}" in attention for i in range(BUCKET_DELETES))
    assert last_bucket < attention.index("gcp:container/nodePool:NodePool")
    assert f"**{BUCKET_DELETES} data resources**" in attention


def test_large_preview_keeps_per_type_counts(large_comment):
    row = next(line for line in large_comment.splitlines() if line.startswith("| `gcp:container/nodePool:NodePool`"))
    assert split_cells(row)[1].strip() == str(REPLACES)
    assert split_cells(row)[4].strip() == str(REPLACES)


def test_large_preview_diagram_is_capped(large_comment, large_review):
    diagram = large_comment[large_comment.index("```mermaid"):]
    diagram = diagram[: diagram.index("```", 3)]
    assert len(re.findall(r"^  c\d+\[", diagram, re.MULTILINE)) == 12
    assert f'more["… {SLICES + 1 - 12} more components"]' in diagram


@pytest.mark.parametrize("budget", [8_000, 20_000, 40_000, 65_536])
def test_every_budget_gives_whole_tables(large_review, budget):
    comment = render(large_review, budget)
    assert assert_tables_whole(comment)
    assert size(comment) <= max(budget, 20_000)  # the tersest layout of this preview is ~12 kB


awkward_names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(names=st.lists(awkward_names, min_size=1, max_size=8, unique=True))
def test_any_resource_name_keeps_tables_and_sections_intact(names):
    steps = [_step("delete", _state("gcp:storage/bucket:Bucket", f"b{i}{name}", ()))
             for i, name in enumerate(names)]
    steps += [_step("create", _state("kubernetes:core/v1:ConfigMap", f"c{i}{name}", ())) for i, name in enumerate(names)]
    comment = render(build_review(PreviewDigest.model_validate({"steps": steps})))
    assert_tables_whole(comment)
    assert comment.count("<details>") == 1 and comment.count("</details>") == 1
    assert f"**{len(names)} to create** · **{len(names)} to delete**" in comment


def test_worst_case_of_every_list_at_once_still_fits():
    """Hundreds of long type names, distinct pools, long violations and diagnostics together."""
    from accel.review.plan_json import PlanReport

    long = "x" * 300
    steps = [_step("delete", _state(f"pkg:mod{i}/{long}:Bucket", f"{long}-{i}", ())) for i in range(400)]
    steps += [_step("replace", _state("gcp:container/nodePool:NodePool", f"pool-{i}-{long}", ()),
                    replaceReasons=["placementPolicy"])
              for i in range(80)]
    for i, s in enumerate(steps[400:]):
        s["oldState"] = dict(s["oldState"], inputs={"nodeCount": i + 1, "nodeConfig": {"machineType": "ct5p-hightpu-4t"},
                                                    "placementPolicy": {"tpuTopology": f"{i + 1}x4x4"}})
    digest = PreviewDigest.model_validate({
        "steps": steps,
        "diagnostics": [{"severity": "error", "message": long * 3, "urn": steps[i]["urn"]} for i in range(60)]})
    head = PlanReport.model_validate({"stack": "prod", "resources": [], "plan": None, "policy": {"violations": [
        {"policy": f"policy-{i}-{long}", "level": "mandatory", "resource": long, "message": long * 5}
        for i in range(200)]}})
    comment = render(build_review(digest, head))
    assert size(comment) <= 60_000
    assert_tables_whole(comment)
    assert "**80 to replace** · **400 to delete**" in comment
    assert re.search(r"…and 1[59]0 more violations\.", comment)
