"""Labels and tags stamped on every billable resource: who pays, what for, and when it expires.

One model renders three dialects: GCP labels (lowercase, 63 chars, [a-z0-9_-]), AWS tags
(free text) and Kubernetes labels (prefixed keys). The keys are the same everywhere so a
guardrail or a reaper can look for one name.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict

LABEL_PREFIX = "accel"
# Node label every accelerator pool of this project carries: its capacity mode (on-demand, spot,
# reservation, flex-start, queued, capacity-block). Set on the pool itself, so a Kueue flavor can
# select on it without relying on a label the cloud may or may not add.
CAPACITY_NODE_LABEL = "accel.dev/capacity"
_GCP_INVALID = re.compile(r"[^a-z0-9_-]")


def gcp_label_value(value: str) -> str:
    """GCP label values: lowercase letters, digits, '_' and '-', at most 63 characters."""
    return _GCP_INVALID.sub("-", value.lower())[:63]


def kubernetes_label_value(value: str) -> str:
    """A GCP label value that Kubernetes also takes: it must start and end alphanumeric (or be empty), so an owner
    written 'Big Boss!' is 'big-boss', not the 'big-boss-' every Kubernetes object and GKE node pool would refuse
    (kubernetes v1.33 apimachinery/pkg/util/validation/validation.go IsValidLabelValue)."""
    return gcp_label_value(value).strip("-_")


# AWS's tag rule, the set every tagging service accepts (the Tag type of the AWS APIs, e.g. Service Quotas
# API_Tag: value pattern ^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$, length 0 to 256; "Tag restrictions" of the
# service guides, e.g. AWS Batch: "Don't use aws:, AWS:, or any upper or lowercase combination of such as a
# prefix for either keys or values"; both read 2026-11-27).
AWS_TAG_VALUE_MAX = 256
_AWS_TAG_SYMBOLS = frozenset("_.:/=+-@")


def _aws_tag_character(character: str) -> bool:
    return character in _AWS_TAG_SYMBOLS or unicodedata.category(character)[0] in "LZN"


def aws_tag_value_problem(value: str) -> str | None:
    """Why AWS refuses `value` as a tag value (letters, digits, spaces and _ . : / = + - @; at most 256; no
    aws: prefix), or None."""
    if len(value) > AWS_TAG_VALUE_MAX:
        return f"{len(value)} characters; an AWS tag value has at most {AWS_TAG_VALUE_MAX}"
    bad = sorted({c for c in value if not _aws_tag_character(c)})
    if bad:
        return (f"AWS tag values take letters, digits, spaces and _ . : / = + - @ only, not "
                f"{' '.join(repr(c) for c in bad)}")
    if value.lower().startswith("aws:"):
        return "AWS reserves the prefix aws: for its own tags"
    return None


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
        pairs = {**self._pairs(), **extra}
        return {gcp_label_value(k): gcp_label_value(v) for k, v in pairs.items()}

    def aws_tags(self, **extra: str) -> dict[str, str]:
        for field in ("owner", "cost_center"):
            problem = aws_tag_value_problem(getattr(self, field))
            if problem:
                from accel.base.errors import invalid_arg

                raise invalid_arg("ResourceTags", field, getattr(self, field), problem)
        return {f"{LABEL_PREFIX}:{k}": v for k, v in {**self._pairs(), **extra}.items()}

    def kubernetes_labels(self) -> dict[str, str]:
        return {f"{LABEL_PREFIX}.dev/{k}": kubernetes_label_value(v) for k, v in self._pairs().items()}
