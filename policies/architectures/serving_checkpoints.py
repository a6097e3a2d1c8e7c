"""serving_checkpoints.yaml beside this module: the published fp8 checkpoints of architecture rows and the Llama
stand-ins a serving workload naming no model is served by. Read on first use (only fp8 serving and stand-ins ask).

Which checkpoint an fp8 serving job loads (accel/job/model_run.py, vllm_serving.py, vllm_tpu.py): model.checkpoint as
given, taken as pre-quantized where it is a published fp8 repo or its name says fp8; else the named architecture's
published fp8 checkpoint, if any (else vLLM quantizes its bf16 weights online, layer by layer as they load: runtime.yaml
vllm_precision.fp8_online_load); else, for a workload naming no model, a Llama stand-in, each published in fp8. The
estimate sizes an fp8 replica by its fp8 weights whichever it is, so only the job asks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

FILE = Path(__file__).resolve().parent / "serving_checkpoints.yaml"


@dataclass(frozen=True)
class Fp8Checkpoint:
    model: str      # a Hugging Face repo id whose config.json states its fp8 quantization
    method: str     # its config.json quantization_config.quant_method
    source: str


@dataclass(frozen=True)
class StandIn:
    architecture: str   # the architectures.yaml row it is (parameters, shape)
    max_parameters: float   # served for a workload of up to this many parameters (where it fits)
    model: str          # the bf16 instruct repo
    fp8: str            # its published fp8 checkpoint
    fp8_method: str     # that checkpoint's quant_method
    fp8_source: str
    parameters: float


@dataclass(frozen=True)
class ServingCheckpoints:
    fp8: dict[str, Fp8Checkpoint]       # by architecture row name
    stand_ins: tuple[StandIn, ...]      # smallest first

    def fp8_models(self) -> dict[str, str]:
        """Every repo known to hold fp8 weights, with its source."""
        known = {row.model: row.source for row in self.fp8.values()}
        return {**known, **{s.fp8: s.fp8_source for s in self.stand_ins}}

    def fp8_repo(self, architecture: str) -> str | None:
        """The architecture row's published fp8 checkpoint, None where it has none."""
        row = self.fp8.get(architecture)
        return None if row is None else row.model

    def says_fp8(self, checkpoint: str) -> bool:
        """A checkpoint taken for pre-quantized fp8: a published fp8 repo, or one whose name says fp8."""
        return checkpoint in self.fp8_models() or "fp8" in checkpoint.lower()

    def fp8_methods(self) -> dict[str, str]:
        """The quant_method each known fp8 repo's config.json names."""
        return {**{row.model: row.method for row in self.fp8.values()},
                **{s.fp8: s.fp8_method for s in self.stand_ins}}


@cache
def table() -> ServingCheckpoints:
    from accel.base.safe_files import read_text
    from accel.base.yaml_files import parse_yaml
    from accel.policies.architectures.rows import lookup

    data = parse_yaml(read_text(FILE, "serving checkpoint table"))
    fp8 = {name: Fp8Checkpoint(**row) for name, row in data["fp8"].items()}
    stand_ins = []
    for row in data["stand_ins"]:
        architecture = lookup(row["architecture"])
        if architecture is None:
            raise ValueError(f"{FILE.name}: stand-in {row['model']} names no architecture row {row['architecture']}")
        stand_ins.append(StandIn(**{**row, "max_parameters": float(row["max_parameters"])},
                                 parameters=architecture.parameters))
    return ServingCheckpoints(fp8, tuple(sorted(stand_ins, key=lambda s: s.parameters)))
