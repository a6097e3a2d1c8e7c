"""One sequence's activation memory (policies/estimator/activations.py) and the context parallelism a long
sequence adds to a GPU training layout (policies/parallelism.py), the search and the pin (policies/selection)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from accel.policies.catalog import load_catalog
from accel.policies.estimator.activations import (
    layer_bytes,
    micro_batch_bytes,
    ring_exchange,
    sequence_fit,
)
from accel.policies.parallelism import training_degrees, training_parallelism
from accel.policies.selection.choice import NoFeasibleOption
from accel.policies.selection.choose import choose, choose_plan
from accel.policies.workload import load_workload, workload_from_mapping

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
H100_USABLE = 80e9 * 0.9           # an 80 GB H100 at the default hbm_usable_fraction
BYTES_PER_PARAMETER, HEADROOM = 16.0, 0.25


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def state(parameters: float) -> float:
    return parameters * BYTES_PER_PARAMETER * (1 + HEADROOM)


def fit_on_h100(parameters: float, layers: int, hidden: int, sequence: int, usable: float = H100_USABLE):
    need = math.ceil(state(parameters) / usable)
    return sequence_fit(sequence, layers, hidden, state(parameters), HEADROOM, usable, need, 8)


# ----------------------------------------------------------------------------- the formula (Korthikanti et al. 2022)

def test_a_layer_without_recomputation_keeps_34_plus_5as_over_h_bytes_per_token_and_width():
    # GPT-3 175B (s 2048, h 12288, a 96): 5as/h = 80, so attention's scores outweigh the other 34 (section 4.2).
    s, h, a = 2048, 12288, 96
    assert layer_bytes(s, h, a, regime="none") == pytest.approx(s * h * (34 + 80))
    assert layer_bytes(s, h, a, regime="none") / layer_bytes(s, h, a, regime="selective") == pytest.approx(114 / 34)


def test_tensor_and_sequence_parallelism_divide_every_term_and_full_recomputation_keeps_two_bytes():
    s, h, a, t = 4096, 8192, 64, 8
    assert layer_bytes(s, h, a, tensor=t, regime="none") * t == pytest.approx(layer_bytes(s, h, a, regime="none"))
    assert layer_bytes(s, h, a, tensor=t, regime="selective") == pytest.approx(34 * s * h / t)
    assert layer_bytes(s, h, a, tensor=t, regime="full") == pytest.approx(2 * s * h / t)
    assert layer_bytes(s, h, a, micro_batch=4, regime="selective") == pytest.approx(4 * 34 * s * h)
    with pytest.raises(ValueError, match="regime"):
        layer_bytes(s, h, a, regime="some")


def test_one_llama_8b_layer_at_128k_tokens_keeps_tens_of_gb_unless_it_recomputes():
    # Llama 3 8B: h 4096, 32 heads. Selective recomputation: 34 x 131,072 x 4,096 = 18.3 GB per layer on one GPU.
    assert layer_bytes(131_072, 4096, 32, regime="selective") == pytest.approx(18.25e9, rel=1e-3)
    assert layer_bytes(131_072, 4096, 32, regime="none") > 2e12      # the s^2 scores: terabytes
    # accel's regime: 32 kept inputs (2 bytes) and one layer rebuilt (34 bytes), over TP x CP.
    assert micro_batch_bytes(131_072, 4096, 32) == pytest.approx(131_072 * 4096 * (2 * 32 + 34))
    assert micro_batch_bytes(131_072, 4096, 32, tensor=8, context=4) * 32 == pytest.approx(
        micro_batch_bytes(131_072, 4096, 32))


# ----------------------------------------------------------------------------- context parallelism only when needed

def test_llama_405b_at_128k_tokens_is_the_published_tp8_cp16_pp16_layout():
    # Llama 3 paper, Table 4: the 131,072-token phase ran TP8 x CP16 x PP16 on 80 GB H100s; its 8,192-token
    # phase TP8 x PP16 without context parallelism.
    long = fit_on_h100(405e9, 126, 16384, 131_072)
    assert (long.tensor, long.context, long.pipeline) == (8, 16, 16) and long.changes_layout
    assert long.state_gb + long.activation_gb <= long.usable_gb
    short = fit_on_h100(405e9, 126, 16384, 8192)
    assert (short.tensor, short.context, short.pipeline) == (8, 1, 16) and not short.changes_layout
    assert not short.past_headroom


def test_an_8b_or_70b_model_at_128k_tokens_fits_without_context_parallelism():
    for parameters, layers, hidden in ((8e9, 32, 4096), (70e9, 80, 8192)):
        fit = fit_on_h100(parameters, layers, hidden, 131_072)
        assert fit.context == 1 and not fit.changes_layout
        assert fit.past_headroom       # but the headroom alone no longer covers them: the rationale says so


def test_a_sequence_too_long_for_part_of_a_node_takes_the_whole_node_before_context_parallelism():
    # 8B: three GPUs hold the state (TP4); a 1M-token sequence needs TP8 and then CP2.
    fit = fit_on_h100(8e9, 32, 4096, 1_048_576)
    assert (fit.tensor, fit.context, fit.pipeline) == (8, 2, 1) and fit.widened
    assert fit.replica_gpus == 16


def test_tensor_parallelism_widens_only_as_far_as_the_sequence_needs():
    # A 1.9B model (24 layers of 2,048) on A100-40GB: its state with headroom (38 GB) fills one GPU's 38.6 GB
    # usable, and one 4,096-token sequence (0.7 GB at TP1) does not fit beside it. Two GPUs hold both: TP2, not the
    # whole node's TP8, which would run four times the tensor-parallel collectives per GPU for nothing.
    usable = 42.9e9 * 0.9
    fit = sequence_fit(4096, 24, 2048, state(1.9e9), HEADROOM, usable, 1, 8)
    assert (fit.tensor, fit.context, fit.pipeline) == (2, 1, 1) and fit.widened and fit.own_tensor == 1
    assert fit.state_gb + fit.activation_gb <= fit.usable_gb
    assert "TP2 (tensor parallelism widened for them: the state alone needed TP1)" in fit.why()
    # The narrowest fitting group, not just a fitting one: TP1 did not fit.
    assert state(1.9e9) + micro_batch_bytes(4096, 2048, 24) > usable


@settings(max_examples=60, deadline=None)
@given(billions=st.sampled_from([8, 70, 405]), exponent=st.integers(12, 21))
def test_context_parallelism_grows_with_the_sequence_and_always_fits_what_it_picks(billions, exponent):
    shape = {8: (32, 4096), 70: (80, 8192), 405: (126, 16384)}[billions]
    sequence = 1 << exponent
    fit = fit_on_h100(billions * 1e9, *shape, sequence)
    longer = fit_on_h100(billions * 1e9, *shape, sequence * 2)
    assert fit.fits and longer.fits
    assert longer.context >= fit.context
    assert fit.context & (fit.context - 1) == 0
    assert fit.state_gb + fit.activation_gb <= fit.usable_gb
    if fit.context > 1:   # the next smaller degree would not have fitted
        assert fit.state_gb + fit.activation_gb * 2 > fit.usable_gb
    assert sequence % (2 * fit.context) == 0   # Megatron-Core's 2 x CP chunks


def test_no_degree_fits_when_the_state_leaves_no_room():
    # Usable memory exactly the state's share: nothing is left for a single token.
    need = 8
    fit = sequence_fit(131_072, 32, 4096, state(8e9), HEADROOM, state(8e9) / need, need, 8)
    assert not fit.fits and fit.changes_layout and fit.longest_sequence(1) == 0
    assert "no context-parallel degree" in fit.why()


# ----------------------------------------------------------------------------- the layout's integers

@settings(max_examples=100, deadline=None)
@given(need=st.integers(1, 512), gpus=st.sampled_from([4, 8]), nodes=st.integers(1, 4096),
       context=st.sampled_from([1, 2, 4, 8, 16]))
def test_context_parallel_ranks_multiply_the_replica_and_divide_the_data_parallel_degree(need, gpus, nodes, context):
    tensor, pipeline, data, span = training_degrees(need, gpus, nodes, 1, context)
    assert tensor == gpus * span                      # tensor parallelism takes the node first
    replica = tensor * context * pipeline
    if replica <= nodes * gpus:
        assert replica * data <= nodes * gpus         # world size TP x CP x PP x DP within the fleet
        assert (replica * data) % gpus == 0           # whole nodes of ranks
    layout = training_parallelism(need, gpus, nodes, 1, context)
    assert layout.context == (context if context > 1 else None)
    assert layout.group_nodes * gpus == (replica if replica >= gpus else gpus)


def test_without_a_long_sequence_the_layout_is_the_states_own():
    for need, gpus, nodes in ((3, 8, 4), (105, 8, 2048), (20, 8, 32)):
        assert training_degrees(need, gpus, nodes) == training_degrees(need, gpus, nodes, 1, 0)
        assert "context" not in training_parallelism(need, gpus, nodes).model_dump()


# ----------------------------------------------------------------------------- the search, the pin and the plan

def long_405b(**constraints):
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base.pop("hardware")
    base["constraints"].update(constraints)
    return workload_from_mapping(base, "t.yaml")


def test_the_long_context_example_plans_context_parallelism_and_says_why(catalog):
    spec = load_workload(EXAMPLES / "llama-405b-longcontext.yaml")
    plan = choose_plan(spec, catalog)
    layout = plan.parallelism
    assert layout is not None and layout.context and layout.context > 1
    assert layout.replica_gpus * layout.data == plan.gpu.gpus_per_node * plan.gpu.nodes
    assert any(line.startswith(f"Sequence: context parallelism {layout.context}:") for line in plan.rationale)
    assert f"CP{layout.context}" in layout.text()
    memory = next(a for a in plan.estimate.assumptions if a.name == "activation memory")
    assert "Korthikanti" in memory.source and "full recomputation" in memory.source
    assert "scale-out network (400 Gb/s per GPU)" in memory.source and "hidden under the attention" in memory.source


def test_the_key_value_exchange_is_hidden_at_long_lengths_and_exposed_when_the_chunks_are_short():
    # 405B at 131,072 tokens, CP8 over 400 Gb/s: 16,384-token chunks pass in 0.17 ms against 1.1 ms of attention.
    transfer, attention, words = ring_exchange(131_072, 16384, 1024, 8, 8, 989e12, 50e9, "scale-out")
    assert transfer == pytest.approx(16384 * 2 * 128 * 2 / 50e9)
    assert attention == pytest.approx(2 * 16384 ** 2 * 2048 / 989e12)
    assert transfer < attention and "hidden under the attention" in words
    # The same model at 8,192 tokens split 64 ways: 128-token chunks, the exchange is the longer.
    transfer, attention, words = ring_exchange(8192, 16384, 1024, 8, 64, 989e12, 50e9, "scale-out")
    assert transfer > attention and "exposed, not charged" in words


def test_the_search_sizes_a_long_sequence_at_least_one_context_parallel_replica(catalog):
    choice = choose(long_405b(deadline_days=60), catalog)
    detail = choice.estimate.details
    assert int(detail["context_parallel"]) > 1
    assert choice.chosen.chips >= int(detail["min_chips_for_memory"])
    assert any(line.startswith("Sequence: context parallelism") for line in choice.rationale)


def test_a_long_sequence_past_max_chips_is_refused_naming_the_sequence_and_what_fits(catalog):
    with pytest.raises(NoFeasibleOption) as refused:
        choose(long_405b(deadline_days=None, max_chips=256), catalog)
    text = str(refused.value) + " ".join(str(r) for r in refused.value.rejected)
    assert "model.sequence_length 131,072" in text
    assert "would fit" in text


def test_a_pin_too_small_for_the_sequence_is_refused(catalog):
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base["hardware"]["chips"] = 256
    with pytest.raises(NoFeasibleOption, match=r"model\.sequence_length 131,072"):
        choose(workload_from_mapping(base, "t.yaml"), catalog)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml") if "longcontext" not in p.name))
def test_every_other_example_at_its_own_length_keeps_its_layout(catalog, example):
    choice = choose(load_workload(EXAMPLES / example), catalog)
    assert "context_parallel" not in choice.estimate.details
    assert "sequence_activations" not in choice.estimate.details


def test_a_long_sequences_batch_keeps_tp_x_cp_chips_busy_per_sequence(catalog):
    # The 405B default batch, 16M (16e6) tokens, at 131,072 tokens is 122 sequences, each shared by a TP8 x CP group
    # (Llama 3's long-context fleet: 2^24 tokens = 128 sequences x TP8 x CP16 = 16,384 H100).
    choice = choose(long_405b(deadline_days=None), catalog, objective="time")
    detail = choice.estimate.details
    context = int(detail["context_parallel"])
    sequences = math.floor(16e6 / 131_072)
    assert int(detail["batch_chip_limit"]) == sequences * 8 * context
    assert choice.chosen.chips <= sequences * 8 * context


# ----------------------------------------------------------------------------- which pipeline depth (docs/choose.md)

H200_USABLE = 141e9 * 0.9


def test_a_plan_whose_sequence_widens_tensor_parallelism_lays_out_the_narrow_group(catalog):
    # The 1.9B model on A100-40GB of the sizing test above, pinned to one p4d node: the plan's layout is the
    # sequence's TP2 (four data-parallel replicas), the estimate records it, and one sequence keeps two GPUs busy.
    spec = workload_from_mapping({
        "name": "small-1b9", "kind": "pretrain", "owner": "t",
        "model": {"parameters": "1.9B", "layers": 24, "hidden": 2048, "sequence_length": 4096},
        "training": {"tokens": "100B", "framework": "pytorch"},
        "constraints": {"clouds": ["aws"], "accelerators": ["a100-40gb"], "deadline_days": 30}}, "t.yaml")
    plan = choose_plan(spec, catalog)
    assert plan.gpu.gpus_per_node == 8
    layout = plan.parallelism
    assert (layout.tensor, layout.pipeline, layout.context) == (2, 1, None)
    assert layout.data == plan.gpu.nodes * 4
    assert plan.estimate.details["tensor_parallel"] == 2 and plan.estimate.details["chips_per_sequence"] == 2
    line = next(line for line in plan.rationale if line.startswith("Sequence:"))
    assert "at TP2 (tensor parallelism widened for them: the state alone needed TP1)" in line
    # The degree is the layout rule's argument: without it the same sequence's layout takes the whole node.
    assert training_degrees(1, 8, 1, 1, 1) == (8, 1, 1, 1)
    assert training_degrees(1, 8, 1, 1, 1, 0, 2) == (2, 1, 4, 1)
    assert training_degrees(1, 8, 1, 1, 2, 0, 2) == (8, 1, 1, 1)     # context parallelism keeps the whole node


def fit_405b_on_h200(sequence: int = 131_072, hides=None, layers: int = 126):
    need = math.ceil(state(405e9) / H200_USABLE)
    return sequence_fit(sequence, layers, 16384, state(405e9), HEADROOM, H200_USABLE, need, 8, hides=hides)


def test_where_the_state_nearly_fills_the_gpu_a_deeper_pipeline_beats_an_exposed_ring(catalog):
    # 405B on 141 GB H200: the state's own PP8 leaves 0.3 GB, which only CP256 (512-token chunks, the ring exposed)
    # would fit; at PP16 the state halves and CP2 fits with the exchange hidden. Before: TP8 x CP256 x PP8 x DP1.
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base["hardware"]["accelerator"] = "h200-141gb"
    plan = choose_plan(workload_from_mapping(base, "t.yaml"), catalog)
    layout = plan.parallelism
    assert (layout.tensor, layout.context, layout.pipeline) == (8, 2, 16)
    assert layout.replica_gpus == 256 and layout.replica_gpus * layout.data == plan.gpu.gpus_per_node * plan.gpu.nodes
    assert plan.estimate.details["pipeline_parallel"] == 16 and plan.estimate.details["context_parallel"] == 2
    line = next(line for line in plan.rationale if line.startswith("Sequence:"))
    assert "deepened from PP8 to PP16" in line and "hidden under the attention" in line
    per_sequence = next(a for a in plan.estimate.assumptions if a.name == "chips_per_sequence")
    assert per_sequence.value == 16 and "tensor x context-parallel group" in per_sequence.source


def test_the_shallowest_depth_whose_exchange_hides_is_taken():
    # PP8 needs CP256, PP16 CP2, PP32 CP1. Hidden only at CP <= 2: PP16. Hidden at no CP: PP32, whose CP1 has no
    # exchange to hide. Hidden everywhere: the state's own PP8 (the rule as it was).
    def layout(fit):
        return fit.pipeline, fit.context

    assert layout(fit_405b_on_h200(hides=lambda t, c: c <= 2)) == (16, 2)
    assert not fit_405b_on_h200(hides=lambda t, c: c <= 2).unhidden
    assert layout(fit_405b_on_h200(hides=lambda t, c: False)) == (32, 1)
    assert layout(fit_405b_on_h200(hides=lambda t, c: True)) == (8, 256)
    deeper = fit_405b_on_h200(hides=lambda t, c: False)
    assert deeper.deepened and deeper.changes_layout and "no context parallelism" in deeper.why()
    # Without a fabric to judge the exchange by, the state's own depth (the rule as it was).
    assert layout(fit_405b_on_h200()) == (8, 256) and not fit_405b_on_h200().deepened


def test_where_no_depth_hides_the_exchange_the_smallest_replica_is_taken():
    # 1M tokens: PP8 CP2048 (131,072 GPUs), PP16 CP16 and PP32 CP8 (2,048 each), PP64 CP8 (4,096): the shallower
    # of the two smallest, and the words say why.
    fit = fit_405b_on_h200(1_048_576, hides=lambda t, c: False)
    assert (fit.pipeline, fit.context, fit.replica_gpus, fit.unhidden) == (16, 16, 2048, True)
    assert "no depth hides the key/value exchange" in fit.why()
    assert fit.state_gb + fit.activation_gb <= fit.usable_gb


@settings(max_examples=60, deadline=None)
@given(layers=st.integers(1, 200), exponent=st.integers(14, 21), hidden=st.sampled_from([False, True]))
def test_a_pipeline_never_runs_past_the_models_layers(layers, exponent, hidden):
    fit = fit_405b_on_h200(2 ** exponent, hides=lambda t, c: hidden, layers=layers)
    assert fit.pipeline <= max(fit.own_pipeline, layers)
    assert fit.pipeline & (fit.pipeline - 1) == 0
    if fit.fits:
        assert fit.state_gb + fit.activation_gb <= fit.usable_gb + 1e-9


def test_a_model_of_few_layers_cannot_deepen_its_pipeline():
    # 15 layers: PP16 would leave a stage without one, so the state's own PP8 stays, with CP however large it must.
    fit = fit_405b_on_h200(hides=lambda t, c: False, layers=15)
    assert (fit.pipeline, fit.unhidden) == (8, True) and fit.context > 2
    assert fit_405b_on_h200(hides=lambda t, c: False, layers=16).pipeline == 16


@pytest.mark.parametrize(("need", "gpus", "nodes", "context", "pipeline"),
                         [(3, 8, 64, 2, 4), (105, 8, 2048, 2, 32), (105, 8, 24, 2, 32), (20, 8, 64, 1, 8)])
def test_a_sequences_pipeline_floor_deepens_the_layout_within_the_fleet(need, gpus, nodes, context, pipeline):
    tensor, depth, data, _ = training_degrees(need, gpus, nodes, 1, context, pipeline)
    assert tensor == gpus and depth == min(pipeline, nodes // context)
    assert tensor * context * depth * data <= nodes * gpus
    layout = training_parallelism(need, gpus, nodes, 1, context, pipeline)
    assert layout.pipeline == depth and layout.replica_gpus == tensor * context * depth


def test_a_deeper_pipeline_past_max_chips_is_still_refused_naming_the_sequence(catalog):
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base.pop("hardware")
    base["constraints"].update(deadline_days=None, max_chips=128)
    base["constraints"]["accelerators"] = ["h200-141gb"]
    with pytest.raises(NoFeasibleOption) as refused:
        choose(workload_from_mapping(base, "t.yaml"), catalog)
    text = str(refused.value) + " ".join(str(r) for r in refused.value.rejected)
    assert "model.sequence_length 131,072" in text and "TP8 x CP2 x PP16" in text


def test_a_long_sequence_on_four_gpu_nodes_counts_tp_x_cp_chips_per_sequence_as_it_says(catalog):
    # GB200 p6e nodes hold 4 GPUs: 405B at 131,072 tokens lays out TP4 x CP4. The size rule's 8 chips per sequence
    # (TP8 on an 8-GPU node) is not the layout's: 16 GPUs share each sequence, as the words and the docs say.
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base["hardware"]["accelerator"] = "gb200"
    choice = choose(workload_from_mapping(base, "t.yaml"), catalog)
    detail = choice.estimate.details
    tensor, context = 4, int(detail["context_parallel"])
    assert choice.chosen.chips_per_host == tensor and context > 1
    assert detail["chips_per_sequence"] == tensor * context
    from accel.policies.selection.candidates import search_context

    base.pop("hardware")
    ctx = search_context(workload_from_mapping(base, "t.yaml"), catalog, "cost")
    p6e = next(o for o in catalog.offerings if o.machine_type == "p6e-gb200.36xlarge")
    fit = ctx.sequence_fit(p6e)
    assert (fit.tensor, fit.context) == (tensor, context)
    assert ctx.long_sequence_batch_chips(fit) == math.floor(16e6 / 131_072) * tensor * context
    per_sequence = next(a for a in choice.estimate.assumptions if a.name == "chips_per_sequence")
    assert per_sequence.value == tensor * context


def test_a_long_sequence_without_context_parallelism_names_no_cp1_group(catalog):
    # 405B at 32,768 tokens on H200: the pipeline deepens, CP stays 1; the time objective's words on the batch
    # speak of the tensor-parallel group, not a "CP1" context-parallel one.
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base.pop("hardware")
    base["model"]["sequence_length"] = 32768
    base["constraints"].update(deadline_days=None, accelerators=["h200-141gb"])
    base["training"].update(global_batch_tokens=2 ** 21, tokens="20B")
    choice = choose(workload_from_mapping(base, "t.yaml"), catalog, objective="time")
    assert choice.estimate.details.get("pipeline_parallel") == 16
    words = " ".join(str(v) for v in choice.estimate.details.values())
    assert "more chips stop helping: a global batch" in words
    assert "CP1" not in words and "TP8 GPUs of its tensor-parallel group" in words


def test_a_long_sequence_missing_its_deadline_names_its_own_batch_bound(catalog):
    # 405B at 131,072 tokens on H100 in 3 days: the closest fleet, 7 TP8 x CP8 x PP16 replicas (7,168 GPUs), is
    # stopped by the long sequence's batch (122 sequences x TP8 x CP8 = 7,808 GPUs), not the usual 122 x 8 = 976
    # that the explanation quoted while naming a fleet seven times larger.
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base.pop("hardware")
    base["constraints"].update(deadline_days=3, accelerators=["h100-80gb"], max_chips=65536)
    with pytest.raises(NoFeasibleOption) as refused:
        choose(workload_from_mapping(base, "t.yaml"), catalog)
    closest = str(refused.value).splitlines()[-1]
    assert "7,168 GPUs" in closest and "the global batch stopped it growing" in closest
    assert "more than 7,808 chips would idle" in closest and "976" not in closest


@settings(max_examples=40, deadline=None)
@given(exponent=st.integers(15, 21), context=st.sampled_from([1, 2, 4, 8, 16, 64]))
def test_the_longest_sequence_a_refusal_offers_splits_into_2_x_cp_chunks(exponent, context):
    # Megatron-LM asserts seq_length % (2 x CP) == 0: a length the refusal suggests at CP4 must divide by 8 (it
    # said 95,803 tokens at CP4 for 405B within 512 H100).
    fit = fit_on_h100(405e9, 126, 16384, 2 ** exponent)
    longest = fit.longest_sequence(context)
    assert longest % (2 * context if context > 1 else 1) == 0
    assert longest * fit.activation_gb_alone / fit.sequence_length <= (fit.usable_gb - fit.state_gb) * context + 1e-9


def test_within_max_chips_a_deeper_pipeline_fits_where_the_preferred_layout_does_not():
    # 405B at 131,072 tokens on H100: the rule prefers TP8 x CP8 x PP16 (1,024 GPUs, its exchange hidden); within
    # 512 GPUs TP8 x CP2 x PP32 fits (the state halves at PP32), so it is taken rather than refused.
    def fit(max_gpus=None):
        usable = 80 * 2 ** 30 * 0.9   # the catalog's H100: 80 GiB
        need = math.ceil(state(405e9) / usable)
        return sequence_fit(131_072, 126, 16384, state(405e9), HEADROOM, usable, need, 8,
                            hides=lambda t, c: True, max_gpus=max_gpus)

    assert (fit().pipeline, fit().context, fit().replica_gpus) == (16, 8, 1024)
    bounded = fit(512)
    assert (bounded.pipeline, bounded.context, bounded.replica_gpus) == (32, 2, 512)
    assert bounded.state_gb + bounded.activation_gb <= bounded.usable_gb
    # Where nothing fits within the bound, the layout is the unbounded one (the refusal names it).
    assert (fit(128).pipeline, fit(128).context) == (16, 8)


def test_a_long_sequence_within_max_chips_or_a_pin_is_laid_out_to_fit_rather_than_refused(catalog):
    base = load_workload(EXAMPLES / "llama-405b-longcontext.yaml").model_dump(mode="json", exclude_none=True)
    base["hardware"]["chips"] = 512
    plan = choose_plan(workload_from_mapping(base, "t.yaml"), catalog)
    layout = plan.parallelism
    assert (layout.tensor, layout.context, layout.pipeline, layout.data) == (8, 2, 32, 1)
    base.pop("hardware")
    base["constraints"].update(deadline_days=None, max_chips=512, accelerators=["h100-80gb"])
    base["training"]["tokens"] = "50B"   # within the default 90 days on 512 GPUs
    choice = choose(workload_from_mapping(base, "t.yaml"), catalog)
    assert choice.chosen.chips == 512 and choice.estimate.details["pipeline_parallel"] == 32
