"""The default programs start on the images they are pinned with (accel/job/maxtext_entry.py, runtime.yaml `maxtext`):
MaxText's entry module and config path are the ones each image's MaxText has, and every argument the default commands
pass is a key of that MaxText's base.yml. (TPU serving runs vLLM TPU: tests/test_vllm_tpu_serving.py.)"""

from __future__ import annotations

import copy
import functools
import json
import re
import shlex

import pytest

from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.manifests import JobOptions, generate
from accel.job.maxtext_entry import resolve_config
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping

TPU_TRAINING = {"accelerator": "tpu-v5p", "chips": 64}
GPU_TRAINING = {"accelerator": "h100-80gb", "chips": 16}
OLD = "python3 -m MaxText.train MaxText/configs/base.yml"


@functools.cache
def _job(workload_json: str, command: str | None = None):
    plan = choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())
    return generate(plan, JobContext(stack="t"), JobOptions(command=command))


def job(kind: str, hardware: dict, model: dict | None = None, sequence: int | None = None, command=None):
    model = {**(model or {"parameters": "8B"}), **({"sequence_length": sequence} if sequence else {})}
    section = ({"inference": {"tokens_per_second": 2000, "framework": "jax"}} if kind == "inference" else
               {"training": {"tokens": "100B", "framework": "jax"}})
    workload = {"name": "entry", "kind": kind, "model": model, "hardware": hardware, **section}
    return _job(json.dumps(workload, sort_keys=True), command)


def main_pod(generated) -> dict:
    main = next(m for m in generated.manifests if m["kind"] in ("Deployment", "LeaderWorkerSet", "JobSet"))
    return (main["spec"]["template"] if main["kind"] == "Deployment" else
            main["spec"]["leaderWorkerTemplate"]["leaderTemplate"] if main["kind"] == "LeaderWorkerSet" else
            main["spec"]["replicatedJobs"][0]["template"]["spec"]["template"])["spec"]


def server(generated) -> dict:
    return main_pod(generated)["containers"][0]


def command_of(generated) -> str:
    return server(generated)["command"][-1]


# ----- entry module -----

@pytest.mark.parametrize("hardware", [TPU_TRAINING, GPU_TRAINING], ids=["tpu", "gpu"])
def test_training_runs_maxtexts_pre_training_module_which_the_pinned_image_has(hardware):
    generated = job("pretrain", hardware)
    argv = shlex.split(command_of(generated))
    assert argv[:3] == ["python3", "-m", "maxtext.trainers.pre_train.train"]
    # The module is one the image's MaxText carries (runtime.yaml maxtext.images, with the commit it is read at).
    assert argv[2] in runtime()["maxtext"]["images"][server(generated)["image"]]["modules"]


def test_the_removed_shim_is_in_neither_default():
    """MaxText 868098b8 (2026-04-08) deleted MaxText.train: the 2026-07-17 stable image has no such module."""
    tpu_image = runtime()["defaults"]["jax-tpu"]["image"]
    assert "MaxText.train" not in runtime()["maxtext"]["images"][tpu_image]["modules"]
    for hardware in (TPU_TRAINING, GPU_TRAINING):
        assert "MaxText.train" not in command_of(job("pretrain", hardware))


# ----- config path: MaxText's own resolution (pyconfig.resolve_config_path), ported per image -----

@pytest.mark.parametrize("hardware", [TPU_TRAINING, GPU_TRAINING], ids=["tpu", "gpu"])
def test_the_config_the_training_command_passes_resolves_in_its_image(hardware):
    generated = job("pretrain", hardware)
    config = shlex.split(command_of(generated))[3]
    assert config == "src/maxtext/configs/base.yml"
    image = server(generated)["image"]
    assert resolve_config(config, image) == "src/maxtext/configs/base.yml"


