"""`accel choose`'s options are declared once: the typer command and the quick parser agree.

A plain run is parsed without typer (accel/commands/choose_options.py); help, -h, completion and every
usage error still go through typer, and both parse the same arguments to the same values.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.main import get_command

from accel.cli import _register_commands, app
from accel.commands.choose_options import OPTIONS, plain_run

ROOT = Path(__file__).resolve().parent.parent
ACCEL = Path(sys.executable).with_name("accel")


def typer_choose():
    _register_commands(["accel.commands.choose"])
    return get_command(app).commands["choose"]  # type: ignore[attr-defined]


def test_the_typer_command_is_built_from_the_declarations():
    params = [p for p in typer_choose().params if p.name != "help"]
    assert [p.name for p in params] == [o.dest for o in OPTIONS]
    for param, option in zip(params, OPTIONS):
        assert tuple(o for o in param.opts if o.startswith("-")) == option.flags
        assert param.metavar in (option.metavar, "")  # flags show no metavar in help
        assert (param.default if option.flags else None) == option.default


ARGUMENT_LISTS = [
    ["w.yaml"],
    ["w.yaml", "--json"],
    ["--objective", "time", "w.yaml"],
    ["w.yaml", "--objective=time", "--catalog", "c.yaml", "--plot", "p.png", "--write-stack", "s",
     "--reservations", "r.yaml"],
    ["--json", "--", "w.yaml"],
    ["--write-stack=s", "w.yaml", "--json", "--plot=p.svg"],
    ["--objective", "cost", "--", "-w.yaml"],
    ["-"],
]


def typer_passes(args: list[str]) -> dict | None:
    """What typer's command hands `main` for these arguments, or None where it refuses them."""
    from typer import TyperException  # typer's usage errors (its own click)

    seen: dict = {}
    command = typer_choose()
    from accel.commands import choose as module

    original = module.main
    module.main = lambda **kwargs: seen.update(kwargs)
    try:
        command.main(list(args), standalone_mode=False)
    except TyperException:
        return None
    finally:
        module.main = original
    return seen


@pytest.mark.parametrize("args", ARGUMENT_LISTS, ids=" ".join)
def test_a_plain_run_parses_to_what_typer_passes(args):
    assert plain_run(args) == typer_passes(args)


NOISE = st.sampled_from(["x.yaml", "-", "--", "--json", "--json=yes", "--objective", "--catalog=", "-x", "-j",
                         "--nope", "--obj", ""])
VALUES = st.one_of(st.sampled_from(["time", "cost", "c.yaml", "p.png", "s"]),
                   st.sampled_from(["time", "c.yaml", "-", "-x", "--json", ""]))


@st.composite
def argument_lists(draw) -> list[str]:
    """Mostly plain command lines (the workload and some options, in any order, either spelling), with
    now and then a token typer would refuse or read its own way."""
    parts: list[list[str]] = [[draw(st.sampled_from(["w.yaml", "w.yaml", "-", "-w.yaml"]))]]
    for flag in draw(st.lists(st.sampled_from(["--json", "--objective", "--catalog", "--plot", "--write-stack",
                                              "--reservations"]), max_size=4, unique=True)):
        if flag == "--json":
            parts.append([flag])
        else:
            value = draw(VALUES)
            parts.append([f"{flag}={value}"] if draw(st.booleans()) else [flag, value])
    parts = draw(st.permutations(parts))
    args = [token for part in parts for token in part]
    if draw(st.integers(0, 3)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(NOISE))
    return args


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argument_lists())
def test_any_arguments_the_quick_parser_reads_are_read_as_typer_reads_them(args):
    """The quick parser may leave a run to typer (None), never read it differently from typer."""
    quick = plain_run(args)
    if quick is not None:
        assert quick == typer_passes(args)


@pytest.mark.parametrize("args", [["-h"], ["w.yaml", "--help"], ["w.yaml", "--nope"], [], ["a.yaml", "b.yaml"],
                                  ["w.yaml", "--objective"], ["w.yaml", "--obj", "time"], ["w.yaml", "-x"],
                                  ["w.yaml", "--json=yes"], ["w.yaml", "--json", "--json"],
                                  ["w.yaml", "--objective", "-x"], ["w.yaml", "--catalog="], ["--", "a.yaml", "b.yaml"]])
def test_help_and_anything_typer_would_refuse_is_left_to_typer(args):
    assert plain_run(args) is None


def test_completion_is_left_to_typer(monkeypatch):
    monkeypatch.setenv("_ACCEL_COMPLETE", "complete_bash")
    assert plain_run(["w.yaml"]) is None


@pytest.mark.skipif(not ACCEL.is_file(), reason="needs the installed accel script beside python")
@pytest.mark.parametrize("args,code,where,text", [
    (["choose", "-h"], 0, "stdout", "Usage: accel choose [OPTIONS] WORKLOAD.yaml"),
    (["choose", "examples/llama-70b-pretrain.yaml", "--nope"], 2, "stderr", "No such option"),
    (["choose"], 2, "stderr", "Missing argument"),
    (["choose", "examples/llama-70b-pretrain.yaml", "--objective", "fast"], 2, "stderr", "use one of cost, time"),
])
def test_the_command_line_keeps_its_help_errors_and_exit_codes(args, code, where, text):
    outcome = subprocess.run([str(ACCEL), *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "COLUMNS": "200"})
    assert outcome.returncode == code
    assert text in getattr(outcome, where)
