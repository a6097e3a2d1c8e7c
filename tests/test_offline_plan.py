"""`accel plan`: the stack program runs on the mock engine with the stack's config, and is reported.

__main__.py of the real project is written elsewhere, so these tests plan small throwaway
projects made in tmp_path: a Pulumi.yaml, a stack file and a program declaring GCP resources.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from accel.commands import plan as plan_command
from accel.base.errors import UsageError
from accel.offline_plan import GUARDRAILS_MODULE, plan_stack

ROOT = Path(__file__).resolve().parent.parent

PROJECT_YAML = """\
name: demo
runtime: {name: python}
stackConfigDir: stacks
config:
  demo:owner:
    type: string
    default: ml-team
  zones:
    type: integer
    default: 2
"""

STACK_YAML = """\
config:
  demo:workload:
    name: tiny
    chips: 8
  demo:password:
    secure: AAABAJxSomethingEncrypted
  gcp:project: my-project
"""

# Reads config, declares a network and a protected, retained bucket under a component, exports cost.
GCP_PROGRAM = """\
import pulumi
import pulumi_gcp as gcp

config = pulumi.Config()
workload = config.require_object("workload")


class Storage(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("accel:test:Storage", name, None, opts)
        gcp.storage.Bucket(f"{name}-checkpoints", location="US",
                           labels={"owner": config.get("owner")},
                           opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True))
        self.register_outputs({})


