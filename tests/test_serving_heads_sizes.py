"""`accel choose` never sizes a serving replica at a tensor-parallel degree the serving job then refuses for a named
model's heads (policies/selection/served_sizes.py): vLLM on GPUs and vLLM TPU over JAX devices split the query heads
evenly and the KV heads evenly or, fewer than the ranks, replicate them evenly (policies/architectures/
serving_heads.py, the one copy of the rule the jobs refuse by: accel/job/model_run.py, accel/job/vllm_tpu.py).

Qwen3 14B's 40 query heads and Llama 2 13B's 40 do not split over 16 GPUs; the bundled catalog sells no 16-GPU
machine, so these run on a catalog adding a2-megagpu-16g (as tests/test_nvlink_domains.py does) and on an existing
cluster's 16-GPU nodes."""

from __future__ import annotations

import dataclasses

import pytest

from accel.base.errors import UsageError
from accel.job import model_run
from accel.job.context import JobContext
from accel.job.manifests import JobOptions, generate
from accel.policies import architectures
from accel.policies.architectures.serving_heads import tensor_parallel_problem
from accel.policies.catalog import load_catalog
from accel.policies.catalog.loader import offerings_from_inventory
from accel.policies.selection import served_sizes
from accel.policies.selection.candidates import search_context
from accel.policies.selection.choice import NoFeasibleOption
from accel.policies.selection.choose import choose_plan
from accel.policies.selection.ladders import replica_sizes
from accel.policies.workload import workload_from_mapping

HGX2 = {"accelerator": "a100-40gb", "count": 128, "gpus_per_node": 16, "usd_per_chip_hour": 1.0, "name": "hgx2"}
GB200_CLIQUE_32 = {"accelerator": "gb200", "count": 144, "gpus_per_node": 4, "usd_per_chip_hour": 4.0, "name": "nvl",
                   "nvlink_domain_gpus": 32, "nvlink_clique_label": True}


def serving(model: dict, tokens_per_second: int, p99: int, clouds=("gcp",), accelerators=("a100-40gb",), **extra):
    constraints = {"clouds": list(clouds), "spot": "never"}
    if accelerators:
        constraints["accelerators"] = list(accelerators)
    return workload_from_mapping({"name": "heads", "kind": "inference", "model": model,
                                  "inference": {"tokens_per_second": tokens_per_second, "p99_latency_ms": p99},
                                  "constraints": constraints, **extra}, "w.yaml")


