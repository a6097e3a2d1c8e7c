"""The workload spec: human numbers, sections per kind, pins, and errors that name field, value and what is allowed."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from accel.errors import UsageError
from policies.workload import (
    ACCELERATOR_IDS,
    HardwarePin,
    WorkloadSpec,
    load_workload,
    parse_quantity,
    workload_from_mapping,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def pretrain(**overrides):
    data = {"name": "w", "kind": "pretrain", "model": {"parameters": "70B"},
            "training": {"tokens": "2T", "framework": "jax"}}
    data.update(overrides)
    return data


@pytest.mark.parametrize("text, value", [
    ("70B", 70e9), ("2T", 2e12), ("1.5e12", 1.5e12), ("7M", 7e6), ("1.5T", 1.5e12),
    ("2_000", 2000.0), ("20k", 20e3), (70e9, 70e9), (8, 8.0),
])
def test_human_numbers_are_read(text, value):
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("junk", ["seventy", "70X", "", "1e400", True, None, [70]])
def test_non_numbers_are_rejected_with_the_accepted_forms(junk):
    with pytest.raises(ValueError):
        parse_quantity(junk)


def test_a_pretrain_spec_normalizes_its_numbers():
    spec = workload_from_mapping(pretrain(constraints={"budget_usd": "2.5M"}), "w.yaml")
    assert spec.model.parameters == 70e9
    assert spec.training.tokens == 2e12
    assert spec.constraints.budget_usd == 2.5e6
    assert spec.framework == "jax" and spec.runs_on_xla


def test_an_unknown_key_suggests_the_nearest_valid_one():
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(constraints={"deadlin_days": 3}), "w.yaml")
    assert "w.yaml: constraints.deadlin_days: unknown key 'deadlin_days'; did you mean 'deadline_days'?" in str(error.value)


def test_an_unknown_accelerator_lists_the_known_ones():
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(hardware={"accelerator": "h100", "chips": 8}), "w.yaml")
    message = str(error.value)
    assert "hardware.accelerator" in message and "'h100'" in message
    assert all(accelerator in message for accelerator in ACCELERATOR_IDS)
    assert "did you mean 'h100-80gb'" in message


def test_negative_tokens_name_the_field_and_the_value():
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(training={"tokens": "-2T"}), "w.yaml")
    assert "training.tokens" in str(error.value) and "greater than 0" in str(error.value)
    assert "-2T" in str(error.value)


def test_an_inference_workload_needs_a_throughput_target():
    with pytest.raises(UsageError) as error:
        workload_from_mapping({"name": "s", "kind": "inference", "model": {"parameters": "8B"},
                               "inference": {"p99_latency_ms": 50}}, "s.yaml")
    assert "inference.tokens_per_second: Field required" in str(error.value)


def test_an_inference_workload_without_its_section_says_what_is_missing():
    with pytest.raises(UsageError, match="needs an 'inference' section with tokens_per_second"):
        workload_from_mapping({"name": "s", "kind": "inference", "model": {"parameters": "8B"}}, "s.yaml")


def test_a_training_workload_without_tokens_says_what_is_missing():
    with pytest.raises(UsageError, match="needs a 'training' section with tokens"):
        workload_from_mapping({"name": "t", "kind": "finetune", "model": {"parameters": "8B"}}, "t.yaml")


def test_a_v5p_type_pin_counts_tensorcores():
    pin = HardwarePin.model_validate({"accelerator": "v5p-128"})
    assert (pin.accelerator, pin.chips, pin.tpu_type) == ("tpu-v5p", 64, "v5p-128")


def test_a_v6e_type_pin_counts_chips():
    pin = HardwarePin.model_validate({"tpu_type": "v6e-64"})
    assert (pin.accelerator, pin.chips) == ("tpu-v6e", 64)


def test_a_pin_whose_chips_contradict_its_tpu_type_is_explained():
    with pytest.raises(UsageError, match="counts TensorCores: it is 64 chips, not 128"):
        workload_from_mapping(pretrain(hardware={"tpu_type": "v5p-128", "chips": 128}), "w.yaml")


def test_the_clouds_list_only_accepts_known_clouds():
    with pytest.raises(UsageError, match="constraints.clouds.0"):
        workload_from_mapping(pretrain(constraints={"clouds": ["azure"]}), "w.yaml")


def test_load_workload_reads_every_bundled_example():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        assert isinstance(load_workload(path), WorkloadSpec), path


def test_a_missing_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no such workload file"):
        load_workload(tmp_path / "nope.yaml")


def test_broken_yaml_names_the_line(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("name: x\nkind: [pretrain\n")
    with pytest.raises(UsageError, match=r"not valid YAML at line \d+"):
        load_workload(path)


def test_a_yaml_list_is_not_a_workload(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(UsageError, match="must be a mapping"):
        load_workload(path)


def test_every_default_can_be_overridden_in_the_spec():
    spec = workload_from_mapping(pretrain(assumptions={"mfu": 0.35, "goodput": 0.8, "preemptions_per_day": 0.5}),
                                 "w.yaml")
    assert (spec.assumptions.mfu, spec.assumptions.goodput, spec.assumptions.preemptions_per_day) == (0.35, 0.8, 0.5)


junk_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(junk=junk_values)
def test_random_junk_is_a_usage_error_never_a_crash(junk):
    with pytest.raises(UsageError):
        workload_from_mapping(junk, "junk.yaml")


@settings(max_examples=100)
@given(key=st.sampled_from(["model", "training", "constraints"]),
       bad=st.one_of(st.text(max_size=8), st.integers(), st.lists(st.integers(), max_size=2)))
def test_a_section_of_the_wrong_type_is_a_usage_error(key, bad):
    data = pretrain()
    data[key] = bad
    with pytest.raises(UsageError) as error:
        workload_from_mapping(data, "w.yaml")
    assert f"w.yaml: {key}" in str(error.value)
