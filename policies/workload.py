"""The workload spec: what a user asks for, validated and normalized.

Everything downstream (estimate, selection, components) trusts these types, so all
input checking happens here and nowhere else.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

ACCELERATOR_IDS: tuple[str, ...] = (
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "a100-40gb",
    "a100-80gb",
    "h100-80gb",
    "h200-141gb",
    "l4",
    "a10g",
    "l40s",
)
CLOUDS: tuple[str, ...] = ("gcp", "aws", "kubernetes")
FRAMEWORKS: tuple[str, ...] = ("jax", "pytorch", "tensorflow", "pytorch-xla")
# Frameworks that compile through XLA and therefore run on TPUs.
XLA_FRAMEWORKS: frozenset[str] = frozenset({"jax", "tensorflow", "pytorch-xla"})

_SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
_QUANTITY = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMBGTP]?)\s*$", re.IGNORECASE)


def parse_quantity(value: Any) -> float:
    """Read a human number: 70e9, 70B, 1.5T, 7M, 2_000, or a plain int/float.

    Raises ValueError with the accepted forms, so pydantic reports it against the field.
    """
    if isinstance(value, bool):
        raise ValueError("expected a number such as 70e9, 70B, 1.5T or 7M, not a boolean")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        match = _QUANTITY.match(value.replace("_", "").replace(",", ""))
        if not match:
            raise ValueError(f"{value!r} is not a number; use forms like 70e9, 70B, 1.5T or 7M")
        number = float(match.group(1)) * _SUFFIXES.get(match.group(2).upper(), 1.0)
    else:
        raise ValueError(f"expected a number such as 70e9, 70B, 1.5T or 7M, got {type(value).__name__}")
    if not math.isfinite(number):
        raise ValueError("must be a finite number")
    return number


Quantity = Annotated[float, BeforeValidator(parse_quantity)]
PositiveQuantity = Annotated[Quantity, Field(gt=0)]
AcceleratorId = Literal[
    "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "a100-40gb", "a100-80gb",
    "h100-80gb", "h200-141gb", "l4", "a10g", "l40s",
]
Cloud = Literal["gcp", "aws", "kubernetes"]


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSpec(StrictModel):
    parameters: PositiveQuantity = Field(description="Parameter count, e.g. 70B")
    sequence_length: int = Field(4096, gt=0, le=2_000_000, description="Training context length in tokens")


class TrainingSpec(StrictModel):
    tokens: PositiveQuantity = Field(description="Tokens to train on, e.g. 2T")
    framework: Literal["jax", "pytorch", "tensorflow", "pytorch-xla"] = "jax"
    precision: Literal["bf16", "fp16", "fp8", "fp32"] = "bf16"


class InferenceSpec(StrictModel):
    tokens_per_second: PositiveQuantity = Field(description="Aggregate generated tokens per second to sustain")
    p99_latency_ms: float = Field(200, gt=0, description="Per-token p99 latency bound")
    framework: Literal["jax", "pytorch", "tensorflow", "pytorch-xla"] = "pytorch"
    hours: float = Field(730, gt=0, description="How long the service runs, for the run cost (default: a month)")


class Constraints(StrictModel):
    clouds: list[Cloud] = Field(default_factory=lambda: ["gcp", "aws"], min_length=1)
    regions: list[str] | None = Field(None, description="Allowed regions; None = any in the catalog")
    deadline_days: float | None = Field(None, gt=0)
    budget_usd: Quantity | None = Field(None, gt=0)
    spot: Literal["allowed", "required", "never"] = "allowed"
    portability: bool = False
    custom_cuda_kernels: bool = False
    max_chips: int | None = Field(None, gt=0)


class HardwarePin(StrictModel):
    """A fixed choice: estimate this configuration, search nothing."""

    accelerator: AcceleratorId
    chips: int = Field(gt=0)
    cloud: Cloud | None = None
    region: str | None = None
    spot: bool | None = None
    topology: str | None = Field(None, description="TPU slice topology, e.g. 4x4x8")
    slices: int | None = Field(None, gt=0)
    machine_type: str | None = None


class AssumptionOverrides(StrictModel):
    """Every estimator default can be replaced per workload; None keeps the default."""

    mfu: float | None = Field(None, gt=0, le=1)
    goodput: float | None = Field(None, gt=0, le=1)
    bytes_per_parameter: float | None = Field(None, gt=0)
    activation_headroom: float | None = Field(None, ge=0)
    checkpoint_interval_minutes: float | None = Field(None, gt=0)
    restart_minutes: float | None = Field(None, ge=0)
    preemptions_per_day: float | None = Field(None, ge=0)
    hbm_usable_fraction: float | None = Field(None, gt=0, le=1)


class WorkloadSpec(StrictModel):
    name: str = Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$",
                      description="lowercase letters, digits and dashes; becomes resource names and labels")
    kind: Literal["pretrain", "finetune", "inference"]
    model: ModelSpec
    training: TrainingSpec | None = None
    constraints: Constraints = Field(default_factory=Constraints)
    inference: InferenceSpec | None = None
    hardware: HardwarePin | None = None
    assumptions: AssumptionOverrides = Field(default_factory=AssumptionOverrides)
    owner: str | None = Field(None, description="Team or person billed; becomes a label")
    cost_center: str | None = None

    @model_validator(mode="after")
    def _kind_has_its_section(self) -> "WorkloadSpec":
        if self.kind == "inference" and self.inference is None:
            raise ValueError("kind 'inference' needs an 'inference' section with tokens_per_second")
        if self.kind in ("pretrain", "finetune") and self.training is None:
            raise ValueError(f"kind {self.kind!r} needs a 'training' section with tokens")
        return self

    @property
    def framework(self) -> str:
        section = self.inference if self.kind == "inference" else self.training
        assert section is not None
        return section.framework

    @property
    def runs_on_xla(self) -> bool:
        return self.framework in XLA_FRAMEWORKS
