"""Estimates that hold for whole runs and mixture-of-experts models (issue #30): the whole-run table, the
fitted goodput, MoE FLOPs, memory and all-to-all, the few-runs rule, fp8, and the global batch's message."""

import math
import statistics
from pathlib import Path

import pytest

from accel.base.errors import UsageError
from accel.policies.catalog import load_catalog
from accel.policies.estimator import calibration, generations, moe, whole_runs
from accel.policies.estimator.estimate import (
    TrainingModel,
    batch_chip_limit,
    min_chips_for_memory,
    resolve,
    training_flops,
    training_memory_bytes,
    whole_run_goodput,
)
from accel.policies.selection.choice import NoFeasibleOption
from accel.base.units import hours_text as duration, money
from accel.policies.selection.choose import choose
from accel.policies.workload import load_workload, workload_from_mapping

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def loo(catalog):
    return whole_runs.leave_one_out(catalog)


def workload(model, tokens="1T", **training):
    return workload_from_mapping({"name": "w", "kind": "pretrain", "model": model,
                                  "training": {"tokens": tokens, "framework": "pytorch", **training}}, "w.yaml")


MOE = {"parameters": "671B", "active_parameters": "37B", "experts": 256, "experts_per_token": 8,
       "shared_experts": 1, "layers": 61, "hidden": 7168, "sequence_length": 4096}


# ---------------------------------------------------------------------------------------------- the table


def test_whole_runs_are_their_own_kind_of_evidence_with_quote_and_url():
    table = whole_runs.whole_runs()
    assert len(table.dense) >= 25 and len(table.moe) >= 6
    for run in table.dense + table.moe:
        assert run.kind == "whole_run" and run.url.startswith("https://") and len(run.quote) > 10
    step_ids = {r.id for r in calibration.published_runs().runs}
    assert all(r.measured == "step" for r in calibration.published_runs().runs)
    for run in table.dense + table.moe:   # a run's step rows are named, and exist
        assert set(run.linked_step_rows) <= step_ids


@pytest.mark.parametrize("problem, needle", [
    ({"active_parameters": 700e9}, "active_parameters exceed parameters"),
    ({"experts": 8, "experts_per_token": 2, "active_parameters": None, "moe_layers": None}, "together"),
])
def test_a_malformed_moe_row_is_refused(problem, needle):
    row = next(r for r in whole_runs.whole_runs().moe).model_dump()
    row.update(problem)
    with pytest.raises(ValueError, match=needle):
        whole_runs.WholeRun.model_validate(row)


# ---------------------------------------------------------------------------------------------- MoE workloads


@pytest.mark.parametrize("model, field, words", [
    ({"parameters": "8B", "active_parameters": "9B"}, "model.active_parameters", "exceeds parameters"),
    ({"parameters": "47B", "active_parameters": "13B", "experts": 8, "experts_per_token": 9},
     "model.experts_per_token", "exceeds experts 8"),
    ({"parameters": "47B", "experts": 8, "experts_per_token": 2}, "model.experts", "active_parameters"),
    ({"parameters": "47B", "active_parameters": "13B", "experts_per_token": 2}, "model.experts", "Field required"),
    ({"parameters": "47B", "active_parameters": "13B", "experts": 8}, "model.experts_per_token", "Field required"),
    ({"parameters": "47B", "active_parameters": "13B", "experts": 1, "experts_per_token": 1}, "model.experts",
     "greater than 1"),
])
def test_moe_workload_errors_name_the_field(model, field, words):
    with pytest.raises(UsageError) as error:
        workload(model)
    assert field in str(error.value) and words in str(error.value)


def test_a_dense_model_omits_the_moe_fields():
    spec = workload({"parameters": "8B"})
    assert not spec.model.is_moe and spec.model.active == 8e9


