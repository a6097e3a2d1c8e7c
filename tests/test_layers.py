"""The floors and wings of docs/architecture.md: accel.base at the bottom, then accel.policies (its
wings on floors of their own), then accel.components, then the stack, job, review and offline-plan
parts, then the command line. A module may import its own floor and the floors below, never one above."""

import ast
import functools
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


def module_exists(module: str) -> bool:
    """Whether `accel.<...>` names a module or package of this checkout (policies/ and components/
    at the top, the rest under accel/)."""
    rest = module.split(".")[1:]
    base = ROOT if rest[:1] in (["policies"], ["components"]) else ROOT / "accel"
    path = base.joinpath(*rest)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@functools.cache
def imported_modules(path: Path) -> tuple[str, ...]:
    """Imported modules, with `from package import submodule` read as the submodule (each file
    parsed once per process: several tests walk the same sources)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.append(submodule if submodule.startswith("accel.") and module_exists(submodule) else node.module)
    return tuple(names)


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


# The wings of accel.policies, each on its floor (docs/architecture.md): a module imports its own
# wing and the wings on floors below, never a sibling wing or one above.
POLICY_FLOORS = {
    "hardware": 1, "architectures": 1, "tagging": 1, "parallelism": 1, "plan_migration": 1, "storage_types": 1, "data_classes": 1,
    "workload": 2, "lifecycle": 2, "spot_ttl": 2,
    "plan": 3,
    "catalog": 4,
    "estimator": 5, "cloud": 5,
    "selection": 6, "guardrails": 6,
}
POLICIES = ROOT / "policies"


def wing(module: str) -> str:
    """The wing of `accel.policies.<wing>...`; the package itself (its public names) is `__init__`."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else "__init__"


def test_every_policies_module_belongs_to_a_wing_on_a_floor():
    wings = {p.relative_to(POLICIES).parts[0].removesuffix(".py") for p in python_files(POLICIES)}
    assert wings - {"__init__"} == set(POLICY_FLOORS)


@pytest.mark.parametrize("own", sorted(POLICY_FLOORS))
def test_a_policies_wing_imports_only_itself_and_the_wings_below(own):
    folder = POLICIES / own
    files = python_files(folder) if folder.is_dir() else [POLICIES / f"{own}.py"]
    wrong = [f"{path.relative_to(ROOT)} imports {name}"
             for path in files for name in imported_modules(path)
             if name.startswith("accel.policies") and wing(name) != own
             and not (wing(name) in POLICY_FLOORS and POLICY_FLOORS[wing(name)] < POLICY_FLOORS[own])]
    assert not wrong, wrong


def test_the_estimator_and_cloud_terms_never_reach_into_selection_or_each_other():
    """Spelled out, as docs/architecture.md states it: the estimator and the cloud terms stand below
    selection and the guardrail pack, and neither leans on the other."""
    for own, other in (("estimator", "cloud"), ("cloud", "estimator")):
        wrong = [f"{path.relative_to(ROOT)} imports {name}"
                 for path in python_files(POLICIES / own) for name in imported_modules(path)
                 if name.startswith("accel.policies.") and wing(name) in (other, "selection", "guardrails")]
        assert not wrong, wrong


def test_components_use_only_the_hand_written_pools_of_the_selection_pipeline():
    wrong = [f"{path.relative_to(ROOT)} imports {name}"
             for path in python_files(ROOT / "components") for name in imported_modules(path)
             if name.startswith("accel.policies.selection") and name != "accel.policies.selection.pools"]
    assert not wrong, wrong


# The command line's floor 4 (docs/architecture.md): what each part of accel/ may import from accel.
BELOW_COMMANDS = ("accel.base", "accel.policies", "accel.components")
ACCEL_PARTS = {
    "mock_engine.py": BELOW_COMMANDS,
    "reaper.py": BELOW_COMMANDS,
    "stack": (*BELOW_COMMANDS, "accel.stack"),
    "job": (*BELOW_COMMANDS, "accel.job", "accel.mock_engine"),
    "review": (*BELOW_COMMANDS, "accel.review", "accel.stack"),
    "offline_plan.py": (*BELOW_COMMANDS, "accel.offline_plan", "accel.stack", "accel.job", "accel.mock_engine"),
}


@pytest.mark.parametrize("part", sorted(ACCEL_PARTS))
def test_the_parts_below_the_commands_import_only_what_stands_below_them(part):
    target = ROOT / "accel" / part
    files = python_files(target) if target.is_dir() else [target]
    wrong = [f"{path.relative_to(ROOT)} imports {name}"
             for path in files for name in imported_modules(path)
             if (name == "accel" or name.startswith("accel.")) and not name.startswith(ACCEL_PARTS[part])]
    assert not wrong, wrong
