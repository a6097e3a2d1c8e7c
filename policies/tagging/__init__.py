"""The clouds' rules for the labels and tags accel writes, from rules.yaml: each rule once, with its source, so
the workload, the stack settings, the components and the guardrails check one thing.

- GCP labels: lowercase letters (international ones too), digits, '_' and '-'; keys start with a letter; at most
  63 characters each, 64 labels. `gcp_label_value` writes a value GCP takes: lowercased with str.lower (after NFC,
  so a decomposed 'é' stays one letter), each other character a '-', then checked against the rule.
- AWS tags: letters, digits, spaces and _ . : / = + - @; keys 1 to 127 (EC2's bound), values at most 256; no
  aws: prefix; 50 user tags a resource.
- An owner or cost centre is written as all three (GCP label, AWS tag, Kubernetes label), so `ownership_problem`
  takes what every one of them can carry; the same function runs at `accel choose` and in the stack program.

Plain dataclasses, no pydantic: the guardrail pack imports this and must start without it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from accel.base.safe_files import read_text
from accel.base.yaml_files import parse_yaml

RULES_FILE = Path(__file__).with_name("rules.yaml")


@dataclass(frozen=True)
class GcpLabelRules:
    source: str
    key_max: int
    value_max: int
    labels_max: int
    first_key_categories: frozenset[str]
    categories: frozenset[str]
    symbols: str

    def allows(self, character: str) -> bool:
        return character in self.symbols or unicodedata.category(character) in self.categories


@dataclass(frozen=True)
class AwsTagRules:
    source: str
    key_max: int
    value_max: int
    user_tags_max: int
    categories: frozenset[str]
    symbols: str
    reserved_prefix: str

    def allows(self, character: str) -> bool:
        return character in self.symbols or unicodedata.category(character)[0] in self.categories

    @property
    def characters(self) -> str:
        """The characters a tag takes, in words: 'letters, digits, spaces and _ . : / = + - @'."""
        return "letters, digits, spaces and " + " ".join(self.symbols)


@lru_cache(maxsize=1)
def _rules() -> dict:
    return parse_yaml(read_text(RULES_FILE, "label and tag rules"))


@lru_cache(maxsize=1)
def gcp_label_rules() -> GcpLabelRules:
    raw = _rules()["gcp_labels"]
    return GcpLabelRules(source=raw["source"], key_max=raw["key_max"], value_max=raw["value_max"],
                         labels_max=raw["labels_max"], first_key_categories=frozenset(raw["first_key_categories"]),
                         categories=frozenset(raw["categories"]), symbols=raw["symbols"])


@lru_cache(maxsize=1)
def aws_tag_rules() -> AwsTagRules:
    raw = _rules()["aws_tags"]
    return AwsTagRules(source=raw["source"], key_max=raw["key_max"], value_max=raw["value_max"],
                       user_tags_max=raw["user_tags_max"], categories=frozenset(raw["categories"]),
                       symbols=raw["symbols"], reserved_prefix=raw["reserved_prefix"])


def _shown(characters: set[str]) -> str:
    return " ".join(repr(c) for c in sorted(characters))


# ---------------------------------------------------------------- GCP labels

def gcp_label_value_problem(value: str) -> str | None:
    """Why GCP refuses `value` as a label value, or None."""
    rules = gcp_label_rules()
    if len(value) > rules.value_max:
        return f"{len(value)} characters; a GCP label value has at most {rules.value_max}"
    bad = {c for c in value if not rules.allows(c)}
    if bad:
        return (f"GCP label values take lowercase letters (international ones too), digits, '_' and '-' only, "
                f"not {_shown(bad)}")
    return None


def gcp_label_key_problem(key: str) -> str | None:
    """Why GCP refuses `key` as a label key, or None."""
    rules = gcp_label_rules()
    if not key or len(key) > rules.key_max:
        return f"a GCP label key has 1 to {rules.key_max} characters, not {len(key)}"
    if unicodedata.category(key[0]) not in rules.first_key_categories:
        return f"a GCP label key starts with a lowercase letter, not {key[0]!r}"
    return gcp_label_value_problem(key)


def gcp_label_value(value: str) -> str:
    """`value` as GCP writes it: lowercased (str.lower), kept as written where GCP takes it; else NFC first (an
    accent typed as a combining mark joins its letter), each character GCP does not take a '-', at most 63
    characters. 'José Müller' -> 'josé-müller' (GCP takes international lowercase letters). NFC is not applied to
    a value GCP already takes: it would split a presentation form such as U+FB1D (Hebrew yod with hiriq, a
    letter) into a letter and a mark GCP's rule does not name."""
    rules = gcp_label_rules()
    if gcp_label_value_problem(value.lower()) is None:
        return value.lower()
    lowered = unicodedata.normalize("NFC", value).lower()
    written = "".join(c if rules.allows(c) else "-" for c in lowered)[:rules.value_max]
    assert gcp_label_value_problem(written) is None, (value, written)
    return written


