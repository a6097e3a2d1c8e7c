"""The stack file's aws:* and gcp:* keys reach the stack's explicit providers, or the stack is refused naming the key.

An explicit Pulumi provider reads no aws:* / gcp:* stack config itself (pulumi/pulumi-aws#1307, "by design"); before,
aws:profile, aws:assumeRoles, gcp:impersonateServiceAccount... in a stack file were dropped without a word and the
stack deployed with the default credential chain. Table: accel/stack/provider_keys.yaml.
"""

from __future__ import annotations

import inspect
import json
from functools import lru_cache
from pathlib import Path

import pytest
import yaml
from hypothesis import assume, given, settings, strategies as st

from accel.base.errors import UsageError
from accel.stack.provider_config import provider_tables, read_keys
from tests.test_audit_inputs import run
from tests.test_bad_input_battery import assert_refused

ROOT = Path(__file__).resolve().parents[1]
AWS_STACK = "llama-70b-finetune-aws"   # an AWS plan, pinned, aws:region: us-east-1
GCP_STACK = "dev-spot"                 # a GCP plan, gcp:project only

# A value of the right kind for every key the table reads (what a user would write in the stack file).
GOOD = {
    "aws:profile": "ml-prod",
    "aws:sharedConfigFiles": ["/etc/aws/config"],
    "aws:sharedCredentialsFiles": ["/etc/aws/credentials"],
    "aws:accessKey": "AKIDEXAMPLE",
    "aws:secretKey": "wJalrXUtnFEMIEXAMPLEKEY",
    "aws:token": "session-token",
    "aws:assumeRoles": [{"roleArn": "arn:aws:iam::111122223333:role/deployer", "sessionName": "accel",
                         "externalId": "ext-1", "tags": {"team": "ml"}, "policyArns": ["arn:aws:iam::aws:policy/x"]}],
    "aws:assumeRoleWithWebIdentity": {"roleArn": "arn:aws:iam::111122223333:role/ci",
                                      "webIdentityTokenFile": "/var/run/token"},
    "aws:allowedAccountIds": ["111122223333"],
    "aws:forbiddenAccountIds": ["444455556666"],
    "aws:stsRegion": "us-east-1",
    "aws:endpoints": [{"s3": "https://s3.example.internal"}],
    "aws:useFipsEndpoint": True,
    "gcp:credentials": '{"type": "service_account", "project_id": "acme-ml-dev"}',
    "gcp:accessToken": "ya29.token",
    "gcp:impersonateServiceAccount": "deployer@acme-ml-dev.iam.gserviceaccount.com",
    "gcp:impersonateServiceAccountDelegates": ["hop@acme-ml-dev.iam.gserviceaccount.com"],
    "gcp:billingProject": "acme-billing",
    "gcp:userProjectOverride": True,
    "gcp:scopes": ["https://www.googleapis.com/auth/cloud-platform"],
    "gcp:universeDomain": "googleapis.com",
}
STACK_OF = {"aws": AWS_STACK, "gcp": GCP_STACK}


def stack_file(tmp_path: Path, stack: str, **keys) -> Path:
    document = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    document["config"].update(keys)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def provider_inputs(tmp_path: Path, stack: str, **keys) -> dict:
    result = run("plan", "--config", stack_file(tmp_path, stack, **keys), "-C", ROOT, "--json")
    assert result.exit_code == 0, result.stderr[-800:]
    cloud = "aws" if stack == AWS_STACK else "gcp"
    [provider] = [r for r in json.loads(result.stdout)["resources"] if r["type"] == f"pulumi:providers:{cloud}"]
    return provider["inputs"]


def read(stack: str, **keys):
    from accel.stack.config import encode_value
    from accel.stack.deploy_keys import offline_placeholders
    from accel.stack.program import read_stack

    raw = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    config = {key: encode_value(value) for key, value in {**raw, **keys}.items()}
    with offline_placeholders():
        return read_stack(config, stack)


# ---------------------------------------------------------------- the table is the SDK's

