"""`accel choose`: exit codes, the --json contract, --plot, --catalog and --write-stack."""

import json
import re
from pathlib import Path

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from accel.base.units import money
from accel.commands import choose as choose_command
from accel.policies.catalog import load_catalog
from accel.policies.plan import Plan
from accel.policies.selection.choose import choose
from accel.policies.workload import WorkloadSpec, load_workload

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PRETRAIN = str(EXAMPLES / "llama-70b-pretrain.yaml")
OPTION_KEYS = {"cloud", "region", "accelerator", "family", "chips", "hosts", "slices", "topology", "machine_type",
               "spot", "hourly_usd", "hours", "total_usd", "mfu"}


def cli() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)

    @app.callback()
    def main() -> None:
        """accel"""

    choose_command.register(app)
    return app


def invoke(*args: str):
    return CliRunner().invoke(cli(), ["choose", *args])


def write(tmp_path, text: str, name: str = "w.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_the_human_output_shows_the_table_the_rationale_and_the_assumptions():
    outcome = invoke(PRETRAIN)
    assert outcome.exit_code == 0, outcome.output
    assert "TPU v6e" in outcome.stdout or "TPU v5p" in outcome.stdout
    for heading in ("Why", "Assumptions", "Rejected"):
        assert heading in outcome.stdout
    assert "cheaper" in outcome.stdout and "GPU" in outcome.stdout


def test_json_is_exactly_the_contract_on_a_clean_stdout():
    outcome = invoke(PRETRAIN, "--json")
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout)
    assert {"catalog", "workload", "chosen", "options", "rejected", "rationale"} <= set(document)
    assert set(document["catalog"]) == {"version", "as_of"}
    assert OPTION_KEYS <= set(document["chosen"])
    assert document["options"][0] == document["chosen"]
    assert all(OPTION_KEYS <= set(option) for option in document["options"])
    assert document["chosen"]["family"] in ("gpu", "tpu") and isinstance(document["chosen"]["spot"], bool)
    # `closest` (an OPTION) only where the offering kept a near miss (docs/contracts.md, section 2.1)
    assert all(set(item) in ({"offering", "reasons"}, {"offering", "reasons", "closest"})
               for item in document["rejected"])
    assert all(OPTION_KEYS <= set(item["closest"]) for item in document["rejected"] if "closest" in item)
    assert WorkloadSpec.model_validate(document["workload"]).name == "llama-70b-pretrain"


def test_the_objective_changes_the_ranking():
    cost = json.loads(invoke(PRETRAIN, "--json", "--objective", "cost").stdout)
    time = json.loads(invoke(PRETRAIN, "--json", "--objective", "time").stdout)
    assert time["chosen"]["hours"] <= cost["chosen"]["hours"]
    assert cost["chosen"]["total_usd"] <= time["chosen"]["total_usd"]


def test_an_unknown_objective_is_exit_2():
    outcome = invoke(PRETRAIN, "--objective", "speed")
    assert outcome.exit_code == 2 and "use one of cost, time" in outcome.stderr


