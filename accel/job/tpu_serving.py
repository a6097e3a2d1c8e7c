"""Serving on TPUs across hosts: refused, with why and how to serve instead.

A serving replica that spans TPU hosts is one multi-host slice. accel serves TPUs with vLLM TPU, whose GKE tutorial
serves on one host and states that multi-host configurations are not supported with vLLM on TPUs on GKE
(runtime.yaml `tpu_multihost_serving`); tpu-inference's own release matrix passes only pipeline parallelism across
hosts and leaves tensor parallelism there untested. So accel writes no such job, rather than one it cannot stand
behind, and says how to serve the model instead.
"""

from __future__ import annotations

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.hardware import tpu_serving as serving_hosts
from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job.facts import cite, runtime


class MultiHostTpuServing(UsageError):
    """A TPU serving replica spanning hosts: accel writes no server that starts there (exit 2)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(f"{message}. Serve it instead: {fix}")
        self.reason = message
        self.fix = fix


def _source() -> str:
    """The document that holds TPU serving to one host: the hardware table's source of
    limits.tpu_serving_hosts_per_replica (the fact the serving search and a pin are held to), its title up to the
    first colon."""
    return hardware.current().sources[serving_hosts.source_key()].title.split(":")[0]


def refusal(plan: Plan, nodes_per_replica: int, replica_chips: int) -> MultiHostTpuServing:
    """Why a replica of `replica_chips` TPU chips over `nodes_per_replica` hosts gets no job, and what to do."""
    hw = plan_view.hardware(plan)
    facts = runtime()["tpu_multihost_serving"]
    shape = f"topology {hw.topology}, " if hw.topology else ""
    message = (f"serving on TPU: each replica takes {replica_chips} chips over {nodes_per_replica} "
               f"{hw.machine_type} hosts ({shape}one multi-host slice), and accel serves TPUs with vLLM TPU on one "
               f"host: GKE states multi-host configurations are not supported with vLLM on TPUs on GKE "
               f"[{_source()}], and tpu-inference passes only pipeline parallelism across hosts, tensor parallelism "
               f"there untested [{cite(facts['matrix_source'])}]")
    single = serving_hosts.single_host_pin(hw.accelerator, hw.tpu_generation) if hw.tpu_generation else None
    fix = f"on one host: {single}; " if single is not None else ""
    fix += ("on GPUs, where accel writes vLLM across nodes; or write the LeaderWorkerSet yourself (vLLM TPU over Ray "
            "as kubernetes-sigs/lws docs/examples/vllm/TPU does) with the probes and the Service on the leader only, "
            "and check it with `accel job -s STACK --check FILE`")
    return MultiHostTpuServing(message, fix)
