"""Run the guardrail pack offline over a captured resource graph, as the Pulumi CLI would.

`accel plan` captures what a stack declares on the mock engine and hands the resources
here. Each resource becomes the same `ResourceValidationArgs` / `StackValidationArgs` /
`PolicyResource` objects the CLI's analyzer builds, with properties passed through
pulumi_policy's own deserializer, and the same rule code runs. Pack configuration follows
the CLI: schema defaults first, then `all`, then per-policy entries; disabled rules do
nothing; remediate counts as mandatory.

One difference is deliberate: the analyzer protocol does not carry retainOnDelete, the
captured graph does, so offline the options object also has `retain_on_delete`.

    python -m accel.policies.guardrails.offline PLAN.json [--policy-pack-config FILE]

reads `accel plan --json` output (or a JSON list of resources), prints violations grouped
by level and exits 4 when one is mandatory.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import sys
from collections.abc import Mapping, Sequence
from inspect import isawaitable
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from accel.base.errors import UsageError
from accel.base.json_limits import check_json_bounds
from accel.policies.guardrails.rules import PACK_NAME, all_policies

LEVELS = ("mandatory", "advisory")
EXIT_MANDATORY = 4
_PACK_DEFAULT_LEVEL = EnforcementLevel.ADVISORY  # what __main__.py gives the PolicyPack


class PolicyConfigError(UsageError, ValueError):
    """The pack configuration names an unknown policy or key, or a value of the wrong type."""


class CapturedResourceOptions(PolicyResourceOptions):
    """The analyzer's resource options, plus retainOnDelete, which the captured graph knows."""

    def __init__(self, *, protect: bool, parent: str | None, retain_on_delete: bool):
        super().__init__(protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)
        self.retain_on_delete = retain_on_delete


# --- configuration ----------------------------------------------------------------------


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float), "integer": (int,), "boolean": (bool,), "string": (str,),
    "array": (list, tuple), "object": (dict,),
}


def _check_value(where: str, value: Any, spec: Mapping[str, Any]) -> None:
    expected = spec.get("type")
    if expected in _JSON_TYPES:
        ok = isinstance(value, _JSON_TYPES[expected]) and not (expected in ("number", "integer") and isinstance(value, bool))
        if expected == "integer" and isinstance(value, float) and value.is_integer():
            ok = True
        if not ok:
            raise PolicyConfigError(f"{where}: expected {expected}, got {value!r}")
    if "enum" in spec and value not in spec["enum"]:
        raise PolicyConfigError(f"{where}: {value!r} is not one of {spec['enum']}")
    if "minimum" in spec and isinstance(value, (int, float)) and value < spec["minimum"]:
        raise PolicyConfigError(f"{where}: {value!r} is below the minimum {spec['minimum']}")
    if expected == "array" and isinstance(spec.get("items"), Mapping):
        for index, item in enumerate(value):
            _check_value(f"{where}[{index}]", item, spec["items"])


def _level(where: str, value: Any) -> EnforcementLevel:
    try:
        return EnforcementLevel(value)
    except ValueError:
        allowed = ", ".join(level.value for level in EnforcementLevel)
        raise PolicyConfigError(f"{where}: enforcement level {value!r} is not one of {allowed}") from None


