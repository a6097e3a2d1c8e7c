"""The Plan: the one serializable decision that `policies` produce and `components` consume.

A Plan says which hardware, where, how much, what it costs and why. It carries no Pulumi
types so it can be written to a stack file, diffed in a pull request and read back
unchanged (`Plan.model_validate(plan.model_dump(mode="json"))` round-trips).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from accel.base.model import StrictModel
from accel.policies.workload import AcceleratorId, Cloud, WorkloadSpec

Family = Literal["gpu", "tpu"]
Provisioning = Literal["on-demand", "spot", "reservation", "flex-start", "queued", "capacity-block"]
GpuFabric = Literal["none", "gpudirect-tcpx", "gpudirect-tcpxo", "rdma", "efa"]
Filesystem = Literal["none", "filestore", "managed-lustre", "fsx-lustre"]


class Option(StrictModel):
    """One costed configuration. The first fourteen fields are the DESIGN.md JSON contract."""

    cloud: Cloud
    region: str
    accelerator: AcceleratorId
    family: Family
    chips: int = Field(gt=0, description="Total accelerator chips across all hosts and slices")
    hosts: int = Field(gt=0, description="Total VMs / nodes across all slices")
    slices: int = Field(1, gt=0, description="TPU slices (multislice) or 1 for GPU")
    topology: str | None = Field(None, description="TPU slice topology, e.g. 4x4x8; None for GPU")
    machine_type: str
    spot: bool
    hourly_usd: float = Field(ge=0, description="Fleet cost per hour, all chips and host VMs")
    hours: float = Field(gt=0, description="Estimated wall-clock hours of the run")
    total_usd: float = Field(ge=0)
    mfu: float = Field(gt=0, le=1)
    # Extensions beyond the contract.
    offering: str = Field(description="Catalog offering id this option came from")
    zone: str | None = None
    chips_per_host: int = Field(gt=0)
    provisioning: Provisioning = "on-demand"
    goodput: float = Field(1.0, gt=0, le=1)


class Assumption(StrictModel):
    name: str
    value: float | str
    source: str = Field(description="Where the default comes from, or 'workload override'")


class Estimate(StrictModel):
    flops: float = Field(ge=0, description="Total FLOPs of the run (6ND) or per-second demand for inference")
    min_chips_for_memory: int = Field(ge=1)
    hours: float = Field(gt=0)
    hourly_usd: float = Field(ge=0)
    total_usd: float = Field(ge=0)
    mfu: float = Field(gt=0, le=1)
    goodput: float = Field(gt=0, le=1)
    assumptions: list[Assumption] = Field(default_factory=list)
    details: dict[str, float | int | str] = Field(default_factory=dict,
                                                  description="Breakdown: replicas, batch, latency, spot productivity...")


class TpuPool(StrictModel):
    """N identical TPU slices. GKE: one node pool per slice; TPU VM: one queued resource per slice."""

    generation: Literal["v4", "v5e", "v5p", "v6e"]
    topology: str = Field(description="e.g. 2x2x2 (v4/v5p, 3D) or 16x16 (v5e/v6e, 2D)")
    chips_per_slice: int = Field(gt=0)
    slices: int = Field(1, gt=0)
    machine_type: str = Field(description="GKE machine type, e.g. ct5p-hightpu-4t")
    chips_per_host: int = Field(gt=0)
    hosts_per_slice: int = Field(gt=0)
    gke_accelerator: str = Field(description="Node label cloud.google.com/gke-tpu-accelerator value")
    tpu_vm_type: str = Field(description="TPU VM accelerator type, e.g. v5p-128 (v4/v5p count TensorCores)")
    runtime_version: str = Field(description="TPU VM software version, e.g. v2-alpha-tpuv5")


class GpuPool(StrictModel):
    """Whole GPU nodes of one machine type (AWS spot may list alternates)."""

    machine_type: str = Field(description="Primary machine / instance type, e.g. a3-megagpu-8g, p5.48xlarge")
    alternate_machine_types: list[str] = Field(default_factory=list,
                                               description="Same-GPU alternates for spot diversification (AWS)")
    gpus_per_node: int = Field(gt=0)
    nodes: int = Field(gt=0)
    guest_accelerator: str | None = Field(None, description="GCP accelerator type, e.g. nvidia-h100-mega-80gb")
    fabric: GpuFabric = "none"
    extra_networks: int = Field(0, ge=0, description="GCP GPUDirect extra VPC networks (TCPX 4, TCPXO 8, RDMA 1)")
    efa_interfaces: int = Field(0, ge=0, description="AWS EFA interfaces per node (one per network card)")
    local_ssd_count: int = Field(0, ge=0)
    compact_placement: bool = False


class Capacity(StrictModel):
    spot: bool = False
    provisioning: Provisioning = "on-demand"
    reservation: str | None = Field(None, description="Reservation / capacity block id when provisioning says so")


class StoragePlan(StrictModel):
    dataset_bucket: bool = True
    checkpoint_bucket: bool = True
    filesystem: Filesystem = "none"
    filesystem_capacity_gib: int = Field(0, ge=0)
    checkpoint_retention_days: int = Field(30, gt=0, description="Non-current checkpoint versions kept this long")

    @property
    def is_empty(self) -> bool:
        """Nothing to create: e.g. a serving plan that reads weights from an existing bucket."""
        return not (self.dataset_bucket or self.checkpoint_bucket or self.filesystem != "none")


class CatalogRef(StrictModel):
    version: str
    as_of: str


class Plan(StrictModel):
    schema_version: Literal[1] = 1
    workload: WorkloadSpec
    catalog: CatalogRef
    chosen: Option
    cloud: Cloud
    region: str
    zones: list[str] = Field(min_length=1, description="Node zones; TPU COMPACT and EFA placement use zones[0]")
    family: Family
    tpu: TpuPool | None = None
    gpu: GpuPool | None = None
    capacity: Capacity = Field(default_factory=Capacity)
    storage: StoragePlan = Field(default_factory=StoragePlan)
    estimate: Estimate
    rationale: list[str] = Field(default_factory=list)
    pinned: bool = Field(False, description="True when the hardware came from a pin, not a search")

    @model_validator(mode="after")
    def _pool_matches_family(self) -> "Plan":
        if self.family == "tpu" and (self.tpu is None or self.gpu is not None):
            raise ValueError("a TPU plan needs a 'tpu' pool and no 'gpu' pool")
        if self.family == "gpu" and (self.gpu is None or self.tpu is not None):
            raise ValueError("a GPU plan needs a 'gpu' pool and no 'tpu' pool")
        if self.chosen.family != self.family or self.chosen.cloud != self.cloud:
            raise ValueError("'chosen' must match the plan's family and cloud")
        return self
