"""The upstream CRDs in ../shared/crds beside the checkout, each file parsed once per test process.

The JobSet and LeaderWorkerSet CRDs are 0.8 and 1.3 MB of YAML: PyYAML's pure-Python parser takes
about a second of CPU for each (more inside a suite whose large heap makes every collection slow),
libyaml a tenth of that. Tests only read the schemas (jsonschema never writes to them), so one
parsed copy serves them all.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml

CRDS = Path(__file__).resolve().parent.parent.parent / "shared" / "crds"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _parsed(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_LOADER)


def load_crd(path: Path) -> dict:
    """The CRD document at `path` (read-only: shared by every test of this process); skips when
    the shared CRDs are not beside the checkout."""
    if not path.is_file():
        pytest.skip(f"{path} is absent: the upstream CRDs live in ../shared/crds beside the checkout")
    return _parsed(path)


def served_schema(path: Path, version: str) -> dict:
    """The openAPIV3Schema the CRD at `path` serves for `version`."""
    crd = load_crd(path)
    return next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)


@cache
def every_crd() -> tuple[dict, ...]:
    """Every CRD document under ../shared/crds, in path order."""
    return tuple(_parsed(path) for path in sorted(CRDS.rglob("*.yaml")))


def python_patterns(schema):
    """CRD patterns are Go RE2, which allows a flag group after '^' ('^(?i)...'); Python wants it first."""
    if isinstance(schema, dict):
        fixed = {k: python_patterns(v) for k, v in schema.items()}
        pattern = fixed.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            fixed["pattern"] = "(?i)^" + pattern[len("^(?i)"):]
        return fixed
    if isinstance(schema, list):
        return [python_patterns(item) for item in schema]
    return schema


@cache
def served_schemas() -> dict[tuple[str, str], dict]:
    """Every served schema under ../shared/crds by (apiVersion, kind), its patterns made Python's."""
    return {(f"{crd['spec']['group']}/{served['name']}", crd["spec"]["names"]["kind"]):
            python_patterns(served["schema"]["openAPIV3Schema"])
            for crd in every_crd() for served in crd["spec"]["versions"]}


@cache
def _checked_validator(path: Path, version: str):
    schema = served_schema(path, version)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def validate(document: dict, path: Path, version: str) -> None:
    """`jsonschema.validate(document, schema)` against the CRD at `path` for `version`, with the
    schema itself checked once per process rather than on every call (0.26 s CPU for JobSet's)."""
    _checked_validator(path, version).validate(document)