gcp.compute.Network("net", auto_create_subnetworks=False)
Storage("store")
pulumi.export("workloadName", workload["name"])
pulumi.export("zones", config.get_int("zones"))
pulumi.export("password", config.get("password"))
pulumi.export("plan", {"chosen": {"accelerator": "tpu-v5p", "chips": workload["chips"]}, "rationale": ["cheapest"]})
pulumi.export("hourlyUsd", 4.2 * workload["chips"])
pulumi.export("runUsd", 4.2 * workload["chips"] * 100)
"""


def make_project(root: Path, program: str = GCP_PROGRAM, stack_yaml: str = STACK_YAML,
                 project_yaml: str = PROJECT_YAML, stack: str = "dev") -> Path:
    (root / "stacks").mkdir(parents=True, exist_ok=True)
    (root / "Pulumi.yaml").write_text(project_yaml)
    (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(stack_yaml)
    (root / "__main__.py").write_text(textwrap.dedent(program))
    return root


@pytest.fixture
def project(tmp_path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def no_guardrails(monkeypatch):
    """Plan as if the guardrail module were absent, whatever the work tree holds today."""
    import accel.offline_plan as offline_plan

    monkeypatch.setattr(offline_plan, "GUARDRAILS_MODULE", "accel.policies.guardrails.not_written_yet")


def fake_guardrails(monkeypatch, violations):
    """Install a stand-in for accel.policies.guardrails.offline that records what it was given."""
    calls = []
    module = types.ModuleType(GUARDRAILS_MODULE)

    def evaluate(resources, pack_config, stack_tags=None):
        calls.append((resources, pack_config))
        tags_seen.append(stack_tags)
        return violations

    tags_seen: list = []
    module.evaluate = evaluate
    module.tags_seen = tags_seen
    monkeypatch.setitem(sys.modules, GUARDRAILS_MODULE, module)
    return calls


def cli() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)

    @app.callback()
    def main() -> None:
        """accel"""

    plan_command.register(app)
    return app


def invoke(*args: str):
    return CliRunner().invoke(cli(), ["plan", *args])


# ---- running the program --------------------------------------------------------------------

def test_program_reads_the_merged_namespaced_config(project):
    result = plan_stack("dev", None, project)
    assert result.capture.outputs["workloadName"] == "tiny"
    assert result.capture.outputs["zones"] == 2  # bare `zones` default from Pulumi.yaml
    bucket = result.capture.named("store-checkpoints")
    assert bucket.inputs["labels"] == {"owner": "ml-team"}  # `demo:owner` default


def test_secrets_reach_the_program_as_placeholders(project):
    result = plan_stack("dev", None, project)
    assert result.capture.outputs["password"] == "[secret]"


def test_every_resource_is_captured_with_parent_protect_and_retain(project):
    result = plan_stack("dev", None, project)
    component = result.capture.named("store")
    bucket = result.capture.named("store-checkpoints")
    network = result.capture.named("net")
    assert bucket.parent == component.urn
    assert network.parent is None
    assert (bucket.protect, bucket.retain_on_delete) == (True, True)
    assert (network.protect, network.retain_on_delete) == (False, False)
    assert result.capture.by_type() == {"accel:test:Storage": 1, "gcp:compute/network:Network": 1,
                                         "gcp:storage/bucket:Bucket": 1}


def test_cost_and_plan_come_from_the_stack_outputs(project):
    result = plan_stack("dev", None, project)
    assert result.hourly_usd == pytest.approx(33.6)
    assert result.run_usd == pytest.approx(3360.0)
    assert result.plan == {"chosen": {"accelerator": "tpu-v5p", "chips": 8}, "rationale": ["cheapest"]}


def test_a_program_that_exports_no_cost_reports_none(tmp_path):
    project = make_project(tmp_path, program="import pulumi\npulumi.export('other', 1)\n")
    result = plan_stack("dev", None, project)
    assert (result.hourly_usd, result.run_usd, result.plan) == (None, None, None)


def test_the_stack_file_can_be_named_directly(project, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "Pulumi.staging.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(STACK_YAML.replace("name: tiny", "name: other"))
    result = plan_stack(None, elsewhere, project)
    assert result.stack == "staging"
    assert result.capture.outputs["workloadName"] == "other"


def test_json_has_the_design_shape(project, no_guardrails):
    document = plan_stack("dev", None, project).to_json()
    assert {"stack", "resources", "summary", "cost", "plan", "policy"} <= set(document)
    assert document["stack"] == "dev"
    assert document["summary"] == {"by_type": {"accel:test:Storage": 1, "gcp:compute/network:Network": 1,
                                               "gcp:storage/bucket:Bucket": 1}, "count": 3}
    assert {"hourly_usd", "run_usd", "pinned", "built", "drift"} <= set(document["cost"])
    assert document["policy"]["violations"] == []
    for resource in document["resources"]:
        assert {"type", "name", "parent", "inputs", "retain_on_delete", "protect"} <= set(resource)
    json.dumps(document)  # serializable as is


# ---- user errors become exit 2, bugs keep their traceback -----------------------------------

def test_a_component_args_error_from_the_program_names_the_stack_file(tmp_path):
    program = ("from accel.base.errors import ComponentArgsError\n"
               "raise ComponentArgsError('topology 3x3x3: v5p has no such shape')\n")
    project = make_project(tmp_path, program=program)
    with pytest.raises(UsageError) as caught:
        plan_stack("dev", None, project)
    assert str(caught.value).endswith("stacks/Pulumi.dev.yaml: topology 3x3x3: v5p has no such shape")
    assert caught.value.exit_code == 2


def test_a_missing_required_key_names_file_and_key(tmp_path):
    project = make_project(tmp_path, stack_yaml="config:\n  gcp:project: p\n")
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: demo:workload: missing"):
        plan_stack("dev", None, project)


def test_a_pydantic_error_in_the_program_names_the_field(tmp_path):
    program = """\
        import pulumi
        from pydantic import BaseModel, ConfigDict
        class Workload(BaseModel):
            model_config = ConfigDict(extra="forbid")
            name: str
            chips: int
        Workload.model_validate(pulumi.Config().require_object("workload"))
    """
    stack_yaml = "config:\n  demo:workload: {name: tiny, chips: 8, chipz: 9}\n"
    project = make_project(tmp_path, program=program, stack_yaml=stack_yaml)
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: Workload\.chipz: unknown key 'chipz'"):
        plan_stack("dev", None, project)


def test_a_shape_error_from_the_policies_is_a_user_error(tmp_path):
    program = """\
        from accel.policies.hardware.shapes import check_topology
        check_topology("v5p", "3x3x3")
    """
    project = make_project(tmp_path, program=program)
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: TPU v5p has no topology '3x3x3'"):
        plan_stack("dev", None, project)


def test_a_bug_in_the_program_propagates_unchanged(tmp_path):
    project = make_project(tmp_path, program="len(None)\n")
    with pytest.raises(TypeError):
        plan_stack("dev", None, project)


def test_a_bad_stack_file_is_a_usage_error_before_the_program_runs(tmp_path):
    project = make_project(tmp_path, stack_yaml="config:\n  deom:workload: {}\n",
                           program="raise RuntimeError('must not run')\n")
    with pytest.raises(UsageError, match=r"deom:workload: unknown namespace 'deom'; did you mean 'demo:workload'"):
        plan_stack("dev", None, project)


def test_a_policy_config_that_is_a_directory_says_so(project):
    with pytest.raises(UsageError, match=r"stacks: is a directory; expected a policy config file \(YAML or JSON\)"):
        plan_stack("dev", None, project, policy_config=project / "stacks")


# ---- guardrails -------------------------------------------------------------------------------

def test_without_the_guardrail_module_no_violations_are_reported_and_it_says_so(project, no_guardrails):
    result = plan_stack("dev", None, project)
    assert result.violations == []
    assert not result.guardrails_evaluated
    assert "not installed" in result.guardrails_note
    assert result.exit_code == 0


def test_guardrails_get_the_captured_resources_and_the_pack_config(project, monkeypatch, tmp_path):
    calls = fake_guardrails(monkeypatch, [])
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("max-hourly-usd: {limit: 100}\n")
    result = plan_stack("dev", None, project, policy_config=policy_file)
    resources, pack_config = calls[0]
    # Sorted: the mock engine registers sibling resources from worker threads, in no fixed order.
    assert sorted(r["name"] for r in resources) == ["net", "store", "store-checkpoints"]
    assert pack_config == {"max-hourly-usd": {"limit": 100}}
    assert result.guardrails_evaluated


def test_guardrails_see_the_stack_files_pulumi_tags_as_the_stacks_tags(tmp_path, monkeypatch):
    project = make_project(tmp_path, stack_yaml=STACK_YAML + "  pulumi:tags:\n    accel:environment: development\n")
    fake_guardrails(monkeypatch, [])
    plan_stack("dev", None, project)
    assert sys.modules[GUARDRAILS_MODULE].tags_seen == [{"accel:environment": "development"}]


def test_a_mandatory_violation_makes_exit_code_4(project, monkeypatch):
    fake_guardrails(monkeypatch, [{"policy": "checkpoint-retained", "level": "mandatory",
                                   "resource": "store-checkpoints", "message": "must be retained"}])
    assert plan_stack("dev", None, project).exit_code == 4


def test_an_advisory_violation_keeps_exit_code_0(project, monkeypatch):
    fake_guardrails(monkeypatch, [{"policy": "labels", "level": "advisory", "resource": "net",
                                   "message": "no owner label"}])
    assert plan_stack("dev", None, project).exit_code == 0


# ---- provider imports ----------------------------------------------------------------------------

def test_a_gcp_only_stack_never_imports_pulumi_aws(project):
    # A fresh interpreter: in this one, other tests may have imported every provider already.
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT)!r})
        from accel.offline_plan import plan_stack
        messages = []
        result = plan_stack("dev", None, {str(project)!r}, progress=messages.append)
        print(json.dumps({{"loaded": result.providers_loaded, "used": result.providers_used,
                           "aws_in_sys_modules": "pulumi_aws" in sys.modules, "messages": messages}}))
    """)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                               timeout=300)
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["aws_in_sys_modules"] is False
    assert report["loaded"] == ["pulumi_gcp"]  # the check can fail: GCP did load
    assert report["used"] == ["gcp"]
    assert "loading pulumi_gcp" in report["messages"]


