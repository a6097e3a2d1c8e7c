"""The guardrail pack's own results, read from a preview's engine event log (`pulumi preview --event-log FILE`).

`pulumi preview --json` leaves policy violations out; the event log keeps them. The log is one JSON
engine event per line, the `EngineEvent` union of pulumi/pulumi sdk/go/common/apitype/events.go
(the Python Automation API reads the same file: pulumi.automation.events). Two kinds matter here:

- `policyEvent` (apitype.PolicyEvent): `resourceUrn` (omitted for a stack policy's violation without
  a resource), `message`, `color`, `policyName`, `policyPackName`, `policyPackVersion`,
  `policyPackVersionTag`, `enforcementLevel`. The engine writes the level as the analyzer's
  enforcement level ("mandatory" or "advisory"; the struct's comment still says "warning", an
  older name, accepted here as advisory) and the message with the display's colour tags around it
  (pkg/engine events.go policyViolationEvent), which are stripped.
- `summaryEvent`: its `PolicyPacks` (PascalCase in the JSON, kept for compatibility upstream)
  names every pack that ran, so a log with no violations can say "the pack ran and passed"
  rather than "no pack ran".

Each line is bounded like every JSON input (accel.base.json_limits) and the file as a whole by
its size; a line that is not a JSON object is exit 2 naming the file and the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from accel.base.errors import UsageError
from accel.base.json_limits import MAX_BYTES, check_json_bounds, describe_number_error, unique_keys
from accel.base.model import StrictModel, describe_validation_error
from accel.review.model import Finding

_COLOUR_TAG = re.compile(r"<\{%[^%]*%\}>")  # pulumi's colour markup, e.g. <{%fg 12%}> ... <{%reset%}>
LEVELS = {"mandatory": "mandatory", "advisory": "advisory", "warning": "advisory", "remediate": "remediate",
          "disabled": "disabled"}


class PolicyEvent(StrictModel):
    """apitype.PolicyEvent as it appears in the event log."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    resource_urn: str | None = Field(None, alias="resourceUrn")
    message: str
    policy_name: str = Field(alias="policyName")
    policy_pack_name: str = Field(alias="policyPackName")
    policy_pack_version: str | None = Field(None, alias="policyPackVersion")
    enforcement_level: str = Field(alias="enforcementLevel")


@dataclass(frozen=True)
class PackRun:
    """What the event log says the policy packs did during the preview."""

    findings: tuple[Finding, ...] = ()
    packs: dict[str, str] = field(default_factory=dict)  # pack name -> version, from the summary event
    finished: bool = False                               # a summary event was written

    @property
    def ran(self) -> bool:
        return bool(self.packs) or bool(self.findings)


def _text(path: Path) -> str:
    from accel.base.safe_files import read_text

    return read_text(path, "event log (`pulumi preview --event-log`)", max_bytes=MAX_BYTES)


def _events(path: Path, text: str):
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        check_json_bounds(line, where)
        try:
            event = json.loads(line, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as error:
            raise UsageError(f"{where}: not valid JSON at column {error.colno}: {error.msg}; the event log of "
                             "`pulumi preview --event-log` has one JSON engine event per line") from None
        except ValueError as error:  # Python's integer-string limit
            raise UsageError(f"{where}: {describe_number_error(error) or error}") from None
        if not isinstance(event, dict):
            raise UsageError(f"{where}: expected a JSON engine event (an object), got {type(event).__name__}")
        yield where, event


def _finding(where: str, raw: Any) -> Finding:
    from accel.review.guardrails import one_line, resource_name

    try:
        event = PolicyEvent.model_validate(raw)
    except ValidationError as error:
        raise UsageError(describe_validation_error(error, f"{where}: policyEvent", PolicyEvent)) from None
    level = LEVELS.get(event.enforcement_level.lower())
    if level is None:
        raise UsageError(f"{where}: policyEvent.enforcementLevel {event.enforcement_level!r} is not one of "
                         f"{', '.join(LEVELS)}")
    message = _COLOUR_TAG.sub("", event.message)
    return Finding(policy=event.policy_name, level=level, resource=resource_name(event.resource_urn),
                   message=one_line(message), source="event-log")


def read_event_log(path: Path) -> PackRun:
    """The policy packs' results in the event log at `path`; UsageError (exit 2) on a malformed log."""
    text = _text(path)
    if not text.strip():
        raise UsageError(f"{path}: empty file, expected the event log of `pulumi preview --event-log`")
    findings: list[Finding] = []
    packs: dict[str, str] = {}
    finished = False
    for where, event in _events(path, text):
        if "policyEvent" in event:
            findings.append(_finding(where, event["policyEvent"]))
        summary = event.get("summaryEvent")
        if isinstance(summary, dict):
            finished = True
            ran = summary.get("PolicyPacks")
            if isinstance(ran, dict):
                packs.update({str(k): str(v) for k, v in ran.items()})
    return PackRun(findings=tuple(findings), packs=packs, finished=finished)
