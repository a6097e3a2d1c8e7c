"""What vLLM a GPU serving replica runs: the image built for its GPU generation and CPU architecture, and the flags
that make vLLM load the bytes the plan sized at the workload's `inference.precision` (weights and KV cache, policies/
catalog/assumptions.yaml inference.precisions).

Facts (which image carries kernels for which compute capability, what each precision needs of vLLM, where each flag
is defined) are runtime.yaml `vllm_generations`, `defaults.vllm` and `vllm_precision`, with sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.architectures import serving_checkpoints
from accel.policies.plan import Plan
from accel.policies.workload import int8_checkpoint_missing

from accel.job.architectures import node_arch
from accel.job.facts import cite, runtime
from accel.job.model_run import ServedModel
from accel.job.precision_words import PrecisionFlags, TWICE_SIZED, chip_name, int8_needs_checkpoint, sized_below_asked
from accel.job import plan_view
from accel.job.plan_view import Hardware


# ----- the image: the release built for the GPU generation and the node's CPU architecture -----

@dataclass(frozen=True)
class VllmImage:
    image: str
    release: str        # the release image built for the GPU (`image` is it, or its variant)
    arch: str
    capability: str
    chip: str
    cuda: str
    driver: str

    @property
    def note(self) -> str:
        """What the job says of it: the GPU generation it is built for, the CUDA and driver it needs."""
        variant = "" if self.image == self.release else f" (a variant of {self.release})"
        return (f"image: {self.image}{variant}, vLLM's release image for {self.arch} built for compute capability "
                f"{self.capability} ({self.chip}) on CUDA {self.cuda}: the node's driver must be {self.driver} "
                "(sources: runtime.yaml vllm_generations)")


def default_image(hw: Hardware) -> VllmImage:
    """The default vLLM image for `hw`'s nodes: the row of runtime.yaml vllm_generations built for the chip's compute
    capability on the node's CPU architecture. UsageError for a GPU no row is built for (pass --image)."""
    defaults = runtime()["defaults"]
    rows = runtime()["vllm_generations"]
    arch = node_arch(hw.machine_type, hw.accelerator)
    chip = hardware.current().chips.get(hw.accelerator)
    capability = chip.compute_capability if chip is not None else None
    for name, row in rows.items():
        if capability in row["compute_capabilities"].get(arch, ()):
            image = row.get("image") or defaults[name]["image"]
            return VllmImage(image, image, arch, capability, chip.name, row["cuda"], row["driver"])
    built = "; ".join(f"{row.get('image') or defaults[name]['image']} on {arch}: "
                      f"{' '.join(row['compute_capabilities'].get(arch, ())) or 'none'}"
                      for name, row in rows.items())
    raise UsageError(f"accelerator {hw.accelerator} (compute capability {capability or 'unknown'}): no default vLLM "
                     f"image is built for it ({built}); pass --image with a vLLM built for this GPU")


# ----- the precision: flags that load what the plan sized -----

