"""What a run of `accel` loads, and the one-shot plan's garbage collector."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel import cli

ROOT = Path(__file__).resolve().parent.parent


def modules_after(*argv: str) -> set[str]:
    """The accel modules a fresh `accel ARGV...` process has imported when it exits."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules if m.startswith('accel')))))\n"
        f"sys.argv = ['accel', *{list(argv)!r}]\n"
        "from accel.cli import main\n"
        "main()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False)
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_a_command_loads_its_own_module_only(command):
    loaded = modules_after(command, "--help")
    own = cli.COMMANDS[command]
    assert own in loaded
    assert not (set(cli.COMMAND_MODULES) - {own}) & loaded


def test_choose_loads_neither_the_review_nor_the_reaper():
    loaded = modules_after("choose", "examples/llama-70b-pretrain.yaml")
    assert not {m for m in loaded if m.startswith(("accel.review", "accel.reaper", "accel.commands.reap"))}


def test_choose_without_write_stack_loads_no_round_trip_yaml():
    """ruamel.yaml costs a third of a choose's start-up; only --write-stack edits a stack file."""
    loaded = modules_after("choose", "examples/llama-70b-pretrain.yaml")
    assert "accel.stack.pin" not in loaded


def validators_built_by_a_choose(cache_dir: Path) -> dict:
    """The pydantic models whose validator a fresh `accel choose` built, and whether it loaded
    importlib.metadata (pydantic's plugin lookup, which the first validator built loads)."""
    script = (
        "import atexit, json, sys\n"
        "def report():\n"
        "    import pydantic\n"
        "    from pydantic._internal._mock_val_ser import MockValSer\n"
        "    def walk(cls):\n"
        "        for sub in cls.__subclasses__():\n"
        "            yield sub\n"
        "            yield from walk(sub)\n"
        "    built = sorted({m.__name__ for m in walk(pydantic.BaseModel)\n"
        "                    if not isinstance(m.__dict__.get('__pydantic_validator__'), MockValSer)})\n"
        "    print(json.dumps({'built': built, 'metadata': 'importlib.metadata' in sys.modules}))\n"
        "atexit.register(report)\n"
        "sys.argv = ['accel', 'choose', 'examples/llama-70b-pretrain.yaml']\n"
        "from accel.cli import main\n"
        "main()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False,
                            env={**os.environ, "ACCEL_CACHE_DIR": str(cache_dir)})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_warm_choose_builds_no_validator(tmp_path):
    """What a warm choose reads was validated when it was cached, and what the search computes is assembled
    without validation (model_construct): no validator is built, so pydantic's plugin lookup never loads
    (issue #25). The first run, with an empty cache, validates the catalog: the check sees a build."""
    cold = validators_built_by_a_choose(tmp_path)
    assert "Catalog" in cold["built"] and cold["metadata"]
    warm = validators_built_by_a_choose(tmp_path)
    assert warm == {"built": [], "metadata": False}


