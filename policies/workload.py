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
    accelerators: list[AcceleratorId] | None = Field(
        None, min_length=1, description="Allowed accelerators (e.g. [l4, l40s] for an inference pool); None = any")


_TPU_VM_TYPE = re.compile(r"^(v4|v5p|v5litepod|v6e)-(\d+)$")
_TPU_TYPE_ACCELERATOR = {"v4": "tpu-v4", "v5p": "tpu-v5p", "v5litepod": "tpu-v5e", "v6e": "tpu-v6e"}
# What the number in a TPU VM type counts: v4-N and v5p-N count TensorCores (two per chip),
# v5litepod-N and v6e-N count chips.
_TPU_TYPE_UNITS_PER_CHIP = {"v4": 2, "v5p": 2, "v5litepod": 1, "v6e": 1}


class HardwarePin(StrictModel):
    """A fixed choice: estimate this configuration, search nothing.

    A TPU may be pinned by its Cloud TPU type (`tpu_type: v5p-128`, or that string as the
    accelerator); chips are then derived, remembering that v4-N and v5p-N count TensorCores.
    """

    accelerator: AcceleratorId
    chips: int = Field(gt=0)
    tpu_type: str | None = Field(None, description="Cloud TPU type, e.g. v5p-128 (64 chips) or v6e-64 (64 chips)")
    cloud: Cloud | None = None
    region: str | None = None
    spot: bool | None = None
    topology: str | None = Field(None, description="TPU slice topology, e.g. 4x4x8")
    slices: int | None = Field(None, gt=0)
    machine_type: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _read_tpu_type(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        accelerator = data.get("accelerator")
        if isinstance(accelerator, str) and _TPU_VM_TYPE.match(accelerator.strip()):
            if data.get("tpu_type") not in (None, accelerator):
                raise ValueError(f"accelerator {accelerator!r} and tpu_type {data['tpu_type']!r} disagree")
            data["tpu_type"] = accelerator.strip()
            data.pop("accelerator")
        tpu_type = data.get("tpu_type")
        if tpu_type is None:
            return data
        match = _TPU_VM_TYPE.match(str(tpu_type).strip())
        if not match:
            raise ValueError(f"tpu_type {tpu_type!r} is not a Cloud TPU type like v5p-128, v4-32, "
                             "v5litepod-16 or v6e-64")
        prefix, count = match.group(1), int(match.group(2))
        per_chip = _TPU_TYPE_UNITS_PER_CHIP[prefix]
        if count % per_chip:
            raise ValueError(f"tpu_type {tpu_type!r}: {prefix}-N counts TensorCores (two per chip), "
                             "so N must be even")
        derived_accelerator, derived_chips = _TPU_TYPE_ACCELERATOR[prefix], count // per_chip
        if data.get("accelerator") not in (None, derived_accelerator):
            raise ValueError(f"tpu_type {tpu_type!r} is a {derived_accelerator}, "
                             f"not {data['accelerator']!r}")
        if data.get("chips") not in (None, derived_chips):
            unit = "TensorCores" if per_chip == 2 else "chips"
            raise ValueError(f"tpu_type {tpu_type!r} counts {unit}: it is {derived_chips} chips, "
                             f"not {data['chips']!r}")
        data.update(accelerator=derived_accelerator, chips=derived_chips, tpu_type=str(tpu_type).strip())
        return data


class AssumptionOverrides(StrictModel):
    """Every estimator default can be replaced per workload; None keeps the default."""

    mfu: float | None = Field(None, gt=0, le=1)
    goodput: float | None = Field(None, gt=0, le=1)
    bytes_per_parameter: float | None = Field(None, gt=0)
    activation_headroom: float | None = Field(None, ge=0)
    checkpoint_interval_minutes: float | None = Field(None, gt=0)
    restart_minutes: float | None = Field(None, ge=0)
    preemptions_per_day: float | None = Field(None, ge=0, description="Spot preemptions per host per day")
    hbm_usable_fraction: float | None = Field(None, gt=0, le=1)
    # Added with the estimator; every default lives in policies/catalog/assumptions.yaml.
    mfu_decay_per_doubling: float | None = Field(None, gt=0, le=1,
                                                 description="MFU kept per doubling of chips past the reference size")
    multislice_efficiency: float | None = Field(None, gt=0, le=1)
    default_deadline_days: float | None = Field(None, gt=0,
                                                description="Longest training run considered when no deadline is set")
    inference_bytes_per_parameter: float | None = Field(None, gt=0)
    kv_cache_bytes_per_token: float | None = Field(None, gt=0)
    context_tokens: int | None = Field(None, gt=0, description="KV cache reserved per sequence in serving")
    hbm_bandwidth_efficiency: float | None = Field(None, gt=0, le=1)
    inference_compute_efficiency: float | None = Field(None, gt=0, le=1)
    latency_p99_factor: float | None = Field(None, ge=1)
    spot_serving_headroom: float | None = Field(None, ge=0)
    prompt_tokens_per_output_token: float | None = Field(None, ge=0,
                                                         description="Prefill tokens processed per generated token")
    replica_scaling_per_doubling: float | None = Field(None, gt=0, le=1,
                                                       description="Serving efficiency kept per doubling of a replica past 8 chips")
    min_replicas: int | None = Field(None, ge=1, description="Fewest serving replicas (availability)")


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


def workload_from_mapping(data: Any, source: str) -> WorkloadSpec:
    """Validate a workload mapping (a parsed WORKLOAD.yaml or a stack's `accel:workload`).

    Raises accel.errors.UsageError with one `source: field.path: problem` line per problem.
    """
    from pydantic import ValidationError

    from accel.errors import UsageError, describe_validation_error

    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise UsageError(f"{source}: (top level): a workload must be a mapping with name, kind and model; "
                         f"this is {kind}")
    try:
        return WorkloadSpec.model_validate(data)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error, source, WorkloadSpec)) from None


def load_workload(path: Any) -> WorkloadSpec:
    """Read and validate a WORKLOAD.yaml file; every failure is a UsageError naming the file."""
    from pathlib import Path

    import yaml

    from accel.errors import UsageError

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{file}: no such workload file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise UsageError(f"{file}: cannot read the workload file ({error.__class__.__name__})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise UsageError(f"{file}: not valid YAML{where}: {problem}") from None
    return workload_from_mapping(data, str(file))
