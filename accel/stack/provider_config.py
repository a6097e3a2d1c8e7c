"""The stack file's aws:*, gcp:* and kubernetes:* keys: handed to the stack's explicit providers with their types,
or refused.

The stack's AWS, Google and Kubernetes providers are explicit, and an explicit provider reads no stack config itself
(pulumi/pulumi-aws#1307), so a key the program does not pass would be dropped without a word: a profile, an assumed
role or a list of allowed accounts ignored, and the stack deployed with whatever the default credential chain gives;
a kubernetes:context ignored, and a bring-your-own cluster's objects sent to the kubeconfig's current context.
Here every key of those namespaces is either read (provider_keys.yaml: which, its provider argument and its kind),
checked against the plan (the region keys: the plan decides the region) or against accel:cluster (its kubeconfig and
context), or refused naming it.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from accel.base.errors import UsageError
from accel.components.provider_settings import ProviderSettings
# What the offline engine sees for a `secure:` value it cannot decrypt.
from accel.stack.config import SECRET_PLACEHOLDER
from accel.policies.plan import Plan

KEYS_FILE = Path(__file__).with_name("provider_keys.yaml")
CLOUD_NAMES = {"aws": "AWS", "gcp": "Google", "kubernetes": "Kubernetes"}


@dataclass(frozen=True)
class ProviderKey:
    """One stack key the program hands to its provider (provider_keys.yaml)."""

    name: str                      # as written in the stack file, after the namespace: `assumeRoles`
    arg: str                       # the ProviderArgs keyword: `assume_roles`
    kind: str                      # string, strings, boolean, mapping, object, objects
    why: str
    # a credential: always handed over as a secret; "contents": when the value is a file's contents, not its path
    secret: bool | str = False
    own: bool = False              # read by its own code in accel/stack/program.py
    cluster_field: str | None = None  # the accel:cluster field that says the same thing (kubeconfig, context)
    fields: Mapping[str, str] = field(default_factory=dict)  # object / objects: field -> kind (empty: any string)
    # object / objects whose fields are all strings, named by the SDK's input type (`pulumi_aws:ProviderEndpointArgs`)
    fields_of: str | None = None


@dataclass(frozen=True)
class ProviderTable:
    sdk: str
    region_keys: tuple[str, ...]
    keys: Mapping[str, ProviderKey]
    built_with: str = ""                          # what the program itself gives the provider (said in refusals)
    only_on: tuple[str, ...] | None = None        # plan clouds on which the keys are read; None: every plan
    elsewhere: str = ""                           # why they are refused on any other plan
    refused: Mapping[str, str] = field(default_factory=dict)   # {key: why}: refused for its own reason


@lru_cache(maxsize=1)
def provider_tables() -> dict[str, ProviderTable]:
    """{cloud: its table}, from provider_keys.yaml."""
    from accel.base.safe_files import read_text
    from accel.base.yaml_files import parse_yaml

    document = parse_yaml(read_text(KEYS_FILE, "provider keys table"))
    tables = {}
    for cloud in CLOUD_NAMES:
        entry = document[cloud]
        only_on = entry.get("only_on")
        tables[cloud] = ProviderTable(
            sdk=entry["sdk"], region_keys=tuple(entry["region_keys"]),
            keys={name: ProviderKey(name=name, **spec) for name, spec in entry["keys"].items()},
            built_with=entry["built_with"], only_on=tuple(only_on) if only_on is not None else None,
            elsewhere=entry.get("elsewhere", ""), refused=dict(entry.get("refused") or {}))
    return tables


def provider_settings(config: Mapping[str, Any], plan: Plan, source: str, secret_keys: Collection[str] = (),
                      cluster: Any = None) -> dict[str, ProviderSettings]:
    """{cloud: the arguments for its provider} from the stack's aws:*, gcp:* and kubernetes:* keys.

    UsageError naming the key for a key no provider of the stack would read, a value of the wrong kind, a region
    key that disagrees with the plan's region (checked for the plan's cloud; a stack decided at run time may carry
    both clouds' keys), a kubernetes:* key on a plan that builds its own cluster, or a kubernetes:kubeconfig /
    kubernetes:context that disagrees with `cluster` (accel:cluster, an ExistingCluster). A key `cluster` already
    says the same of is not repeated in the arguments. A key that was a secret in the stack file, or is a
    credential, stays a secret."""
    settings = {}
    for cloud, table in provider_tables().items():
        args: dict[str, Any] = {}
        secret: set[str] = set()
        unread: list[str] = []
        for key in sorted(k for k in config if k.partition(":")[0] == cloud):
            name = key.partition(":")[2]
            raw = config[key]
            if name in table.region_keys:
                if cloud == plan.cloud and raw != SECRET_PLACEHOLDER:
                    _check_region(key, name, raw, plan, source)
                continue
            if name in table.refused:
                raise UsageError(f"{source}: {key}: refused: {' '.join(table.refused[name].split())}; remove {key}")
            if table.only_on is not None and plan.cloud not in table.only_on:
                raise UsageError(f"{source}: {key}: refused on a plan on {plan.cloud}: "
                                 f"{' '.join(table.elsewhere.split())}; remove {key}")
            spec = table.keys.get(name)
            if spec is None:   # every unread key of the namespace named at once, after the loop
                unread.append(key)
                continue
            if spec.own:
                continue
            is_secret = key in secret_keys
            value = raw if is_secret and raw == SECRET_PLACEHOLDER else \
                _typed(raw, spec.kind, spec.fields or sdk_string_fields(spec.fields_of), key, source)
            if spec.cluster_field and _said_by_cluster(cluster, spec.cluster_field, key, value, source):
                continue
            args[spec.arg] = value
            if is_secret or _is_credential(spec, value):
                secret.add(spec.arg)
        if unread:
            raise UsageError(_unread_message(cloud, unread, table, source))
        settings[cloud] = ProviderSettings(args=args, secret=frozenset(secret))
    return settings


@lru_cache(maxsize=None)
def sdk_string_fields(input_type: str | None) -> dict[str, str]:
    """{field: "string"} for each field of the SDK input type `module:Class`, by the names the provider's config
    takes (the `@pulumi.getter(name=...)` ones: `lambda`, not `lambda_`); {} for None. Imported only for a stack
    that sets such a key."""
    if input_type is None:
        return {}
    import importlib

    from pulumi._types import input_type_py_to_pulumi_names

    module, _, name = input_type.partition(":")
    cls = getattr(importlib.import_module(module), name)
    return dict.fromkeys(sorted(input_type_py_to_pulumi_names(cls).values()), "string")


def _is_credential(spec: ProviderKey, value: Any) -> bool:
    """A credential whatever its value (aws:secretKey), or, for `secret: contents` (kubernetes:kubeconfig), when the
    value is a file's contents rather than its path: a kubeconfig's text holds the cluster's token or client key."""
    if spec.secret == "contents":
        return isinstance(value, str) and ("\n" in value or value.lstrip().startswith(("{", "apiVersion")))
    return bool(spec.secret)


