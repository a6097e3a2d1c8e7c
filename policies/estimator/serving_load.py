"""Which checkpoint a GPU serving replica in fp8 loads, the one rule the estimate and the vLLM job share
(accel/job/model_run.py, accel/job/vllm_serving.py).

At inference.precision fp8 vLLM either reads a checkpoint already in fp8 (its config.json names the method: 1 byte
per weight from the start) or quantizes a bf16 one online (`--quantization fp8_per_tensor`). Online, vLLM v0.33.0
allocates the layers' weights on the meta device and quantizes each layer as soon as its bf16 weights have arrived
(vllm/model_executor/layers/quantization/online/fp8.py l.123-186, OnlineLinearBase: 'materialized and processed
during loading'; model_executor/model_loader/reload/layerwise.py l.216-219: a layer is processed once all its weights
are loaded), so the replica holds the fp8 weights plus the bf16 of the layers loading at the time, not the whole
model in bf16 as v0.8.5 did: the estimate sizes an online fp8 replica by its fp8 weights (runtime.yaml
vllm_precision.fp8_load_peak).

Which checkpoint is served (policies/architectures/serving_checkpoints.yaml): model.checkpoint as given (taken as
fp8 where its name says so or it is a published fp8 repo); else the named architecture's published fp8 checkpoint,
if any; else, for a workload naming no model, a Llama stand-in, each published in fp8.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.policies.workload import WorkloadSpec


@dataclass(frozen=True)
class Fp8Source:
    model: str | None     # the repo served in fp8 (None: model.checkpoint as given, or a stand-in chosen by the job)


def says_fp8(checkpoint: str) -> bool:
    """A checkpoint taken for pre-quantized fp8: a published fp8 repo, or one whose name says fp8."""
    from accel.policies.architectures.serving_checkpoints import table

    return checkpoint in table().fp8_models() or "fp8" in checkpoint.lower()


def fp8_source(spec: WorkloadSpec) -> Fp8Source:
    """Where the fp8 weights of an fp8 serving workload come from (see the module's docstring); the job says why
    (accel/job/vllm_serving.py)."""
    from accel.policies.architectures.serving_checkpoints import table

    model = spec.model
    if model.checkpoint is not None:
        return Fp8Source(model.checkpoint)
    if model.architecture is not None:
        published = table().fp8.get(model.architecture)
        return Fp8Source(None if published is None else published.model)
    return Fp8Source(None)   # a stand-in, each published in fp8
