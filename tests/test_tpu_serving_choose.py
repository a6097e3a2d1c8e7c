"""choose picks TPU serving only where the job can run it: one TPU serving replica stays within one host.

accel serves TPUs with vLLM TPU, which GKE supports on one host only (across hosts GKE documents only JetStream with
Pathways, which accel's stacks and guardrails do not build), so `accel job` refuses a wider replica
(accel/job/tpu_serving.py). The fact is the hardware table's limits.tpu_serving_hosts_per_replica
(policies/hardware/facts.toml, source gke-vllm-tpu-serving): the serving
search sizes a TPU replica within the generation's single-host slices, a model no single host holds is rejected on
that generation saying why and what to do, and a pin past one host is refused at choose and plan time (exit 2)."""

from __future__ import annotations

import dataclasses
import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from accel.base.errors import EXIT_INVALID
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.hardware import shapes
from accel.policies.hardware.tpu_serving import FACT, LIMIT, largest_serving_slice, serving_slices
from accel.policies.selection.choice import NoFeasibleOption
from accel.policies.selection.choose import choose
from accel.policies.workload import WorkloadFieldError, workload_from_mapping
from tests.scratch_project import scratch_project, workload_stack



def serving(parameters: str, tokens_per_second: float = 20000, hardware_pin: dict | None = None, **inference):
    workload = {"name": "chat", "kind": "inference", "model": {"parameters": parameters},
                "inference": {"tokens_per_second": tokens_per_second, "framework": "jax", **inference},
                "constraints": {"clouds": ["gcp"], "spot": "never"}}
    if hardware_pin is not None:
        workload["hardware"] = hardware_pin
    return workload_from_mapping(workload, "t.yaml")


@functools.cache
def _choice(parameters: str, objective: str, tokens_per_second: float):
    return choose(serving(parameters, tokens_per_second), load_catalog(), objective)   # type: ignore[arg-type]


def replica_hosts(option) -> int:
    """Hosts one serving replica takes: a TPU serving fleet is one slice per replica."""
    return option.hosts // option.slices


@pytest.mark.parametrize("objective", ["cost", "time"])
@pytest.mark.parametrize("parameters, tokens_per_second", [("8B", 2000), ("70B", 20000), ("70B", 2000),
                                                           ("13B", 50000)])
def test_choose_never_sizes_a_tpu_serving_replica_past_one_host(parameters, tokens_per_second, objective):
    # Before: 70B at 20,000 tok/s (examples/llama-70b-inference.yaml, cost) chose 3 x v6e 4x4, 4 hosts a replica.
    choice = _choice(parameters, objective, tokens_per_second)
    tpu = [o for o in [*choice.options, *choice.closest_infeasible] if o.family == "tpu"]
    assert tpu, "a TPU option is ranked"
    for option in tpu:
        assert replica_hosts(option) == 1, option
        assert option.topology in {s.topology for s in serving_slices(shapes.generation(option.accelerator).name)}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parameters=st.floats(1e9, 500e9), tokens_per_second=st.floats(100, 200000),
       p99_latency_ms=st.floats(20, 200), objective=st.sampled_from(["cost", "time"]))
def test_no_serving_workload_gets_a_tpu_replica_past_one_host(parameters, tokens_per_second, p99_latency_ms,
                                                              objective):
    try:
        choice = choose(serving(f"{parameters:.0f}", tokens_per_second, p99_latency_ms=p99_latency_ms),
                        load_catalog(), objective)
    except NoFeasibleOption as nothing:
        options = [nothing.closest] if nothing.closest is not None else []
    else:
        options = [*choice.options, *choice.closest_infeasible]
    assert all(replica_hosts(o) == 1 for o in options if o.family == "tpu")


def test_the_limit_is_the_hardware_tables_fact():
    """The search reads limits.tpu_serving_hosts_per_replica: a table that allowed four hosts would size the 70B
    example's replicas on 4x4 slices again (what choose picked before), so the one-host rule is that fact."""
    facts = hardware.current()
    assert facts.limits[LIMIT].value == 1 and facts.limits[LIMIT].source.startswith("gke-vllm-tpu-serving")
    title = facts.sources["gke-vllm-tpu-serving"].title
    assert "serve-vllm-tpu" in title and "multi-host configurations are not supported" in title
    wider = dataclasses.replace(facts, limits={**facts.limits, LIMIT: facts.limits[LIMIT]._replace(value=4)})
    with hardware.using(wider):
        choice = choose(serving("70B"), load_catalog(), "cost")
    assert any(o.family == "tpu" and replica_hosts(o) == 4 for o in choice.options)


@pytest.mark.parametrize("generation, topology, machine, chips", [("v5e", "2x4", "ct5lp-hightpu-8t", 8),
                                                                  ("v6e", "2x4", "ct6e-standard-8t", 8),
                                                                  ("v5p", "2x2x1", "ct5p-hightpu-4t", 4),
                                                                  ("tpu7x", "2x2x1", "tpu7x-standard-4t", 4)])
def test_the_largest_serving_slice_is_the_generations_single_host_shape(generation, topology, machine, chips):
    largest = largest_serving_slice(generation)
    assert largest is not None and (largest.topology, largest.machine_type, largest.chips, largest.hosts) == (
        topology, machine, chips, 1)


