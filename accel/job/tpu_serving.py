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
from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job.facts import runtime


class MultiHostTpuServing(UsageError):
    """A TPU serving replica spanning hosts: accel writes no server that starts there (exit 2)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(f"{message}. Serve it instead: {fix}")
        self.reason = message
        self.fix = fix


def _single_host(hw: plan_view.Hardware) -> tuple[str, str, int] | None:
    """(machine type, topology, chips) of the generation's largest one-host slice, from the hardware table."""
    generation = hardware.current().tpu_generations.get(hw.tpu_generation)
    machines = getattr(generation, "single_host_machine_types", None) or {}
    table = hardware.current().tpu_machines
    sized = [(table[machine].chips, topology, machine) for topology, machine in machines.items() if machine in table]
    if not sized:
        return None
    chips, topology, machine = max(sized)
    return machine, topology, chips


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
               f"accel's stacks keep it on (guardrail workload-identity) [{pathways['source'].split(':')[0]}]; "
               "MaxText's own server started on every host is one JAX controller per host, each engine running "
               "requests the other hosts never join [runtime.yaml tpu_multihost_serving]")
    single = _single_host(hw)
    fix = ""
    if single is not None:
        machine, topology, chips = single
        fix = (f"on one host, if the model's weights and KV cache fit there: pin hardware: {{accelerator: "
               f"{hw.accelerator}, topology: {topology}}} ({machine}, {chips} chips, the largest single-host "
               f"{hw.accelerator} slice); ")
    fix += ("on GPUs, where accel writes vLLM across nodes; or write the LeaderWorkerSet yourself (GKE's Pathways "
            "tutorial, or vLLM TPU over Ray as kubernetes-sigs/lws docs/examples/vllm/TPU does) with the front, the "
            "probes and the Service on the leader only, and check it with `accel job -s STACK --check FILE`")
    return MultiHostTpuServing(message, fix)
