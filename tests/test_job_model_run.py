"""The generated job runs the model the workload names (accel/job/model_run.py): MaxText trains model_name=<row>,
vLLM serves model.checkpoint or the architecture's published weights (on TPUs too: tests/test_vllm_tpu_serving.py);
a workload naming no model gets the stand-ins it always got, said to be stand-ins."""

from __future__ import annotations

import functools
import json

import pytest

from accel.base.errors import UsageError
from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.manifests import JobOptions, generate
from accel.job.maxtext_entry import default_command
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping

GPU_SERVING = {"accelerator": "h100-80gb", "chips": 8}


@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def job(kind: str, model: dict, hardware: dict, framework: str, **options):
    section = ({"inference": {"tokens_per_second": 2000, "framework": framework}} if kind == "inference" else
               {"training": {"tokens": "100B", "framework": framework}})
    workload = {"name": "named-model", "kind": kind, "model": model, "hardware": hardware, **section}
    plan = _plan(json.dumps(workload, sort_keys=True))
    generated = generate(plan, JobContext(stack="t"), JobOptions(**options))
    main = next(m for m in generated.manifests if m["kind"] in ("Deployment", "LeaderWorkerSet", "JobSet"))
    pod = (main["spec"]["template"] if main["kind"] == "Deployment" else
           main["spec"]["leaderWorkerTemplate"]["leaderTemplate"] if main["kind"] == "LeaderWorkerSet" else
           main["spec"]["replicatedJobs"][0]["template"]["spec"]["template"])
    container = pod["spec"]["containers"][0]
    return container["command"][-1], container["image"], "\n".join(generated.derivations)


def serve_gpu(model, **options):
    return job("inference", model, GPU_SERVING, "pytorch", **options)


def train(model, framework="jax", hardware=None, **options):
    return job("pretrain", model, hardware or {"accelerator": "tpu-v5p", "chips": 64}, framework, **options)


# ----- training -----

def test_maxtext_training_passes_the_architectures_model_name_and_keeps_the_smoke_run():
    command, _, notes = train({"architecture": "llama3.1-70b"})
    default = default_command(runtime()["defaults"]["jax-tpu"])
    assert command.startswith(f"{default} model_name=llama3.1-70b")
    assert "dataset_type=synthetic steps=100" in command
    assert "tokenizer_path=src/maxtext/assets/tokenizers/tokenizer_llama3.tiktoken tokenizer_type=tiktoken" in notes
    assert "dataset_type=hf hf_path=<dataset>" in notes and "load_parameters_path=" in notes


def test_without_an_architecture_the_training_command_is_the_default():
    command, _, notes = train({"parameters": "70B"})
    assert command == default_command(runtime()["defaults"]["jax-tpu"])
    assert "model_name" not in command and "model_name" not in notes


def test_without_an_architecture_the_default_maxtext_run_says_it_trains_a_stand_in():
    # The default command names no model, so MaxText trains base.yml's default config, not the 70B the plan sized.
    for hardware in (None, {"accelerator": "h100-80gb", "chips": 32}):
        notes = " ".join(train({"parameters": "70B"}, hardware=hardware)[2].split())
        assert "MaxText's default config (base.yml) with random weights, a stand-in, not your 70B-parameter model" \
            in notes


def test_a_command_of_your_own_naming_no_architecture_is_not_called_a_stand_in():
    notes = train({"parameters": "70B"}, command="python3 -m maxtext.trainers.pre_train.train x")[2]
    assert "stand-in" not in notes


def test_maxtext_on_gpus_passes_model_name_too():
    command, _, _ = train({"architecture": "llama3.1-8b"}, hardware={"accelerator": "h100-80gb", "chips": 16})
    assert "hardware=gpu" in command and " model_name=llama3.1-8b" in command


def test_the_pytorch_default_trains_the_architectures_shape_in_megatron():
    command, _, notes = train({"architecture": "llama3.1-8b"}, framework="pytorch",
                              hardware={"accelerator": "h100-80gb", "chips": 16})
    assert "model_name" not in command
    assert "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32" in command
    assert "model: architecture llama3.1-8b" in " ".join(notes.split())


def test_a_pytorch_command_of_your_own_is_told_it_builds_the_model_itself():
    _, _, notes = train({"architecture": "llama3.1-8b"}, framework="pytorch", command="python3 train.py",
                        hardware={"accelerator": "h100-80gb", "chips": 16})
    assert "your --command replaces the default program" in notes


def test_a_command_of_your_own_is_left_as_written_and_told_to_pass_model_name():
    command, _, notes = train({"architecture": "llama3.1-70b"}, command="python3 -m maxtext.trainers.pre_train.train x")
    assert command == "python3 -m maxtext.trainers.pre_train.train x"
    assert "your --command replaces the default, so pass model_name yourself" in notes


def test_a_maxtext_checkpoint_is_named_for_load_parameters_path_and_a_hugging_face_one_for_conversion():
    notes = train({"architecture": "llama3.1-70b", "checkpoint": "gs://ckpt/llama/0/items"})[2]
    assert "to start from model.checkpoint give load_parameters_path=gs://ckpt/llama/0/items" in notes
    notes = train({"architecture": "llama3.1-70b", "checkpoint": "acme/llama-70b-ft"})[2]
    assert "convert acme/llama-70b-ft with python3 -m maxtext.checkpoint_conversion.to_maxtext" in notes


