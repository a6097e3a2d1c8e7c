"""The flags that make MaxText's JetStream engine on TPU hold the bytes the plan sized at its serving precision
(plan_view.serving_precision: the estimate's decision, as vLLM's flags read it), or a refusal (exit 2) where that
engine cannot hold them.

MaxText builds and restores weights at `weight_dtype`, float32 by default: every TPU server passes bfloat16, the
2 bytes per weight the plan sizes. int8 (W8A16, KV cache bf16) is held as int8 only from a checkpoint MaxText
quantized itself, read with checkpoint_is_quantized=True; given a bf16 checkpoint the engine keeps the full kernels
and quantizes each forward. fp8 has no TPU serving path there. Facts: runtime.yaml `maxtext_precision`, with sources.
"""

from __future__ import annotations

from accel.base.errors import UsageError
from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job.facts import cite, runtime
from accel.job.precision_words import PrecisionFlags, TWICE_SIZED, chip_name, int8_needs_checkpoint, sized_below_asked


def _chip(plan: Plan) -> str:
    return chip_name(plan_view.hardware(plan).accelerator)


def engine_precision(plan: Plan, model: str, checkpoint: str | None, stand_in: bool) -> PrecisionFlags:
    """Flags after the engine's command (leading space) for serving `model` (an architecture's MaxText config, or
    the JetStream image's default config when `stand_in`) from `checkpoint` (model.checkpoint, a MaxText checkpoint,
    or None), and what the job says of them. UsageError where the engine would hold other bytes than the plan sized."""
    facts = runtime()["maxtext_precision"]
    asked, precision = plan_view.serving_precision(plan)
    two_bytes = f" {facts['two_bytes']}"
    held = (f"weights held in bf16 ({facts['two_bytes']}; MaxText's default weight_dtype is float32, twice the "
            f"bytes: {cite(facts['stand_in_weight_dtype_source' if stand_in else 'weight_dtype_source'])})")
    if precision == "fp8":
        raise UsageError(
            f"inference.precision: fp8: the plan sized 1-byte fp8 weights and KV cache on {_chip(plan)}, and MaxText's "
            "JetStream engine has no fp8 serving path on TPU: its fp8 quantization is for NVIDIA GPUs or a training "
            f"recipe, its KV cache quantizes to int8 or int4 only, and it holds 1-byte weights only as int8 from a "
            f"quantized checkpoint ({cite(facts['fp8_source'])}); set inference.precision int8 (with model.checkpoint "
            f"a MaxText checkpoint quantized by python3 -m {facts['int8_quantizer']}) or bf16, pin a GPU with fp8 "
            "tensor cores, or pass --command with your own server")
    if precision == "int8":
        if stand_in or checkpoint is None:
            what = "a stand-in with random weights" if stand_in else "MaxText's config with random weights"
            quantized = f"int8 by MaxText (python3 -m {facts['int8_quantizer']} ... quantization=int8 " \
                        "save_quantized_params_path=gs://...)"
            raise UsageError(
                f"{int8_needs_checkpoint(quantized, model, what)}: MaxText's JetStream engine holds int8 weights only "
                f"read from such a checkpoint ({facts['int8']}); else it keeps the full-precision kernels and "
                f"quantizes each forward ({cite(facts['int8_source'])}), {TWICE_SIZED}. Set model.checkpoint to the "
                "quantized checkpoint's gs:// path" + (" and model.architecture" if stand_in else "")
                + ", choose inference.precision bf16, or pass --command")
        return PrecisionFlags(f" {facts['int8']}{two_bytes}", [
            f"precision int8 (W8A16): {facts['int8']}: MaxText's engine reads AQT int8 weights from model.checkpoint "
            f"{checkpoint}, which must be a checkpoint MaxText quantized (python3 -m {facts['int8_quantizer']} with "
            "quantization=int8 save_quantized_params_path=...), which a bf16 one is not, and without "
            f"checkpoint_is_quantized MaxText would keep it whole, {TWICE_SIZED} ({cite(facts['int8_source'])}); "
            f"the weights left unquantized (embeddings, norms) in bf16 ({facts['two_bytes']}); KV cache bf16 as "
            "planned"])
    if asked == "fp8":
        return PrecisionFlags(two_bytes, [f"precision: {sized_below_asked(precision, _chip(plan))}, so MaxText "
                                          f"serves bf16: {held}"])
    if precision == "fp16":
        return PrecisionFlags(two_bytes, [f"precision fp16: MaxText serves TPU weights in bf16, the same 2 bytes the "
                                          f"plan sized: {held}"])
    return PrecisionFlags(two_bytes, [f"precision bf16: {held}"])