def test_a_warm_choose_never_loads_pyyaml(tmp_path):
    """A warm choose reads the workload, the catalog and the mode table back from the derived-data cache; only a
    miss parses YAML, so PyYAML (~7 ms of a warm choose's ~0.17 s of CPU) is imported where a file is parsed."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'yaml'\n"
        "                                                or m == 'accel.base.yaml_files'))))\n"
        "sys.argv = ['accel', 'choose', 'examples/llama-70b-pretrain.yaml']\n"
        "from accel.cli import main\n"
        "main()\n")
    loaded = []
    for _run in ("cold", "warm"):
        result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                                check=False, env={**os.environ, "ACCEL_CACHE_DIR": str(tmp_path)})
        assert result.returncode == 0, result.stderr
        loaded.append(json.loads(result.stdout.strip().splitlines()[-1]))
    cold, warm = loaded
    assert "yaml" in cold and "accel.base.yaml_files" in cold   # the check sees an import when there is one
    assert warm == []


def test_the_models_a_choose_defines_have_their_annotations_evaluated_as_written(tmp_path):
    """A field annotation kept as a string (`from __future__ import annotations`) is compiled by pydantic when
    its model is defined: ~3 ms of a warm choose over its ~50 models. The modules of the models a warm choose
    defines write them evaluated."""
    script = (
        "import atexit, json, sys\n"
        "def report():\n"
        "    import pydantic\n"
        "    def walk(cls):\n"
        "        for sub in cls.__subclasses__():\n"
        "            yield sub\n"
        "            yield from walk(sub)\n"
        "    print(json.dumps(sorted({f'{m.__module__}.{m.__qualname__}' for m in walk(pydantic.BaseModel)\n"
        "                             if m.__module__.startswith('accel')\n"
        "                             and any(isinstance(a, str) for a in vars(m).get('__annotations__', {}).values())})))\n"
        "atexit.register(report)\n"
        "sys.argv = ['accel', 'choose', 'examples/llama-70b-pretrain.yaml']\n"
        "from accel.cli import main\n"
        "main()\n")
    for run in ("cold", "warm"):  # the warm run's: a cold one also defines the published-run tables' models
        result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                                check=False, env={**os.environ, "ACCEL_CACHE_DIR": str(tmp_path)})
        assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_help_lists_every_command():
    result = subprocess.run([sys.executable, "-m", "accel.cli", "--help"], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    for command in cli.COMMANDS:
        assert f" {command} " in result.stdout


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"], ["chose", "x.yaml"], ["--help", "plan"]])
def test_no_command_or_an_unknown_one_loads_every_command(argv):
    assert cli.modules_for(argv) == cli.COMMAND_MODULES


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_the_first_argument_names_the_module(command):
    assert cli.modules_for([command, "--json"]) == (cli.COMMANDS[command],)


def test_the_program_runs_with_the_collector_off_and_it_is_back_on_after(monkeypatch):
    from accel import offline_plan

    seen: list[bool] = []
    real_run_program = offline_plan.run_program

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_run_program(*args, **kwargs)

    monkeypatch.setattr(offline_plan, "run_program", recording)
    gc.enable()
    result = offline_plan.plan_stack("llama-70b-tpu", None, ROOT)
    assert result.capture.resources
    assert seen == [False]
    assert gc.isenabled()


def test_a_plan_leaves_a_disabled_collector_disabled():
    from accel.offline_plan import plan_stack

    gc.disable()
    try:
        plan_stack("llama-70b-tpu", None, ROOT)
        assert not gc.isenabled()
    finally:
        gc.enable()


def run_reporting_the_collector(argv: list[str]) -> subprocess.CompletedProcess:
    """`accel ARGV` in a fresh process that prints, as it exits, whether the cyclic collector is on."""
    script = ("import atexit, gc, sys\n"
              "atexit.register(lambda: print('collector', gc.isenabled()))\n"
              f"sys.argv = {['accel', *argv]!r}\n"
              "from accel.cli import main\n"
              "main()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result


def test_choose_runs_with_the_collector_off():
    result = run_reporting_the_collector(["choose", "examples/llama-70b-pretrain.yaml", "--json"])
    assert result.stdout.strip().splitlines()[-1] == "collector False"


@pytest.mark.parametrize("command", sorted(cli.WITHOUT_PYDANTIC_PLUGINS))
def test_offline_one_shot_commands_skip_the_pydantic_plugin_lookup(command, monkeypatch):
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    monkeypatch.setattr(gc, "disable", lambda: None)  # keep this test process's collector as it is
    cli.prepare_process([command, "--json"])
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"


def test_a_users_pydantic_plugin_setting_wins(monkeypatch):
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "")  # set but empty: pydantic loads every plugin
    monkeypatch.setattr(gc, "disable", lambda: None)
    cli.prepare_process(["plan"])
    assert os.environ["PYDANTIC_DISABLE_PLUGINS"] == ""


@pytest.mark.parametrize("command", sorted(set(cli.COMMANDS) - cli.WITHOUT_PYDANTIC_PLUGINS))
def test_other_commands_keep_the_users_environment(command, monkeypatch):
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    cli.prepare_process([command])
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ


def test_plan_runs_with_the_collector_off_from_start_to_exit():
    """Switched back on after the program, the collector's first collection is a full one over the
    provider SDKs' whole heap, while the report renders (~0.2 s of a TPU plan)."""
    result = run_reporting_the_collector(["plan", "-s", "llama-70b-tpu", "--json"])
    assert result.stdout.strip().splitlines()[-1] == "collector False"
    assert "Exception ignored" not in result.stderr  # nothing left for a collector that never runs to finalize


def report_of(result) -> tuple[str, str]:
    """`accel plan`'s human report (at the piped width) and its --json, as the command prints them.
    The program's warnings are logged from the mock engine's thread pool, in an order that varies
    from run to run whatever the collector does; they are compared in a fixed order."""
    import dataclasses
    import io

    from rich.console import Console

    from accel.commands.plan import PIPED_WIDTH, render

    result = dataclasses.replace(result, warnings=sorted(result.warnings),
                                 provider_load_seconds={})  # timings, not the plan
    text = io.StringIO()
    render(result, Console(file=text, width=PIPED_WIDTH, force_terminal=False, color_system=None))
    return text.getvalue(), json.dumps(result.to_json(), indent=2, default=str)


@pytest.mark.parametrize("stack", sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml")
                                         for p in (ROOT / "stacks").glob("Pulumi.*.yaml")))
def test_a_plan_without_the_collector_reports_what_a_plan_with_it_does(stack, planned_results):
    from accel.offline_plan import plan_stack

    gc.disable()
    try:
        without = plan_stack(stack, None, ROOT)
    finally:
        gc.enable()
    assert report_of(without) == report_of(planned_results[stack])


def test_other_commands_keep_the_collector():
    assert {"choose", "plan"} <= cli.WITHOUT_COLLECTOR
    assert not {"review", "reap", "destroy-after-run"} & cli.WITHOUT_COLLECTOR
