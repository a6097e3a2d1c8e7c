"""The workload spec: what a user asks for, validated and normalized.

Everything downstream (estimate, selection, components) trusts these types, so all
input checking happens here and nowhere else.
"""

# No `from __future__ import annotations` in a module of pydantic models: pydantic would compile each field's
# annotation string when its class is defined, ~3 ms of every `accel choose` (docs/choose.md, "Start-up").

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator,
                      model_serializer, model_validator)
from pydantic_core import InitErrorDetails, PydanticCustomError

from accel.base.errors import UsageError
from accel.base.model import PositiveQuantity, Quantity, StrictModel
from accel.base.units import parse_quantity  # noqa: F401 (part of the workload API)
from accel.policies import hardware
from accel.policies.hardware import shapes

# The chips a workload may ask for, from the hardware facts table (policies/hardware/facts.toml).
ACCELERATOR_IDS: tuple[str, ...] = hardware.current().selectable_chips
CLOUDS: tuple[str, ...] = ("gcp", "aws", "kubernetes")
FRAMEWORKS: tuple[str, ...] = ("jax", "pytorch", "tensorflow", "pytorch-xla")
# Frameworks that compile through XLA and therefore run on TPUs.
XLA_FRAMEWORKS: frozenset[str] = frozenset({"jax", "tensorflow", "pytorch-xla"})

AcceleratorId = Literal[ACCELERATOR_IDS]  # type: ignore[valid-type]
Cloud = Literal["gcp", "aws", "kubernetes"]