def test_flops_follow_the_active_parameters_and_memory_the_total(catalog):
    moe_spec = workload(MOE)
    dense_active = workload({**{k: MOE[k] for k in ("layers", "hidden", "sequence_length")}, "parameters": "37B"})
    dense_total = workload({**{k: MOE[k] for k in ("layers", "hidden", "sequence_length")}, "parameters": "671B"})
    assert training_flops(moe_spec) == pytest.approx(training_flops(dense_active))
    assert training_flops(moe_spec) < training_flops(dense_total) / 10
    resolved = resolve(moe_spec, catalog.defaults)
    assert training_memory_bytes(moe_spec, resolved) == pytest.approx(
        training_memory_bytes(dense_total, resolve(dense_total, catalog.defaults)))
    assert training_memory_bytes(moe_spec, resolved) > 10 * training_memory_bytes(
        dense_active, resolve(dense_active, catalog.defaults))


def test_the_all_to_all_grows_when_expert_parallelism_crosses_the_nvlink_domain():
    shape = moe.MoeShape(experts=256, experts_per_token=8, moe_layers=58, hidden=7168.0)
    compute = 500e-6
    inside = moe.layout(shape, "h100-80gb", compute, 0.5, expert_parallel=8)
    across = moe.layout(shape, "h100-80gb", compute, 0.5, expert_parallel=64)
    assert inside.inside_share == 1.0 and across.inside_share < 0.2
    # 64-way over 8 nodes: most of the traffic leaves NVLink (450 GB/s) for 400 Gb/s per GPU.
    assert across.seconds_per_token > 5 * inside.seconds_per_token
    assert across.efficiency < inside.efficiency
    # On GB200 the same 64 experts' group fits in one 72-GPU NVLink domain: it stays on NVLink.
    nvl72 = moe.layout(shape, "gb200", compute, 0.5, expert_parallel=64)
    assert nvl72.inside_share == 1.0 and nvl72.seconds_per_token < across.seconds_per_token


def test_the_sizing_picks_expert_parallelism_within_the_domain_and_says_it(catalog):
    assert moe.default_expert_parallel(256, "h100-80gb") == 8
    # 256 experts over the 72-GPU domain: EP64, the widest degree dividing them (Megatron refuses EP72: arguments.py
    # l.1602 at core_v0.19.0, runtime.yaml megatron.refusals.experts)
    assert moe.default_expert_parallel(256, "gb200") == 64
    assert moe.default_expert_parallel(16, "gb200") == 16
    spec = workload(MOE)
    model = TrainingModel(spec, resolve(spec, catalog.defaults), catalog, catalog.accelerator("h100-80gb"), "aws",
                          False)
    assert model.moe is not None and "expert parallelism 8" in model.moe.detail
    assert "NVLink domain" in model.moe.detail and "671B total" in model.moe.detail


@pytest.mark.parametrize("accelerator, framework, pin", [
    ("gb200", "pytorch", {"accelerator": "gb200", "chips": 1152}),   # EP 64 of one NVL72 domain (a pinned fleet)
    ("tpu-v5p", "jax", None),                                        # EP 256: the slice (a searched fleet)
])
def test_the_listed_moe_factor_is_the_one_the_hours_used_under_a_decay_override(catalog, accelerator, framework, pin):
    """The all-to-all is set against the step MFU of EP chips, which the workload's decay override changes
    (past 8 chips): the assumption list prints the factor the estimate's goodput and hours were built on."""
    data = {"name": "w", "kind": "pretrain", "model": MOE, "training": {"tokens": "1T", "framework": framework},
            "constraints": {"accelerators": [accelerator], "spot": "never"},
            "assumptions": {"mfu_decay_per_doubling": 0.8}}
    if pin is not None:
        data["hardware"] = pin
    spec = workload_from_mapping(data, "w.yaml")
    estimate = choose(spec, catalog).estimate
    listed = next(a for a in estimate.assumptions if a.name == "mixture of experts")
    resolved = resolve(spec, catalog.defaults)
    chip = catalog.accelerator(accelerator)
    used = TrainingModel(spec, resolved, catalog, chip, "gcp", False).moe
    assert used is not None and f"expert parallelism {64 if pin else 256} " in used.summary
    assert listed.value == f"x{used.value:.4g}: {used.summary}"
    if pin is not None:   # a pin's goodput is the model's: the whole-run overhead times the MoE factor
        implied = estimate.goodput / whole_run_goodput(spec, resolved, catalog, chip).value
        assert float(listed.value.split(":")[0][1:]) == pytest.approx(implied, rel=1e-3)


