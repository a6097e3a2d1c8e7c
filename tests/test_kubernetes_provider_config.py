"""The stack file's kubernetes:* keys reach a bring-your-own cluster's provider, or the stack is refused naming them.

The provider of a bring-your-own cluster is explicit (components/kubernetes/pools.py existing_cluster_provider), and
an explicit provider reads no stack config (pulumi/pulumi-aws#1307). Before, `kubernetes:context: prod` in a stack
file was dropped without a word: with accel:cluster naming no context the kubeconfig's *current* context was used,
perhaps another cluster than the one named. Table: accel/stack/provider_keys.yaml (kubernetes).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import yaml

from accel.base.errors import UsageError
from accel.stack.provider_config import provider_tables, read_keys
from tests.test_audit_inputs import run
from tests.test_bad_input_battery import assert_refused
from tests.test_provider_config import read

ROOT = Path(__file__).resolve().parents[1]
BYO_STACK = "onprem-gpus"   # accel:cluster with kubeconfig ~/.kube/dc1.yaml and context dc1-admin
GKE_STACK = "dev-spot"      # a GCP plan: accel builds the cluster and its kubeconfig
EKS_STACK = "llama-70b-finetune-aws"


def stack_file(tmp_path: Path, stack: str, cluster: dict | None = None, **keys) -> Path:
    """The stack's file with `keys` added and accel:cluster's fields replaced by `cluster` (None: a field removed)."""
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    for name, value in (cluster or {}).items():
        if value is None:
            document["config"]["accel:cluster"].pop(name)
        else:
            document["config"]["accel:cluster"][name] = value
    document["config"].update(keys)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def byo_provider_inputs(tmp_path: Path, cluster: dict | None = None, **keys) -> dict:
    result = run("plan", "--config", stack_file(tmp_path, BYO_STACK, cluster, **keys), "-C", ROOT, "--json")
    assert result.exit_code == 0, result.stderr[-800:]
    [provider] = [r for r in json.loads(result.stdout)["resources"] if r["type"] == "pulumi:providers:kubernetes"]
    return provider["inputs"]


def with_cluster(stack: str, cluster: dict, **keys):
    raw = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]["accel:cluster"]
    merged = {name: value for name, value in {**raw, **cluster}.items() if value is not None}
    return read(stack, **{"accel:cluster": merged}, **keys)


# ---------------------------------------------------------------- the table is the SDK's

def test_every_kubernetes_key_the_table_names_is_an_argument_of_the_installed_providers_schema():
    import pulumi_kubernetes

    arguments = inspect.signature(pulumi_kubernetes.ProviderArgs.__init__).parameters
    table = provider_tables()["kubernetes"]
    for key in table.keys.values():
        assert key.arg in arguments, key
        head, *rest = key.arg.split("_")
        assert key.name == head + "".join(part.capitalize() for part in rest), key
    assert set(table.refused) <= set(arguments)          # namespace: refused for its own reason
    assert read_keys("kubernetes") == ["kubernetes:kubeconfig", "kubernetes:context", "kubernetes:cluster",
                                       "kubernetes:clusterIdentifier"]


# ---------------------------------------------------------------- rule 1: kubeconfig and context reach the provider

def test_the_stacks_own_cluster_keys_reach_the_provider_as_before(tmp_path):
    inputs = byo_provider_inputs(tmp_path)
    assert inputs["context"] == "dc1-admin"
    assert inputs["kubeconfig"].endswith("/.kube/dc1.yaml")


@pytest.mark.parametrize("field, key, value", [
    ("context", "kubernetes:context", "prod"),
    ("kubeconfig", "kubernetes:kubeconfig", "/etc/kube/prod.yaml"),
])
def test_a_key_accel_cluster_does_not_set_reaches_the_provider(tmp_path, field, key, value):
    # Before: the key was dropped, and the provider used the kubeconfig's current context (or KUBECONFIG's file).
    program = with_cluster(BYO_STACK, {field: None}, **{key: value})
    assert program.cluster_args.kubernetes_provider.args == {field: value}
    assert byo_provider_inputs(tmp_path, {field: None}, **{key: value})[field] == value


def test_the_cluster_and_its_identifier_reach_the_provider(tmp_path):
    keys = {"kubernetes:cluster": "dc1", "kubernetes:clusterIdentifier": "dc1-gpu"}
    assert read(BYO_STACK, **keys).cluster_args.kubernetes_provider.args == {"cluster": "dc1",
                                                                             "cluster_identifier": "dc1-gpu"}
    inputs = byo_provider_inputs(tmp_path, **keys)
    assert (inputs["cluster"], inputs["clusterIdentifier"]) == ("dc1", "dc1-gpu")
    assert inputs["context"] == "dc1-admin"               # accel:cluster's own still there


@pytest.mark.parametrize("key, same", [
    ("kubernetes:context", "dc1-admin"),
    ("kubernetes:kubeconfig", "~/.kube/dc1.yaml"),
])
def test_a_key_that_repeats_accel_cluster_is_accepted_and_changes_nothing(tmp_path, key, same):
    assert read(BYO_STACK, **{key: same}).cluster_args.kubernetes_provider.args == {}
    assert byo_provider_inputs(tmp_path, **{key: same}) == byo_provider_inputs(tmp_path)


def test_a_kubeconfig_written_expanded_is_the_same_file():
    import os

    expanded = os.path.expanduser("~/.kube/dc1.yaml")
    assert read(BYO_STACK, **{"kubernetes:kubeconfig": expanded}).cluster_args.kubernetes_provider.args == {}


@pytest.mark.parametrize("key, field, bad", [
    ("kubernetes:context", "context", "prod"),
    ("kubernetes:kubeconfig", "kubeconfig", "/etc/kube/prod.yaml"),
])
def test_a_key_that_differs_from_accel_cluster_exits_2_naming_both(tmp_path, key, field, bad):
    result = run("plan", "--config", stack_file(tmp_path, BYO_STACK, **{key: bad}), "-C", ROOT)
    assert_refused(result, f"{key}: '{bad}' differs from accel:cluster.{field}", f"accel:cluster.{field} and {key}")


def test_a_secret_kubeconfig_stays_a_secret(tmp_path):
    inputs = byo_provider_inputs(tmp_path, {"kubeconfig": None},
                                 **{"kubernetes:kubeconfig": {"secure": "v1:abc:def"}})
    assert inputs["kubeconfig"] == "[secret]"


def test_a_secret_kubeconfig_path_is_expanded_before_it_is_made_a_secret(monkeypatch):
    # Under the CLI a `secure:` kubeconfig arrives decrypted and listed in PULUMI_CONFIG_SECRET_KEYS: its `~` is
    # expanded like a plain one's (before, the secret Output skipped the expansion and the provider got '~/...').
    import os

    from accel.components.kubernetes.pools import existing_cluster_provider_settings

    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["kubernetes:kubeconfig"]))
    args = with_cluster(BYO_STACK, {"kubeconfig": None}, **{"kubernetes:kubeconfig": "~/.kube/prod.yaml"}).cluster_args
    settings = existing_cluster_provider_settings(args.existing_cluster, args.kubernetes_provider)
    assert settings.args["kubeconfig"] == os.path.expanduser("~/.kube/prod.yaml")
    assert settings.args["context"] == "dc1-admin"
    assert settings.secret == {"kubeconfig"}


KUBECONFIG_CONTENTS = ("apiVersion: v1\nkind: Config\nclusters: [{name: dc1, cluster: {server: https://10.0.0.1}}]\n"
                       "users: [{name: admin, user: {token: s3cr3t}}]\n")


@pytest.mark.parametrize("contents", [KUBECONFIG_CONTENTS, json.dumps(yaml.safe_load(KUBECONFIG_CONTENTS))])
def test_a_kubeconfigs_contents_in_plain_text_reach_the_provider_as_a_secret(tmp_path, contents):
    # The contents carry the cluster's credentials (a token, a client key): a secret, like aws:secretKey, even where
    # the stack file has them in plain text. A path is no credential and stays readable in the preview.
    settings = with_cluster(BYO_STACK, {"kubeconfig": None},
                            **{"kubernetes:kubeconfig": contents}).cluster_args.kubernetes_provider
    assert settings.args == {"kubeconfig": contents} and settings.secret == {"kubeconfig"}
    assert byo_provider_inputs(tmp_path, {"kubeconfig": None}, **{"kubernetes:kubeconfig": contents})[
        "kubeconfig"] == "[secret]"
    path = with_cluster(BYO_STACK, {"kubeconfig": None}, **{"kubernetes:kubeconfig": "/etc/kube/prod.yaml"})
    assert path.cluster_args.kubernetes_provider.secret == frozenset()


# ---------------------------------------------------------------- on GKE / EKS accel makes the kubeconfig

@pytest.mark.parametrize("stack", [GKE_STACK, EKS_STACK])
@pytest.mark.parametrize("key", ["kubernetes:kubeconfig", "kubernetes:context", "kubernetes:cluster"])
def test_on_a_plan_that_builds_its_cluster_a_kubernetes_key_exits_2(tmp_path, stack, key):
    read(stack)                                           # the stack itself is good
    path = tmp_path / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    document["config"][key] = "prod"
    path.write_text(yaml.safe_dump(document))
    assert_refused(run("plan", "--config", path, "-C", ROOT), f"{key}: refused on a plan on",
                   "builds its own cluster", f"remove {key}")


# ---------------------------------------------------------------- rule 2: any other key is refused

@pytest.mark.parametrize("key, value, says", [
    ("kubernetes:namespace", "prod", "accel:namespace"),
    ("kubernetes:contxt", "prod", "did you mean 'kubernetes:context'?"),
    ("kubernetes:kubeConfig", "/k", "did you mean 'kubernetes:kubeconfig'?"),
    ("kubernetes:enableServerSideApply", False, "would ignore this key"),
    ("kubernetes:deleteUnreachable", True, "would ignore this key"),
    ("kubernetes:renderYamlToDirectory", "/tmp/out", "would ignore this key"),
])
def test_another_kubernetes_key_exits_2_naming_it(tmp_path, key, value, says):
    result = run("plan", "--config", stack_file(tmp_path, BYO_STACK, **{key: value}), "-C", ROOT)
    assert_refused(result, f"{key}: ", says, f"remove {key}")


@pytest.mark.parametrize("key", ["random:seed", "tls:proxy", "command:dialErrorLimit"])
def test_a_namespace_no_provider_of_the_stack_reads_exits_2(tmp_path, key):
    # Before: accepted by the config reader (a "known provider") and read by nobody.
    result = run("plan", "--config", stack_file(tmp_path, BYO_STACK, **{key: "x"}), "-C", ROOT)
    assert_refused(result, f"{key}: unknown namespace", "no provider of the stack reads it")


def test_no_stack_and_no_doc_example_uses_a_kubernetes_key_that_would_be_refused():
    import re

    read_keys_ = set(read_keys("kubernetes"))
    used = set()
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", *sorted((ROOT / "examples").glob("*")),
                 *sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))]:
        if path.is_file():
            # A YAML line of a stack file, or the command that sets one (not a resource type: kubernetes:yaml/v2:...).
            used |= set(re.findall(r"^\s*(kubernetes:[A-Za-z]+):", path.read_text(), re.MULTILINE))
            used |= set(re.findall(r"config set (?:--path )?'?(kubernetes:[A-Za-z]+)", path.read_text()))
    assert used <= read_keys_, used - read_keys_
    # docs/plan.md's example of a namespaced stack key is one the program reads.
    plan_md = (ROOT / "docs" / "plan.md").read_text()
    assert "`kubernetes:context`" in plan_md and "kubernetes:context" in read_keys_


def test_the_reader_refuses_a_kubernetes_key_directly():
    from accel.stack.provider_config import provider_settings

    plan = read(GKE_STACK).plan
    with pytest.raises(UsageError, match="kubernetes:context: refused on a plan on gcp"):
        provider_settings({"kubernetes:context": "x"}, plan, "stacks/Pulumi.x.yaml")


def test_any_kubernetes_key_outside_the_table_is_refused_naming_it():
    from hypothesis import assume, given, settings, strategies as st

    from accel.stack.provider_config import provider_settings

    plan = read(BYO_STACK).plan

    @given(st.from_regex(r"[a-z][A-Za-z0-9]{0,30}", fullmatch=True))
    @settings(max_examples=200, deadline=None)
    def refused(name):
        key = f"kubernetes:{name}"
        assume(key not in read_keys("kubernetes"))
        with pytest.raises(UsageError) as error:
            provider_settings({key: "x"}, plan, "stacks/Pulumi.x.yaml")
        assert f"stacks/Pulumi.x.yaml: {key}: " in str(error.value) and f"remove {key}" in str(error.value)

    refused()
