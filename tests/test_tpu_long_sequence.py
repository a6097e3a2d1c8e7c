"""A long sequence on a TPU slice (policies/estimator/slice_sequence.py): one sequence's activations per chip, over
the ICI tensor x context-parallel chips that share it, beside the state's FSDP share of the slice; the layout it
needs reaches choose's rationale, the plan and the job's MaxText flags, and a sequence no slice holds is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from accel.commands.choose import write_stack_file
from accel.job.manifests import JobOptions
from accel.job.service import job_of
from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.estimator.activations import micro_batch_bytes
from accel.policies.estimator.slice_sequence import slice_sequence_fit
from accel.policies.selection.choice import NoFeasibleOption
from accel.policies.selection.choose import choose, choose_plan
from accel.policies.workload import workload_from_mapping

ROOT = Path(__file__).resolve().parent.parent
V6E_USABLE = 32e9 * 0.9            # a 32 GB v6e chip at the default hbm_usable_fraction
V6E_SLICES = (1, 4, 8, 16, 32, 64, 128, 256)
STATE_8B = 8e9 * 16.0 * 1.25       # weights, gradients and Adam state with the default headroom
LLAMA_8B = (32, 4096)              # layers, hidden


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def v6e_8b(sequence: int, **constraints):
    return workload_from_mapping({
        "name": "llama-8b-long", "kind": "pretrain",
        "model": {"parameters": "8B", "sequence_length": sequence},
        "training": {"tokens": "5B", "framework": "jax", "precision": "bf16"},
        "constraints": {"clouds": ["gcp"], "accelerators": ["tpu-v6e"], "deadline_days": 30, **constraints},
        "owner": "applied-ml"}, "t.yaml")


def fit_8b_on_v6e(sequence: int, slices=V6E_SLICES):
    need = -(-int(STATE_8B) // int(V6E_USABLE))
    return slice_sequence_fit(sequence, *LLAMA_8B, STATE_8B, V6E_USABLE, need, slices, 4)


def test_an_8b_at_131k_on_v6e_takes_ici_tensor_then_context_parallelism_to_fit():
    fit = fit_8b_on_v6e(131_072)
    # 6 chips hold the state: the 8-chip slice, 20 GB of state per chip leaving 8.8 GB; TP4 leaves 15.3 GB of
    # activations per chip, CP2 halves them.
    assert (fit.tensor, fit.context, fit.slice_chips) == (4, 2, 8)
    assert fit.fits and fit.changes_layout
    activations = micro_batch_bytes(131_072, 4096, 32, 4, 2)
    assert STATE_8B / 8 + activations <= V6E_USABLE
    assert STATE_8B / 8 + micro_batch_bytes(131_072, 4096, 32, 4) > V6E_USABLE   # TP4 alone does not
    assert "ICI TP4 x CP2" in fit.why() and "FSDP over the 8-chip slice" in fit.why()


def test_the_same_model_at_8k_keeps_the_states_own_slice():
    fit = fit_8b_on_v6e(8192)
    assert (fit.tensor, fit.context, fit.slice_chips) == (1, 1, 8)
    assert fit.fits and not fit.changes_layout


def test_no_slice_layout_fits_and_the_longest_that_would_is_offered():
    fit = fit_8b_on_v6e(1_048_576, slices=(8, 16))
    assert not fit.fits and fit.slice_chips == 16 and fit.tensor == 4 and fit.max_context == 4
    longest = fit.longest_sequence(fit.max_context)
    assert 0 < longest < 1_048_576 and longest % 8 == 0
    assert STATE_8B / 16 + micro_batch_bytes(longest, 4096, 32, 4, 4) <= V6E_USABLE


@settings(max_examples=60, deadline=None)
@given(billions=st.sampled_from([1, 3, 8, 13]), exponent=st.integers(11, 20))
def test_whatever_the_slice_layout_picks_fits_and_no_smaller_slice_does(billions, exponent):
    state, sequence = billions * 1e9 * 20.0, 1 << exponent
    layers, hidden = 32, 4096
    need = -(-int(state) // int(V6E_USABLE))
    fit = slice_sequence_fit(sequence, layers, hidden, state, V6E_USABLE, need, V6E_SLICES, 4)
    if not fit.fits:
        return
    assert fit.tensor * fit.context <= fit.slice_chips
    assert state / fit.slice_chips + micro_batch_bytes(sequence, hidden, layers, fit.tensor, fit.context) <= V6E_USABLE
    assert sequence % (2 * fit.context) == 0 or fit.context == 1
    for smaller in (n for n in V6E_SLICES if need <= n < fit.slice_chips):   # the most split a smaller slice allows
        most = micro_batch_bytes(sequence, hidden, layers, min(4, smaller), max(1, smaller // 4))
        assert state / smaller + most > V6E_USABLE


def test_choose_plans_the_ici_layout_its_own_slice_needs_and_says_why(catalog):
    # Within 8 chips: the 8-chip slice, TP4 x CP2 (test_an_8b_at_131k_on_v6e_...).
    choice = choose(v6e_8b(131_072, max_chips=8), catalog)
    detail = choice.estimate.details
    assert choice.chosen.chips == 8
    assert (detail["tensor_parallel"], detail["context_parallel"], detail["chips_per_sequence"]) == (4, 2, 8)
    assert any(line.startswith("Sequence: context parallelism 2:") and "ICI TP4" in line for line in choice.rationale)
    memory = next(a for a in choice.estimate.assumptions if a.name == "activation memory")
    assert "ici_context_parallelism" in memory.source and "Megatron" not in memory.source
    # Free to grow, the search may take a larger slice: its own layout is the least split its state share leaves
    # room for (16 chips: 10 GB of state per chip, TP4's 15.3 GB of activations fit beside it).
    choice = choose(v6e_8b(131_072), catalog)
    detail, chips = choice.estimate.details, choice.chosen.chips // choice.chosen.slices
    tensor, context = int(detail.get("tensor_parallel", 1)), int(detail.get("context_parallel", 1))
    assert chips >= 8 and (tensor, context) != (1, 1)
    assert STATE_8B / chips + micro_batch_bytes(131_072, 4096, 32, tensor, context) <= V6E_USABLE


def test_choose_at_8k_is_unchanged(catalog):
    detail = choose(v6e_8b(8192), catalog).estimate.details
    assert not {"sequence_activations", "context_parallel", "tensor_parallel"} & set(detail)


def test_a_sequence_no_slice_layout_holds_is_refused_naming_it(catalog):
    with pytest.raises(NoFeasibleOption) as refused:
        choose(v6e_8b(1_048_576, max_chips=16), catalog)
    text = str(refused.value) + " ".join(str(r) for r in refused.value.rejected)
    assert "model.sequence_length 1,048,576" in text and "would fit" in text


def planned_stack(spec, catalog, tmp_path):
    """The stack `accel choose --write-stack` writes for `spec`, planned as `accel job` reads it."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    return plan_stack(None, write_stack_file("tpulong", spec, choose_plan(spec, catalog), root=tmp_path), ROOT)