@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_every_key_the_table_reads_is_an_argument_of_the_installed_providers_schema(cloud):
    import pulumi_aws
    import pulumi_gcp

    sdk = {"aws": pulumi_aws.ProviderArgs, "gcp": pulumi_gcp.ProviderArgs}[cloud]
    arguments = inspect.signature(sdk.__init__).parameters
    table = provider_tables()[cloud]
    for key in table.keys.values():
        assert key.arg in arguments, key
        # The stack key is the argument's camelCase name, as the provider's own config spells it.
        head, *rest = key.arg.split("_")
        assert key.name == head + "".join(part.capitalize() for part in rest), key
        assert key.kind in {"string", "strings", "boolean", "mapping", "object", "objects"}, key
    assert set(table.region_keys) <= set(arguments)


def test_every_key_the_table_reads_has_a_good_value_here():
    read = {key for cloud in ("aws", "gcp") for key in read_keys(cloud)}
    own_or_region = {"aws:region", "gcp:region", "gcp:zone", "aws:defaultTags", "gcp:project", "gcp:defaultLabels"}
    assert read - own_or_region == set(GOOD)


# ---------------------------------------------------------------- each key reaches the provider

@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_each_key_reaches_the_providers_arguments_with_its_type(tmp_path, cloud):
    keys = {key: value for key, value in GOOD.items() if key.startswith(cloud + ":")}
    table = provider_tables()[cloud]
    # What the program hands the component: every key, under its ProviderArgs keyword, with its value.
    settings = getattr(read(STACK_OF[cloud], **keys).cluster_args, f"{cloud}_provider")
    assert settings.args == {table.keys[key.partition(":")[2]].arg: value for key, value in keys.items()}
    # What the provider resource is given under the Pulumi mocks (accel plan --json).
    inputs = provider_inputs(tmp_path, STACK_OF[cloud], **keys)
    for key, value in keys.items():
        name = key.partition(":")[2]
        assert name in inputs, (key, sorted(inputs))
        arrived = inputs[name]
        secret = table.keys[name].secret
        if secret:
            assert arrived == "[secret]", (key, arrived)    # a credential never shows in a plan
            continue
        # The SDK sends lists, objects and booleans to the provider as JSON text, strings as they are.
        assert (arrived if isinstance(value, str) else json.loads(arrived)) == value, (key, arrived)


def test_without_these_keys_the_providers_get_only_what_accel_sets(tmp_path):
    # Before: the same as now for every stack in stacks/ (none sets a provider key beyond region and project).
    assert set(provider_inputs(tmp_path, AWS_STACK)) <= {"region", "version", "skipCredentialsValidation",
                                                          "skipMetadataApiCheck", "skipRegionValidation"}
    assert {"profile", "assumeRoles"}.isdisjoint(provider_inputs(tmp_path, AWS_STACK))


def test_a_secure_value_stays_a_secret(tmp_path):
    # aws:profile is no credential, but a stack that keeps it as `secure:` keeps it secret all the way.
    inputs = provider_inputs(tmp_path, AWS_STACK, **{"aws:profile": {"secure": "v1:abc:def"},
                                                     "aws:assumeRoles": [{"roleArn": "arn:aws:iam::1:role/r",
                                                                          "externalId": {"secure": "v1:x:y"}}]})
    assert inputs["profile"] == "[secret]"
    assert inputs["assumeRoles"] == "[secret]"


def test_under_the_cli_a_decrypted_secret_stays_a_secret(monkeypatch):
    # The CLI hands the program decrypted values and lists the secret keys in PULUMI_CONFIG_SECRET_KEYS.
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["aws:profile", "aws:assumeRoles"]))
    roles = [{"roleArn": "arn:aws:iam::111122223333:role/deployer", "externalId": "decrypted"}]
    settings = read(AWS_STACK, **{"aws:profile": "ml-prod", "aws:assumeRoles": roles,
                                  "aws:allowedAccountIds": ["111122223333"]}).cluster_args.aws_provider
    assert settings.args["profile"] == "ml-prod" and settings.args["assume_roles"] == roles
    assert settings.secret == {"profile", "assume_roles"}     # allowed_account_ids was not a secret


