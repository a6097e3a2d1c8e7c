"""Programs and engines for benchmarks/bench_plan.py.

- `synthetic_plan`: what `accel plan` does, over a stack much larger than the examples: k copies
  of the default stack's cluster (llama-70b-tpu, pinned TPU v6e plan) widened to 8 TPU slices,
  each built by the real TrainingCluster with 5 GKE GPU node pools beside it; then the same
  post-processing as `plan_stack` (plan normalisation, resource JSON, offline guardrails) and
  the `accel plan --json` document.
- `run_bare`: the SDK's own mock engine (stock `MockMonitor`, echo mocks), with no recording.
- `replay_program`: registers exactly the resources a Capture holds (same type tokens, names,
  parents, inputs, providers, dependencies, protect/retainOnDelete) with plain
  `pulumi.CustomResource` / `ComponentResource` / `ProviderResource`, so the bare engine's time
  for the same resource graph can be compared with the project's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import runpy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi

from replay import provider_urn as _provider_urn, replay_program, run_on_stock_engine

from accel import offline_plan
from accel.stack import config as stack_config
from accel.mock_engine import Capture, RecordingMocks, run_program
from accel.policies.plan import GpuPool, Plan

ROOT = Path(__file__).resolve().parent.parent
BASE_STACK = "llama-70b-tpu"
# One copy of the synthetic stack; scale k has k copies (k clusters, k times the slices and pools).
BASE_SLICES = 8
BASE_GPU_POOLS = 5
# A100 80GB nodes without a GPUDirect fabric, so every pool fits the TPU stack's single-network cluster.
SYNTHETIC_GPU_POOL = GpuPool(accelerator="a100-80gb", machine_type="a2-ultragpu-8g", gpus_per_node=8, nodes=4,
                             guest_accelerator="nvidia-a100-80gb")

Engine = Callable[..., Capture | None]


def widened_plan(plan: Plan, slices: int) -> Plan:
    """The pinned TPU plan with `slices` identical slices (chips and hosts follow)."""
    assert plan.tpu is not None
    tpu = plan.tpu.model_copy(update={"slices": slices})
    chosen = plan.chosen.model_copy(update={"slices": slices, "chips": tpu.chips_per_slice * slices,
                                            "hosts": tpu.hosts_per_slice * slices})
    return plan.model_copy(update={"tpu": tpu, "chosen": chosen})


def synthetic_program(config: stack_config.StackConfig, copies: int) -> Callable[[], None]:
    """The stack program's steps (read_stack, TrainingCluster, exports) `copies` times over: each
    copy a training cluster of its own on the widened plan, with GPU node pools beside its slices.

    The size grows by whole clusters because one cluster is capped where GKE caps it (a TpuSlice
    takes at most MAX_SLICES slices), and many clusters in one stack is how a large stack grows."""

    def program() -> None:
        from accel.stack.program import read_stack
        from accel.components.gcp.gpu import GpuNodePool, GpuNodePoolArgs
        from accel.components.training_cluster import TrainingCluster

        pulumi.runtime.set_all_config(dict(config.values), list(config.secret_keys))
        stack = read_stack(pulumi.runtime.config.CONFIG.get(), pulumi.get_stack())
        plan = widened_plan(stack.plan, BASE_SLICES)
        args = dataclasses.replace(stack.cluster_args, plan=plan)
        for copy in range(copies):
            name = stack.resource_name if copy == 0 else f"{stack.resource_name}-c{copy}"
            cluster = TrainingCluster(name, args)
            for index in range(BASE_GPU_POOLS):
                GpuNodePool(f"{name}-g{index}", GpuNodePoolArgs(
                    pool=SYNTHETIC_GPU_POOL, capacity=plan.capacity, cluster=cluster.cluster_name,
                    location=plan.region, zone=plan.zones[0], tags=args.tags),
                    opts=pulumi.ResourceOptions(parent=cluster))
            if copy == 0:
                pulumi.export("clusterName", cluster.cluster_name)
        pulumi.export(offline_plan.PLAN_OUTPUT, plan.model_dump(mode="json"))
        pulumi.export(offline_plan.HOURLY_OUTPUT, round(plan.estimate.hourly_usd * copies, 2))
        pulumi.export(offline_plan.RUN_OUTPUT, round(plan.estimate.total_usd * copies, 2))

    return program


@dataclasses.dataclass
class SyntheticRun:
    capture: Capture
    program_s: float     # load the stack file + run the program on the recording engine
    guardrails_s: float  # plan normalisation, resources JSON, offline guardrails (as plan_stack)
    json_s: float        # the `accel plan --json` document, serialised
    violations: int

    @property
    def total_s(self) -> float:
        return self.program_s + self.guardrails_s + self.json_s


def synthetic_plan(scale: int) -> SyntheticRun:
    """The synthetic stack through the same steps `plan_stack` + `accel plan --json` take."""
    started = time.perf_counter()
    config = stack_config.load_stack_config(ROOT, BASE_STACK)
    program = synthetic_program(config, scale)
    with offline_plan.cycle_collection_paused():  # as plan_stack runs
        capture = run_program(program, project=config.project, stack=config.stack, config=config.values,
                              preview=True)
    ran = time.perf_counter()
    outputs = capture.outputs
    result = offline_plan.PlanResult(
        stack=config.stack, project=config.project, stack_file=config.stack_file, capture=capture,
        plan=offline_plan._normalize_plan(outputs.get(offline_plan.PLAN_OUTPUT)),
        hourly_usd=offline_plan._number(outputs.get(offline_plan.HOURLY_OUTPUT)),
        run_usd=offline_plan._number(outputs.get(offline_plan.RUN_OUTPUT)))
    result.violations, result.guardrails_note = offline_plan.evaluate_guardrails(result.resources_json(), None)
    if result.guardrails_note:
        raise RuntimeError(result.guardrails_note)
    checked = time.perf_counter()
    json.dumps(result.to_json())
    done = time.perf_counter()
    return SyntheticRun(capture, ran - started, checked - ran, done - checked, len(result.violations))


def synthetic_on_bare_engine(scale: int) -> None:
    """The same synthetic program on the stock monitor: the project's code without the recorder."""
    config = stack_config.load_stack_config(ROOT, BASE_STACK)
    program = synthetic_program(config, scale)
    run_bare(program, project=config.project, stack=config.stack, config=config.values)