def test_an_unknown_key_is_exit_2_with_a_suggestion_and_no_traceback(tmp_path):
    path = write(tmp_path, "name: x\nkind: pretrain\nmodel: {parameters: 8B}\ntraining: {tokens: 1T}\n"
                           "constraints: {deadlin_days: 3}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 2
    assert "constraints.deadlin_days: unknown key 'deadlin_days'; did you mean 'deadline_days'?" in outcome.stderr
    assert "Traceback" not in outcome.output


def test_a_missing_workload_file_is_exit_2(tmp_path):
    outcome = invoke(str(tmp_path / "none.yaml"))
    assert outcome.exit_code == 2 and "no such workload file" in outcome.stderr


def test_nothing_feasible_is_exit_3_with_the_eliminations_and_the_closest_option(tmp_path):
    path = write(tmp_path, "name: huge\nkind: pretrain\nmodel: {parameters: 405B}\n"
                           "training: {tokens: 15T, framework: pytorch}\n"
                           "constraints: {deadline_days: 10, budget_usd: 1M, custom_cuda_kernels: true}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 3
    assert "custom CUDA kernels eliminated 5" in outcome.stderr and "closest:" in outcome.stderr


def test_nothing_feasible_with_json_still_prints_a_document(tmp_path):
    path = write(tmp_path, "name: huge\nkind: pretrain\nmodel: {parameters: 405B}\ntraining: {tokens: 15T}\n"
                           "constraints: {deadline_days: 1, budget_usd: 1000}\n")
    outcome = invoke(path, "--json")
    assert outcome.exit_code == 3
    document = json.loads(outcome.stdout)
    assert document["chosen"] is None and document["eliminations"] and document["closest"]


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_writes_a_chart(tmp_path, suffix, magic):
    chart = tmp_path / f"options{suffix}"
    outcome = invoke(PRETRAIN, "--plot", str(chart))
    assert outcome.exit_code == 0, outcome.output
    assert chart.read_bytes().startswith(magic)


def test_plot_of_a_serving_workload(tmp_path):
    chart = tmp_path / "serving.png"
    assert invoke(str(EXAMPLES / "llama-70b-inference.yaml"), "--plot", str(chart)).exit_code == 0
    assert chart.stat().st_size > 1000


def test_plot_needs_png_or_svg(tmp_path):
    outcome = invoke(PRETRAIN, "--plot", str(tmp_path / "chart.jpg"))
    assert outcome.exit_code == 2 and "PNG or SVG" in outcome.stderr


@pytest.mark.parametrize("usd, text", [(0, "$0.00"), (12.5, "$12.50"), (950, "$950"), (12_500, "$12.5k"),
                                       (500_000, "$500.0k"), (2_500_000, "$2.50M"), (1.2e9, "$1.20B")])
def test_chart_money_reads_like_the_table(usd, text):
    assert money(usd) == text


def chart_of(workload: str | Path):
    """The plotted figure of a workload's choice, drawn so its tick labels exist; closed by the caller."""
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose
    from accel.policies.workload import load_workload

    figure = choose_command.plot_figure(choose(load_workload(workload), load_catalog()))
    figure.canvas.draw()
    return figure


def tick_labels(axis) -> list[str]:
    return [label.get_text() for label in axis.get_ticklabels() if label.get_text()]


@pytest.mark.parametrize("example", ["llama-70b-pretrain", "llama-8b-finetune-cuda", "llama-70b-inference"])
def test_the_cost_axis_reads_in_dollars_without_an_offset(example):
    import matplotlib.pyplot as plt

    figure = chart_of(EXAMPLES / f"{example}.yaml")
    try:
        axis = figure.axes[0].yaxis
        labels = tick_labels(axis)
        assert labels and all(re.fullmatch(r"\$[0-9.,]+[kMBT]?(/h)?", label) for label in labels), labels
        assert axis.get_offset_text().get_text() == ""
    finally:
        plt.close(figure)


def test_a_months_long_training_run_is_plotted_in_days():
    import matplotlib.pyplot as plt

    figure = chart_of(PRETRAIN)
    try:
        assert figure.axes[0].get_xlabel() == "run time (days)"
    finally:
        plt.close(figure)


def test_a_training_run_shorter_than_two_days_is_plotted_in_hours(tmp_path):
    import matplotlib.pyplot as plt

    path = write(tmp_path, "name: short\nkind: finetune\nmodel: {parameters: 8B}\n"
                           "training: {tokens: 2B, framework: pytorch}\n"
                           "constraints: {clouds: [gcp, aws], deadline_days: 1, budget_usd: 2000}\n")
    figure = chart_of(path)
    try:
        axes = figure.axes[0]
        assert axes.get_xlabel() == "run time (hours)"
        assert "deadline 24 h" in [text.get_text() for text in axes.get_legend().get_texts()]
    finally:
        plt.close(figure)


def test_a_serving_chart_prices_the_fleet_per_hour():
    import matplotlib.pyplot as plt

    figure = chart_of(EXAMPLES / "llama-70b-inference.yaml")
    try:
        axes = figure.axes[0]
        assert axes.get_xlabel() == "p99 latency per token (ms)"
        assert all(label.endswith("/h") for label in tick_labels(axes.yaxis))
    finally:
        plt.close(figure)


def test_a_catalog_override_changes_the_answer(tmp_path):
    catalog = write(tmp_path, "version: cheap-h100\nprices:\n"
                              "  - {offering: aws-p5.48xlarge, on_demand: 0.5, spot: 0.2, source: deal, as_of: 2026-03-01}\n",
                    "catalog.yaml")
    document = json.loads(invoke(PRETRAIN, "--json", "--catalog", catalog).stdout)
    assert document["chosen"]["accelerator"] == "h100-80gb"
    assert document["catalog"]["version"].endswith("+cheap-h100")


def test_a_catalog_with_a_sentinel_price_is_exit_2(tmp_path):
    catalog = write(tmp_path, "prices:\n  - {offering: gcp-tpu-v6e, on_demand: 700.0, source: feed, as_of: 2026-03-01}\n",
                    "catalog.yaml")
    outcome = invoke(PRETRAIN, "--catalog", catalog)
    assert outcome.exit_code == 2 and "placeholder (sentinel)" in outcome.stderr


def test_write_stack_pins_the_workload_and_plan_and_keeps_other_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.dev.yaml").write_text(yaml.safe_dump({
        "config": {"gcp:project": "acme-ml", "accel:owner": "team-a"}, "environment": ["shared"]}))
    outcome = invoke(PRETRAIN, "--write-stack", "dev")
    assert outcome.exit_code == 0, outcome.output
    written = yaml.safe_load((stacks / "Pulumi.dev.yaml").read_text())
    assert written["environment"] == ["shared"]
    config = written["config"]
    assert config["gcp:project"] == "acme-ml" and config["accel:owner"] == "team-a"
    assert WorkloadSpec.model_validate(config["accel:workload"]).name == "llama-70b-pretrain"
    plan = Plan.model_validate(config["accel:plan"])
    chosen = choose(load_workload(Path(PRETRAIN)), load_catalog()).chosen
    assert plan.chosen.offering == chosen.offering and plan.workload.name == "llama-70b-pretrain"