def test_a_credential_is_a_secret_even_written_in_plain_text():
    program = read(GCP_STACK, **{"gcp:credentials": "/keys/deployer.json", "gcp:billingProject": "acme-billing"})
    settings = program.cluster_args.gcp_provider
    assert settings.args == {"credentials": "/keys/deployer.json", "billing_project": "acme-billing"}
    assert settings.secret == {"credentials"}


def test_a_web_identity_token_is_a_secret_even_written_in_plain_text():
    # webIdentityToken is an OIDC token, a credential like aws:token; the SDK marks only accessKey, secretKey and
    # token secret (pulumi_aws/provider.py 7.51.1), so the table does it for the object that carries it.
    identity = {"roleArn": "arn:aws:iam::111122223333:role/ci", "webIdentityToken": "eyJhbGciOi.plain.jwt"}
    settings = read(AWS_STACK, **{"aws:assumeRoleWithWebIdentity": identity}).cluster_args.aws_provider
    assert settings.args == {"assume_role_with_web_identity": identity}
    assert settings.secret == {"assume_role_with_web_identity"}


def test_the_other_clouds_keys_are_checked_but_not_handed_to_a_provider_the_plan_does_not_build():
    program = read(GCP_STACK, **{"aws:profile": "ml-prod", "aws:region": "eu-west-1"})
    assert program.cluster_args.gcp_provider.args == {}
    assert program.cluster_args.aws_provider.args == {}
    with pytest.raises(UsageError, match="aws:maxRetries"):
        read(GCP_STACK, **{"aws:maxRetries": 3})


# ---------------------------------------------------------------- wrong kinds name the key

@pytest.mark.parametrize("key, bad, says", [
    ("aws:allowedAccountIds", "111122223333", "aws:allowedAccountIds: expected a list of strings"),
    ("aws:sharedConfigFiles", [1], "aws:sharedConfigFiles: expected a list of strings"),
    ("aws:useFipsEndpoint", "yes", "aws:useFipsEndpoint: expected true or false"),
    ("aws:assumeRoles", {"roleArn": "arn:aws:iam::1:role/r"}, "aws:assumeRoles: expected a list of mappings"),
    ("aws:assumeRoles", [{"rolearn": "arn:aws:iam::1:role/r"}], "aws:assumeRoles[0].rolearn: not a field the provider "
                                                                "takes; did you mean 'roleArn'?"),
    ("aws:assumeRoles", [{"roleArn": "r", "tags": {"a": 1}}], "aws:assumeRoles[0].tags: expected a mapping"),
    ("aws:assumeRoleWithWebIdentity", [{"roleArn": "r"}], "aws:assumeRoleWithWebIdentity: expected a mapping"),
    ("gcp:impersonateServiceAccountDelegates", "a@b", "gcp:impersonateServiceAccountDelegates: expected a list"),
    # The services an endpoint may name are the SDK's ProviderEndpointArgs fields (326 in pulumi-aws 7.51.1).
    ("aws:endpoints", [{"s3x": "http://localhost:4566"}], "aws:endpoints[0].s3x: not a field the provider takes; "
                                                          "did you mean 's3'?"),
    ("aws:endpoints", [{"S3": "http://localhost:4566"}], "aws:endpoints[0].S3: not a field the provider takes"),
    ("aws:endpoints", [{"lambda": 1}], "aws:endpoints[0].lambda: expected a string"),
    ("gcp:userProjectOverride", "maybe", "gcp:userProjectOverride: expected true or false"),
])
def test_a_value_of_the_wrong_kind_exits_2_naming_the_key(tmp_path, key, bad, says):
    stack = STACK_OF[key.partition(":")[0]]
    read(stack, **{key: GOOD[key]})                       # the good value passes
    path = stack_file(tmp_path, stack, **{key: bad})
    assert_refused(run("plan", "--config", path, "-C", ROOT), says)


# ---------------------------------------------------------------- the region comes from the plan

