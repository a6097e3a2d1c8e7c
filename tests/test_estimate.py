"""The estimator: FLOPs, memory fit, MFU with scale, goodput, spot losses, serving, storage."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from accel.policies.estimator import whole_runs
from accel.policies.estimator.calibration import calibrated_fit
from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import (
    OVERRIDE,
    InferenceModel,
    TrainingModel,
    assumption_list,
    batch_chip_limit,
    global_batch,
    filesystem_plan,
    min_chips_for_memory,
    resolve,
    training_flops,
    training_memory_bytes,
)
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def training(parameters="70B", tokens="2T", **extra):
    data = {"name": "t", "kind": "pretrain", "model": {"parameters": parameters},
            "training": {"tokens": tokens, "framework": "jax"}}
    data.update(extra)
    return workload_from_mapping(data, "t.yaml")


def serving(parameters="70B", tps=20000, p99=50, **extra):
    data = {"name": "s", "kind": "inference", "model": {"parameters": parameters, "sequence_length": 4096},
            "inference": {"tokens_per_second": tps, "p99_latency_ms": p99}}
    data.update(extra)
    return workload_from_mapping(data, "s.yaml")


def model(catalog, spec, accelerator="h100-80gb", cloud="aws", spot=False):
    return TrainingModel(spec, resolve(spec, catalog.defaults), catalog,
                         catalog.accelerator(accelerator), cloud, spot)


def test_training_compute_is_six_n_d_plus_attention():
    spec = training("70B", "2T", model={"parameters": "70B", "layers": 80, "hidden": 8192, "sequence_length": 4096})
    assert training_flops(spec) == pytest.approx((6 * 70e9 + 12 * 80 * 8192 * 4096) * 2e12)


def test_training_compute_estimates_the_architecture_when_not_given(catalog):
    """Without model.layers / model.hidden the attention term uses the size rules of assumptions.yaml."""
    rules = catalog.defaults.inference
    layers = round(rules.kv_cache_layers_per_cube_root.value * 70e9 ** (1 / 3))
    hidden = math.sqrt(70e9 / (rules.hidden_width_rule.value * layers))
    assert training_flops(training("70B", "2T")) == pytest.approx((6 * 70e9 + 12 * layers * hidden * 4096) * 2e12)


def test_memory_fit_uses_sixteen_bytes_per_parameter_and_activation_headroom(catalog):
    spec = training("70B")
    h100 = catalog.accelerator("h100-80gb")
    needed = 70e9 * 16 * 1.25
    assert min_chips_for_memory(spec, resolve(spec, catalog.defaults), h100) == math.ceil(needed / (h100.hbm_bytes * 0.9))


def test_serving_memory_is_one_copy_of_the_weights(catalog):
    spec = serving("70B")
    h100 = catalog.accelerator("h100-80gb")
    assert min_chips_for_memory(spec, resolve(spec, catalog.defaults), h100) == math.ceil(140e9 / (h100.hbm_bytes * 0.9))


def test_mfu_falls_as_the_fleet_grows(catalog):
    m = model(catalog, training())
    values = [m.mfu(chips) for chips in (8, 64, 512, 4096, 16384)]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]


def test_a_multislice_pays_the_fitted_cost_and_its_dcn_all_reduce(catalog):
    from accel.policies.estimator.calibration import dcn_breakdown

    m = model(catalog, training(), "tpu-v6e", "gcp")
    across = math.exp(calibrated_fit(catalog).multislice)
    assert across < 1
    step = dcn_breakdown(catalog, catalog.accelerator("tpu-v6e"), m.parameters, 512, 2, m.mfu(512) * across,
                         m.batch_tokens)
    assert step is not None and step.efficiency < 1
    assert m.mfu(512, slices=2) == pytest.approx(m.mfu(512) * across * step.efficiency)


def test_a_workload_multislice_efficiency_replaces_the_fitted_one(catalog):
    m = model(catalog, training(assumptions={"multislice_efficiency": 0.5}), "tpu-v6e", "gcp")
    assert m.mfu(512, slices=2) == pytest.approx(m.mfu(512) * 0.5)


def test_training_steps_take_flops_over_effective_throughput(catalog):
    spec = training()
    m = model(catalog, spec)
    # Goodput: the whole-run model fitted on published whole runs, for a 70B model on a Hopper GPU.
    assert m.goodput == whole_runs.calibrated_model(catalog).goodput.goodput("hopper", 70e9) < 1
    steps = training_flops(spec) / (1024 * 989e12 * m.mfu(1024) * m.goodput) / 3600
    checkpoint = 70e9 * 14 / (128 * 1e9 * 3600)       # 14 bytes/parameter written by 128 hosts at 1 GB/s each
    assert m.compute_hours(1024, 128) == pytest.approx(steps * (1 + 2 * checkpoint))   # every 30 minutes


def test_a_run_pays_provisioning_image_pull_compilation_and_restore_before_its_first_step(catalog):
    m = model(catalog, training())
    restore = 70e9 * 14 / (128 * 1e9 * 3600)
    assert m.startup_hours(128) == pytest.approx((10 + 5 + 5) / 60 + restore)
    assert m.hours(1024, 128) == pytest.approx(m.startup_hours(128) + m.compute_hours(1024, 128))


def test_start_up_puts_a_floor_under_run_time_however_many_chips(catalog):
    m = model(catalog, training("1B", "1B"))
    assert m.hours(4096, 512) > (10 + 5 + 5) / 60


@pytest.mark.parametrize("parameters, tokens", [("125M", 0.5e6), ("8B", 2e6), ("70B", 4e6), ("405B", 16e6)])
def test_the_default_global_batch_follows_published_practice_by_model_size(catalog, parameters, tokens):
    assert global_batch(training(parameters), catalog.defaults)[0] == tokens


def test_a_workload_global_batch_replaces_the_default(catalog):
    spec = training("8B", training={"tokens": "20B", "global_batch_tokens": "1M"})
    assert global_batch(spec, catalog.defaults) == (1e6, "training.global_batch_tokens")


def test_the_global_batch_bounds_the_chips_that_do_useful_work(catalog):
    small = training("8B", model={"parameters": "8B", "sequence_length": 8192})
    large = training("405B", model={"parameters": "405B", "sequence_length": 8192})
    resolved = resolve(small, catalog.defaults)
    assert batch_chip_limit(small, resolved, catalog.defaults)[0] == 2e6 // 8192          # one chip per sequence
    assert batch_chip_limit(large, resolve(large, catalog.defaults), catalog.defaults)[0] == 16e6 // 8192 * 8


def test_spot_loses_restart_plus_half_a_checkpoint_interval_per_preemption(catalog):
    m = model(catalog, training(), spot=True)
    per_host_day = 0.05   # aws default in assumptions.yaml
    loss_hours = (15 + 30 / 2) / 60
    assert m.productivity(100) == pytest.approx(1 - 100 * per_host_day / 24 * loss_hours)


def test_spot_losses_grow_with_hosts_until_the_run_never_ends(catalog):
    m = model(catalog, training(), "tpu-v5p", "gcp", spot=True)
    assert m.productivity(10) > m.productivity(100)
    assert math.isinf(m.hours(8192, 2048, 1))


def test_on_demand_has_no_preemption_loss(catalog):
    assert model(catalog, training()).productivity(10_000) == 1.0


def test_a_workload_override_replaces_the_default_and_is_reported(catalog):
    spec = training(assumptions={"mfu": 0.3, "goodput": 0.8, "bytes_per_parameter": 18})
    resolved = resolve(spec, catalog.defaults)
    m = model(catalog, spec)
    assert m.mfu(16384) == 0.3 and m.goodput == 0.8
    assert resolved["bytes_per_parameter"] == 18 and resolved.sources["bytes_per_parameter"] == OVERRIDE
    listed = assumption_list(spec, resolved, catalog, catalog.accelerator("h100-80gb"), "aws", False,
                             1024, 1, "test price")
    assert any(a.name == "mfu" and a.source == OVERRIDE for a in listed)


def test_every_listed_assumption_has_a_source(catalog):
    for spec in (training(), serving()):
        resolved = resolve(spec, catalog.defaults)
        for spot in (False, True):
            listed = assumption_list(spec, resolved, catalog, catalog.accelerator("tpu-v5p"), "gcp", spot,
                                     512, 2, "test price")
            assert listed and all(a.source for a in listed)


def test_fp8_runs_faster_only_where_there_are_fp8_tensor_cores(catalog):
    base = training()
    fp8 = training(training={"tokens": "2T", "framework": "jax", "precision": "fp8"})
    assert model(catalog, fp8).hours(64, 8) < model(catalog, base).hours(64, 8)
    assert model(catalog, fp8, "tpu-v5p", "gcp").hours(64, 16) == model(catalog, base, "tpu-v5p", "gcp").hours(64, 16)


def test_the_kv_cache_estimate_matches_llama_3_70b(catalog):
    resolved = resolve(serving("70B"), catalog.defaults)
    # Llama 3 70B: 80 layers, 8 KV heads x 128 dims, bf16: 2 * 80 * 1024 * 2 = 327,680 bytes per token.
    assert resolved["kv_cache_bytes_per_token"] == pytest.approx(327_680, rel=0.05)


def test_a_replica_meets_the_latency_bound(catalog):
    spec = serving("70B", p99=50)
    m = InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator("h100-80gb"))
    replica, _ = m.replica(8)
    assert replica is not None
    assert replica.step_seconds * 1.3 <= 0.050 + 1e-9
    assert replica.tokens_per_second == pytest.approx(replica.batch / replica.step_seconds)


def test_a_tighter_latency_bound_means_smaller_batches(catalog):
    loose = InferenceModel(serving(p99=200), resolve(serving(p99=200), catalog.defaults), catalog.accelerator("h100-80gb"))
    tight = InferenceModel(serving(p99=30), resolve(serving(p99=30), catalog.defaults), catalog.accelerator("h100-80gb"))
    assert tight.replica(8)[0].batch < loose.replica(8)[0].batch


def test_weights_that_do_not_fit_are_said_so(catalog):
    spec = serving("70B")
    m = InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator("l4"))
    replica, reason = m.replica(4)
    assert replica is None and reason == "weights do not fit"


def test_an_impossible_latency_bound_is_explained(catalog):
    spec = serving("70B", p99=5)
    m = InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator("l40s"))
    replica, reason = m.replica(8)
    assert replica is None and "decode step takes" in reason


@given(tps=st.floats(1, 1e6), p99=st.floats(1, 2000), chips=st.sampled_from([1, 2, 4, 8, 16, 64, 256]))
def test_any_served_replica_respects_memory_and_latency(tps, p99, chips):
    catalog = load_catalog()
    spec = serving("8B", tps=tps, p99=p99)
    m = InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator("tpu-v6e"))
    replica, _ = m.replica(chips)
    if replica is not None:
        assert replica.batch >= 1
        assert replica.step_seconds <= p99 / 1000 / 1.3 + 1e-12
        assert m.weight_bytes + replica.batch * m.kv_bytes_per_sequence <= chips * m.usable_hbm + 1


def test_large_multi_host_training_gets_a_parallel_filesystem(catalog):
    storage, reason = filesystem_plan(training(), "gcp", 256, 2765.0, catalog.defaults)
    assert storage.filesystem == "managed-lustre" and storage.filesystem_capacity_gib >= 18000
    assert storage.checkpoint_bucket and "managed-lustre" in reason


def test_small_training_keeps_to_buckets(catalog):
    storage, _ = filesystem_plan(training(), "aws", 2, 200.0, catalog.defaults)
    assert storage.filesystem == "none" and storage.dataset_bucket and storage.checkpoint_bucket


def test_a_filesystem_that_would_dominate_the_bill_is_not_added(catalog):
    storage, reason = filesystem_plan(training(), "gcp", 16, 20.0, catalog.defaults)
    assert storage.filesystem == "none" and "of the fleet's cost" in reason


def test_serving_has_no_checkpoint_storage(catalog):
    storage, _ = filesystem_plan(serving(), "gcp", 8, 100.0, catalog.defaults)
    assert storage.filesystem == "none" and not storage.checkpoint_bucket


# ----------------------------------------------------------------------------- filesystem sizes the components build

def _storage_for(catalog, cloud, parameters):
    """The filesystem a large multi-host run gets (a fleet dear enough that the filesystem is always added)."""
    storage, _ = filesystem_plan(training(parameters=parameters), cloud, 512, 1e7, catalog.defaults)
    assert storage.filesystem != "none"
    return storage


@given(parameters=st.floats(1e9, 5e12))
def test_the_planned_fsx_size_is_exactly_what_the_aws_component_builds(parameters):
    from accel.components.aws.storage import fsx_capacity_gib

    catalog = load_catalog()
    storage = _storage_for(catalog, "aws", parameters)
    capacity = storage.filesystem_capacity_gib
    assert fsx_capacity_gib(capacity) == capacity
    kept = catalog.defaults.storage.checkpoints_kept.value
    assert capacity >= parameters * catalog.defaults.storage.checkpoint_bytes_per_parameter.value * kept / 2**30


@settings(deadline=None)  # the first example loads the catalog: slow on a shared machine
@given(parameters=st.floats(1e9, 5e12))
def test_the_planned_managed_lustre_size_is_one_the_gcp_component_accepts(parameters):
    from accel.components.gcp.storage import TrainingStorageArgs, validate
    from accel.components.tags import ResourceTags

    storage = _storage_for(load_catalog(), "gcp", parameters)
    args = TrainingStorageArgs(project="acme", location="us-central1", zone="us-central1-a", network_name="net",
                               tags=ResourceTags(workload="w", stack="s"), storage=storage)
    validate("train", args)   # raises ComponentArgsError on a size Managed Lustre does not take at the built tier


def test_the_70b_fsx_plan_is_a_persistent_2_size_not_min_plus_steps(catalog):
    storage = _storage_for(catalog, "aws", 70e9)
    assert storage.filesystem_capacity_gib == 4800   # 2,738 GiB of checkpoints: 1200, 2400, then x2400


# ----------------------------------------------------------------------------- the filesystem's tier, the p99 wording

@pytest.mark.parametrize("cloud, tier_words", [("gcp", "1000 MB/s per TiB tier"),
                                               ("aws", "PERSISTENT_2 SSD 250 MB/s per TiB tier")])
def test_the_filesystem_is_priced_at_the_tier_that_is_built_and_the_reason_names_it(catalog, cloud, tier_words):
    offer = catalog.defaults.storage.filesystems[cloud]
    storage, reason = filesystem_plan(training(), cloud, 512, 1e7, catalog.defaults)
    hourly = storage.filesystem_capacity_gib * offer.prices_per_gib_month[offer.throughput_mbps_per_tib].usd / 730
    assert tier_words in reason
    assert f"${hourly:,.2f}/h" in reason


def test_the_built_tier_not_the_cheapest_sets_the_filesystem_cost(catalog):
    offer = catalog.defaults.storage.filesystems["gcp"]
    _, reason = filesystem_plan(training(), "gcp", 512, 1e7, catalog.defaults)
    cheapest = min(p.usd for p in offer.prices_per_gib_month.values())
    capacity = offer.capacity_gib(70e9 * catalog.defaults.storage.checkpoint_bytes_per_parameter.value * 3 / 2**30)
    assert f"${capacity * cheapest / 730:,.2f}/h" not in reason


def test_a_replica_too_slow_at_batch_one_states_the_p99_it_compares_with_the_bound(catalog):
    import re

    spec = serving(parameters="8B", tps=4000, p99=80)
    replica, reason = InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator("l4")).replica(1)
    assert replica is None
    step, factor, p99 = re.fullmatch(r"one decode step takes (\d+) ms even at batch 1; x([\d.]+) latency_p99_factor "
                                     r"makes it (\d+) ms per token at p99, over the 80 ms bound", reason).groups()
    assert float(factor) == 1.3 and int(p99) > 80 and abs(int(p99) - int(step) * 1.3) <= 1


def test_a_lora_fine_tune_holds_frozen_weights_without_optimizer_state(catalog):
    full = training("70B", training={"tokens": "1B", "framework": "jax"}, kind="finetune")
    lora = training("70B", training={"tokens": "1B", "framework": "jax", "trainable_fraction": 0.01},
                    kind="finetune")
    resolved = resolve(lora, catalog.defaults)
    assert training_memory_bytes(lora, resolved) == pytest.approx(
        (0.7e9 * 16 + 69.3e9 * 2) * 1.25)
    assert training_memory_bytes(lora, resolved) < training_memory_bytes(full, resolve(full, catalog.defaults)) / 5


def test_a_lora_fine_tune_skips_the_frozen_weights_gradients(catalog):
    lora = training("8B", training={"tokens": "1B", "framework": "jax", "trainable_fraction": 0.01},
                    kind="finetune")
    attention = training_flops(lora) - (4 + 2 * 0.01) * 8e9 * 1e9   # no weights: the same for every fraction
    full = training("8B", training={"tokens": "1B", "framework": "jax"}, kind="finetune")
    assert training_flops(full) - 6 * 8e9 * 1e9 == pytest.approx(attention)


def test_fp8_serving_halves_the_weight_bytes_only_on_chips_with_fp8_tensor_cores(catalog):
    fp8 = serving("70B", inference={"tokens_per_second": 1000, "precision": "fp8"})
    bf16 = serving("70B")
    h100, v5e = catalog.accelerator("h100-80gb"), catalog.accelerator("tpu-v5e")
    assert InferenceModel(fp8, resolve(fp8, catalog.defaults), h100).weight_bytes == pytest.approx(70e9)
    assert InferenceModel(fp8, resolve(fp8, catalog.defaults), v5e).weight_bytes == pytest.approx(
        InferenceModel(bf16, resolve(bf16, catalog.defaults), v5e).weight_bytes)


def test_the_precision_a_replica_is_sized_at_is_the_one_its_plan_states(catalog):
    """One decision (estimate.served_precision, by the catalog's needs_fp8) sizes the replica and is the plan's
    'serving precision' assumption, which the job serves. The mutation: a catalog saying fp8 needs no fp8 tensor cores
    (weight-only fp8, as vLLM runs on Ampere): on an A100 the replica holds 1-byte weights and the plan says fp8."""
    from accel.policies.estimator.estimate import assumption_list
    from accel.policies.plan import SERVED_PRECISION

    fp8 = serving("70B", inference={"tokens_per_second": 1000, "precision": "fp8"})
    a100 = catalog.accelerator("a100-80gb")
    inference = catalog.defaults.inference
    weight_only = inference.precisions["fp8"].model_copy(update={"needs_fp8": False})
    defaults = catalog.defaults.model_copy(update={"inference": inference.model_copy(
        update={"precisions": {**inference.precisions, "fp8": weight_only}})})
    for table, sized, bytes_per_weight in ((catalog.defaults, "bf16", 2), (defaults, "fp8", 1)):
        resolved = resolve(fp8, table)
        model = InferenceModel(fp8, resolved, a100)
        stated = next(a.value for a in assumption_list(fp8, resolved, catalog.model_copy(update={"defaults": table}),
                                                        a100, "gcp", False, 8, 1, "") if a.name == SERVED_PRECISION)
        assert (stated, model.weight_bytes) == (sized, pytest.approx(70e9 * bytes_per_weight))
        assert model.compute == pytest.approx(a100.peak_bf16_tflops * 1e12 * resolved["inference_compute_efficiency"])


def test_decode_is_memory_bound_and_prefill_heavy_traffic_is_compute_bound(catalog):
    chat = serving("8B", inference={"tokens_per_second": 1000, "prompt_tokens": 128, "output_tokens": 2048})
    summarise = serving("8B", inference={"tokens_per_second": 1000, "prompt_tokens": 8192, "output_tokens": 64})
    h100 = catalog.accelerator("h100-80gb")
    assert InferenceModel(chat, resolve(chat, catalog.defaults), h100).step_seconds(1, 8)[1] == "memory-bandwidth"
    assert InferenceModel(summarise, resolve(summarise, catalog.defaults), h100).step_seconds(1, 64)[1] == \
        "prefill compute"


def test_a_mixture_of_experts_at_fp8_on_tpu_is_sized_at_the_bf16_its_engine_holds(catalog):
    """vLLM TPU quantizes no bf16 checkpoint's routed experts to fp8 as it loads (inference.precisions fp8
    experts_need_checkpoint_on: [tpu]): on TPU7x, which has fp8, a mixture of experts from bf16 weights is sized and
    stated at bf16, as a chip without fp8 tensor cores is; from a checkpoint already in fp8, on a GPU, or a dense
    model, fp8 (sweep6 nt09: the estimate sized fp8 and the job refused)."""
    from accel.policies.plan import SERVED_PRECISION

    def sized(model: dict, accelerator: str) -> tuple[str, float, str]:
        spec = workload_from_mapping({"name": "s", "kind": "inference", "model": model, "inference": {
            "tokens_per_second": 1000, "precision": "fp8"}}, "s.yaml")
        chip, resolved = catalog.accelerator(accelerator), resolve(spec, catalog.defaults)
        stated = next(a for a in assumption_list(spec, resolved, catalog, chip, "gcp", False, 4, 1, "")
                      if a.name == SERVED_PRECISION)
        bytes_per_weight = InferenceModel(spec, resolved, chip).weight_bytes / spec.model.parameters
        return stated.value, bytes_per_weight, stated.source

    precision, per_weight, why = sized({"architecture": "qwen3-30b-a3b"}, "tpu7x")
    assert (precision, per_weight) == ("bf16", pytest.approx(2.0))
    assert "routed experts" in why and "FP8OnelineMoEMethod is not supported" in why
    assert sized({"architecture": "qwen3-30b-a3b", "checkpoint": "Qwen/Qwen3-30B-A3B-FP8"}, "tpu7x")[:2] == \
        ("fp8", pytest.approx(1.0))
    assert sized({"architecture": "qwen3-30b-a3b"}, "h100-80gb")[:2] == ("fp8", pytest.approx(1.0))
    assert sized({"architecture": "llama3.1-70b"}, "tpu7x")[:2] == ("fp8", pytest.approx(1.0))
    assert "no fp8 tensor cores" in sized({"architecture": "qwen3-30b-a3b"}, "tpu-v6e")[2]
