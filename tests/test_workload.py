"""The workload spec: human numbers, sections per kind, pins, and errors that name field, value and what is allowed."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from accel.base.errors import UsageError
from accel.policies.workload import (
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


# ----------------------------------------------------------------------------- pins are exact or rejected

def pin_error(**hardware) -> str:
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(hardware=hardware), "w.yaml")
    return str(error.value)


def test_chips_that_contradict_topology_times_slices_name_hardware_chips():
    message = pin_error(accelerator="tpu-v5p", chips=12288, topology="16x16x24", slices=1)
    assert message.startswith("w.yaml: hardware.chips: 12288 chips contradict topology 16x16x24 x 1 slice = 6144")
    assert "set slices: 2" in message


def test_chips_that_are_no_whole_number_of_the_pinned_topology_are_rejected():
    message = pin_error(accelerator="tpu-v5p", chips=64, topology="4x4x8")
    assert message.startswith("w.yaml: hardware.chips: 64 chips are not a whole number of 4x4x8 slices (128 chips")


def test_a_tpu_type_that_is_no_slice_names_the_nearest_valid_types():
    message = pin_error(tpu_type="v5p-100")
    assert message.startswith("w.yaml: hardware.tpu_type: v5p-100 would be 50 chips")
    assert "nearest: v5p-64 (32 chips) or v5p-128 (64 chips)" in message and "(got 'v5p-100')" in message


def test_a_topology_the_generation_lacks_names_hardware_topology_and_the_allowed_shapes():
    message = pin_error(accelerator="tpu-v5p", chips=27, topology="3x3x3")
    assert message.startswith("w.yaml: hardware.topology: TPU v5p has no topology '3x3x3'; allowed: 2x2x1")


@pytest.mark.parametrize("hardware, field", [
    ({"accelerator": "h100-80gb", "chips": 64, "topology": "4x4x4"}, "hardware.topology"),
    ({"accelerator": "h100-80gb", "chips": 64, "slices": 2}, "hardware.slices"),
])
def test_a_gpu_pin_takes_no_topology_or_slices(hardware, field):
    message = pin_error(**hardware)
    assert message.startswith(f"w.yaml: {field}: only TPU pins") and "h100-80gb is a GPU" in message


def test_slices_that_do_not_split_the_chips_into_valid_slices_are_rejected():
    message = pin_error(accelerator="tpu-v6e", chips=96, slices=2)
    assert message.startswith("w.yaml: hardware.slices: 96 chips in 2 slices is 48 chips per slice, which is no "
                              "TPU v6e")
    assert "v6e-32 (32 chips) or v6e-64 (64 chips)" in message


def test_a_topology_alone_fixes_the_chips():
    spec = workload_from_mapping(pretrain(hardware={"accelerator": "tpu-v5e", "topology": "4x4"}), "w.yaml")
    assert spec.hardware.chips == 16
    spec = workload_from_mapping(pretrain(hardware={"accelerator": "tpu-v5e", "topology": "4x4", "slices": 2}),
                                 "w.yaml")
    assert spec.hardware.chips == 32


def test_a_tpu_type_names_one_slice_of_a_multislice():
    pin = HardwarePin.model_validate({"tpu_type": "v5p-128", "slices": 2})
    assert (pin.accelerator, pin.chips, pin.slices) == ("tpu-v5p", 128, 2)


def test_a_pin_without_chips_or_a_tpu_layout_says_what_to_give():
    message = pin_error(accelerator="h100-80gb")
    assert message.startswith("w.yaml: hardware.chips: Field required: give chips")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_tpu_pin_is_accepted_exactly_when_chips_equal_topology_times_slices(data):
    from accel.policies.hardware import shapes

    accelerator = data.draw(st.sampled_from(["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"]))
    generation = shapes.GENERATION_BY_ACCELERATOR[accelerator]
    topology = data.draw(st.sampled_from(shapes.valid_topologies(generation.name)))
    slices = data.draw(st.integers(1, 4))
    chips = data.draw(st.integers(1, 40000))
    hardware = {"accelerator": accelerator, "chips": chips, "topology": topology, "slices": slices}
    if chips == shapes.topology_chips(topology) * slices:
        assert workload_from_mapping(pretrain(hardware=hardware), "w.yaml").hardware.chips == chips
    else:
        with pytest.raises(UsageError, match=r"^w\.yaml: hardware\.chips: "):
            workload_from_mapping(pretrain(hardware=hardware), "w.yaml")


# ----------------------------------------------------------------------------- contradictions

def test_a_training_workload_with_an_inference_section_is_rejected():
    with pytest.raises(UsageError, match=r"w\.yaml: inference: kind 'pretrain' reads only the 'training' section"):
        workload_from_mapping(pretrain(inference={"tokens_per_second": 1000}), "w.yaml")


def test_a_serving_workload_with_a_training_section_is_rejected():
    data = {"name": "s", "kind": "inference", "model": {"parameters": "8B"},
            "inference": {"tokens_per_second": 1000}, "training": {"tokens": "1T"}}
    with pytest.raises(UsageError, match=r"s\.yaml: training: kind 'inference' reads only the 'inference' section"):
        workload_from_mapping(data, "s.yaml")


@pytest.mark.parametrize("policy, pinned", [("required", False), ("never", True)])
def test_a_pin_whose_spot_contradicts_constraints_spot_is_rejected(policy, pinned):
    data = pretrain(constraints={"spot": policy}, hardware={"accelerator": "h100-80gb", "chips": 8, "spot": pinned})
    with pytest.raises(UsageError) as error:
        workload_from_mapping(data, "w.yaml")
    assert str(error.value).startswith(
        f"w.yaml: hardware.spot: {str(pinned).lower()} contradicts constraints.spot: {policy}")


# ----------------------------------------------------------------------------- names and defaults

def test_a_bad_name_says_what_a_name_may_be_not_the_regex():
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(name="W_bad"), "w.yaml")
    message = str(error.value)
    assert "lowercase letters, digits and dashes, at most 40 characters, starting and ending with a letter or digit" \
        in message and "pattern" not in message and "'W_bad'" in message


@pytest.mark.parametrize("name, valid", [("a", True), ("a" * 40, True), ("a" * 41, False), ("-a", False),
                                         ("a-", False), ("llama-70b", True), ("Llama", False)])
def test_workload_names_are_short_lowercase_labels(name, valid):
    if valid:
        assert workload_from_mapping(pretrain(name=name), "w.yaml").name == name
    else:
        with pytest.raises(UsageError, match="w.yaml: name: "):
            workload_from_mapping(pretrain(name=name), "w.yaml")


def test_a_framework_left_out_is_known_to_be_the_default():
    from accel.policies.workload import framework_label

    serving = workload_from_mapping({"name": "s", "kind": "inference", "model": {"parameters": "8B"},
                                     "inference": {"tokens_per_second": 1000}}, "s.yaml")
    assert serving.framework == "pytorch" and serving.framework_defaulted
    assert framework_label(serving) == ("framework pytorch (default framework for inference; "
                                        "set inference.framework to change it)")
    training = workload_from_mapping(pretrain(training={"tokens": "1T"}), "w.yaml")
    assert training.framework == "jax" and training.framework_defaulted


def test_a_framework_that_was_written_is_not_called_a_default():
    from accel.policies.workload import framework_label

    spec = workload_from_mapping(pretrain(training={"tokens": "1T", "framework": "jax"}), "w.yaml")
    assert not spec.framework_defaulted and framework_label(spec) == "framework jax"


pin_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 20000), st.floats(allow_nan=True),
                       st.sampled_from(["tpu-v5p", "tpu-v6e", "h100-80gb", "v5p-128", "v6e-7", "v4-3", "4x4",
                                        "4x4x8", "3x3x3", "axb", ""]),
                       st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(pin=st.dictionaries(st.sampled_from(["accelerator", "chips", "tpu_type", "topology", "slices", "spot"]),
                           pin_values, max_size=6))
def test_any_pin_is_valid_or_a_usage_error_naming_a_hardware_field(pin):
    try:
        spec = workload_from_mapping(pretrain(hardware=pin), "w.yaml")
    except UsageError as error:
        assert str(error).startswith("w.yaml: hardware")
        return
    from accel.policies.hardware import shapes

    pinned = spec.hardware
    assert pinned.chips > 0
    if pinned.topology is not None:
        per_slice = shapes.topology_chips(pinned.topology)
        assert pinned.chips == per_slice * (pinned.slices or pinned.chips // per_slice)


# ----------------------------------------------------------------------------- issue 15: serving, LoRA, finite numbers

def _serving(**inference):
    return {"name": "s", "kind": "inference", "model": {"parameters": "8B"},
            "inference": {"tokens_per_second": 1000, **inference}}


def test_an_inference_workload_naming_its_framework_in_a_training_section_without_tokens_is_accepted():
    data = _serving()
    data["training"] = {"framework": "jax", "precision": "bf16"}
    spec = workload_from_mapping(data, "w.yaml")
    assert spec.training is None and spec.framework == "jax" and spec.inference.precision == "bf16"


def test_an_inference_workload_has_a_serving_precision_of_its_own():
    assert workload_from_mapping(_serving(precision="fp8"), "w.yaml").inference.precision == "fp8"
    assert workload_from_mapping(_serving(precision="int8"), "w.yaml").inference.precision == "int8"


def test_a_training_workload_still_needs_tokens():
    data = {"name": "t", "kind": "pretrain", "model": {"parameters": "8B"}, "training": {"framework": "jax"}}
    with pytest.raises(UsageError, match=r"training\.tokens: Field required"):
        workload_from_mapping(data, "w.yaml")


def test_a_lora_fine_tune_trains_a_fraction_of_the_weights():
    data = {"name": "t", "kind": "finetune", "model": {"parameters": "70B"},
            "training": {"tokens": "1B", "trainable_fraction": 0.01}}
    assert workload_from_mapping(data, "w.yaml").training.trainable_fraction == 0.01


@pytest.mark.parametrize("field, value", [("deadline_days", ".inf"), ("deadline_days", ".nan"),
                                          ("deadline_days", "-1"), ("budget_usd", "-5")])
def test_bad_numbers_exit_2_naming_the_field(field, value):
    import yaml

    data = {"name": "t", "kind": "pretrain", "model": {"parameters": "8B"}, "training": {"tokens": "1B"},
            "constraints": {field: yaml.safe_load(value)}}
    with pytest.raises(UsageError, match=rf"constraints\.{field}"):
        workload_from_mapping(data, "w.yaml")


def test_an_unknown_key_named_like_a_validator_tag_is_reported_by_its_name():
    with pytest.raises(UsageError) as error:
        workload_from_mapping({"function-": None}, "junk.yaml")
    assert "unknown key 'function-'" in str(error.value)


@pytest.mark.parametrize("key, typo", [("name", "nmae"), ("model", "modle"), ("training", "trainig")])
def test_a_misspelt_required_key_is_reported_once_as_the_unknown_key_with_its_hint(key, typo):
    data = pretrain()
    data[typo] = data.pop(key)
    with pytest.raises(UsageError) as error:
        workload_from_mapping(data, "w.yaml")
    assert str(error.value).splitlines() == [f"w.yaml: {typo}: unknown key {typo!r}; did you mean {key!r}?"]


def test_a_required_key_that_is_simply_absent_is_still_reported_missing():
    data = pretrain(modelz={"parameters": "70B"})  # 'modelz' is close to 'model', but 'model' is still given
    data.pop("name")
    with pytest.raises(UsageError) as error:
        workload_from_mapping(data, "w.yaml")
    lines = str(error.value).splitlines()
    assert "w.yaml: name: Field required" in lines
    assert "w.yaml: modelz: unknown key 'modelz'; did you mean 'model'?" in lines


def test_a_pin_without_chips_reports_its_unknown_accelerator_too():
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(hardware={"accelerator": "h100"}), "w.yaml")
    lines = str(error.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("w.yaml: hardware.accelerator: ") and "did you mean 'h100-80gb'?" in lines[0]
    assert lines[1].startswith("w.yaml: hardware.chips: Field required")


def test_a_pin_without_chips_or_accelerator_reports_both_missing():
    with pytest.raises(UsageError) as error:
        workload_from_mapping(pretrain(hardware={"cloud": "gcp"}), "w.yaml")
    lines = str(error.value).splitlines()
    assert lines[0] == "w.yaml: hardware.accelerator: Field required"
    assert lines[1].startswith("w.yaml: hardware.chips: Field required")