class WorkloadModel(StrictModel):
    """A workload section: strict, and every number finite (`.inf` or NaN is an error naming the field)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


_OPTIONAL_MODEL_FIELDS = ("active_parameters", "experts", "experts_per_token", "shared_experts", "layers", "hidden",
                          "architecture", "checkpoint")

# A Hugging Face repo id as huggingface_hub's validate_repo_id takes it (utils/_validators.py: REPO_ID_REGEX, no
# '--' or '..', no '.git' ending), with the namespace required: a bare name would read as a relative path.
_HF_PART = r"(?![-.])[\w.-]{1,96}(?<![-.])"
HF_REPO_ID = re.compile(rf"^{_HF_PART}/{_HF_PART}$")
CHECKPOINT_SCHEMES = ("gs://", "s3://")
CHECKPOINT_RULE = ("a Hugging Face repo id (owner/name, e.g. meta-llama/Llama-3.1-8B-Instruct), a gs:// or s3:// "
                   "URL of a bucket path, or an absolute path in the container (/models/...)")


def _billions(count: float) -> str:
    """A parameter count as model names write it: 8.03B, 405.9B, 0.596B."""
    return f"{count / 1e9:.4g}B"


def checkpoint_form(value: str) -> str:
    """Which form of CHECKPOINT_RULE a checkpoint takes: 'gs' or 's3' (a bucket URL), 'path' (absolute, in the
    container), else 'repo' (a Hugging Face repo id, once checkpoint_problem has passed it)."""
    scheme = next((s for s in CHECKPOINT_SCHEMES if value.startswith(s)), None)
    return scheme.removesuffix("://") if scheme else "path" if value.startswith("/") else "repo"


def checkpoint_problem(value: str) -> str | None:
    """Why `value` is no checkpoint a serving job can load, or None."""
    form = checkpoint_form(value)
    if form in ("gs", "s3"):
        bucket = value.split("://", 1)[1].split("/", 1)[0]
        return None if bucket else f"names no bucket; give {CHECKPOINT_RULE}"
    if form == "path":
        return None
    if HF_REPO_ID.match(value) and "--" not in value and ".." not in value and not value.endswith(".git"):
        return None
    return f"is not {CHECKPOINT_RULE}"


# Sanity ranges of what a person can mean, not facts about hardware: past them the estimate's arithmetic under- or
# overflows (a rate of zero FLOPs, an infinite chip count) and the answer would be a traceback, so the workload is
# refused naming the field. The largest published models hold ~2T parameters and trained on ~36T tokens; the ranges
# leave 500x and more around what anyone has run.
MODEL_PARAMETER_BOUNDS = {"ge": 1e6, "le": 1e15}   # 1M .. 1 quadrillion parameters
TOKEN_COUNT_BOUNDS = {"ge": 1e3, "le": 1e17}       # 1K .. 100 quadrillion tokens
SERVING_RATE_BOUNDS = {"le": 1e12}
SERVICE_HOURS_BOUNDS = {"le": 87_840.0}           # ten years (3,660 days), the longest TTL accel takes too


class ModelSpec(WorkloadModel):
    parameters: PositiveQuantity = Field(description="Parameter count, e.g. 70B (a mixture-of-experts model: the "
                                                     "total, every expert included); model.architecture fills it",
                                         **MODEL_PARAMETER_BOUNDS)
    sequence_length: int = Field(4096, gt=0, le=2_000_000, description="Training context length in tokens")
    active_parameters: PositiveQuantity | None = Field(
        None, **MODEL_PARAMETER_BOUNDS, description="Mixture-of-experts: parameters touched per token (attention, shared and routed experts), "
                          "e.g. 37B for DeepSeek-V3's 671B; FLOPs follow them, memory follows `parameters`. A dense "
                          "model omits it")
    experts: int | None = Field(None, gt=1, le=100_000, description="Mixture-of-experts: routed experts per MoE layer")
    experts_per_token: int | None = Field(None, gt=0, description="Mixture-of-experts: routed experts each token "
                                                                  "is sent to (top-k)")
    shared_experts: int | None = Field(None, ge=0, description="Mixture-of-experts: experts every token passes "
                                                               "through (replicated: no all-to-all)")
    layers: int | None = Field(None, gt=0, le=10_000, description="Transformer layers; sizes the attention FLOPs "
                                                                   "and the all-to-all. Default: estimated from size")
    hidden: int | None = Field(None, gt=0, le=1_000_000, description="Model (hidden) width; sizes the attention "
                                                                      "FLOPs and the all-to-all. Default: estimated")
    architecture: str | None = Field(
        None, description="A published architecture (MaxText's model_name, e.g. llama3.1-70b, mixtral-8x7b; "
                          "policies/architectures/architectures.yaml): fills layers, hidden, experts and parameters "
                          "left out, refuses ones that disagree, and names the model the generated job runs")
    checkpoint: str | None = Field(None, description=f"The weights a serving job loads: {CHECKPOINT_RULE}")

    @model_validator(mode="before")
    @classmethod
    def _fill_from_architecture(cls, data: Any) -> Any:
        """A named architecture supplies every shape field and count the workload leaves out (checked after)."""
        if not isinstance(data, dict):
            return data
        if not isinstance(data.get("architecture"), str):
            if data.get("parameters") is None and data.get("architecture") is None:
                raise field_error("parameters", "Field required: the parameter count (e.g. 70B), or name model."
                                                "architecture (e.g. llama3.1-70b) to take a published model's", {})
            return data
        from accel.policies import architectures

        name = data["architecture"]
        row = architectures.lookup(name)
        if row is None:
            known = architectures.table()
            closest = known.closest(name)
            hint = f"closest: {', '.join(closest)}; " if closest else ""
            raise field_error("architecture", f"no known architecture {name!r}; {hint}known: "
                                              f"{', '.join(known.names())} (or leave architecture out and give "
                                              "parameters, layers and hidden yourself)", name)
        given = {key: value for key, value in data.items() if value is not None}
        return {**row.workload_fields(), **given}

    @field_validator("checkpoint")
    @classmethod
    def _loadable_checkpoint(cls, value: str | None) -> str | None:
        problem = None if value is None else checkpoint_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _agrees_with_architecture(self) -> "ModelSpec":
        """Fields given beside an architecture must be its own: the shape exactly, the counts within the table's
        tolerance (its `tolerance_why` says why: published names round, sizes of a family lie far apart)."""
        if self.architecture is None:
            return self
        from accel.policies import architectures

        row = architectures.lookup(self.architecture)
        assert row is not None  # the before-validator refused an unknown name
        for name in architectures.SHAPE_FIELDS:
            given, known = getattr(self, name), getattr(row, name)
            if given != known:
                stated = f"{known:,}" if known is not None else "none (it is a dense model)"
                raise field_error(name, f"{given!r} contradicts architecture {row.name}, whose {name} is {stated}; "
                                        f"leave {name} out to take the architecture's", given)
        tolerance = architectures.table().tolerance
        for name in architectures.COUNT_FIELDS:
            given, known = getattr(self, name), getattr(row, name)
            if known is None:
                if given is not None:
                    raise field_error(name, f"{_billions(given)} but architecture {row.name} is a dense model (every "
                                            f"parameter active); leave {name} out", given)
                continue
            if abs(given - known) > tolerance * known:
                raise field_error(name, f"{_billions(given)} is more than {tolerance:.0%} from architecture "
                                        f"{row.name}'s {_billions(known)}: a count for another model or size; "
                                        f"leave {name} out to take the architecture's", given)
        return self

    @model_validator(mode="after")
    def _mixture_of_experts(self) -> "ModelSpec":
        active = self.active_parameters
        if active is not None and active > self.parameters:
            raise field_error("active_parameters", f"{active:.4g} exceeds parameters {self.parameters:.4g}: active "
                                                   "parameters are the share of the total a token touches", active)
        moe_only = [name for name in ("experts", "experts_per_token", "shared_experts")
                    if getattr(self, name) is not None]
        if moe_only and active is None:
            raise field_error(moe_only[0], "describes a mixture-of-experts model: give model.active_parameters "
                                           "too (a dense model omits experts)", getattr(self, moe_only[0]))
        if self.experts_per_token is not None and self.experts is None:
            raise field_error("experts", "Field required with experts_per_token: the routed experts per layer", {})
        if self.experts is not None and self.experts_per_token is None:
            raise field_error("experts_per_token", "Field required with experts: how many routed experts each "
                                                   "token goes to (top-k)", {})
        if self.experts is not None and self.experts_per_token is not None and self.experts_per_token > self.experts:
            raise field_error("experts_per_token", f"{self.experts_per_token} exceeds experts {self.experts}: a "
                                                   "token is routed to some of the experts", self.experts_per_token)
        if active is not None and self.experts is not None and self.experts_per_token is not None:
            self._active_fits_the_routing(active, self.experts, self.experts_per_token)
        return self

    def _active_fits_the_routing(self, active: float, experts: int, per_token: int) -> None:
        """With S the weights every token passes (attention, embeddings, shared experts) and E one routed expert's,
        parameters = S + experts x E and active = S + per_token x E; S >= 0 puts active between
        parameters x per_token / experts and parameters, equal to the total only when a token visits every expert.
        All ten MoE rows of policies/catalog/whole_runs.yaml and blind_runs.yaml lie inside (jetmoe-8b nearest the
        floor: 2.2B active of 8.5B, 2 of 8 experts, floor 2.1B)."""
        floor = self.parameters * per_token / experts
        if active < floor * (1 - 1e-9):
            raise field_error("active_parameters", f"{active:.4g} is below parameters x experts_per_token / experts "
                                                   f"= {floor:.4g}: a token passes through {per_token} of the "
                                                   f"{experts} routed experts and every weight outside them", active)
        if per_token < experts and active >= self.parameters:
            raise field_error("active_parameters", f"{active:.4g} equals parameters although a token is routed to "
                                                   f"{per_token} of {experts} experts: active parameters leave out "
                                                   "the experts a token skips", active)

    @model_serializer(mode="wrap")
    def _omit_unset_architecture(self, handler: Any) -> Any:
        """A dense model's plan reads as before: the optional fields appear only when given."""
        data = handler(self)
        if isinstance(data, dict):
            for name in _OPTIONAL_MODEL_FIELDS:
                if data.get(name) is None:
                    data.pop(name, None)
        return data

    @property
    def is_moe(self) -> bool:
        return self.active_parameters is not None

    @property
    def active(self) -> float:
        """Parameters a token passes through: the active ones of a mixture-of-experts model, else all."""
        return self.active_parameters if self.active_parameters is not None else self.parameters


