"""The Kubernetes name rules the components check their arguments by, before anything is declared: a
DNS-1123 label (a namespace, a service account, a network), a DNS-1123 subdomain, a label key and a
label value (kubernetes apimachinery pkg/util/validation/validation.go: IsDNS1123Label,
IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue; lengths 63, 253, 63)."""

from __future__ import annotations

import re

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# A subdomain is dot-separated labels (each starts and ends with a letter or digit: no '..', '.-' or '-.'), 253 at most.
_SUBDOMAIN = r"(?=[^/]{1,253}(?:/|$))[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
DNS_SUBDOMAIN = re.compile(rf"^{_SUBDOMAIN}$")
LABEL_KEY = re.compile(rf"^({_SUBDOMAIN}/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def dns_label_problem(field: str, value: object) -> str | None:
    """Why `value` cannot name a Kubernetes object (the message names `field`), or None when it can."""
    if isinstance(value, str) and DNS_LABEL.fullmatch(value):
        return None
    return (f"{field}: {value!r} is not a Kubernetes name; use at most 63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit")