def resolve_config(policies: Sequence[Policy], pack_config: Mapping[str, Any] | None
                   ) -> dict[str, tuple[EnforcementLevel, dict[str, Any]]]:
    """Each policy's effective (level, properties), as the CLI reconciles them."""
    resolved: dict[str, tuple[EnforcementLevel, dict[str, Any]]] = {}
    by_name = {p.name: p for p in policies}
    for policy in policies:
        defaults = {}
        if policy.config_schema is not None:
            defaults = {k: json.loads(json.dumps(v["default"]))
                        for k, v in policy.config_schema.properties.items() if "default" in v}
        resolved[policy.name] = (policy.enforcement_level or _PACK_DEFAULT_LEVEL, defaults)
    config = dict(pack_config or {})
    if "all" in config:
        entry = config.pop("all")
        level = entry.get("enforcementLevel") if isinstance(entry, Mapping) else entry
        if level is not None:
            forced = _level("all", level)
            resolved = {name: (forced, props) for name, (_, props) in resolved.items()}
    for name, entry in config.items():
        if name not in by_name:
            hint = difflib.get_close_matches(name, list(by_name), n=1)
            raise PolicyConfigError(f"{name}: no such policy in {PACK_NAME}"
                                    + (f"; did you mean {hint[0]!r}?" if hint else ""))
        level, props = resolved[name]
        if isinstance(entry, str):
            resolved[name] = (_level(name, entry), props)
            continue
        if not isinstance(entry, Mapping):
            raise PolicyConfigError(f"{name}: expected an enforcement level or an object, got {entry!r}")
        schema = by_name[name].config_schema
        known = schema.properties if schema is not None else {}
        props = dict(props)
        for key, value in entry.items():
            if key == "enforcementLevel":
                level = _level(f"{name}.enforcementLevel", value)
                continue
            if key not in known:
                hint = difflib.get_close_matches(key, list(known), n=1)
                allowed = f"; did you mean {hint[0]!r}?" if hint else (
                    f"; allowed: {', '.join(known)}" if known else "; this policy takes no settings")
                raise PolicyConfigError(f"{name}.{key}: unknown setting{allowed}")
            _check_value(f"{name}.{key}", value, known[key])
            props[key] = value
        resolved[name] = (level, props)
    for name, (_, props) in resolved.items():
        schema = by_name[name].config_schema
        for key in (schema.required or []) if schema is not None else []:
            if key not in props:
                raise PolicyConfigError(f"{name}.{key}: required setting is missing")
    return resolved