# ---------------------------------------------------------------------------------------------- the fit


def _summary(errors):
    absolute = [abs(e.error) for e in errors]
    return statistics.median(absolute), max(absolute)


def test_dense_whole_runs_leave_one_out_median_within_target(loo):
    dense, _ = loo
    median, _ = _summary(dense)
    assert median <= 0.20


@pytest.mark.xfail(strict=True, reason="Phi-2 (card: 1.4T tokens on 96 A100 in 14 days, a whole-run MFU above "
                                        "every A100 step row) is predicted +71%, Phi-3-mini (its April 2024 card: "
                                        "3.3T tokens on 512 H100 in 7 days) +53%; no other row is over 50%")
def test_dense_whole_runs_leave_one_out_worst_within_target(loo):
    dense, _ = loo
    _, worst = _summary(dense)
    assert worst <= 0.50


def test_the_dense_whole_runs_past_the_worst_case_target_are_the_two_known_ones(loo):
    """Phi-2, and Phi-3-mini since its duration was corrected to its card's (7 days, not 10): any other row past
    50% is a new miss."""
    dense, _ = loo
    assert {e.run.id for e in dense if abs(e.error) > 0.50} <= {"phi2", "phi3-mini"}


def test_moe_whole_runs_leave_one_out_median_within_target(loo):
    _, mixture = loo
    median, _ = _summary(mixture)
    assert median <= 0.25


def test_leave_one_out_does_not_see_the_row(catalog, loo):
    """A dense row's prediction changes when the row is in the fit: the fit is really without it."""
    dense, _ = loo
    table = whole_runs.whole_runs()
    row = next(r for r in table.dense if r.id == "llama2-70b")
    error = next(e for e in dense if e.run.id == row.id)
    full = whole_runs.calibrated_model(catalog).goodput.goodput(whole_runs.generation_of(row), row.active)
    assert error.goodput != pytest.approx(full, rel=1e-6)


# ---------------------------------------------------------------------------------------------- the layout (a diagnostic)


def test_a_rows_pipeline_is_the_one_the_estimators_own_layout_gives_its_model(catalog):
    """The benchmark's PP column (a diagnostic, fitted into nothing) is what `accel choose` would lay out for
    that model on that hardware: the estimator's memory rule (min_chips_for_memory) and the Plan's training
    parallelism."""
    from accel.policies.parallelism import training_parallelism

    table = whole_runs.whole_runs()
    impute = whole_runs.chips_rule(table.dense + table.moe)
    for row in table.dense + table.moe:
        if generations.generation(row.compute_chip) == "tpu":
            assert whole_runs.row_stages(row, catalog, impute) == 1
            continue
        spec = workload({"parameters": row.parameters})
        state = min_chips_for_memory(spec, resolve(spec, catalog.defaults), catalog.accelerator(row.compute_chip))
        assert whole_runs.row_min_chips(row, catalog) == state, row.id
        nodes = math.ceil(whole_runs.chips_of(row, impute) / 8)
        assert whole_runs.row_stages(row, catalog, impute) == training_parallelism(state, 8, nodes).pipeline, row.id
    # Llama 3.1 405B on H100: the published PP16 (Llama 3 paper, Table 4); a 7B model fits a node.
    by_id = {r.id: r for r in table.dense}
    assert whole_runs.row_stages(by_id["llama31-405b"], catalog, impute) == 16
    assert whole_runs.row_stages(by_id["llama2-7b"], catalog, impute) == 1


