"""The project as another team uses it: installed into a fresh virtualenv, not run from this checkout.

- The README's "Use the components in your own Pulumi program" block runs as `__main__.py` of a fresh
  project that has its own `components/` and `policies/` folders, on Pulumi's mocks.
- The guardrail pack copied alone, with only what its requirements.txt installs, loads its policies.

Nothing is taken from what an earlier install left in uv's cache, so a fresh machine (and CI, whose
caches start empty) passes as a warm one does. The wheel is built from this checkout with the build
backend README's set-up installed (hatchling, in the locked dev group: `uv build --no-build-isolation
--offline`) and installed with `--no-deps --offline`. The third-party dependencies come from this test
run's own environment through a `.pth` file that lists them one by one (never this checkout, never the
project's own editable install). The pack's requirements name accel by a direct git reference (the
PyPI name `accel` is someone else's); the test installs those very lines with only that reference's
URL swapped for the wheel built here, and the others from the package index at the versions this
environment has (the locked ones).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SECTION = "## Use the components in your own Pulumi program"

pytestmark = pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build and install the wheel")


def _uv(*args: str, venv: Path | None = None) -> None:
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
    done = subprocess.run(["uv", *args], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, f"uv {' '.join(args)} exited {done.returncode}:\n{done.stderr}"


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _uv("build", "--wheel", "--no-build-isolation", "--offline", "--python", sys.executable, "-q", "-o", str(out))
    assert len(list(out.glob("accel-*.whl"))) == 1
    return out


@pytest.fixture(scope="module")
def dependencies(tmp_path_factory) -> Path:
    """This environment's third-party packages, minus accel itself: a directory of symlinks."""
    site = Path(sysconfig.get_paths()["purelib"])
    mirror = tmp_path_factory.mktemp("deps")
    for entry in site.iterdir():
        if entry.name == "accel" or entry.name.startswith(("accel-", "_editable_impl_accel", "__editable__")):
            continue
        if entry.suffix == ".pth":
            continue
        (mirror / entry.name).symlink_to(entry)
    return mirror


def _fresh_venv(path: Path, dependencies: Path) -> Path:
    _uv("venv", "-q", "--python", sys.executable, str(path))
    python = path / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    Path(purelib, "_dependencies.pth").write_text(f"{dependencies}\n")
    return python


def _run(python: Path, code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd, env=env)


def requirement_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def accel_reference(path: Path) -> Requirement:
    """The one line of `path` that installs accel."""
    [accel] = [r for r in map(Requirement, requirement_lines(path)) if r.name == "accel"]
    return accel


def with_local_accel(path: Path, wheel: Path) -> list[str]:
    """`path`'s requirement lines, the accel reference pointing at `wheel` instead of the git host."""
    return [f"accel @ {wheel.as_uri()}" if Requirement(line).name == "accel" else line
            for line in requirement_lines(path)]


def pinned_here(lines: list[str]) -> list[str]:
    """A constraint `name==version` for each requirement but accel: the version installed in this
    environment (README's set-up installs the locked one), which must satisfy the requirement."""
    from importlib.metadata import version

    pins = []
    for requirement in map(Requirement, lines):
        if requirement.name == "accel":
            continue
        installed = version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), (requirement, installed)
        pins.append(f"{requirement.name}=={installed}")
    return pins


def test_the_pack_requirements_name_accel_by_a_git_reference_to_the_release_tag_never_by_an_index_version():
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    accel = accel_reference(ROOT / "policies" / "guardrails" / "requirements.txt")
    assert accel.url is not None, "a bare `accel` resolves to the unrelated PyPI project of that name"
    assert accel.url.startswith("git+https://")
    assert accel.url.rsplit("@", 1)[-1] == f"v{version}"


def readme_first_python_block() -> str:
    text = README.read_text()
    assert SECTION in text, f"README.md lacks the section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, "the section has no python code block"
    return block.group(1)


RUN_UNDER_MOCKS = """
    import json, runpy, sys
    sys.path.insert(0, ".")                 # as Pulumi runs a program: its directory first
    import accel
    from accel.mock_engine import run_program
    capture = run_program(lambda: runpy.run_path("__main__.py", run_name="__main__"), project="user", stack="dev")
    import components.tags, policies         # the project's own folders still import
    print(json.dumps({"accel": accel.__file__, "types": [r.type for r in capture.resources],
                      "user_components": components.tags.__file__, "user_policies": policies.__file__,
                      "outputs": sorted(capture.outputs)}))
"""


def test_readme_program_runs_in_a_fresh_project_with_its_own_components_and_policies(tmp_path, wheel_dir, dependencies):
    python = _fresh_venv(tmp_path / "venv", dependencies)
    _uv("pip", "install", "-q", "--offline", "--no-deps", str(next(wheel_dir.glob("accel-*.whl"))),
        venv=tmp_path / "venv")
    project = tmp_path / "project"
    for folder in ("components", "policies"):
        (project / folder).mkdir(parents=True)
        (project / folder / "__init__.py").write_text(f'"""The user\'s own {folder}."""\n')
    (project / "components" / "tags.py").write_text("TEAM = 'ml-platform'\n")
    (project / "Pulumi.yaml").write_text("name: user\nruntime: python\n")
    (project / "__main__.py").write_text(readme_first_python_block())

    result = _run(python, RUN_UNDER_MOCKS, project)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert Path(report["accel"]).is_relative_to(tmp_path / "venv"), "accel came from the checkout, not the install"
    assert Path(report["user_components"]) == project / "components" / "tags.py"
    assert Path(report["user_policies"]) == project / "policies" / "__init__.py"
    assert "accel:gcp:TpuSlice" in report["types"]
    assert "accel:gcp:GpuNodePool" in report["types"]
    assert report["types"].count("gcp:container/nodePool:NodePool") >= 2


CAPTURE_PACK = """
    import json, runpy, sys
    import pulumi_policy
    made = []
    class Capture:  # PolicyPack(...) would start the analyzer's gRPC server and wait for the engine
        def __init__(self, name, policies, **kwargs):
            made.append({"name": name, "policies": [p.name for p in policies]})
    pulumi_policy.PolicyPack = Capture
    runpy.run_path("__main__.py", run_name="__main__")
    import accel
    print(json.dumps({**made[0], "accel": accel.__file__}))
"""


def test_the_guardrail_pack_copied_alone_loads_its_policies_from_its_requirements(tmp_path, wheel_dir, dependencies):
    from accel.policies.guardrails.rules import PACK_NAME, all_policies

    pack = tmp_path / "guardrails"
    shutil.copytree(ROOT / "policies" / "guardrails", pack, ignore=shutil.ignore_patterns("__pycache__"))
    python = _fresh_venv(tmp_path / "venv", dependencies)
    before = _run(python, CAPTURE_PACK, pack)
    assert before.returncode != 0 and "No module named 'accel'" in before.stderr, "accel importable before install"

    requirements = tmp_path / "requirements-local-accel.txt"
    requirements.write_text("\n".join(with_local_accel(pack / "requirements.txt",
                                                         next(wheel_dir.glob("accel-*.whl")))) + "\n")
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("\n".join(pinned_here(requirement_lines(pack / "requirements.txt"))) + "\n")
    _uv("pip", "install", "-q", "--no-deps", "-r", str(requirements), "-c", str(constraints), venv=tmp_path / "venv")
    result = _run(python, CAPTURE_PACK, pack)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert Path(loaded["accel"]).is_relative_to(tmp_path / "venv")
    assert loaded["name"] == PACK_NAME
    assert loaded["policies"] == [p.name for p in all_policies()]
