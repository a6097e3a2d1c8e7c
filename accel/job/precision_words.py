"""The flags a serving engine is given for the plan's `inference.precision`, and what the job says of them: one shape
and one wording for vLLM on GPUs (accel/job/vllm_serving.py) and vLLM TPU (accel/job/vllm_tpu.py)."""

from __future__ import annotations

from dataclasses import dataclass

from accel.policies import hardware
from accel.policies.plan import SERVED_PRECISION


@dataclass(frozen=True)
class PrecisionFlags:
    flags: str          # after the engine's other arguments, with a leading space: ' --dtype ...', ' weight_dtype=...'
    notes: list[str]


def chip_name(accelerator: str) -> str:
    """The chip's name in the hardware table (what a precision note or refusal calls it), else the accelerator id."""
    chip = hardware.current().chips.get(accelerator)
    return chip.name if chip is not None else accelerator


TWICE_SIZED = "2 bytes per weight, twice what the plan sized"


def sized_below_asked(precision: str, chip: str) -> str:
    """inference.precision fp8 on a chip the estimate sized at `precision` (bf16) for want of fp8 tensor cores."""
    return (f"inference.precision fp8, but the plan sized {precision} weights and KV cache on {chip} (its "
            f"'{SERVED_PRECISION}' assumption: fp8 needs fp8 tensor cores)")


def int8_needs_checkpoint(quantized: str, model: str, what: str) -> str:
    """The start of the refusal of int8 with model.checkpoint unset: `model` (`what` it is) has 2-byte weights."""
    return (f"inference.precision: int8 (weight-only W8A16) needs model.checkpoint to name a checkpoint quantized "
            f"to {quantized}; model.checkpoint is unset and {model} is {what}")