def test_the_pipeline_a_chips_memory_forces_does_not_buy_goodput(catalog):
    """The pre-registered layout term was not adopted (docs/choose.md): it fitted positive, so memory-forced
    pipelining would have raised goodput. The same 70B model pipelines over 8 stages on 40 GB A100s and 4 on
    80 GB ones, and keeps the same whole-run goodput on both (both are Ampere)."""
    fitted = whole_runs.calibrated_model(catalog).goodput
    spec = workload({"parameters": "70B"})
    resolved = resolve(spec, catalog.defaults)
    small = whole_run_goodput(spec, resolved, catalog, catalog.accelerator("a100-40gb"))
    large = whole_run_goodput(spec, resolved, catalog, catalog.accelerator("a100-80gb"))
    stages = {a: whole_runs.pipeline_stages(catalog, a, min_chips_for_memory(spec, resolved, catalog.accelerator(a)))
              for a in ("a100-40gb", "a100-80gb")}
    assert stages == {"a100-40gb": 8, "a100-80gb": 4}
    assert small.value == large.value == fitted.goodput("ampere", 70e9) < fitted.max_goodput
    assert "layout" not in small.source and "pipeline" not in small.source


def test_goodput_never_exceeds_one_and_grows_with_size_on_hopper(catalog):
    fitted = whole_runs.calibrated_model(catalog).goodput
    assert all(fitted.goodput(g, n) <= 1.0 for g in ("ampere", "hopper", "tpu") for n in (1e9, 1e11, 1e12))
    assert fitted.goodput("hopper", 8e9) < fitted.goodput("hopper", 70e9)


# ---------------------------------------------------------------------------------------------- few runs


def test_blackwell_borrows_hopper_step_and_whole_run_figures(catalog):
    calibrated = calibration.calibrated_fit(catalog).accelerator_offsets
    assert generations.nearest_calibrated("b200", calibrated) == "h100-80gb"
    assert generations.nearest_calibrated("gb200", calibrated) == "h100-80gb"
    fitted = whole_runs.calibrated_model(catalog).goodput
    assert generations.generation("b200") == generations.generation("gb200") == "blackwell"
    assert "blackwell" not in fitted.offsets
    assert fitted.goodput("blackwell", 70e9) == fitted.goodput("hopper", 70e9)
    assert "nearest calibrated" in fitted.source("blackwell")


def test_a_tpu_without_step_rows_borrows_the_newest_calibrated_tpu_before_it():
    assert generations.nearest_calibrated("tpu-v6e", {"tpu-v4", "tpu-v5e", "tpu-v5p"}) == "tpu-v5p"
    assert generations.nearest_calibrated("tpu-v5p", {"tpu-v4", "tpu-v5e", "tpu-v6e"}) == "tpu-v5e"
    assert generations.nearest_calibrated("tpu-v4", {"tpu-v5p", "h100-80gb"}) is None   # none before it


def test_a_tpu_generation_added_after_trillium_borrows_trillium(catalog):
    """TPU7x (issue #29), now in the facts table: newer than v6e, no step row, so v6e's step MFU."""
    calibrated = calibration.calibrated_fit(catalog).accelerator_offsets
    assert "tpu7x" not in calibrated
    assert generations.nearest_calibrated("tpu7x", calibrated) == "tpu-v6e"
    assert generations.generation("tpu7x") == "tpu"


def test_tpus_take_the_pooled_whole_run_overhead(catalog):
    fitted = whole_runs.calibrated_model(catalog).goodput
    assert fitted.own_generation("tpu") is None and "pooled" in fitted.source("tpu")


# ---------------------------------------------------------------------------------------------- fp8