class TrainingSpec(WorkloadModel):
    tokens: PositiveQuantity | None = Field(None, **TOKEN_COUNT_BOUNDS, description="Tokens to train on, e.g. 2T "
                                                                                 "(required for pretrain and finetune)")
    framework: Literal["jax", "pytorch", "tensorflow", "pytorch-xla"] = "jax"
    precision: Literal["bf16", "fp16", "fp8", "fp32"] = "bf16"
    trainable_fraction: float = Field(
        1.0, gt=0, le=1, description="Share of the weights trained: 1 for a full fine-tune; e.g. 0.01 for LoRA "
                                     "or another parameter-efficient fine-tune (frozen weights keep no "
                                     "gradients or optimizer state)")
    global_batch_tokens: PositiveQuantity | None = Field(
        None, **TOKEN_COUNT_BOUNDS, description="Tokens per optimizer step (e.g. 4M); bounds data parallelism. Default: by model size "
                          "from published practice (policies/catalog/assumptions.yaml)")


class InferenceSpec(WorkloadModel):
    tokens_per_second: PositiveQuantity = Field(description="Aggregate generated tokens per second to sustain",
                                                **SERVING_RATE_BOUNDS)
    p99_latency_ms: float = Field(200, gt=0, description="Per-token p99 latency bound")
    framework: Literal["jax", "pytorch", "tensorflow", "pytorch-xla"] = "pytorch"
    precision: Literal["bf16", "fp16", "fp8", "int8"] = Field(
        "bf16", description="Weights (and KV cache) for serving: fp8 on chips with fp8 tensor cores (H100, H200, "
                            "L4, L40S), int8 weight-only anywhere; both halve the bytes read per token")
    hours: float = Field(730, gt=0, **SERVICE_HOURS_BOUNDS, description="How long the service runs, for the run cost (default: a month)")
    prompt_tokens: int | None = Field(None, gt=0, description="Prompt (context) tokens per request")
    output_tokens: int | None = Field(None, gt=0, description="Generated tokens per request")


ObtainClassName = Literal["frontier-gpu", "prior-gpu", "serving-gpu", "tpu"]
ObtainModeKind = Literal["spot", "on-demand", "flex-start", "queued", "capacity-block", "calendar", "negotiated"]


class CapacityConstraints(WorkloadModel):
    """How the capacity model judges obtaining the fleet (policies/cloud/capacity_modes.yaml, docs/capacity.md):
    the quantile a deadline is judged at, and the user's own figures for any obtainability parameter, e.g.
    `obtainability: {frontier-gpu: {spot: {pool_hosts: 512}}}` (from a Spot placement score or experience)."""

    confidence: float | None = Field(None, gt=0, lt=1, description="Quantile of reclaim events the deadline is "
                                                                   "judged at (default 0.9)")
    obtainability: dict[ObtainClassName, dict[ObtainModeKind, dict[str, float]]] = Field(
        default_factory=dict, description="class -> mode -> parameter -> value; overrides the bundled estimates")


