"""What a person reads names their own files: no command output speaks Python.

Every command's human output (choose over every example, plan and job over every stack, review of
the fixtures) is scanned for the components' Python class names and argument names; a user who
wrote YAML should see the stack key and the command that changes it instead.
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path

import pytest
from rich.console import Console

from accel.stack.words import STACK_WORDS, in_stack_words

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
REVIEW = ROOT / "tests" / "fixtures" / "review"


def _component_classes() -> list[type]:
    import accel.components as package

    classes = []
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        classes += [c for _, c in inspect.getmembers(module, inspect.isclass) if c.__module__ == module.__name__]
    return classes


def _user_keys() -> set[str]:
    """Names a user does write: workload fields (snake_case) and stack keys, at any depth."""
    from accel.policies.workload import WorkloadSpec
    from accel.stack.settings import StackSettings

    keys: set[str] = set()

    def walk(model) -> None:
        for name, field in getattr(model, "model_fields", {}).items():
            keys.add(name)
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                if isinstance(arg, type) and hasattr(arg, "model_fields") and arg is not model:
                    walk(arg)

    walk(WorkloadSpec)
    walk(StackSettings)
    return keys


def python_names() -> re.Pattern[str]:
    """Component argument classes (`GkeClusterArgs`, `ResourceTags(`) and their snake_case fields
    that are not also a key the user writes (`upgrade_pause` is; `max_chips` is the user's own)."""
    classes = [c for c in _component_classes() if c.__name__.endswith("Args") or c.__name__ == "ResourceTags"]
    user = _user_keys()
    fields = {name for c in classes for name in (getattr(c, "model_fields", None) or getattr(c, "__dataclass_fields__", {}))
              if "_" in name.strip("_") and name not in user}
    words = sorted({c.__name__ for c in classes} | fields, key=len, reverse=True)
    return re.compile(r"(?<![\w.:/-])(" + "|".join(map(re.escape, words)) + r")(?![\w-])")


@pytest.fixture(scope="module")
def forbidden() -> re.Pattern[str]:
    return python_names()


def _console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, color_system=None), buffer


def test_the_scan_finds_the_phrases_the_components_use(forbidden):
    assert forbidden.search("pause upgrades with GkeClusterArgs.upgrade_pause")
    assert forbidden.search("stamp it with ResourceTags(ephemeral=True)")
    assert not forbidden.search("set constraints.max_chips to raise it")


# What the components and the guardrail pack say (components/gcp/gpu.py, tpu.py; guardrails/rules/).
COMPONENT_PHRASES = [
    "pause upgrades for the run with GkeClusterArgs.upgrade_pause",
    'stamp the accel-expires-at (or accel-ttl) label: give the component ResourceTags(..., ephemeral=True, ttl="24h") '
    "(or expires_at=...) so",
    "give the component ResourceTags(..., owner=..., cost_center=...) "
    "(a resource of your own: stamp ResourceTags.gcp_labels() on it)",
    "give the component ResourceTags(..., owner=..., cost_center=...) "
    "(a resource of your own: stamp ResourceTags.aws_tags() on it)",
    "If the mount fails with a kernel-module error, set TrainingClusterArgs.plan.storage.filesystem to 'none'",
]


@pytest.mark.parametrize("phrase", COMPONENT_PHRASES)
def test_every_component_phrase_becomes_a_stack_key_or_what_the_program_does(phrase, forbidden):
    assert forbidden.search(phrase)
    translated = in_stack_words(phrase)
    assert not forbidden.search(translated), translated
    assert "accel:" in translated or "stack program" in translated


def test_each_translation_is_used_by_some_component_phrase():
    assert all(any(pattern.search(phrase) for phrase in COMPONENT_PHRASES) for pattern, _ in STACK_WORDS)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_choose_speaks_the_workload_file(example, forbidden):
    from accel.commands.choose import run

    out, buffer = _console()
    status, _ = _console()
    try:
        run(str(example), as_json=False, objective="cost", catalog_path=None, plot=None, write_stack=None,
            out=out, status=status)
    except Exception as error:  # noqa: BLE001 an infeasible example prints its error instead
        buffer.write(str(error))
    assert not forbidden.findall(buffer.getvalue())


def test_plan_and_job_speak_the_stack_file(planned_results, forbidden):
    from accel.commands.plan import render
    from accel.job.render import render as render_job
    from accel.job.service import job_of

    found = {}
    for name, result in planned_results.items():
        out, buffer = _console()
        render(result, out)
        generated = job_of(result)
        text = buffer.getvalue() + (render_job(generated, name, "Workload") if generated else "")
        if forbidden.findall(text):
            found[name] = sorted(set(forbidden.findall(text)))
    assert found == {}


def test_plan_warnings_name_the_stack_key_that_pauses_upgrades(planned_results):
    warnings = [w for r in planned_results.values() for w in r.warnings if "auto-upgrade" in w]
    assert warnings, "a GKE stack on a release channel warns about auto-upgrades"
    assert all("accel:upgradePause" in w and "pulumi config set" in w for w in warnings)


@pytest.mark.parametrize("preview", sorted(REVIEW.glob("preview_*.json")), ids=lambda p: p.stem)
def test_review_speaks_the_stack_file(preview, review_cli, forbidden, tmp_path):
    from typer.testing import CliRunner

    comment = tmp_path / "comment.md"
    result = CliRunner().invoke(review_cli, ["review", str(preview), "--plan", str(REVIEW / "plan_head.json"),
                                             "--base-plan", str(REVIEW / "plan_base.json"), "-o", str(comment)])
    assert result.exit_code == 0, result.output
    assert not forbidden.findall(comment.read_text() + result.output)