# ---------------------------------------------------------------- AWS tags

def _refused_characters(text: str, rules: AwsTagRules) -> str:
    """The characters of `text` AWS's tag rule refuses, shown sorted; '' if none."""
    bad = {c for c in text if not rules.allows(c)}
    return _shown(bad) if bad else ""


def aws_tag_value_problem(value: str) -> str | None:
    """Why AWS refuses `value` as a tag value (letters, digits, spaces and _ . : / = + - @; at most 256; no
    aws: prefix), or None."""
    rules = aws_tag_rules()
    if len(value) > rules.value_max:
        return f"{len(value)} characters; an AWS tag value has at most {rules.value_max}"
    bad = _refused_characters(value, rules)
    if bad:
        return f"AWS tag values take {rules.characters} only, not {bad}"
    if value.lower().startswith(rules.reserved_prefix):
        return f"AWS reserves the prefix {rules.reserved_prefix} for its own tags"
    return None


def aws_tag_key_problem(key: str) -> str | None:
    """Why AWS refuses `key` as a tag key (1 to 127 letters, digits, spaces and _ . : / = + - @; no aws: prefix,
    in any case), or None."""
    rules = aws_tag_rules()
    if not key or len(key) > rules.key_max:
        return f"an AWS tag key has 1 to {rules.key_max} characters (EC2's bound), not {len(key)}"
    bad = _refused_characters(key, rules)
    if bad:
        return f"AWS tag keys take {rules.characters} only, not {bad}"
    if key.lower().startswith(rules.reserved_prefix):
        return f"AWS reserves the prefix {rules.reserved_prefix} (in any case) for its own tag keys"
    return None


def aws_tags_problem(tags: dict[str, str]) -> str | None:
    """The first key, value or count AWS refuses in a resource's user tags, or None."""
    rules = aws_tag_rules()
    if len(tags) > rules.user_tags_max:
        return f"{len(tags)} tags; AWS takes at most {rules.user_tags_max} user tags on a resource"
    for key, value in tags.items():
        problem = aws_tag_key_problem(key)
        if problem:
            return f"tag key {key!r}: {problem}"
        problem = aws_tag_value_problem(value)
        if problem:
            return f"tag {key!r}: value {value!r}: {problem}"
    return None


# ---------------------------------------------------------------- owner and cost centre

_OWNERSHIP_WHY = "it is written as an AWS tag, a GCP label and a Kubernetes label"


def ownership_problem(value: str) -> str | None:
    """Why `value` cannot be an owner or cost centre, or None: it must be an AWS tag value as written, and fit a
    GCP and Kubernetes label (63 characters) without being cut. Lowercasing and the characters a label does not
    take are rewritten, and `accel plan` says where (components/tags.py ownership_rewrites)."""
    label_max = gcp_label_rules().value_max
    rules = aws_tag_rules()
    if len(value) > label_max:
        return (f"{len(value)} characters; an owner or cost centre has at most {label_max}, the most a GCP or "
                f"Kubernetes label value holds ({_OWNERSHIP_WHY})")
    bad = _refused_characters(value, rules)
    if bad:
        takes = (f"{rules.characters.replace('letters', 'letters (any script)', 1)}, at most {label_max} characters, "
                 f"not starting with {rules.reserved_prefix}")
        return f"an owner or cost centre takes {takes}, not {bad} ({_OWNERSHIP_WHY})"
    if value.lower().startswith(rules.reserved_prefix):
        return f"AWS reserves the prefix {rules.reserved_prefix} for its own tags ({_OWNERSHIP_WHY})"
    return None