def _said_by_cluster(cluster: Any, field_name: str, key: str, value: Any, source: str) -> bool:
    """True if accel:cluster already gives the provider this value (the key repeats it); UsageError naming both keys
    if it gives another; False if it says nothing, and the key's value is the one the provider gets."""
    given = getattr(cluster, field_name, None) if cluster is not None else None
    if given is None:
        return False
    if value == SECRET_PLACEHOLDER:   # offline, a secret's value is unknown: the CLI run compares it
        return False
    if value == given or (field_name == "kubeconfig" and os.path.expanduser(value) == os.path.expanduser(given)):
        return True
    raise UsageError(f"{source}: {key}: {_shown(value)} differs from accel:cluster.{field_name} ({given!r}); both choose "
                     f"the {field_name} of the cluster's Kubernetes provider: keep one of accel:cluster.{field_name} "
                     f"and {key}")


def read_keys(cloud: str) -> list[str]:
    """The stack keys of `cloud` the program reads, in the table's order, region keys last."""
    table = provider_tables()[cloud]
    return [f"{cloud}:{name}" for name in (*table.keys, *table.region_keys)]


def _unread_message(cloud: str, keys: list[str], table: ProviderTable, source: str) -> str:
    known = [*table.keys, *table.region_keys]
    hints = []
    for key in keys:
        hint = difflib.get_close_matches(key.partition(":")[2], known, n=1)
        if hint:
            hints.append(f"did you mean '{cloud}:{hint[0]}'? " if len(keys) == 1 else
                         f"for {key} did you mean '{cloud}:{hint[0]}'? ")
    these, them = ("this key", keys[0]) if len(keys) == 1 else \
        ("these keys", f"{', '.join(keys[:-1])} and {keys[-1]}")
    return (f"{source}: {', '.join(keys)}: the stack's {CLOUD_NAMES[cloud]} provider would ignore {these}: it is "
            f"explicit (built with {table.built_with}), so it reads only the {cloud}:* keys accel hands it "
            f"(pulumi/pulumi-aws#1307); {''.join(hints)}accel reads {', '.join(read_keys(cloud))} "
            f"(docs/contracts.md, section 4); remove {them}")