def _read_bounded_json(path: str | Path) -> Any:
    """JSON from a file, refused (UsageError) past accel's size and depth bounds instead of recursing."""
    from accel.base.json_limits import describe_number_error
    from accel.base.safe_files import read_text

    text = read_text(path, "policy pack config (JSON)")
    check_json_bounds(text, str(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError as error:
        raise UsageError(f"{path}: {describe_number_error(error) or error}") from None


def load_pack_config(path: str | Path) -> dict[str, Any]:
    """Read a --policy-pack-config JSON file (the same file the CLI takes)."""
    try:
        data = _read_bounded_json(path)
    except FileNotFoundError:
        raise PolicyConfigError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise PolicyConfigError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except UsageError as error:
        raise PolicyConfigError(str(error)) from None
    if not isinstance(data, dict):
        raise PolicyConfigError(f"{path}: expected a JSON object mapping policy names to settings")
    return data


# --- captured resources -> policy arguments ---------------------------------------------


def _urn(resource: Mapping[str, Any]) -> str:
    return resource.get("urn") or f"urn:pulumi:offline::accel::{resource['type']}::{resource['name']}"


def _props(resource: Mapping[str, Any]) -> Any:
    return unknown_checking_proxy(deserialize_properties(dict(resource.get("inputs") or {})))


def _options(resource: Mapping[str, Any]) -> CapturedResourceOptions:
    return CapturedResourceOptions(protect=bool(resource.get("protect")), parent=resource.get("parent") or None,
                                   retain_on_delete=bool(resource.get("retain_on_delete")))


def resource_args(resource: Mapping[str, Any], config: Mapping[str, Any] | None = None,
                  stack_tags: Mapping[str, str] | None = None, props: Any = None) -> ResourceValidationArgs:
    """What the CLI's analyzer hands a resource policy for this captured resource (`props`: its inputs
    already deserialized, shared read-only by every policy)."""
    return ResourceValidationArgs(resource["type"], _props(resource) if props is None else props, _urn(resource),
                                  resource["name"],
                                  _options(resource), None, dict(config or {}), dict(stack_tags or {}))


def policy_resources(resources: Sequence[Mapping[str, Any]]) -> list[PolicyResource]:
    """What the CLI's analyzer hands a stack policy: every resource, parents and dependencies linked."""
    built = [PolicyResource(r["type"], _props(r), _urn(r), r["name"], _options(r), None, None, [], {})
             for r in resources]
    by_urn = {p.urn: p for p in built}
    for raw, resource in zip(resources, built):
        if raw.get("parent") in by_urn:
            resource.parent = by_urn[raw["parent"]]
        resource.dependencies = [by_urn[u] for u in raw.get("dependencies") or [] if u in by_urn]
    return built


# --- running ----------------------------------------------------------------------------


def _run(result: Any) -> None:
    if isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


def evaluate(resources: list[dict], pack_config: dict | None = None,
             stack_tags: Mapping[str, str] | None = None) -> list[dict]:
    """Every violation the pack reports for this graph: {policy, level, resource, message}.

    `stack_tags` are the stack's tags as the analyzer hands them to policies (the stack file's `pulumi:tags`).
    """
    policies = all_policies()
    settings = resolve_config(policies, pack_config)
    violations: list[dict] = []
    stack_resources = policy_resources(resources)

    for policy in policies:
        level, config = settings[policy.name]
        if level == EnforcementLevel.DISABLED:
            continue
        reported = "mandatory" if level in (EnforcementLevel.MANDATORY, EnforcementLevel.REMEDIATE) else "advisory"

        def report_for(default_resource: str):
            def report_violation(message: str, urn: str | None = None) -> None:
                violations.append({"policy": policy.name, "level": reported,
                                   "resource": urn or default_resource, "message": message})
            return report_violation

        def run_guarded(call, default_resource: str) -> None:
            try:
                _run(call(report_for(default_resource)))
            except UnknownValueError as error:
                violations.append({"policy": policy.name, "level": "advisory", "resource": default_resource,
                                   "message": f"can't run policy '{policy.name}' during preview: {error.message}"})
            except _NotApplicableError:
                pass

        if isinstance(policy, ResourceValidationPolicy):
            for raw, deserialized in zip(resources, stack_resources):
                # Inputs deserialized once per resource, not once per policy: rules only read them.
                args = resource_args(raw, config, stack_tags, deserialized.props)
                target = raw.get("urn") or raw["name"]
                run_guarded(lambda report, args=args: policy.validate(args, report), target)
        elif isinstance(policy, StackValidationPolicy):
            args = StackValidationArgs(stack_resources, dict(config), dict(stack_tags or {}))
            run_guarded(lambda report: policy.validate(args, report), "stack")
    names = {_urn(r): r.get("urn") or r["name"] for r in resources}
    for violation in violations:
        violation["resource"] = names.get(violation["resource"], violation["resource"])
    return violations


def has_mandatory(violations: Sequence[Mapping[str, Any]]) -> bool:
    return any(v["level"] == "mandatory" for v in violations)


def group_by_level(violations: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    return {level: [v for v in violations if v["level"] == level] for level in LEVELS}


def format_report(violations: Sequence[Mapping[str, Any]]) -> str:
    """Plain text, mandatory first; one line per violation naming the rule and the resource."""
    if not violations:
        return f"{PACK_NAME}: no violations"
    lines = []
    for level, group in group_by_level(violations).items():
        if not group:
            continue
        lines.append(f"{level} ({len(group)}):")
        lines.extend(f"  [{v['policy']}] {v['message']}" for v in group)
    return "\n".join(lines)


def _resources_from(document: Any) -> list[dict]:
    if isinstance(document, dict) and isinstance(document.get("resources"), list):
        return document["resources"]
    if isinstance(document, list):
        return document
    raise PolicyConfigError("expected `accel plan --json` output or a JSON list of resources")


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m accel.policies.guardrails.offline",
                                     description="Run the accel guardrails over `accel plan --json` output.")
    parser.add_argument("plan", help="accel plan --json output, or a JSON list of captured resources")
    parser.add_argument("--policy-pack-config", help="the same JSON file `pulumi preview --policy-pack-config` takes")
    parser.add_argument("--json", action="store_true", help="print the violations as JSON")
    options = parser.parse_args(argv)
    try:
        resources = _resources_from(_read_bounded_json(options.plan))
        config = load_pack_config(options.policy_pack_config) if options.policy_pack_config else None
        violations = evaluate(resources, config)
    except (OSError, ValueError, UsageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(violations, indent=2) if options.json else format_report(violations))
    return EXIT_MANDATORY if has_mandatory(violations) else 0


if __name__ == "__main__":
    raise SystemExit(main())
