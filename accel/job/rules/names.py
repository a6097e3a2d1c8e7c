"""The name and value syntaxes of Kubernetes, as apimachinery defines them.

Ported from k8s.io/apimachinery `pkg/util/validation/validation.go` (Kubernetes v1.33): IsDNS1123Label,
IsDNS1123Subdomain, IsDNS1035Label, IsQualifiedName, IsValidLabelValue, IsValidPortName,
IsValidPortNum, IsEnvVarName, and `pkg/api/validation/objectmeta.go` TotalAnnotationSizeLimitB.
Each function returns the problems (empty when the text is valid), worded as upstream words them,
so a message reads like the API server's.
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
PORT_NAME_MAX = 15                       # IANA_SVC_NAME (RFC 6335)
ANNOTATIONS_TOTAL_MAX = 256 * 1024       # TotalAnnotationSizeLimitB

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_PORT_NAME_CHARS = re.compile(r"[-a-z0-9]+")
_ENV_VAR_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


def _too_long(value: str, limit: int) -> list[str]:
    return [f"must be no more than {limit} characters"] if len(value) > limit else []


def _syntax(value: str, limit: int, pattern: re.Pattern[str], words: str) -> list[str]:
    """Upstream's shape for a bounded name: its length problem, then its pattern's, as the API server words them."""
    return _too_long(value, limit) + ([] if pattern.fullmatch(value) else [words])


def dns1123_label(value: str) -> list[str]:
    return _syntax(value, DNS1123_LABEL_MAX, _DNS1123_LABEL,
                   "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                   "and must start and end with an alphanumeric character")


def dns1123_subdomain(value: str) -> list[str]:
    return _syntax(value, DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN,
                   "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
                   "or '.', and must start and end with an alphanumeric character")


def dns1035_label(value: str) -> list[str]:
    return _syntax(value, DNS1035_LABEL_MAX, _DNS1035_LABEL,
                   "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
                   "an alphabetic character, and end with an alphanumeric character")


def qualified_name(value: str) -> list[str]:
    """A label or annotation key, a resource name: [prefix/]name, prefix a DNS subdomain."""
    prefix, slash, name = value.rpartition("/") if "/" in value else ("", "", value)
    problems = []
    if value.count("/") > 1:
        return ["a qualified name must consist of an optional DNS subdomain prefix and '/', then a name"]
    if slash:
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in dns1123_subdomain(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    else:
        problems += _too_long(name, QUALIFIED_NAME_MAX)
        if not _QUALIFIED_NAME.fullmatch(name):
            problems.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                            "and end with an alphanumeric character")
    return problems


def label_value(value: str) -> list[str]:
    return _syntax(value, LABEL_VALUE_MAX, _LABEL_VALUE,
                   "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                   "or '.', and must start and end with an alphanumeric character")


def port_name(value: str) -> list[str]:
    problems = _too_long(value, PORT_NAME_MAX)
    if not _PORT_NAME_CHARS.fullmatch(value):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        problems.append("must not contain consecutive hyphens")
    if not re.search("[a-z]", value):
        problems.append("must contain at least one letter (a-z)")
    if value.startswith("-") or value.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def port_number(value: object) -> list[str]:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        return ["must be between 1 and 65535, inclusive"]
    return []


def env_var_name(value: str) -> list[str]:
    if not _ENV_VAR_NAME.fullmatch(value):
        return ["a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or "
                "'.', and must not start with a digit"]
    return []