def _check_region(key: str, name: str, raw: Any, plan: Plan, source: str) -> None:
    """The region comes from the plan; a stack value that agrees is accepted, one that differs is refused."""
    value = raw if isinstance(raw, str) else json.dumps(raw)
    if name == "zone":
        if value in plan.zones:
            return
        where = f"not one of the plan's zones ({', '.join(plan.zones)})"
        wanted = value.rsplit("-", 1)[0]
    else:
        if value == plan.region:
            return
        where = f"not the plan's region, {plan.region}"
        wanted = value
    raise UsageError(
        f"{source}: {key}: {value!r} is {where}; the plan decides where the stack builds and its provider is "
        f"given the plan's region, so {key} would be ignored: remove it (or set it to the plan's). To build in "
        f"{wanted}, change the plan's region: constrain the workload with accel:workload.constraints.regions: "
        f"[{wanted}] (or accel:hardware.region for a hardware pin) and pin again with "
        "`accel choose WORKLOAD.yaml --write-stack STACK`")


def _typed(raw: Any, kind: str, fields: Mapping[str, str], where: str, source: str) -> Any:
    """The value as the provider argument's kind, or UsageError naming `where` (the key, or key.field)."""
    value = decoded_config_value(raw) if kind != "string" else raw
    if kind == "string":
        # Any text: a YAML object given here arrives as its JSON text, indistinguishable from gcp:credentials' own
        # JSON (a service account key), so it is not second-guessed.
        if isinstance(value, str):
            return value
        expected = "a string"
    elif kind == "boolean":
        if isinstance(value, bool):
            return value
        expected = "true or false"
    elif kind == "strings":
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return value
        expected = "a list of strings"
    elif kind == "mapping":
        if isinstance(value, dict) and all(isinstance(item, str) for item in value.values()):
            return value
        expected = "a mapping of names to strings"
    elif kind == "object":
        if isinstance(value, dict):
            return _typed_object(value, fields, where, source)
        expected = "a mapping" + (f" with the fields {', '.join(fields)}" if fields else "")
    elif kind == "objects":
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return [_typed_object(item, fields, f"{where}[{index}]", source) for index, item in enumerate(value)]
        expected = "a list of mappings" + (f" with the fields {', '.join(fields)}" if fields else "")
    else:  # pragma: no cover - the table names only the kinds above (tests/test_provider_config.py)
        raise ValueError(f"provider_keys.yaml: {where}: unknown kind {kind!r}")
    raise UsageError(f"{source}: {where}: expected {expected}, got {_shown(value)}")


def _typed_object(value: dict, fields: Mapping[str, str], where: str, source: str) -> dict:
    if not fields:  # a map of names to strings (aws:endpoints entries: {SERVICE: URL})
        return _typed(value, "mapping", {}, where, source)
    result = {}
    for name, item in value.items():
        kind = fields.get(name)
        if kind is None:
            hint = difflib.get_close_matches(str(name), list(fields), n=1)
            suggestion = f"did you mean {hint[0]!r}? " if hint else ""
            listed = (f"the fields are {', '.join(fields)}" if len(fields) <= 20 else
                      f"the provider's schema has {len(fields)}, all lowercase (docs/contracts.md, section 4)")
            raise UsageError(f"{source}: {where}.{name}: not a field the provider takes; {suggestion}{listed}")
        result[name] = _typed(item, kind, {}, f"{where}.{name}", source)
    return result


def decoded_config_value(raw: Any) -> Any:
    """Pulumi config holds objects and lists as JSON text and booleans as 'true'/'false'."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