def stack_on_bare_engine(stack: str) -> None:
    """The project's __main__.py for `stack`, with the stack's config, on the stock monitor."""
    project = stack_config.load_project(ROOT)
    config = stack_config.load_stack_config(ROOT, stack)

    def program() -> None:
        from accel.stack.deploy_keys import offline_placeholders

        pulumi.runtime.set_all_config(dict(config.values), list(config.secret_keys))
        # As `accel plan` runs it: keys only `pulumi up` needs (gcp:project, accel:apiAccessCidrs) get placeholders.
        with offline_placeholders():
            runpy.run_path(str(project.main_file), run_name="__main__")

    run_bare(program, project=project.name, stack=config.stack, config=config.values)


def release_run_loop() -> None:
    """Shut down what the last run left behind: its event loop and that loop's thread pool.

    `run_program` (and `run_bare`, which copies its setup) install a new event loop per run
    and never close it; the pool threads the SDK's monitor calls ran on stay alive, each with
    a loop of its own. The benchmark calls this between runs, outside the timed region, so
    later measurements do not pay for earlier runs' leftovers.
    """
    release_loops([asyncio.get_event_loop()])


def release_loops(loops: list[asyncio.AbstractEventLoop]) -> None:
    for loop in loops:
        if not loop.is_closed():
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
    # The pool threads have exited, and the loops the SDK made for each of them are garbage.
    # Close them here: left to their finalisers, they fail noisily when a cycle collection
    # finalises their sockets first.
    for leftover in gc.get_objects():
        if isinstance(leftover, asyncio.BaseEventLoop) and not leftover.is_closed() and not leftover.is_running():
            leftover.close()


def run_bare(program: Callable[[], None], *, project: str, stack: str,
             config: dict[str, str] | None = None, preview: bool = True) -> None:
    """`run_program`'s setup with the SDK's stock MockMonitor: nothing is deserialised or recorded."""
    pulumi.runtime.set_all_config(dict(config or {}))
    run_on_stock_engine(program, project=project, stack=stack, mocks=RecordingMocks(preview=preview))


def _comparable(value: Any) -> Any:
    """Inputs without null entries: an unknown recorded as None is simply absent when replayed."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def replay_differences(capture: Capture, *, project: str, stack: str, through_classes: bool = False) -> list[str]:
    """Run the replay on the recording engine and list where it differs from the original capture."""
    replayed = run_program(replay_program(capture, through_classes), project=project, stack=stack, preview=True)

    def key(r) -> tuple:
        return (r.type, r.name, r.parent, r.custom, r.protect, r.retain_on_delete, _provider_urn(r.provider),
                tuple(sorted(r.dependencies)), json.dumps(_comparable(r.inputs), sort_keys=True, default=str))

    original = {r.urn: key(r) for r in capture.resources}
    again = {r.urn: key(r) for r in replayed.resources}
    problems = [f"missing in replay: {urn}" for urn in original.keys() - again.keys()]
    problems += [f"extra in replay: {urn}" for urn in again.keys() - original.keys()]
    problems += [f"differs: {urn}" for urn in original.keys() & again.keys() if original[urn] != again[urn]]
    return sorted(problems)