def test_a_gated_architecture_says_its_conversion_needs_hf_token():
    assert "meta-llama/Llama-3.1-70B is gated" in train({"architecture": "llama3.1-70b"})[2]
    assert "is gated" not in train({"architecture": "qwen3-32b"})[2]


# ----- serving on GPUs: vLLM -----

def test_vllm_serves_the_architectures_published_weights():
    command, _, notes = serve_gpu({"architecture": "mixtral-8x7b"})
    assert command.startswith("vllm serve mistralai/Mixtral-8x7B-Instruct-v0.1 --port 8000")
    assert "mistralai/Mixtral-8x7B-Instruct-v0.1 is gated" in notes and "HF_TOKEN" in notes


def test_vllm_serves_the_checkpoint_when_given():
    command, _, notes = serve_gpu({"architecture": "qwen3-8b", "checkpoint": "acme/qwen3-8b-support"})
    assert command.startswith("vllm serve acme/qwen3-8b-support --port")
    assert "if acme/qwen3-8b-support is a gated or private repo, the pod needs HF_TOKEN" in notes


def test_vllm_streams_an_s3_checkpoint_with_the_runai_load_format():
    command, _, _ = serve_gpu({"parameters": "8B", "checkpoint": "s3://weights/llama-8b/"})
    assert command.startswith("vllm serve s3://weights/llama-8b/ --load-format runai_streamer --port")


def test_a_gs_checkpoint_is_refused_on_the_default_vllm_image_and_written_with_your_own():
    with pytest.raises(UsageError, match=r"model\.checkpoint: gs://w/llama: the default vLLM image"):
        serve_gpu({"parameters": "8B", "checkpoint": "gs://w/llama"})
    command, image, _ = serve_gpu({"parameters": "8B", "checkpoint": "gs://w/llama"}, image="vllm/vllm-openai:v0.11.0")
    assert image == "vllm/vllm-openai:v0.11.0" and "vllm serve gs://w/llama --load-format runai_streamer" in command


def test_a_path_checkpoint_is_served_from_the_container():
    command, _, notes = serve_gpu({"parameters": "8B", "checkpoint": "/models/llama"})
    assert command.startswith("vllm serve /models/llama --port") and "mount the weights there" in notes


def test_a_workload_naming_no_model_serves_the_size_matched_stand_in_and_says_so():
    command, _, notes = serve_gpu({"parameters": "70B"})
    assert command.startswith("vllm serve meta-llama/Llama-3.1-70B-Instruct --port")
    assert "a stand-in sized for 70B parameters, not your model (name it with model.architecture" in notes


# ----- vLLM's tensor-parallel rule over the heads (vllm/config.py l.933, layers/linear.py l.832-838 at v0.8.5) -----

@pytest.mark.parametrize("heads, kv, tensor, refused", [
    (32, 8, 8, None), (32, 8, 4, None),                 # Llama 3.1 8B: heads and KV heads split
    (8, 4, 8, None),                                     # Gemma 2 2B on 8 GPUs: 4 KV heads, each on 2 ranks
    (40, 40, 16, "query heads"),                         # Llama 2 13B on a2-megagpu-16g's 16 GPUs
    (48, 8, 32, "query heads"),
    (12, 6, 4, "KV heads"),                              # 6 KV heads do not split over 4 ...
    (24, 3, 6, None), (24, 3, 4, "KV heads"),            # ... nor 3 replicate onto 4 (they do onto 6)
])
def test_vllms_rule_over_the_heads(heads, kv, tensor, refused):
    import dataclasses

    from accel.job.model_run import vllm_tensor_parallel_problem
    from accel.policies import architectures

    row = dataclasses.replace(architectures.lookup("llama3.1-8b"), query_heads=heads, kv_heads=kv)
    problem = vllm_tensor_parallel_problem(row, tensor)
    assert (problem is None) if refused is None else (refused in problem)


def test_every_architecture_splits_over_a_whole_h100_node():
    from accel.job.model_run import vllm_tensor_parallel_problem
    from accel.policies import architectures

    for tensor in (1, 2, 4, 8):
        assert [n for n, row in architectures.table().rows.items() if vllm_tensor_parallel_problem(row, tensor)] == []


def test_the_job_refuses_a_layout_vllm_refuses_naming_the_architecture(monkeypatch):
    import dataclasses

    from accel.policies import architectures

    command, _, _ = serve_gpu({"architecture": "llama3.1-8b"})
    tensor = int(command.split("--tensor-parallel-size ")[1].split()[0])
    row = architectures.lookup("llama3.1-8b")
    odd = dataclasses.replace(row, query_heads=tensor * 3 + 1)    # the mutation: heads the layout cannot split
    monkeypatch.setattr(architectures, "lookup", lambda name: odd if name == "llama3.1-8b" else row)
    with pytest.raises(UsageError, match=r"model\.architecture: llama3\.1-8b: its \d+ query heads do not split over "
                                         rf"tensor parallelism {tensor}, and vLLM refuses"):
        serve_gpu({"architecture": "llama3.1-8b"})
    assert serve_gpu({"architecture": "llama3.1-8b"}, command="vllm serve x")   # your own command is yours
