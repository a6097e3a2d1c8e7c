"""Guardrail results: the pack's own run in the preview when its event log is given, else the plan's.

`pulumi preview --json` drops policy events; `pulumi preview --event-log FILE` keeps them
(accel/review/event_log.py), and then those are the results shown, marked as the pack's own run.
Without an event log the offline plan's `policy.violations` (the pack re-run over the captured
graph by `accel plan`) are shown, marked as re-derived offline. A preview diagnostic in the
console's policy format (`[mandatory]  pack v1  policy-name (type: name)`) is accepted too, for
wrappers that fold violations into the diagnostics.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

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
EVENT_LOG, OFFLINE = "event-log", "offline"

if TYPE_CHECKING:
    from accel.review.event_log import PackRun


def resource_name(urn: str | None) -> str | None:
    """A URN's name part; anything else (a bare name) as it is."""
    if not urn:
        return None
    if urn.startswith(URN_PREFIX) and urn.count("::") >= 3:
        return split_urn(urn)[3]
    return urn


def one_line(text: str) -> str:
    """One line, in stack-file words (a preview's component warnings name Python arguments)."""
    from accel.stack.words import in_stack_words

    return in_stack_words(" ".join(text.split()))


def policy_finding(diagnostic: PreviewDiagnostic) -> Finding | None:
    """A Finding when the diagnostic is a policy violation, else None."""
    text = (diagnostic.prefix or "") + diagnostic.message
    match = _POLICY_LINE.search(text)
    if match:
        return Finding(policy=match["policy"], level=match["level"].lower(),
                       resource=match["resource"] or resource_name(diagnostic.urn),
                       message=one_line(match["message"]), source="preview")
    if "policy violation" in text.lower():
        level = "mandatory" if diagnostic.severity == "error" else "advisory"
        return Finding(policy="policy", level=level, resource=resource_name(diagnostic.urn),
                       message=one_line(text), source="preview")
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
            others.append(Diagnostic(diagnostic.severity, resource_name(diagnostic.urn),
                                     one_line(diagnostic.message)))
    return findings, others


def _key(finding: Finding) -> tuple[str, str | None]:
    return finding.policy, finding.resource


def _plan_findings(report: PlanReport | None) -> list[Finding]:
    if report is None or report.policy is None:
        return []
    return [Finding(v.policy, v.level.lower(), resource_name(v.resource) if v.resource else None,
                    one_line(v.message)) for v in report.policy.violations]


def _not_evaluated_note(head: PlanReport | None) -> str | None:
    if head is None:
        return "pass `--plan` with `accel plan --json` output (its `policy` section holds the guardrail results)."
    if head.policy is None:
        return f"the plan for stack `{head.stack}` has no `policy` section."
    if not head.policy.evaluated:
        return head.policy.note or "the guardrail pack did not run."
    return None


def _from_event_log(run: PackRun, base: PlanReport | None) -> Guardrails:
    if not run.ran:
        why = ("no policy pack ran in the preview (pass `--policy-pack policies/guardrails` to `pulumi preview`)"
               if run.finished else "the event log ends before the preview's summary: the preview did not finish")
        return Guardrails(evaluated=False, note=why, origin=EVENT_LOG)
    return _compared(list(run.findings), base, EVENT_LOG, tuple(sorted(run.packs.items())))


def _compared(found: list[Finding], base: PlanReport | None, origin: str,
              packs: tuple[tuple[str, str], ...] = ()) -> Guardrails:
    resolved: tuple[Finding, ...] = ()
    if base is not None and base.policy is not None:
        earlier = _plan_findings(base)
        before = {_key(f) for f in earlier}
        found = [Finding(f.policy, f.level, f.resource, f.message, "existing" if _key(f) in before else "new",
                         f.source) for f in found]
        after = {_key(f) for f in found}
        resolved = tuple(f for f in earlier if _key(f) not in after)
    ordered = sorted(found, key=lambda f: (LEVELS.index(f.level) if f.level in LEVELS else len(LEVELS),
                                           f.status != "new", f.policy, f.resource or ""))
    return Guardrails(evaluated=True, findings=tuple(ordered), resolved=resolved, origin=origin, packs=packs)


def guardrails(head: PlanReport | None, base: PlanReport | None, from_preview: list[Finding],
               pack_run: PackRun | None = None) -> Guardrails:
    """The guardrail section: the pack's own run when `pack_run` (the event log) is given, else the plan's."""
    if pack_run is not None:
        return _from_event_log(pack_run, base)
    note = _not_evaluated_note(head)
    found = _plan_findings(head)
    seen = {(_key(f), f.message) for f in found}
    found += [f for f in from_preview if (_key(f), f.message) not in seen]
    if note is not None and not from_preview:
        return Guardrails(evaluated=False, note=note)
    if note is not None:
        base = None  # nothing of this branch's plan to compare the base's results with
    return _compared(found, base, OFFLINE if note is None else "preview")
