"""Property: no user-facing input, however wrong, produces a traceback or a zero exit.

Each input the command line reads (workload files, stack files, previews, plans, price files,
reap options) starts from a real, valid document; hypothesis then breaks it in a way that is
wrong by construction (an unknown key, a value of the wrong shape, a missing required key, a
duplicate key, a cut-off file) and runs the real command in-process. The command must exit
non-zero with an `error: ` line on stderr and no traceback.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from accel.cli import _register_commands, app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
REVIEW = ROOT / "tests" / "fixtures" / "review"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(*args: str):
    _register_commands()
    return CliRunner().invoke(app, list(args))


def assert_refused(result, *, stdout_json: bool = False) -> None:
    """Non-zero, the message on stderr, and nothing that is not an orderly exit."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert "error" in result.stderr.lower(), result.stderr


# --- breaking a valid document, wrong by construction -------------------------------------

def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a mapping (for adding keys) and to a leaf or list item (for replacing)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _get(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def _set(value: Any, path: tuple, new: Any) -> None:
    _get(value, path[:-1])[path[-1]] = new


_junk_key = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=3, max_size=12).map(lambda k: f"zz_{k}")


@st.composite
def unknown_key(draw, document: dict, *, under: tuple = ()) -> dict:
    """A key nobody reads, added to one of the document's mappings."""
    broken = copy.deepcopy(document)
    mappings = [p for p in _paths(_get(broken, under), under) if isinstance(_get(broken, p), dict)]
    path = draw(st.sampled_from(mappings))
    _get(broken, path)[draw(_junk_key)] = draw(st.one_of(st.integers(), st.text(max_size=5)))
    return broken


@st.composite
def leaf_as_mapping(draw, document: dict, *, under: tuple = ()) -> dict:
    """One scalar value replaced by a mapping: the wrong shape for every scalar field."""
    broken = copy.deepcopy(document)
    leaves = [p for p in _paths(_get(broken, under), under)
              if p != under and not isinstance(_get(broken, p), (dict, list))]
    _set(broken, draw(st.sampled_from(leaves)), {draw(_junk_key): draw(st.integers())})
    return broken


def duplicated_key(text: str, key: str, value: str) -> str:
    """The same top-level key twice; YAML alone would keep the second silently."""
    return f"{text.rstrip()}\n{key}: {value}\n"


# --- workload files -----------------------------------------------------------------------

WORKLOAD = yaml.safe_load((EXAMPLES / "llama-8b-finetune-cuda.yaml").read_text())


def _bad_workloads():
    required = st.sampled_from(["name", "kind", "model", "training"]).map(
        lambda key: {k: v for k, v in WORKLOAD.items() if k != key})
    return st.one_of(unknown_key(WORKLOAD), leaf_as_mapping(WORKLOAD), required).map(yaml.safe_dump)


@SETTINGS
@given(text=_bad_workloads())
def test_a_broken_workload_file_is_refused_without_a_traceback(tmp_path, text):
    path = tmp_path / "w.yaml"
    path.write_text(text)
    assert_refused(run("choose", str(path)))


@SETTINGS
@given(key=st.sampled_from(sorted(WORKLOAD)), json_output=st.booleans())
def test_a_workload_file_with_a_duplicate_key_is_refused_naming_it(tmp_path, key, json_output):
    path = tmp_path / "w.yaml"
    path.write_text(duplicated_key(yaml.safe_dump(WORKLOAD), key, json.dumps(WORKLOAD[key])))
    result = run("choose", str(path), *(["--json"] if json_output else []))
    assert_refused(result)
    assert f"duplicate key {key!r}" in result.stderr


# --- stack files (the real program on the mock engine) ------------------------------------

STACK = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())


