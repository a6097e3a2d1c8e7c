"""What a generated GPU job runs: torchrun's target, and the RxDM sidecars with what Google's samples grant."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.job.manifests import JobOptions, torchrun_target
from accel.job.service import job_of
from tests.conftest import planned_result

ROOT = Path(__file__).resolve().parents[1]


def pod_spec(manifests):
    return manifests[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("command, target", [
    ("python train.py --steps 10", "train.py --steps 10"),
    ("python3 -m trainer.main --x $CHECKPOINT_DIR", "-m trainer.main --x $CHECKPOINT_DIR"),
    ("/usr/bin/python3.11 train.py", "train.py"),
    ("/opt/pytorch/examples/distributed/ddp/main.py", "/opt/pytorch/examples/distributed/ddp/main.py"),
    ("bash launch.sh", "--no-python bash launch.sh"),
    ("pythonic.py", "pythonic.py"),
])
def test_torchrun_never_gets_the_interpreter_as_its_script(command, target):
    # `torchrun [options] training_script [args]` runs the script with Python itself.
    assert torchrun_target(command) == target


def test_the_default_pytorch_command_runs_the_script_under_torchrun():
    job = job_of(planned_result("llama-405b-h100-gcp"), JobOptions())
    script = pod_spec(job.manifests)["containers"][0]["command"][-1]
    launch = script[script.index("torchrun"):]
    assert "--master-port=29500 /opt/megatron-lm/pretrain_gpt.py --tensor-model-parallel-size 8" in launch
    assert " python " not in launch


@pytest.mark.parametrize("stack, sidecar, capabilities", [
    ("llama-405b-h100-gcp", "tcpx-daemon", ["NET_ADMIN"]),
    ("llama-70b-a3mega-gcp", "tcpxo-daemon", ["NET_ADMIN", "NET_BIND_SERVICE"]),
])
def test_the_rxdm_sidecar_is_unprivileged_with_the_samples_capabilities_and_mounts(stack, sidecar, capabilities):
    job = job_of(planned_result(stack), JobOptions())
    spec = pod_spec(job.manifests)
    [car] = [c for c in spec["initContainers"] if c["name"] == sidecar]
    assert car["securityContext"] == {"privileged": False, "capabilities": {"add": capabilities}}
    mounts = {m["mountPath"]: m["name"] for m in car["volumeMounts"]}
    assert {"/hostsysfs", "/hostprocsysfs"} <= set(mounts)
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes[mounts["/hostsysfs"]]["hostPath"]["path"] == "/sys"
    assert volumes[mounts["/hostprocsysfs"]]["hostPath"]["path"] == "/proc/sys"
