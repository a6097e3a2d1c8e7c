"""The preview workflow edits only a review comment its own identity wrote.

The `comment` job finds the comment to update by its hidden first-line marker. Anyone who can
comment on the pull request can post that marker first; the selection must then skip their
comment (and a human named like the bot, and a bot comment that merely quotes the marker) and
pick the one `github-actions[bot]` (or the configured app's `<slug>[bot]`) wrote. The filter is
read from .github/workflows/preview.yml itself and run with jq (what `gh api --jq` runs, gojq)
over a recorded listing of the GitHub API's issue comments
(tests/fixtures/github/issue_comments.json, the shape of GET /repos/{owner}/{repo}/issues/{n}/comments).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PREVIEW = ROOT / ".github" / "workflows" / "preview.yml"
LISTING = ROOT / "tests" / "fixtures" / "github" / "issue_comments.json"


def comment_step() -> dict:
    job = yaml.safe_load(PREVIEW.read_text(encoding="utf-8"))["jobs"]["comment"]
    return next(step for step in job["steps"] if "OWN_COMMENT_FILTER" in (step.get("env") or {}))


def select(marker: str, bot: str, listing: list[dict]) -> list[int]:
    jq = shutil.which("jq")
    if jq is None:
        pytest.fail("jq is not installed (GitHub's runners and this image have it)")
    result = subprocess.run([jq, comment_step()["env"]["OWN_COMMENT_FILTER"]], input=json.dumps(listing),
                            capture_output=True, text=True, check=True,
                            env={**os.environ, "MARKER": marker, "REVIEW_BOT": bot})
    return [int(line) for line in result.stdout.split()]


def listing() -> list[dict]:
    return json.loads(LISTING.read_text(encoding="utf-8"))


def test_the_run_step_uses_the_filter_and_the_bot_defaults_to_github_actions():
    step = comment_step()
    assert '--jq "$OWN_COMMENT_FILTER"' in step["run"]
    assert "'github-actions[bot]'" in step["env"]["REVIEW_BOT"]


def test_a_marker_posted_first_by_someone_else_is_skipped_for_the_bots_own():
    assert select("<!-- accel-review stack=llama-70b-tpu -->", "github-actions[bot]", listing()) == [1004]


def test_each_stack_finds_its_own_comment():
    assert select("<!-- accel-review stack=dev-spot -->", "github-actions[bot]", listing()) == [1003]


def test_a_configured_app_identity_finds_the_apps_comment_only():
    assert select("<!-- accel-review stack=llama-70b-tpu -->", "acme-accel-review[bot]", listing()) == [1005]


def test_only_forged_markers_mean_a_new_comment_is_posted():
    forged = [c for c in listing() if c["user"]["type"] != "Bot" or c["id"] == 1006]
    assert select("<!-- accel-review stack=llama-70b-tpu -->", "github-actions[bot]", forged) == []


def test_the_stack_list_is_quoted_so_names_never_split_or_glob():
    job = yaml.safe_load(PREVIEW.read_text(encoding="utf-8"))["jobs"]["stacks"]
    run = next(step["run"] for step in job["steps"] if step.get("id") == "pick")
    assert "printf '%s\\n' \"$stacks\"" in run and "printf '%s\\n' $stacks" not in run
