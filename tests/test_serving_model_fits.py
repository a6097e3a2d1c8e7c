"""The model a vLLM serving job loads fits the replica planned for it (policies/architectures/serving_checkpoints.py,
accel/job/stand_in.py; found by the day-one sweep, sv16 and sv09).

fp8: where the weights are published in fp8 the job serves that checkpoint (vLLM reads its quantization config); where
they are not, vLLM quantizes online from bf16 layer by layer (v0.33.0), so the replica holds the fp8 weights and the
estimate sizes it by them, whichever checkpoint the job loads. A workload naming no model gets a Llama stand-in
whose weights fit the replica: the size its band names, else the nearest smaller one, said against the planned size.
"""

from __future__ import annotations

import functools
import json

import pytest

from accel.base.errors import UsageError
from accel.job import plan_view
from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.policies.architectures import serving_checkpoints
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping


def workload(model, precision="fp8", tokens=2000, hw=None, constraints=None, latency=None, hours=None):
    return {"name": "served", "kind": "inference", "model": model, **({"hardware": hw} if hw else {}),
            "inference": {"tokens_per_second": tokens, "framework": "pytorch", "precision": precision,
                          **({"p99_latency_ms": latency} if latency else {}), **({"hours": hours} if hours else {})},
            **({"constraints": constraints} if constraints else {})}


@functools.cache
def _plan(text: str):
    return choose_plan(workload_from_mapping(json.loads(text), "t.yaml"), load_catalog())


def plan_of(**kwargs):
    return _plan(json.dumps(workload(**kwargs), sort_keys=True))