def test_fp8_speedup_is_the_geometric_mean_of_the_published_evidence(catalog):
    evidence = [e.speedup_vs_bf16 for e in whole_runs.whole_runs().fp8_evidence if e.speedup_vs_bf16]
    assert len(evidence) >= 3
    assert whole_runs.fp8_speedup() == pytest.approx(math.exp(sum(math.log(s) for s in evidence) / len(evidence)))
    assert catalog.defaults.training.fp8_speedup.value == pytest.approx(whole_runs.fp8_speedup(), abs=5e-4)


def test_the_derived_fp8_evidence_matches_the_step_rows_it_is_derived_from(catalog):
    runs = {r.id: r for r in calibration.published_runs().runs}
    h100 = catalog.accelerator("h100-80gb")
    fp8, bf16 = runs["mpt-3b-h100-fp8-8"], runs["mpt-3b-h100-64"]
    derived = fp8.mfu * h100.peak_fp8_tflops / (bf16.mfu * h100.peak_bf16_tflops)
    row = next(e for e in whole_runs.whole_runs().fp8_evidence if e.id == "llm-foundry-mpt3b-fp8")
    assert row.speedup_vs_bf16 == pytest.approx(derived, abs=5e-4)


def test_fp8_states_its_quality_trade_off(catalog):
    from accel.policies.estimator.estimate import assumption_list
    spec = workload({"parameters": "8B"}, precision="fp8")
    items = assumption_list(spec, resolve(spec, catalog.defaults), catalog, catalog.accelerator("h100-80gb"), "aws",
                            False, 64, 1, "test")
    fp8 = next(a for a in items if a.name == "fp8 speed vs bf16")
    assert fp8.value == pytest.approx(whole_runs.fp8_speedup(), abs=5e-4)
    assert "loss parity" in fp8.source and "divergence" in fp8.source


# ---------------------------------------------------------------------------------------------- the batch


def test_the_global_batch_says_what_binds_and_how_to_set_it(catalog):
    spec = workload({"parameters": "8B", "sequence_length": 8192}, tokens="15T")
    chips, why = batch_chip_limit(spec, resolve(spec, catalog.defaults), catalog.defaults)
    assert chips == 2_000_000 // 8192
    assert "2M tokens" in why and "GPT-3 paper" in why and "training.global_batch_tokens" in why
    assert f"up to {16_000_000 // 8192:,} chips" in why


def test_an_8b_model_on_15t_tokens_in_60_days_is_refused_for_its_batch_not_its_deadline(catalog):
    data = {"name": "w", "kind": "pretrain", "model": {"parameters": "8B", "sequence_length": 8192},
            "training": {"tokens": "15T"}, "constraints": {"deadline_days": 60, "accelerators": ["h100-80gb"]}}
    with pytest.raises(NoFeasibleOption) as refused:
        choose(workload_from_mapping(data, "w.yaml"), catalog)
    assert "the global batch stopped it growing, not the deadline" in str(refused.value)
    data["training"]["global_batch_tokens"] = "16M"
    chosen = choose(workload_from_mapping(data, "w.yaml"), catalog).chosen
    assert chosen.chips > 244 and chosen.hours <= 60 * 24


# ---------------------------------------------------------------------------------------------- the MoE example


def test_a_671b_total_37b_active_moe_plans_at_a_defensible_fleet(catalog):
    """DeepSeek-V3: 2.664M H800 GPU-hours of pretraining on 2,048 GPUs in under two months."""
    spec = load_workload(ROOT / "examples" / "deepseek-v3-moe.yaml")
    # Compared on H100, the published run's compute (H800: the H100 die with a narrower NVLink); with every
    # chip allowed the example now picks B200, whose chip-hours are not H800-hours.
    spec = spec.model_copy(update={"constraints": spec.constraints.model_copy(update={"accelerators": ["h100-80gb"]})})
    chosen = choose(spec, catalog).chosen
    chip_hours = chosen.chips * chosen.hours
    assert 1024 <= chosen.chips <= 8192
    assert 0.5 * 2.664e6 <= chip_hours <= 1.5 * 2.664e6


