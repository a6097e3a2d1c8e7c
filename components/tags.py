"""Labels and tags stamped on every billable resource: who pays, what for, and when it expires.

One model renders three dialects, each by its own rule: GCP labels (lowercase letters, international ones
too, digits, '_' and '-'; 63 characters), AWS tags (letters, digits, spaces and _ . : / = + - @) and Kubernetes
labels (prefixed keys, ASCII values). The keys are the same everywhere so a
guardrail or a reaper can look for one name.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict

# The GCP and AWS rules are the clouds' (policies/tagging/rules.yaml, with their sources); re-exported here for the
# components and the stack program.
from accel.policies.tagging import (
    aws_tag_key_problem,
    aws_tag_rules,
    aws_tag_value_problem,
    aws_tags_problem,
    gcp_label_key_problem,
    gcp_label_rules,
    gcp_label_value,
    gcp_label_value_problem,
)

LABEL_PREFIX = "accel"
# Node label every accelerator pool of this project carries: its capacity mode (on-demand, spot,
# reservation, flex-start, queued, capacity-block). Set on the pool itself, so a Kueue flavor can
# select on it without relying on a label the cloud may or may not add.
CAPACITY_NODE_LABEL = "accel.dev/capacity"
_KUBERNETES_INVALID = re.compile(r"[^a-z0-9_-]")
_KUBERNETES_VALUE_MAX = 63


def kubernetes_label_value(value: str) -> str:
    """`value` as a Kubernetes label value, which is ASCII (letters, digits, '-', '_', '.', at most 63, starting and
    ending alphanumeric; kubernetes v1.33 apimachinery/pkg/util/validation/validation.go IsValidLabelValue): accents
    folded away ('José Müller' -> 'jose-muller'), lowercased like the GCP label, every other character a '-', the
    ends trimmed so 'Big Boss.' is 'big-boss', not the 'big-boss-' Kubernetes and GKE node pools refuse.

    A letter or digit with no ASCII form (Chinese, Cyrillic, Greek, Devanagari...) would be dropped, and every such
    owner written '' (one label for all of them); so then the whole value is written as its Punycode (RFC 3492, the
    `xn--` form IDNA gives a domain label: ASCII letters, digits and '-'), which keeps owners apart and decodes back:
    '张伟' -> 'xn--cpqy30b'. Lossy where the value is not plain lowercase ASCII: `accel plan` says what it wrote
    (ownership_rewrites)."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", value) if not unicodedata.combining(c)).lower()
    if not _has_letters_without_ascii(folded):
        return _KUBERNETES_INVALID.sub("-", folded)[:_KUBERNETES_VALUE_MAX].strip("-_")
    # Encoded from the value as written (NFC, lowercased), marks and all, so it decodes back to it: a vowel sign
    # (Devanagari 'े', category Mc) is part of the name, not an accent to fold away.
    lowered = unicodedata.normalize("NFC", value).lower()
    kept = "".join(c if _kept_in_punycode(c) else "-" for c in lowered)
    return (PUNYCODE_PREFIX + kept.encode("punycode").decode("ascii"))[:_KUBERNETES_VALUE_MAX].strip("-_")


PUNYCODE_PREFIX = "xn--"


def _has_letters_without_ascii(folded: str) -> bool:
    return any(not c.isascii() and unicodedata.category(c)[0] in "LN" for c in folded)


def _kept_in_punycode(character: str) -> bool:
    if character.isascii():
        return not _KUBERNETES_INVALID.match(character)
    return unicodedata.category(character)[0] in "LNM"


