"""The document `accel plan --json` prints (docs/contracts.md, section 2.2), as typed models.

A review reads only what it shows, and reads it leniently: the base branch's plan may come
from an older accel whose Plan had fewer fields, and that must still render. Types of the
fields that are read are checked; anything else is ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from accel.review.preview_json import LenientModel


class PlanResource(LenientModel):
    type: str = Field(min_length=1)
    name: str
    parent: str | None = None
    inputs: dict[str, Any] = Field(default_factory=dict)
    retain_on_delete: bool = False
    protect: bool = False
    urn: str | None = None
    custom: bool | None = Field(None, description="False for component resources; absent in older output")

    @field_validator("inputs", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value


class Cost(LenientModel):
    hourly_usd: float | None = Field(None, ge=0)
    run_usd: float | None = Field(None, ge=0)


class Violation(LenientModel):
    policy: str
    level: str = "mandatory"
    resource: str | None = None
    message: str = ""


class PolicyResults(LenientModel):
    violations: list[Violation] = Field(default_factory=list)
    evaluated: bool = Field(True, description="False when the guardrail pack could not run")
    note: str | None = Field(None, description="Why the guardrails were not evaluated")


class ChosenHardware(LenientModel):
    """plan.chosen: the OPTION of the choose contract (docs/contracts.md, section 2.1)."""

    cloud: str
    region: str
    accelerator: str
    family: str | None = None
    chips: int = Field(gt=0)
    hosts: int | None = None
    slices: int | None = None
    topology: str | None = None
    machine_type: str | None = None
    spot: bool = False
    hourly_usd: float | None = None
    hours: float | None = None
    total_usd: float | None = None
    mfu: float | None = None
    zone: str | None = None
    provisioning: str | None = None
    usd_per_million_tokens: float | None = Field(None, ge=0, description="Serving: flat out; absent in older output")
    usd_per_million_tokens_at_target: float | None = Field(None, ge=0, description="Serving: at the target rate")
    usd_per_million_tokens_unpriced: str | None = Field(None, description="Serving: why neither is stated (a "
                                                        "reservation already paid for)")


class TpuPoolView(LenientModel):
    generation: str | None = None
    topology: str | None = None
    slices: int = 1
    machine_type: str | None = None
    hosts_per_slice: int | None = None
    tpu_vm_type: str | None = None


class GpuPoolView(LenientModel):
    machine_type: str | None = None
    gpus_per_node: int | None = None
    nodes: int | None = None
    fabric: str | None = None


class CatalogView(LenientModel):
    version: str | None = None
    as_of: str | None = None


class CapacityView(LenientModel):
    """The plan's capacity (docs/contracts.md): its type, and the mode extensions when the plan has them."""

    provisioning: str | None = None
    reservation: str | None = None
    mode: str | None = None
    risk: str | None = None
    legs: int | None = None
    price_bound: str | None = None


class PlanView(LenientModel):
    chosen: ChosenHardware
    capacity: CapacityView | None = None
    zones: list[str] = Field(default_factory=list)
    tpu: TpuPoolView | None = None
    gpu: GpuPoolView | None = None
    catalog: CatalogView | None = None
    rationale: list[str] = Field(default_factory=list)
    pinned: bool = False


class PlanReport(LenientModel):
    stack: str
    resources: list[PlanResource]
    summary: dict[str, Any] | None = None
    cost: Cost | None = None
    plan: PlanView | None = Field(None, description="None when the stack's plan could not be made")
    policy: PolicyResults | None = Field(None, description="None when the guardrails did not run")