def _bad_stacks():
    config = STACK["config"]
    no_tags = {k: v for k, v in config.items() if k != "pulumi:tags"}
    bad_ttl = st.text("abcxyz!? ", min_size=1, max_size=6).map(
        lambda ttl: {**config, "accel:ttl": ttl, "pulumi:tags": {**config["pulumi:tags"], "accel:ttl": ttl}})
    return st.one_of(
        unknown_key(STACK, under=("config", "accel:workload")),
        leaf_as_mapping(STACK, under=("config", "accel:workload")),
        _junk_key.map(lambda key: {**STACK, "config": {**config, f"accel:{key}": "x"}}),
        st.just({**STACK, "config": no_tags}),
        bad_ttl.map(lambda c: {**STACK, "config": c}),
    ).map(yaml.safe_dump)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_bad_stacks())
def test_a_broken_stack_file_is_refused_at_plan_time_without_a_traceback(tmp_path, text):
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(text)
    assert_refused(run("plan", "--config", str(path), "--cwd", str(ROOT)))


def test_the_issue_case_a_ttl_stack_without_stack_tags_is_refused_at_plan_time(tmp_path):
    config = {k: v for k, v in STACK["config"].items() if k != "pulumi:tags"}
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    result = run("plan", "--config", str(path), "--cwd", str(ROOT))
    assert_refused(result)
    assert result.exit_code == 2 and "pulumi:tags: missing accel:ephemeral: 'true'" in result.stderr


# --- previews and plans (accel review) ----------------------------------------------------

PREVIEW = json.loads((REVIEW / "preview_create.json").read_text())
PLAN = json.loads((REVIEW / "plan_head.json").read_text())


def _bad_previews():
    text = json.dumps(PREVIEW, indent=2)
    cut = st.integers(1, len(text) - 2).map(lambda n: text[:n])
    not_a_urn = st.tuples(st.integers(0, len(PREVIEW["steps"]) - 1), st.text("abc:/ ", max_size=10))

    def with_bad_urn(args: tuple[int, str]) -> str:
        index, junk = args
        broken = copy.deepcopy(PREVIEW)
        broken["steps"][index]["urn"] = f"not-a-urn{junk}"
        return json.dumps(broken)

    def steps_as(value: Any) -> str:
        return json.dumps({**PREVIEW, "steps": value})

    return st.one_of(cut, not_a_urn.map(with_bad_urn),
                     st.one_of(st.integers(), st.text(max_size=5), st.dictionaries(_junk_key, st.integers(),
                                                                                  max_size=2)).map(steps_as))


@SETTINGS
@given(text=_bad_previews())
def test_a_broken_preview_is_refused_without_a_traceback(tmp_path, text):
    path = tmp_path / "preview.json"
    path.write_text(text)
    assert_refused(run("review", str(path)))


def _bad_plans():
    text = json.dumps(PLAN)
    wrong_shape = st.one_of(st.integers(), st.text(max_size=5), st.dictionaries(_junk_key, st.integers(), max_size=2))
    return st.one_of(
        st.integers(1, len(text) - 2).map(lambda n: text[:n]),
        wrong_shape.map(lambda junk: json.dumps({**PLAN, "resources": junk})),
        st.dictionaries(_junk_key, st.integers(), min_size=1, max_size=2).map(
            lambda junk: json.dumps({**PLAN, "stack": junk})),
        st.lists(st.integers(), max_size=2).map(json.dumps),
    )


@SETTINGS
@given(text=_bad_plans())
def test_a_broken_plan_is_refused_without_a_traceback(tmp_path, text):
    path = tmp_path / "plan.json"
    path.write_text(text)
    assert_refused(run("review", str(REVIEW / "preview_create.json"), "--plan", str(path)))


@SETTINGS
@given(plan=st.one_of(leaf_as_mapping(PLAN, under=("plan",)), unknown_key(PLAN, under=("plan",))))
def test_any_reshaped_plan_is_rendered_or_refused_never_a_traceback(tmp_path, plan):
    # The review reads base plans written by older versions too, so it is lenient about fields it
    # does not render; whatever it does, it ends in order.
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = run("review", str(REVIEW / "preview_create.json"), "--plan", str(path))
    assert result.exit_code in (0, 2) and (result.exception is None or isinstance(result.exception, SystemExit))
    assert "Traceback" not in result.output