def ownership_rewrites(tags: "ResourceTags", cloud: str | None) -> list[str]:
    """Where the owner or cost centre is written otherwise than as given, beyond lowercasing: the GCP label (on a
    GCP stack) and the Kubernetes label (every stack); the AWS tag is the value as written. Each note gives the rule
    of the labels it names, and says when a value was written as its Punycode."""
    notes = []
    for field, key in (("owner", "owner"), ("cost_center", "cost-center")):
        value = getattr(tags, field)
        written = [("GCP", f"label {key}", gcp_label_value(value))] if cloud == "gcp" else []
        written.append(("Kubernetes", f"label {LABEL_PREFIX}.dev/{key}", kubernetes_label_value(value)))
        changed = [(target, f"{target} {where}={label!r}", label) for target, where, label in written
                   if label != value.lower()]
        if not changed:
            continue
        rules = []
        for target, _, label in changed:
            if target == "GCP":
                rules.append("GCP labels take lowercase letters (international ones too), digits, '_' and '-'")
            else:
                rule = "Kubernetes labels take ASCII letters, digits, '-', '_' and '.' (accents folded away)"
                if label.startswith(PUNYCODE_PREFIX) and _has_letters_without_ascii(value.lower()):
                    rule += ("; a letter with no ASCII form makes the whole value its Punycode (RFC 3492, the xn-- "
                             "form of a domain name), so owners stay apart and it decodes back")
                rules.append(rule)
        if len(rules) == 2:   # one verb for both: "GCP labels take ...; Kubernetes labels ASCII ..."
            rules[1] = rules[1].replace("Kubernetes labels take ", "Kubernetes labels ", 1)
        notes.append(f"{field} {value!r} is written as {' and '.join(where for _, where, _ in changed)}: "
                     f"{'; '.join(rules)}")
    return notes


def expiry_label(expires_at: datetime) -> str:
    """An expiry that fits a GCP label value and still sorts and parses: 2026-11-22t18-00-00z."""
    return expires_at.astimezone(timezone.utc).strftime("%Y-%m-%dt%H-%M-%Sz")


def parse_expiry_label(value: str) -> datetime:
    """Inverse of expiry_label; also accepts plain ISO 8601."""
    try:
        return datetime.strptime(value, "%Y-%m-%dt%H-%M-%Sz").replace(tzinfo=timezone.utc)
    except ValueError:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


