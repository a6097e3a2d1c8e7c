"""Labels and tags as the clouds check them (policies/tagging/rules.yaml): each rule takes the good case and
refuses the same case mutated into a bad one; an owner or cost centre is checked once, at `accel choose` and by
the stack, and a value a label cannot hold as written is written the way each target takes it, and said."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings, strategies as st

from accel.base.errors import ComponentArgsError, UsageError
from accel.components.aws.common import resource_tags
from accel.components.tags import ResourceTags, kubernetes_label_value, ownership_rewrites
from accel.policies.tagging import (
    aws_tag_key_problem,
    aws_tag_rules,
    aws_tag_value_problem,
    gcp_label_key_problem,
    gcp_label_rules,
    gcp_label_value,
    gcp_label_value_problem,
    ownership_problem,
)
from tests.test_audit_inputs import run
from tests.test_bad_input_battery import assert_refused

ROOT = Path(__file__).resolve().parent.parent
# kubernetes v1.33 apimachinery/pkg/util/validation/validation.go IsValidLabelValue, as components/kubernetes/names.py
K8S_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


# ---------------------------------------------------------------- GCP labels keep international letters

def test_an_owner_with_accents_keeps_them_in_gcp_labels_and_folds_them_in_kubernetes_labels():
    tags = ResourceTags(workload="w", stack="s", owner="José Müller", cost_center="Forschung-Köln")
    assert tags.gcp_labels()["owner"] == "josé-müller"            # before: 'jos--m-ller'
    assert tags.gcp_labels()["cost-center"] == "forschung-köln"
    assert tags.kubernetes_labels()["accel.dev/owner"] == "jose-muller"
    assert tags.aws_tags()["accel:owner"] == "José Müller"         # AWS tags keep the value as written


def test_a_decomposed_accent_is_one_letter_in_a_gcp_label():
    assert gcp_label_value(unicodedata.normalize("NFD", "José")) == "josé"


def test_letters_without_case_are_gcp_label_letters():
    assert gcp_label_value("東京") == "東京"                        # \p{Lo}, which GCP's pattern takes


LABEL_TEXT = st.text(st.one_of(st.characters(categories=["Ll", "Lo", "Nd"]), st.sampled_from("_-")), max_size=63)


@given(value=LABEL_TEXT, bad=st.sampled_from(["A", "É", ".", " ", "/", "!", "🚀"]), at=st.integers(0, 63))
@example(value="\ufb1d", bad="A", at=0)   # a letter NFC splits into a letter and a mark (hypothesis found it)
@settings(max_examples=200, deadline=None)
def test_every_value_gcp_takes_is_kept_and_one_bad_character_is_caught(value, bad, at):
    assert gcp_label_value_problem(value) is None, value
    assert gcp_label_value(value) == value    # kept as written
    broken = value[:at] + bad + value[at:]
    if len(broken) <= gcp_label_rules().value_max:
        assert repr(bad) in gcp_label_value_problem(broken)
    assert gcp_label_value_problem(value + "x" * (64 - len(value))) is not None   # 64 characters


@given(st.text(max_size=100))
@settings(max_examples=300, deadline=None)
def test_whatever_is_written_gcp_and_kubernetes_take(value):
    assert gcp_label_value_problem(gcp_label_value(value)) is None
    written = kubernetes_label_value(value)
    assert len(written) <= 63 and written.isascii() and K8S_LABEL_VALUE.fullmatch(written), (value, written)


@pytest.mark.parametrize("good, bad, says", [
    ("owner", "Owner", "starts with a lowercase letter"),
    ("owner", "9owner", "starts with a lowercase letter"),
    ("owner", "-owner", "starts with a lowercase letter"),
    ("ñandú", "ñan.dú", "not '.'"),
    ("k" * 63, "k" * 64, "1 to 63"),
    ("k", "", "1 to 63"),
])
def test_a_gcp_label_key_starts_with_a_lowercase_letter_and_holds_label_characters(good, bad, says):
    assert gcp_label_key_problem(good) is None
    assert says in gcp_label_key_problem(bad)


def test_a_label_key_gcp_would_refuse_is_refused_by_the_component():
    tags = ResourceTags(workload="w", stack="s")
    assert tags.gcp_labels(pool="a")["pool"] == "a"
    with pytest.raises(ComponentArgsError, match="ResourceTags.gcp_labels.*starts with a lowercase letter"):
        tags.gcp_labels(**{"9pool": "a"})


def test_more_labels_than_a_gcp_resource_takes_are_refused():
    tags = ResourceTags(workload="w", stack="s")
    room = gcp_label_rules().labels_max - len(tags.gcp_labels())
    tags.gcp_labels(**{f"k{i}": "v" for i in range(room)})
    with pytest.raises(ComponentArgsError, match="at most 64"):
        tags.gcp_labels(**{f"k{i}": "v" for i in range(room + 1)})


# ---------------------------------------------------------------- AWS tag keys

AWS_KEY_TEXT = st.text(st.one_of(st.characters(categories=["L", "N", "Z"]), st.sampled_from("_.:/=+-@")),
                       min_size=1, max_size=127).filter(lambda k: not k.lower().startswith("aws:"))


@given(key=AWS_KEY_TEXT, bad=st.characters(categories=["P", "S", "C"], exclude_characters="_.:/=+-@"),
       at=st.integers(0, 127))
@settings(max_examples=300, deadline=None)
def test_every_key_aws_takes_is_accepted_and_one_bad_character_is_caught(key, bad, at):
    assert aws_tag_key_problem(key) is None, key
    assert repr(bad) in aws_tag_key_problem(key[:at] + bad + key[at:])


@pytest.mark.parametrize("good, bad, says", [
    ("k" * 127, "k" * 128, "1 to 127"),              # EC2's Tag: "a maximum of 127 Unicode characters"
    ("k", "", "1 to 127"),
    ("team:aws", "aws:team", "prefix aws:"),
    ("team:aws", "AwS:team", "prefix aws:"),
    ("cost center", "cost\tcenter", "'\\t'"),
])
def test_an_aws_tag_key_follows_the_tag_restrictions(good, bad, says):
    assert aws_tag_key_problem(good) is None
    assert says in aws_tag_key_problem(bad)


def test_a_tag_key_aws_would_refuse_is_refused_naming_it():
    tags = ResourceTags(workload="w", stack="s", owner="o", cost_center="c")
    assert tags.aws_tags(pool="a")["accel:pool"] == "a"
    with pytest.raises(ComponentArgsError, match=r"ResourceTags.aws_tags.*tag key 'accel:po#ol'.*not '#'"):
        tags.aws_tags(**{"po#ol": "a"})


def test_more_tags_than_an_aws_resource_takes_are_refused_counting_the_name():
    tags = ResourceTags(workload="w", stack="s")
    room = aws_tag_rules().user_tags_max - len(tags.aws_tags()) - 1    # the console Name is a tag too
    resource_tags(tags, "node", **{f"k{i}": "v" for i in range(room)})
    with pytest.raises(ComponentArgsError, match="at most 50 user tags"):
        resource_tags(tags, "node", **{f"k{i}": "v" for i in range(room + 1)})


def test_an_aws_tag_value_keeps_its_rule():
    assert aws_tag_value_problem("v" * 256) is None
    assert "at most 256" in aws_tag_value_problem("v" * 257)


# ---------------------------------------------------------------- owner and cost centre: one rule, checked once

@pytest.mark.parametrize("good, bad, says", [
    ("Big Boss.", "Big Boss!", "not '!'"),
    ("R+D 12", "R&D 12", "not '&'"),
    ("José Müller", "José 🚀", "not '🚀'"),
    ("team aws:", "aws:team", "prefix aws:"),
    ("x" * 63, "x" * 64, "at most 63"),
])
def test_an_owner_is_what_every_target_can_carry(good, bad, says):
    assert ownership_problem(good) is None
    assert says in ownership_problem(bad)


def choose(tmp_path: Path, **fields):
    document = yaml.safe_load((ROOT / "examples" / "llama-8b-finetune-cuda.yaml").read_text())
    document.update(fields)
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return run("choose", path, "--json")


@pytest.mark.parametrize("field", ["owner", "cost_center"])
def test_accel_choose_refuses_an_owner_or_cost_centre_the_stack_would_refuse(tmp_path, field):
    # Before: choose exit 0, and only `accel plan` of an AWS stack refused it.
    assert_refused(choose(tmp_path, **{field: "R&D #1"}), f"w.yaml: {field}: an owner or cost centre takes letters",
                   "not '#' '&'")


def test_accel_choose_takes_an_owner_with_accents(tmp_path):
    result = choose(tmp_path, owner="José Müller")
    assert result.exit_code == 0, result.stderr[-500:]
    assert json.loads(result.stdout)["workload"]["owner"] == "José Müller"


@pytest.mark.parametrize("key", ["owner", "costCenter"])
def test_the_stack_refuses_by_the_same_rule_naming_its_key(key):
    from accel.stack.program import read_stack
    from tests.test_program import WORKLOAD, config

    with pytest.raises(UsageError, match=rf"accel:{key}: an owner or cost centre takes letters .*not '!'"):
        read_stack(config(workload=WORKLOAD, **{key: "Boss!"}), "dev")


def test_rewrites_are_said_only_where_a_label_is_not_the_value_lowercased():
    assert ownership_rewrites(ResourceTags(workload="w", stack="s", owner="ml-platform", cost_center="CC-12"),
                              "gcp") == []
    notes = ownership_rewrites(ResourceTags(workload="w", stack="s", owner="José Müller"), "aws")
    assert notes == ["owner 'José Müller' is written as Kubernetes label accel.dev/owner='jose-muller': Kubernetes "
                     "labels take ASCII letters, digits, '-', '_' and '.' (accents folded away)"]
    notes = ownership_rewrites(ResourceTags(workload="w", stack="s", owner="José Müller"), "gcp")
    assert notes == ["owner 'José Müller' is written as GCP label owner='josé-müller' and Kubernetes label "
                     "accel.dev/owner='jose-muller': GCP labels take lowercase letters (international ones too), "
                     "digits, '_' and '-'; Kubernetes labels ASCII letters, digits, '-', '_' and '.' (accents folded "
                     "away)"]


@pytest.mark.parametrize("owner, written", [
    ("张伟", "xn--cpqy30b"),                  # no ASCII form at all: not '', which every such owner would share
    ("Иван Петров", "xn----7sbfcoo1bkhlv"),   # the space a '-' first, as in any label
    ("李 Wei", "xn---wei-zo1i"),               # the ASCII part kept in clear
    ("राजेश", "xn--81b3bt4a9b"),                # vowel signs (Mc, Mn) kept: they tell राजेश from रजश
])
def test_an_owner_with_letters_no_ascii_has_is_written_as_its_punycode(owner, written):
    assert kubernetes_label_value(owner) == written
    assert written[4:].encode().decode("punycode") == unicodedata.normalize("NFC", owner).lower().replace(" ", "-")
    notes = ownership_rewrites(ResourceTags(workload="w", stack="s", owner=owner), "aws")
    assert notes == [f"owner {owner!r} is written as Kubernetes label accel.dev/owner={written!r}: Kubernetes labels "
                     "take ASCII letters, digits, '-', '_' and '.' (accents folded away); a letter with no ASCII form "
                     "makes the whole value its Punycode (RFC 3492, the xn-- form of a domain name), so owners stay "
                     "apart and it decodes back"]


@given(st.lists(st.text(st.characters(categories=["Lo", "Lu", "Ll"]), min_size=1, max_size=8), min_size=2,
                max_size=2, unique_by=lambda s: unicodedata.normalize("NFKD", s).lower()))
@settings(max_examples=200, deadline=None)
def test_short_owners_that_differ_beyond_their_accents_get_different_kubernetes_labels(owners):
    def folded(value):
        return "".join(c for c in unicodedata.normalize("NFKD", value) if not unicodedata.combining(c)).lower()

    first, second = owners
    if folded(first) != folded(second):
        assert kubernetes_label_value(first) != kubernetes_label_value(second), owners


def test_accel_plan_writes_each_target_by_its_rule_and_warns_what_it_changed(tmp_path):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())
    stack["config"]["accel:owner"] = "José Müller"
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump(stack, allow_unicode=True))
    result = run("plan", "--config", path, "-C", ROOT, "--json")
    assert result.exit_code == 0, result.stderr[-800:]
    plan = json.loads(result.stdout)
    text = json.dumps(plan, ensure_ascii=False)
    assert '"owner": "josé-müller"' in text              # GCP resource labels
    assert '"accel.dev/owner": "jose-muller"' in text    # GKE node labels and Kubernetes objects: ASCII
    assert "jos--m-ller" not in text and "jos-m-ller" not in text
    assert any(warning.startswith("owner 'José Müller' is written as GCP label owner='josé-müller' and Kubernetes "
                                  "label accel.dev/owner='jose-muller'") for warning in plan["warnings"]), plan["warnings"]


# ---------------------------------------------------------------- the stack's aws:defaultTags

def read_aws_stack(default_tags):
    from accel.stack.config import encode_value
    from accel.stack.deploy_keys import offline_placeholders
    from accel.stack.program import read_stack

    raw = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-finetune-aws.yaml").read_text())["config"]
    config = {key: encode_value(value) for key, value in {**raw, "aws:defaultTags": default_tags}.items()}
    with offline_placeholders():
        return read_stack(config, "llama-70b-finetune-aws")


@pytest.mark.parametrize("good, bad, says", [
    ({"Team": "ML Platform"}, {"Team#": "ML Platform"}, r"aws:defaultTags.tags.Team#: AWS tag keys .* not '#'"),
    ({"team": "ml"}, {"AWS:team": "ml"}, r"aws:defaultTags.tags.AWS:team: AWS reserves the prefix aws:"),
    ({"team": "ml"}, {"team": "ml!"}, r"aws:defaultTags.tags.team: value 'ml!'"),
    ({"owner": "ml"}, {"accel:owner": "ml"}, r"aws:defaultTags.tags.accel:owner: the accel: keys are accel's own"),
    ({f"k{i}": "v" for i in range(30)}, {f"k{i}": "v" for i in range(45)}, r"AWS takes at most 50 user tags"),
    ({"team": "ml"}, ["team"], r"aws:defaultTags: expected \{tags:"),
])
def test_the_stacks_aws_default_tags_follow_awss_rules_and_name_the_key(good, bad, says):
    program = read_aws_stack({"tags": good} if isinstance(good, dict) else good)
    assert dict(program.cluster_args.aws_default_tags) == good
    with pytest.raises(UsageError, match=says):
        read_aws_stack({"tags": bad} if isinstance(bad, dict) else bad)


def test_the_stacks_aws_default_tags_reach_its_provider(tmp_path):
    # The provider is explicit, and an explicit provider reads no aws:* config (pulumi/pulumi-aws#1307): before,
    # aws:defaultTags in a stack file was dropped without a word.
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-70b-finetune-aws.yaml").read_text())
    stack["config"]["aws:defaultTags"] = {"tags": {"Team": "ML Platform"}}
    path = tmp_path / "Pulumi.llama-70b-finetune-aws.yaml"
    path.write_text(yaml.safe_dump(stack))
    result = run("plan", "--config", path, "-C", ROOT, "--json")
    assert result.exit_code == 0, result.stderr[-800:]
    [provider] = [r for r in json.loads(result.stdout)["resources"] if r["type"] == "pulumi:providers:aws"]
    assert json.loads(provider["inputs"]["defaultTags"]) == {"tags": {"Team": "ML Platform"}}


# ---------------------------------------------------------------- the stack's gcp:defaultLabels

def read_gcp_stack(default_labels):
    from accel.stack.program import read_stack
    from tests.test_program import WORKLOAD, config

    return read_stack(config(workload=WORKLOAD, **{"gcp:defaultLabels": json.dumps(default_labels)}), "dev")


@pytest.mark.parametrize("good, bad, says", [
    ({"team": "ml"}, {"Team": "ml"}, r"gcp:defaultLabels.Team: a GCP label key starts with a lowercase letter"),
    ({"équipe": "ml"}, {"équipe": "ML"}, r"gcp:defaultLabels.équipe: value 'ML': GCP label values take .*'L' 'M'"),
    ({"team": "ml"}, {"owner": "ml"}, r"gcp:defaultLabels.owner: accel writes this label itself"),
    ({f"k{i}": "v" for i in range(40)}, {f"k{i}": "v" for i in range(60)}, r"gcp:defaultLabels: 60 default labels"),
    ({"team": "ml"}, ["team"], r"gcp:defaultLabels: expected a mapping"),
])
def test_the_stacks_gcp_default_labels_follow_gcps_rule_and_name_the_key(good, bad, says):
    assert dict(read_gcp_stack(good).cluster_args.gcp_default_labels) == good
    with pytest.raises(UsageError, match=says):
        read_gcp_stack(bad)


def test_the_stacks_gcp_default_labels_reach_its_provider(tmp_path):
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev-spot.yaml").read_text())
    stack["config"]["gcp:defaultLabels"] = {"team": "ml-platform"}
    path = tmp_path / "Pulumi.dev-spot.yaml"
    path.write_text(yaml.safe_dump(stack))
    result = run("plan", "--config", path, "-C", ROOT, "--json")
    assert result.exit_code == 0, result.stderr[-800:]
    [provider] = [r for r in json.loads(result.stdout)["resources"] if r["type"] == "pulumi:providers:gcp"]
    assert json.loads(provider["inputs"]["defaultLabels"]) == {"team": "ml-platform"}


def test_the_character_words_are_the_rule_tables_own(monkeypatch):
    """The symbols a tag takes are said from policies/tagging/rules.yaml, not written again in each message: a
    table that changed would otherwise be refused by one list and described by another."""
    import dataclasses

    import accel.policies.tagging as tagging

    narrower = dataclasses.replace(tagging.aws_tag_rules(), symbols="_-")
    monkeypatch.setattr(tagging, "aws_tag_rules", lambda: narrower)
    for problem in (tagging.aws_tag_key_problem("a@b"), tagging.aws_tag_value_problem("a@b"),
                    tagging.ownership_problem("a@b")):
        assert problem is not None and "spaces and _ -" in problem and "=" not in problem.split(", not")[0]
