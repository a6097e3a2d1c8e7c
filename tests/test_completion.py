"""`accel --install-completion` works for bash and zsh, and the installed scripts complete accel's commands.

Typer finds the shell from the process tree (shellingham), so each install runs under a parent
process named after the shell, with HOME in a temporary directory and SHELL set as a user's would be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ACCEL = Path(sys.executable).with_name("accel")
BASH = shutil.which("bash")
pytestmark = [pytest.mark.skipif(BASH is None, reason="needs bash to stand in as the user's shell"),
              pytest.mark.skipif(not ACCEL.is_file(), reason="needs the installed accel script beside python")]


def install(home: Path, shell: str) -> subprocess.CompletedProcess:
    parent = home / "bin" / shell   # a process named `shell`, as the user's terminal would be
    parent.parent.mkdir()
    shutil.copy(BASH, parent)
    env = {**os.environ, "HOME": str(home), "SHELL": f"/bin/{shell}"}
    env.pop("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", None)
    return subprocess.run([str(parent), "-c", f"'{ACCEL}' --install-completion; true"], env=env,
                          capture_output=True, text=True, timeout=60)


def complete(variable: str, value: str, style: str) -> str:
    env = {**os.environ, variable: value, "_ACCEL_COMPLETE": style}
    return subprocess.run([str(ACCEL)], env=env, capture_output=True, text=True, timeout=60).stdout


def test_bash_install_writes_a_script_and_sources_it_from_bashrc(tmp_path):
    outcome = install(tmp_path, "bash")
    assert outcome.returncode == 0, outcome.stderr
    script = tmp_path / ".bash_completions" / "accel.sh"
    assert "complete -o default -F _accel_completion accel" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()


def test_the_installed_bash_script_completes_command_names(tmp_path):
    install(tmp_path, "bash")
    script = tmp_path / ".bash_completions" / "accel.sh"
    env = {**os.environ, "PATH": f"{ACCEL.parent}{os.pathsep}{os.environ['PATH']}"}
    shown = subprocess.run([BASH, "-c", f"source '{script}'; COMP_WORDS=(accel ch); COMP_CWORD=1; "
                                         "_accel_completion accel; echo \"${COMPREPLY[@]}\""],
                           env=env, capture_output=True, text=True, timeout=60).stdout
    assert shown.split() == ["choose"]


def test_zsh_install_writes_a_compdef_and_adds_its_directory_to_fpath(tmp_path):
    outcome = install(tmp_path, "zsh")
    assert outcome.returncode == 0, outcome.stderr
    assert "#compdef accel" in (tmp_path / ".zfunc" / "_accel").read_text()
    assert "fpath+=~/.zfunc" in (tmp_path / ".zshrc").read_text()


def test_zsh_completion_offers_a_commands_options():
    offered = complete("_TYPER_COMPLETE_ARGS", "accel choose --ob", "complete_zsh")
    assert "--objective" in offered
