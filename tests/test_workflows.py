"""The GitHub workflows, README's set-up commands and .ci/run: linted, current, least privilege,
bytecode compiled, and a preview that works for a stack the backend does not have yet."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW_FILES = sorted(WORKFLOWS.glob("*.yml"))
BIN = Path(sys.executable).parent


def workflow(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def steps(path: Path):
    for job_name, job in workflow(path)["jobs"].items():
        for step in job.get("steps", []):
            yield job_name, step


def linter(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: it is a dev dependency (uv sync --frozen)")
    return found


def test_workflows_exist():
    assert {p.name for p in WORKFLOW_FILES} >= {"preview.yml", "reap.yml", "tests.yml"}


def test_actionlint_passes_on_every_workflow():
    # actionlint knows the popular actions' inputs and runtimes: a node20 action is an error.
    result = subprocess.run([linter("actionlint"), "-no-color", *map(str, WORKFLOW_FILES)],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing_offline():
    result = subprocess.run([linter("zizmor"), "--offline", "--no-progress", "--config",
                             str(ROOT / ".github" / "zizmor.yml"), str(WORKFLOWS)],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_workflow_grants_nothing_by_default(path):
    assert workflow(path).get("permissions") == {}


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_job_names_its_permissions_and_a_timeout(path):
    for name, job in workflow(path)["jobs"].items():
        assert "permissions" in job, f"{path.name}: job {name} has no permissions of its own"
        assert isinstance(job.get("timeout-minutes"), int), f"{path.name}: job {name} has no timeout"


def test_only_the_comment_job_may_write_to_pull_requests():
    writers = [name for name, job in workflow(WORKFLOWS / "preview.yml")["jobs"].items()
               if (job.get("permissions") or {}).get("pull-requests") == "write"]
    assert writers == ["comment"]
    assert all("run" in step or step["uses"].startswith("actions/download-artifact@")
               for _job, step in steps(WORKFLOWS / "preview.yml") if _job == "comment"), \
        "the job that can write to the PR must not check out or run the PR's code"


# Each action pinned to the commit of the newest release of its current major (all on node24; see
# the comment at the top of preview.yml). The commits were read 2026-11-26 from each action's own
# repository: `git rev-parse vX.Y.Z^{commit}` (and the floating `vX` tag pointed at the same one).
# To check or move a pin: `git ls-remote https://github.com/OWNER/ACTION refs/tags/vX.Y.Z^{}`.
PINNED = {
    "actions/checkout": ("v6.1.0", "d23441a48e516b6c34aea4fa41551a30e30af803"),
    "actions/setup-python": ("v6.3.0", "ece7cb06caefa5fff74198d8649806c4678c61a1"),
    "actions/upload-artifact": ("v7.0.0", "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f"),
    "actions/download-artifact": ("v7.0.0", "37930b1c2abaa49bbe596cd826c3c89aef350131"),
    "astral-sh/setup-uv": ("v7.6.0", "37802adc94f370d6bfd71619e3f0bf239e1f3b78"),
    "pulumi/actions": ("v7.0.0", "8e5e406f4007fca908480587cb9893c07090f58d"),
    "google-github-actions/auth": ("v3.0.0", "7c6bc770dae815cd3e89ee6cdf493a5fab2cc093"),
    "google-github-actions/setup-gcloud": ("v3.0.1", "aa5489c8933f4cc7a4f7d45035b3b1440c9c10db"),
    "aws-actions/configure-aws-credentials": ("v6.2.3", "e6de054238d6b7531b4efff3b6587d9aade6a06c"),
}


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_actions_are_pinned_to_the_commit_of_their_reviewed_release(path):
    text = path.read_text(encoding="utf-8")
    for job, step in steps(path):
        if "uses" not in step:
            continue
        action, _, ref = step["uses"].partition("@")
        assert action in PINNED, f"{path.name}/{job}: {action} is not a reviewed action"
        tag, commit = PINNED[action]
        assert ref == commit, f"{path.name}/{job}: {step['uses']} is not pinned to {tag}'s commit"
        assert re.search(rf"uses: {re.escape(action)}@{commit}  # {re.escape(tag)}\b", text), \
            f"{path.name}/{job}: say which release the commit is ({tag}) in a comment"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_pulumi_is_installed_by_its_action_at_the_locked_sdk_version(path):
    text = path.read_text(encoding="utf-8")
    assert "get.pulumi.com" not in text and "curl" not in text
    for job, step in steps(path):
        if step.get("uses", "").startswith("pulumi/actions@"):
            assert step["with"] == {"pulumi-version-file": ".pulumi-version"}, f"{path.name}/{job}"
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    sdk = next(p["version"] for p in lock["package"] if p["name"] == "pulumi")
    assert (ROOT / ".pulumi-version").read_text(encoding="utf-8").strip() == sdk


def test_setup_uv_pins_one_exact_version_everywhere():
    versions = {step["with"]["version"] for path in WORKFLOW_FILES for _job, step in steps(path)
                if step.get("uses", "").startswith("astral-sh/setup-uv@")}
    assert len(versions) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", versions.pop())


def readme_commands() -> dict[str, str]:
    """README's two set-up commands, by their comment line."""
    block = re.search(r"## Two commands.*?```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"),
                      re.S).group(1)
    lines = [line for line in block.splitlines() if line.strip()]
    return {lines[i]: lines[i + 1] for i in range(0, len(lines), 2)}


