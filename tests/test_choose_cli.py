"""`accel choose`: exit codes, the --json contract, --plot, --catalog and --write-stack."""

import json
import re
from pathlib import Path

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st
from typer.testing import CliRunner

from accel.commands import choose as choose_command
from policies.plan import Plan
from policies.workload import WorkloadSpec

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
    assert all(set(item) == {"offering", "reasons"} for item in document["rejected"])
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
    assert "custom CUDA kernels eliminated 4" in outcome.stderr and "closest:" in outcome.stderr


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


@pytest.mark.parametrize("usd, text", [(0, "$0"), (12.5, "$12.5"), (950, "$950"), (1_250, "$1.25K"),
                                       (500_000, "$500K"), (2_500_000, "$2.5M"), (1.2e9, "$1.2B")])
def test_chart_dollars_use_k_and_m_suffixes(usd, text):
    assert choose_command.dollars(usd) == text


def chart_of(workload: str | Path):
    """The plotted figure of a workload's choice, drawn so its tick labels exist; closed by the caller."""
    from policies.catalog import load_catalog
    from policies.select import choose
    from policies.workload import load_workload

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
        assert labels and all(re.fullmatch(r"\$[0-9.]+[KMB]?(/h)?", label) for label in labels), labels
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
    assert plan.family == "tpu" and plan.workload.name == "llama-70b-pretrain"


def test_write_stack_creates_the_stacks_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke(str(EXAMPLES / "llama-8b-finetune-cuda.yaml"), "--write-stack", "ft").exit_code == 0
    assert "accel:plan" in yaml.safe_load((tmp_path / "stacks" / "Pulumi.ft.yaml").read_text())["config"]


def test_write_stack_rejects_a_bad_stack_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = invoke(PRETRAIN, "--write-stack", "../evil")
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