class Constraints(WorkloadModel):
    clouds: list[Cloud] = Field(default_factory=lambda: ["gcp", "aws"], min_length=1)
    regions: list[str] | None = Field(None, min_length=1, description="Allowed regions; None = any in the catalog")
    deadline_days: float | None = Field(None, gt=0)
    budget_usd: Quantity | None = Field(None, gt=0)
    spot: Literal["allowed", "required", "never"] = "allowed"
    portability: bool = False
    custom_cuda_kernels: bool = False
    max_chips: int | None = Field(None, gt=0)
    accelerators: list[AcceleratorId] | None = Field(
        None, min_length=1, description="Allowed accelerators (e.g. [l4, l40s] for an inference pool); None = any")
    capacity: CapacityConstraints | None = Field(
        None, description="The obtainability model's quantile and overrides (docs/capacity.md)")

    @model_serializer(mode="wrap")
    def _capacity_only_when_given(self, handler: Any) -> Any:
        """`capacity` is written only when given, so workloads pinned before it read back unchanged."""
        data = handler(self)
        if isinstance(data, dict) and data.get("capacity") is None:
            data.pop("capacity", None)
        return data


_TPU_VM_TYPE = re.compile(r"^([a-z0-9]+)-(\d+)$")


def field_error(loc: str | tuple[str, ...], message: str, value: Any) -> ValidationError:
    """A validation error located at a field (`hardware.topology`, not just `hardware`), for cross-field checks
    inside a model validator; pydantic nests it under the enclosing field like any other error. The message
    reader appends `(got VALUE)`, except for a mapping: pass {} when the message already says it all."""
    return ValidationError.from_exception_data("workload", [InitErrorDetails(
        type=PydanticCustomError("value_error", "{message}", {"message": message}),
        loc=(loc,) if isinstance(loc, str) else loc, input=value)])


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def slice_sizes(generation: str) -> list[int]:
    """The chip counts one slice of this TPU generation can have, smallest first."""
    return sorted({shapes.topology_chips(t) for t in shapes.valid_topologies(generation)})


def allowed_slices(generation: str, near: int | None = None) -> str:
    """What slices of the generation exist, as TPU type names with chips, and the nearest ones to `near` chips."""
    gen = shapes.generation(generation)
    sizes = slice_sizes(gen.name)

    def name(chips: int) -> str:
        return f"{shapes.tpu_vm_type(gen.name, chips)} ({chips} chips)"

    if len(sizes) <= 12:
        text = ", ".join(name(c) for c in sizes)
    else:
        text = (f"{', '.join(name(c) for c in sizes[:6])}, ... {name(sizes[-1])}: the base shapes, then AxBxC with "
                f"every side a multiple of 4")
    if near is not None:
        below = [c for c in sizes if c < near][-1:]
        above = [c for c in sizes if c > near][:1]
        nearest = " or ".join(name(c) for c in below + above)
        if nearest:
            text = f"nearest: {nearest}; valid slices: {text}"
    return text


