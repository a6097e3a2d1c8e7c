"""`accel review --event-log EVENTS`: the guardrail section shows the pack's own run in the preview.

The fixtures follow the real `pulumi preview --event-log` shape (tests/fixtures/review/EVENT_LOGS.md
names the upstream sources). Without an event log the section says it was re-derived offline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from accel.base.errors import UsageError
from accel.base.json_limits import MAX_DEPTH
from accel.review import review_files
from accel.review.event_log import read_event_log

FIXTURES = Path(__file__).parent / "fixtures" / "review"
EVENTS = FIXTURES / "preview_events.jsonl"
PASSING = FIXTURES / "preview_events_pass.jsonl"
REPLACE = FIXTURES / "preview_replace_tpu_pool.json"
HEAD = FIXTURES / "plan_head.json"
FROM_EVENT_LOG = "from the pack's run in the preview (event log)"
RE_DERIVED = "Re-derived offline"


def events_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_events(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def guardrail_section(comment: str) -> str:
    return comment.split("### 🛡️ Guardrails", 1)[1].split("\n### ", 1)[0]


def test_every_policy_event_in_the_log_becomes_a_finding_with_its_level_resource_and_message():
    expected = [e["policyEvent"] for e in events_of(EVENTS) if "policyEvent" in e]
    run = read_event_log(EVENTS)
    assert [(f.policy, f.level) for f in run.findings] == [(e["policyName"], e["enforcementLevel"]) for e in expected]
    assert [f.resource for f in run.findings] == [e.get("resourceUrn", "").rsplit("::", 1)[-1] or None for e in expected]
    assert all("<{%" not in f.message and "\n" not in f.message for f in run.findings)


def test_the_summary_event_names_the_packs_that_ran():
    assert read_event_log(PASSING).packs == {"accel-guardrails": "0.1.0"}


def test_the_comment_shows_the_pack_results_from_the_event_log_and_says_so():
    section = guardrail_section(review_files(REPLACE, HEAD, event_log=EVENTS))
    assert FROM_EVENT_LOG in section
    for event in events_of(EVENTS):
        if "policyEvent" in event:
            assert event["policyEvent"]["policyName"] in section


def test_a_clean_pack_run_in_the_event_log_passes_the_guardrails():
    section = guardrail_section(review_files(REPLACE, HEAD, event_log=PASSING))
    assert FROM_EVENT_LOG in section and "All guardrails pass" in section


def test_without_an_event_log_the_comment_says_the_results_were_re_derived_offline():
    section = guardrail_section(review_files(REPLACE, HEAD))
    assert RE_DERIVED in section and FROM_EVENT_LOG not in section


def test_an_event_log_where_no_pack_ran_says_guardrails_were_not_evaluated(tmp_path):
    lines = [json.dumps(e) for e in events_of(PASSING)]
    summary = [i for i, line in enumerate(lines) if "summaryEvent" in line][0]
    event = json.loads(lines[summary])
    event["summaryEvent"]["PolicyPacks"] = {}
    lines[summary] = json.dumps(event)
    section = guardrail_section(review_files(REPLACE, HEAD, event_log=write_events(tmp_path, lines)))
    assert "Not evaluated: no policy pack ran in the preview" in section


def test_an_event_log_cut_before_its_summary_says_the_preview_did_not_finish(tmp_path):
    lines = [line for line in PASSING.read_text().splitlines() if "summaryEvent" not in line]
    section = guardrail_section(review_files(REPLACE, HEAD, event_log=write_events(tmp_path, lines)))
    assert "the preview did not finish" in section


def test_a_line_that_is_not_json_is_exit_2_naming_the_line(review_cli, tmp_path):
    lines = PASSING.read_text().splitlines()
    path = write_events(tmp_path, [lines[0], "{not json", *lines[1:]])
    result = CliRunner().invoke(review_cli, ["review", str(REPLACE), "--event-log", str(path)])
    assert result.exit_code == 2
    assert f"{path} line 2: not valid JSON" in result.output
    assert "Traceback" not in result.output


def test_a_policy_event_without_its_policy_name_is_exit_2_naming_the_field(tmp_path):
    event = events_of(EVENTS)[2]
    del event["policyEvent"]["policyName"]
    with pytest.raises(UsageError, match="line 1: policyEvent.*policyName"):
        read_event_log(write_events(tmp_path, [json.dumps(event)]))


@settings(max_examples=10, deadline=None)
@given(extra=st.integers(min_value=1, max_value=5_000))
def test_a_line_nested_past_the_depth_bound_is_refused_without_recursing(tmp_path_factory, extra):
    depth = MAX_DEPTH + extra
    deep = '{"policyEvent": ' + "[" * depth + "]" * depth + "}"
    path = write_events(tmp_path_factory.mktemp("deep"), [deep])
    with pytest.raises(UsageError, match=f"line 1: JSON nested more than {MAX_DEPTH} levels"):
        read_event_log(path)


def test_an_event_log_over_the_size_bound_is_refused(tmp_path, monkeypatch):
    import accel.review.event_log as event_log

    monkeypatch.setattr(event_log, "MAX_BYTES", EVENTS.stat().st_size - 1)
    with pytest.raises(UsageError, match="accel reads an event log .* of at most"):
        read_event_log(EVENTS)
