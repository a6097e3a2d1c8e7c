"""Kubernetes minor versions on Amazon EKS and their standard-support windows, from eks_versions.yaml.

The EKS cluster component takes its default version from here, so the default moves with the table (and
tests/test_eks_versions.py fails when the table's default is about to leave standard support)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

from accel.base.safe_files import read_text
from accel.base.yaml_files import parse_yaml

VERSIONS_FILE = Path(__file__).with_name("eks_versions.yaml")


# Plain dataclasses, not pydantic: components import this at start-up.
@dataclass(frozen=True)
class EksRelease:
    version: str
    released: date
    end_of_standard_support: date


@dataclass(frozen=True)
class EksVersions:
    as_of: date
    source: str
    default: str
    releases: dict[str, EksRelease]

    def in_standard_support(self, version: str, on: date) -> bool | None:
        """Whether `version` is in EKS standard support on `on`; None for a version the table lacks."""
        release = self.releases.get(version)
        return None if release is None else release.released <= on < release.end_of_standard_support


@lru_cache(maxsize=None)
def load_eks_versions(path: Path = VERSIONS_FILE) -> EksVersions:
    data = parse_yaml(read_text(path, "EKS versions table"))
    releases = {str(version): EksRelease(str(version), date.fromisoformat(row["released"]),
                                         date.fromisoformat(row["end_of_standard_support"]))
                for version, row in data["releases"].items()}
    default = str(data["default"])
    if default not in releases:
        raise ValueError(f"{path.name}: default {default!r} is not one of the releases {sorted(releases)}")
    return EksVersions(date.fromisoformat(str(data["as_of"])), str(data["source"]), default, releases)


def default_eks_version() -> str:
    """The EKS minor version a new cluster gets unless its args say otherwise."""
    return load_eks_versions().default
