"""A global batch that keeps fewer GPUs busy than one node holds does not eliminate the node (found by the audit4
sweep of `accel choose`). The rule: a GPU fleet is whole nodes, so its ladder goes up to the smallest fleet of whole
nodes that holds every GPU the batch keeps busy (a chip limit still rounds down); such a fleet trains on the busy
GPUs (whole replicas, at least one) and pays for every node, and the estimate says how many idle and which
training.global_batch_tokens would use them. Past that fleet more nodes only idle, and a deadline missed there names
the global batch."""

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose
from accel.policies.selection.ladders import gpu_fleet, tpu_fleet
from accel.policies.selection.replica_fleet import training_size
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def workload(**data):
    return workload_from_mapping({"name": "t", **data}, "t.yaml")


def option_detail(choice, offering: str) -> tuple:
    """(option, estimate details) of the first option on `offering`."""
    return next((o, d) for o, d in zip(choice.options, choice.option_details) if o.offering == offering)


# 1B LoRA at 131,072 tokens: the default 0.5M-token batch (the GPT-3 rule for its size) is 3 sequences, one GPU each.
LORA_LONG = dict(kind="finetune", model={"parameters": "1B", "sequence_length": 131072},
                 training={"tokens": "2B", "framework": "pytorch", "trainable_fraction": 0.01},
                 constraints={"clouds": ["aws"], "deadline_days": 7, "spot": "never"})


def test_a_node_the_batch_keeps_partly_busy_trains_on_its_busy_gpus_and_pays_for_all(catalog):
    # Before: "the global batch keeps at most 3 chips busy, below one node of 8 GPUs" eliminated every 8-GPU and
    # 4-GPU node, and nothing was feasible (1 L40S took 15.2 days).
    choice = choose(workload(**LORA_LONG), catalog)
    l40s, detail = option_detail(choice, "aws-g6e.12xlarge")
    assert (l40s.chips, l40s.hosts) == (4, 1)
    assert detail["busy_chips"] == 3
    assert "3 of the 4 GPUs train, 1 idle and paid for" in detail["batch_idle"]
    assert "training.global_batch_tokens 524,288 would keep all 4 busy" in detail["batch_idle"]
    # Paid on the node's 4 GPUs, timed on 3: a third faster than one L40S (15.2 days) and no faster than 3 would be.
    price = catalog.offering("aws-g6e.12xlarge").prices(l40s.region, False)
    assert l40s.hourly_usd == pytest.approx(price[0].usd * 4 + (price[1].usd if price[1] else 0.0))
    assert 15.2 / 3 <= l40s.hours / 24 < 15.2 / 2
    assert not any("below one node" in reason for r in choice.rejected for reason in r["reasons"])


def test_the_chosen_partly_busy_node_is_said_in_the_rationale(catalog):
    choice = choose(workload(**LORA_LONG), catalog)
    assert choice.chosen.chips == 8 and choice.estimate.details["busy_chips"] == 3
    lines = [line for line in choice.rationale if line.startswith("Global batch: ")]
    assert len(lines) == 1
    assert "3 of the 8 GPUs train, 5 idle and paid for" in lines[0]
    assert "the default for 1B parameters" in lines[0] and "training.global_batch_tokens" in lines[0]
    assert any("3 of the 8 chips run" in line for line in choice.rationale)


def test_a_batch_that_fills_its_nodes_says_nothing_of_idle_gpus(catalog):
    # 8 sequences of 131,072 tokens keep an 8-GPU node busy: no busy_chips, no Global batch line.
    filled = {**LORA_LONG, "training": {**LORA_LONG["training"], "global_batch_tokens": 8 * 131072}}
    choice = choose(workload(**filled), catalog)
    assert choice.chosen.chips == 8
    assert "busy_chips" not in choice.estimate.details
    assert not any(line.startswith("Global batch: ") for line in choice.rationale)


def test_the_fleet_grows_to_the_whole_nodes_that_hold_every_busy_gpu_and_no_further(catalog):
    # 1B at 32,768 tokens: the 0.5M-token batch is 15 sequences, 15 GPUs busy. Before, 8-GPU fleets stopped at one
    # node (A100: 240.8 days); two nodes train on 15 of their 16 GPUs, and a third would only idle.
    spec = workload(kind="pretrain", model={"parameters": "1B", "sequence_length": 32768},
                    training={"tokens": "1T", "framework": "pytorch"},
                    constraints={"clouds": ["gcp"], "deadline_days": 90, "spot": "never"})
    choice = choose(spec, catalog)
    reasons = next(r["reasons"] for r in choice.rejected if r["offering"] == "gcp-a2-highgpu-8g")
    on_demand = next(r for r in reasons if r.startswith("on-demand:"))
    assert "the fastest fleet (16 chips)" in on_demand
    assert "the global batch keeps at most 15 GPUs busy" in on_demand and "training.global_batch_tokens" in on_demand
    assert float(on_demand.split(" takes ")[1].split(" days")[0]) < 240.8 * 0.6


