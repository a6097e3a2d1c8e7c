import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import harness, shared  # noqa: E402
from accel.offline_plan import plan_stack as _REAL_PLAN_STACK  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def shared_between_workers(tmp_path_factory):
    """The stacks' plans are built once per run and shared by pytest-xdist's workers (tests/shared.py)."""
    shared.share_within(shared.run_dir_of(tmp_path_factory.getbasetemp()))
    yield
    shared.share_within(None)


@pytest.fixture(scope="session", autouse=True)
def derived_data_cache(tmp_path_factory):
    """The suite (and every command it runs in a subprocess) keeps derived data in a cache of its
    own, never in the user's: accel.base.derived_cache reads ACCEL_CACHE_DIR."""
    import os

    previous = os.environ.get("ACCEL_CACHE_DIR")
    os.environ["ACCEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("derived-cache"))
    yield Path(os.environ["ACCEL_CACHE_DIR"])
    if previous is None:
        os.environ.pop("ACCEL_CACHE_DIR", None)
    else:
        os.environ["ACCEL_CACHE_DIR"] = previous


@pytest.fixture(params=harness.MODES)
def mode(request) -> str:
    """Run a component test once in preview mode and once in up mode."""
    return request.param


@pytest.fixture
def declare(mode):
    """declare(program) -> Capture, in the current mode."""
    def _declare(program, **kwargs):
        return harness.run(program, mode=mode, **kwargs)
    return _declare


@pytest.fixture(scope="module")
def review_cli():
    """A typer app with only the `review` command, for CliRunner."""
    import typer

    from accel.commands import review as review_command

    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """accel (test app with only the review command)."""

    review_command.register(app)
    return app


def _plan_bundled(stack: str):
    # The function itself, as imported when this module loaded: a test that patches accel.offline_plan.plan_stack
    # to read planned_result must not be what planned_result plans with (it would ask for its own plan).
    return _REAL_PLAN_STACK(stack, None, ROOT)


_planned: dict = {}  # {stack: PlanResult} kept by this process
_planning: set = set()  # the stacks this process is planning now


def planned_result(stack: str):
    """The PlanResult of the bundled stack `stack`, planned once per run (tests/shared.py) and kept
    once per test process (read it, never change it)."""
    if stack not in _planned:
        if stack in _planning:  # waiting on our own lock would hang: say why instead
            raise RuntimeError(f"planning {stack} asked for its own plan (accel.offline_plan.plan_stack patched "
                               "to read planned_result before the stack was planned)")
        _planning.add(stack)
        try:
            _planned[stack] = shared.shared_value(f"bundled-{stack}", functools.partial(_plan_bundled, stack))
        finally:
            _planning.discard(stack)
    return _planned[stack]


def bundled_stacks() -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


@pytest.fixture(scope="session")
def planned_results():
    """The PlanResult of every stack in stacks/, planned once per run: {stack: result}. Workers that
    ask at once split the stacks between them (tests/shared.py)."""
    names = bundled_stacks()
    todo = {f"bundled-{name}": functools.partial(_plan_bundled, name) for name in names if name not in _planned}
    for key, result in shared.shared_values(todo).items():
        _planned[key.removeprefix("bundled-")] = result
    return {name: _planned[name] for name in names}


@pytest.fixture(scope="session")
def planned_stacks(planned_results):
    """`accel plan --json` of every stack in stacks/, planned once per session: {stack: document}."""
    return {name: result.to_json() for name, result in planned_results.items()}


@pytest.fixture(scope="session")
def matrix_stacks(tmp_path_factory):
    """`accel plan --json` of a stack per capacity type and machine family (tests/capacity_matrix.py)."""
    from accel.offline_plan import plan_stack
    from tests.capacity_matrix import write_matrix_project

    project = (shared.directory() or tmp_path_factory.mktemp("matrix")) / "matrix-project"
    names = shared.shared_value("matrix-project", functools.partial(write_matrix_project, project, ROOT))
    results = shared.shared_values({f"matrix-{name}": functools.partial(plan_stack, name, None, project) for name in names})
    return {name: results[f"matrix-{name}"] for name in names}


@pytest.fixture(scope="module")
def a2_mega_catalog(tmp_path_factory):
    """The bundled catalog with an a2-megagpu-16g offering (the bundled catalog prices none; 16 A100 40GB a node):
    the A100 40GB rate of a2-highgpu-8g, a test figure only."""
    from accel.policies.catalog import load_catalog

    path = tmp_path_factory.mktemp("catalog") / "a2-mega.yaml"
    path.write_text("version: a2-mega-test\n"
                    "sources:\n  a2-mega-test: {title: \"test figure, not a price list\", as_of: 2026-11-27}\n"
                    "offerings:\n  - id: gcp-a2-megagpu-16g\n    like: gcp-a2-highgpu-8g\n"
                    "    machine_type: a2-megagpu-16g\n    on_demand: {usd: 2.93391, source: a2-mega-test}\n"
                    "    spot: null\n    regions: {us-central1: {zones: [us-central1-a]}}\n", encoding="utf-8")
    return load_catalog(path)


def every_stack_id() -> list[str]:
    """Bundled stacks and the capacity matrix: what the first-`up` tests walk."""
    from tests.capacity_matrix import MATRIX

    return bundled_stacks() + [f"matrix:{entry[0]}" for entry in MATRIX]


@pytest.fixture(scope="session")
def every_stack(planned_stacks, matrix_stacks):
    """{stack id: plan JSON} for every id of every_stack_id()."""
    return {**planned_stacks, **{f"matrix:{name}": result.to_json() for name, result in matrix_stacks.items()}}
