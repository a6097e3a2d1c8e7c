"""The GPUDirect pairing table (node_installers.yaml): which pinned manifests a GKE fabric needs, the NCCL
plugin they install and the RxDM sidecar image a training pod must run beside that plugin."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused
from pydantic import BaseModel, ConfigDict, Field, model_validator

INSTALLERS_FILE = Path(__file__).with_name("node_installers.yaml")

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def floating_image_problem(image: str) -> str | None:
    """Why an image reference floats (what it pulls can change under the same text), or None.

    Pinned: a digest (`name@sha256:...`), or a tag other than `latest`. The tag is what follows the
    last ':' after the last '/', so a registry port (`host:5000/name`) is not mistaken for one."""
    if _DIGEST.search(image):
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "untagged (pulls :latest)"
    if last.rsplit(":", 1)[1] == "latest":
        return "tagged :latest"
    return None


class InstallerPin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(pattern=r"^[\w./-]+\.yaml$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="A full commit id: never a branch")
    committed: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    images: tuple[str, ...] = Field(min_length=1, description="Every image the manifest pulls at this commit")
    floating_upstream: dict[str, str] = Field(
        default_factory=dict, description="Images of Google's manifest that float, with where; warned at plan time")

    @model_validator(mode="after")
    def _floating_images_are_named(self) -> "InstallerPin":
        floating = {image for image in self.images if floating_image_problem(image)}
        if floating != set(self.floating_upstream):
            raise ValueError(f"{self.path}: floating images {sorted(floating)} must be exactly the ones listed "
                             f"under floating_upstream ({sorted(self.floating_upstream)})")
        return self


class FabricSoftware(BaseModel):
    """What one fabric runs: its installers, the NCCL plugin they install, the paired RxDM sidecar."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    installers: tuple[str, ...]
    plugin: str
    sidecar: str | None = None
    paired_by: str = Field(min_length=10)


class NodeInstallers(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    as_of: str
    repository: str
    raw_base: str
    snapshot: str
    installers: dict[str, InstallerPin]
    fabrics: dict[str, FabricSoftware]

    @model_validator(mode="after")
    def _pairs_agree(self) -> "NodeInstallers":
        for fabric, software in self.fabrics.items():
            unknown = [n for n in software.installers if n not in self.installers]
            if unknown:
                raise ValueError(f"fabrics.{fabric}: unknown installers {unknown}")
            installed = {image for name in software.installers for image in self.installers[name].images}
            if software.plugin not in installed:
                raise ValueError(f"fabrics.{fabric}.plugin {software.plugin} is not what its installers pull "
                                 f"({sorted(installed)}): pair the plugin with the installer commit")
            for image in filter(None, (software.plugin, software.sidecar)):
                problem = floating_image_problem(image)
                if problem:
                    raise ValueError(f"fabrics.{fabric}: {image} is {problem}; pin a version")
        return self

    def url(self, name: str) -> str:
        pin = self.installers[name]
        return f"{self.raw_base}/{pin.commit}/{pin.path}"

    def for_fabric(self, fabric: str) -> tuple[str, ...]:
        """Installer names a GKE GPU fabric needs, in order; () for none or a fabric without them."""
        software = self.fabrics.get(fabric)
        return software.installers if software else ()

    def sidecar(self, fabric: str) -> str | None:
        """The RxDM image paired with the fabric's plugin installer; None for a fabric without a sidecar."""
        software = self.fabrics.get(fabric)
        return software.sidecar if software else None

    def floating_upstream(self, fabric: str) -> list[str]:
        """Plan-time warnings: images of the fabric's pinned Google manifests that float."""
        return [f"{name} (commit {self.installers[name].commit[:8]}) pulls {image}: {where}"
                for name in self.for_fabric(fabric) for image, where in self.installers[name].floating_upstream.items()]


@lru_cache(maxsize=None)
def load_node_installers(path: Path = INSTALLERS_FILE) -> NodeInstallers:
    return NodeInstallers.model_validate(parse_yaml(Path(path).read_text()))