class ResourceTags(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    workload: str
    stack: str
    owner: str = "unknown"
    cost_center: str = "unknown"
    ephemeral: bool = False
    expires_at: datetime | None = None
    ttl: str | None = None  # a TTL-only stack: expiry is last update + ttl, so no timestamp to stamp

    def _pairs(self) -> dict[str, str]:
        pairs = {
            "workload": self.workload,
            "stack": self.stack,
            "owner": self.owner,
            "cost-center": self.cost_center,
            "managed-by": "accel",
        }
        if self.ephemeral:
            pairs["ephemeral"] = "true"
        if self.expires_at is not None:
            pairs["expires-at"] = expiry_label(self.expires_at)
        if self.ttl is not None:
            pairs["ttl"] = self.ttl
        return pairs

    def gcp_labels(self, **extra: str) -> dict[str, str]:
        """GCP labels: each value as GCP writes it (gcp_label_value); a key GCP would refuse (an `extra` of the
        caller's) or more labels than a resource takes is refused here, naming it."""
        from accel.base.errors import invalid_arg
        from accel.policies.tagging import gcp_label_rules

        pairs = {**self._pairs(), **extra}
        labels = {gcp_label_value(k): gcp_label_value(v) for k, v in pairs.items()}
        for key in labels:
            problem = gcp_label_key_problem(key)
            if problem:
                raise invalid_arg("ResourceTags", "gcp_labels", key, problem)
        if len(labels) > gcp_label_rules().labels_max:
            raise invalid_arg("ResourceTags", "gcp_labels", sorted(labels),
                              f"{len(labels)} labels; GCP takes at most {gcp_label_rules().labels_max} on a resource")
        return labels

    def aws_tags(self, **extra: str) -> dict[str, str]:
        """AWS tags, `accel:`-prefixed, values as written; a key or value AWS would refuse is refused here, naming
        the field it came from."""
        from accel.base.errors import invalid_arg

        for field in ("owner", "cost_center"):
            problem = aws_tag_value_problem(getattr(self, field))
            if problem:
                raise invalid_arg("ResourceTags", field, getattr(self, field), problem)
        tags = {f"{LABEL_PREFIX}:{k}": v for k, v in {**self._pairs(), **extra}.items()}
        problem = aws_tags_problem(tags)
        if problem:
            raise invalid_arg("ResourceTags", "aws_tags", tags, problem)
        return tags

    def kubernetes_labels(self) -> dict[str, str]:
        return {f"{LABEL_PREFIX}.dev/{k}": kubernetes_label_value(v) for k, v in self._pairs().items()}


# Tags accel's AWS components add beside the stack's own: the GPU node groups' capacity and gpu-pool
# (components/aws/gpu.py), the storage's data-role (components/aws/storage.py), and the console Name.
_AWS_COMPONENT_EXTRAS = ("capacity", "gpu-pool", "data-role")


def aws_default_tags_problem(default_tags: object, tags: ResourceTags) -> tuple[str, str] | None:
    """Why the AWS provider's default tags (a stack's aws:defaultTags.tags) cannot go on every resource beside the
    tags accel writes, as (where under aws:defaultTags, why), or None: each key and value by AWS's rule, no accel:
    key (those are accel's own), and at most 50 tags on a resource counting accel's (a default tag of the same key
    as a resource's is replaced by it, so it counts once)."""
    if not isinstance(default_tags, dict):
        return "tags", "expected a mapping of tag keys to values"
    for key, value in default_tags.items():
        if not isinstance(key, str) or not isinstance(value, str):
            return f"tags.{key}", f"expected a string value, got {value!r}"
        problem = aws_tag_key_problem(key)
        if problem:
            return f"tags.{key}", problem
        if key.startswith(f"{LABEL_PREFIX}:"):
            return f"tags.{key}", (f"the {LABEL_PREFIX}: keys are accel's own; set accel:owner, accel:costCenter "
                                   "(or the workload's owner, cost_center) instead")
        problem = aws_tag_value_problem(value)
        if problem:
            return f"tags.{key}", f"value {value!r}: {problem}"
    written = {**tags.aws_tags(**dict.fromkeys(_AWS_COMPONENT_EXTRAS, "x")), "Name": "x"}
    total = len(set(written) | set(default_tags))
    if total > aws_tag_rules().user_tags_max:
        return "tags", (f"{len(default_tags)} default tags beside the {len(written)} accel writes on a resource "
                        f"make {total}; AWS takes at most {aws_tag_rules().user_tags_max} user tags on a resource")
    return None


# Labels accel's GCP components add beside the stack's own: the capacity mode (components/gcp/_common.py
# compute_labels), the node pool (gpu.py, cluster.py), the TPU slice and topology (tpu.py), the data role (storage).
_GCP_COMPONENT_EXTRAS = ("provisioning", "spot", "pool", "tpu-slice", "tpu-topology", "data-role")


def gcp_default_labels_problem(default_labels: object, tags: ResourceTags) -> tuple[str, str] | None:
    """Why the Google provider's default labels (a stack's gcp:defaultLabels) cannot go on every resource beside
    the labels accel writes, as (the key, or "" for the whole, why), or None: each key and value by GCP's label
    rule as written (a default label is the user's own words, so it is refused, not rewritten), no key accel
    writes itself, and at most 64 labels on a resource counting accel's."""
    if not isinstance(default_labels, dict):
        return "", "expected a mapping of label keys to values"
    written = tags.gcp_labels(**dict.fromkeys(_GCP_COMPONENT_EXTRAS, "x"))
    for key, value in default_labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            return str(key), f"expected a string value, got {value!r}"
        problem = gcp_label_key_problem(key)
        if problem:
            return key, problem
        if key in written:
            return key, ("accel writes this label itself (set accel:owner, accel:costCenter, or the workload's "
                         "owner, cost_center); use a key of your own")
        problem = gcp_label_value_problem(value)
        if problem:
            return key, f"value {value!r}: {problem}"
    total = len(set(written) | set(default_labels))
    if total > gcp_label_rules().labels_max:
        return "", (f"{len(default_labels)} default labels beside the {len(written)} accel writes on a resource "
                    f"make {total}; GCP takes at most {gcp_label_rules().labels_max} labels on a resource")
    return None
