"""The pinned Helm charts of the Kubernetes layer, read from charts.yaml beside this file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from accel.base.safe_files import read_text

from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused
from pydantic import BaseModel, ConfigDict, Field, model_validator

CHARTS_FILE = Path(__file__).with_name("charts.yaml")


class ChartPin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chart: str = Field(description="Chart name in `repo`, or a full oci:// reference")
    version: str = Field(min_length=1, description="Exact chart version; never a range")
    namespace: str
    repo: str | None = Field(None, description="Classic chart repository URL; None for oci:// charts")
    api_version: str | None = Field(None, description="API version of the objects written against this release")

    @model_validator(mode="after")
    def _oci_or_repo(self) -> "ChartPin":
        is_oci = self.chart.startswith("oci://")
        if is_oci == (self.repo is not None):
            raise ValueError(f"chart {self.chart!r}: give either an oci:// chart or a repo, not both or neither")
        if any(c in self.version for c in "^~*<>= "):
            raise ValueError(f"chart {self.chart!r}: version {self.version!r} must be exact, not a range")
        return self


class ChartPins(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    as_of: str
    kueue: ChartPin
    jobset: ChartPin
    nvidia_device_plugin: ChartPin = Field(alias="nvidia-device-plugin")
    gpu_operator: ChartPin = Field(alias="gpu-operator")
    # Optional so an older pin file still loads; a stack with EFA pools needs it.
    aws_efa_device_plugin: ChartPin | None = Field(None, alias="aws-efa-k8s-device-plugin")
    # LeaderWorkerSet: multi-node serving replicas. Optional as above; a plan that writes one needs it.
    lws: ChartPin | None = None
    # NVIDIA DRA driver: ComputeDomains (IMEX) for NVLink domains across nodes. Optional as above.
    nvidia_dra_driver: ChartPin | None = Field(None, alias="nvidia-dra-driver-gpu")
    # Kueue's manager Configuration (the chart's defaults plus the integrations accel's workloads need).
    kueue_manager_config: dict[str, Any] = Field(default_factory=dict)

    @property
    def kueue_api_version(self) -> str:
        return self.kueue.api_version or "kueue.x-k8s.io/v1beta1"


@lru_cache(maxsize=None)
def load_chart_pins(path: Path = CHARTS_FILE) -> ChartPins:
    data = parse_yaml(read_text(path, "chart pins"))
    return ChartPins.model_validate({"as_of": data["as_of"], **data["charts"],
                                     "kueue_manager_config": data.get("kueue_manager_config") or {}})
