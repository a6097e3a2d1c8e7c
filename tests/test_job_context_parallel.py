"""A Plan whose layout carries context parallelism hands it to the training program (accel/job/context_parallel.py):
the default MaxText command gets its mesh axes, another program is told the Megatron-LM / NeMo arguments, and the
job starts TP x CP x PP x DP ranks on whole nodes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from accel.commands.choose import write_stack_file
from accel.job.manifests import JobOptions
from accel.job.service import job_of
from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import load_workload, workload_from_mapping

ROOT = Path(__file__).resolve().parent.parent


def long_context_job(tmp_path: Path, framework: str, command: str | None = None, accelerator: str = "h100-80gb"):
    """The 405B long-context example pinned to 2,048 H100 (256 nodes: TP8 x CP8 x PP16 x DP2), planned as a stack."""
    base = load_workload(ROOT / "examples" / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base["hardware"]["chips"] = 2048
    base["hardware"]["accelerator"] = accelerator
    base["training"]["framework"] = framework
    spec = workload_from_mapping(base, "t.yaml")
    plan = choose_plan(spec, load_catalog())
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    path = write_stack_file("longctx", spec, plan, root=tmp_path)
    result = plan_stack(None, path, ROOT)
    job = job_of(result, JobOptions(command=command))
    assert job is not None
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    return plan, jobset, "\n".join(job.derivations)


def container(jobset: dict) -> dict:
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]


def test_the_world_size_is_tp_x_cp_x_pp_x_dp_on_whole_nodes(tmp_path):
    plan, jobset, derivations = long_context_job(tmp_path, "pytorch")
    layout = plan.parallelism
    assert (layout.tensor, layout.context, layout.pipeline, layout.data) == (8, 8, 16, 2)
    spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    nodes = spec["completions"]
    assert nodes * plan.gpu.gpus_per_node == layout.tensor * layout.context * layout.pipeline * layout.data
    assert (nodes * plan.gpu.gpus_per_node) % (layout.tensor * layout.context * layout.pipeline) == 0
    assert re.search(rf"--nnodes={nodes}\b", " ".join(container(jobset)["command"]))
    assert "parallelism TP8 x CP8 x PP16 x DP2 (the Plan's)" in derivations


def test_the_default_megatron_command_gets_the_context_parallel_layout(tmp_path):
    _, jobset, derivations = long_context_job(tmp_path, "pytorch")
    command = " ".join(container(jobset)["command"])
    for flag in ("--tensor-model-parallel-size 8", "--context-parallel-size 8", "--pipeline-model-parallel-size 16",
                 "--seq-length 131072"):
        assert flag in command
    assert "layout: TP8 x CP8 x PP16 x DP2 as Megatron's flags" in " ".join(derivations.split())


def test_a_pytorch_program_of_ones_own_is_told_the_megatron_and_nemo_arguments(tmp_path):
    _, jobset, derivations = long_context_job(tmp_path, "pytorch", command="python3 my_train.py")
    flat = " ".join(derivations.split())
    assert "world size TP8 x CP8 x PP16 x DP2 = 2,048 ranks" in flat
    assert "--context-parallel-size" in flat and "context_parallel_size" in flat
    # The program is the user's: nothing is appended to it.
    assert "context" not in " ".join(container(jobset)["command"])


def test_the_default_maxtext_command_gets_its_mesh_axes(tmp_path):
    _, jobset, derivations = long_context_job(tmp_path, "jax")
    command = " ".join(container(jobset)["command"] + container(jobset).get("args", []))
    for flag in ("ici_tensor_parallelism=8", "ici_context_parallelism=8", "ici_pipeline_parallelism=16"):
        assert flag in command
    # ... at the plan's length, one sequence shared by the TP8 x CP8 group (MaxText's defaults: 2,048 tokens, 12
    # sequences per chip).
    assert "max_target_length=131072 per_device_batch_size=0.015625" in command
    # MaxText trains int(GPUs x per_device_batch_size) x gradient_accumulation_steps sequences a step: 2,048 / 64 =
    # 32 at once, and the plan's 16M-token batch is 122 sequences of 131,072 tokens: 4 micro-steps (128).
    assert "per_device_batch_size=0.015625 gradient_accumulation_steps=4" in command
    assert "the MaxText mesh is passed as" in " ".join(derivations.split())
    assert "packing=False" in derivations   # MaxText refuses CP with sequence packing on real data


def test_a_command_of_ones_own_is_left_as_it_is_and_told_the_flags(tmp_path):
    _, jobset, derivations = long_context_job(tmp_path, "jax", command="python3 my_train.py")
    command = " ".join(container(jobset)["command"] + container(jobset).get("args", []))
    assert "ici_context_parallelism" not in command
    assert "give the training program the same degrees: MaxText" in " ".join(derivations.split())


@pytest.mark.parametrize("stack", ["llama-405b-h100-aws", "dev-spot"])
def test_a_plan_without_context_parallelism_says_nothing_of_it(stack):
    from tests.conftest import planned_result

    job = job_of(planned_result(stack), JobOptions())
    assert job is not None
    assert not any("context parallelism" in line for line in job.derivations)


def test_a_sequences_deeper_pipeline_reaches_the_ranks_and_the_maxtext_mesh(tmp_path):
    # 405B on H200: the state's own PP8 would need CP256; the plan's layout is TP8 x CP2 x PP16 (activations.py).
    plan, jobset, derivations = long_context_job(tmp_path, "jax", accelerator="h200-141gb")
    layout = plan.parallelism
    assert (layout.tensor, layout.context, layout.pipeline, layout.data) == (8, 2, 16, 8)
    nodes = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["completions"]
    assert nodes * plan.gpu.gpus_per_node == 8 * 2 * 16 * 8
    command = " ".join(container(jobset)["command"] + container(jobset).get("args", []))
    for flag in ("ici_tensor_parallelism=8", "ici_context_parallelism=2", "ici_pipeline_parallelism=16"):
        assert flag in command
    assert "world size TP8 x CP2 x PP16 x DP8 = 2,048 ranks" in " ".join(derivations.split())


def test_a_deeper_pipeline_without_context_parallelism_is_still_handed_on():
    from accel.job import context_parallel
    from accel.policies.parallelism import Parallelism

    layout = Parallelism(tensor=8, pipeline=32, data=4)
    assert context_parallel.maxtext_mesh_args(layout) == ""   # the state's own layout: nothing to add
    assert context_parallel.maxtext_mesh_args(layout, long_sequence=True) == (
        "ici_tensor_parallelism=8 ici_pipeline_parallelism=32")
    told = " ".join(context_parallel.notes(layout, "pytorch", written=False, long_sequence=True))
    assert "world size TP8 x PP32 x DP4 = 1,024 ranks" in told and "--pipeline-model-parallel-size" in told


def test_a_long_sequence_that_only_widens_tensor_parallelism_is_passed_on_too(tmp_path):
    # Llama 3 8B at 1,048,576 tokens on H100: the state alone fits one GPU (TP1 and FSDP over the node), but one
    # sequence's 52.6 GB of activations per GPU need TP8 over the whole node (CP1, the state's own depth). The
    # job must be told, or MaxText shards the node FSDP-only and each GPU holds a whole sequence's activations.
    spec = workload_from_mapping({
        "name": "long-8b", "kind": "pretrain", "owner": "foundation-models",
        "model": {"parameters": "8B", "sequence_length": 1_048_576, "layers": 32, "hidden": 4096},
        "training": {"tokens": "20B", "framework": "jax"},
        "constraints": {"clouds": ["gcp"], "spot": "never"},
        "hardware": {"accelerator": "h100-80gb", "chips": 64}}, "t.yaml")
    plan = choose_plan(spec, load_catalog())
    assert plan.estimate.details["context_parallel"] == 1 and "pipeline_parallel" not in plan.estimate.details
    assert plan.parallelism is not None and plan.parallelism.tensor == 8 and plan.parallelism.context is None
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    result = plan_stack(None, write_stack_file("long8b", spec, plan, root=tmp_path), ROOT)
    job = job_of(result, JobOptions())
    assert job is not None
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    command = " ".join(container(jobset)["command"] + container(jobset).get("args", []))
    assert "ici_tensor_parallelism=8" in command and "ici_context_parallelism" not in command
    words = " ".join("\n".join(job.derivations).split())
    assert "the MaxText mesh is passed as ici_tensor_parallelism=8" in words
    assert "without context parallelism" in words and "CP" not in words.split("ranks")[0].split("world size")[-1]
