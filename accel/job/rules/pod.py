"""Pod specs, in every pod template accel writes: the API server's ValidatePodSpec, rule by rule.

Ported from Kubernetes v1.33 `pkg/apis/core/validation/validation.go`. The JobSet, Job, Deployment
and LeaderWorkerSet controllers create Pods from these templates; a template the API server would
refuse means no pod ever starts (a JobSet is accepted, then its Jobs fail to create their Pods).
"""

from __future__ import annotations

import posixpath
from fractions import Fraction

from accel.job.pod_templates import pod_templates
from accel.job.quantities import parse_quantity
from accel.job.rules import names
from accel.job.rules.registry import Breach, Scope, containers, describe, join, repeats, rule

CORE = "kubernetes v1.33 pkg/apis/core/validation/validation.go"
CORE_HELPER = "pkg/apis/core/helper/helpers.go"


def _pods(scope: Scope):
    for template in pod_templates(scope.objects):
        yield template, describe(template.owner), join(template.path, "spec")


def _container_lists(scope: Scope, key: str):
    """Each container's list under `key` (ports, volumeMounts, env), with its owner, its field path and
    its pod template: the walk every per-container rule below shares."""
    for template, owner, base in _pods(scope):
        for where, container in containers(template.spec):
            yield template, owner, f"{base}.{where}.{key}", list(enumerate(container.get(key) or []))


@rule("pod/volume-names-unique", "volume names are unique within a pod",
      source=f"{CORE} ValidateVolumes (field.Duplicate on the volume name)",
      fix="give each volume its own name, or mount one volume (e.g. the stack's claim) instead of two")
def volume_names_unique(scope: Scope):
    for template, owner, base in _pods(scope):
        volumes = enumerate(template.spec.get("volumes") or [])
        for index, name in repeats((index, volume.get("name")) for index, volume in volumes):
            yield Breach(owner, f"{base}.volumes[{index}].name", f"Duplicate value: {name!r}")


@rule("pod/volume-name-syntax", "a volume name is a DNS-1123 label",
      source=f"{CORE} ValidateVolumes (ValidateDNS1123Label)",
      fix="name volumes with at most 63 lower-case letters, digits and '-'")
def volume_name_syntax(scope: Scope):
    for template, owner, base in _pods(scope):
        for index, volume in enumerate(template.spec.get("volumes") or []):
            for problem in names.dns1123_label(str(volume.get("name", ""))):
                yield Breach(owner, f"{base}.volumes[{index}].name", f"Invalid value {volume.get('name')!r}: {problem}")


@rule("pod/container-names-unique", "container names are unique across init containers and containers",
      source=f"{CORE} validateInitContainers, validateContainers (field.Duplicate across both lists)",
      fix="rename one of the containers")
def container_names_unique(scope: Scope):
    for template, owner, base in _pods(scope):
        for where, name in repeats((where, container.get("name")) for where, container in containers(template.spec)):
            yield Breach(owner, f"{base}.{where}.name", f"Duplicate value: {name!r}")


@rule("pod/container-name-syntax", "a container name is a DNS-1123 label",
      source=f"{CORE} validateContainerCommon (ValidateDNS1123Label)",
      fix="name containers with at most 63 lower-case letters, digits and '-'")
def container_name_syntax(scope: Scope):
    for template, owner, base in _pods(scope):
        for where, container in containers(template.spec):
            for problem in names.dns1123_label(str(container.get("name", ""))):
                yield Breach(owner, f"{base}.{where}.name", f"Invalid value {container.get('name')!r}: {problem}")


@rule("pod/port-name-syntax", "a container port name is an IANA service name",
      source=f"{CORE} validateContainerPorts (IsValidPortName)",
      fix="use at most 15 lower-case letters, digits and single '-', with at least one letter")
def port_name_syntax(scope: Scope):
    for _, owner, path, ports in _container_lists(scope, "ports"):
        for index, port in ports:
            if port.get("name"):
                for problem in names.port_name(str(port["name"])):
                    yield Breach(owner, f"{path}[{index}].name", f"Invalid value {port['name']!r}: {problem}")


@rule("pod/port-names-unique", "port names are unique within a container",
      source=f"{CORE} validateContainerPorts (field.Duplicate)",
      fix="give each port of the container its own name")
def port_names_unique(scope: Scope):
    for _, owner, path, ports in _container_lists(scope, "ports"):
        for index, name in repeats((index, port["name"]) for index, port in ports if port.get("name")):
            yield Breach(owner, f"{path}[{index}].name", f"Duplicate value: {name!r}")


@rule("pod/port-number", "a containerPort is between 1 and 65535",
      source=f"{CORE} validateContainerPorts (IsValidPortNum)",
      fix="use a port number from 1 to 65535")