# ---- the command ---------------------------------------------------------------------------------

def test_json_flag_prints_only_the_json_document(project, no_guardrails):
    outcome = invoke("--cwd", str(project), "-s", "dev", "--json")
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout)
    assert document["stack"] == "dev"
    assert (document["cost"]["hourly_usd"], document["cost"]["run_usd"]) == (pytest.approx(33.6), pytest.approx(3360.0))


def test_human_output_shows_tree_counts_cost_and_guardrail_state(project, no_guardrails):
    outcome = invoke("--cwd", str(project), "-s", "dev")
    assert outcome.exit_code == 0, outcome.output
    text = outcome.stdout
    assert "store-checkpoints" in text and "(protect, retain)" in text
    assert "gcp:storage/bucket:Bucket" in text
    assert "$33.60/h" in text and "$3,360.00 per run" in text
    assert "not evaluated" in text


def test_mandatory_violations_exit_4_after_printing(project, monkeypatch):
    fake_guardrails(monkeypatch, [{"policy": "checkpoint-retained", "level": "mandatory",
                                   "resource": "store-checkpoints", "message": "must be retained"}])
    outcome = invoke("--cwd", str(project), "-s", "dev")
    assert outcome.exit_code == 4
    assert "checkpoint-retained" in outcome.stdout
    assert "mandatory guardrail violation" in outcome.stderr


