"""docs/architecture.md names only paths that exist: a move that leaves it behind fails here."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
# A repository path: folders and a file or folder name, optionally `:function` after a file.
PATH = re.compile(r"(?<![\w./<-])((?:accel|policies|components|docs|stacks|tests|examples|benchmarks)/[\w./-]*|__main__\.py"
                  r"|pyproject\.toml|README\.md)")


def named_paths(text: str) -> list[str]:
    return sorted({match.rstrip(".,;:") for match in PATH.findall(text) if "<" not in match})


def test_every_path_the_architecture_doc_names_exists():
    paths = named_paths(DOC.read_text())
    assert len(paths) > 40  # the floors, the wings, where things go, and three data paths
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert not missing, missing


def test_the_check_catches_a_path_that_does_not_exist():
    assert named_paths("see `policies/ranking.py:choose` and policies/selection/choose.py.") == [
        "policies/ranking.py", "policies/selection/choose.py"]
    assert not (ROOT / "policies" / "ranking.py").exists()
