"""TPU jobs count JAX devices where their programs do (accel/job/tpu_devices.py).

vLLM TPU's --tensor-parallel-size and MaxText's per_device_batch_size and ici_*_parallelism count the devices JAX
shows: one per chip on v4, v5e, v5p and v6e (v4 and v5p join their two TensorCores as one megacore device), two on
TPU7x, each TensorCore its own device with half the chip's HBM (policies/hardware/facts.toml jax_devices_per_chip,
from MaxText's accelerator_to_spec_map at 834e4bae, l.35-45; tpu-recipes' Ironwood recipes pass TP 8 on a 4-chip
2x2x1 and per_device_batch_size 2 on 256 chips for a batch of 1,024). The plan counts chips; the job writes devices.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from pathlib import Path

import pytest

from accel.base.errors import UsageError
from accel.job import context_parallel, model_run, rules, tpu_devices, vllm_tpu
from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.job.rules.vllm_tpu import vllm_degrees
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.hardware import HardwareFactsError, load_facts
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping

TABLE = Path(hardware.__file__).resolve().parent / "facts.toml"
TPU7X = {"accelerator": "tpu7x", "topology": "2x2x1"}
V5E = {"accelerator": "tpu-v5e", "chips": 4}
V5P = {"accelerator": "tpu-v5p", "topology": "2x2x1"}
V6E = {"accelerator": "tpu-v6e", "topology": "2x4"}


@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def serving_job(hardware_pin: dict, model: dict | None = None):
    workload = {"name": "tpu-serve", "kind": "inference", "model": model or {"architecture": "llama3.1-70b"},
                "hardware": hardware_pin,
                "inference": {"tokens_per_second": 2000, "framework": "jax", "precision": "bf16", "hours": 168}}
    return generate(_plan(json.dumps(workload, sort_keys=True)), JobContext(stack="t"), JobOptions())


def server_command(job) -> str:
    deployment = next(m for m in job.manifests if m["kind"] == "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]["command"][-1]


def flag(command: str, name: str) -> str | None:
    words = command.split()
    return words[words.index(name) + 1] if name in words else None


# ----- the fact, once, with its source -----

def test_each_tpu_chip_row_says_how_many_jax_devices_it_is():
    chips = hardware.current().chips
    assert chips["tpu7x"].jax_devices_per_chip == 2
    # v4 and v5p have two TensorCores but one (megacore) device; v5e and v6e one TensorCore.
    assert [chips[c].jax_devices_per_chip for c in ("tpu-v4", "tpu-v5p", "tpu-v5e", "tpu-v6e")] == [1, 1, 1, 1]
    assert "accelerator_to_spec_map.py at 834e4bae" in chips["tpu7x"].jax_devices_source
    assert tpu_devices.devices("tpu7x", 4) == 8 and tpu_devices.devices("tpu-v5p", 4) == 4


@pytest.mark.parametrize(("edit", "message"), [
    # A two-TensorCore TPU chip that does not say whether JAX sees one device or two.
    (lambda t: t.replace("jax_devices_per_chip = 2   # each TensorCore", "# each TensorCore", 1)
             .replace('jax_devices_source = "jax-devices-per-chip"\nsource = "gcp-tpu7x-page',
                      'source = "gcp-tpu7x-page', 1),
     r"chips\.tpu7x\.jax_devices_per_chip: a TPU chip of 2 TensorCores shows JAX either one device"),
    (lambda t: t.replace("jax_devices_per_chip = 2   #", "jax_devices_per_chip = 3   #", 1),
     r"chips\.tpu7x\.jax_devices_per_chip: 3 is neither 1 \(megacore\) nor the chip's 2 TensorCores"),
    (lambda t: t.replace('jax_devices_source = "jax-devices-per-chip"\nsource = "gcp-tpu7x-page',
                         'jax_devices_source = "nowhere"\nsource = "gcp-tpu7x-page', 1),
     r"chips\.tpu7x\.jax_devices_source: 'nowhere' is not one of \[sources\]"),
])
def test_a_chip_row_that_leaves_its_devices_unsaid_or_impossible_is_refused(tmp_path, edit, message):
    text = TABLE.read_text(encoding="utf-8")
    edited = edit(text)
    assert edited != text
    path = tmp_path / "facts.toml"
    path.write_text(edited, encoding="utf-8")
    with pytest.raises(HardwareFactsError, match=message):
        load_facts(path)


# ----- vLLM TPU: --tensor-parallel-size counts devices -----

def test_a_tpu7x_replica_serves_over_all_eight_devices_of_its_four_chips():
    job = serving_job(TPU7X)
    command = server_command(job)
    deployment = next(m for m in job.manifests if m["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"] == 4
    assert flag(command, "--tensor-parallel-size") == "8"
    notes = "\n".join(job.derivations)
    assert "tensor parallelism over the replica's 8 JAX devices (4 chips, 2 per chip)" in notes
    assert "--tensor-parallel-size 8, not 4: each TPU7x (Ironwood) chip is 2 JAX devices" in notes
    assert "worker/tpu_worker.py l.411-412" in notes


@pytest.mark.parametrize(("pin", "chips"), [(V5E, 4), (V5P, 4), (V6E, 8)])
def test_one_device_per_chip_tpus_keep_tensor_parallelism_at_their_chips(pin, chips):
    job = serving_job(pin, {"architecture": "llama3.1-8b"})
    assert flag(server_command(job), "--tensor-parallel-size") == str(chips)
    notes = "\n".join(job.derivations)
    assert f"tensor parallelism over the replica's {chips} chips," in notes and "JAX devices" not in notes


def test_the_heads_rule_is_held_over_the_devices_not_the_chips(monkeypatch):
    """A model of 12 query heads (4 KV) splits over a v5e's 4 chips but not over a TPU7x 2x2x1's 8 devices, which
    vLLM TPU would refuse; the job says so rather than write it (or write TP 4, half the replica idle)."""
    named = model_run.named_model

    def twelve_heads(plan):
        model = named(plan)
        row = dataclasses.replace(model.architecture, query_heads=12, kv_heads=4)
        return dataclasses.replace(model, architecture=row)

    monkeypatch.setattr(vllm_tpu.model_run, "named_model", twelve_heads)
    assert flag(server_command(serving_job(V5E, {"architecture": "llama3.1-8b"})), "--tensor-parallel-size") == "4"
    with pytest.raises(UsageError, match=r"12 query heads do not split over tensor parallelism 8.*JAX devices divide"):
        serving_job(TPU7X)


# ----- accel job --check: a server on fewer devices than its pod holds -----

def _scope(job) -> rules.Scope:
    return rules.Scope(copy.deepcopy(job.manifests))


def _container(scope: rules.Scope) -> dict:
    deployment = next(m for m in scope.manifests if m["kind"] == "Deployment")
    return deployment["spec"]["template"]["spec"]["containers"][0]


def test_the_check_flags_a_tpu7x_server_given_its_chip_count():
    rule = rules.RULES["tpu/vllm-uses-every-device"]
    scope = _scope(serving_job(TPU7X))
    assert rules.run(scope, [rule]) == []           # what accel writes: TP 8 on 4 chips
    container = _container(scope)
    container["command"][-1] = container["command"][-1].replace("--tensor-parallel-size 8", "--tensor-parallel-size 4")
    caught = rules.run(scope, [rule])
    assert len(caught) == 1 and rule.severity == "flag"
    assert "TP 4 x DP 1 x PP 1 = 4 JAX devices, but the pod holds 8 JAX devices (4 chips, 2 per chip)" in \
        caught[0].breach.message
    assert "leaves 4 idle" in caught[0].breach.message and caught[0].fix == "pass --tensor-parallel-size 8"


def test_the_check_takes_the_recipes_data_parallel_servers_and_leaves_multi_host_ones_alone():
    rule = rules.RULES["tpu/vllm-uses-every-device"]
    scope = _scope(serving_job(TPU7X))
    container = _container(scope)
    # tpu-recipes' Gemma 4 on a 2x2x1: --data-parallel-size=4 --tensor-parallel-size=2, the host's 8 devices.
    container["command"] = ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model=google/gemma-4-31B-it",
                            "--data-parallel-size=4", "--tensor-parallel-size=2"]
    assert rules.run(scope, [rule]) == []
    container["command"][-1] = "--tensor-parallel-size=16"   # a replica over more than its pod: not judged here
    assert rules.run(scope, [rule]) == []
    container["command"][-1] = "--tensor-parallel-size=1"
    assert rules.run(scope, [rule])


def test_the_check_reads_the_vllm_flags_as_vllm_does():
    assert vllm_degrees(["/bin/bash", "-c", "vllm serve m --port 8000 -tp 4 --pipeline-parallel-size 2"]) == \
        {"tensor": 4, "data": 1, "pipeline": 2}
    assert vllm_degrees(["python3", "-m", "maxtext.trainers.pre_train.train", "--tensor-parallel-size", "2"]) is None
    assert vllm_degrees(["vllm", "serve", "m", "--tensor-parallel-size", "$(TP)"]) is None
    # The script is read as the shell reads it (rules.registry.command_words, MaxText's rule's too): an operator
    # ends a word even where no space does.
    assert vllm_degrees(["/bin/bash", "-c", "vllm serve m -tp 4&& echo up"])["tensor"] == 4


def test_the_check_leaves_one_device_per_chip_tpus_as_they_were():
    rule = rules.RULES["tpu/vllm-uses-every-device"]
    assert rules.run(_scope(serving_job(V6E)), [rule]) == []


# ----- MaxText on a TPU7x slice: the per-device batch and the ICI axes over devices -----

def long_training(sequence: int, pin: dict):
    return _plan(json.dumps({"name": "l", "kind": "pretrain", "model": {"parameters": "8B", "sequence_length": sequence},
                             "training": {"tokens": "5B", "framework": "jax", "precision": "bf16"},
                             "constraints": {"clouds": ["gcp"], "deadline_days": 30}, "hardware": pin},
                            sort_keys=True))


def training_command(plan) -> tuple[str, str]:
    job = generate(plan, JobContext(stack="t"), JobOptions())
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return pod["spec"]["containers"][0]["command"][-1], " ".join("\n".join(job.derivations).split())


def test_a_tpu7x_long_sequence_is_split_over_both_devices_of_each_chip():
    """An 8B at 1M tokens on a 2x2x1 TPU7x: the estimate shares one sequence over ICI TP4 = the 4 chips, each chip
    sized with its 192 GiB. MaxText sees 8 devices of 96 GiB: CP2 over the two devices of each chip halves each
    device's activations exactly, and per_device_batch_size 1/8 keeps one sequence a step, the plan's batch."""
    plan = long_training(1_048_576, TPU7X)
    assert (plan.estimate.details["tensor_parallel"], plan.estimate.details.get("context_parallel", 1)) == (4, 1)
    command, notes = training_command(plan)
    assert "ici_tensor_parallelism=4 ici_context_parallelism=2 max_target_length=1048576 " \
           "per_device_batch_size=0.125" in command
    assert "ICI TP4 = 4 chips of the slice" in notes
    assert ("MaxText counts JAX devices, 2 per chip here, so those chips are 8 devices, TP4 x CP2 (context "
            "parallelism 2x the chips'): each device holds 1/2 of a chip's share") in notes
    assert "(devices x per_device_batch_size x gradient_accumulation_steps)" in notes
    assert "packing=False" in notes   # context parallelism now runs: MaxText refuses it with packing
    layout = context_parallel.slice_layout(plan)
    assert layout.devices_per_sequence == 8 and layout.chips_per_sequence == 4
    # MaxText's batch: int(devices x per_device_batch_size) sequences a micro-step, 8 x 0.125 = 1.
    sequences, devices = context_parallel.plan_batch(plan)
    assert devices == 8 and int(devices * 0.125) == 1


def test_where_the_length_does_not_split_further_the_devices_widen_tensor_parallelism(monkeypatch):
    """Mutated: a length that splits into no more than CP1's chunks cannot take CP2, so the chip's two devices
    split the sequence by tensor parallelism instead (TP8), the same devices per sequence."""
    import accel.policies.estimator.activations as activations

    plan = long_training(1_048_576, TPU7X)
    monkeypatch.setattr(activations, "largest_context", lambda length: 1)
    command, notes = training_command(plan)
    assert "ici_tensor_parallelism=8 max_target_length=1048576 per_device_batch_size=0.125" in command
    assert "ici_context_parallelism" not in command
    assert "8 devices, TP8 (tensor parallelism 2x the chips')" in notes and "not by context parallelism" in notes


def test_one_device_per_chip_slices_keep_the_estimates_degrees():
    """v6e: the degrees and the per-device batch the estimate gave, counted in chips as before."""
    plan = long_training(131_072, {"accelerator": "tpu-v6e", "chips": 8})
    command, notes = training_command(plan)
    assert "ici_tensor_parallelism=4 ici_context_parallelism=2 max_target_length=131072 per_device_batch_size=0.125" \
        in command
    assert "MaxText counts JAX devices" not in notes and "(chips x per_device_batch_size" in notes


# ----- the estimate: a multi-latent cache is held whole by every tensor-parallel rank, a device on TPU -----

def test_a_latent_cache_is_held_by_each_device_of_a_tpu7x_replica_not_each_chip():
    """vLLM TPU keeps DeepSeek's multi-latent KV cache whole on every rank of its 'model' axis (tpu-inference 0.32.0
    runner/kv_cache.py l.171-175), and the ranks are JAX devices: a 4-chip TPU7x replica stores 8 copies, a v6e
    or v5p one a copy per chip, a GPU one per GPU; a grouped-query cache is one copy wherever it is."""
    from accel.policies.estimator.estimate import InferenceModel, resolve

    catalog = load_catalog()
    mla = workload_from_mapping({"name": "s", "kind": "inference", "model": {"architecture": "deepseek3-671b"},
                                 "inference": {"tokens_per_second": 2000}}, "s.yaml")
    gqa = workload_from_mapping({"name": "s", "kind": "inference", "model": {"architecture": "llama3.1-70b"},
                                 "inference": {"tokens_per_second": 2000}}, "s.yaml")

    def copies(spec, accelerator: str, chips: int) -> int:
        return InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator(accelerator)).kv_copies(chips)

    assert [copies(mla, a, 4) for a in ("tpu7x", "tpu-v6e", "tpu-v5p", "h100-80gb")] == [8, 4, 4, 4]
    assert [copies(gqa, a, 4) for a in ("tpu7x", "tpu-v6e")] == [1, 1]
