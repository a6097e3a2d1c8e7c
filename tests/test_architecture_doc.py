"""docs/architecture.md names only paths that exist: a move that leaves it behind fails here."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# A repository path: folders and a file or folder name (or a `*` pattern), optionally `:function` after a file.
PATH = re.compile(r"(?<![\w./<-])((?:accel|policies|components|docs|stacks|tests|examples|benchmarks)/[\w./*-]*"
                  r"|__main__\.py|pyproject\.toml|README\.md)")
# The facts the code reads: every data file beside the code, but the guardrail pack's own manifest and example.
FACT_FILES = [path for folder in ("accel", "policies", "components") for suffix in ("yaml", "toml", "csv")
              for path in (ROOT / folder).rglob(f"*.{suffix}") if "guardrails" not in path.parts]


def named_paths(text: str) -> list[str]:
    return sorted({match.rstrip(".,;:") for match in PATH.findall(text) if "<" not in match})


def exists(path: str) -> bool:
    return any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()


def fact_rule(text: str) -> str:
    """The doc's rule for where a new fact goes: its bullet and table, up to the next kind of thing."""
    return text[text.index("- **A fact**"):text.index("- **A decision**")]


def unnamed_fact_files(rule: str) -> list[str]:
    named = named_paths(rule)
    return [str(path.relative_to(ROOT)) for path in FACT_FILES
            if not any(path.match(str(ROOT / pattern)) for pattern in named)]


def test_every_path_the_architecture_doc_names_exists():
    paths = named_paths(DOC.read_text())
    assert len(paths) > 40  # the floors, the wings, where things go, and three data paths
    missing = [path for path in paths if not exists(path)]
    assert not missing, missing


def test_the_rule_for_a_new_fact_names_every_data_file_the_code_reads_facts_from():
    assert len(FACT_FILES) >= 10
    unnamed = unnamed_fact_files(fact_rule(DOC.read_text()))
    assert not unnamed, unnamed


def test_the_check_catches_a_path_that_does_not_exist():
    assert named_paths("see `policies/ranking.py:choose` and policies/selection/choose.py.") == [
        "policies/ranking.py", "policies/selection/choose.py"]
    assert not exists("policies/ranking.py")
    assert named_paths("rules in `policies/cloud/*.yml`") == ["policies/cloud/*.yml"]
    assert not exists("policies/cloud/*.yml") and exists("policies/cloud/*.yaml")


def test_a_data_file_the_fact_rule_does_not_name_is_caught():
    rule = fact_rule(DOC.read_text()).replace("`accel/job/runtime.yaml`", "the job's table")
    assert unnamed_fact_files(rule) == ["accel/job/runtime.yaml"]
