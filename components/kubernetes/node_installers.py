"""The GPUDirect node installers of node_installers.yaml: which manifests a GKE fabric needs, pinned."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from accel.base.safe_files import read_text

from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused
from pydantic import BaseModel, ConfigDict, Field, model_validator

INSTALLERS_FILE = Path(__file__).with_name("node_installers.yaml")


class InstallerPin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(pattern=r"^[\w./-]+\.yaml$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="A full commit id: never a branch")


class NodeInstallers(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    as_of: str
    repository: str
    raw_base: str
    installers: dict[str, InstallerPin]
    fabrics: dict[str, tuple[str, ...]]

    @model_validator(mode="after")
    def _fabrics_name_known_installers(self) -> "NodeInstallers":
        for fabric, names in self.fabrics.items():
            unknown = [n for n in names if n not in self.installers]
            if unknown:
                raise ValueError(f"fabrics.{fabric}: unknown installers {unknown}")
        return self

    def url(self, name: str) -> str:
        pin = self.installers[name]
        return f"{self.raw_base}/{pin.commit}/{pin.path}"

    def for_fabric(self, fabric: str) -> tuple[str, ...]:
        """Installer names a GKE GPU fabric needs, in order; () for none or a fabric without them."""
        return self.fabrics.get(fabric, ())


@lru_cache(maxsize=None)
def load_node_installers(path: Path = INSTALLERS_FILE) -> NodeInstallers:
    return NodeInstallers.model_validate(parse_yaml(read_text(path, "node installers table")))