def test_time_objective_never_buys_nodes_past_the_batch(catalog):
    spec = workload(kind="pretrain", model={"parameters": "1B", "sequence_length": 32768},
                    training={"tokens": "100B", "framework": "pytorch"},
                    constraints={"clouds": ["gcp"], "deadline_days": 90, "spot": "never"})
    choice = choose(spec, catalog, "time")
    partly = [(o, d) for o, d in zip(choice.options, choice.option_details) if "busy_chips" in d]
    assert partly   # the fastest fleets are past the batch's 15 (or a long sequence's own) busy GPUs
    for option, detail in partly:   # no node of them wholly idle
        assert option.chips - option.chips_per_host < detail["busy_chips"] < option.chips, option


def test_training_size_caps_a_gpu_fleet_at_whole_replicas_the_batch_keeps_busy():
    offering = load_catalog().offering("gcp-a2-highgpu-8g")
    node, two = gpu_fleet(offering, 1), gpu_fleet(offering, 2)
    assert training_size(node, 1, 1, batch_chips=3)[:2] == (3, 1)        # one-GPU replicas: 3 of 8 busy
    assert training_size(two, 1, 1, batch_chips=15)[:2] == (15, 2)
    assert training_size(node, 1, 1, batch_chips=8) is node               # a batch that fills the node
    assert training_size(node, 1, 1) is node                              # no bound given
    # Replicas of 8 GPUs (TP8, the state needs 5): 12 busy chips are one whole replica, never less than one.
    assert training_size(two, 5, 1, batch_chips=12)[:2] == (8, 1)
    assert training_size(node, 5, 1, batch_chips=3)[:2] == (8, 1)
    tpu = tpu_fleet("v5e", "2x4")
    assert training_size(tpu, 1, 1, batch_chips=3) is tpu                  # a TPU slice trains whole


MID_LONG = dict(kind="pretrain", model={"parameters": "1B", "sequence_length": 32768},
                training={"tokens": "1T", "framework": "pytorch"},
                constraints={"clouds": ["gcp"], "deadline_days": 400, "spot": "never"})


def test_a_pinned_fleet_past_the_batch_is_timed_on_all_its_replicas_as_before(catalog):
    # Left as it was (candidates.SearchContext.trained_size says why: the pinned 405B stacks reproduce Llama 3's
    # 16,384 H100, which the defaults' 16M-token batch and a long sequence's least CP degree would leave part idle).
    def pinned(nodes):
        spec = workload(**MID_LONG, hardware={"accelerator": "a100-40gb", "chips": 8 * nodes,
                                             "machine_type": "a2-highgpu-8g"})
        return choose(spec, catalog)
    two, four = pinned(2), pinned(4)
    assert "busy_chips" not in four.estimate.details
    assert four.chosen.hours < two.chosen.hours * 0.6


def test_the_plan_lays_out_only_the_replicas_the_batch_feeds(catalog):
    from accel.policies.selection.plan_builder import make_plan

    spec = workload(**LORA_LONG)
    choice = choose(spec, catalog)
    plan = make_plan(spec, choice, catalog)
    assert plan.gpu is not None and plan.gpu.nodes * plan.gpu.gpus_per_node == 8
    assert plan.parallelism is not None
    assert (plan.parallelism.tensor, plan.parallelism.pipeline, plan.parallelism.data) == (1, 1, 3)


def test_a_tpu_slice_past_the_batch_is_still_refused_in_tpu_words(catalog):
    # A TPU ladder still ends at the batch's chips (docs/choose.md); its refusal named "one node of 4 GPUs" before.
    spec = workload(kind="pretrain", model={"parameters": "125M", "sequence_length": 131072},
                    training={"tokens": "300B", "framework": "jax"}, constraints={"clouds": ["gcp"], "deadline_days": 90})
    reasons = next(r["reasons"] for r in choose(spec, catalog).rejected if r["offering"] == "gcp-tpu-v5p")
    assert ("on-demand and spot: the global batch keeps at most 3 chips busy, below the smallest TPU v5p slice "
            "(4 chips) (set training.global_batch_tokens to raise it)") in reasons


def test_the_job_says_the_plan_keeps_only_part_of_its_gpus_busy_and_what_it_runs_instead(catalog):
    # The Plan's DP3 on an 8-GPU node, and the job starting 8 ranks (torchrun --nproc-per-node 8, Megatron DP8):
    # the job's header says both, not "DP3 (the Plan's)" beside a DP8 command.
    from accel.job.manifests import _plan_parallelism_note
    from accel.policies.selection.plan_builder import make_plan

    spec = workload(**LORA_LONG)
    plan = make_plan(spec, choose(spec, catalog), catalog)
    note = _plan_parallelism_note(plan, 8)
    assert note.startswith("parallelism TP1 x PP1 x DP3 (the Plan's): its global batch keeps 3 of the job's 8 GPUs "
                           "busy; the job starts a rank on every GPU")
    assert _plan_parallelism_note(plan, 3) == "parallelism TP1 x PP1 x DP3 (the Plan's)"