def job(plan):
    generated = generate(plan, JobContext(stack="t"), JobOptions())
    main = next(m for m in generated.manifests if m["kind"] in ("Deployment", "LeaderWorkerSet"))
    pod = (main["spec"]["template"] if main["kind"] == "Deployment" else
           main["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    return pod["spec"]["containers"][0]["command"][-1], "\n".join(generated.derivations)


def gpus(plan):
    return plan.parallelism.tensor * plan.parallelism.pipeline


# ----- the facts -----

def test_every_stand_in_names_an_architecture_row_and_an_fp8_checkpoint_with_its_source():
    rows = serving_checkpoints.table().stand_ins
    assert [r.architecture for r in rows] == ["qwen3-1.7b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b"]
    assert [r.parameters for r in rows] == sorted(r.parameters for r in rows)
    for row in rows:
        assert "FP8" in row.fp8 and row.fp8_source.startswith(f"huggingface.co/{row.fp8}")


def test_an_architecture_has_its_published_fp8_repo_or_none_and_a_checkpoint_says_fp8_by_repo_or_name():
    table = serving_checkpoints.table()
    assert table.fp8_repo("llama3.1-405b") == "meta-llama/Llama-3.1-405B-FP8"
    assert table.fp8_repo("llama3.1-70b") is None   # no published fp8: quantized online
    assert table.says_fp8("deepseek-ai/DeepSeek-V3") and table.says_fp8("my-org/tuned-FP8")
    assert not table.says_fp8("my-org/tuned")


# ----- 1. fp8 serving loads an fp8 checkpoint, or quantizes a bf16 one layer by layer -----

def test_sv16_405b_fp8_stand_in_serves_metas_fp8_checkpoint_on_the_replica_choose_sized():
    """sv16: choose sized 4-GPU H200 replicas for 405 GB of fp8 weights; the job loaded the bf16 405B (202.5 GB a
    GPU while quantizing) and refused. It now serves Meta's FP8 release, no --quantization."""
    plan = plan_of(model={"parameters": "405B"}, constraints={"clouds": ["aws"], "spot": "never"}, latency=100)
    command, notes = job(plan)
    assert command.startswith("vllm serve meta-llama/Llama-3.1-405B-Instruct-FP8 ")
    assert "--quantization " not in command and "--allow-deprecated-quantization --kv-cache-dtype fp8" in command
    assert "pre-quantized fp8 checkpoint (published in fp8 (huggingface.co/meta-llama/Llama-3.1-405B-Instruct-FP8" \
           in notes


def test_an_architecture_published_in_fp8_serves_its_fp8_repo():
    plan = plan_of(model={"architecture": "llama3.1-405b"}, hw={"accelerator": "h200-141gb", "chips": 8})
    command, notes = job(plan)
    assert command.startswith("vllm serve meta-llama/Llama-3.1-405B-FP8 ") and "--quantization " not in command
    assert "model meta-llama/Llama-3.1-405B-FP8: the published fp8 weights of architecture llama3.1-405b" in notes


def test_an_online_fp8_replica_is_sized_by_its_fp8_weights():
    """llama3.1-70b has no published fp8 checkpoint: vLLM v0.8.5 held its 141 GB of bf16 while quantizing, and the
    old rule sized two H100s for that peak at 100 tok/s. v0.33.0 quantizes layer by layer (runtime.yaml
    vllm_precision.fp8_online_load): one H100 (72 GB usable) holds the 70.6 GB of fp8 weights, as the estimate now
    sizes it, and the job serves that replica."""
    model = {"architecture": "llama3.1-70b"}
    constraints = {"accelerators": ["h100-80gb"], "spot": "never"}
    sized = plan_of(model=model, tokens=100, constraints=constraints)
    assert gpus(sized) == 1
    command, notes = job(sized)
    assert "--quantization fp8_per_tensor" in command and "a GPU holds 70.6 GB of fp8 weights (1 per replica)" in notes


def test_a_pinned_replica_too_small_for_the_fp8_weights_is_refused_at_choose():
    from accel.policies.selection.choice import NoFeasibleOption

    with pytest.raises(NoFeasibleOption, match="weights do not fit"):
        plan_of(model={"architecture": "llama2-70b"}, hw={"accelerator": "l4", "chips": 1})


# ----- 2. a stand-in fits the replica planned -----

def test_sv09_180b_on_h200_gets_the_70b_stand_in_said_against_its_size():
    """sv09: 180B on H200 (GCP), replicas of 4 GPUs (507.6 GB usable): Llama-3.1-405B (812 GB bf16) was loaded."""
    plan = plan_of(model={"parameters": "180B"}, precision="bf16", latency=100, hours=24,
                   constraints={"clouds": ["gcp"], "spot": "never", "accelerators": ["h200-141gb"]})
    assert gpus(plan) * 141 * 0.9 < 405.9 * 2
    command, notes = job(plan)
    assert command.startswith("vllm serve meta-llama/Llama-3.1-70B-Instruct ")
    assert "a stand-in of 70.6B parameters for your 180B" in notes
    assert "stand-in: meta-llama/Llama-3.1-70B-Instruct (70.6B) against the planned 180B" in notes
    assert "meta-llama/Llama-3.1-405B-Instruct (406B) would need 812 GB" in notes


def test_a_replica_that_holds_the_banded_stand_in_keeps_it_and_says_nothing_more():
    plan = plan_of(model={"parameters": "180B"}, precision="bf16", hw={"accelerator": "h200-141gb", "chips": 8})
    if gpus(plan) * 141e9 * 0.9 < 405.9e9 * 2:
        pytest.skip("the pin's replica does not hold the 405B")
    command, notes = job(plan)
    assert command.startswith("vllm serve meta-llama/Llama-3.1-405B-Instruct ") and "stand-in:" not in notes
    assert "a stand-in sized for 180B parameters" in notes


def test_no_stand_in_fitting_is_refused_naming_what_to_set(monkeypatch):
    plan = plan_of(model={"parameters": "7B"}, precision="bf16", hw={"accelerator": "h100-80gb", "chips": 1})
    monkeypatch.setattr(plan_view, "usable_hbm_per_gpu", lambda plan: 1e9)   # a GPU with 1 GB usable
    with pytest.raises(UsageError) as refused:
        job(plan)
    message = str(refused.value)
    assert message.startswith(f"model: no published stand-in fits the replica planned for 7B parameters ({gpus(plan)} "
                              "x 1.0 GB usable of H100)")
    assert "the smallest, Qwen/Qwen3-1.7B (1.72B), holds 3 GB of bf16 weights" in message
    assert "set model.checkpoint (or model.architecture)" in message and "--command" in message


def test_a_stand_in_that_cannot_hold_one_sequence_at_the_workloads_context_is_not_chosen():
    """A replica of 2 x H100 (2 x 77.3 GB usable) holds the 70B stand-in's 141 GB of bf16 weights; with one sequence's
    KV cache beside them (Llama 3.1 70B: 80 layers x 8 KV heads x 128 dims x K,V x 2 bytes = 327,680 bytes a token,
    the estimate's formula) it holds them at 4,096 tokens (1.3 GB) but not at 65,536 (21.5 GB): the mutated context
    gets the 8B, said against the KV cache that ruled the 70B out."""
    from accel.job import stand_in

    def served(sequence_length):
        plan = plan_of(model={"parameters": "60B", "sequence_length": sequence_length}, precision="bf16",
                       hw={"accelerator": "h100-80gb", "chips": 8, "cloud": "gcp"})
        assert plan_view.usable_hbm_per_gpu(plan) == pytest.approx(77.31e9)
        return stand_in.choose(plan, 2, "H100")

    fits = served(4096)
    assert fits.model == "meta-llama/Llama-3.1-70B-Instruct" and fits.note is None
    squeezed = served(65536)
    assert squeezed.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert "whose bf16 weights and one sequence's KV cache fit the replica planned (2 x 77.3 GB usable of H100)" \
           in squeezed.note
    assert "meta-llama/Llama-3.1-70B-Instruct (70.6B) would need 141 GB and 21.5 GB of KV cache for one sequence " \
           "of 65,536 tokens" in squeezed.note
