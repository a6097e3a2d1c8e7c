"""The rationale names how each option's capacity is obtained, the way the options table does."""
from pathlib import Path

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose
from accel.policies.workload import load_workload

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_the_best_option_of_the_other_family_is_named_with_its_capacity_mode():
    # The 70B serving example's best GPU option was an H200 pool on flex-start (A3 Ultra is not sold plain
    # on demand); the comparison line called it "H200 on-demand". Since a TPU serving replica stays on one host
    # (tests/test_tpu_serving_choose.py) that pool is the chosen option and the best TPU option, on demand, the rival:
    # each side is named with its own capacity mode. A month-long service is no longer served on flex-start
    # (tests/test_flex_start_serving.py), so the example is run as a service within flex-start's 168 h.
    example = load_workload(EXAMPLES / "llama-70b-inference.yaml")
    assert example.inference is not None
    week = example.model_copy(update={"inference": example.inference.model_copy(update={"hours": 168})})
    choice = choose(week, load_catalog())
    assert choice.chosen.provisioning == "flex-start"
    rival = next(option for option in choice.options if option.family != choice.chosen.family)
    assert rival.provisioning == "on-demand"
    line = next(line for line in choice.rationale if "the best TPU option" in line)
    assert line.startswith("H200 flex-start: ") and "TPU v6e on-demand on Google Cloud" in line


def test_the_chosen_side_of_the_family_comparison_is_named_with_its_capacity_mode(tmp_path):
    # A 70B JAX pretrain on GCP in 30 days picks a reserved TPU v6e fleet (calendar mode); the line comparing it
    # with the best GPU option called it "TPU v6e on-demand".
    workload = tmp_path / "mix.yaml"
    workload.write_text("name: mix-70b\nkind: pretrain\nmodel: {parameters: 70B, sequence_length: 8192}\n"
                        "training: {tokens: 1T, framework: jax, precision: bf16}\n"
                        "constraints: {clouds: [gcp], deadline_days: 30}\n")
    choice = choose(load_workload(workload), load_catalog())
    assert choice.chosen.family == "tpu" and choice.chosen.provisioning == "reservation"
    line = next(line for line in choice.rationale if "the best GPU option" in line)
    assert line.startswith("TPU v6e reserved: ")