def test_ci_runs_readmes_test_command_exactly():
    commands = readme_commands()
    assert len(commands) == 2
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line and not line.startswith("#")]
    assert ci[-1] == commands["# The tests"]


# Stand-ins for python3 and uv: each records what it was run with and in which environment, then
# `uv run` exits with $PYTEST_EXIT as pytest would.
FAKE_TOOL = """#!/usr/bin/env bash
{
  echo "$(basename "$0") $*"
  for name in HOME UV_CACHE_DIR UV_PROJECT_ENVIRONMENT; do
    value="${!name}"
    if [ -d "$value" ]; then state="dir:$(ls -A "$value" | wc -l)"; elif [ -e "$value" ]; then state=file; else state=absent; fi
    echo "  $name=$value $state"
  done
} >> "$RECORD"
[ "$(basename "$0") $1" = "uv run" ] && exit "$PYTEST_EXIT"
exit 0
"""


def run_ci_with_fake_tools(tmp_path: Path, pytest_exit: int) -> tuple[int, list[str]]:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir(exist_ok=True)
    for tool in ("python3", "uv"):
        (fake_bin / tool).write_text(FAKE_TOOL, encoding="utf-8")
        (fake_bin / tool).chmod(0o755)
    record = tmp_path / f"record-{pytest_exit}"
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "RECORD": str(record),
           "PYTEST_EXIT": str(pytest_exit), "TMPDIR": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60)
    return done.returncode, record.read_text(encoding="utf-8").splitlines()


def test_ci_starts_from_an_empty_home_uv_cache_and_virtualenv_and_removes_them(tmp_path):
    code, record = run_ci_with_fake_tools(tmp_path, 0)
    assert code == 0
    commands = [line for line in record if not line.startswith("  ")]
    assert commands == ["python3 -m pip install -q uv", "uv sync --frozen --compile-bytecode", "uv run --no-sync pytest"]
    places = {line.split("=", 1)[0].strip(): line.split("=", 1)[1].split() for line in record[1:4]}
    assert places["HOME"][1] == "dir:0", "HOME is not an empty directory"
    assert places["UV_CACHE_DIR"][1] == "absent" and places["UV_PROJECT_ENVIRONMENT"][1] == "absent"
    scratch = {Path(path).parent for path, _state in places.values()}
    assert len(scratch) == 1 and scratch.pop().parent == tmp_path, "not one fresh temporary directory"
    assert [p for p in tmp_path.iterdir() if p.name not in ("bin", "record-0")] == [], "left behind"


@pytest.mark.parametrize("pytest_exit", [1, 2, 5])
def test_ci_fails_when_pytest_fails_or_finds_no_tests(tmp_path, pytest_exit):
    code, _record = run_ci_with_fake_tools(tmp_path, pytest_exit)
    assert code == pytest_exit
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", f"record-{pytest_exit}"], "left behind"


