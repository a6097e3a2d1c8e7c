"""What a TPU serving replica runs: vLLM TPU (vLLM with Google's tpu-inference plugin, runtime.yaml defaults.vllm-tpu)
serving the workload's model as published on Hugging Face (model.checkpoint, else the architecture's repo, else a
stand-in), with the flags that hold the bytes the plan sized, in the pod GKE's vLLM TPU tutorial runs: the host's
chips in one container, a memory-backed /dev/shm, a readiness probe on the server's port.

A replica is one host's slice (policies/hardware/tpu_serving.py): tensor parallelism over its JAX devices (its chips;
TPU7x's, two each: accel/job/tpu_devices.py), the heads split as vLLM and tpu-inference require. Facts: runtime.yaml
`vllm_tpu`, with sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.architectures import serving_checkpoints
from accel.policies.plan import Plan
from accel.policies.workload import int8_checkpoint_missing

from accel.job import model_run, plan_view, stand_in, tpu_devices
from accel.job.facts import cite, runtime
from accel.job.model_run import ServedModel
from accel.job.plan_view import Hardware
from accel.job.precision_words import PrecisionFlags, TWICE_SIZED, chip_name, int8_needs_checkpoint, sized_below_asked

SHM_VOLUME = "dshm"


def _facts() -> dict[str, Any]:
    return runtime()["vllm_tpu"]


@dataclass(frozen=True)
class TpuServer:
    model: str                   # what `vllm serve` loads
    command: str
    notes: list[str]
    stand_in_size: float | None  # the stand-in's parameters where it is not the size the workload names


def _check_tensor_parallel(plan: Plan, tensor: int) -> None:
    """UsageError where vLLM TPU refuses the named architecture over `tensor` JAX devices: the query heads split
    evenly (vLLM's check), the KV heads split evenly or, fewer than the devices, replicate evenly onto them
    (tpu-inference's), the same rule as vLLM's on GPUs (model_run.vllm_tensor_parallel_problem) under tpu-inference's
    citation."""
    row = model_run.named_model(plan).architecture
    problem = None if row is None else model_run.vllm_tensor_parallel_problem(row, tensor)
    if problem:
        raise UsageError(f"model.architecture: {row.name}: {problem}, and vLLM TPU refuses such a layout "
                         f"({cite(_facts()['heads_source'])}); pin a TPU slice whose JAX devices divide the heads, "
                         "or pass --command with your own vllm serve")


def _is_moe(plan: Plan) -> bool | None:
    """Whether the named architecture routes over experts; None when no architecture is named."""
    row = model_run.named_model(plan).architecture
    return None if row is None else bool(row.experts)


def precision_flags(plan: Plan, hw: Hardware, served: ServedModel) -> PrecisionFlags:
    """The --dtype / --quantization / --kv-cache-dtype flags that make vLLM TPU hold what the plan sized at its serving
    precision (the estimate's decision, plan_view.serving_precision), and what the job says of them. UsageError
    (exit 2) where vLLM TPU would hold other bytes: int8 without an 8-bit checkpoint, fp8 experts from a bf16 one."""
    facts = _facts()
    model, checkpoint = served.model, served.checkpoint
    asked, precision = plan_view.serving_precision(plan)
    dtype = f" --dtype {facts['dtype'][precision]}"
    chip = chip_name(hw.accelerator)
    if asked == "fp8" and precision != "fp8":
        if hardware.current().chips[hw.accelerator].peak_fp8_tflops and plan.workload.model.experts:
            # A chip with fp8 sized at bf16: the estimate's experts_stay_bf16 (policies/estimator/estimate.py).
            return PrecisionFlags(dtype, [
                f"precision: inference.precision fp8, but the plan sized bf16 weights and KV cache on {chip}: "
                f"tpu-inference quantizes no bf16 checkpoint's routed experts as it loads ({cite(facts['fp8_source'])})"
                f", and {model} is not in fp8, so vLLM TPU serves {facts['dtype'][precision]} (set model.checkpoint "
                "to the model's fp8 checkpoint to serve fp8)"])
        return PrecisionFlags(dtype, [f"precision: {sized_below_asked(precision, chip)}, so vLLM TPU serves "
                                      f"{facts['dtype'][precision]}"])
    if precision == "fp8":
        quantize, kv_cache = facts["fp8_quantization"], facts["fp8_kv_cache"]
        if serving_checkpoints.table().says_fp8(model):
            return PrecisionFlags(f"{dtype} {kv_cache}", [
                f"precision fp8: {model} is taken for a checkpoint already in fp8: vLLM reads its method from its "
                f"config.json, so no --quantization; {kv_cache} keeps K/V in one byte as the plan sized "
                f"({cite(facts['fp8_source'])})"])
        if _is_moe(plan):
            raise UsageError(
                f"inference.precision: fp8 with {model}: tpu-inference quantizes a bf16 checkpoint's linear layers to "
                "fp8 as it loads, but not its routed experts ('FP8OnelineMoEMethod is not supported'), which would "
                f"stay in bf16, {TWICE_SIZED} ({cite(facts['fp8_source'])}); set model.checkpoint to the model's "
                "fp8 checkpoint, choose inference.precision bf16, or pass --command")
        unknown = (" (no model.architecture: if the checkpoint routes over experts, tpu-inference quantizes only a "
                   "checkpoint already in fp8 there)" if _is_moe(plan) is None else "")
        return PrecisionFlags(f"{dtype} {quantize} {kv_cache}", [
            f"precision fp8: vLLM TPU quantizes {model}'s linear layers to fp8 as it loads ({quantize}, W8A8) and "
            f"stores K/V in fp8 ({kv_cache}), the 1 byte per weight and per K/V value the plan sized"
            f"{unknown} ({cite(facts['fp8_source'])})"])
    if precision == "int8":
        if int8_checkpoint_missing(precision, checkpoint) is not None:   # the rule choose refuses by
            raise UsageError(
                int8_needs_checkpoint("8-bit integer weights (compressed-tensors, e.g. INT8 W8A8 from llm-compressor)",
                                      model, served.what)
                + f": tpu-inference quantizes no bf16 checkpoint to int8 through a flag ({cite(facts['int8_source'])}),"
                f" so vLLM TPU would hold {TWICE_SIZED}. Set model.checkpoint, choose inference.precision bf16, or "
                "pass --command")
        return PrecisionFlags(dtype, [
            f"precision int8: vLLM reads the quantization from model.checkpoint {checkpoint}'s config.json (no "
            "--quantization flag); it must hold 8-bit integer weights (compressed-tensors): a bf16 one loads "
            f"{TWICE_SIZED} ({cite(facts['int8_source'])}); KV cache bf16 as planned"])
    if precision == "fp16":
        return PrecisionFlags(dtype, ["precision fp16: vLLM TPU serves bf16, the same 2 bytes per weight the plan "
                                      "sized (TPUs compute in bf16)"])
    return PrecisionFlags(dtype, [])


def _generation_note(hw: Hardware) -> list[str]:
    """Said where the plan's TPU is not one tpu-inference recommends."""
    generations = _facts()["generations"]
    if hw.tpu_generation in generations["recommended"]:
        return []
    standing = "experimental" if hw.tpu_generation in generations["experimental"] else "not listed"
    return [f"TPU {hw.tpu_generation}: {standing} for vLLM TPU, which recommends "
            f"{', '.join(generations['recommended'])} ({cite(generations['source'])})"]


def server(plan: Plan, hw: Hardware, chips: int, port: int) -> TpuServer:
    """vLLM TPU's command over one replica of `chips` chips (one host), listening on `port`: what it serves, the
    tensor parallelism (over the chips' JAX devices, the unit vLLM TPU counts), the context the plan sized and the
    precision flags, and the job's notes on them."""
    tensor = tpu_devices.devices(hw.accelerator, chips)
    _check_tensor_parallel(plan, tensor)
    named = model_run.named_model(plan)
    notes: list[str] = []
    stand_in_size = None
    model = stand_in.by_size(plan.workload.model.parameters).model
    if not named.named:
        # No model named: a stand-in whose weights fit the replica planned (accel/job/stand_in.py).
        standing = stand_in.choose(plan, chips, chip_name(hw.accelerator))
        model, stand_in_size = standing.model, standing.said_size
        notes += [standing.note] if standing.note else []
    # A bucket is streamed by vllm-tpu's own Run:ai streamer (runtime.yaml vllm_tpu.object_store: gs:// and s3://).
    served = model_run.vllm_model(plan, model, custom_image=False, store=_facts()["object_store"])
    notes += served.notes
    precision = precision_flags(plan, hw, served)
    notes += precision.notes
    length = plan.workload.model.sequence_length
    command = (f"vllm serve {served.model}{served.flags} --port {port}{precision.flags} "
               f"--tensor-parallel-size {tensor} --max-model-len {length}")
    notes.append(f"engine: vLLM TPU, tensor parallelism over the replica's {tpu_devices.counted(hw.accelerator, chips)}"
                 f", --max-model-len {length} "
                 f"(model.sequence_length, the context the plan sized the KV cache for; vLLM would otherwise take "
                 f"the model's own: {cite(_facts()['max_model_len_source'])})")
    if tensor != chips:
        notes.append(_devices_note(hw.accelerator, chips, tensor))
    notes += _generation_note(hw)
    return TpuServer(served.model, command, notes, stand_in_size)


def _devices_note(accelerator: str, chips: int, tensor: int) -> str:
    """Why --tensor-parallel-size is not the chip count: vLLM TPU counts JAX devices and takes only that many."""
    facts = _facts()["devices"]
    return (f"--tensor-parallel-size {tensor}, not {chips}: each {chip_name(accelerator)} chip is "
            f"{tpu_devices.per_chip(accelerator)} JAX devices [{tpu_devices.source(accelerator)}], and vLLM TPU counts "
            f"devices and takes the first TP of them, so --tensor-parallel-size {chips} would use {chips} of its "
            f"{tensor} "
            f"({cite(facts['source'])})")


def pod(container: dict[str, Any], spec: dict[str, Any], port: int) -> str:
    """Fit the serving pod as GKE's vLLM TPU tutorial runs it: a readiness probe on the server's port (no liveness
    probe: the first start compiles for minutes before the port opens) and a memory-backed /dev/shm. Returns the
    note."""
    facts = _facts()
    container["readinessProbe"] = {"tcpSocket": {"port": port}, **facts["readiness"]}
    container.setdefault("volumeMounts", []).append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    spec.setdefault("volumes", []).append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
    return (f"pod: vLLM's OpenAI server on {port} (GET /health, /v1/completions), readiness when the port opens "
            f"(initialDelaySeconds {facts['readiness']['initialDelaySeconds']}, periodSeconds "
            f"{facts['readiness']['periodSeconds']}), /dev/shm memory-backed; the first start compiles the XLA graphs "
            f"for minutes (set VLLM_XLA_CACHE_PATH to a bucket to keep them across restarts) "
            f"({cite(facts['pod_source'])})")