@pytest.mark.parametrize("image, old_fallback", [
    ("gcr.io/tpu-prod-env-multipod/maxtext_jax_stable:2026-07-17", "src/MaxText/configs/base.yml"),
    ("ghcr.io/nvidia/jax:maxtext-2026-03-05", "src/MaxText/configs/base.yml"),
])
def test_the_old_config_path_resolves_in_neither_image(image, old_fallback):
    """`MaxText/configs/base.yml` is no file under /deps or /opt/maxtext; 2026-03's MaxText tries maxtext/configs/...,
    then both fall back to src/MaxText/configs/base.yml, which neither tree has."""
    assert resolve_config("MaxText/configs/base.yml", image) is None
    assert resolve_config(old_fallback, image) == (
        "src/maxtext/configs/base.yml" if image.endswith("2026-03-05") else None)   # the 2026-03 lowercase rewrite
    workdir = runtime()["maxtext"]["images"][image]["workdir"]
    assert resolve_config(f"{workdir}/src/maxtext/configs/base.yml", image) == f"{workdir}/src/maxtext/configs/base.yml"
    assert resolve_config(f"{workdir}/MaxText/configs/base.yml", image) is None


# ----- every argument is a key of the image's base.yml -----

def _keys(command: str) -> set[str]:
    return {word.split("=", 1)[0] for word in shlex.split(command) if re.fullmatch(r"[a-z_]+=.*", word)}


def commands_written() -> dict[str, str]:
    """The default MaxText commands with every flag accel writes: a long sequence's mesh on TPU (ici_* tensor and
    context axes, max_target_length, per_device_batch_size, gradient_accumulation_steps) and model_name."""
    named = {"architecture": "llama3.1-8b"}
    return {
        "tpu": command_of(job("pretrain", TPU_TRAINING, named)),
        "tpu-long": command_of(job("pretrain", {"accelerator": "tpu-v6e", "chips": 8},
                                   {"parameters": "8B"}, sequence=131_072)),
        "gpu": command_of(job("pretrain", GPU_TRAINING, named)),
    }


def test_every_flag_the_maxtext_commands_pass_is_a_base_yml_key_of_the_pinned_maxtext():
    known = set(runtime()["maxtext"]["config_keys"])
    written = commands_written()
    assert {"ici_tensor_parallelism", "max_target_length", "per_device_batch_size"} <= _keys(written["tpu-long"])
    assert "model_name" in _keys(written["tpu"])
    for where, command in written.items():
        assert _keys(command) <= known, (where, _keys(command) - known)


def test_the_gpu_long_sequence_flags_are_known_too():
    from accel.job import context_parallel
    from accel.policies.parallelism import Parallelism
    mesh = context_parallel.maxtext_mesh_args(Parallelism(tensor=8, context=4, pipeline=2, data=2), True, 131_072, 64)
    assert {"ici_context_parallelism", "ici_pipeline_parallelism", "gradient_accumulation_steps"} <= _keys(mesh)
    assert _keys(mesh) <= set(runtime()["maxtext"]["config_keys"])
    assert "packing" in runtime()["maxtext"]["config_keys"]   # the notes tell a context-parallel run packing=False


# ----- serving keeps vLLM's own HTTP port -----

def test_gpu_serving_keeps_vllms_own_http_port():
    plan = choose_plan(workload_from_mapping({"name": "v", "kind": "inference", "model": {"parameters": "8B"},
                                              "hardware": {"accelerator": "h100-80gb", "chips": 8},
                                              "inference": {"tokens_per_second": 2000}}, "t.yaml"), load_catalog())
    generated = generate(plan, JobContext(stack="t"))
    pod = main_pod(generated)
    assert [c["name"] for c in pod["containers"]] == ["server"]
    assert pod["containers"][0]["ports"] == [{"containerPort": 8000, "name": "http"}]


# ----- the rule: a MaxText command from older docs is caught on the image that cannot run it -----

def _breaches(image: str, script: str) -> list[str]:
    from accel.job import rules
    pod = {"containers": [{"name": "trainer", "image": image, "command": ["/bin/bash", "-c", script]}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "t", "namespace": "n"},
                  "spec": {"template": {"spec": pod}}}
    return [v.breach.message for v in rules.run(rules.Scope([deployment]), [rules.RULES["maxtext/entry-in-image"]])]


STABLE = "gcr.io/tpu-prod-env-multipod/maxtext_jax_stable:2026-07-17"
TOOLBOX = "ghcr.io/nvidia/jax:maxtext-2026-03-05"