@pytest.mark.parametrize("stack, key, good, bad", [
    (AWS_STACK, "aws:region", "us-east-1", "us-west-2"),
    (GCP_STACK, "gcp:region", None, "europe-west4"),
    (GCP_STACK, "gcp:zone", None, "europe-west4-a"),
])
def test_a_region_key_that_differs_from_the_plans_exits_2_saying_how_to_move_the_plan(tmp_path, stack, key, good,
                                                                                       bad):
    plan = read(stack).plan
    good = good or (plan.region if key == "gcp:region" else plan.zones[0])
    program = read(stack, **{key: good})                  # equal to the plan's: accepted, nothing else changes
    assert program.plan.region == plan.region
    result = run("plan", "--config", stack_file(tmp_path, stack, **{key: bad}), "-C", ROOT)
    assert_refused(result, f"{key}: {bad!r} is not", plan.region,
                   "accel:workload.constraints.regions", "--write-stack")


# ---------------------------------------------------------------- any other key is refused, not dropped

@pytest.mark.parametrize("key, value, hint", [
    ("aws:maxRetries", 5, None),
    ("aws:skipCredentialsValidation", True, None),
    ("aws:Profile", "ml-prod", "did you mean 'aws:profile'?"),
    ("aws:assumeRole", {"roleArn": "r"}, "did you mean 'aws:assumeRoles'?"),
    ("gcp:requestTimeout", "60s", None),
    ("gcp:impersonateServiceAcount", "a@b", "did you mean 'gcp:impersonateServiceAccount'?"),
])
def test_a_provider_key_accel_does_not_hand_over_exits_2_naming_it_and_what_is_read(tmp_path, key, value, hint):
    stack = STACK_OF[key.partition(":")[0]]
    result = run("plan", "--config", stack_file(tmp_path, stack, **{key: value}), "-C", ROOT)
    assert_refused(result, f"{key}: the stack's", "would ignore this key", "profile" if "aws" in key else
                   "impersonateServiceAccount", *([hint] if hint else []))


def test_an_old_stack_with_several_unread_keys_hears_of_all_of_them_at_once(tmp_path):
    # Stack files written for Pulumi's default provider often carry a few tuning keys; one run names every one
    # (before: the first alone, so one run per key), with its closest read key where there is one.
    keys = {"aws:maxRetries": 5, "aws:skipCredentialsValidation": True, "aws:Profile": "ml-prod"}
    result = run("plan", "--config", stack_file(tmp_path, AWS_STACK, **keys), "-C", ROOT)
    assert_refused(result, "aws:Profile, aws:maxRetries, aws:skipCredentialsValidation: the stack's AWS provider "
                           "would ignore these keys", "for aws:Profile did you mean 'aws:profile'?",
                   "remove aws:Profile, aws:maxRetries and aws:skipCredentialsValidation")


def test_no_stack_and_no_doc_example_uses_a_key_that_would_be_refused():
    import re

    read = {key for cloud in ("aws", "gcp") for key in read_keys(cloud)}
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        for key in yaml.safe_load(path.read_text())["config"]:
            if key.partition(":")[0] in ("aws", "gcp"):
                assert key in read, (path.name, key)
    in_docs = set()
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", *sorted((ROOT / "examples").glob("*"))]:
        if path.is_file():
            # A YAML line of a stack file, or the command that sets one.
            in_docs |= set(re.findall(r"^\s*((?:aws|gcp):[A-Za-z]+):", path.read_text(), re.MULTILINE))
            in_docs |= set(re.findall(r"config set (?:--path )?'?((?:aws|gcp):[A-Za-z]+)", path.read_text()))
    assert in_docs and in_docs <= read, in_docs - read


@given(st.from_regex(r"[a-z][A-Za-z0-9]{0,30}", fullmatch=True), st.sampled_from(["aws", "gcp"]))
@settings(max_examples=200, deadline=None)
def test_any_key_outside_the_table_is_refused_naming_it(name, cloud):
    from accel.stack.provider_config import provider_settings

    key = f"{cloud}:{name}"
    assume(key not in read_keys(cloud))
    with pytest.raises(UsageError) as refused:
        provider_settings({key: "x"}, aws_plan(), "stacks/Pulumi.x.yaml")
    assert f"stacks/Pulumi.x.yaml: {key}: the stack's" in str(refused.value)