def test_a_stack_decided_at_plan_time_with_nothing_feasible_exits_3(tmp_path):
    # The contract (docs/contracts.md, exit codes): 3 for nothing feasible, from `accel plan` as from
    # `accel choose`, though the program re-raises the decision's error as a pulumi.RunError.
    stack_file = tmp_path / "Pulumi.dev-spot.yaml"
    original = (ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text()
    stack_file.write_text(original.replace("deadline_days: 2}", "deadline_days: 2, budget_usd: 1}"))
    assert stack_file.read_text() != original
    outcome = invoke("--cwd", str(ROOT), "--config", str(stack_file))
    assert outcome.exit_code == 3, outcome.stderr
    assert "budget" in outcome.stderr and "Traceback" not in outcome.stderr + outcome.stdout


def test_a_bad_stack_file_exits_2_with_file_key_and_reason_and_no_traceback(tmp_path):
    project = make_project(tmp_path, stack_yaml="config:\n  demo:workload: {name: [unclosed\n")
    outcome = invoke("--cwd", str(project), "-s", "dev")
    assert outcome.exit_code == 2
    assert "Pulumi.dev.yaml" in outcome.stderr and "line 3" in outcome.stderr
    assert "Traceback" not in outcome.stderr + outcome.stdout


def test_a_mistyped_stack_exits_2_with_the_closest_stack_and_the_list(project):
    outcome = invoke("--cwd", str(project), "-s", "dve")
    assert outcome.exit_code == 2
    assert "no stack 'dve' in this project; did you mean 'dev'?\navailable stacks: dev\n" in outcome.stderr
    assert "Traceback" not in outcome.stderr + outcome.stdout


def test_a_stack_name_with_a_path_separator_exits_2_before_anything_is_read(project):
    outcome = invoke("--cwd", str(project), "-s", "../stacks/Pulumi.dev")
    assert outcome.exit_code == 2
    assert outcome.stderr.startswith("error: -s/--stack: '../stacks/Pulumi.dev' is not a stack name")


def test_piped_human_output_is_wide_enough_that_names_do_not_wrap(tmp_path, no_guardrails, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    name = "llama-70b-tpu-nodes-container-defaultnodeserviceaccount"  # a real name from the TPU stack
    program = GCP_PROGRAM.replace('gcp.compute.Network("net"', f'gcp.compute.Network("{name}"')
    monkeypatch.chdir(make_project(tmp_path, program=program))
    outcome = invoke("-s", "dev")
    assert outcome.exit_code == 0, outcome.output
    # CliRunner's stdout is not a terminal, as in CI logs and pipes; 80 columns would break this line.
    assert f"{name} gcp:compute/network:Network" in outcome.stdout
    assert outcome.stdout.startswith("accel plan · stack dev (stacks/Pulumi.dev.yaml) · mock engine, preview\n")


def test_columns_in_the_environment_still_sets_the_width(tmp_path, no_guardrails, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    outcome = invoke("--cwd", str(make_project(tmp_path)), "-s", "dev")
    assert outcome.exit_code == 0, outcome.output
    assert max(len(line) for line in outcome.stdout.splitlines()) <= 60


def test_without_a_stack_the_default_example_stack_is_planned(project):
    outcome = invoke("--cwd", str(project))
    assert outcome.exit_code == 2
    assert "stacks/Pulumi.llama-70b-tpu.yaml: file not found" in outcome.stderr


def test_a_pack_config_the_guardrails_reject_exits_2_naming_the_file(project, monkeypatch, tmp_path):
    class PolicyConfigError(ValueError):
        pass

    module = types.ModuleType(GUARDRAILS_MODULE)
    module.PolicyConfigError = PolicyConfigError

    def evaluate(resources, pack_config, stack_tags=None):
        raise PolicyConfigError("no-such-policy: no such policy in the pack")

    module.evaluate = evaluate
    monkeypatch.setitem(sys.modules, GUARDRAILS_MODULE, module)
    policy_file = tmp_path / "policy.json"
    policy_file.write_text('{"no-such-policy": {}}')
    with pytest.raises(UsageError, match=r"policy\.json: no-such-policy: no such policy in the pack"):
        plan_stack("dev", None, project, policy_config=policy_file)


def test_a_pulumi_run_error_is_shown_as_its_message(tmp_path):
    program = "import pulumi\nraise pulumi.RunError('demo:workload.chips: must be a multiple of 4 (got 6)')\n"
    project = make_project(tmp_path, program=program)
    with pytest.raises(UsageError, match=r"Pulumi\.dev\.yaml: demo:workload\.chips: must be a multiple of 4"):
        plan_stack("dev", None, project)


def test_a_plain_value_error_is_a_bug_and_keeps_its_traceback(tmp_path):
    project = make_project(tmp_path, program="raise ValueError('math domain error')\n")
    with pytest.raises(ValueError, match="math domain error"):
        plan_stack("dev", None, project)


def test_errors_blame_the_file_given_with_config_not_the_conventional_one(tmp_path):
    # Programs name stacks/Pulumi.<stack>.yaml, as the CLI would read it; --config read another file.
    program = ("from accel.base.errors import UsageError\n"
               "raise UsageError('stacks/Pulumi.staging.yaml: demo:workload.name: too long')\n")
    project = make_project(tmp_path / "project", program=program)
    elsewhere = tmp_path / "review" / "Pulumi.staging.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(STACK_YAML)
    with pytest.raises(UsageError) as caught:
        plan_stack(None, elsewhere, project)
    assert str(caught.value) == f"{elsewhere}: demo:workload.name: too long"


# ---- the accel command line as installed -------------------------------------------------------

@pytest.fixture
def accel_cli():
    from accel.cli import _register_commands, app

    _register_commands()
    return lambda *args: CliRunner().invoke(app, list(args))


def test_version_is_the_installed_package_version(accel_cli):
    from importlib.metadata import version

    outcome = accel_cli("--version")
    assert outcome.exit_code == 0
    assert outcome.stdout == f"accel {version('accel')}\n"


@pytest.mark.parametrize("command", [[], ["plan"], ["review"], ["reap"], ["destroy-after-run"]])
def test_help_shows_metavars_not_python_type_names(accel_cli, command):
    outcome = accel_cli(*command, "--help")
    assert outcome.exit_code == 0, outcome.output
    assert "--help" in outcome.stdout
    for type_name in ("<bool>", "<str>", "<int range>", "<float range>"):
        assert type_name not in outcome.stdout


def test_plan_help_names_what_each_option_takes(accel_cli):
    text = accel_cli("plan", "--help").stdout
    for option, metavar in (("--stack", "STACK"), ("--config", "FILE"), ("--policy-config", "FILE"), ("--cwd", "DIR")):
        line = next(line for line in text.splitlines() if option + " " in line)
        assert metavar in line.split()


def test_registering_the_commands_twice_keeps_one_of_each(accel_cli):
    from accel.cli import _register_commands, app

    _register_commands()
    names = [info.name for info in app.registered_commands]
    assert len(names) == len(set(names))


def test_program_warnings_come_in_one_order_whatever_order_they_were_logged_in():
    """A warning naming a resource is logged when its URN resolves, which varies run to run; the plan lists
    them in one order (numbers compared as numbers) so a plan and a review's before/after do not churn."""
    import logging
    import random

    from accel.offline_plan import _ProgramWarnings

    texts = [f"cluster-gpu-{n}: channel keeps auto-upgrade on" for n in (0, 2, 10, 12)] + ["assumption: labels"]
    orders = set()
    for seed in range(6):
        shuffled = random.Random(seed).sample(texts, len(texts))
        collector = _ProgramWarnings(stack_words=False)
        for text in shuffled + shuffled[:2]:      # a repeat is listed once
            collector.emit(logging.LogRecord("pulumi", logging.WARNING, __file__, 0, text, None, None))
        orders.add(tuple(collector.in_order()))
    assert orders == {("assumption: labels", "cluster-gpu-0: channel keeps auto-upgrade on",
                       "cluster-gpu-2: channel keeps auto-upgrade on", "cluster-gpu-10: channel keeps auto-upgrade on",
                       "cluster-gpu-12: channel keeps auto-upgrade on")}
