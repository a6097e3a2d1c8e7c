"""The review as data: everything the comment says, before any Markdown is written.

Built by accel.review.summary (pure), rendered by accel.review.markdown. Tests can assert on
this model directly and on the Markdown it becomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from accel.review.hardware import AcceleratorPool


@dataclass(frozen=True)
class Headline:
    stack: str | None
    project: str | None
    source: str                 # preview | plan | plan-diff
    counts: dict[str, int]      # action -> resources, most consequential first, zeros left out
    unchanged: int
    maybe_corrupt: bool = False


@dataclass(frozen=True)
class PropertyChange:
    path: str
    before: str
    after: str
    forces_replacement: bool = False


@dataclass(frozen=True)
class AttentionItem:
    """A replacement or deletion a reviewer must not miss."""

    action: str                 # replace | delete
    type: str
    name: str
    category: str               # data | compute | other
    reasons: tuple[str, ...] = ()
    property_changes: tuple[PropertyChange, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class HardwareRow:
    label: str
    before: str | None
    after: str | None

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class PoolChange:
    name: str
    type: str
    action: str
    before: AcceleratorPool | None
    after: AcceleratorPool | None


@dataclass(frozen=True)
class Hardware:
    rows: tuple[HardwareRow, ...] = ()
    has_base: bool = False
    pools: tuple[PoolChange, ...] = ()
    rationale: tuple[str, ...] = ()
    note: str | None = None


@dataclass(frozen=True)
class CostRow:
    label: str
    before: float | None
    after: float | None
    unit: str = "usd"           # usd | hours | usd-per-million-tokens (a serving plan's price per token)

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def percent(self) -> float | None:
        delta = self.delta
        if delta is None or not self.before:
            return None
        return 100.0 * delta / self.before


@dataclass(frozen=True)
class ResourceCost:
    """One changed accelerator pool or filesystem, priced before and after (0 where it does not exist)."""

    name: str
    type: str
    action: str
    before: float | None
    after: float | None
    kind: str                   # accelerator-pool | node-pool | storage
    before_priced: bool = True
    after_priced: bool = True


@dataclass(frozen=True)
class Cost:
    rows: tuple[CostRow, ...] = ()
    has_base: bool = False
    catalog: str | None = None
    note: str | None = None
    resources: tuple[ResourceCost, ...] = ()
    unpriced: tuple[str, ...] = ()  # machine types / resources the catalog has no price for, with why
    source: str = "plan"        # plan (accel plan's figures) | preview (the preview's steps priced)


@dataclass(frozen=True)
class Finding:
    policy: str
    level: str
    resource: str | None
    message: str
    status: str | None = None   # new | existing (when a base plan was given)
    source: str = "plan"        # plan | preview


@dataclass(frozen=True)
class Guardrails:
    evaluated: bool
    findings: tuple[Finding, ...] = ()
    resolved: tuple[Finding, ...] = ()
    note: str | None = None     # why they were not evaluated
    origin: str | None = None   # event-log (the pack's run in the preview) | offline (`accel plan`) | preview
    packs: tuple[tuple[str, str], ...] = ()  # (pack, version) that ran, from the event log's summary

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.level == "mandatory")


@dataclass(frozen=True)
class ComponentNode:
    key: str
    type: str
    name: str
    parent: str | None
    depth: int
    state: str                  # the most consequential action in the component or its direct children
    children: dict[str, int] = field(default_factory=dict)   # action -> direct child resources


@dataclass(frozen=True)
class ComponentGraph:
    nodes: tuple[ComponentNode, ...] = ()
    hidden: int = 0


@dataclass(frozen=True)
class ResourceLine:
    name: str
    action: str
    ops: tuple[str, ...]
    parent: str | None
    note: str = ""


@dataclass(frozen=True)
class TypeGroup:
    type: str
    lines: tuple[ResourceLine, ...]

    def count(self, action: str) -> int:
        return sum(1 for line in self.lines if line.action == action)


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    resource: str | None
    message: str


@dataclass(frozen=True)
class Review:
    headline: Headline
    attention: tuple[AttentionItem, ...]
    hardware: Hardware
    cost: Cost
    guardrails: Guardrails
    components: ComponentGraph
    groups: tuple[TypeGroup, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()   # shown under the headline: the reviewer must read them first
