"""The model a generated job runs: the workload's `model.architecture` (a row of policies/architectures) and
`model.checkpoint`, written into the default MaxText and vLLM commands (vLLM on GPUs and, as vLLM TPU, on TPUs);
without them the defaults run the stand-ins they always ran, and say so.

Facts of the programs (flag names, module paths, what loads a bucket) are runtime.yaml `model_run`, with sources.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.base.errors import UsageError
from accel.policies import architectures
from accel.policies.architectures import Architecture, serving_checkpoints
# vLLM's rule over the heads, read by the search too (policies/architectures/serving_heads.py): one copy.
from accel.policies.architectures.serving_heads import tensor_parallel_problem as vllm_tensor_parallel_problem
from accel.policies.plan import Plan
from accel.policies.workload import checkpoint_form

from accel.job import plan_view
from accel.job.facts import cite, runtime


@dataclass(frozen=True)
class NamedModel:
    architecture: Architecture | None
    checkpoint: str | None

    @property
    def named(self) -> bool:
        return self.architecture is not None or self.checkpoint is not None


def named_model(plan: Plan) -> NamedModel:
    model = plan.workload.model
    row = architectures.lookup(model.architecture) if model.architecture else None
    return NamedModel(row, model.checkpoint)


def _facts() -> dict:
    return runtime()["model_run"]


def _tokenizer_args(row: Architecture, assets: str) -> str:
    """MaxText's tokenizer_path (its shipped file under `assets`, or a Hugging Face id) and tokenizer_type."""
    tokenizer = row.tokenizer
    path = f"{assets}/{tokenizer.path}" if tokenizer.is_asset else tokenizer.path
    kind = "" if tokenizer.is_default_type else f" tokenizer_type={tokenizer.type}"
    return f"tokenizer_path={path}{kind}"


def _gated_note(repo: str, who: str = "the pod") -> str:
    return (f"Hugging Face repo {repo} is gated (its licence must be accepted): {who} needs "
            f"{_facts()['hf_token']}")


# ----- training: MaxText runs the named model's config -----

def maxtext_training_args(plan: Plan) -> str:
    """' model_name=<row>' for the default MaxText command of a workload naming an architecture, else ''."""
    row = named_model(plan).architecture
    return f" model_name={row.name}" if row is not None else ""


def training_notes(plan: Plan, maxtext: bool, written: bool) -> list[str]:
    """What the job says of the model it trains: the MaxText config it passes, the smoke-run defaults and how to
    point the run at real data, a tokenizer and the published weights. A workload naming no model: on MaxText's
    default command, that it trains MaxText's default config, not the planned size; else nothing."""
    named = named_model(plan)
    row = named.architecture
    if row is None:
        if not (maxtext and written):
            return []
        # The default MaxText command without a model_name trains base.yml's own default model (docs/job.md).
        return [f"model: MaxText's default config (base.yml) with random weights, a stand-in, not your "
                f"{plan.workload.model.parameters / 1e9:.3g}B-parameter model: name it with model.architecture in "
                "the workload, or pass --command"]
    if not maxtext:
        if not written:
            return [f"model {row.name}: your --command replaces the default program; it builds the model and loads "
                    f"{named.checkpoint or row.huggingface} itself"]
        return [f"model {row.name}: the default program is an example, not this model; pass --command with your "
                f"trainer loading {named.checkpoint or row.huggingface}"]
    facts = _facts()
    tokenizer = _tokenizer_args(row, facts["maxtext_tokenizers"])
    weights = named.checkpoint or row.huggingface
    if checkpoint_form(weights) != "repo":
        start = f"to start from model.checkpoint give load_parameters_path={weights} (a MaxText checkpoint)"
    else:
        start = (f"to start from the published weights convert {weights} with python3 -m "
                 f"{facts['maxtext_converter']} and give load_parameters_path=<its gs:// path>")
    notes = [f"model: model_name={row.name}, MaxText's config of it ({row.layers} layers, width {row.hidden:,}, "
             f"{row.query_heads}/{row.kv_heads} query/KV heads, vocabulary {row.vocabulary:,})"
             + ("" if written else "; your --command replaces the default, so pass model_name yourself"),
             f"smoke run: synthetic data and 100 steps, random weights. For a real run pass --command with "
             f"dataset_type=hf hf_path=<dataset> (or tfds/grain with dataset_path=...), {tokenizer}, "
             f"steps=<the run's>; {start} ({cite(facts['maxtext_source'])})"]
    if row.gated and weights == row.huggingface:
        notes.append(_gated_note(row.huggingface, "the conversion"))
    return notes


