"""`accel review` on the bundled fixtures: what the rendered comment says, and in what order."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from accel.review import review_files
from accel.policies.plan import Plan

FIXTURES = Path(__file__).parent / "fixtures" / "review"
CREATE = FIXTURES / "preview_create.json"
REPLACE = FIXTURES / "preview_replace_tpu_pool.json"
DELETE = FIXTURES / "preview_delete_checkpoint_bucket.json"
HEAD = FIXTURES / "plan_head.json"
BASE = FIXTURES / "plan_base.json"


def plain(markdown: str) -> str:
    """The comment with Markdown backslash escapes removed, for asserting on what a reader sees."""
    return re.sub(r"\\(.)", r"\1", markdown)


def section(markdown: str, title: str) -> str:
    """The text of one `###` section (up to the next heading or the collapsed list)."""
    start = markdown.index(title)
    rest = markdown[start + len(title):]
    end = min([i for i in (rest.find("\n### "), rest.find("\n<details>\n")) if i >= 0] or [len(rest)])
    return rest[:end]


def table_row(markdown: str, label: str) -> list[str]:
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == label:
            return cells
    raise AssertionError(f"no table row {label!r}")


@pytest.fixture(scope="module")
def replace_comment() -> str:
    return review_files(REPLACE, HEAD, BASE)


def test_fixture_plans_are_real_plan_json():
    for path in (HEAD, BASE):
        Plan.model_validate(json.loads(path.read_text())["plan"])


def test_comment_starts_with_the_hidden_marker_for_its_stack(replace_comment):
    assert replace_comment.splitlines()[0] == "<!-- accel-review stack=llama-8b-v5p -->"


def test_headline_counts_each_kind_of_change(replace_comment):
    headline = replace_comment.splitlines()[3]
    assert "**2 to update**" in headline
    assert "**1 to replace**" in headline
    assert "21 unchanged" in headline
    assert "create" not in headline and "delete" not in headline


def test_sections_come_in_review_order_with_replacements_first(replace_comment):
    titles = ["### ⚠️ Replacements and deletions", "### 🖥️ Hardware", "### 💰 Cost", "### 🛡️ Guardrails",
              "### 🧩 Components", "<details>\n<summary>All 3 resources"]
    positions = [replace_comment.index(t) for t in titles]
    assert positions == sorted(positions)


def test_replaced_tpu_pool_shows_the_topology_change_that_forces_it(replace_comment):
    attention = section(replace_comment, "### ⚠️ Replacements and deletions")
    assert "♻️ replace `gcp:container/nodePool:NodePool` **llama-slice-0** · compute" in attention
    assert "`placementPolicy.tpuTopology`: `2x2x2` → `2x2x4` (forces replacement)" in attention
    assert "`nodeCount`: `2` → `4`\n" in attention + "\n"
    assert "jobs running on it stop" in attention


def test_hardware_before_and_after_come_from_the_two_plans(replace_comment):
    hardware = section(replace_comment, "### 🖥️ Hardware")
    assert table_row(hardware, "Chips") == ["Chips", "8", "**16**"]
    assert table_row(hardware, "Layout") == ["Layout", "1 slice × 2x2x2", "**1 slice × 2x2x4**"]
    assert table_row(hardware, "Hosts") == ["Hosts", "2", "**4**"]
    assert table_row(hardware, "Accelerator") == ["Accelerator", "tpu-v5p", "tpu-v5p"]
    assert table_row(hardware, "Capacity") == ["Capacity", "on-demand", "on-demand"]


def test_pool_table_reads_nodes_chips_and_topology_from_the_preview_states(replace_comment):
    row = table_row(section(replace_comment, "### 🖥️ Hardware"), "llama-slice-0")
    assert row[1:] == ["♻️ replace", "TPU v5p", "ct5p-hightpu-4t", "2 → **4**", "8 → **16**",
                       "2x2x2 → **2x2x4**", "no", "us-east5-a"]


def test_cost_table_has_hourly_and_run_cost_with_delta_and_percent(replace_comment):
    cost = plain(section(replace_comment, "### 💰 Cost"))
    assert table_row(cost, "Per hour") == ["Per hour", "$33.60", "$67.20", "+$33.60", "+100.0%"]
    assert table_row(cost, "Per run (estimated)") == ["Per run (estimated)", "$8,064.00", "$8,400.00",
                                                       "+$336.00", "+4.2%"]
    assert table_row(cost, "Run length") == ["Run length", "240.0 h", "125.0 h", "−115.0 h", "−47.9%"]


def test_dollar_signs_are_escaped_so_github_does_not_render_math(replace_comment):
    assert re.search(r"(?<!\\)\$\d", replace_comment) is None


def test_at_a_glance_line_sums_up_chips_and_cost(replace_comment):
    glance = plain(replace_comment.splitlines()[5])
    assert glance == ("tpu-v5p × 8 → **16** chips · $33.60 → **$67.20**/h (+100.0%) · "
                      "$8,064.00 → **$8,400.00**/run (+4.2%)")


def test_guardrails_mark_new_violations_and_those_the_pr_fixes(replace_comment):
    guardrails = plain(section(replace_comment, "### 🛡️ Guardrails"))
    assert "⚠️ 1 advisory" in guardrails
    row = table_row(guardrails, "advisory")
    assert row[1] == "`run-budget`" and row[-1] == "new"
    assert "Fixed by this PR: `labels-required` (llama-queue-kueue)." in guardrails


def test_diagram_draws_the_whole_cluster_from_the_plan_and_colours_what_changes(replace_comment):
    diagram = section(replace_comment, "### 🧩 Components")
    assert diagram.count('["') == 6  # TrainingCluster + five child components, nothing else
    assert '"TpuSlice: llama-slice-0<br/>1 resource: 1 replace"]:::replace' in diagram
    assert '"TrainingQueue: llama-queue<br/>6 resources: 2 update, 4 unchanged"]:::update' in diagram
    node_of = dict(re.findall(r'(c\d+)\["(\w+):', diagram))
    edges = {(node_of[a], node_of[b]) for a, b in re.findall(r"(c\d+) --> (c\d+)", diagram)}
    assert ("TrainingCluster", "TpuSlice") in edges and len(edges) == 5


def test_full_resource_list_is_collapsed_and_grouped_by_type(replace_comment):
    details = replace_comment[replace_comment.index("<details>\n<summary>"):]
    assert details.index("</details>") > details.index("#### `kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue`")
    assert "| llama-queue-cluster-queue | ✏️ update | llama-queue | changes spec |" in details


def test_creates_only_preview_lists_every_resource_as_a_create():
    comment = review_files(CREATE)
    assert "**23 to create** · 0 unchanged" in comment
    assert "Replacements and deletions" not in comment
    assert comment.count("| ➕ create |") == 23 + 1  # every resource, plus the TPU pool row in Hardware
    assert "Not computed: pass `--plan`" not in comment  # the preview's own steps are priced
    assert "Priced from the preview's own steps" in comment
    assert "Not evaluated: pass `--plan`" in comment


def test_plan_json_alone_renders_all_resources_as_creates_with_cost():
    comment = plain(review_files(HEAD))
    assert "**23 to create** · 0 unchanged" in comment
    assert table_row(comment, "Per hour") == ["Per hour", "$67.20"]
    assert "every resource is shown as a create" in comment


def test_two_plans_without_a_preview_give_an_offline_diff():
    comment = review_files(HEAD, base_plan=BASE)
    assert "**3 to update** · 20 unchanged" in comment
    assert "may still turn out to be a replacement" in comment


def test_deleted_checkpoint_bucket_is_called_out_as_data_loss_before_other_deletes():
    comment = review_files(DELETE, HEAD)
    attention = section(comment, "### ⚠️ Replacements and deletions")
    bucket = attention.index("🗑️ delete `gcp:storage/bucket:Bucket` **llama-checkpoints** · **data**")
    iam = attention.index("🗑️ delete `gcp:storage/bucketIAMMember:BucketIAMMember` **llama-checkpoints-writer**")
    assert bucket < iam
    assert "**1 data resource**" in attention
    assert "🛑 its data is destroyed with it (no `retainOnDelete`)" in attention
    assert "`forceDestroy` is off, so the delete fails while it still holds objects" in attention
    assert "**2 to delete** · 22 unchanged" in comment


def test_preview_warnings_are_shown():
    comment = review_files(DELETE)
    diagnostics = section(comment, "### 🩺 Preview diagnostics")
    assert "**warning** `accel-llama-8b-v5p`: storage.checkpoint\\_bucket is false" in diagnostics


def test_cli_writes_the_comment_to_a_file(review_cli, tmp_path):
    out = tmp_path / "comment.md"
    result = CliRunner().invoke(review_cli, ["review", str(REPLACE), "--plan", str(HEAD), "--base-plan", str(BASE),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == review_files(REPLACE, HEAD, BASE)


def test_cli_prints_the_comment_to_stdout(review_cli):
    result = CliRunner().invoke(review_cli, ["review", str(CREATE)])
    assert result.exit_code == 0
    assert result.stdout.startswith("<!-- accel-review stack=llama-8b-v5p -->\n")


def test_sample_comment_in_the_docs_is_what_the_renderer_prints():
    docs = (Path(__file__).parent.parent / "docs" / "review.md").read_text(encoding="utf-8")
    sample = docs.split("<!-- sample-comment:start -->\n", 1)[1].split("<!-- sample-comment:end -->", 1)[0]
    assert sample == review_files(REPLACE, HEAD, BASE)


def test_a_change_of_capacity_mode_shows_in_the_hardware_table(tmp_path):
    """Plans that carry a capacity mode (docs/capacity.md) show it, its legs and an upper-bound price, and a
    change of mode is a changed Capacity row with the new risk beside it."""
    head, base = json.loads(HEAD.read_text()), json.loads(BASE.read_text())
    base["plan"]["capacity"].update({"mode": "gcp-on-demand"})
    head["plan"]["capacity"].update({"mode": "gcp-flex-start", "legs": 3, "price_bound": "upper",
                             "risk": "flex-start runs at most 7 days per request: 3 legs"})
    (tmp_path / "head.json").write_text(json.dumps(head))
    (tmp_path / "base.json").write_text(json.dumps(base))
    hardware = plain(section(review_files(tmp_path / "head.json", base_plan=tmp_path / "base.json"), "### 🖥️ Hardware"))
    row = table_row(hardware, "Capacity")
    assert "(gcp-on-demand)" in row[1] and "(gcp-flex-start, 3 legs)" in row[2]
    assert "price is an upper bound" in row[2]
    assert "3 legs" in table_row(hardware, "Capacity risk")[2]
