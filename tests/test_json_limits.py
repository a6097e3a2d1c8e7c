"""Every JSON input is bounded in size and depth: exit 2 with a message, never a RecursionError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from accel.base.errors import UsageError
from accel.base.json_limits import MAX_DEPTH, check_json_bounds, nesting_depth


def nested(depth: int, key: str = "steps") -> str:
    return '{"%s": %s%s}' % (key, "[" * (depth - 1), "]" * (depth - 1))


@given(st.recursive(st.none() | st.integers() | st.text(), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=30))
@settings(max_examples=100, deadline=None)
def test_the_depth_counts_brackets_outside_strings_only(value):
    def depth(v) -> int:
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        return 0
    assert nesting_depth(json.dumps(value)) == depth(value)


def test_brackets_inside_strings_do_not_count():
    assert nesting_depth(json.dumps({"a": "[[[[{{{{\\\"]]"})) == 1


def test_a_document_at_the_limit_is_read_and_one_past_it_is_refused():
    check_json_bounds(nested(MAX_DEPTH), "ok.json")
    with pytest.raises(UsageError, match=rf"deep.json: JSON nested more than {MAX_DEPTH} levels"):
        check_json_bounds(nested(MAX_DEPTH + 1), "deep.json")


def test_an_oversized_document_is_refused_naming_its_size():
    with pytest.raises(UsageError, match="big.json: 1,001 bytes; accel reads JSON documents of at most 1,000 bytes"):
        check_json_bounds(" " * 1001, "big.json", max_bytes=1000)


@pytest.mark.parametrize("document", [nested(1000), "[" * 100_000 + "]" * 100_000])
def test_accel_review_refuses_a_thousand_levels_with_exit_2_and_no_traceback(review_cli, tmp_path, document):
    path = tmp_path / "deep.json"
    path.write_text(document)
    result = CliRunner().invoke(review_cli, ["review", str(path)])
    assert result.exit_code == 2
    assert "nested more than" in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, RecursionError)


def test_the_offline_guardrail_runner_refuses_deep_json_with_exit_2(tmp_path, capsys):
    from accel.policies.guardrails.offline import main

    path = tmp_path / "deep.json"
    path.write_text(nested(1000, "resources"))
    assert main([str(path)]) == 2
    assert "nested more than" in capsys.readouterr().err