class HardwarePin(WorkloadModel):
    """A fixed choice: estimate this configuration, search nothing.

    A TPU may be pinned by its Cloud TPU type (`tpu_type: v5p-128`, or that string as the
    accelerator) or by its topology; chips are then derived, remembering that v4-N and v5p-N
    count TensorCores. A TPU type or topology names one slice: `slices` multiplies it. When
    chips and a layout are both given they must agree: a pin is never silently resized, except
    a GPU count (up to whole nodes) or a bare TPU chip count (up to whole slices), which the
    rationale reports.
    """

    accelerator: AcceleratorId
    chips: int = Field(gt=0, description="Chips in total; for a TPU optional when a topology or tpu_type fixes them")
    tpu_type: str | None = Field(None, description="Cloud TPU type of one slice, e.g. v5p-128 (64 chips) or v6e-64")
    cloud: Cloud | None = None
    region: str | None = None
    spot: bool | None = None
    topology: str | None = Field(None, description="TPU slice topology, e.g. 4x4x8 (TPUs only)")
    slices: int | None = Field(None, gt=0, description="Identical TPU slices (multislice); TPUs only")
    machine_type: str | None = None
    # The capacity mode the pinned fleet is bought through, as the Plan's capacity.provisioning names it: on-demand,
    # spot, or flex-start (DWS). Unset: the offering's own (A3 Ultra, A4, TPU7x: flex-start; spot when `spot` or
    # constraints.spot: required says so). A reservation or Capacity Block is declared in accel:reservations.
    provisioning: Literal["on-demand", "spot", "flex-start"] | None = Field(
        None, description="Capacity mode to buy the pinned fleet through: on-demand, spot or flex-start; unset, the "
                          "offering's own")

    @model_serializer(mode="wrap")
    def _provisioning_only_when_given(self, handler: Any) -> Any:
        """`provisioning` is written only when given, so plans pinned before it read back unchanged."""
        data = handler(self)
        if isinstance(data, dict) and data.get("provisioning") is None:
            data.pop("provisioning", None)
        return data

    @property
    def wants_spot(self) -> bool | None:
        """Whether the pin asks for spot (`spot`, or `provisioning: spot`), None when it says neither."""
        if self.spot is not None:
            return self.spot
        return None if self.provisioning is None else self.provisioning == "spot"

    @model_validator(mode="before")
    @classmethod
    def _derive_chips(cls, data: Any) -> Any:
        """Read a TPU type into accelerator and chips, and chips from a TPU topology, before field validation."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        accelerator = data.get("accelerator")
        if isinstance(accelerator, str) and _TPU_VM_TYPE.match(accelerator.strip()):
            if data.get("tpu_type") not in (None, accelerator):
                raise field_error("tpu_type", f"accelerator {accelerator!r} and tpu_type {data['tpu_type']!r} "
                                              "disagree; give the TPU type once", data["tpu_type"])
            data["tpu_type"] = accelerator.strip()
            data.pop("accelerator")
        slices = data.get("slices")
        slices = slices if isinstance(slices, int) and not isinstance(slices, bool) and slices > 0 else 1
        if data.get("tpu_type") is not None:
            accelerator, per_slice, tpu_type = _read_tpu_type(data["tpu_type"], data.get("accelerator"))
            data.update(accelerator=accelerator, tpu_type=tpu_type)
            if data.get("chips") is None:
                data["chips"] = per_slice * slices
            return data
        if data.get("chips") is None:
            generation = shapes.GENERATION_BY_ACCELERATOR.get(str(data.get("accelerator")))
            topology = data.get("topology")
            if generation is None or topology is None:
                raise _chips_missing(data.get("accelerator"))
            data["chips"] = _topology_chips(generation.name, topology) * slices
        return data

    @model_validator(mode="after")
    def _provisioning_agrees_with_spot(self) -> "HardwarePin":
        if self.provisioning is None or self.spot is None or self.spot == (self.provisioning == "spot"):
            return self
        fix = "drop spot" if self.provisioning == "spot" or not self.spot else "drop spot or set provisioning: spot"
        raise field_error("provisioning", f"{self.provisioning} contradicts spot: {str(self.spot).lower()}; {fix}",
                          self.provisioning)

    @model_validator(mode="after")
    def _check_layout(self) -> "HardwarePin":
        """Chips, topology, slices and TPU type must describe one layout; GPUs have no topology or slices."""
        generation = shapes.GENERATION_BY_ACCELERATOR.get(self.accelerator)
        if generation is None:
            if self.topology is not None:
                raise field_error("topology", f"only TPU pins take a topology; {self.accelerator} is a GPU, sized by "
                                              "chips alone (rounded up to whole nodes)", self.topology)
            if self.slices not in (None, 1):
                raise field_error("slices", f"only TPU pins have slices (multislice); {self.accelerator} is a GPU, "
                                            "sized by chips alone (rounded up to whole nodes)", self.slices)
            return self
        if self.tpu_type is not None:
            _, per_type, _ = _read_tpu_type(self.tpu_type, self.accelerator)
            slices = self.slices or 1
            if self.chips != per_type * slices:
                counted = "TensorCores" if generation.cores_per_chip == 2 else "chips"
                layout = (f"it is {per_type} chips" if slices == 1 else
                          f"{slices} slices of {per_type} chips are {per_type * slices}")
                raise field_error("chips", f"tpu_type {self.tpu_type!r} counts {counted}: {layout}, not "
                                           f"{self.chips}; drop chips or make them agree", self.chips)
        if self.topology is not None:
            per_slice = _topology_chips(generation.name, self.topology)
            if self.tpu_type is not None and per_slice * (self.slices or 1) != self.chips:
                raise field_error("topology", f"topology {self.topology} is {per_slice} chips per slice but tpu_type "
                                              f"{self.tpu_type} is {self.chips // (self.slices or 1)}; give one of "
                                              "them", self.topology)
            if self.slices is not None and per_slice * self.slices != self.chips:
                hint = (f"; for {self.chips} chips set slices: {self.chips // per_slice}"
                        if self.chips % per_slice == 0 else "")
                raise field_error("chips", f"{self.chips} chips contradict topology {self.topology} x "
                                           f"{_plural(self.slices, 'slice')} = {per_slice * self.slices} chips; with "
                                           f"both given, chips must equal the topology's {per_slice} chips x slices"
                                           f"{hint}", self.chips)
            if self.chips % per_slice:
                raise field_error("chips", f"{self.chips} chips are not a whole number of {self.topology} slices "
                                           f"({per_slice} chips each); give chips: "
                                           f"{per_slice * max(1, round(self.chips / per_slice))} or drop chips",
                                  self.chips)
        elif self.slices is not None:
            per_slice = self.chips / self.slices
            if per_slice not in slice_sizes(generation.name):
                raise field_error("slices", f"{self.chips} chips in {_plural(self.slices, 'slice')} is {per_slice:g} "
                                            f"chips per slice, which is no TPU {generation.name} slice; "
                                            f"{allowed_slices(generation.name, math.ceil(per_slice))}", self.slices)
        return self


def _topology_chips(generation: str, topology: Any) -> int:
    """Chips in one slice of `topology`; a ValidationError at hardware.topology naming the allowed shapes if the
    generation has no such slice."""
    try:
        shapes.check_topology(generation, topology)
    except shapes.ShapeError as error:
        raise field_error("topology", str(error), topology) from None
    return shapes.topology_chips(topology)


_CHIPS_MISSING = "Field required: give chips (a TPU may give a topology or a tpu_type instead)"


def _chips_missing(accelerator: Any) -> ValidationError:
    """Chips are missing: said together with what is wrong with the accelerator (missing, or not a chip the
    workload may name), so one run shows both rather than the second only once the first is fixed."""
    from pydantic import TypeAdapter

    details = [InitErrorDetails(type=PydanticCustomError("value_error", "{message}", {"message": _CHIPS_MISSING}),
                                loc=("chips",), input={})]
    if accelerator is None:
        details.insert(0, InitErrorDetails(type="missing", loc=("accelerator",), input={}))
    else:
        try:
            TypeAdapter(AcceleratorId).validate_python(accelerator)
        except ValidationError as error:
            details[:0] = [InitErrorDetails(type=e["type"], loc=("accelerator", *e["loc"]), input=e["input"],
                                            ctx=e.get("ctx", {})) for e in error.errors()]
    return ValidationError.from_exception_data("workload", details)


def _read_tpu_type(tpu_type: Any, accelerator: Any) -> tuple[str, int, str]:
    """(accelerator, chips, normalized type) of a Cloud TPU type naming one valid slice, else a ValidationError
    at hardware.tpu_type saying what is allowed."""
    match = _TPU_VM_TYPE.match(tpu_type.strip()) if isinstance(tpu_type, str) else None
    if not match:
        raise field_error("tpu_type", f"not a Cloud TPU type like {shapes.tpu_type_examples()}", tpu_type)
    prefix, count = match.group(1), int(match.group(2))
    generation = hardware.current().generation_of_type_prefix(prefix)
    if generation is None:
        raise field_error("tpu_type", f"not a Cloud TPU type like {shapes.tpu_type_examples()}", tpu_type)
    per_chip = generation.cores_per_chip
    if count % per_chip:
        raise field_error("tpu_type", f"{prefix}-N counts TensorCores (two per chip), so N must be even", tpu_type)
    derived, chips = generation.accelerator, count // per_chip
    if accelerator not in (None, derived):
        raise field_error("tpu_type", f"tpu_type {tpu_type!r} is a {derived}, not {accelerator!r}", tpu_type)
    if chips not in slice_sizes(generation.name):
        counted = " (N counts TensorCores, two per chip)" if per_chip == 2 else ""
        raise field_error("tpu_type", f"{tpu_type.strip()} would be {_plural(chips, 'chip')}{counted}, which is no "
                                      f"TPU {generation.name} slice; {allowed_slices(generation.name, chips)}",
                          tpu_type)
    return derived, chips, tpu_type.strip()


SHARE_FLOOR = 0.001  # 0.1%


class AssumptionOverrides(WorkloadModel):
    """Every estimator default can be replaced per workload; None keeps the default. A share (MFU, goodput, an
    efficiency) is at least SHARE_FLOOR and a size or factor has a ceiling far past any default: beyond them the
    estimate's products under- or overflow and no answer is an answer (tests/test_audit_inputs.py)."""

    mfu: float | None = Field(None, ge=SHARE_FLOOR, le=1)
    goodput: float | None = Field(None, ge=SHARE_FLOOR, le=1)
    bytes_per_parameter: float | None = Field(None, gt=0, le=1_000)
    activation_headroom: float | None = Field(None, ge=0, le=1_000)
    checkpoint_interval_minutes: float | None = Field(None, gt=0)
    restart_minutes: float | None = Field(None, ge=0)
    preemptions_per_day: float | None = Field(None, ge=0, description="Spot preemptions per host per day")
    hbm_usable_fraction: float | None = Field(None, ge=SHARE_FLOOR, le=1)
    # Added with the estimator; every default lives in policies/catalog/assumptions.yaml.
    mfu_decay_per_doubling: float | None = Field(None, ge=SHARE_FLOOR, le=1,
                                                 description="MFU kept per doubling of chips past the reference size")
    multislice_efficiency: float | None = Field(None, ge=SHARE_FLOOR, le=1)
    default_deadline_days: float | None = Field(None, gt=0, le=3_660,
                                                description="Longest training run considered when no deadline is set")
    inference_bytes_per_parameter: float | None = Field(None, gt=0, le=1_000)
    kv_cache_bytes_per_token: float | None = Field(None, ge=1, le=1e12)
    context_tokens: int | None = Field(None, gt=0, le=100_000_000, description="KV cache reserved per sequence in serving")
    hbm_bandwidth_efficiency: float | None = Field(None, ge=SHARE_FLOOR, le=1)
    inference_compute_efficiency: float | None = Field(None, ge=SHARE_FLOOR, le=1)
    latency_p99_factor: float | None = Field(None, ge=1, le=1_000)
    spot_serving_headroom: float | None = Field(None, ge=0, le=1_000)
    prompt_tokens_per_output_token: float | None = Field(None, ge=0, le=1e6,
                                                         description="Prefill tokens processed per generated token")
    replica_scaling_per_doubling: float | None = Field(None, ge=SHARE_FLOOR, le=1,
                                                       description="Serving efficiency kept per doubling of a replica past 8 chips")
    min_replicas: int | None = Field(None, ge=1, description="Fewest serving replicas (availability)")
    time_objective_tolerance: float | None = Field(
        None, ge=0, le=1, description="--objective time takes the smallest fleet within this share of the fastest")