def test_a_model_no_single_host_holds_is_rejected_on_tpus_saying_why_and_what_to_do():
    # 405B at bf16 is 810 GB of weights; one v6e host holds 8 x 32 GB. Before: served on 16x16 slices. A week's
    # service: on GCP without spot only A3 Ultra (flex-start) serves it, and a month outlives a flex-start request
    # (tests/test_flex_start_serving.py).
    choice = choose(serving("405B", 2000, hours=168), load_catalog(), "cost")
    assert all(o.family != "tpu" for o in choice.options)
    rejected = {r["offering"]: " ".join(r["reasons"]) for r in choice.rejected}
    reason = rejected["gcp-tpu-v6e"]
    assert "810 GB of weights do not fit in the largest replica here (8 x 32 GB)" in reason
    assert "largest tpu-v6e serving slice: topology 2x4, ct6e-standard-8t, 8 chips" in reason
    assert ("accel serves TPUs with vLLM TPU, which GKE supports on one host only, and across hosts GKE documents "
            f"only Pathways, which accel does not deploy (hardware table {FACT}, source gke-vllm-tpu-serving)") in reason
    assert "serve it on GPUs" in reason and "deploy a multi-host server by hand (GKE serve-multihost-tpu-jetstream" in reason


@pytest.mark.parametrize("pin, field", [({"accelerator": "tpu-v6e", "chips": 16}, "hardware.chips"),
                                        ({"accelerator": "tpu-v6e", "topology": "4x4"}, "hardware.topology"),
                                        ({"accelerator": "tpu-v5p", "tpu_type": "v5p-16"}, "hardware.tpu_type")])
def test_a_pinned_tpu_serving_replica_past_one_host_is_refused_at_choose(pin, field):
    with pytest.raises(WorkloadFieldError) as refused:
        choose(serving("70B", 2000, pin), load_catalog())
    assert refused.value.field == field and refused.value.exit_code == EXIT_INVALID
    largest = largest_serving_slice(pin["accelerator"])
    assert largest is not None
    assert f"largest {pin['accelerator']} serving slice: topology {largest.topology}" in refused.value.problem
    assert f"pin hardware: {{accelerator: {pin['accelerator']}, topology: {largest.topology}}}" in refused.value.problem
    assert "Pathways" in refused.value.problem


def test_single_host_slices_pinned_as_replicas_are_served():
    choice = choose(serving("70B", 2000, {"accelerator": "tpu-v6e", "topology": "2x4", "slices": 2}), load_catalog())
    assert (choice.chosen.topology, choice.chosen.slices, choice.chosen.hosts) == ("2x4", 2, 2)


def test_accel_choose_and_plan_refuse_the_pin_with_exit_2(tmp_path, monkeypatch):
    from accel import cli

    workload = tmp_path / "chat.yaml"
    workload.write_text(json.dumps({"name": "chat", "kind": "inference", "model": {"parameters": "70B"},
                                    "hardware": {"accelerator": "tpu-v6e", "chips": 16},
                                    "inference": {"tokens_per_second": 2000, "framework": "jax"}}))
    cli._register_commands()
    chosen = CliRunner().invoke(cli.app, ["choose", str(workload)], catch_exceptions=False)
    assert chosen.exit_code == 2
    assert "hardware.chips" in chosen.output and "topology 2x4, ct6e-standard-8t" in chosen.output
    scratch_project(tmp_path, {"chat": workload_stack(json.loads(workload.read_text()))})
    monkeypatch.chdir(tmp_path)
    planned = CliRunner().invoke(cli.app, ["plan", "-s", "chat"], catch_exceptions=False)
    assert planned.exit_code == 2, planned.output
    assert "hardware.chips" in planned.output


def test_the_serving_search_reads_the_serving_slices_from_one_list(monkeypatch):
    # The single-host serving slices are listed once (policies/hardware/tpu_serving.py serving_slices): the
    # search's replica sizes follow that list, not a second filter of the training ladder by hosts.
    from accel.policies.hardware import tpu_serving
    from accel.policies.selection.ladders import replica_sizes

    v6e = next(o for o in load_catalog().offerings if o.accelerator == "tpu-v6e")
    assert [s.topology for s in replica_sizes(v6e, 256)] == ["1x1", "2x2", "2x4"]
    monkeypatch.setattr(tpu_serving, "serving_slices", lambda generation: serving_slices(generation)[:1])
    assert [(s.topology, s.chips, s.hosts, s.slices) for s in replica_sizes(v6e, 256)] == [("1x1", 1, 1, 1)]


def test_a_tpu_service_needing_more_slices_than_a_fleet_declares_is_refused_at_choose_naming_the_limit():
    """Every TPU serving replica is a slice, and a fleet declares at most MAX_SLICES (a node pool each): a 13B model
    at 20,000 tok/s within 15 ms needs 116 v5e slices, which `choose` once picked and `plan` then refused building
    the TpuSlice ("TpuSlice.slices: 116 is not valid; allowed: 1..64"). It is refused at choose, the limit named."""
    from accel.policies.selection.choose import NoFeasibleOption, choose
    from accel.policies.selection.pools import MAX_SLICES
    from accel.policies.catalog import load_catalog
    from accel.policies.workload import workload_from_mapping

    spec = workload_from_mapping({"name": "v5e-serve", "kind": "inference",
                                  "model": {"parameters": "13B", "architecture": "llama2-13b"},
                                  "inference": {"tokens_per_second": 20000, "p99_latency_ms": 15, "framework": "jax"},
                                  "constraints": {"clouds": ["gcp"], "accelerators": ["tpu-v5e"]}}, "v5e-serve.yaml")
    with pytest.raises(NoFeasibleOption) as refused:
        choose(spec, load_catalog(), "cost")
    text = str(refused.value)
    assert f"slices one TPU fleet declares (at most {MAX_SLICES}, a node pool each) eliminated 1: gcp-tpu-v5e" in text
    assert f"needs 116 slices > the {MAX_SLICES} one TPU fleet declares" in text