def port_number(scope: Scope):
    for _, owner, path, ports in _container_lists(scope, "ports"):
        for index, port in ports:
            for problem in names.port_number(port.get("containerPort")):
                yield Breach(owner, f"{path}[{index}].containerPort",
                             f"Invalid value {port.get('containerPort')!r}: {problem}")


@rule("pod/mount-names-a-volume", "every volumeMount names a volume of the pod",
      source=f"{CORE} ValidateVolumeMounts (field.NotFound)",
      fix="declare the volume in the pod's volumes, or mount one that is declared")
def mount_names_a_volume(scope: Scope):
    for template, owner, path, mounts in _container_lists(scope, "volumeMounts"):
        declared = {v.get("name") for v in template.spec.get("volumes") or []}
        for index, mount in mounts:
            if mount.get("name") not in declared:
                known = ", ".join(sorted(map(str, declared))) or "none"
                yield Breach(owner, f"{path}[{index}].name", f"Not found: {mount.get('name')!r} (volumes: {known})")


@rule("pod/mount-paths-unique", "a container mounts at most one volume at each path",
      source=f"{CORE} ValidateVolumeMounts (mountPath \"must be unique\")",
      fix="mount each volume at its own path")
def mount_paths_unique(scope: Scope):
    for _, owner, path, mounts in _container_lists(scope, "volumeMounts"):
        normalized = (((index, mount), posixpath.normpath(str(mount.get("mountPath", "")))) for index, mount in mounts)
        for (index, mount), _ in repeats(normalized):
            yield Breach(owner, f"{path}[{index}].mountPath",
                         f"Invalid value {mount.get('mountPath')!r}: must be unique")


@rule("pod/env-var-name", "environment variable names have the portable syntax",
      source=f"{CORE} ValidateEnv (IsEnvVarName; the rule every version enforces, before the "
             "RelaxedEnvironmentVariableValidation gate)",
      fix="use letters, digits, '_', '-' or '.', not starting with a digit")
def env_var_name(scope: Scope):
    for _, owner, path, variables in _container_lists(scope, "env"):
        for index, variable in variables:
            for problem in names.env_var_name(str(variable.get("name", ""))):
                yield Breach(owner, f"{path}[{index}].name", f"Invalid value {variable.get('name')!r}: {problem}")


def is_extended_resource(name: str) -> bool:
    """Not native (no domain, or a kubernetes.io domain) and not a quota 'requests.' name
    (IsExtendedResourceName, pkg/apis/core/helper/helpers.go)."""
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")


def _resources(template, base):
    for where, container in containers(template.spec):
        resources = container.get("resources") or {}
        yield f"{base}.{where}.resources", resources.get("requests") or {}, resources.get("limits") or {}


def _quantity(value) -> Fraction | None:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError, ZeroDivisionError):
        return None


def _quantities(scope: Scope):
    """Every request and limit of every container: its owner, field path, resource name, value as written
    and parsed quantity (None when it is not a quantity)."""
    for template, owner, base in _pods(scope):
        for where, requests, limits in _resources(template, base):
            for section, values in (("requests", requests), ("limits", limits)):
                for name, value in values.items():
                    yield owner, f"{where}.{section}[{name}]", name, value, _quantity(value)


@rule("pod/resource-quantities", "every request and limit is a Kubernetes quantity",
      source="kubernetes v1.33 staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity (the "
             "API server cannot decode another value: \"quantities must match the regular expression\"); "
             f"{CORE} ValidateNonnegativeQuantity",
      fix="write a number with an optional suffix: 8, 500m, 64Gi")