def test_the_rule_names_the_removed_module_and_the_unresolvable_config():
    module, config = _breaches(STABLE, f"cd /deps && {OLD} run_name=x steps=1")
    assert "has no module MaxText.train" in module and "its module is now maxtext.trainers.pre_train.train" in module
    assert "the config MaxText/configs/base.yml resolves to no file there" in config


def test_whether_the_default_program_is_maxtext_is_its_runtime_row_s(monkeypatch):
    """One reading decides that the default training program is MaxText (its runtime.yaml row gives maxtext_args):
    the command and the model_name and notes added to it. The mutation: a jax row running a program of its own."""
    from accel.job import manifests

    facts = copy.deepcopy(runtime())   # runtime() is cached: the mutation stays in this test
    facts["defaults"]["jax-tpu"] = {"image": facts["defaults"]["jax-tpu"]["image"], "command": "python3 train.py"}
    monkeypatch.setattr(manifests, "runtime", lambda: facts)
    workload = {"name": "entry", "kind": "pretrain", "model": {"architecture": "llama3.1-8b"},
                "hardware": TPU_TRAINING, "training": {"tokens": "100B", "framework": "jax"}}
    generated = generate(choose_plan(workload_from_mapping(workload, "t.yaml"), load_catalog()), JobContext(stack="t"))
    assert command_of(generated) == "python3 train.py"
    assert "the default program is an example, not this model" in "\n".join(generated.derivations)


def test_the_rules_remedy_is_the_entry_runtime_yaml_states(monkeypatch):
    """The module and config to run are runtime.yaml maxtext's (what the default command runs), stated once: changed
    there (the mutation: a renamed entry), the remedy follows."""
    from accel.job import rules
    from accel.job.rules import maxtext as rule_module

    facts = copy.deepcopy(runtime())   # runtime() is cached: the mutation stays in this test
    facts["maxtext"].update(train_module="maxtext.trainers.pretrain", config="src/maxtext/configs/base_v2.yml")
    monkeypatch.setattr(rule_module, "runtime", lambda: facts)
    pod = {"containers": [{"name": "trainer", "image": STABLE, "command": ["/bin/bash", "-c", f"{OLD} run_name=x"]}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "t", "namespace": "n"},
                  "spec": {"template": {"spec": pod}}}
    fixes = [v.fix for v in rules.run(rules.Scope([deployment]), [rules.RULES["maxtext/entry-in-image"]])]
    assert len(fixes) == 2
    for fix in fixes:
        assert "python3 -m maxtext.trainers.pretrain src/maxtext/configs/base_v2.yml" in fix
        assert "pre_train" not in fix


def test_the_2026_03_image_still_has_the_shim_but_not_the_old_config_path():
    assert [m for m in _breaches(TOOLBOX, f"{OLD} run_name=x") if "no module" in m] == []
    assert len(_breaches(TOOLBOX, f"{OLD} run_name=x")) == 1
    assert _breaches(TOOLBOX, "python3 -m MaxText.train src/MaxText/configs/base.yml run_name=x") == []  # its rewrite


@pytest.mark.parametrize("image", [STABLE, TOOLBOX])
def test_the_rule_passes_what_accel_writes_and_what_it_cannot_know(image):
    assert _breaches(image, "python3 -m maxtext.trainers.pre_train.train src/maxtext/configs/base.yml run_name=x") == []
    assert _breaches(image, "python3 -m maxtext.trainers.post_train.sft.train_sft run_name=x") == []   # config inferred
    assert _breaches(image, "python3 -m maxtext.trainers.pre_train.train /mnt/cfg/mine.yml") == []     # a mount
    assert _breaches(image, "python3 my_train.py MaxText/configs/base.yml") == []                       # not MaxText
    assert _breaches("my/maxtext:1", f"{OLD} run_name=x") == []                                         # unknown image


def test_every_stacks_default_job_passes_the_rule():
    for hardware in (TPU_TRAINING, GPU_TRAINING):
        generated = job("pretrain", hardware)
        from accel.job import rules
        assert rules.run(rules.Scope(generated.manifests), [rules.RULES["maxtext/entry-in-image"]]) == []
