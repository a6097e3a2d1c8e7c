"""The multi-node fabric check is launched like the training job: torchrun in every pod, one communicator.

Before: each pod ran a single-rank `all_reduce_perf -g 1` with no launcher, so the ranks never met and the check
could not pass on any multi-node GPU stack. Now torchrun starts accel/job/allreduce_check.py across the nodes."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from accel.job import allreduce_check
from accel.job.allreduce_check import GIB, bus_bandwidth, sizes_from
from accel.job.facts import runtime
from accel.job.megatron_run import CHECKOUT_VOLUME
from accel.job.nccl_log import shell_check
from accel.job.validate import (HEREDOC_END, PROGRAM_FILE, allreduce_program, host_network_only,
                                 torchrun_check_command)
from accel.job import plan_view
from accel.policies.plan import Plan
from tests.conftest import planned_result
from tests.test_job import STACKS, generated

# Nodes joined by a GPU network (or an inventory's own): those the stack built none for each check themselves
# (tests/test_validate_host_network.py).
MULTI_NODE_GPU = [s for s in STACKS
                  if (hw := plan_view.hardware(plan := Plan.model_validate(planned_result(s).plan))).family == "gpu"
                  and hw.nodes > 1 and not host_network_only(plan)]


def _pod(job) -> dict:
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def _hardware(stack: str) -> plan_view.Hardware:
    return plan_view.hardware(Plan.model_validate(planned_result(stack).plan))


# ---- the bus-bandwidth arithmetic (NVIDIA/nccl-tests doc/PERFORMANCE.md) ------------------------------------------

def test_bus_bandwidth_is_algorithm_bandwidth_times_2_n_minus_1_over_n():
    # 1 GB in 10 ms is 100 GB/s of algorithm bandwidth; over 8 ranks the bus carries 2 x 7/8 of it.
    assert bus_bandwidth(10 ** 9, 0.01, 8) == pytest.approx(175.0)
    assert bus_bandwidth(10 ** 9, 0.01, 2) == pytest.approx(100.0)
    assert bus_bandwidth(10 ** 9, 0.01, 1) == 0.0          # one rank moves nothing: why `-g 1` alone could not pass


@pytest.mark.parametrize("args", [(10 ** 9, 0.0, 8), (10 ** 9, 0.01, 0), (-1, 0.01, 8)])
def test_bus_bandwidth_refuses_a_time_or_rank_count_that_means_nothing(args):
    with pytest.raises(ValueError):
        bus_bandwidth(*args)


def test_the_sizes_sweep_1_to_8_gib_as_all_reduce_perf_b_1g_e_8g_f_2():
    facts = runtime()["validate"]["multi_node_program"]
    assert sizes_from(facts["min_gib"] * GIB, facts["max_gib"] * GIB) == [GIB, 2 * GIB, 4 * GIB, 8 * GIB]


# ---- the manifests: torchrun as the training job, in the training image -----------------------------------------

def test_there_are_multi_node_gpu_stacks_to_check():
    assert len(MULTI_NODE_GPU) >= 5, MULTI_NODE_GPU


@pytest.mark.parametrize("stack", MULTI_NODE_GPU)
def test_a_multi_node_check_starts_torchrun_over_every_node_and_gpu(stack):
    hw = _hardware(stack)
    pod = _pod(generated(stack, validate=True))
    [container] = pod["containers"]
    command = container["command"][-1]
    launch = re.search(r"torchrun --nnodes=(\d+) --nproc-per-node=(\d+) --node-rank=\$\(JOB_COMPLETION_INDEX\) "
                       r"--master-addr=\$\(JOBSET_NAME\)-(\S+)-0-0\.\$\(JOBSET_NAME\) --master-port=(\d+) (\S+)", command)
    assert launch, command.splitlines()[0]
    assert (int(launch[1]), int(launch[2])) == (hw.nodes, hw.chips_per_node)
    assert int(launch[4]) == runtime()["torchrun"]["rendezvous_port"] and launch[5] == PROGRAM_FILE
    assert "all_reduce_perf" not in command and "mpirun" not in command
    assert container["image"] == runtime()["defaults"]["pytorch-gpu"]["image"]
    index = next(e for e in container["env"] if e["name"] == "JOB_COMPLETION_INDEX")
    assert "job-completion-index" in index["valueFrom"]["fieldRef"]["fieldPath"]


# Serving (a Deployment, or a LeaderWorkerSet of vLLM) carries no training pod's fabric env to compare with.
@pytest.mark.parametrize("stack", [s for s in MULTI_NODE_GPU if planned_result(s).plan["workload"]["kind"] != "inference"])
def test_the_check_pod_gets_the_training_pods_fabric_env_and_mounts(stack):
    training = _pod(generated(stack))["containers"][0]
    check = _pod(generated(stack, validate=True))["containers"][0]
    # The trainer's own program (the Megatron-LM checkout, accel/job/megatron_run.py) is no part of the fabric path.
    assert check["volumeMounts"] == [m for m in training["volumeMounts"] if m["name"] != CHECKOUT_VOLUME]
    names = {e["name"] for e in check["env"]}
    assert {e["name"] for e in training["env"]} <= names | {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS"}
    # The same profile (the fabric's NCCL env script) is sourced first, when the training pod sources one.
    first = training["command"][-1].split(" && ")[0]
    if first.startswith("source "):
        assert check["command"][-1].startswith(first + " && ")


def test_a_given_image_replaces_the_training_image():
    pod = _pod(generated("llama-70b-a4", validate=True, image="registry.acme.dev/pytorch:2.6"))
    assert pod["containers"][0]["image"] == "registry.acme.dev/pytorch:2.6"


def test_the_launch_derivation_says_torchrun_and_no_mpi():
    check = generated("llama-70b-a4", validate=True)
    [launch] = [line for line in check.derivations if line.startswith("launch: ")]
    assert "torchrun --nnodes=32 --nproc-per-node=8" in launch and "no SSH or MPI" in launch


def test_a_one_node_check_still_runs_all_reduce_perf_over_its_gpus():
    command = _pod(generated("dev-spot", validate=True))["containers"][0]["command"][-1]
    assert command.startswith("all_reduce_perf -b 1G -e 8G -f 2 -g 8 ") and "torchrun" not in command


# ---- the pod's shell: the program it writes, and the pass line it judges ------------------------------------------

def test_the_command_carries_the_module_code_and_nothing_kubernetes_would_expand():
    source = allreduce_program()
    assert source in Path(allreduce_check.__file__).read_text() and "def bus_bandwidth" in source
    assert "$" not in source and HEREDOC_END not in source.splitlines()


def _kubelet(command: str, env: dict[str, str]) -> str:
    """Kubernetes' $(NAME) expansion of a container command (only names the container defines)."""
    return re.sub(r"\$\((\w+)\)", lambda m: env.get(m[1], m[0]), command)