def resource_quantities(scope: Scope):
    for owner, path, _, value, quantity in _quantities(scope):
        if quantity is None:
            yield Breach(owner, path, f"Invalid value {value!r}: quantities must "
                         "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        elif quantity < 0:
            yield Breach(owner, path, f"Invalid value {value!r}: must be greater than or equal to 0")


@rule("pod/extended-resource-integer", "extended resources (GPUs, TPUs, EFA) are requested in whole units",
      source=f"{CORE} ValidateResourceQuantityValue (IsIntegerResourceName, {CORE_HELPER})",
      fix="request a whole number of the device")
def extended_resource_integer(scope: Scope):
    for owner, path, name, value, quantity in _quantities(scope):
        if is_extended_resource(name) and quantity is not None and quantity.denominator != 1:
            yield Breach(owner, path, f"Invalid value {value!r}: must be an integer")


@rule("pod/extended-resource-needs-limit", "an extended resource that is requested has a limit",
      source=f"{CORE} ValidateContainerResourceRequirements (IsOvercommitAllowed: \"Limit must be set for "
             "non overcommitable resources\")",
      fix="set the device under resources.limits (the request defaults to the limit)")
def extended_resource_needs_limit(scope: Scope):
    for template, owner, base in _pods(scope):
        for where, requests, limits in _resources(template, base):
            for name in requests:
                if is_extended_resource(name) and name not in limits:
                    yield Breach(owner, f"{where}.limits[{name}]",
                                 "Required value: Limit must be set for non overcommitable resources")


@rule("pod/extended-resource-request-equals-limit", "an extended resource's request equals its limit",
      source=f"{CORE} ValidateContainerResourceRequirements (\"must be equal to <resource> limit\")",
      fix="make the request equal to the limit, or give only the limit")
def extended_resource_request_equals_limit(scope: Scope):
    for template, owner, base in _pods(scope):
        for where, requests, limits in _resources(template, base):
            for name, value in requests.items():
                if is_extended_resource(name) and name in limits:
                    request, limit = _quantity(value), _quantity(limits[name])
                    if None not in (request, limit) and request != limit:
                        yield Breach(owner, f"{where}.requests[{name}]",
                                     f"Invalid value {value!r}: must be equal to {name} limit of {limits[name]}")


@rule("pod/request-within-limit", "a request of cpu, memory or storage is at most its limit",
      source=f"{CORE} ValidateContainerResourceRequirements (\"must be less than or equal to <resource> limit\")",
      fix="lower the request or raise the limit")
def request_within_limit(scope: Scope):
    for template, owner, base in _pods(scope):
        for where, requests, limits in _resources(template, base):
            for name, value in requests.items():
                if not is_extended_resource(name) and name in limits:
                    request, limit = _quantity(value), _quantity(limits[name])
                    if None not in (request, limit) and request > limit:
                        yield Breach(owner, f"{where}.requests[{name}]",
                                     f"Invalid value {value!r}: must be less than or equal to {name} limit of "
                                     f"{limits[name]}")


@rule("pod/node-selector", "nodeSelector keys and values are valid labels",
      source=f"{CORE} ValidatePodSpec (ValidateLabels on spec.nodeSelector)",
      fix="select nodes by a valid label key and value")
def node_selector(scope: Scope):
    for template, owner, base in _pods(scope):
        for key, value in (template.spec.get("nodeSelector") or {}).items():
            for problem in names.qualified_name(str(key)) + names.label_value(str(value)):
                yield Breach(owner, f"{base}.nodeSelector[{key}]", f"Invalid value {value!r}: {problem}")


TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@rule("pod/tolerations", "tolerations are well formed",
      source=f"{CORE} ValidateTolerations (key syntax; Exists takes no value; an empty key needs Exists; "
             "operator and effect enums; tolerationSeconds only with NoExecute)",
      fix="write {key, operator: Exists, effect} or {key, operator: Equal, value, effect}")
def tolerations(scope: Scope):
    for template, owner, base in _pods(scope):
        for index, toleration in enumerate(template.spec.get("tolerations") or []):
            where = f"{base}.tolerations[{index}]"
            key, operator = toleration.get("key", ""), toleration.get("operator", "Equal")
            effect = toleration.get("effect", "")
            if key:
                for problem in names.qualified_name(str(key)):
                    yield Breach(owner, f"{where}.key", f"Invalid value {key!r}: {problem}")
            elif operator != "Exists":
                yield Breach(owner, f"{where}.operator", f"Invalid value {operator!r}: operator must be Exists "
                             "when `key` is empty, which means \"match all values and all keys\"")
            if operator == "Exists" and toleration.get("value"):
                yield Breach(owner, f"{where}.operator", "Invalid value: value must be empty when `operator` "
                             "is 'Exists'")
            elif operator not in ("Equal", "Exists"):
                yield Breach(owner, f"{where}.operator", f"Unsupported value: {operator!r}: supported values: "
                             "\"Equal\", \"Exists\"")
            if effect and effect not in TOLERATION_EFFECTS:
                yield Breach(owner, f"{where}.effect", f"Unsupported value: {effect!r}: supported values: "
                             + ", ".join(f'"{e}"' for e in TOLERATION_EFFECTS))
            if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
                yield Breach(owner, f"{where}.effect", "Invalid value: effect must be 'NoExecute' when "
                             "`tolerationSeconds` is set")


@rule("pod/container-restart-policy", "only init containers set restartPolicy, and only to Always (sidecars)",
      source=f"{CORE} validateInitContainers (restartPolicy: Always only), validateContainers (Forbidden on "
             "regular containers)",
      fix="run a sidecar as an init container with restartPolicy: Always; drop restartPolicy elsewhere")
def container_restart_policy(scope: Scope):
    for template, owner, base in _pods(scope):
        for where, container in containers(template.spec):
            policy = container.get("restartPolicy")
            if policy is None:
                continue
            if where.startswith("containers"):
                yield Breach(owner, f"{base}.{where}.restartPolicy", "Forbidden: may not be set for non-init "
                             "containers")
            elif policy != "Always":
                yield Breach(owner, f"{base}.{where}.restartPolicy", f"Unsupported value: {policy!r}: supported "
                             "values: \"Always\"")


SPREAD_ACTIONS = ("DoNotSchedule", "ScheduleAnyway")


def _spread_constraints(scope: Scope):
    for template, owner, base in _pods(scope):
        for index, constraint in enumerate(template.spec.get("topologySpreadConstraints") or []):
            yield owner, f"{base}.topologySpreadConstraints[{index}]", constraint


@rule("pod/topology-spread", "a topology spread constraint has a positive maxSkew, a topologyKey, a known "
      "whenUnsatisfiable, and minDomains only when positive and with DoNotSchedule",
      source=f"{CORE} validateTopologySpreadConstraints: ValidateMaxSkew (\"must be greater than zero\"), "
             "ValidateTopologyKey (field.Required), ValidateWhenUnsatisfiable (field.NotSupported), validateMinDomains "
             "(\"must be greater than zero\"; \"can only use minDomains if whenUnsatisfiable=DoNotSchedule\")",
      fix="give maxSkew and minDomains values of at least 1, a topologyKey, and whenUnsatisfiable DoNotSchedule "
          "where minDomains is set")
def topology_spread(scope: Scope):
    for owner, path, constraint in _spread_constraints(scope):
        skew = constraint.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            yield Breach(owner, f"{path}.maxSkew", f"Invalid value {skew!r}: must be greater than zero")
        if not constraint.get("topologyKey"):
            yield Breach(owner, f"{path}.topologyKey", "Required value: can not be empty")
        action = constraint.get("whenUnsatisfiable")
        if action not in SPREAD_ACTIONS:
            yield Breach(owner, f"{path}.whenUnsatisfiable",
                         f"Unsupported value {action!r}: supported values: {', '.join(SPREAD_ACTIONS)}")
        if "minDomains" in constraint:
            domains = constraint["minDomains"]
            if not isinstance(domains, int) or domains <= 0:
                yield Breach(owner, f"{path}.minDomains", f"Invalid value {domains!r}: must be greater than zero")
            elif action != "DoNotSchedule":
                yield Breach(owner, f"{path}.minDomains", f"Invalid value {domains!r}: can only use minDomains if "
                             "whenUnsatisfiable=DoNotSchedule")


@rule("pod/topology-spread-match-label-keys-need-selector", "a spread constraint's matchLabelKeys come with a "
      "labelSelector (the keys only narrow the selector's pods to the incoming pod's own values)",
      source=f"{CORE} validateMatchLabelKeysInTopologySpread: field.Forbidden(\"must not be specified when labelSelector "
             "is not set\"), the else branch of its labelSelector != nil (added by kubernetes/kubernetes PR #116535, "
             "v1.27: validation.go l.6967-6970 there; read 2026-11-27 in the code corpus's validation.go at commit "
             "000f2605)",
      fix="give the constraint a labelSelector selecting the workload's own pods (the Deployment's selector), or drop "
          "matchLabelKeys")
def topology_spread_match_label_keys_need_selector(scope: Scope):
    for owner, path, constraint in _spread_constraints(scope):
        if constraint.get("matchLabelKeys") and constraint.get("labelSelector") is None:
            yield Breach(owner, f"{path}.matchLabelKeys", "Forbidden: must not be specified when labelSelector is "
                         "not set")


@rule("pod/topology-spread-match-label-keys", "a spread constraint's matchLabelKeys name no key its labelSelector "
      "already selects on",
      source=f"{CORE} validateMatchLabelKeysInTopologySpread (\"exists in both matchLabelKeys and labelSelector\")",
      fix="drop the key from matchLabelKeys or from the labelSelector")
def topology_spread_match_label_keys(scope: Scope):
    for owner, path, constraint in _spread_constraints(scope):
        selector = constraint.get("labelSelector") or {}
        selected = set(selector.get("matchLabels") or {}) | {e.get("key") for e in selector.get("matchExpressions") or []}
        for index, key in enumerate(constraint.get("matchLabelKeys") or []):
            if key in selected:
                yield Breach(owner, f"{path}.matchLabelKeys[{index}]",
                             f"Invalid value {key!r}: exists in both matchLabelKeys and labelSelector")