# ----- serving on GPUs: vLLM serves the checkpoint, else the architecture's published weights -----

@dataclass(frozen=True)
class ServedModel:
    model: str          # vLLM's positional model argument
    flags: str          # flags after it (a bucket's load format), with a leading space, or ''
    notes: list[str]
    checkpoint: str | None = None   # model.checkpoint, when `model` is it
    what: str = "a stand-in"        # what `model` is otherwise: a stand-in or an architecture's published weights


def check_vllm_tensor_parallel(plan: Plan, tensor: int) -> None:
    """UsageError naming model.architecture when the plan's tensor parallelism is one vLLM refuses for it."""
    row = named_model(plan).architecture
    problem = None if row is None else vllm_tensor_parallel_problem(row, tensor)
    if problem:
        raise UsageError(f"model.architecture: {row.name}: {problem}, and vLLM refuses such a layout "
                         f"({cite(_facts()['vllm_heads_source'])}); pass --command with a "
                         "--tensor-parallel-size that divides the heads (and --pipeline-parallel-size for the rest "
                         "of the replica's GPUs), or pin hardware whose replica does")


def vllm_model(plan: Plan, stand_in: str, custom_image: bool, store: dict | None = None) -> ServedModel:
    """What `vllm serve` loads: model.checkpoint, else the architecture's Hugging Face repo, else `stand_in`. A bucket
    is streamed by the image's Run:ai streamer: `store` states which schemes it reads and where that is said (vLLM
    TPU's, runtime.yaml vllm_tpu.object_store), by default the GPU release image's (model_run.vllm_object_store)."""
    named = named_model(plan)
    row = named.architecture
    facts = _facts()
    if named.checkpoint is None and row is None:
        return ServedModel(stand_in, "", [])
    if named.checkpoint is None:
        repo = row.huggingface
        if plan_view.serving_precision(plan)[1] == "fp8":
            # Served in fp8: the architecture's published fp8 checkpoint where there is one.
            repo = serving_checkpoints.table().fp8_repo(row.name) or repo
        kind = "published weights" if repo == row.huggingface else "published fp8 weights"
        notes = [f"model {repo}: the {kind} of architecture {row.name} (set model.checkpoint "
                 "to serve your own, e.g. an instruct or fine-tuned repo)"]
        gated = row.gated and repo.split("/")[0] == row.huggingface.split("/")[0]
        return ServedModel(repo, "", [*notes, *([_gated_note(repo)] if gated else [])],
                           what=f"the {kind} of architecture {row.name}")
    checkpoint = named.checkpoint
    store = store or facts["vllm_object_store"]
    form = checkpoint_form(checkpoint)
    if form in ("gs", "s3") and f"{form}://" not in store["schemes"] and not custom_image:
        raise UsageError(f"model.checkpoint: {checkpoint}: the default vLLM image documents loading a bucket only "
                         f"from {', '.join(store['schemes'])} ({store['source']}); give a Hugging Face repo id, "
                         "a path mounted in the pod, or pass --image with a vLLM whose Run:ai streamer reads "
                         f"{form}://")
    if form in ("gs", "s3"):
        return ServedModel(checkpoint, f" --load-format {store['load_format']}",
                           [f"model {checkpoint}: streamed from the bucket by the Run:ai Model Streamer "
                            f"(--load-format {store['load_format']}, safetensors; {cite(store['source'])}); "
                            "the pod's ServiceAccount must read the bucket"], checkpoint)
    if form == "path":
        return ServedModel(checkpoint, "", [f"model {checkpoint}: a path in the container; mount the weights there "
                                            "(the stack's volume claims mount at /mnt/<claim>)"], checkpoint)
    gated = row is not None and row.gated and checkpoint == row.huggingface
    notes = [f"model {checkpoint} (model.checkpoint)"]
    notes.append(_gated_note(checkpoint) if gated else
                 f"if {checkpoint} is a gated or private repo, the pod needs {facts['hf_token']}")
    return ServedModel(checkpoint, "", notes, checkpoint)
