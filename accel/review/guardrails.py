"""Guardrail results: the plan's `policy.violations`, plus preview diagnostics that read like one.

`pulumi preview --json` drops policy events, so the offline plan is the primary source. A
diagnostic in the console's policy format (`[mandatory]  pack v1  policy-name (type: name)`)
is accepted too, for wrappers that fold violations into the diagnostics.
"""

from __future__ import annotations

import re

from accel.review.model import Diagnostic, Finding, Guardrails
from accel.review.plan_json import PlanReport
from accel.review.preview_json import URN_PREFIX, PreviewDiagnostic, split_urn

LEVELS = ("mandatory", "remediate", "advisory", "disabled")
_POLICY_LINE = re.compile(
    r"\[(?P<level>mandatory|advisory|remediate|disabled)\]\s+"
    r"(?:(?P<pack>\S+)\s+v\S+\s+)?(?P<policy>[\w.:/-]+)"
    r"(?:\s+\((?P<resource>[^)]*)\))?[:\s]*(?P<message>.*)",
    re.IGNORECASE | re.DOTALL,
)
REPORTED_SEVERITIES = ("error", "warning")


def _resource_name(urn: str | None) -> str | None:
    """A URN's name part; anything else (a bare name) as it is."""
    if not urn:
        return None
    if urn.startswith(URN_PREFIX) and urn.count("::") >= 3:
        return split_urn(urn)[3]
    return urn


def _one_line(text: str) -> str:
    """One line, in stack-file words (a preview's component warnings name Python arguments)."""
    from accel.stack_words import in_stack_words

    return in_stack_words(" ".join(text.split()))


def policy_finding(diagnostic: PreviewDiagnostic) -> Finding | None:
    """A Finding when the diagnostic is a policy violation, else None."""
    text = (diagnostic.prefix or "") + diagnostic.message
    match = _POLICY_LINE.search(text)
    if match:
        return Finding(policy=match["policy"], level=match["level"].lower(),
                       resource=match["resource"] or _resource_name(diagnostic.urn),
                       message=_one_line(match["message"]), source="preview")
    if "policy violation" in text.lower():
        level = "mandatory" if diagnostic.severity == "error" else "advisory"
        return Finding(policy="policy", level=level, resource=_resource_name(diagnostic.urn),
                       message=_one_line(text), source="preview")
    return None


def split_diagnostics(diagnostics: list[PreviewDiagnostic]) -> tuple[list[Finding], list[Diagnostic]]:
    """(policy findings, other errors and warnings); info output is left out."""
    findings: list[Finding] = []
    others: list[Diagnostic] = []
    for diagnostic in diagnostics:
        finding = policy_finding(diagnostic)
        if finding is not None:
            findings.append(finding)
        elif diagnostic.severity in REPORTED_SEVERITIES and diagnostic.message.strip():
            others.append(Diagnostic(diagnostic.severity, _resource_name(diagnostic.urn),
                                     _one_line(diagnostic.message)))
    return findings, others


def _key(finding: Finding) -> tuple[str, str | None]:
    return finding.policy, finding.resource


def _plan_findings(report: PlanReport | None) -> list[Finding]:
    if report is None or report.policy is None:
        return []
    return [Finding(v.policy, v.level.lower(), _resource_name(v.resource) if v.resource else None,
                    _one_line(v.message)) for v in report.policy.violations]


def _not_evaluated_note(head: PlanReport | None) -> str | None:
    if head is None:
        return "pass `--plan` with `accel plan --json` output (its `policy` section holds the guardrail results)."
    if head.policy is None:
        return f"the plan for stack `{head.stack}` has no `policy` section."
    if not head.policy.evaluated:
        return head.policy.note or "the guardrail pack did not run."
    return None


def guardrails(head: PlanReport | None, base: PlanReport | None, from_preview: list[Finding]) -> Guardrails:
    note = _not_evaluated_note(head)
    found = _plan_findings(head)
    seen = {(_key(f), f.message) for f in found}
    found += [f for f in from_preview if (_key(f), f.message) not in seen]
    evaluated = note is None or bool(from_preview)
    resolved: tuple[Finding, ...] = ()
    if base is not None and base.policy is not None and note is None:
        earlier = _plan_findings(base)
        before = {_key(f) for f in earlier}
        found = [Finding(f.policy, f.level, f.resource, f.message, "existing" if _key(f) in before else "new",
                         f.source) for f in found]
        after = {_key(f) for f in found}
        resolved = tuple(f for f in earlier if _key(f) not in after)
    ordered = sorted(found, key=lambda f: (LEVELS.index(f.level) if f.level in LEVELS else len(LEVELS),
                                           f.status != "new", f.policy, f.resource or ""))
    return Guardrails(evaluated=evaluated, findings=tuple(ordered), resolved=resolved,
                      note=None if evaluated else note)
