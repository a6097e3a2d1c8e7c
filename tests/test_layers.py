"""The layers: accel.base at the bottom, then accel.policies, then accel.components, then the
command line. A module may import its own layer and the layers below, never one above."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = {"base": ROOT / "accel" / "base", "policies": ROOT / "policies", "components": ROOT / "components"}
# What each layer may import from accel.
ALLOWED = {
    "base": ("accel.base",),
    "policies": ("accel.base", "accel.policies"),
    "components": ("accel.base", "accel.policies", "accel.components"),
}


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if ".venv" not in p.parts)


@pytest.mark.parametrize("layer", sorted(LIBRARY))
def test_a_layer_imports_only_itself_and_the_layers_below(layer):
    wrong = [f"{path.relative_to(ROOT)} imports {name}"
             for path in python_files(LIBRARY[layer]) for name in imported_modules(path)
             if (name == "accel" or name.startswith("accel.")) and not name.startswith(ALLOWED[layer])]
    assert not wrong, wrong


def test_the_library_is_imported_by_its_one_top_level_name():
    """`components` and `policies` are accel.components and accel.policies: a user's own
    components/ folder must not collide with them."""
    sources = [*python_files(ROOT / "accel"), *python_files(ROOT / "components"), *python_files(ROOT / "policies"),
               *python_files(ROOT / "tests"), *python_files(ROOT / "benchmarks"), ROOT / "__main__.py"]
    bare = [f"{path.relative_to(ROOT)} imports {name}" for path in sources for name in imported_modules(path)
            if name.split(".")[0] in ("components", "policies")]
    assert not bare, bare
