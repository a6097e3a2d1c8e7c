"""The GPUDirect pairing table (node_installers.yaml): which pinned manifests a GKE fabric needs on nodes of each
CPU architecture, the NCCL plugin they install, where on the node they put it, and the RxDM sidecar image a
training pod must run beside that plugin."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Literal

from accel.base.errors import ComponentArgsError
from accel.base.safe_files import read_text

from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused
from pydantic import BaseModel, ConfigDict, Field, model_validator

INSTALLERS_FILE = Path(__file__).with_name("node_installers.yaml")

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")

Arch = Literal["amd64", "arm64"]          # kubernetes.io/arch values of the nodes GKE GPU machines make
ARCH_LABEL = "kubernetes.io/arch"   # the well-known node label the kubelet sets from its own GOARCH


class NoInstallerForArch(ComponentArgsError):
    """The fabric has no node installers published for the nodes' architecture: a component argument that cannot
    be built (the one component error, a UsageError and a ValueError)."""


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
    resource_name: str | None = Field(
        None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="The stack's resource name suffix when it is not this installer's key: the one of another "
                    "installer whose manifest makes the same DaemonSet, so a stack moving between them updates it "
                    "in place instead of creating a second object of that name and deleting the first")
    node_affinity: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="The manifest's required nodeAffinity at this commit: label -> the values "
                                          "its `In` admits; empty: every node")

    def admits(self, labels: dict[str, str]) -> list[str]:
        """Why a node with these labels is not admitted (one reason per label the affinity names); [] if it is.
        Only labels given are judged: a caller that does not know a node's label cannot refuse it."""
        return [f"{key}={labels[key]} not in [{', '.join(values)}]"
                for key, values in self.node_affinity.items() if key in labels and labels[key] not in values]

    @model_validator(mode="after")
    def _floating_images_are_named(self) -> "InstallerPin":
        floating = {image for image in self.images if floating_image_problem(image)}
        if floating != set(self.floating_upstream):
            raise ValueError(f"{self.path}: floating images {sorted(floating)} must be exactly the ones listed "
                             f"under floating_upstream ({sorted(self.floating_upstream)})")
        return self


class ArchSoftware(BaseModel):
    """A fabric's installers and the NCCL plugin they install, for nodes of one architecture."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    installers: tuple[str, ...]
    plugin: str
    paired_by: str = Field(min_length=10)


class FabricSoftware(ArchSoftware):
    """What one fabric runs: its installers for x86 nodes (and `arm64`'s for Arm nodes, where published), the
    NCCL plugin they install, the node directory they fill and the NCCL env script in it, the paired RxDM
    sidecar. Sidecar, host_dir and env_script are the same on every architecture."""

    sidecar: str | None = None
    host_dir: str | None = Field(None, pattern=r"^/[\w./-]+$",
                                 description="The node directory the installers fill; the pod mounts it")
    env_script: str | None = Field(None, pattern=r"^[\w-][\w./-]*\.sh$",
                                   description="The NCCL environment script, relative to host_dir")
    arm64: ArchSoftware | None = Field(None, description="Installers and plugin for Arm (arm64) nodes")

    @model_validator(mode="after")
    def _env_script_lives_in_host_dir(self) -> "FabricSoftware":
        if self.env_script is not None and self.host_dir is None:
            raise ValueError("env_script is relative to host_dir; state host_dir too")
        if self.env_script is not None and ".." in PurePosixPath(self.env_script).parts:
            raise ValueError(f"env_script {self.env_script!r} must stay inside host_dir")
        return self

    def for_arch(self, arch: Arch) -> ArchSoftware:
        if arch == "amd64":
            return self
        if self.arm64 is None:
            raise NoInstallerForArch(f"no {arch} installers are stated for this fabric")
        return self.arm64


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
            variants = {fabric: software, f"{fabric}.arm64": software.arm64}
            for where, variant in ((w, v) for w, v in variants.items() if v is not None):
                unknown = [n for n in variant.installers if n not in self.installers]
                if unknown:
                    raise ValueError(f"fabrics.{where}: unknown installers {unknown}")
                installed = {image for name in variant.installers for image in self.installers[name].images}
                if variant.plugin not in installed:
                    raise ValueError(f"fabrics.{where}.plugin {variant.plugin} is not what its installers pull "
                                     f"({sorted(installed)}): pair the plugin with the installer commit")
            arm64_plugin = software.arm64.plugin if software.arm64 else None
            for image in filter(None, (software.plugin, software.sidecar, arm64_plugin)):
                problem = floating_image_problem(image)
                if problem:
                    raise ValueError(f"fabrics.{fabric}: {image} is {problem}; pin a version")
        return self

    def resource_name(self, name: str) -> str:
        """The suffix of the stack's ConfigFile for installer `name` (node_installers.yaml resource_name)."""
        return self.installers[name].resource_name or name

    def url(self, name: str) -> str:
        pin = self.installers[name]
        return f"{self.raw_base}/{pin.commit}/{pin.path}"

    def for_fabric(self, fabric: str, arch: Arch = "amd64") -> tuple[str, ...]:
        """Installer names a GKE GPU fabric needs on nodes of `arch`, in order; () for none or a fabric without
        them. NoInstallerForArch when the fabric has installers, but none stated for `arch`."""
        software = self.fabrics.get(fabric)
        if software is None:
            return ()
        try:
            return software.for_arch(arch).installers
        except NoInstallerForArch:
            raise NoInstallerForArch(
                f"fabric {fabric!r}: node_installers.yaml states installers for amd64"
                f"{' and arm64' if software.arm64 else ''} nodes only, not {arch}") from None

    def unadmitted(self, fabric: str, arch: Arch, labels: dict[str, str]) -> list[str]:
        """Why the fabric's installers for `arch` would not run on nodes with these labels (their node
        affinity), one line per installer that would not; [] when every one would."""
        node = {**labels, ARCH_LABEL: arch}
        return [f"{name} ({'; '.join(reasons)})" for name in self.for_fabric(fabric, arch)
                if (reasons := self.installers[name].admits(node))]

    def env_profile(self, fabric: str, mounts: dict[str, str]) -> str | None:
        """The NCCL env script's path in a pod that mounts the fabric's host_dir as `mounts` says
        ({host path: mount path}); None for a fabric without one. ValueError when host_dir is not mounted."""
        software = self.fabrics.get(fabric)
        if software is None or software.env_script is None:
            return None
        assert software.host_dir is not None  # FabricSoftware's validator
        if software.host_dir not in mounts:
            raise ValueError(f"fabric {fabric!r}: the pod does not mount {software.host_dir}, where the node "
                             f"installer puts {software.env_script}")
        return str(PurePosixPath(mounts[software.host_dir]) / software.env_script)

    def sidecar(self, fabric: str) -> str | None:
        """The RxDM image paired with the fabric's plugin installer; None for a fabric without a sidecar."""
        software = self.fabrics.get(fabric)
        return software.sidecar if software else None

    def floating_upstream(self, fabric: str, arch: Arch = "amd64") -> list[str]:
        """Plan-time warnings: images of the fabric's pinned Google manifests for `arch` nodes that float."""
        return [f"{name} (commit {self.installers[name].commit[:8]}) pulls {image}: {where}"
                for name in self.for_fabric(fabric, arch)
                for image, where in self.installers[name].floating_upstream.items()]


@lru_cache(maxsize=None)
def load_node_installers(path: Path = INSTALLERS_FILE) -> NodeInstallers:
    return NodeInstallers.model_validate(parse_yaml(read_text(path, "node installers table")))