def job_command(result, options):
    """The job for a planned stack and its training container's command line."""
    job = job_of(result, options)
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return job, " ".join(pod["containers"][0]["command"] + pod["containers"][0].get("args", []))


def test_the_jobs_default_maxtext_command_carries_the_ici_flags(catalog, tmp_path):
    result = planned_stack(v6e_8b(131_072, max_chips=8), catalog, tmp_path)
    for options, written in ((JobOptions(), True), (JobOptions(command="python3 my_train.py"), False)):
        job, command = job_command(result, options)
        derivations = " ".join("\n".join(job.derivations).split())
        assert ("ici_tensor_parallelism=4 ici_context_parallelism=2" in command) is written
        # The plan's length, one sequence per TP4 x CP2 group of chips.
        assert ("max_target_length=131072 per_device_batch_size=0.125" in command) is written
        assert "max_target_length=131072 per_device_batch_size=0.125" in derivations
        assert "ICI TP4 x CP2 = 8 chips" in derivations
        assert ("passed to MaxText as" if written else "give the training program the same degrees") in derivations
        # MaxText refuses context parallelism with sequence packing on real data (the default command's is synthetic).
        assert "packing=False" in derivations


def pinned_v6e_8b(sequence: int, chips: int):
    base = v6e_8b(sequence).model_dump(mode="json", exclude_none=True)
    base["hardware"] = {"accelerator": "tpu-v6e", "chips": chips}
    return workload_from_mapping(base, "t.yaml")