@lru_cache(maxsize=1)
def aws_plan():
    return read(AWS_STACK).plan


# ---------------------------------------------------------------- a re-pin moves the region key with the plan

def test_pinning_a_plan_in_another_region_moves_the_region_key_with_it_and_says_so(tmp_path):
    # The refusal above tells the user to re-pin; the re-pin must not leave the old region key to be refused next.
    from accel.stack.pin import pin_to_stack_file

    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text("config:\n  # the team's account\n  aws:region: us-east-1\n  aws:profile: ml-prod\n")
    plan = {"cloud": "aws", "region": "us-west-2", "zones": ["us-west-2a"], "chosen": {"spot": False},
            "estimate": {"hours": 10.0}}
    warnings: list[str] = []
    pin_to_stack_file(path, {"name": "w"}, plan, warn=warnings.append)
    written = yaml.safe_load(path.read_text())["config"]
    assert written["aws:region"] == "us-west-2" and written["aws:profile"] == "ml-prod"
    assert "# the team's account" in path.read_text()
    assert warnings == ["aws:region 'us-east-1' set to us-west-2, the new plan's region"]
    # The same region, or another cloud's key, is left alone.
    pin_to_stack_file(path, {"name": "w"}, plan, warn=warnings.append)
    gcp = {**plan, "cloud": "gcp", "region": "us-central1", "zones": ["us-central1-a"]}
    pin_to_stack_file(path, {"name": "w"}, gcp, warn=warnings.append)
    assert yaml.safe_load(path.read_text())["config"]["aws:region"] == "us-west-2"
    assert warnings[1:] == [f"{path}: the new plan moves the stack from aws us-west-2 to gcp us-central1: a deployed "
                            "stack's resources are rebuilt there, and its retained data (buckets, file systems) "
                            "stays in us-west-2; read `pulumi preview` before `pulumi up`"]


def test_a_re_pin_into_another_region_says_what_it_means_for_a_deployed_stack(tmp_path):
    # Moving the region key is not the whole story: a deployed stack's compute, network and storage are regional.
    from accel.stack.pin import pin_to_stack_file

    path = tmp_path / "Pulumi.dev.yaml"
    east = {"cloud": "aws", "region": "us-east-1", "zones": ["us-east-1a"], "chosen": {"spot": False},
            "estimate": {"hours": 10.0}}
    warnings: list[str] = []
    pin_to_stack_file(path, {"name": "w"}, east, warn=warnings.append)
    pin_to_stack_file(path, {"name": "w"}, {**east, "zones": ["us-east-1b"]}, warn=warnings.append)
    assert warnings == []                       # a first pin, and another zone of the same region: nothing to say
    pin_to_stack_file(path, {"name": "w"}, {**east, "region": "us-west-2", "zones": ["us-west-2a"]},
                      warn=warnings.append)
    assert warnings == [f"{path}: the new plan moves the stack from aws us-east-1 to aws us-west-2: a deployed "
                        "stack's resources are rebuilt there, and its retained data (buckets, file systems) stays in "
                        "us-east-1; read `pulumi preview` before `pulumi up`"]


def test_pinning_a_gcp_plan_moves_a_zone_outside_it():
    from accel.stack.pin import _follow_the_plans_region

    config = {"gcp:region": "us-east5", "gcp:zone": "us-east5-b"}
    _follow_the_plans_region(config, {"cloud": "gcp", "region": "us-central1", "zones": ["us-central1-a"]})
    assert config == {"gcp:region": "us-central1", "gcp:zone": "us-central1-a"}
    config = {"gcp:zone": "us-central1-b"}
    _follow_the_plans_region(config, {"cloud": "gcp", "region": "us-central1", "zones": ["us-central1-a",
                                                                                           "us-central1-b"]})
    assert config == {"gcp:zone": "us-central1-b"}
