"""Object metadata: names, namespaces, labels and annotations, on every object accel writes.

Ported from Kubernetes v1.33: `staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go`
(ValidateObjectMeta, ValidateAnnotations), `.../pkg/apis/meta/v1/validation/validation.go`
(ValidateLabels), and the per-kind name functions of `pkg/apis/core/validation/validation.go`
(ValidateNamespaceName, ValidateServiceName, NameIsDNSSubdomain for the rest, custom resources
included: apiextensions validates a custom object's name as a DNS subdomain).
JobSet and LeaderWorkerSet names have their webhooks' stricter rules (jobset.py, lws.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from accel.job.pod_templates import pod_templates
from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, describe, join, rule

OBJECT_META = "kubernetes v1.33 staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go"
META_V1 = "kubernetes v1.33 staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go"
CORE = "kubernetes v1.33 pkg/apis/core/validation/validation.go"

# Kinds whose name is a DNS-1123 label or a DNS-1035 label; every other kind's is a DNS subdomain.
LABEL_NAMED = {"Namespace": names.dns1123_label}
DNS1035_NAMED = {"Service": names.dns1035_label}
OWN_NAME_RULES = ("JobSet", "LeaderWorkerSet")   # jobset.py, lws.py


def _metadata(scope: Scope) -> Iterator[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(owner, field, metadata) of every object and every pod template in it."""
    for obj in scope.objects:
        yield obj, "metadata", obj.get("metadata") or {}
    for template in pod_templates(scope.objects):
        yield template.owner, join(template.path, "metadata"), template.metadata


@rule("meta/name", "an object's name has its kind's syntax",
      source=f"{CORE} ValidateNamespaceName (DNS-1123 label), ValidateServiceName (DNS-1035 label), "
             f"NameIsDNSSubdomain for other kinds; {OBJECT_META} ValidateObjectMeta",
      fix="use lower-case letters, digits and '-' (and '.' where a subdomain is allowed), starting and "
          "ending with a letter or digit")
def name_syntax(scope: Scope):
    for obj in scope.objects:
        kind = obj.get("kind", "")
        if kind in OWN_NAME_RULES:
            continue
        name = (obj.get("metadata") or {}).get("name")
        if not name:
            yield Breach(describe(obj), "metadata.name", "Required value: name or generateName is required")
            continue
        check = LABEL_NAMED.get(kind) or DNS1035_NAMED.get(kind) or names.dns1123_subdomain
        for problem in check(str(name)):
            yield Breach(describe(obj), "metadata.name", f"Invalid value {name!r}: {problem}")


@rule("meta/namespace", "a namespaced object's namespace is a DNS-1123 label",
      source=f"{OBJECT_META} ValidateObjectMeta (ValidateNamespaceName)",
      fix="name the namespace with a DNS-1123 label (at most 63 lower-case letters, digits, '-')")
def namespace_syntax(scope: Scope):
    for obj in scope.objects:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if namespace is not None:
            for problem in names.dns1123_label(str(namespace)):
                yield Breach(describe(obj), "metadata.namespace", f"Invalid value {namespace!r}: {problem}")


@rule("meta/labels", "label keys are qualified names and label values valid label values",
      source=f"{META_V1} ValidateLabels (ValidateLabelName, IsValidLabelValue)",
      fix="a label value is at most 63 characters of letters, digits, '-', '_' or '.', starting and ending "
          "alphanumeric; a key is [prefix/]name with the same syntax for name")
def labels(scope: Scope):
    for owner, where, meta in _metadata(scope):
        for key, value in (meta.get("labels") or {}).items():
            for problem in names.qualified_name(str(key)):
                yield Breach(describe(owner), join(where, f"labels[{key}]"), f"Invalid label key: {problem}")
            for problem in names.label_value(str(value)):
                yield Breach(describe(owner), join(where, f"labels[{key}]"), f"Invalid value {value!r}: {problem}")


@rule("meta/annotations", "annotation keys are qualified names; all annotations fit in 256 KiB",
      source=f"{OBJECT_META} ValidateAnnotations (IsQualifiedName of the lower-cased key, "
             "TotalAnnotationSizeLimitB)",
      fix="use a [prefix/]name key; move large data to a ConfigMap")
def annotations(scope: Scope):
    for owner, where, meta in _metadata(scope):
        notes = meta.get("annotations") or {}
        for key in notes:
            for problem in names.qualified_name(str(key).lower()):
                yield Breach(describe(owner), join(where, f"annotations[{key}]"), f"Invalid annotation key: {problem}")
        size = sum(len(str(k)) + len(str(v)) for k, v in notes.items())
        if size > names.ANNOTATIONS_TOTAL_MAX:
            yield Breach(describe(owner), join(where, "annotations"),
                         f"Too long: may not be more than {names.ANNOTATIONS_TOTAL_MAX} bytes (got {size})")


@rule("core/priority-class", "a PriorityClass's value is at most 1,000,000,000 and its name not system-",
      source=f"kubernetes v1.33 pkg/apis/scheduling/validation/validation.go ValidatePriorityClass "
             "(HighestUserDefinablePriority, SystemPriorityClassPrefix)",
      fix="use a value at most 1000000000 and a name that does not start with 'system-'")
def priority_class(scope: Scope):
    for obj in scope.objects:
        if obj.get("kind") != "PriorityClass":
            continue
        value, name = obj.get("value"), str((obj.get("metadata") or {}).get("name", ""))
        if isinstance(value, int) and value > 1_000_000_000:
            yield Breach(describe(obj), "value", f"Forbidden: maximum allowed value of a user defined priority "
                         f"is 1000000000 (got {value})")
        if name.startswith("system-"):
            yield Breach(describe(obj), "metadata.name", "Forbidden: priority class names with 'system-' prefix "
                         "are reserved for system use")
