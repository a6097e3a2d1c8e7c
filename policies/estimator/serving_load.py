"""What a GPU serving replica holds while vLLM loads its weights: the one rule the estimate sizes a replica by
(InferenceModel.load_bytes) and the vLLM job serves by (accel/job/vllm_serving.py).

At inference.precision fp8 vLLM either reads a checkpoint already in fp8 (its config.json names the method: 1 byte
per weight from the start) or quantizes a bf16 one online (`--quantization fp8`), and online it allocates the layers
at the checkpoint's dtype and quantizes only once every weight is loaded (vLLM v0.8.5 vllm/model_executor/layers/
quantization/fp8.py l.238-240, Fp8LinearMethod.create_weights: a checkpoint not serialized in fp8 gets params at
params_dtype; model_loader/loader.py l.455-471: process_weights_after_loading runs after load_weights; its FP8 page:
"you need enough memory to load the whole model"). So the peak is the bf16 weights, twice what is served.

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
    pre_quantized: bool   # vLLM reads fp8 weights: no bf16 load peak


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
        return Fp8Source(model.checkpoint, says_fp8(model.checkpoint))
    if model.architecture is not None:
        published = table().fp8.get(model.architecture)
        return Fp8Source(None if published is None else published.model, published is not None)
    return Fp8Source(None, True)   # a stand-in, each published in fp8


def load_precision(spec: WorkloadSpec, served: str, family: str) -> str:
    """The precision a replica holds the weights at while they load: the served one, except fp8 on GPUs from a
    checkpoint not in fp8, which vLLM holds at bf16 until every weight is loaded."""
    if served != "fp8" or family != "gpu":
        return served
    return "fp8" if fp8_source(spec).pre_quantized else "bf16"
