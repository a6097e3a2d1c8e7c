import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import harness  # noqa: E402


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


@functools.cache
def planned_result(stack: str):
    """The PlanResult of the bundled stack `stack`, planned once per test process (read it, never change it)."""
    from accel.offline_plan import plan_stack

    return plan_stack(stack, None, ROOT)


@pytest.fixture(scope="session")
def planned_results():
    """The PlanResult of every stack in stacks/, planned once per session: {stack: result}."""
    names = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    return {name: planned_result(name) for name in names}


@pytest.fixture(scope="session")
def planned_stacks(planned_results):
    """`accel plan --json` of every stack in stacks/, planned once per session: {stack: document}."""
    return {name: result.to_json() for name, result in planned_results.items()}


@pytest.fixture(scope="session")
def matrix_stacks(tmp_path_factory):
    """`accel plan --json` of a stack per capacity type and machine family (tests/capacity_matrix.py)."""
    from accel.offline_plan import plan_stack
    from tests.capacity_matrix import write_matrix_project

    project = tmp_path_factory.mktemp("matrix") / "project"
    names = write_matrix_project(project, ROOT)
    return {name: plan_stack(name, None, project) for name in names}


def every_stack_id() -> list[str]:
    """Bundled stacks and the capacity matrix: what the first-`up` tests walk."""
    from tests.capacity_matrix import MATRIX

    bundled = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    return bundled + [f"matrix:{entry[0]}" for entry in MATRIX]


@pytest.fixture(scope="session")
def every_stack(planned_stacks, matrix_stacks):
    """{stack id: plan JSON} for every id of every_stack_id()."""
    return {**planned_stacks, **{f"matrix:{name}": result.to_json() for name, result in matrix_stacks.items()}}