NAME_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$"
NAME_RULE = ("lowercase letters, digits and dashes, at most 40 characters, starting and ending with a letter "
             "or digit")


class WorkloadSpec(WorkloadModel):
    name: str = Field(description=f"{NAME_RULE}; becomes resource names and labels",
                      json_schema_extra={"pattern": NAME_PATTERN})
    kind: Literal["pretrain", "finetune", "inference"]
    model: ModelSpec
    training: TrainingSpec | None = None
    constraints: Constraints = Field(default_factory=Constraints)
    inference: InferenceSpec | None = None
    hardware: HardwarePin | None = None
    assumptions: AssumptionOverrides = Field(default_factory=AssumptionOverrides)
    owner: str | None = Field(None, description="Team or person billed; becomes a label and a tag (policies/tagging)")
    cost_center: str | None = Field(None, description="Cost centre billed; becomes a label and a tag")

    @field_validator("owner", "cost_center")
    @classmethod
    def _every_cloud_can_carry_it(cls, value: str | None) -> str | None:
        from accel.policies.tagging import ownership_problem

        problem = None if value is None else ownership_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("name")
    @classmethod
    def _name_is_a_label(cls, name: str) -> str:
        if not re.fullmatch(NAME_PATTERN, name):
            raise ValueError(f"a workload name is {NAME_RULE}")
        return name

    @model_validator(mode="before")
    @classmethod
    def _serving_reads_framework_from_training(cls, data: Any) -> Any:
        """`kind: inference` with `training: {framework, precision}` and no tokens: the section only names the
        framework (and precision) the model is served with; they move to the inference section."""
        if not isinstance(data, dict) or data.get("kind") != "inference":
            return data
        training, inference = data.get("training"), data.get("inference")
        if not isinstance(training, dict) or "tokens" in training or not isinstance(inference, dict):
            return data
        moved = dict(inference)
        for key in ("framework", "precision"):
            if key not in training:
                continue
            if key in moved and moved[key] != training[key]:
                raise field_error(("training", key), f"{training[key]!r} contradicts inference.{key} "
                                                     f"{moved[key]!r}; give it once, under inference", training[key])
            moved[key] = training[key]
        rest = set(training) - {"framework", "precision"}
        if rest:
            return data   # other training keys: the 'training' check below says what to do
        data = dict(data)
        data["inference"] = moved
        data.pop("training")
        return data

    @model_validator(mode="after")
    def _kind_has_its_section(self) -> "WorkloadSpec":
        if self.kind == "inference" and self.inference is None:
            raise ValueError("kind 'inference' needs an 'inference' section with tokens_per_second")
        if self.kind in ("pretrain", "finetune") and self.training is None:
            raise ValueError(f"kind {self.kind!r} needs a 'training' section with tokens")
        if self.kind in ("pretrain", "finetune") and self.training is not None and self.training.tokens is None:
            raise field_error(("training", "tokens"), f"Field required: kind {self.kind!r} trains on tokens, "
                                                      "e.g. tokens: 2T", {})
        if self.kind == "pretrain" and self.training is not None and self.training.trainable_fraction < 1:
            raise field_error(("training", "trainable_fraction"), "a pretrain trains every weight (1); a "
                                                                  "fraction is for kind: finetune (LoRA)",
                              self.training.trainable_fraction)
        batch = self.training.global_batch_tokens if self.training is not None else None
        if batch is not None and batch < self.model.sequence_length:
            raise field_error(("training", "global_batch_tokens"), f"{batch:,.0f} tokens is less than one sequence "
                                                                   f"(model.sequence_length {self.model.sequence_length:,}): "
                                                                   "a step takes whole sequences", batch)
        # A section of the other kind would be silently ignored: say so instead.
        if self.kind == "inference" and self.training is not None:
            raise field_error("training", "kind 'inference' reads only the 'inference' section; remove 'training' "
                                          "(or set kind: pretrain or finetune)", {})
        if self.kind != "inference" and self.inference is not None:
            raise field_error("inference", f"kind {self.kind!r} reads only the 'training' section; remove "
                                           "'inference' (or set kind: inference)", {})
        conflict = pin_spot_conflict(self)
        if conflict is not None:
            raise field_error(("hardware", "spot"), conflict, {})
        conflict = pin_provisioning_conflict(self)
        if conflict is not None:
            raise field_error(("hardware", "provisioning"), conflict, {})
        return self

    @property
    def framework(self) -> str:
        return self._framework_section.framework

    @property
    def framework_defaulted(self) -> bool:
        """True when the workload never named its framework (training defaults to jax, serving to pytorch)."""
        return "framework" not in self._framework_section.model_fields_set

    @property
    def framework_field(self) -> str:
        """Where the framework is set: training.framework or inference.framework."""
        return "inference.framework" if self.kind == "inference" else "training.framework"

    @property
    def _framework_section(self) -> TrainingSpec | InferenceSpec:
        section = self.inference if self.kind == "inference" else self.training
        assert section is not None
        return section

    @property
    def runs_on_xla(self) -> bool:
        return self.framework in XLA_FRAMEWORKS


