"""A new user's audit, as hostile input (2026-11-27): each case here was accepted, crashed or answered with the
wrong exit code before its fix. Every refusal names the field and what is allowed, exits 2, and prints no
traceback; the properties check the same over open inputs.

The wider batteries are tests/test_bad_input_battery.py (paths, options, hostile documents) and
tests/test_bad_input_properties.py (valid documents broken by construction); this file adds what they missed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from accel.base.errors import UsageError
from accel.base.units import UnitError, parse_quantity
from accel.cli import _register_commands, app
from accel.policies.workload import workload_from_mapping
from accel.stack.deploy_keys import project_id_problem
from tests.test_bad_input_battery import assert_refused  # exit 2, an error line naming each needle, no traceback

ROOT = Path(__file__).resolve().parent.parent
FINETUNE = yaml.safe_load((ROOT / "examples" / "llama-8b-finetune-cuda.yaml").read_text())
MOE = yaml.safe_load((ROOT / "examples" / "deepseek-v3-moe.yaml").read_text())


def run(*args):
    _register_commands()
    return CliRunner().invoke(app, [str(a) for a in args])


def choose_with(tmp_path: Path, document: dict, *options: str):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(document))
    return run("choose", path, *options)


def changed(document: dict, section: str | None, **fields) -> dict:
    copy = yaml.safe_load(yaml.safe_dump(document))
    (copy[section] if section else copy).update(fields)
    return copy


# ---------------------------------------------------------------- numbers past a float's range

def test_an_integer_too_large_for_a_float_is_refused_naming_the_field(tmp_path):
    # YAML reads `parameters: 1000...0` (401 digits) as one int; float() of it raised OverflowError: a traceback.
    text = yaml.safe_dump(FINETUNE).replace("parameters: 8B", "parameters: 1" + "0" * 400)
    path = tmp_path / "w.yaml"
    path.write_text(text)
    assert_refused(run("choose", path), "model.parameters", "finite number")


@given(st.one_of(st.integers(), st.integers(min_value=-(10 ** 400), max_value=10 ** 400),
                 st.floats(allow_nan=True, allow_infinity=True)))
@settings(max_examples=300, deadline=None)
def test_any_number_is_a_finite_quantity_or_a_unit_error(value):
    try:
        number = parse_quantity(value)
    except UnitError:
        return
    assert math.isfinite(number)


# ---------------------------------------------------------------- contradicting workload fields

@pytest.mark.parametrize("fields, words", [
    # every weight active although a token visits 8 of 256 experts
    ({"active_parameters": "671B"}, "equals parameters although a token is routed to 8 of 256"),
    # fewer active weights than the 8 routed experts alone hold (671B x 8 / 256 = 21B)
    ({"active_parameters": "10B"}, "is below parameters x experts_per_token / experts"),
])
def test_moe_active_parameters_that_contradict_the_routing_are_refused(tmp_path, fields, words):
    assert_refused(choose_with(tmp_path, changed(MOE, "model", **fields)), "model.active_parameters", words)


@given(total=st.floats(1e9, 2e12), experts=st.integers(2, 512), data=st.data())
@settings(max_examples=200, deadline=None)
def test_any_moe_split_of_shared_and_expert_weights_is_accepted_and_nothing_outside_it(total, experts, data):
    """parameters = S + experts x E, active = S + per_token x E for some S >= 0: exactly those are accepted."""
    per_token = data.draw(st.integers(1, experts))
    shared_share = data.draw(st.floats(0, 0.99))
    expert = total * (1 - shared_share) / experts
    active = total * shared_share + per_token * expert
    model = {"parameters": total, "active_parameters": min(active, total), "experts": experts,
             "experts_per_token": per_token}
    document = {"name": "w", "kind": "pretrain", "model": model, "training": {"tokens": "1T"}}
    if per_token < experts and active >= total:
        return  # S + kE = S + nE only when k = n (rounding aside)
    workload_from_mapping(document, "w.yaml")
    below = dict(model, active_parameters=total * per_token / experts * 0.9)
    with pytest.raises(UsageError, match="model.active_parameters"):
        workload_from_mapping(dict(document, model=below), "w.yaml")


def test_the_published_moe_runs_sit_inside_the_routing_bounds():
    from accel.policies.estimator import whole_runs

    for run_row in whole_runs.whole_runs().moe:
        floor = run_row.parameters * run_row.experts_per_token / run_row.experts
        assert floor <= run_row.active_parameters < run_row.parameters, run_row.id


def test_a_global_batch_smaller_than_one_sequence_is_refused_not_reported_infeasible(tmp_path):
    # Before: exit 3, "max_chips eliminated 15 ... capacity eliminated 9", which sent the user after the wrong field.
    workload = changed(MOE, "training", global_batch_tokens=1000)
    assert_refused(choose_with(tmp_path, workload), "training.global_batch_tokens", "less than one sequence")


def test_an_empty_region_list_is_an_input_error_not_nothing_feasible(tmp_path):
    # Before: exit 3 "regions () eliminated 27"; clouds: [] and accelerators: [] were already exit 2.
    workload = yaml.safe_load(yaml.safe_dump(FINETUNE))
    workload["constraints"]["regions"] = []
    assert_refused(choose_with(tmp_path, workload), "constraints.regions", "at least 1 item")


# ---------------------------------------------------------------- owner and cost centre as Kubernetes labels

# kubernetes v1.33 staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go: IsValidLabelValue
K8S_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"


@given(owner=st.text(max_size=80), cost_center=st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_owner_and_cost_center_become_valid_kubernetes_label_values(owner, cost_center):
    import re

    from accel.components.tags import ResourceTags

    labels = ResourceTags(workload="w", stack="s", owner=owner, cost_center=cost_center).kubernetes_labels()
    for value in labels.values():
        assert len(value) <= 63 and re.fullmatch(K8S_LABEL_VALUE, value), (owner, cost_center, value)


def test_a_stack_whose_owner_ends_in_punctuation_plans(tmp_path):
    # Before: 'Big Boss!' became the label value 'big-boss-', which every Kubernetes object and the GKE node pool
    # refuse; `accel plan` exited 2 with "the stack's job would not run (12 problems)", naming none of the stack's keys.
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())
    # (Since the owner rule of policies/tagging, '!' and '&' are refused outright, as AWS would: the trailing '.'
    # and '_' still test the trimming.)
    stack["config"]["accel:owner"] = "Big Boss."
    stack["config"]["accel:costCenter"] = "_R+D 12_"
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump(stack))
    result = run("plan", "--config", path, "-C", ROOT, "--json")
    assert result.exit_code == 0, result.stderr[-800:]
    assert '"accel.dev/owner": "big-boss"' in result.stdout


# ---------------------------------------------------------------- --reservations rows

RESERVED = {"name": "a3-held", "machineType": "a3-highgpu-8g", "count": 2, "zone": "us-central1-a"}


def choose_with_reservations(tmp_path: Path, rows: list[dict] | str):
    path = tmp_path / "reservations.yaml"
    path.write_text(rows if isinstance(rows, str) else yaml.safe_dump(rows))
    return run("choose", ROOT / "examples" / "llama-8b-finetune-cuda.yaml", "--reservations", path)


def test_a_reservation_declared_twice_is_refused_naming_the_second_entry(tmp_path):
    # Before: exit 0, the two entries weighed as 4 machines where the cloud holds 2.
    assert_refused(choose_with_reservations(tmp_path, [RESERVED, RESERVED]), "1.name", "already entry 0")


def test_the_same_name_in_another_zone_is_another_reservation(tmp_path):
    other_zone = dict(RESERVED, zone="us-central1-c")
    result = choose_with_reservations(tmp_path, [RESERVED, other_zone])
    assert result.exit_code == 0, result.stderr[-600:]


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
def test_a_savings_plan_commitment_must_be_a_finite_amount(tmp_path, value):
    # Before: hourlyCommitmentUsd: .inf was taken, an unbounded commitment pricing every machine at the plan rate.
    row = f"- {{name: 5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f, kind: savings-plan, plan: compute, hourlyCommitmentUsd: {value}, discount: 0.3}}\n"
    assert_refused(choose_with_reservations(tmp_path, row), "0.hourlyCommitmentUsd")


# ---------------------------------------------------------------- duplicate keys in the JSON accel review reads

REVIEW = ROOT / "tests" / "fixtures" / "review"


def _with_a_second(text: str, key: str, value: str) -> str:
    """The document with `key` given again at the top level; json.loads alone keeps the second silently."""
    return text.rstrip().rstrip("}") + f', "{key}": {value}}}\n'


@pytest.mark.parametrize("slot, fixture, key", [
    ("preview", "preview_create.json", "steps"),
    ("--plan", "plan_head.json", "resources"),
    ("--base-plan", "plan_base.json", "stack"),
])
def test_a_json_document_naming_a_key_twice_is_refused(tmp_path, slot, fixture, key):
    # Before: exit 0, the review rendered whichever value came last (an empty change, for `"steps": []`).
    path = tmp_path / fixture
    path.write_text(_with_a_second((REVIEW / fixture).read_text(), key, "[]" if key != "stack" else '"other"'))
    args = (path,) if slot == "preview" else (REVIEW / "preview_create.json", slot, path)
    assert_refused(run("review", *args), str(path), f"duplicate key {key!r}")


def test_an_event_log_line_naming_a_key_twice_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = (REVIEW / "preview_events.jsonl").read_text().splitlines()
    path.write_text("\n".join([*lines, '{"sequence": 1, "sequence": 2}']) + "\n")
    assert_refused(run("review", REVIEW / "preview_create.json", "--event-log", path),
                   f"line {len(lines) + 1}", "duplicate key 'sequence'")


# ---------------------------------------------------------------- --catalog files that change nothing or say nonsense

@pytest.mark.parametrize("name, text, words", [
    ("empty.yaml", "", "an empty catalog overlay changes nothing"),
    ("comments.yaml", "# our prices, to fill in\n", "an empty catalog overlay changes nothing"),
    ("braces.yaml", "{}\n", "an empty catalog overlay changes nothing"),
    ("empty.csv", "", "no price rows"),
    ("header.csv", "offering,region,on_demand_usd_per_chip_hour,spot_usd_per_chip_hour,source,as_of\n", "no price rows"),
    ("version.yaml", "version: [1]\nprices: []\n", "version: expected a name"),
])
def test_a_catalog_file_that_changes_nothing_or_names_no_version_is_refused(tmp_path, name, text, words):
    # Before: exit 0, the bundled catalog labelled as if overridden ("catalog 2026.11.3+empty", "+[1]").
    path = tmp_path / name
    path.write_text(text)
    assert_refused(run("choose", ROOT / "examples" / "llama-8b-finetune-cuda.yaml", "--catalog", path), str(path), words)


# ---------------------------------------------------------------- accel job and accel plan options

@pytest.mark.parametrize("options, words", [
    (("--command", ""), "--command: empty"),  # before: exit 0, silently the default command
    (("--command", "   "), "--command: empty"),
    (("--validate", "--command", "python train.py"), "--command would be ignored"),
    (("--check", "job.yaml", "--command", "python train.py"), "--command would be ignored"),
    (("--check", "job.yaml", "--validate"), "--validate would be ignored"),
])
def test_job_refuses_an_option_it_would_ignore_before_planning(tmp_path, options, words):
    manifests = tmp_path / "job.yaml"
    manifests.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    options = tuple(str(manifests) if o == "job.yaml" else o for o in options)
    assert_refused(run("job", "-s", "dev-spot", "-C", ROOT, *options), words)


def test_validate_runs_the_fabric_check_in_the_image_given_by_image():
    # The check's own command runs in the --image given (before: --image with --validate was dropped, then refused).
    # The Arm GB200 inventory spans nodes: its check is torchrun's, in the training image or the one given.
    alone = run("job", "-s", "onprem-gb200", "--validate", "-C", ROOT)
    assert alone.exit_code == 0, alone.output
    image = "registry.acme.dev/pytorch-arm64:2.6"
    given = run("job", "-s", "onprem-gb200", "--validate", "--image", image, "-C", ROOT)
    assert given.exit_code == 0, given.output
    assert f"image: {image}" in given.stdout and "torchrun --nnodes=22" in given.stdout
    one_node = run("job", "-s", "dev-spot", "--validate", "--image", image, "-C", ROOT)
    assert f"image: {image}" in one_node.stdout and "all_reduce_perf" in one_node.stdout


@pytest.mark.parametrize("command", ["plan", "job"])
def test_cwd_naming_a_file_is_refused_not_resolved_to_its_folder(command):
    # Before: `-C README.md` planned the project README.md sits in, exit 0.
    assert_refused(run(command, "-s", "dev-spot", "-C", ROOT / "README.md"), "not a directory", "--cwd")


# ---------------------------------------------------------------- provider keys the program reads

@pytest.mark.parametrize("project", [5, "proj", "my-project-", "1acme-ml", "My-Project", "acme ml dev", "a" * 31])
def test_a_gcp_project_that_cannot_be_a_project_id_is_refused_at_plan_time(tmp_path, project):
    # Before: `gcp:project: 5` planned with exit 0 (buckets '5-...-datasets'); the provider would refuse it at `pulumi up`.
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())
    stack["config"]["gcp:project"] = project
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump(stack))
    assert_refused(run("plan", "--config", path, "-C", ROOT), "gcp:project", "6 to 30 lowercase letters")


@given(st.from_regex(r"[a-z][a-z0-9-]{4,28}[a-z0-9]", fullmatch=True))
def test_every_project_id_the_resource_manager_rule_allows_is_accepted(project):
    # Imported with the module, not in the first example: the import alone can pass hypothesis's 200 ms deadline
    # on a loaded machine (a failure seen once under four helpers' load).
    assert project_id_problem(project) is None
    assert project_id_problem(project + "-") is not None and project_id_problem(project.upper()) is not None


# ---------------------------------------------------------------- choose --write-stack into a stack file that is wrong

@pytest.mark.parametrize("text, words", [
    ("config:\n  accel:bogus: 1\n", "accel:bogus: unknown key"),  # before: written, exit 0; `accel plan` then refused it
    ("config:\n  accel:ownr: me\n", "did you mean 'accel:owner'"),
    ("config:\n  accel:owner: a\n  accel:owner: b\n", "duplicate key 'accel:owner' (first on line 2, again on line 3)"),
    ("config: [\n", "not valid YAML at line 2"),  # before: ruamel's multi-line parser trace
])
def test_write_stack_refuses_a_stack_file_it_cannot_keep_and_writes_nothing(tmp_path, monkeypatch, text, words):
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    stack = tmp_path / "stacks" / "Pulumi.mine.yaml"
    stack.write_text(text)
    monkeypatch.chdir(tmp_path)
    result = run("choose", ROOT / "examples" / "llama-8b-finetune-cuda.yaml", "--write-stack", "mine")
    assert_refused(result, "Pulumi.mine.yaml", words)
    assert stack.read_text() == text


# ---------------------------------------------------------------- a hardware pin's machine type

@pytest.mark.parametrize("machine_type, words", [
    ("p9.huge", "'p9.huge' is sold by no catalog offering"),
    ("p5.48xlrge", "did you mean 'p5.48xlarge'?"),
    ("g6e.xlarge", "'g6e.xlarge' carries l40s, not h100-80gb"),
])
def test_a_pinned_machine_type_the_catalog_cannot_sell_is_an_input_error(tmp_path, machine_type, words):
    # Before: exit 3 "nothing feasible: the catalog has no offering of h100-80gb on gcp, aws as p9.huge".
    workload = changed(FINETUNE, None, hardware={"accelerator": "h100-80gb", "chips": 8, "machine_type": machine_type})
    assert_refused(choose_with(tmp_path, workload), "hardware.machine_type", words)


@pytest.mark.parametrize("accelerator, machine_type", [("h100-80gb", "p5.48xlarge"), ("h100-80gb", "a3-megagpu-8g"),
                                                       ("tpu-v5p", "ct5p-hightpu-4t")])
def test_a_pinned_machine_type_the_catalog_sells_is_estimated(tmp_path, accelerator, machine_type):
    workload = changed(FINETUNE, None, hardware={"accelerator": accelerator, "chips": 64, "machine_type": machine_type})
    workload["constraints"].pop("custom_cuda_kernels")
    workload["training"]["framework"] = "jax"
    result = choose_with(tmp_path, workload)
    assert result.exit_code == 0, result.stderr[-600:]


# ---------------------------------------------------------------- numbers past what anyone can mean

@pytest.mark.parametrize("section, field, value", [
    ("model", "parameters", 1e-300),    # before: ZeroDivisionError in compute_hours (a rate of zero FLOPs)
    ("model", "parameters", 1.37e308),  # before: OverflowError in min_chips_for_memory
    ("model", "parameters", 1),
    ("training", "tokens", 1e308),
    ("training", "tokens", 0.5),
    ("training", "global_batch_tokens", 1.37e308),
])
def test_a_number_past_its_sanity_range_is_refused_naming_the_field(tmp_path, section, field, value):
    workload = changed(FINETUNE, section, **{field: value})
    assert_refused(choose_with(tmp_path, workload), f"{section}.{field}", "Input should be")


_EXTREMES = [1e-300, 1e-9, 0.5, 1, 7, 1e3, 1e6, 1e9, 7e10, 1e12, 1e15, 1e18, 1e30, 1e200, 1.37e308]


@st.composite
def any_workload(draw) -> dict:
    """A workload of the right shape whose numbers are drawn from far outside and inside what anyone runs."""
    kind = draw(st.sampled_from(["pretrain", "finetune", "inference"]))
    number = st.sampled_from(_EXTREMES)
    model = {"parameters": draw(number)}
    if draw(st.booleans()):
        model["sequence_length"] = draw(st.sampled_from([1, 128, 8192, 2_000_000]))
    if draw(st.booleans()):
        experts = draw(st.sampled_from([2, 8, 256]))
        per_token = draw(st.integers(1, experts))
        model.update(experts=experts, experts_per_token=per_token,
                     active_parameters=model["parameters"] * (1.0 if per_token == experts else per_token / experts))
    workload = {"name": "w", "kind": kind, "model": model,
                "constraints": {"deadline_days": draw(st.sampled_from([1e-6, 1, 30, 1e6])),
                                "budget_usd": draw(st.sampled_from([1e-3, 1e4, 1e7, 1e15]))}}
    if kind == "inference":
        workload["inference"] = {"tokens_per_second": draw(number),
                                 "p99_latency_ms": draw(st.sampled_from([0.001, 50, 1e9]))}
    else:
        workload["training"] = {"tokens": draw(number), "framework": draw(st.sampled_from(["jax", "pytorch"])),
                                "precision": draw(st.sampled_from(["bf16", "fp8", "fp32"]))}
        if draw(st.booleans()):
            workload["training"]["global_batch_tokens"] = draw(number)
    return workload


@given(workload=any_workload(), objective=st.sampled_from(["cost", "time"]))
@settings(max_examples=60, deadline=None)
def test_any_workload_is_chosen_refused_or_infeasible_never_a_traceback(workload, objective):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.yaml"
        path.write_text(yaml.safe_dump(workload))
        result = run("choose", path, "--objective", objective)
    assert result.exception is None or isinstance(result.exception, SystemExit), (workload, repr(result.exception))
    assert result.exit_code in (0, 2, 3), (workload, result.exit_code, result.stderr[-400:])
    if result.exit_code:
        assert "error" in result.stderr.lower()


# ---------------------------------------------------------------- estimator overrides (assumptions:)

PRETRAIN = yaml.safe_load((ROOT / "examples" / "llama-70b-pretrain.yaml").read_text())
SERVING = yaml.safe_load((ROOT / "examples" / "llama-8b-serving.yaml").read_text())


@pytest.mark.parametrize("overrides", [
    {"preemptions_per_day": 1},  # before: OverflowError in poisson_quantile (a spot run that never ends)
    {"hbm_usable_fraction": 1, "checkpoint_interval_minutes": 1000.0},  # the same
])
def test_plausible_overrides_that_make_spot_runs_endless_are_chosen_without_them(tmp_path, overrides):
    result = choose_with(tmp_path, changed(PRETRAIN, None, assumptions=overrides))
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 3), result.stderr[-600:]


@pytest.mark.parametrize("overrides, field", [
    ({"mfu_decay_per_doubling": 1e-300}, "assumptions.mfu_decay_per_doubling"),  # before: ZeroDivisionError
    ({"goodput": 1e-300}, "assumptions.goodput"),
    ({"bytes_per_parameter": 1.7e308}, "assumptions.bytes_per_parameter"),  # before: OverflowError
    ({"kv_cache_bytes_per_token": 1e-300}, "assumptions.kv_cache_bytes_per_token"),  # before: OverflowError
    ({"prompt_tokens_per_output_token": 1e300}, "assumptions.prompt_tokens_per_output_token"),
])
def test_an_override_past_its_range_is_refused_naming_it(tmp_path, overrides, field):
    assert_refused(choose_with(tmp_path, changed(SERVING if "kv" in field or "prompt" in field else PRETRAIN, None,
                                                 assumptions=overrides)), field)


_OVERRIDE_VALUES = [1e-300, 1e-3, 0.5, 1, 3, 1e3, 1e6, 1e300]
_OVERRIDES = ["bytes_per_parameter", "activation_headroom", "checkpoint_interval_minutes", "restart_minutes",
              "preemptions_per_day", "default_deadline_days", "inference_bytes_per_parameter", "kv_cache_bytes_per_token",
              "latency_p99_factor", "spot_serving_headroom", "prompt_tokens_per_output_token", "mfu", "goodput",
              "hbm_usable_fraction", "mfu_decay_per_doubling", "multislice_efficiency", "hbm_bandwidth_efficiency",
              "inference_compute_efficiency", "replica_scaling_per_doubling"]


@given(base=st.sampled_from([FINETUNE, SERVING, PRETRAIN]),
       overrides=st.dictionaries(st.sampled_from(_OVERRIDES), st.sampled_from(_OVERRIDE_VALUES), min_size=1, max_size=4),
       objective=st.sampled_from(["cost", "time"]))
@settings(max_examples=60, deadline=None)
def test_any_overrides_are_chosen_refused_or_infeasible_never_a_traceback(base, overrides, objective):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "w.yaml"
        path.write_text(yaml.safe_dump(changed(base, None, assumptions=overrides)))
        result = run("choose", path, "--objective", objective)
    assert result.exception is None or isinstance(result.exception, SystemExit), (overrides, repr(result.exception))
    assert result.exit_code in (0, 2, 3), (overrides, result.exit_code, result.stderr[-400:])


# ---------------------------------------------------------------- single-host TPU slices (v6e-8) end to end

def test_a_single_host_tpu_pool_is_priced_by_its_own_chips():
    # Before: ct6e-standard-8t is no offering's machine type (gcp-tpu-v6e lists ct6e-standard-4t), so the pool was
    # not an accelerator pool at all and a pinned 9 x v6e-8 plan read "the program builds 0 node pools".
    from accel.policies.catalog import load_catalog
    from accel.policies.cloud.pricing import price_resource

    inputs = {"location": "us-east5", "nodeCount": 9, "nodeConfig": {"machineType": "ct6e-standard-8t"}}
    priced = price_resource("gcp:container/nodePool:NodePool", "serve", inputs, load_catalog())
    on_demand = load_catalog().offering("gcp-tpu-v6e").prices("us-east5", False)[0].usd
    assert priced.kind == "accelerator-pool" and priced.chips == 72
    assert priced.hourly_usd == pytest.approx(72 * on_demand)


def test_the_fastest_70b_serving_answer_pins_plans_and_schedules(tmp_path, monkeypatch):
    # `accel choose examples/llama-70b-inference.yaml --objective time` answers 9 x v6e-8 (single-host slices);
    # before, its stack exited 2 at `accel plan` (0 node pools priced) and `accel job` (no gke-tpu-topology label,
    # 4 chips per ct6e-standard-8t node where it has 8).
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    monkeypatch.chdir(tmp_path)
    chosen = run("choose", ROOT / "examples" / "llama-70b-inference.yaml", "--objective", "time",
                 "--write-stack", "serve")
    assert chosen.exit_code == 0, chosen.stderr[-600:]
    assert "v6e-8" in (tmp_path / "stacks" / "Pulumi.serve.yaml").read_text()
    planned = run("plan", "-s", "serve")
    assert planned.exit_code == 0, planned.stderr[-800:]
    job = run("job", "-s", "serve", "-o", tmp_path / "job.yaml")
    assert job.exit_code == 0 and "schedulable" in job.stderr, job.stderr[-800:]


def test_an_integer_of_thousands_of_digits_is_refused_in_the_users_words(tmp_path):
    # Before: "... value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit", Python's advice
    # to a programmer, not to someone writing a workload file.
    path = tmp_path / "w.yaml"
    path.write_text(f"name: x\nkind: pretrain\nmodel: {{parameters: {'9' * 5000}}}\ntraining: {{tokens: 1T}}\n")
    result = run("choose", path)
    assert_refused(result, str(path), "a number with more than")
    assert "sys.set_int_max_str_digits" not in result.stderr


# ---------------------------------------------------------------- an output that is one of the command's inputs

def test_job_refuses_to_write_its_manifests_over_the_stack_file(tmp_path):
    # Before: `accel job -s dev-spot -o stacks/Pulumi.dev-spot.yaml` replaced the stack's config with a JobSet, exit 0.
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py", "stacks/Pulumi.dev-spot.yaml"):
        (project / name).write_text((ROOT / name).read_text())
    stack = project / "stacks" / "Pulumi.dev-spot.yaml"
    before = stack.read_text()
    assert_refused(run("job", "-s", "dev-spot", "-C", project, "-o", stack), "is the stack file this command reads")
    assert stack.read_text() == before


@pytest.mark.parametrize("slot", ["preview", "--plan", "--base-plan"])
def test_review_refuses_to_write_its_comment_over_an_input(tmp_path, slot):
    inputs = {name: tmp_path / name for name in ("preview_create.json", "plan_head.json", "plan_base.json")}
    for name, path in inputs.items():
        path.write_text((REVIEW / name).read_text())
    target = {"preview": inputs["preview_create.json"], "--plan": inputs["plan_head.json"],
              "--base-plan": inputs["plan_base.json"]}[slot]
    before = target.read_text()
    result = run("review", inputs["preview_create.json"], "--plan", inputs["plan_head.json"],
                 "--base-plan", inputs["plan_base.json"], "-o", target)
    assert_refused(result, "this command reads")
    assert target.read_text() == before


@pytest.mark.parametrize("text, words", [("name: 5\nruntime: python\n", "name: expected the project's name as text, got 5"),
                                         ("runtime: python\n", "name: missing")])
def test_a_project_file_whose_name_is_not_text_says_so(tmp_path, text, words):
    # Before: `name: 5` read "name: missing", which it is not.
    (tmp_path / "Pulumi.yaml").write_text(text)
    assert_refused(run("plan", "-s", "dev-spot", "-C", tmp_path), words)


# ================================================================ the audit's leftovers (2026-11-27, second wave)

def plan_with(tmp_path: Path, **config):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())
    stack["config"].update(config)
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump(stack))
    return run("plan", "--config", path, "-C", ROOT)


# ---------------------------------------------------------------- accel:upgradePause and GKE's exclusion rule

def test_an_upgrade_pause_gke_would_refuse_is_refused_at_plan_time(tmp_path):
    # Before: a 72-year pause planned with exit 0; GKE refuses an exclusion past its version's end of support.
    pause = {"start": "2026-11-27T00:00:00Z", "end": "2098-11-27T00:00:00Z"}
    assert_refused(plan_with(tmp_path, **{"accel:upgradePause": pause}), "accel:upgradePause", "14 months",
                   "end the pause by")


def test_a_month_long_upgrade_pause_plans(tmp_path):
    from datetime import datetime, timedelta, timezone

    start = datetime.now(timezone.utc).replace(microsecond=0)
    pause = {"start": start.isoformat(), "end": (start + timedelta(days=30)).isoformat()}
    result = plan_with(tmp_path, **{"accel:upgradePause": pause})
    assert result.exit_code == 0, result.stderr[-600:]


@pytest.mark.parametrize("channel, months", [("REGULAR", 14), ("STABLE", 14), ("EXTENDED", 24)])
def test_an_upgrade_pause_may_last_until_the_channel_s_end_of_support_and_no_later(channel, months):
    from datetime import datetime, timedelta, timezone

    from accel.policies.cloud.gke_rules import upgrade_pause_problem

    now = datetime(2026, 11, 27, 1, 0, tzinfo=timezone.utc)
    last = now.replace(year=now.year + (10 + months) // 12, month=(10 + months) % 12 + 1)
    assert upgrade_pause_problem(now, last, now=now, channel=channel) is None
    assert f"{months} months" in upgrade_pause_problem(now, last + timedelta(days=2), now=now, channel=channel)
    # the other rules of the window, each caught
    assert "after start" in upgrade_pause_problem(now, now, now=now, channel=channel)
    assert "time zone" in upgrade_pause_problem(now.replace(tzinfo=None), last, now=now, channel=channel)


# ---------------------------------------------------------------- machine counts no cluster can use

@pytest.mark.parametrize("row", [
    dict(RESERVED, count=10 ** 30),  # before: exit 0, "reserved: 'a3-held' (1000...0 x a3-highgpu-8g" ranked
    dict(RESERVED, count=65_001),
    {"name": "cud-a3", "kind": "committed-use", "machineType": "a3-highgpu-8g", "count": 10 ** 30,
     "region": "us-central1", "discount": 0.3},
])
def test_a_count_larger_than_any_cluster_is_refused_naming_the_entry(tmp_path, row):
    assert_refused(choose_with_reservations(tmp_path, [row]), "0.count", "at most 65,000", "gke-scalability")


def test_a_count_at_the_largest_cluster_is_accepted():
    from accel.policies.cloud.reservations import DeclaredReservation

    assert DeclaredReservation.model_validate(dict(RESERVED, count=65_000)).count == 65_000


def test_a_stack_s_reservation_count_past_any_cluster_is_refused_at_plan_time(tmp_path):
    row = {"name": "a3-held", "machineType": "a3-megagpu-8g", "count": 10 ** 30, "zone": "us-east4-a"}
    assert_refused(plan_with(tmp_path, **{"accel:reservations": [row]}), "accel:reservations", "at most 65,000")


# ---------------------------------------------------------------- as_of dates still to come

@pytest.mark.parametrize("name, text, field", [
    # before: exit 0, a price "read" in 2030 ranked beside the bundled ones
    ("price.yaml", "prices:\n  - {offering: gcp-a3-highgpu-8g, region: us-central1, on_demand: 10.0, "
                   "source: our sheet, as_of: 2030-01-01}\n", "on_demand.as_of"),
    ("header.yaml", "version: acme\nas_of: 2099-05-01\nprices:\n  - {offering: gcp-a3-highgpu-8g, on_demand: 10.0, "
                    "source: our sheet, as_of: 2026-11-01}\n", "as_of"),
    ("source.yaml", "sources:\n  ours: {title: our sheet, page: sheet.xlsx, as_of: 2031-02-03}\nprices:\n"
                    "  - {offering: gcp-a3-highgpu-8g, on_demand: 10.0, source: ours}\n", "sources.ours.as_of"),
    ("prices.csv", "offering,region,on_demand_usd_per_chip_hour,spot_usd_per_chip_hour,source,as_of\n"
                   "gcp-a3-highgpu-8g,us-central1,10.0,,our sheet,2030-01-01\n", "as_of"),
])
def test_an_as_of_date_still_to_come_is_refused_naming_it(tmp_path, name, text, field):
    path = tmp_path / name
    path.write_text(text)
    assert_refused(run("choose", ROOT / "examples" / "llama-8b-finetune-cuda.yaml", "--catalog", path),
                   field, "is in the future")


def test_a_price_read_today_is_accepted(tmp_path):
    from datetime import date

    path = tmp_path / "price.yaml"
    path.write_text("prices:\n  - {offering: gcp-a3-highgpu-8g, region: us-central1, on_demand: 10.0, "
                    f"source: our sheet, as_of: {date.today().isoformat()}}}\n")
    result = run("choose", ROOT / "examples" / "llama-8b-finetune-cuda.yaml", "--catalog", path)
    assert result.exit_code == 0, result.stderr[-600:]


# ---------------------------------------------------------------- stack references handed to the Pulumi CLI

@pytest.mark.parametrize("stack, words", [
    ("../x", "its owner '..'"),  # before: "the pulumi CLI is not on PATH", the name never checked
    ("a/b/c/d", "1 to 3 parts"),
    ("", "a stack name is 1 to 100"),
    ("dev run", "a stack name is 1 to 100"),
    ("acme/my project/dev", "its project 'my project'"),
    ("x" * 101, "a stack name is 1 to 100"),
])
def test_destroy_after_run_checks_the_stack_name_before_looking_for_pulumi(stack, words, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no pulumi: the name must be refused first
    assert_refused(run("destroy-after-run", "-s", stack, "--", "true"), "-s/--stack", words)


@given(owner=st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9_-]{1,38}[a-zA-Z0-9]", fullmatch=True),
       project=st.from_regex(r"[A-Za-z0-9_.-]{1,100}", fullmatch=True),
       name=st.from_regex(r"[A-Za-z0-9_.-]{1,100}", fullmatch=True))
def test_every_reference_pulumi_accepts_is_accepted_and_a_bad_part_is_caught(owner, project, name):
    from accel.stack.stack_names import stack_reference_problem

    for reference in (name, f"{owner}/{name}", f"{owner}/{project}/{name}"):
        assert stack_reference_problem(reference) is None, reference
    assert stack_reference_problem(f"{owner}/{project}/{name} x") is not None
    assert stack_reference_problem(f"-{owner}/{name}") is not None
    assert stack_reference_problem(f"{owner}/{project}/{name}/{name}") is not None


# ---------------------------------------------------------------- owner and cost centre as AWS tag values

def plan_aws_with(tmp_path: Path, **workload_fields):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-finetune-aws.yaml").read_text())
    for document in (stack["config"]["accel:workload"], stack["config"].get("accel:plan", {}).get("workload")):
        if document is not None:
            document.update(workload_fields)
    path = tmp_path / "Pulumi.llama-70b-finetune-aws.yaml"
    path.write_text(yaml.safe_dump(stack))
    return run("plan", "--config", path, "-C", ROOT)


@pytest.mark.parametrize("field, value, words", [
    ("cost_center", "R&D #12!", "not '!' '#' '&'"),  # before: exit 0; AWS refuses the tag at `pulumi up`
    ("owner", "jdoe 🚀", "not '🚀'"),
    ("owner", "aws:team", "prefix aws:"),
    ("owner", "x" * 257, "at most 63"),   # the most a GCP or Kubernetes label holds, and the owner is one
])
def test_an_owner_or_cost_center_aws_refuses_as_a_tag_is_refused_on_an_aws_plan(tmp_path, field, value, words):
    assert_refused(plan_aws_with(tmp_path, **{field: value}), f"accel:workload.{field}", words)


def test_an_owner_aws_takes_plans_on_aws(tmp_path):
    result = plan_aws_with(tmp_path, owner="Jane Doe @ML/infra", cost_center="R+D=12:a_b.c-d")
    assert result.exit_code == 0, result.stderr[-600:]


AWS_TAG_TEXT = st.text(st.one_of(st.characters(categories=["L", "N", "Z"]), st.sampled_from("_.:/=+-@")),
                       max_size=255).filter(lambda v: not v.lower().startswith("aws:"))


@given(value=AWS_TAG_TEXT, bad=st.characters(categories=["P", "S", "C"], exclude_characters="_.:/=+-@"),
       at=st.integers(0, 256))
@settings(max_examples=300, deadline=None)
def test_every_value_aws_s_tag_pattern_takes_is_accepted_and_one_bad_character_is_caught(value, bad, at):
    # AWS's pattern ^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$, at most 256, no aws: prefix (components/tags.py)
    from accel.base.errors import ComponentArgsError
    from accel.components.tags import ResourceTags, aws_tag_value_problem

    assert aws_tag_value_problem(value) is None, value
    broken = value[:at] + bad + value[at:]
    assert repr(bad) in aws_tag_value_problem(broken)
    with pytest.raises(ComponentArgsError, match="ResourceTags.cost_center"):
        ResourceTags(workload="w", stack="s", cost_center=broken).aws_tags()


# ---------------------------------------------------------------- accel choose's text keeps brackets as text

def test_bracketed_text_in_the_options_why_and_rejected_survives_rendering():
    # Before: rich read "[limits.gke_node_pool_max_nodes]" and the like as markup and dropped them from the output.
    import dataclasses
    import io

    from rich.console import Console

    from accel.commands.choose import render
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import choose, make_plan
    from accel.policies.workload import load_workload

    spec = load_workload(str(ROOT / "examples" / "llama-8b-finetune-cuda.yaml"))
    catalog = load_catalog(None)
    choice = choose(spec, catalog, "cost")
    plan = make_plan(spec, choice, catalog)
    options = [o.model_copy(update={"price_source": "our sheet [tab prices]"}) for o in choice.options]
    choice = dataclasses.replace(choice, options=tuple(options) if isinstance(choice.options, tuple) else options,
                                 rejected=[{"offering": "gcp-[x]", "reasons": ["over facts.toml [limits.y] and [bold]"]}])
    plan = plan.model_copy(update={"rationale": ["node pools are capped by facts.toml [limits.gke_node_pool_max_nodes]"]})
    buffer = io.StringIO()
    render(choice, plan, Console(file=buffer, width=400, emoji=False))
    text = buffer.getvalue()
    assert "facts.toml [limits.gke_node_pool_max_nodes]" in text
    assert "gcp-[x]: over facts.toml [limits.y] and [bold]" in text
    assert "our sheet [tab prices]" in text


# ---------------------------------------------------------------- accel:namespace

@pytest.mark.parametrize("namespace", ["Training Jobs!", "a" * 64, "-train", "train-", "train.jobs"])
def test_a_namespace_kubernetes_refuses_is_refused_naming_the_stack_key(tmp_path, namespace):
    # Before: exit 2 naming a component argument ("TrainingStorage.namespace"), not the key the user wrote.
    assert_refused(plan_with(tmp_path, **{"accel:namespace": namespace}), "accel:namespace", "1 to 63 lowercase")


@given(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True))
def test_every_rfc_1123_label_is_a_namespace_the_stack_takes(namespace):
    from accel.stack.settings import StackSettings

    assert StackSettings.model_validate({"namespace": namespace}).namespace == namespace


# ---------------------------------------------------------------- reservation names the cloud cannot have

@pytest.mark.parametrize("row, words", [
    # before: exit 0, 'My Reservation!' ranked; GKE refuses the node pool's reservation affinity at `pulumi up`
    (dict(RESERVED, name="My Reservation!"), "not a Google Cloud reservation name"),
    (dict(RESERVED, name="a3-held-"), "not a Google Cloud reservation name"),
    (dict(RESERVED, name="x" * 64), "not a Google Cloud reservation name"),
    ({"name": "odcr-1", "machineType": "p5.48xlarge", "count": 2, "zone": "us-east-1a"},
     "not an AWS capacity reservation id"),
])
def test_a_reservation_name_its_cloud_cannot_have_is_refused_naming_the_entry(tmp_path, row, words):
    assert_refused(choose_with_reservations(tmp_path, [row]), "0.name", words)


@pytest.mark.parametrize("name", ["a3-held", "projects/acme-ml/reservations/a3-held",
                                  "a3-held/reservationBlocks/block-1",
                                  "a3-held/reservationBlocks/block-1/reservationSubBlocks/sub-2"])
def test_every_form_of_a_gcp_reservation_name_is_taken(name):
    from accel.policies.cloud.reservation_names import reservation_name_problem

    assert reservation_name_problem(name, "gcp") is None
    assert reservation_name_problem(name.upper(), "gcp") is not None


@given(st.from_regex(r"cr-([0-9a-f]{8}|[0-9a-f]{17})", fullmatch=True))
def test_every_ec2_reservation_id_is_taken_and_a_mangled_one_is_not(reservation_id):
    from accel.policies.cloud.reservation_names import reservation_name_problem

    assert reservation_name_problem(reservation_id, "aws") is None
    assert reservation_name_problem(reservation_id + "0", "aws") is not None
    assert reservation_name_problem(reservation_id.replace("cr-", "cr_"), "aws") is not None


# ---------------------------------------------------------------- amounts and dates past any real stack

def test_a_savings_plan_commitment_past_any_cloud_bill_is_refused(tmp_path):
    # Before: exit 0, "$1,000,000,000,...,000.00/h committed" priced an option.
    row = "- {name: 5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f, kind: savings-plan, plan: compute, hourlyCommitmentUsd: 1e300, discount: 0.3}\n"
    assert_refused(choose_with_reservations(tmp_path, row), "0.hourlyCommitmentUsd", "10000000")


def test_an_expiry_further_off_than_the_longest_ttl_is_refused(tmp_path):
    # Before: exit 0 for accel:expiresAt 9999-12-31 although accel:ttl stops at ten years; never reaped.
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())
    stack["config"].pop("accel:ttl")
    stack["config"]["accel:expiresAt"] = "9999-12-31T00:00:00Z"
    stack["config"]["pulumi:tags"] = {"accel:ephemeral": "true", "accel:expires-at": "9999-12-31T00:00:00Z"}
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump(stack))
    assert_refused(run("plan", "--config", path, "-C", ROOT), "accel:expiresAt", "3,660 days")


# ---------------------------------------------------------------- the new bounds, over open inputs

@given(days=st.integers(1, 5000), start_offset=st.integers(-400, 400))
@settings(max_examples=200, deadline=None)
def test_an_upgrade_pause_is_taken_exactly_when_it_ends_within_14_months(days, start_offset):
    from datetime import datetime, timedelta, timezone

    from accel.policies.cloud.gke_rules import upgrade_pause_problem

    now = datetime(2026, 11, 27, 1, 0, tzinfo=timezone.utc)
    start = now + timedelta(days=start_offset)
    end = start + timedelta(days=days)
    problem = upgrade_pause_problem(start, end, now=now, channel="REGULAR")
    if end <= datetime(2028, 1, 28, 1, 0, tzinfo=timezone.utc):  # 14 calendar months and the day's grace
        assert problem is None, problem
    else:
        assert "14 months" in problem


@given(count=st.integers(1, 10 ** 40))
@settings(max_examples=200, deadline=None)
def test_a_reservation_count_is_taken_exactly_up_to_the_largest_cluster(count):
    from pydantic import ValidationError

    from accel.policies.cloud.reservations import DeclaredReservation

    try:
        DeclaredReservation.model_validate(dict(RESERVED, count=count))
    except ValidationError as error:
        assert count > 65_000 and "at most 65,000" in str(error)
    else:
        assert count <= 65_000


@pytest.mark.parametrize("cidrs, index", [(["0.0.0.0/0"], 0), (["8.8.8.0/24", "::/0"], 1)])
def test_a_world_open_api_allowlist_on_gke_is_refused_naming_the_stack_key(tmp_path, cidrs, index):
    # Before: exit 2 naming "GkeCluster.master_authorized_cidrs[0]", a component argument the user never wrote.
    assert_refused(plan_with(tmp_path, **{"accel:apiAccessCidrs": cidrs}), f"accel:apiAccessCidrs[{index}]",
                   "whole internet")
