"""Whether a Kubernetes LabelSelector (matchLabels, matchExpressions) selects an object with given labels: the one
reading the schedule check's spread (accel/job/spread_check.py) and the Kueue rules (accel/job/rules/kueue.py) share
(Kubernetes apimachinery labels.Selector: every matchLabels pair equal, every expression met; In and NotIn over
`values`, Exists and DoesNotExist on the key)."""

from __future__ import annotations

from typing import Any


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Whether `selector` selects an object with `labels`; an absent one selects none (a caller for which an absent
    selector means every object says so itself)."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if (operator == "In" and labels.get(key) not in values) or (operator == "NotIn" and labels.get(key) in values) \
                or (operator == "Exists" and not present) or (operator == "DoesNotExist" and present):
            return False
    return True