def job_tensor(plan) -> int:
    """The --tensor-parallel-size of the serving job `accel job` writes for `plan` (a cloud plan)."""
    generated = generate(plan, JobContext(stack="t"), JobOptions())
    command = next(c["command"][-1] for m in generated.manifests if m["kind"] in ("Deployment", "LeaderWorkerSet")
                   for c in (m["spec"]["template"]["spec"]["containers"] if m["kind"] == "Deployment" else
                             m["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]))
    return int(command.split("--tensor-parallel-size ")[1].split()[0])


# ----- the rule lives once -----

def test_the_job_refuses_by_the_rule_the_search_sizes_by():
    assert model_run.vllm_tensor_parallel_problem is tensor_parallel_problem


# ----- the search -----

def test_a_16_gpu_node_serves_qwen3_14b_on_8_gpus_which_its_40_heads_split_over(a2_mega_catalog):
    """At 2,000 tok/s under 15 ms the fastest replica is the whole a2-megagpu-16g node, TP16, which vLLM refuses for
    40 query heads: the search sizes TP8 instead, and the job writes what was sized."""
    plan = choose_plan(serving({"architecture": "qwen3-14b"}, 2000, 15), a2_mega_catalog, "time")
    tensor = plan.parallelism.tensor
    assert tensor_parallel_problem(architectures.lookup("qwen3-14b"), tensor) is None
    assert job_tensor(plan) == tensor


def test_mutated_without_the_rule_the_search_picks_the_degree_the_job_refuses(a2_mega_catalog, monkeypatch):
    """The case above with the search's heads rule removed: TP16 is chosen and `accel job` refuses it."""
    monkeypatch.setattr(served_sizes, "_heads_rule", lambda ctx, offering: None)
    plan = choose_plan(serving({"architecture": "qwen3-14b"}, 2000, 15), a2_mega_catalog, "time")
    assert plan.parallelism.tensor == 16
    with pytest.raises(UsageError, match="40 query heads do not split over tensor parallelism 16"):
        job_tensor(plan)


def test_a_model_named_by_its_size_only_keeps_every_replica_size(a2_mega_catalog):
    """No architecture, no heads known: the 16-GPU replica is still weighed, as before."""
    spec = serving({"parameters": "14.8B"}, 2000, 15)
    ctx = search_context(spec, a2_mega_catalog, "time")
    mega = next(o for o in a2_mega_catalog.offerings if o.machine_type == "a2-megagpu-16g")
    assert 16 in [s.chips for s in served_sizes.served_replica_sizes(ctx, mega)]


@pytest.mark.parametrize("name", sorted(architectures.table().names()))
@pytest.mark.parametrize("inventory", [HGX2, GB200_CLIQUE_32], ids=["16-gpu-nodes", "gb200-32-gpu-clique"])
def test_every_architecture_is_sized_only_at_degrees_its_heads_split_over(name, inventory):
    """Over every named architecture, on nodes of 16 GPUs and on a GB200 clique of 8 trays (tensor groups of up to
    32 GPUs): every size the search keeps passes the job's rule, and every size it drops fails it."""
    row = architectures.lookup(name)
    spec = serving({"architecture": name}, 2000, 100, clouds=("kubernetes",), accelerators=None)
    offering = offerings_from_inventory([inventory])[0]
    ctx = search_context(spec, load_catalog(), "cost")
    model = ctx.inference_model(offering)
    every = replica_sizes(offering, int(ctx.resolved["max_replica_chips"]), model.hold_chips(), int(model.layers))
    kept = served_sizes.served_replica_sizes(ctx, offering)
    for size in every:
        refused = tensor_parallel_problem(row, model.tensor_ranks(size.chips, size.stages))
        assert (size in kept) is (refused is None), (size, refused)


def test_on_an_existing_clusters_16_gpu_nodes_the_chosen_degree_is_one_vllm_runs():
    """Llama 2 13B (40 heads) at 20,000 tok/s under 12 ms on 16-H100 nodes: TP16 was chosen before; now a degree
    dividing 40."""
    h100x16 = dict(HGX2, accelerator="h100-80gb", name="h16", usd_per_chip_hour=2.0)
    spec = serving({"architecture": "llama2-13b"}, 20000, 12, clouds=("kubernetes",), accelerators=None)
    plan = choose_plan(spec, load_catalog(), "time", offerings_from_inventory([h100x16]))
    assert 40 % plan.parallelism.tensor == 0
    model_run.check_vllm_tensor_parallel(plan, plan.parallelism.tensor)   # what `accel job` runs: no refusal


# ----- TPU: the ranks are JAX devices, two per TPU7x chip -----

@pytest.fixture
def twelve_heads(monkeypatch):
    """Qwen3 8B stated with 12 query heads over 4 KV heads (a mutated row): 4 devices split them, 8 do not."""
    row = dataclasses.replace(architectures.lookup("qwen3-8b"), query_heads=12, kv_heads=4)
    real = architectures.lookup
    monkeypatch.setattr(architectures, "lookup", lambda name: row if name == "qwen3-8b" else real(name))
    return row


def test_a_tpu7x_host_is_8_devices_so_12_heads_are_never_served_on_it(twelve_heads):
    spec = serving({"architecture": "qwen3-8b"}, 2000, 100, accelerators=("tpu7x", "tpu-v6e"))
    catalog = load_catalog()
    ctx = search_context(spec, catalog, "cost")
    tpu7x = next(o for o in catalog.offerings if o.accelerator == "tpu7x")
    v6e = next(o for o in catalog.offerings if o.accelerator == "tpu-v6e")
    assert 4 not in [s.chips for s in served_sizes.served_replica_sizes(ctx, tpu7x)]     # 8 devices
    assert 4 in [s.chips for s in served_sizes.served_replica_sizes(ctx, v6e)]           # 4 devices


def test_a_pinned_tpu_slice_the_heads_refuse_is_no_plan(twelve_heads):
    spec = workload_from_mapping({"name": "heads", "kind": "inference", "model": {"architecture": "qwen3-8b"},
                                  "inference": {"tokens_per_second": 2000, "p99_latency_ms": 100, "hours": 150,
                                                "framework": "jax"},
                                  "hardware": {"accelerator": "tpu7x", "chips": 4}}, "w.yaml")
    with pytest.raises(NoFeasibleOption, match="12 query heads do not split over tensor parallelism 8"):
        choose_plan(spec, load_catalog())


def test_where_nothing_serves_the_rejection_names_the_size_the_heads_left_out():
    """Qwen3 14B under 10 ms on 16-A100 nodes: TP8 is too slow and TP16, which would be faster, is one vLLM refuses;
    the offering's rejection says both, not only the p99."""
    spec = serving({"architecture": "qwen3-14b"}, 2000, 10, clouds=("kubernetes",), accelerators=None)
    with pytest.raises(NoFeasibleOption) as refused:
        choose_plan(spec, load_catalog(), "time", offerings_from_inventory([HGX2]))
    reasons = next(r["reasons"] for r in refused.value.rejected if r["offering"] == "kubernetes-hgx2")
    assert "the fastest (8-chip) replica" in reasons[0]
    assert ("16-chip replicas left out: model.architecture qwen3-14b: its 40 query heads do not split over tensor "
            "parallelism 16, which vLLM refuses") in reasons[0]