def test_a_pinned_slice_gets_the_layout_it_needs_or_is_refused_naming_the_sequence(catalog):
    detail = choose(pinned_v6e_8b(131_072, 8), catalog).estimate.details
    assert (detail["tensor_parallel"], detail["context_parallel"]) == (4, 2)
    with pytest.raises(NoFeasibleOption, match=r"model\.sequence_length 1,048,576"):
        choose(pinned_v6e_8b(1_048_576, 16), catalog)


def test_the_slice_floor_is_kept_per_node_limit_not_only_per_machine_type(catalog):
    # A slice's floor reads the offering's node-pool limit (an overlay's own max_nodes, e.g. a raised or a lowered
    # quota, is per offering): two offerings of one machine type with different limits must not share it.
    from accel.policies.catalog.model import NodeLimit
    from accel.policies.selection.candidates import search_context

    spec = v6e_8b(262_144)
    plain = next(o for o in catalog.offerings if o.accelerator == "tpu-v6e" and o.chips_per_host == 4)
    limited = plain.model_copy(update={"max_nodes": NodeLimit(value=2, name="a test quota", source="test")})
    ctx = search_context(spec, catalog, "cost")
    small = ctx.sequence_fit(limited)     # two hosts: no slice of 8 chips or fewer holds state and sequence
    free = ctx.sequence_fit(plain)        # a 16-chip slice does, at ICI TP4 x CP2
    assert not small.fits and small.slice_chips == 8
    assert free.fits and (free.slice_chips, free.tensor, free.context) == (16, 4, 2)
    assert ctx.sequence_layout_degrees(plain) == (2, 0) and ctx.sequence_layout_degrees(limited) == (0, 0)


def test_the_jobs_global_batch_is_the_plans(catalog, tmp_path):
    # MaxText trains on int(chips x per_device_batch_size) x gradient_accumulation_steps sequences a step
    # (configs/types.py global_batch_size_to_train_on): at one sequence per TP4 x CP2 group, the 8-chip slice takes
    # one sequence per micro-step, so the plan's 2M-token batch of 131,072-token sequences (15) takes 15 of them.
    _, command = job_command(planned_stack(v6e_8b(131_072, max_chips=8), catalog, tmp_path), JobOptions())
    sequences = int(2e6 // 131_072)
    assert f"per_device_batch_size=0.125 gradient_accumulation_steps={sequences}" in command
    assert int(8 * 0.125) * sequences == sequences


def test_a_fleet_whose_one_step_holds_more_than_the_plans_batch_says_so(catalog, tmp_path):
    # 64 pinned v6e chips: 2.5 GB of state per chip, TP4 (15.3 GB of activations) fits beside it, so the 64 chips
    # take 16 sequences at once, one more than the plan's 2M-token batch (15): the job says the batch it trains.
    job, command = job_command(planned_stack(pinned_v6e_8b(131_072, 64), catalog, tmp_path), JobOptions())
    derivations = " ".join("\n".join(job.derivations).split())
    assert "ici_tensor_parallelism=4 max_target_length=131072 per_device_batch_size=0.25" in command
    assert "gradient_accumulation_steps" not in command
    assert "MaxText trains 16 sequences of 131,072 tokens a step" in derivations
    assert "more than the plan's global batch of 15" in derivations


def test_the_ici_group_divides_the_slice_as_maxtexts_mesh_needs():
    # MaxText's ICI axes multiply to the slice's chips (ici_fsdp_parallelism -1 takes the quotient): on a v5p
    # 4x4x12 slice (192 chips) TP4 x CP32 = 128 chips leaves FSDP 1.5, so the deepest split there is TP4 x CP16.
    v5p_usable, layers, hidden = 95e9 * 0.9, 80, 8192
    fit = slice_sequence_fit(1 << 22, layers, hidden, 160e9, v5p_usable, 2, (192,), 4)
    assert fit.slice_chips % (fit.tensor * max(fit.context, 1)) == 0
    assert not fit.fits and fit.max_context == 16       # CP16 is the most a 192-chip slice splits a sequence into
    fit = slice_sequence_fit(1 << 22, layers, hidden, 160e9, v5p_usable, 2, (192, 256), 4)
    assert fit.fits and (fit.slice_chips, fit.tensor, fit.context) == (256, 4, 32)
