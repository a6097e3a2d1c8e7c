"""TPU serving runs vLLM TPU (accel/job/vllm_tpu.py, runtime.yaml defaults.vllm-tpu and vllm_tpu): the model straight
from its Hugging Face repo (or model.checkpoint, or a stand-in), tensor parallelism over the host's JAX devices under vLLM's
and tpu-inference's heads rule, the context the plan sized, and the bytes it sized at its serving precision; in the pod
GKE's vLLM TPU tutorial runs (one container, port 8000, readiness on it, /dev/shm in memory)."""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest

from accel.base.errors import UsageError
from accel.job import rules
from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.manifests import JobOptions, generate
from accel.policies.catalog import load_catalog
from accel.policies.plan import SERVED_PRECISION
from accel.policies.selection.choose import choose_plan, plan_from_pin
from accel.policies.workload import WorkloadFieldError, workload_from_mapping

V5E = {"accelerator": "tpu-v5e", "chips": 4}
V5P = {"accelerator": "tpu-v5p", "topology": "2x2x1"}
TPU7X = {"accelerator": "tpu7x", "topology": "2x2x1"}
IMAGE = runtime()["defaults"]["vllm-tpu"]["image"]


@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def generated(model: dict, precision: str = "bf16", hardware: dict = V5E, sequence: int | None = None, **options):
    model = {**model, **({"sequence_length": sequence} if sequence else {})}
    workload = {"name": "tpu-serve", "kind": "inference", "model": model, "hardware": hardware,
                "inference": {"tokens_per_second": 2000, "framework": "jax", "precision": precision,
                              "hours": 168}}   # within flex-start's longest request (TPU7x is bought so)
    return generate(_plan(json.dumps(workload, sort_keys=True)), JobContext(stack="t"), JobOptions(**options))


def serve(model: dict, precision: str = "bf16", hardware: dict = V5E, **options) -> tuple[str, str, str]:
    """(the server's command, its image, the job's derivations) for a TPU serving workload."""
    job = generated(model, precision, hardware, **options)
    main = next(m for m in job.manifests if m["kind"] == "Deployment")
    container = main["spec"]["template"]["spec"]["containers"][0]
    return container["command"][-1], container["image"], "\n".join(job.derivations)


def flag(command: str, name: str) -> str | None:
    words = command.split()
    return words[words.index(name) + 1] if name in words else None


LLAMA = {"architecture": "llama3.1-8b"}


# ----- what it serves: the model as published, no conversion -----

def test_a_named_architecture_is_served_from_its_hugging_face_repo():
    command, image, notes = serve(LLAMA)
    assert image == IMAGE == "vllm/vllm-tpu:v0.32.0"
    assert command == ("vllm serve meta-llama/Llama-3.1-8B --port 8000 --dtype bfloat16 --tensor-parallel-size 4 "
                       "--max-model-len 4096")
    assert "server: vllm in vllm/vllm-tpu:v0.32.0; model meta-llama/Llama-3.1-8B" in notes
    assert "Hugging Face repo meta-llama/Llama-3.1-8B is gated" in notes and "HF_TOKEN" in notes


def test_the_context_is_the_one_the_plan_sized_the_kv_cache_for():
    command, _, notes = serve(LLAMA, sequence=8192)
    assert flag(command, "--max-model-len") == "8192"
    assert "--max-model-len 8192 (model.sequence_length" in notes


@pytest.mark.parametrize("checkpoint, load_format", [("gs://w/llama", "runai_streamer"),
                                                     ("s3://w/llama", "runai_streamer"),
                                                     ("my-org/llama-tuned", None)])
def test_a_checkpoint_is_served_as_given_a_bucket_streamed(checkpoint, load_format):
    """vllm-tpu's vLLM streams gs:// and s3:// (Run:ai streamer, tpu-inference needs its gcs and s3 extras): no
    MaxText conversion; the note cites vllm-tpu's own streamer, not the GPU image's."""
    command, _, notes = serve({**LLAMA, "checkpoint": checkpoint})
    assert command.startswith(f"vllm serve {checkpoint} ")
    assert flag(command, "--load-format") == load_format
    if load_format:
        assert "(--load-format runai_streamer, safetensors; vllm-tpu 0.32.0 " in notes and "vLLM v0.33.0" not in notes


