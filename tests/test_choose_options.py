"""`accel choose`'s options are declared once: the typer command and the quick argparse parser agree.

A plain run is parsed without typer (accel/commands/choose_options.py); help, -h, completion and every
usage error still go through typer, and both parse the same arguments to the same values.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
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
]


@pytest.mark.parametrize("args", ARGUMENT_LISTS, ids=" ".join)
def test_a_plain_run_parses_to_what_typer_passes(args):
    seen = {}
    command = typer_choose()
    from accel.commands import choose as module

    original = module.main
    module.main = lambda **kwargs: seen.update(kwargs)
    try:
        command.main(args, standalone_mode=False)
    finally:
        module.main = original
    assert plain_run(args) == seen


@pytest.mark.parametrize("args", [["-h"], ["w.yaml", "--help"], ["w.yaml", "--nope"], [], ["a.yaml", "b.yaml"],
                                  ["w.yaml", "--objective"], ["w.yaml", "--obj", "time"], ["w.yaml", "-x"],
                                  ["w.yaml", "--json=yes"]])
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
