"""Serving on TPUs across hosts: refused, with what the documented way needs and how to serve instead.

A serving replica that spans TPU hosts is one multi-host slice. The one way GKE documents to serve JetStream/MaxText
there runs Pathways (runtime.yaml `tpu_multihost_serving`): a leader holding Pathways' resource manager and proxy
and the single-controller engine, a Pathways worker on each host, node pools with Workload Identity off and
allowlisted images. accel's stacks keep Workload Identity on (guardrail workload-identity), and MaxText's own server
started on every host is no multi-host server: each process would be its own engine. So accel writes no such job,
rather than one that cannot start, and says how to serve the model instead.
"""

from __future__ import annotations

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.hardware import tpu_serving as serving_hosts
from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job.facts import runtime


class MultiHostTpuServing(UsageError):
    """A TPU serving replica spanning hosts: accel writes no server that starts there (exit 2)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(f"{message}. Serve it instead: {fix}")
        self.reason = message
        self.fix = fix


def _source() -> str:
    """The document that says serving across TPU hosts runs through Pathways: the hardware table's source of
    limits.tpu_serving_hosts_per_replica (the fact the serving search and a pin are held to), its title up to the
    first colon."""
    return hardware.current().sources[serving_hosts.source_key()].title.split(":")[0]


def refusal(plan: Plan, nodes_per_replica: int, replica_chips: int) -> MultiHostTpuServing:
    """Why a replica of `replica_chips` TPU chips over `nodes_per_replica` hosts gets no job, and what to do."""
    hw = plan_view.hardware(plan)
    facts = runtime()["tpu_multihost_serving"]
    pathways = facts["pathways"]
    shape = f"topology {hw.topology}, " if hw.topology else ""
    message = (f"serving on TPU: each replica takes {replica_chips} chips over {nodes_per_replica} "
               f"{hw.machine_type} hosts ({shape}one multi-host slice), and accel writes no multi-host TPU server "
               "that starts there. GKE documents one way, Pathways: on the LeaderWorkerSet's leader "
               f"{', '.join(pathways['leader'])} (the engine with {pathways['engine_flag']}), on each TPU host a "
               f"Pathways {pathways['worker'][0]}, {pathways['images']}, and {pathways['node_pools']}, where "
               f"accel's stacks keep it on (guardrail workload-identity) [{_source()}]; "
               "MaxText's own server started on every host is one JAX controller per host, each engine running "
               "requests the other hosts never join [runtime.yaml tpu_multihost_serving]")
    single = serving_hosts.single_host_pin(hw.accelerator, hw.tpu_generation) if hw.tpu_generation else None
    fix = f"on one host: {single}; " if single is not None else ""
    fix += ("on GPUs, where accel writes vLLM across nodes; or write the LeaderWorkerSet yourself (GKE's Pathways "
            "tutorial, or vLLM TPU over Ray as kubernetes-sigs/lws docs/examples/vllm/TPU does) with the front, the "
            "probes and the Service on the leader only, and check it with `accel job -s STACK --check FILE`")
    return MultiHostTpuServing(message, fix)