def test_a_bucket_is_checked_against_vllm_tpus_streamer_not_the_gpu_images(monkeypatch):
    """Mutated: vllm_tpu.object_store without gs:// refuses a gs:// checkpoint on TPU, whatever the GPU image reads."""
    from accel.job import vllm_tpu

    facts = {**runtime()["vllm_tpu"], "object_store": {**runtime()["vllm_tpu"]["object_store"], "schemes": ["s3://"]}}
    monkeypatch.setattr(vllm_tpu, "_facts", lambda: facts)
    with pytest.raises(UsageError, match=r"model\.checkpoint: gs://w/other: .* only from s3://"):
        serve({**LLAMA, "checkpoint": "gs://w/other"})


def test_a_checkpoint_needs_no_architecture_on_tpu_any_more():
    command, _, notes = serve({"parameters": "8B", "checkpoint": "gs://w/x"})
    assert command.startswith("vllm serve gs://w/x --load-format runai_streamer ")


def test_a_workload_naming_no_model_serves_a_stand_in_and_says_so():
    command, image, notes = serve({"parameters": "8B"})
    assert image == IMAGE and command.startswith("vllm serve meta-llama/Llama-3.1-8B-Instruct ")
    assert "a stand-in sized for 8B parameters, not your model" in notes


def test_sv20_a_small_unnamed_model_on_one_v5e_chip_gets_the_1b_class_stand_in():
    """sweep6 sv20: 1.3B on one TPU v5e chip (16 GB, 14.4 usable). The smallest stand-in was Llama 3.1 8B (16 GB of
    bf16 weights), so the job refused the stack choose wrote; the 1B-class band (up to 2B) serves Qwen3 1.7B."""
    command, _, notes = serve({"parameters": "1.3B"}, hardware={"accelerator": "tpu-v5e", "chips": 1})
    assert command.startswith("vllm serve Qwen/Qwen3-1.7B ") and flag(command, "--tensor-parallel-size") == "1"
    assert "a stand-in sized for 1.3B parameters, not your model" in notes


def test_your_command_and_image_are_left_as_written():
    command, image, notes = serve(LLAMA, command="serve.sh", image="my/vllm-tpu:1")
    assert (command, image) == ("serve.sh", "my/vllm-tpu:1")
    assert "your --command must listen on that port" in notes


# ----- the pod: GKE's vLLM TPU tutorial's -----