def framework_label(spec: WorkloadSpec) -> str:
    """'framework pytorch', saying so when it is the kind's default rather than the user's choice."""
    if not spec.framework_defaulted:
        return f"framework {spec.framework}"
    kind = "inference" if spec.kind == "inference" else "training"
    return (f"framework {spec.framework} (default framework for {kind}; set {spec.framework_field} "
            f"to change it)")


def pin_spot_conflict(spec: WorkloadSpec) -> str | None:
    """Why the hardware pin's spot contradicts constraints.spot, or None when they agree."""
    pin = spec.hardware
    if pin is None or pin.spot is None:
        return None
    if spec.constraints.spot == "required" and not pin.spot:
        return ("false contradicts constraints.spot: required; set hardware.spot: true, or "
                "constraints.spot: allowed or never")
    if spec.constraints.spot == "never" and pin.spot:
        return ("true contradicts constraints.spot: never; set hardware.spot: false, or "
                "constraints.spot: allowed or required")
    return None


def pin_provisioning_conflict(spec: WorkloadSpec) -> str | None:
    """Why the hardware pin's provisioning contradicts constraints.spot, or None when they agree."""
    pin = spec.hardware
    if pin is None or pin.provisioning is None:
        return None
    if spec.constraints.spot == "required" and pin.provisioning != "spot":
        return (f"{pin.provisioning} contradicts constraints.spot: required; set hardware.provisioning: spot, or "
                "constraints.spot: allowed or never")
    if spec.constraints.spot == "never" and pin.provisioning == "spot":
        return "spot contradicts constraints.spot: never; set constraints.spot: allowed or required"
    return None