# ---------------------------------------------------------------------------------------------- how wrong it may be


def test_the_stated_spread_is_the_leave_one_out_residuals_deciles(catalog, loo):
    dense, mixture = loo
    model = whole_runs.calibrated_model(catalog)
    for spread, errors in ((model.dense_spread, dense), (model.moe_spread, mixture)):
        ratios = [1.0 / (1.0 + e.error) for e in errors]   # published / predicted hours
        deciles = statistics.quantiles(ratios, n=10, method="inclusive")
        assert spread.rows == len(errors)
        assert (spread.low, spread.high) == pytest.approx((deciles[0], deciles[-1]))
        assert spread.lowest[1] == pytest.approx(min(ratios)) and spread.highest[1] == pytest.approx(max(ratios))
        assert spread.low < 1.0 < spread.high
    # A mixture of experts' few rows are shown beside the dense ones.
    assert model.moe_spread.beside == model.dense_spread and "wider view" in model.moe_spread.text()


def test_choose_says_how_wrong_a_training_estimate_may_be_unless_the_workload_fixes_goodput(catalog):
    spec = workload({"parameters": "8B"}, tokens="200B")
    choice = choose(spec, catalog)
    line = next(r for r in choice.rationale if r.startswith("How wrong this may be: "))
    spread = whole_runs.calibrated_model(catalog).dense_spread
    assert f"{spread.low:.2f}x to {spread.high:.2f}x" in line and "leave-one-out" in line
    # Beside it, the range the blind runs showed, as time and cost.
    blind = whole_runs.calibrated_model(catalog).dense_blind
    hours, usd = choice.estimate.hours, choice.estimate.total_usd
    assert (f"runs outside the table, estimated blind, took {blind.low:.2f}x to {blind.high:.2f}x ({blind.rows} runs): "
            f"{duration(hours * blind.low)} to {duration(hours * blind.high)}, {money(usd * blind.low)} to "
            f"{money(usd * blind.high)}") in line
    listed = next(a for a in choice.estimate.assumptions if a.name == "whole-run spread")
    assert f"{blind.low:.2f}x to {blind.high:.2f}x on runs outside the table" in listed.value
    assert "blind_runs.yaml" in listed.source and "never fitted" in listed.source
    fixed = workload_from_mapping({"name": "w", "kind": "pretrain", "model": {"parameters": "8B"},
                                   "training": {"tokens": "200B", "framework": "pytorch"},
                                   "assumptions": {"goodput": 0.8}}, "w.yaml")
    choice = choose(fixed, catalog)
    assert not any(r.startswith("How wrong") or "estimated blind" in r for r in choice.rationale)
    assert not any(a.name == "whole-run spread" for a in choice.estimate.assumptions)


# ---------------------------------------------------------------------------------------------- the blind runs


@pytest.fixture(scope="module")
def blind():
    return whole_runs.blind_runs()


def test_blind_runs_are_whole_runs_of_the_tables_schema_in_neither_fit(blind):
    table = whole_runs.whole_runs()
    # First and second blind tests (2026-11-26): 11 dense + 4 MoE; third (2026-11-27): 12 dense + 1 MoE (GLaM on TPU v4).
    assert len(blind.dense) == 23 and len(blind.moe) == 5
    assert {r.accelerator for r in blind.moe} >= {"tpu-v4"}
    assert not {r.id for r in blind.dense + blind.moe} & {r.id for r in table.dense + table.moe}
    for row in blind.dense + blind.moe:
        assert row.kind == "whole_run" and row.url.startswith("https://") and len(row.quote) > 30
    bloomberg = next(r for r in blind.dense if r.id == "bloomberggpt")
    assert bloomberg.accelerator_hours == 512 * 53 * 24 and "CORRECTED" in (bloomberg.notes or "")


def test_a_blind_run_also_in_the_table_is_refused(blind):
    table = whole_runs.whole_runs()
    mixed = table.model_copy(update={"dense": table.dense + [blind.dense[0]]})
    with pytest.raises(ValueError, match=blind.dense[0].id):
        whole_runs.blind_runs(mixed)


