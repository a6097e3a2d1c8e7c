"""The rationale names how each option's capacity is obtained, the way the options table does."""
from pathlib import Path

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose
from accel.policies.workload import load_workload

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_the_best_option_of_the_other_family_is_named_with_its_capacity_mode():
    # The 70B serving example's best GPU option is an H200 pool on flex-start (A3 Ultra is not sold plain
    # on demand); the comparison line called it "H200 on-demand".
    choice = choose(load_workload(EXAMPLES / "llama-70b-inference.yaml"), load_catalog())
    rival = next(option for option in choice.options if option.family != choice.chosen.family)
    assert rival.provisioning == "flex-start"
    line = next(line for line in choice.rationale if "the best GPU option" in line)
    assert "H200 flex-start on Google Cloud" in line and "on-demand on" not in line