def test_write_stack_creates_the_stacks_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke(str(EXAMPLES / "llama-8b-finetune-cuda.yaml"), "--write-stack", "ft").exit_code == 0
    assert "accel:plan" in yaml.safe_load((tmp_path / "stacks" / "Pulumi.ft.yaml").read_text())["config"]


def test_write_stack_rejects_a_bad_stack_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = invoke(PRETRAIN, "--write-stack", "../evil")
    assert outcome.exit_code == 2 and not (tmp_path / "stacks").exists()


def test_write_stack_rejects_a_stack_name_ending_in_a_newline(tmp_path, monkeypatch):
    # Python's '$' matches before a final newline: 'run\n' used to pass and write 'Pulumi.run\n.yaml'
    monkeypatch.chdir(tmp_path)
    outcome = invoke(PRETRAIN, "--write-stack", "run\n")
    assert outcome.exit_code == 2 and not (tmp_path / "stacks").exists()


junk_documents = st.one_of(
    st.text(max_size=60),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                 lambda children: st.lists(children, max_size=3)
                 | st.dictionaries(st.sampled_from(["name", "kind", "model", "training", "x", "constraints"]),
                                   children, max_size=4),
                 max_leaves=10).map(lambda value: yaml.safe_dump(value)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=junk_documents)
def test_random_junk_is_exit_2_never_a_traceback(tmp_path, text):
    path = tmp_path / "junk.yaml"
    path.write_text(text)
    outcome = invoke(str(path))
    assert outcome.exit_code == 2, outcome.output
    assert "Traceback" not in outcome.output and outcome.stderr.startswith("error: ")


# ----------------------------------------------------------------------------- QA: input validation and messages

PIN_BASE = "name: w\nkind: pretrain\nmodel: {parameters: 70B}\ntraining: {tokens: 2T, framework: jax}\n"