def _run_pod_shell(tmp_path: Path, command: str, stub_output: str, stub_exit: int = 0) -> subprocess.CompletedProcess:
    """Run the pod's command under bash with a stub torchrun that prints `stub_output` (as the program's first
    local rank would) and records its arguments."""
    stub = tmp_path / "torchrun"
    stub.write_text(f"#!/bin/bash\necho \"$@\" > {tmp_path}/args\ncat <<'OUT'\n{stub_output}\nOUT\nexit {stub_exit}\n")
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    script = _kubelet(command, {"JOB_COMPLETION_INDEX": "3", "JOBSET_NAME": "fc"}).replace("/tmp/", f"{tmp_path}/")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    return subprocess.run(["/bin/bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)


def test_the_pod_shell_writes_the_program_and_passes_at_the_line(tmp_path):
    hw = _hardware("llama-70b-a4")
    result = _run_pod_shell(tmp_path, torchrun_check_command(hw, "workers", 280.0, None),
                            "# Avg bus bandwidth    : 301.2500 ")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "allreduce_check.py").read_text() == allreduce_program()
    args = (tmp_path / "args").read_text().split()
    assert args[:5] == ["--nnodes=32", "--nproc-per-node=8", "--node-rank=3",
                        "--master-addr=fc-workers-0-0.fc", "--master-port=29500"]


@pytest.mark.parametrize("output, code", [
    ("# Avg bus bandwidth    : 120.0000 ", 0),    # below the line
    ("", 0),                                      # no figure at all: fail closed
    ("# Avg bus bandwidth    : 301.2500 ", 1),    # the program itself failed (pipefail carries it through tee)
])
def test_the_pod_shell_fails_below_the_line_without_a_figure_or_when_the_program_fails(tmp_path, output, code):
    hw = _hardware("llama-70b-a4")
    result = _run_pod_shell(tmp_path, torchrun_check_command(hw, "workers", 280.0, None), output, code)
    assert result.returncode != 0


def test_the_pod_shell_fails_on_an_nccl_slow_path(tmp_path):
    hw = _hardware("llama-70b-a4")
    command = torchrun_check_command(hw, "workers", 280.0, shell_check("rdma", "/tmp/out"))
    fast = "host NCCL INFO Using network gIB\n# Avg bus bandwidth    : 301.2500 "
    assert _run_pod_shell(tmp_path, command, fast).returncode == 0
    slow = "host NCCL INFO Using network Socket\n# Avg bus bandwidth    : 301.2500 "
    assert _run_pod_shell(tmp_path, command, slow).returncode != 0


# ---- the program itself, on CPU over gloo (when torch is installed) -----------------------------------------------

def _gloo_rank(rank: int, world: int, port: int, line: float, results) -> None:
    import io

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    out = io.StringIO()
    code = allreduce_check.run([2 ** 20, 2 ** 21], warmup=2, iters=3, line=line, backend="gloo", out=out)
    results.put((rank, code, out.getvalue()))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("world, line, passes", [(1, 0.001, False), (2, 0.001, True), (2, 1e9, False)])
def test_the_program_measures_an_all_reduce_over_gloo(world, line, passes):
    torch = pytest.importorskip("torch")
    ctx = torch.multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_gloo_rank, args=(r, world, port, line, results)) for r in range(world)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert [code == 0 for _, code, _ in outcomes] == [passes] * world
    text = outcomes[0][2]
    figure = float(re.search(r"# Avg bus bandwidth\s+: (\S+)", text)[1])
    assert (figure == 0.0) if world == 1 else figure > 0.0
    assert "Avg bus bandwidth" not in outcomes[-1][2] or world == 1     # only the first local rank speaks
