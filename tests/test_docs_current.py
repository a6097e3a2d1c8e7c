"""README.md and docs/ say what the code has today: every stack, every option, every rule's level, every path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.main import get_command

from accel.cli import COMMANDS, _register_commands, app
from accel.policies.guardrails.rules import MODULES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {path.name: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))}

# Where each command's synopsis is (`accel CMD [...]` in a code block or span).
SYNOPSIS_PAGE = {"choose": "choose.md", "plan": "plan.md", "job": "job.md", "review": "review.md",
                 "reap": "reap.md", "destroy-after-run": "reap.md"}


def options_of(name: str) -> list[tuple[str, ...]]:
    """Each option of `accel NAME` as the spellings it accepts (`--stack`, `-s`), --help left out."""
    _register_commands()
    command = get_command(app).commands[name]  # type: ignore[attr-defined]
    return [tuple(parameter.opts) for parameter in command.params
            if parameter.opts[0].startswith("-") and "--help" not in parameter.opts]


def names_one_of(text: str, spellings: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])", text) for spelling in spellings)


def test_the_synopsis_pages_cover_every_command():
    assert sorted(SYNOPSIS_PAGE) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(SYNOPSIS_PAGE))
def test_each_commands_synopsis_names_every_option_it_takes(name):
    page = DOCS[SYNOPSIS_PAGE[name]]
    # the first `accel NAME [` of its page, with the lines that continue it (indented, as review's)
    found = re.search(rf"accel {name} [^\n`]*\[[^\n`]*(?:\n {{4,}}[^\n`]*)*", page)
    assert found, f"docs/{SYNOPSIS_PAGE[name]} has no synopsis of accel {name}"
    missing = [spellings[0] for spellings in options_of(name) if not names_one_of(found.group(0), spellings)]
    assert missing == [], f"docs/{SYNOPSIS_PAGE[name]}: the synopsis of accel {name} lacks {missing}"


@pytest.mark.parametrize("name", sorted(SYNOPSIS_PAGE))
def test_the_readme_commands_table_names_every_option(name):
    row = next((line for line in README.splitlines() if line.startswith(f"| `accel {name} ")), None)
    assert row, f"README's Commands table has no row for accel {name}"
    synopsis = re.split(r"(?<!\\)\|", row)[1]  # the command column, options included (`\|` is a cell's own bar)
    missing = [spellings[0] for spellings in options_of(name) if not names_one_of(synopsis, spellings)]
    assert missing == [], f"README's row of accel {name} lacks {missing}"


def test_the_readme_stacks_table_lists_exactly_the_bundled_stacks():
    section = README.split("## Stacks", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([\w.-]+)`", section, flags=re.MULTILINE)
    shipped = sorted(path.name[len("Pulumi."):-len(".yaml")] for path in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert sorted(listed) == shipped


def test_each_guardrail_heading_gives_the_rules_level_and_whether_it_is_a_stack_rule():
    text = DOCS["guardrails.md"]
    headings = dict(re.findall(r"^#### `([a-z0-9-]+)` \(([a-z, ]+)\)$", text, flags=re.MULTILINE))
    wrong = {}
    for module in MODULES:
        for policy in module.POLICIES:
            level = str(policy.enforcement_level.value).lower()
            expected = f"{level}, stack" if type(policy).__name__ == "StackValidationPolicy" else level
            if headings.get(policy.name) != expected:
                wrong[policy.name] = (headings.get(policy.name), expected)
    assert wrong == {}


def test_the_known_limits_name_every_stack_rule():
    text = DOCS["guardrails.md"]
    listed = re.search(r"- Stack rules \(([^)]*)\) receive", text)
    assert listed
    stack_rules = sorted(policy.name for module in MODULES for policy in module.POLICIES
                         if type(policy).__name__ == "StackValidationPolicy")
    assert sorted(re.findall(r"`([a-z0-9-]+)`", listed.group(1))) == stack_rules


# A path in a code span that starts at one of the repository's own folders must exist; a placeholder
# (`stacks/Pulumi.NAME.yaml`, `examples/X.yaml`) has an upper-case part and is left out.
TOP = ("accel", "benchmarks", "components", "docs", "examples", "policies", "provider", "stacks", "tests",
       ".github", ".ci")
PATH = re.compile(rf"`((?:{'|'.join(re.escape(top) for top in TOP)})/[\w./-]*)`")
# Files of other projects the docs cite, each right after the project's name.
CITED = {"benchmarks/summary.md": "jetstream-pytorch", "examples/gke-a4": "Cluster Toolkit",
         "docs/source/performance/fp8-quantization.md": "TensorRT-LLM"}


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{name}" for name in DOCS)])
def test_every_repository_path_a_page_names_exists(page):
    text = README if page == "README.md" else DOCS[page.split("/", 1)[1]]
    named = {match for match in PATH.findall(text) if not re.search(r"[A-Z]{2,}|/X\.", match.split("/", 1)[1])}
    for path, project in CITED.items():
        if path in named and re.search(rf"{re.escape(project)}\s+`{re.escape(path)}`", text):
            named.discard(path)
    assert sorted(path for path in named if not (ROOT / path.rstrip("/")).exists()) == []


@pytest.mark.parametrize("package", ["accel.components", "accel.components.gcp", "accel.components.aws",
                                     "accel.components.kubernetes", "accel.policies"])
def test_readme_lists_each_packages_public_names(package):
    import importlib

    listing = README.split("The public names", 1)[1].split("\n\n")[1]  # the list after the sentence
    line = next(item for item in listing.split("\n- ") if item.lstrip("- ").startswith(f"`{package}`:"))

    def listed(name: str) -> bool:  # `GkeClusterArgs` is listed as "`GkeCluster` ... each with its `...Args`"
        if f"`{name}`" in line:
            return True
        return name.endswith("Args") and f"`{name[:-4]}`" in line and re.search(r"with (its|their) (`\.\.\.)?args", line, re.I)

    assert [name for name in importlib.import_module(package).__all__ if not listed(name)] == []


def test_readme_counts_the_guardrail_packs_rules():
    count = sum(len(module.POLICIES) for module in MODULES)
    assert f"({count} rules:" in README.split("## Guardrails", 1)[1]


# A dotted name of the package a page cites in a code span (`accel.base.errors.UsageError`, `accel.x.f(...)`).
DOTTED = re.compile(r"`(accel(?:\.[A-Za-z_]\w*)+)[(`]")


def resolves(dotted: str) -> bool:
    """Whether `dotted` is a module of the package, or a name inside the longest module it starts with."""
    import importlib

    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{name}" for name in DOCS)])
def test_every_python_name_a_page_cites_exists(page):
    # docs/plan.md told program authors to call accel.stack.config.config_model, which no version of accel had.
    text = README if page == "README.md" else DOCS[page.split("/", 1)[1]]
    assert sorted(name for name in set(DOTTED.findall(text)) if not resolves(name)) == []


def bounded_options(name: str) -> list[tuple[str, object, object]]:
    """Each option of `accel NAME` whose value typer bounds (`--attempts` 1..100), with its bounds."""
    _register_commands()
    command = get_command(app).commands[name]  # type: ignore[attr-defined]
    return [(parameter.opts[0], parameter.min, parameter.max) for parameter in command.params
            if getattr(parameter, "min", None) is not None or getattr(parameter, "max", None) is not None]


@pytest.mark.parametrize("name", sorted(SYNOPSIS_PAGE))
def test_the_contracts_give_each_bounded_options_range(name):
    # docs/contracts.md said `--attempts` N >= 1 and `--retry-delay` >= 0; the command takes 1..100 and 0..3600.
    section = DOCS["contracts.md"].split(f"### `accel {name}", 1)[1].split("\n#", 1)[0]

    def number(value: object) -> str:
        return f"{value:g}" if isinstance(value, float) else str(value)

    wrong = []
    for option, low, high in bounded_options(name):
        said = re.search(rf"`{re.escape(option)}(?: [A-Z]+)?`[^|\n]*(?:\|[^|\n]*)?", section)  # a row or a sentence
        if not said or f"{number(low)}..{number(high)}" not in said.group(0):
            wrong.append((option, f"{number(low)}..{number(high)}"))
    assert wrong == []