def test_the_pod_is_one_server_on_8000_ready_when_the_port_opens_with_shm_in_memory():
    job = generated(LLAMA)
    deployment, service = (next(m for m in job.manifests if m["kind"] == kind) for kind in ("Deployment", "Service"))
    pod = deployment["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert server["ports"] == [{"containerPort": 8000, "name": "http"}]
    assert server["readinessProbe"] == {"tcpSocket": {"port": 8000}, "initialDelaySeconds": 15, "periodSeconds": 10}
    assert "livenessProbe" not in server and "startupProbe" not in server   # the first start compiles for minutes
    assert server["resources"]["limits"] == {"google.com/tpu": 4}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in server["volumeMounts"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": 8000}]


@pytest.mark.parametrize("model", [LLAMA, {"parameters": "8B"}, {**LLAMA, "checkpoint": "gs://w/llama"}])
def test_the_objects_pass_the_kubernetes_schema_and_the_object_rules(model):
    import kubernetes_validate

    manifests = generated(model).manifests
    for manifest in manifests:
        kubernetes_validate.validate(manifest, "1.30", strict=True)
    assert rules.run(rules.Scope(manifests)) == []


def test_the_image_and_pod_facts_cite_the_tutorial_and_the_release():
    facts = runtime()
    assert "serve-vllm-tpu" in facts["defaults"]["vllm-tpu"]["source"]
    assert "vllm-tpu 0.32.0" in facts["defaults"]["vllm-tpu"]["source"]
    assert "vllm-llama3-70b.yaml at a3f1a423" in facts["vllm_tpu"]["pod_source"]
    assert "jetstream" not in facts["defaults"] and "jetstream_front" not in facts


# ----- tensor parallelism over the host's chips: the heads rule -----

def test_a_layout_vllm_tpu_refuses_is_refused_naming_the_architecture(monkeypatch):
    from accel.policies import architectures

    row = architectures.lookup("llama3.1-8b")
    odd = dataclasses.replace(row, query_heads=4 * 3 + 1)    # the mutation: heads 4 chips cannot split
    monkeypatch.setattr(architectures, "lookup", lambda name: odd if name == "llama3.1-8b" else row)
    with pytest.raises(UsageError, match=r"model\.architecture: llama3\.1-8b: its 13 query heads do not split over "
                                         r"tensor parallelism 4, and vLLM TPU refuses such a layout \(vllm-tpu 0\.32\.0"):
        serve(LLAMA)
    assert serve(LLAMA, command="vllm serve x")   # your own command is yours


def test_kv_heads_fewer_than_the_chips_must_replicate_evenly(monkeypatch):
    from accel.policies import architectures

    row = architectures.lookup("llama3.1-8b")
    odd = dataclasses.replace(row, kv_heads=3, query_heads=24)   # 24 query heads split over 4; 3 KV heads do not
    monkeypatch.setattr(architectures, "lookup", lambda name: odd if name == "llama3.1-8b" else row)
    with pytest.raises(UsageError, match=r"its 3 KV heads neither split over tensor parallelism 4 nor replicate"):
        serve(LLAMA)


# ----- precision: the bytes the plan sized -----

def test_bf16_is_served_in_bfloat16():
    command, _, _ = serve(LLAMA)
    assert flag(command, "--dtype") == "bfloat16" and "--quantization" not in command


def test_fp8_asked_of_a_chip_without_fp8_is_served_in_the_bf16_the_plan_sized():
    command, _, notes = serve(LLAMA, "fp8")
    assert flag(command, "--dtype") == "bfloat16" and "--quantization" not in command and "--kv-cache-dtype" not in command
    assert "inference.precision fp8, but the plan sized bf16 weights and KV cache on TPU v5e" in notes


def test_fp8_on_tpu7x_quantizes_the_linear_layers_and_the_kv_cache():
    command, _, notes = serve({"architecture": "llama3.1-70b"}, "fp8", TPU7X)
    assert flag(command, "--quantization") == "fp8" and flag(command, "--kv-cache-dtype") == "fp8"
    assert "precision fp8: vLLM TPU quantizes meta-llama/Llama-3.1-70B's linear layers to fp8" in notes
    assert "(tpu-inference 0.32.0 tpu_inference/layers/vllm/quantization/fp8.py" in notes


def test_fp8_of_a_checkpoint_already_in_fp8_is_read_as_it_is():
    command, _, notes = serve({"architecture": "llama3.1-70b", "checkpoint": "my-org/Llama-3.1-70B-FP8"}, "fp8",
                              TPU7X)
    assert "--quantization" not in command and flag(command, "--kv-cache-dtype") == "fp8"
    assert "is taken for a checkpoint already in fp8" in notes


def test_fp8_experts_from_a_bf16_checkpoint_are_planned_and_served_at_bf16():
    """tpu-inference: 'FP8OnelineMoEMethod is not supported' (the experts would stay bf16, twice the bytes): the plan
    sizes bf16 (estimate.experts_stay_bf16) and the job serves it, saying why, rather than refusing the plan choose
    wrote (sweep6 nt09)."""
    command, _, notes = serve({"architecture": "mixtral-8x7b"}, "fp8", TPU7X)
    assert flag(command, "--dtype") == "bfloat16"
    assert "--quantization" not in command and "--kv-cache-dtype" not in command
    assert "the plan sized bf16 weights and KV cache on TPU7x (Ironwood): tpu-inference quantizes no bf16 checkpoint's routed " \
           "experts as it loads" in notes
    command, _, _ = serve({"architecture": "mixtral-8x7b", "checkpoint": "my-org/Mixtral-8x7B-FP8"}, "fp8", TPU7X)
    assert "--quantization" not in command and flag(command, "--kv-cache-dtype") == "fp8"


def test_fp8_experts_of_a_plan_sized_at_fp8_are_still_refused():
    """A plan written before the estimate knew (its serving precision fp8 for a bf16 mixture of experts) is refused."""
    plan = _plan(json.dumps({"name": "tpu-serve", "kind": "inference", "model": {"architecture": "mixtral-8x7b"},
                             "hardware": TPU7X, "inference": {"tokens_per_second": 2000, "framework": "jax",
                                                              "precision": "fp8", "hours": 168}}, sort_keys=True))
    stale = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"assumptions": [
        a.model_copy(update={"value": "fp8"}) if a.name == SERVED_PRECISION else a for a in plan.estimate.assumptions]})})
    with pytest.raises(UsageError, match=r"inference\.precision: fp8 with mistralai/Mixtral-8x7B-Instruct-v0\.1: "
                                         r"tpu-inference quantizes a bf16 checkpoint's linear layers"):
        generate(stale, JobContext(stack="t"), JobOptions())


