"""The guardrail pack as a whole: configuration as the CLI applies it, the offline runner's
report and exit code, and the real PolicyPack answering the analyzer protocol the CLI speaks.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel

from accel.policies.guardrails import offline
from accel.policies.guardrails.rules import PACK_NAME, all_policies
from tests.test_guardrails import gcs_bucket, training_cluster, v5p_slices

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "policies" / "guardrails"


def test_rule_ids_are_unique_kebab_case_with_descriptions_and_levels():
    policies = all_policies()
    assert len({p.name for p in policies}) == len(policies)
    for policy in policies:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", policy.name), policy.name
        assert policy.description and policy.enforcement_level in (EnforcementLevel.MANDATORY,
                                                                    EnforcementLevel.ADVISORY)


def test_every_rule_is_documented():
    text = (ROOT / "docs" / "guardrails.md").read_text()
    missing = [p.name for p in all_policies() if f"`{p.name}`" not in text]
    assert missing == []


def test_loading_the_rules_imports_no_provider_sdk():
    probe = ("import sys, accel.policies.guardrails.offline; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi_gcp', 'pulumi_aws', 'pydantic')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


# --- configuration ----------------------------------------------------------------------


def test_schema_defaults_are_applied_without_any_config():
    level, props = offline.resolve_config(all_policies(), None)["no-open-ingress"]
    assert level == EnforcementLevel.MANDATORY and props == {"allowedPublicPorts": []}


def test_example_config_file_is_valid_and_names_only_real_policies():
    config = offline.load_pack_config(PACK / "policy-config.example.json")
    resolved = offline.resolve_config(all_policies(), config)
    assert resolved["budget-run-limit"][1] == {"maxRunUsd": 3000000, "useWorkloadBudget": True}


def test_a_disabled_rule_reports_nothing():
    graph = [gcs_bucket(retain=False)]
    assert any(v["policy"] == "data-retained-on-delete" for v in offline.evaluate(graph))
    assert not any(v["policy"] == "data-retained-on-delete"
                   for v in offline.evaluate(graph, {"data-retained-on-delete": "disabled"}))


def test_all_sets_every_level_and_a_named_policy_overrides_it():
    graph = [gcs_bucket(retain=False, labels={"data-role": "checkpoint"})]
    violations = offline.evaluate(graph, {"all": "advisory", "ownership-labels": {"enforcementLevel": "mandatory"}})
    levels = {v["policy"]: v["level"] for v in violations}
    assert levels == {"data-retained-on-delete": "advisory", "ownership-labels": "mandatory"}


def test_remediate_is_reported_as_mandatory():
    violations = offline.evaluate([gcs_bucket(retain=False)], {"data-retained-on-delete": "remediate"})
    assert [v["level"] for v in violations if v["policy"] == "data-retained-on-delete"] == ["mandatory"]


@pytest.mark.parametrize("config, expect", [
    ({"budget-run-limt": {}}, "did you mean 'budget-run-limit'?"),
    ({"budget-run-limit": {"maxRunUSD": 1}}, "budget-run-limit.maxRunUSD: unknown setting; did you mean 'maxRunUsd'?"),
    ({"budget-run-limit": {"maxRunUsd": "lots"}}, "budget-run-limit.maxRunUsd: expected number"),
    ({"no-open-ingress": {"allowedPublicPorts": ["https"]}}, "allowedPublicPorts[0]: expected integer"),
    ({"data-no-force-destroy": "strict"}, "enforcement level 'strict' is not one of"),
])
def test_bad_config_is_rejected_with_a_message_naming_the_key(config, expect):
    with pytest.raises(offline.PolicyConfigError, match=re.escape(expect)):
        offline.evaluate([], config)


# --- the offline runner -----------------------------------------------------------------


def test_an_empty_stack_has_no_violations():
    assert offline.evaluate([]) == []


def test_violations_have_the_contract_shape():
    [violation] = [v for v in offline.evaluate([gcs_bucket(retain=False)]) if v["policy"] == "data-retained-on-delete"]
    assert set(violation) == {"policy", "level", "resource", "message"}


def test_a_resource_without_urn_is_reported_by_name():
    bucket = gcs_bucket("nameless", retain=False)
    del bucket["urn"]
    names = {v["resource"] for v in offline.evaluate([bucket]) if v["policy"] == "data-retained-on-delete"}
    assert names == {"nameless"}


def test_report_groups_by_level_mandatory_first():
    text = offline.format_report(offline.evaluate([gcs_bucket(retain=False, labels={"data-role": "checkpoint"})]))
    assert text.index("mandatory (1):") < text.index("advisory (1):")
    assert "[data-retained-on-delete]" in text


def run_module(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accel.policies.guardrails.offline", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_command_exits_4_on_a_mandatory_violation_and_0_when_clean(tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text(json.dumps({"stack": "t", "resources": [gcs_bucket(retain=False)]}))
    good = tmp_path / "clean.json"
    good.write_text(json.dumps([gcs_bucket(retain=True)]))
    failed, passed = run_module(str(bad)), run_module(str(good))
    assert failed.returncode == 4 and "mandatory (1):" in failed.stdout
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_command_exits_2_on_a_bad_config_file(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text("[]")
    config = tmp_path / "config.json"
    config.write_text('{"no-such-rule": "mandatory"}')
    result = run_module(str(plan), "--policy-pack-config", str(config))
    assert result.returncode == 2 and "no-such-rule: no such policy" in result.stderr


# --- the real pack, spoken to as the CLI does -------------------------------------------


@pytest.fixture(scope="module")
def analyzer():
    """Start policies/guardrails the way the CLI does (`python <pack dir>`) and connect to it."""
    process = subprocess.Popen([sys.executable, str(PACK)], cwd=PACK, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline().strip())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


def struct(value: dict) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(value)
    return message


def test_pack_reports_every_rule_with_its_level(analyzer):
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == PACK_NAME
    levels = {p.name: p.enforcementLevel for p in info.policies}
    assert set(levels) == {p.name for p in all_policies()}
    assert levels["data-no-force-destroy"] == analyzer_pb2.MANDATORY
    assert levels["ownership-labels"] == analyzer_pb2.ADVISORY


def test_pack_flags_a_force_destroyed_checkpoint_bucket_in_preview(analyzer):
    bucket = gcs_bucket("ckpt", forceDestroy=True)
    response = analyzer.Analyze(analyzer_pb2.AnalyzeRequest(
        type=bucket["type"], name=bucket["name"], urn=bucket["urn"], properties=struct(bucket["inputs"]),
        options=analyzer_pb2.AnalyzerResourceOptions(protect=False)))
    diagnostics = {d.policyName: d for d in response.diagnostics}
    assert set(diagnostics) == {"data-no-force-destroy"}
    assert diagnostics["data-no-force-destroy"].enforcementLevel == analyzer_pb2.MANDATORY
    assert "gcp:storage/bucket:Bucket 'ckpt' violates data-no-force-destroy" in diagnostics[
        "data-no-force-destroy"].message


def test_pack_prices_the_declared_pools_under_the_budget_config_sent_by_the_cli(analyzer):
    analyzer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={
        "budget-hourly-limit": analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY,
                                                         properties=struct({"maxHourlyUsd": 1000}))}))
    cluster = training_cluster(hourly_usd=80.0)  # the Plan's figure is under the limit; the 40 pools are not
    graph = [*v5p_slices(40), cluster]
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type=r["type"], name=r["name"], urn=r["urn"], properties=struct(r["inputs"]),
                                      options=analyzer_pb2.AnalyzerResourceOptions(protect=False))
        for r in graph]))
    budget = [d for d in response.diagnostics if d.policyName == "budget-hourly-limit"]
    assert len(budget) == 1 and budget[0].urn == cluster["urn"]
    assert "40 accelerator pool(s), 80 node(s), 320 chip(s) declared" in budget[0].message

def test_the_readme_counts_the_rules_the_pack_has():
    stated = re.search(r"CrossGuard policy pack \((\d+) rules", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert stated is not None, "README.md states how many rules the pack has"
    assert int(stated.group(1)) == len(all_policies())