def uv_syncs() -> list[tuple[str, str]]:
    found = [("README", command) for command in readme_commands().values()]
    found += [(".ci/run", (ROOT / ".ci" / "run").read_text(encoding="utf-8"))]
    found += [(path.name, step["run"]) for path in WORKFLOW_FILES for _job, step in steps(path) if "run" in step]
    return [(where, text) for where, text in found if re.search(r"\buv (sync|run)\b", text)]


def test_every_install_compiles_bytecode_and_no_run_resyncs():
    # `uv run` that syncs with compile-bytecode on re-checks every installed file each time
    # (astral-sh/uv#12202): sync once, compiled, then run without syncing.
    assert uv_syncs()
    for where, text in uv_syncs():
        for sync in re.findall(r"uv sync[^\n&|;)]*", text):
            assert "--compile-bytecode" in sync, f"{where}: {sync}"
        for run in re.findall(r"uv run[^\n&|;)]*", text):
            assert "--no-sync" in run, f"{where}: {run}"


FAKE_PULUMI = """#!/usr/bin/env bash
# A Pulumi CLI whose backend is a directory of stack names.
backend="$FAKE_BACKEND"
case "$1 $2" in
  "stack select")
    if [ "$3" = "--create" ]; then touch "$backend/$4"; exit 0; fi
    [ -f "$backend/$3" ] || { echo "error: no stack named '$3' found" >&2; exit 255; }; exit 0 ;;
  "stack init") touch "$backend/$3"; exit 0 ;;
esac
if [ "$1" = preview ]; then
  [ -f "$backend/$3" ] || { echo "error: no stack named '$3' found" >&2; exit 255; }
  echo '{"steps": [{"op": "create", "urn": "urn:pulumi:'"$3"'::accel::pulumi:pulumi:Stack::accel-'"$3"'"}]}'
  exit 0
fi
echo "unexpected: $*" >&2; exit 2
"""


def test_preview_of_a_stack_the_backend_does_not_have_previews_a_create(tmp_path):
    step = next(step for _job, step in steps(WORKFLOWS / "preview.yml") if step.get("id") == "preview")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    pulumi = fake_bin / "pulumi"
    pulumi.write_text(FAKE_PULUMI, encoding="utf-8")
    pulumi.chmod(pulumi.stat().st_mode | stat.S_IEXEC)
    backend = tmp_path / "backend"
    backend.mkdir()
    output = tmp_path / "github_output"
    env = {**os.environ, "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "FAKE_BACKEND": str(backend),
           "PULUMI_STACK": "brand-new", "GITHUB_OUTPUT": str(output)}
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, check=True, capture_output=True)
    assert output.read_text(encoding="utf-8").strip() == "exit=0"
    preview = yaml.safe_load((tmp_path / "preview.json").read_text(encoding="utf-8"))
    assert [s["op"] for s in preview["steps"]] == ["create"]


def test_the_review_fails_on_any_refusal_accel_plan_reports():
    """accel plan exits 2 when the stack or its job would be refused, 3 when nothing is feasible and 4 on a
    mandatory guardrail (docs/plan.md): the pull request's review fails on each, not on 4 alone."""
    gate = next(step for _job, step in steps(WORKFLOWS / "preview.yml") if step.get("name", "").startswith("Fail on"))
    condition = gate["if"]
    # The condition is evaluated as Actions would for every outcome (each step writes exit=$? to its outputs): only
    # this grammar (step outputs compared to quoted strings, joined by || and &&) is read, anything else is refused.
    assert re.fullmatch(r"(\s*steps\.(preview|plan)\.outputs\.exit\s*[!=]=\s*'\d'\s*(\|\||&&)?)+", condition), condition
    for preview in ("0", "1", "255"):
        for plan in ("0", "1", "2", "3", "4"):
            outputs = {"preview": preview, "plan": plan}
            expression = re.sub(r"steps\.(preview|plan)\.outputs\.exit", lambda m: repr(outputs[m.group(1)]), condition)
            fails = eval(expression.replace("||", " or ").replace("&&", " and "), {"__builtins__": {}})  # noqa: S307
            assert fails == (preview != "0" or plan != "0"), (preview, plan)