def test_int8_reads_an_8_bit_checkpoint_and_is_refused_without_one():
    command, _, notes = serve({**LLAMA, "checkpoint": "my-org/llama-w8a8"}, "int8")
    assert flag(command, "--dtype") == "bfloat16" and "--quantization" not in command
    assert "precision int8: vLLM reads the quantization from model.checkpoint my-org/llama-w8a8's config.json" in notes
    # A pinned stack's plan (accel plan reads it without choose): the job refuses by the same rule choose does.
    pinned = plan_from_pin(workload_from_mapping({"name": "tpu-serve", "kind": "inference", "model": LLAMA,
                                                  "hardware": V5E, "inference": {"tokens_per_second": 2000,
                                                  "framework": "jax", "precision": "int8"}}, "t.yaml"), load_catalog())
    with pytest.raises(UsageError, match=r"inference\.precision: int8 .* needs model\.checkpoint .* tpu-inference "
                                         r"quantizes no bf16 checkpoint to int8 through a flag"):
        generate(pinned, JobContext(stack="t"), JobOptions())


def test_choose_refuses_int8_without_a_checkpoint_before_sizing():
    """vLLM TPU (and vLLM on GPUs) loads int8 only from an 8-bit checkpoint: choose refuses at choose, exit 2, naming
    both fields, instead of writing a stack `accel plan` refuses (sweep6 nt06)."""
    with pytest.raises(WorkloadFieldError) as refused:
        serve(LLAMA, "int8")
    assert refused.value.field == "inference.precision"
    assert "needs model.checkpoint" in str(refused.value) and "set model.checkpoint" in str(refused.value)
    for accelerator in ("tpu-v6e", "h100-80gb"):
        unpinned = workload_from_mapping({"name": "s", "kind": "inference", "model": LLAMA, "inference": {
            "tokens_per_second": 2000, "precision": "int8"}, "constraints": {"accelerators": [accelerator]}}, "s.yaml")
        with pytest.raises(WorkloadFieldError, match="model.checkpoint"):
            choose_plan(unpinned, load_catalog())


# ----- which TPUs tpu-inference recommends -----

def test_a_tpu_tpu_inference_calls_experimental_is_said_to_be():
    _, _, notes = serve(LLAMA, hardware=V5P)
    assert "TPU v5p: experimental for vLLM TPU, which recommends v5e, v6e, tpu7x" in notes
    assert "experimental for vLLM TPU" not in serve(LLAMA)[2]


# ----- MaxText keeps its tokenizer facts for training -----

def test_training_notes_still_name_maxtexts_shipped_tokenizer():
    workload = {"name": "t", "kind": "pretrain", "model": {"architecture": "qwen3-8b"},
                "hardware": {"accelerator": "tpu-v5p", "chips": 64}, "training": {"tokens": "100B", "framework": "jax"}}
    job = generate(_plan(json.dumps(workload, sort_keys=True)), JobContext(stack="t"))
    assert "tokenizer_path=src/maxtext/assets/tokenizers/qwen3-tokenizer tokenizer_type=huggingface" in \
        "\n".join(job.derivations)