# --- price files (accel choose --catalog) -------------------------------------------------

PRICE_OVERRIDE = {"offering": "gcp-tpu-v5e", "on_demand": 1.2, "source": "our contract", "as_of": "2026-01-01"}


def _bad_price_overlays():
    document = {"prices": [PRICE_OVERRIDE]}
    bad_price = st.one_of(st.floats(max_value=-0.01), st.text("abc", min_size=1, max_size=4),
                          st.lists(st.integers(), min_size=1, max_size=2))
    return st.one_of(
        unknown_key(document),
        leaf_as_mapping(document),
        bad_price.map(lambda price: {"prices": [{**PRICE_OVERRIDE, "on_demand": price}]}),
        st.sampled_from(["offering", "source", "as_of"]).map(
            lambda key: {"prices": [{k: v for k, v in PRICE_OVERRIDE.items() if k != key}]}),
    ).map(yaml.safe_dump)


@SETTINGS
@given(text=_bad_price_overlays())
def test_a_broken_price_overlay_is_refused_without_a_traceback(tmp_path, text):
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    assert_refused(run("choose", str(EXAMPLES / "llama-8b-finetune-cuda.yaml"), "--catalog", str(path)))


_CSV_HEADER = "offering,region,on_demand_usd_per_chip_hour,spot_usd_per_chip_hour,source,as_of\n"


@SETTINGS
@given(price=st.one_of(st.text("abc-!", min_size=1, max_size=5), st.just("-3"), st.just("nan")),
       offering=st.sampled_from(["gcp-tpu-v5e", "gcp-tpu-v5ee", ""]))
def test_a_broken_price_csv_is_refused_without_a_traceback(tmp_path, price, offering):
    path = tmp_path / "prices.csv"
    path.write_text(_CSV_HEADER + f"{offering},,{price},,our contract,2026-01-01\n")
    assert_refused(run("choose", str(EXAMPLES / "llama-8b-finetune-cuda.yaml"), "--catalog", str(path)))


# --- reap options -------------------------------------------------------------------------

@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: accel\nruntime: python\n")
    return tmp_path


_not_a_time = st.text("abcdefxyz:-T ", min_size=1, max_size=12)
_not_a_duration = st.one_of(st.text("abcxyz-. ", min_size=1, max_size=6), st.just("0h"), st.just("-1h"))


@SETTINGS
@given(option=st.sampled_from(["--now", "--busy-limit", "--attempts", "--retry-delay"]), data=st.data(),
       json_output=st.booleans())
def test_a_bad_reap_option_is_exit_2_before_any_stack_is_touched(project, option, data, json_output):
    value = data.draw({"--now": _not_a_time, "--busy-limit": _not_a_duration,
                       "--attempts": st.integers(max_value=0).map(str),
                       "--retry-delay": st.floats(max_value=-0.001, allow_nan=False).map(str)}[option])
    result = run("reap", "--work-dir", str(project), option, value, *(["--json"] if json_output else []))
    assert_refused(result)
    assert result.exit_code == 2
    if json_output and option in ("--now", "--busy-limit"):
        assert json.loads(result.stdout)["error"]["kind"] == "invalid-input"


@SETTINGS
@given(name=st.text("abcdefghijklmnopqrstuvwxyz-_.", min_size=1, max_size=12).map(lambda n: f"no-such-{n}"))
def test_destroy_after_run_with_a_command_that_does_not_exist_is_refused(project, name):
    result = run("destroy-after-run", "-s", "train", "--work-dir", str(project), "--", name)
    assert_refused(result)
    assert result.exit_code == 127 and "command not found" in result.stderr