def precision_flags(plan: Plan, hw: Hardware, served: ServedModel, gpus: int) -> PrecisionFlags:
    """The --dtype / --quantization / --kv-cache-dtype flags for serving `served` (model_run.vllm_model's decision)
    over a replica of `gpus` GPUs at the plan's inference.precision, and what the job says of them. UsageError (exit 2)
    where vLLM would load more than the plan sized: int8 without an 8-bit checkpoint."""
    facts = runtime()["vllm_precision"]
    model, checkpoint = served.model, served.checkpoint
    asked, precision = plan_view.serving_precision(plan)   # the estimate's decision, not re-derived here
    dtype = f" --dtype {facts['dtype'][precision]}"
    name = chip_name(hw.accelerator)
    if asked == "fp8" and precision != "fp8":
        return PrecisionFlags(dtype, [
            f"precision: {sized_below_asked(precision, name)}, so vLLM serves {precision} (it could run an fp8 "
            f"checkpoint weight-only through FP8 Marlin, W8A16, which the plan does not count on; "
            f"{cite(facts['fp8_source'])})"])
    if precision == "fp8":
        quantize, kv_cache = facts["fp8_quantization"], facts["fp8_kv_cache"]
        published = serving_checkpoints.table().fp8_models().get(model)
        if serving_checkpoints.table().says_fp8(model):
            why = f"published in fp8 ({cite(published)})" if published else "its name says fp8"
            notes = [f"precision fp8: {model} is taken for a pre-quantized fp8 checkpoint ({why}): vLLM reads its "
                     "method from the checkpoint's config.json quantization_config, so no --quantization "
                     f"({cite(facts['checkpoint_quantization'])}); {kv_cache} keeps K/V in one byte as the plan "
                     "sized (calibrated KV scales in the checkpoint are used, else 1.0: check quality)"]
            method = serving_checkpoints.table().fp8_methods().get(model)
            if method in facts["deprecated_methods"]:
                # vLLM refuses a deprecated method unless told to, the checkpoint's own included.
                notes.append(f"quantization: {model} names {method}, which this vLLM deprecates and loads only with "
                             f"{facts['allow_deprecated']} ({cite(facts['deprecated_source'])})")
                return PrecisionFlags(f"{dtype} {facts['allow_deprecated']} {kv_cache}", notes)
            return PrecisionFlags(f"{dtype} {kv_cache}", notes)
        ready = ("" if checkpoint is None else
                 f"; if {checkpoint} is already quantized, vLLM refuses {quantize} unless that is its method "
                 f"({cite(facts['checkpoint_quantization'])}): pass --command without it")
        per_gpu = plan.workload.model.parameters / gpus   # 1 byte per weight in fp8
        return PrecisionFlags(f"{dtype} {quantize} {kv_cache}", [
            f"precision fp8: vLLM quantizes {model} to fp8 as it loads (W8A8, dynamic activation scales: "
            f"{quantize}) and stores K/V in fp8 ({kv_cache}, scales 1.0: check quality), the 1 byte "
            f"per weight and per K/V value the plan sized ({cite(facts['fp8_source'])})",
            f"load: vLLM quantizes each layer as its bf16 weights arrive, so a GPU holds {per_gpu / 1e9:,.1f} GB of "
            f"fp8 weights ({gpus} per replica) and the layers loading at the time, never the whole model in bf16 "
            f"({cite(facts['fp8_online_load'])}){ready}"])
    if precision == "int8":
        if int8_checkpoint_missing(precision, checkpoint) is not None:   # the rule choose refuses by
            what = served.what
            if model in serving_checkpoints.table().fp8_models():
                raise UsageError(
                    f"{int8_needs_checkpoint('8-bit integer weights', model, what)}, published "
                    "in fp8: set inference.precision fp8 (1 byte per weight as well), or model.checkpoint")
            raise UsageError(
                int8_needs_checkpoint("8-bit weights (e.g. compressed-tensors W8A16 from llm-compressor, or GPTQ "
                                      "8-bit)", model, what)
                + ": vLLM quantizes no dense checkpoint to int8 weight-only on GPUs as it loads "
                f"({cite(facts['int8_source'])}), so it would load {TWICE_SIZED}. Set model.checkpoint, choose "
                "inference.precision bf16 or fp8, or pass --command")
        return PrecisionFlags(dtype, [
            f"precision int8 (W8A16): vLLM reads the quantization from model.checkpoint {checkpoint}'s config.json "
            f"(no --quantization flag, {cite(facts['checkpoint_quantization'])}); it must be an 8-bit weight-only "
            f"checkpoint (compressed-tensors W8A16, GPTQ 8-bit): a bf16 one loads {TWICE_SIZED} "
            f"({cite(facts['int8_source'])}); KV cache bf16 as planned"])
    return PrecisionFlags(dtype, [])
