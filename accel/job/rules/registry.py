"""One registry of the rules the generated Kubernetes objects are checked by.

A rule is ported from the code of the system that enforces it (the API server, a controller's
webhook, a CRD's validation rules) and says where: `source` names the upstream function, file and
version. `check` reads a Scope (the objects, and the cluster the stack declares) and yields
Breaches: the object, the field, what is wrong, and how to fix it when that differs per case.

Severity "error" means the real system refuses the object, or the job would never run;
"flag" marks a known risk that another piece of work resolves (the check still says it).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "flag"]


@dataclass(frozen=True)
class Breach:
    object: str          # "JobSet training/llama-70b"
    field: str           # "spec.replicatedJobs[0].template.spec.template.spec.volumes[3].name"
    message: str
    fix: str | None = None   # overrides the rule's fix when the remedy depends on the case


@dataclass
class Scope:
    """What the rules read: the workload manifests, the stack's own Kubernetes objects, the cluster."""

    manifests: list[dict[str, Any]]
    stack_objects: list[dict[str, Any]] = field(default_factory=list)
    cluster: Any = None  # accel.job.declared.DeclaredCluster, or None for the object rules alone

    @property
    def objects(self) -> list[dict[str, Any]]:
        return [*self.manifests, *self.stack_objects]


Check = Callable[[Scope], Iterable[Breach]]


@dataclass(frozen=True)
class Rule:
    id: str
    summary: str
    source: str
    fix: str
    severity: Severity
    check: Check


@dataclass(frozen=True)
class Violation:
    rule: Rule
    breach: Breach

    @property
    def fix(self) -> str:
        return self.breach.fix or self.rule.fix


RULES: dict[str, Rule] = {}


def rule(rule_id: str, summary: str, *, source: str, fix: str,
         severity: Severity = "error") -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id} is registered twice")
        RULES[rule_id] = Rule(rule_id, summary, source, fix, severity, check)
        return check
    return register


# What reading a field of the wrong shape raises (a list where a mapping belongs, text for a number).
MALFORMED = (AttributeError, TypeError, KeyError, ValueError)


def run(scope: Scope, rules: Iterable[Rule] | None = None) -> list[Violation]:
    """Every breach of every rule. A hand-written object whose fields have the wrong shapes cannot be read by
    a rule: that is reported as the rule's breach (the API server's schema would refuse the object first)."""
    found = []
    for r in RULES.values() if rules is None else rules:
        try:
            found += [Violation(r, breach) for breach in r.check(scope)]
        except MALFORMED as error:
            found.append(Violation(r, Breach("(manifests)", "?", f"a field does not have the shape Kubernetes "
                                             f"defines, so this rule cannot read it ({type(error).__name__}: "
                                             f"{error})", "check the manifest with kubectl apply --dry-run=server")))
    return found


# ---- reading objects -------------------------------------------------------------------------

def describe(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', '?')} {where}{meta.get('name', '?')}"


def of_kind(objects: Iterable[dict[str, Any]], *kinds: str) -> Iterator[dict[str, Any]]:
    return (o for o in objects if o.get("kind") in kinds)


def spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def containers(pod_spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field, container) of the init containers then the containers."""
    for key in ("initContainers", "containers"):
        for index, container in enumerate(pod_spec.get(key) or []):
            yield f"{key}[{index}]", container


def command_words(argv: list[str]) -> list[str] | None:
    """A container's command as its shell reads it: a `sh -c SCRIPT` (or bash) script split into words and its
    && || ; | & operators, else argv itself; None where the script has an unbalanced quote (the shell would refuse
    it before any program in it runs)."""
    if len(argv) >= 3 and os.path.basename(argv[0]) in ("sh", "bash") and argv[1] == "-c":
        lexer = shlex.shlex(argv[2], posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            return list(lexer)
        except ValueError:
            return None
    return argv


def repeats(keyed: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """(where, key) of each item whose key an earlier item already had: the field.Duplicate of the API server's
    list checks (names of volumes, containers, ports, replicated jobs; mount paths). `keyed` yields (where, key)."""
    seen: set[Any] = set()
    for where, key in keyed:
        if key in seen:
            yield where, key
        seen.add(key)


def integer(value: Any, default: int = 1) -> int | None:
    """A count field as the API server reads it: an integer (the default when absent); None when it is not one
    (rule schema/integer-counts reports it, and the other rules skip it)."""
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def join(*parts: str) -> str:
    return ".".join(p for p in parts if p)