def test_the_second_blind_set_holds_published_runs_in_neither_the_table_nor_the_first_set(blind):
    """blind_runs_2.yaml (2026-11-27, committed before it was scored): rows of the table's schema, each quoting its
    source, none of them seen before (in whole_runs.yaml or blind_runs.yaml)."""
    table = whole_runs.whole_runs()
    second = whole_runs.second_blind_runs()
    assert [r.id for r in second.dense] == ["pleias-3b-preview", "zamba-7b"] and second.moe == []
    ids = {r.id for r in second.dense + second.moe}
    assert not ids & {r.id for r in table.dense + table.moe}
    assert not ids & {r.id for r in blind.dense + blind.moe}
    for row in second.dense + second.moe:
        assert row.kind == "whole_run" and row.url.startswith("https://") and len(row.quote) > 30 and row.checked_here
        # chips x days rows: the hours are the product the row's `derived` shows.
        assert row.accelerator_hours == row.chips * row.days * 24


def test_a_second_blind_run_already_in_the_first_set_is_refused(blind, tmp_path, monkeypatch):
    import yaml
    seen = tmp_path / "blind_runs_2.yaml"
    seen.write_text(yaml.safe_dump({"as_of": "2026-11-27", "dense": [blind.dense[0].model_dump(mode="json")]}))
    monkeypatch.setattr(whole_runs, "BLIND_RUNS_2", seen)
    with pytest.raises(ValueError, match=f"{blind.dense[0].id} also in blind_runs.yaml"):
        whole_runs.second_blind_runs()


def test_no_blind_run_enters_any_fit(catalog, blind):
    """Emptying the blind file leaves every fitted figure as it was; only the blind ranges go."""
    full = whole_runs.fit_model(catalog, blind)
    empty = whole_runs.fit_model(catalog, whole_runs.BlindRunsTable(as_of=blind.as_of))
    assert full.goodput == empty.goodput and full.moe_factor == empty.moe_factor
    assert full.fp8_speedup == empty.fp8_speedup
    assert full.dense_spread == empty.dense_spread and full.moe_spread == empty.moe_spread
    assert empty.dense_blind is None and empty.moe_blind is None
    assert full.dense_blind is not None and full.moe_blind is not None


def test_the_second_blind_set_enters_no_fit_and_not_the_range_choose_states(catalog, blind):
    """blind_runs_2.yaml is scored, never fitted: handing its rows in beside the first set's moves no fitted figure,
    the range `choose` states is the first set's alone, and its rows are predicted with the fits on every table row."""
    second = whole_runs.second_blind_runs()
    full = whole_runs.fit_model(catalog, blind)
    both = whole_runs.fit_model(catalog, blind.model_copy(update={"dense": blind.dense + second.dense,
                                                                   "moe": blind.moe + second.moe}))
    assert both.goodput == full.goodput and both.moe_factor == full.moe_factor
    assert both.fp8_speedup == full.fp8_speedup
    assert both.dense_spread == full.dense_spread and both.moe_spread == full.moe_spread
    model = whole_runs.calibrated_model(catalog)
    assert model.dense_blind == full.dense_blind and model.moe_blind == full.moe_blind
    assert model.dense_blind.rows == len(blind.dense)
    dense, mixture = whole_runs.blind_test(catalog, second)
    assert [e.run.id for e in dense] == [r.id for r in second.dense] and mixture == []
    for e in dense:
        assert e.goodput == model.goodput.goodput(whole_runs.generation_of(e.run), e.run.active)