def test_an_invalid_pin_topology_is_exit_2_naming_the_file_and_field(tmp_path):
    path = write(tmp_path, PIN_BASE + "hardware: {accelerator: tpu-v5p, chips: 27, topology: 3x3x3}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 2
    assert outcome.stderr.startswith(f"error: {path}: hardware.topology: TPU v5p has no topology '3x3x3'; allowed:")


def test_a_contradictory_pin_is_exit_2_not_rounded(tmp_path):
    path = write(tmp_path, PIN_BASE + "hardware: {accelerator: tpu-v5p, chips: 12288, topology: 16x16x24, slices: 1}\n")
    outcome = invoke(path, "--json")
    assert outcome.exit_code == 2 and outcome.stdout == ""
    assert f"{path}: hardware.chips: 12288 chips contradict topology 16x16x24 x 1 slice = 6144 chips" in outcome.stderr


def test_a_region_in_no_catalog_offering_is_exit_2_with_a_suggestion_and_the_known_regions(tmp_path):
    path = write(tmp_path, PIN_BASE + "constraints: {regions: [us-east5, us-east99]}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 2
    assert (f"\nerror: {path}: constraints.regions: 'us-east99' is in no catalog offering (did you mean "
            "'us-east5'?); known regions: ") in outcome.stderr
    assert "us-central1" in outcome.stderr and "us-east-1" in outcome.stderr


def test_a_pinned_region_in_no_catalog_offering_is_exit_2(tmp_path):
    path = write(tmp_path, PIN_BASE + "hardware: {accelerator: tpu-v5p, chips: 64, region: us-eastt5}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 2
    assert f"\nerror: {path}: hardware.region: 'us-eastt5' is in no catalog offering" in outcome.stderr


def test_a_stack_pin_whose_spot_contradicts_the_workload_is_a_usage_error():
    from accel.base.errors import UsageError
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose
    from accel.policies.workload import HardwarePin, workload_from_mapping

    # A stack's accel:hardware is applied with model_copy, without re-validating against the workload.
    spec = workload_from_mapping(yaml.safe_load(PIN_BASE + "constraints: {spot: required}\n"), "w.yaml")
    pinned = spec.model_copy(update={"hardware": HardwarePin(accelerator="h100-80gb", chips=8, spot=False)})
    with pytest.raises(UsageError, match="^hardware.spot: false contradicts constraints.spot: required"):
        choose(pinned, load_catalog())


def test_eliminations_read_as_plain_text_not_python_lists(tmp_path):
    path = write(tmp_path, PIN_BASE + "constraints: {clouds: [gcp], regions: [us-east-1]}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 3
    assert "regions (us-east-1) eliminated" in outcome.stderr and "clouds (gcp) eliminated" in outcome.stderr
    assert "['" not in outcome.stderr


def test_kubernetes_without_an_inventory_says_one_is_needed(tmp_path):
    path = write(tmp_path, PIN_BASE + "constraints: {clouds: [kubernetes]}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 3
    assert "kubernetes: no offerings" in outcome.stderr and "accel:cluster" in outcome.stderr


def test_a_latency_bound_that_eliminates_everything_still_names_the_closest_option(tmp_path):
    path = write(tmp_path, "name: fast\nkind: inference\nmodel: {parameters: 70B}\n"
                           "inference: {tokens_per_second: 1000, p99_latency_ms: 0.5, framework: jax}\n")
    outcome = invoke(path, "--json")
    assert outcome.exit_code == 3
    assert "p99 latency 0.5 ms eliminated" in outcome.stderr
    closest = re.search(r"closest: (.*)", outcome.stderr).group(1)
    assert not closest.startswith("none") and "over the 0.5 ms bound" in closest
    assert json.loads(outcome.stdout)["closest"]["family"] in ("gpu", "tpu")


def test_the_default_max_chips_says_it_is_the_default_and_how_to_raise_it(tmp_path):
    path = write(tmp_path, "name: huge\nkind: inference\nmodel: {parameters: 70B}\n"
                           "inference: {tokens_per_second: 1e9, framework: jax}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 3
    assert "max_chips 16384 (the default; set constraints.max_chips to raise it) eliminated" in outcome.stderr
    explicit = invoke(write(tmp_path, "name: huge\nkind: inference\nmodel: {parameters: 70B}\n"
                                      "inference: {tokens_per_second: 1e9, framework: jax}\n"
                                      "constraints: {max_chips: 4096}\n", "explicit.yaml"))
    assert "max_chips 4096 eliminated" in explicit.stderr and "the default" not in explicit.stderr


def test_a_defaulted_framework_is_called_the_default_where_it_eliminates(tmp_path):
    path = write(tmp_path, "name: chat\nkind: inference\nmodel: {parameters: 8B}\n"
                           "inference: {tokens_per_second: 1000}\n")
    document = json.loads(invoke(path, "--json").stdout)
    note = "framework pytorch (default framework for inference; set inference.framework to change it)"
    tpu_reasons = [item["reasons"][0] for item in document["rejected"] if item["offering"].startswith("gcp-tpu")]
    assert tpu_reasons and all(reason.startswith(note) for reason in tpu_reasons)
    assert any(line.startswith("F" + note[1:]) for line in document["rationale"])


def test_an_explicit_framework_is_not_called_a_default(tmp_path):
    path = write(tmp_path, "name: chat\nkind: inference\nmodel: {parameters: 8B}\n"
                           "inference: {tokens_per_second: 1000, framework: pytorch}\n")
    outcome = invoke(path)
    assert outcome.exit_code == 0 and "default framework" not in outcome.stdout


@pytest.mark.parametrize("usd, text", [(9.8, "$9.80"), (4_512, "$4,512"), (12_300, "$12.3k"), (1.85e6, "$1.85M"),
                                       (2.4e9, "$2.40B"), (1.5e12, "$1.50T"), (1e15, "$1.00e+15"),
                                       (3.2e18, "$3.20e+18")])
def test_money_uses_units_up_to_trillions_then_scientific(usd, text):
    from accel.base.units import money

    assert money(usd) == text


@pytest.mark.parametrize("amount, limit, texts", [
    (1_503_000, 1_500_000, ("$1,503,000", "$1,500,000")),
    (1_500_000.4, 1_500_000.1, ("$1,500,000.40", "$1,500,000.10")),
    (2e6, 1e6, ("$2.00M", "$1.00M")),
])
def test_compared_amounts_get_the_digits_that_tell_them_apart(amount, limit, texts):
    from accel.base.units import money_pair

    assert money_pair(amount, limit) == texts


def test_a_huge_budget_is_written_readably(tmp_path):
    outcome = invoke(write(tmp_path, PIN_BASE + "constraints: {budget_usd: 1e15}\n"))
    assert outcome.exit_code == 0 and "$1.00e+15 budget" in outcome.stdout
    assert "$1,000,000,000.00M" not in outcome.stdout


def test_a_pin_just_over_budget_shows_the_digits_that_differ():
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose
    from accel.policies.workload import workload_from_mapping

    data = yaml.safe_load(PIN_BASE + "hardware: {accelerator: tpu-v5p, chips: 64}\n")
    catalog = load_catalog()
    total = choose(workload_from_mapping(data, "w.yaml"), catalog).chosen.total_usd
    data["constraints"] = {"budget_usd": total - 1}
    warning = next(line for line in choose(workload_from_mapping(data, "w.yaml"), catalog).rationale
                   if "budget" in line)
    amounts = re.findall(r"\$[0-9,.]+[kMBT]?", warning)
    assert len(amounts) == 2 and amounts[0] != amounts[1], warning


def test_one_of_anything_is_singular():
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose
    from accel.policies.workload import workload_from_mapping

    spec = workload_from_mapping({"name": "tiny", "kind": "finetune", "model": {"parameters": "1B"},
                                  "training": {"tokens": "1B", "framework": "pytorch"},
                                  "hardware": {"accelerator": "a100-40gb", "chips": 1, "cloud": "gcp"}}, "w.yaml")
    text = " ".join(choose(spec, load_catalog()).rationale)
    assert "(1 GPU)" in text and "1 GPUs" not in text and "1 chips" not in text and "1 hosts" not in text


def test_a_latency_rejection_shows_the_p99_factor_that_decides_it():
    document = json.loads(invoke(str(EXAMPLES / "llama-8b-serving.yaml"), "--json").stdout)
    (reason,) = next(item["reasons"] for item in document["rejected"] if item["offering"] == "gcp-g2-standard-4")
    assert re.search(r"takes (\d+) ms even at batch 1; x1\.3 latency_p99_factor makes the fastest \(1-chip\) "
                     r"replica (\d+) ms per token at p99, over the 80 ms bound", reason), reason
    step, p99 = map(int, re.search(r"takes (\d+) ms.* replica (\d+) ms", reason).groups())
    assert p99 > 80 and abs(p99 - step * 1.3) <= 1


def test_an_unwritable_plot_path_fails_before_any_output(tmp_path):
    outcome = invoke(PRETRAIN, "--json", "--plot", str(tmp_path / "missing" / "x.png"))
    assert outcome.exit_code == 2 and outcome.stdout == ""
    assert "--plot" in outcome.stderr and "does not exist" in outcome.stderr


def test_a_plot_path_in_a_read_only_directory_fails_before_any_output(tmp_path):
    import os

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        outcome = invoke(PRETRAIN, "--json", "--plot", str(locked / "x.png"))
        assert outcome.exit_code == 2 and outcome.stdout == "" and "not writable" in outcome.stderr
    finally:
        locked.chmod(0o700)


def test_write_stack_warns_when_it_replaces_another_workload(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke(PRETRAIN, "--write-stack", "dev").exit_code == 0
    outcome = invoke(str(EXAMPLES / "llama-8b-finetune-cuda.yaml"), "--write-stack", "dev")
    assert outcome.exit_code == 0
    assert "replacing accel:workload 'llama-70b-pretrain' with 'llama-8b-finetune-cuda'" in outcome.stderr
    config = yaml.safe_load((tmp_path / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    assert config["accel:workload"]["name"] == "llama-8b-finetune-cuda"
    again = invoke(str(EXAMPLES / "llama-8b-finetune-cuda.yaml"), "--write-stack", "dev")
    assert "replacing" not in again.stderr


def test_write_stack_writes_no_null_workload_fields_but_the_full_plan(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke(PRETRAIN, "--write-stack", "dev").exit_code == 0
    config = yaml.safe_load((tmp_path / "stacks" / "Pulumi.dev.yaml").read_text())["config"]

    def nulls(value, path=""):
        if isinstance(value, dict):
            return [p for key, item in value.items() for p in nulls(item, f"{path}.{key}")]
        if isinstance(value, list):
            return [p for item in value for p in nulls(item, path)]
        return [path] if value is None else []

    assert nulls(config["accel:workload"]) == []
    assert "accelerators" not in config["accel:workload"]["constraints"]
    assert set(config["accel:plan"]) == set(Plan.model_fields) | set(Plan.model_computed_fields)
    assert nulls(config["accel:plan"]), "the plan is a full dump, unset fields included"


def _numbers_on(axes) -> set[str]:
    return {number for text in axes.texts for number in text.get_text().split(",")}


@pytest.mark.parametrize("example", ["llama-70b-pretrain", "llama-8b-finetune-cuda", "llama-70b-inference"])
def test_every_plotted_option_is_numbered_and_named_in_the_key(example):
    import matplotlib.pyplot as plt

    figure = chart_of(EXAMPLES / f"{example}.yaml")
    try:
        axes = figure.axes[0]
        numbers = {c.get_gid().removeprefix("option-") for c in axes.collections
                   if (c.get_gid() or "").startswith("option-")}
        key = "\n".join(text.get_text() for text in figure.texts)
        assert "1" in numbers and numbers <= _numbers_on(axes)
        assert all(re.search(rf"^\s*{n}\*? ", key, re.M) for n in numbers)
    finally:
        plt.close(figure)


def test_the_chart_shades_where_deadline_and_budget_are_both_met():
    import matplotlib.pyplot as plt

    figure = chart_of(PRETRAIN)
    try:
        axes = figure.axes[0]
        legend = [text.get_text() for text in axes.get_legend().get_texts()]
        assert {"deadline 30 d", "budget $4.00M", "meets every limit"} <= set(legend)
        region = next(c for c in axes.collections if c.get_gid() == "feasible-region")
        xs, ys = region.get_paths()[0].vertices.T
        assert xs.max() == pytest.approx(30) and ys.max() == pytest.approx(4e6)
    finally:
        plt.close(figure)