def int8_checkpoint_missing(precision: str, checkpoint: str | None) -> str | None:
    """Why serving precision `precision` from `checkpoint` (model.checkpoint) is one no serving engine can load, or
    None: int8 (weight-only W8A16) with no checkpoint. vLLM on GPUs and vLLM TPU quantize no bf16 checkpoint to int8 weights as they load
    (accel/job/runtime.yaml vllm_precision.int8_source, vllm_tpu.int8_source), so the serving job refuses it
    (accel/job/vllm_serving.py, vllm_tpu.py) and `accel choose` refuses it before sizing 1-byte weights no engine
    would hold. The one rule both read."""
    if precision != "int8" or checkpoint is not None:
        return None
    return ("int8 (weight-only W8A16) needs model.checkpoint to name a checkpoint already quantized to 8-bit weights "
            "(compressed-tensors W8A16/W8A8 from llm-compressor, or GPTQ 8-bit): vLLM (GPU and TPU) quantizes no "
            "bf16 checkpoint to int8 as it loads, so the serving job would refuse it; set model.checkpoint, or "
            "inference.precision bf16 or fp8")


class WorkloadFieldError(UsageError):
    """A workload value found wrong only against the catalog (a region no offering has) or a stack's separate
    pin (exit 2). The message names the field; whoever knows the file adds it with `with_source`."""

    def __init__(self, field: str, problem: str, source: str | None = None) -> None:
        self.field, self.problem, self.source = field, problem, source
        super().__init__(f"{source + ': ' if source else ''}{field}: {problem}")

    def with_source(self, source: str) -> "WorkloadFieldError":
        return self if self.source else WorkloadFieldError(self.field, self.problem, source)


def workload_from_mapping(data: Any, source: str) -> WorkloadSpec:
    """Validate a workload mapping (a parsed WORKLOAD.yaml or a stack's `accel:workload`).

    Raises accel.base.errors.UsageError with one `source: field.path: problem` line per problem.
    """
    from pydantic import ValidationError

    from accel.base.errors import UsageError
    from accel.base.model import describe_validation_error

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

    from accel.base.derived_cache import cached

    file = Path(path)

    def validated() -> WorkloadSpec:
        from accel.base.yaml_files import read_yaml_file  # PyYAML only on a cache miss (~10 ms of a warm choose)

        return workload_from_mapping(read_yaml_file(file, "workload file"), str(file))

    if not hardware.bundled_in_use():
        return validated()
    # A file validated before (same bytes, same facts table, same code) is read back from the
    # derived-data cache; a file that fails is never cached and fails the same way every run.
    from accel.policies.architectures import TABLE

    return cached("workload", [file, hardware.BUNDLED_FACTS, TABLE], validated, code=[hardware.POLICIES_DIR])