def test_a_mutated_blind_row_moves_the_blind_range(catalog, blind):
    """Doubling the published hours of the run at the bottom of the dense range moves the range's low end."""
    full = whole_runs.fit_model(catalog, blind)
    lowest = full.dense_blind.lowest[0]
    doubled = [r.model_copy(update={"accelerator_hours": 2 * r.accelerator_hours}) if r.id == lowest else r
               for r in blind.dense]
    mutated = whole_runs.fit_model(catalog, blind.model_copy(update={"dense": doubled}))
    assert mutated.dense_blind.low != pytest.approx(full.dense_blind.low)
    assert mutated.goodput == full.goodput and mutated.dense_spread == full.dense_spread


def test_the_blind_spread_is_the_blind_runs_deciles_by_the_fits_on_every_table_row(catalog, blind):
    model = whole_runs.calibrated_model(catalog)
    table = whole_runs.whole_runs()
    dense, mixture = whole_runs.blind_errors(catalog, blind, calibration.calibrated_fit(catalog), model.goodput,
                                             model.moe_factor, whole_runs.chips_rule(table.dense + table.moe))
    for spread, errors in ((model.dense_blind, dense), (model.moe_blind, mixture)):
        ratios = [1.0 / (1.0 + e.error) for e in errors]
        deciles = statistics.quantiles(ratios, n=10, method="inclusive")
        assert spread.rows == len(errors)
        assert (spread.low, spread.high) == pytest.approx((deciles[0], deciles[-1]))
    # A blind row is predicted with the goodput fitted on every table row, not one refitted with it.
    phi4 = next(e for e in dense if e.run.id == "phi4")
    assert phi4.goodput == model.goodput.goodput("hopper", 14e9)


def test_an_edit_of_the_blind_runs_refits_the_cached_whole_run_model(catalog, monkeypatch):
    """The blind file is one of the derived cache's inputs (keyed by content): an edit is a miss."""
    from accel.policies.estimator import whole_run_model
    seen = []
    monkeypatch.setattr(whole_run_model, "_MODELS", {})
    monkeypatch.setattr(whole_run_model, "cached", lambda kind, files, compute, **_: seen.append(list(files)) or 0)
    whole_run_model.calibrated_model(catalog)
    assert seen and whole_run_model.BLIND_RUNS in seen[0] and whole_run_model.WHOLE_RUNS in seen[0]
    # The second blind set is scored by the benchmark only: no input of the model `choose` reads.
    assert whole_runs.BLIND_RUNS_2 not in seen[0]


def test_a_mixture_of_experts_is_told_the_blind_moe_runs_range(catalog):
    choice = choose(workload(MOE, tokens="14.8T"), catalog)
    line = next(r for r in choice.rationale if r.startswith("How wrong this may be: "))
    model = whole_runs.calibrated_model(catalog)
    blind = model.moe_blind
    assert f"estimated blind, took {blind.low:.2f}x to {blind.high:.2f}x ({blind.rows} runs)" in line
    assert blind.rows == 5 and model.dense_blind.rows == 23


def test_another_hardware_tables_fabrics_are_another_whole_run_fit(catalog, tmp_path):
    """The MoE rows' all-to-all reads [collective_fabrics]: under a table with another H800 NVLink bandwidth the
    cached model is not the bundled table's (its MoE factor and blind MoE range were reused before)."""
    from accel.policies import hardware
    from accel.policies.estimator import whole_run_model
    bundled = whole_run_model.calibrated_model(catalog)
    slower = hardware.BUNDLED_FACTS.read_text().replace(
        "[collective_fabrics.h800]\ndomain_chips = 8\nscale_up_gbytes_per_s = 160",
        "[collective_fabrics.h800]\ndomain_chips = 8\nscale_up_gbytes_per_s = 16")
    assert slower != hardware.BUNDLED_FACTS.read_text()
    path = tmp_path / "facts.toml"
    path.write_text(slower)
    with hardware.using(hardware.load_facts(path)):
        other = whole_run_model.calibrated_model(catalog)
        assert other.moe_factor == whole_runs.fit_model(catalog).moe_factor != bundled.moe_factor
    assert whole_run_model.calibrated_model(catalog) is bundled
