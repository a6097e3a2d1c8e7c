"""Review → GitHub-flavoured Markdown: the fixed-size sections, one function each.

The sections that grow with the stack are in accel.review.markdown_lists. Every table is
rendered whole or not at all.
"""

from __future__ import annotations

from accel.review import mermaid
from accel.review.markdown_text import (
    HEADLINE_ORDER,
    HEADLINE_WORDS,
    action_label,
    code,
    hours,
    marker,
    money,
    percent,
    signed_hours,
    signed_money,
    table,
    text,
)
from accel.review.model import Cost, Guardrails, Hardware, Review

# Row caps; `tight` (the last-resort layout) uses the second number.
POOL_ROWS = (30, 5)
FINDING_ROWS = (50, 10)
DIAGNOSTIC_LINES = (10, 3)
MESSAGE_WIDTH = 240
SOURCE_TITLES = {"preview": "`pulumi preview --json`", "plan": "`accel plan --json`",
                 "plan-diff": "two `accel plan --json` outputs"}


def headline(review: Review) -> str:
    head = review.headline
    title = f"## accel review: stack {code(head.stack or 'unknown')}"
    counts = dict(head.counts)
    parts = [f"**{counts.pop(a)} {HEADLINE_WORDS[a]}**" for a in HEADLINE_ORDER if a in counts]
    parts += [f"**{n} {text(a)}**" for a, n in counts.items()]
    summary = " · ".join(parts) if parts else "**No changes**"
    lines = [marker(head.stack), title, ""]
    for warning in review.warnings:
        lines += ["> [!WARNING]", f"> {text(warning, 1_000)}", ""]
    lines.append(f"{summary} · {head.unchanged} unchanged")
    glance = at_a_glance(review)
    if glance:
        lines += ["", glance]
    if head.maybe_corrupt:
        lines += ["", "> [!CAUTION]", "> The preview reports `maybeCorrupt`: one or more resources may be corrupt. "
                  "Check the state before applying."]
    if review.guardrails.blocking:
        count = len(review.guardrails.blocking)
        lines += ["", f"❌ **{count} mandatory guardrail violation{'s' if count != 1 else ''}**: "
                  "`pulumi up` is blocked until fixed (see Guardrails)."]
    return "\n".join(lines)


def _before_after(before: str | None, after: str | None, suffix: str = "") -> str | None:
    if after is None:
        return None
    if before is None or before == after:
        return f"{after}{suffix}"
    return f"{before} → **{after}**{suffix}"


def at_a_glance(review: Review) -> str:
    """One line: accelerator and chips, $/h and $/run, before → after."""
    rows = {row.label: row for row in review.hardware.rows}
    parts = []
    if "Accelerator" in rows and "Chips" in rows:
        accelerator, chips = rows["Accelerator"], rows["Chips"]
        accel_text = _before_after(text(accelerator.before) if accelerator.before else None,
                                   text(accelerator.after) if accelerator.after else None)
        chips_text = _before_after(chips.before, chips.after, " chips")
        if accel_text and chips_text:
            parts.append(f"{accel_text} × {chips_text}")
    for row in review.cost.rows:
        if row.unit != "usd":
            continue
        unit = "/h" if row.label == "Per hour" else "/run"
        value = _before_after(money(row.before) if row.before is not None else None,
                              money(row.after) if row.after is not None else None, unit)
        if value:
            parts.append(value + (f" ({percent(row.percent)})" if row.percent is not None else ""))
    if review.cost.unpriced and parts:
        parts.append(f"⚠️ {len(review.cost.unpriced)} unpriced: a lower bound")
    return " · ".join(parts)


def _pool_cell(before: object, after: object) -> str:
    def show(value: object) -> str:
        if value is None:
            return "—"
        if isinstance(value, bool):
            return "yes" if value else "no"
        return text(str(value), 40)
    if before == after:
        return show(after)
    return f"{show(before)} → **{show(after)}**"


def _pools(hardware: Hardware, cap: int) -> str:
    fields = ("accelerator", "machine_type", "nodes", "chips", "topology", "spot", "location")
    # Identical changes (300 slices resized alike) collapse into one row.
    alike: dict[tuple, list[str]] = {}
    for pool in hardware.pools:
        alike.setdefault((pool.type, pool.action, pool.before, pool.after), []).append(pool.name)
    first = {names[0]: len(names) - 1 for names in alike.values()}
    distinct = [pool for pool in hardware.pools if pool.name in first]
    rows = []
    for pool in distinct[:cap]:
        before, after = pool.before, pool.after
        if pool.action == "delete" or after is None:
            after = before  # what goes away, shown as it is
        elif pool.action == "create" or before is None:
            before = after
        cells = [_pool_cell(getattr(before, f), getattr(after, f)) for f in fields]
        more = f" and {first[pool.name]} more like it" if first[pool.name] else ""
        rows.append([text(pool.name, 60) + more, action_label(pool.action), *cells])
    out = table(["pool", "change", "accelerator", "machine type", "nodes", "chips", "topology", "spot", "location"],
                rows, ["l", "l", "l", "l", "r", "r", "l", "l", "l"])
    if len(distinct) > cap:
        hidden = sum(1 + first[p.name] for p in distinct[cap:])
        out += f"\n\n…and {hidden} more accelerator pools."
    return out


def hardware(review: Review, tight: bool = False) -> str:
    hw = review.hardware
    blocks = ["### 🖥️ Hardware"]
    if hw.note:
        blocks.append(hw.note)
    if hw.rows:
        if hw.has_base:
            rows = [[r.label, text(r.before or "—"), f"**{text(r.after or '—')}**" if r.changed else
                     text(r.after or "—")] for r in hw.rows]
            blocks.append(table(["", "before", "after"], rows))
        else:
            blocks.append(table(["", "this PR"], [[r.label, text(r.after or "—")] for r in hw.rows]))
    elif not hw.pools:
        blocks.append("No accelerators in this change, and no plan given (`--plan`) to say what was chosen.")
    if hw.pools:
        blocks += ["Accelerator pools in this change:", _pools(hw, POOL_ROWS[tight])]
    if hw.rationale:
        reasons = "\n".join(f"- {text(reason, 400)}" for reason in hw.rationale)
        blocks.append(f"<details><summary>Why this hardware</summary>\n\n{reasons}\n\n</details>")
    return "\n\n".join(blocks)


def _cost_cells(row) -> list[str]:
    show = hours if row.unit == "hours" else money
    signed = signed_hours if row.unit == "hours" else signed_money
    return [show(row.before), show(row.after), signed(row.delta), percent(row.percent)]


def cost(review: Review) -> str:
    section: Cost = review.cost
    lines = ["### 💰 Cost", ""]
    if section.rows:
        if section.has_base:
            rows = [[row.label, *_cost_cells(row)] for row in section.rows]
            lines.append(table(["", "before", "after", "Δ", "Δ %"], rows, ["l", "r", "r", "r", "r"]))
        else:
            show = {"hours": hours}
            rows = [[row.label, show.get(row.unit, money)(row.after)] for row in section.rows]
            lines.append(table(["", "this PR"], rows, ["l", "r"]))
    if section.resources:
        shown = section.resources[:COST_ROWS]
        rows = [[code(r.name, 60, in_table=True), text(r.action), _priced(r.before, r.before_priced),
                 _priced(r.after, r.after_priced)] for r in shown]
        lines += ["", table(["resource", "action", "$/h before", "$/h after"], rows, ["l", "l", "r", "r"])]
        if len(section.resources) > len(shown):
            lines.append(f"…and {len(section.resources) - len(shown)} more priced resources.")
    if section.unpriced:
        lines += ["", "Not priced (never guessed): " + "; ".join(text(u, 120) for u in section.unpriced[:COST_ROWS])]
    if section.note:
        lines += ([""] if section.rows else []) + [section.note]
    if section.catalog:
        how = "the preview's own steps" if section.source == "preview" else "`accel plan`"
        lines += ["", f"<sub>Priced from {how} with price catalog {text(section.catalog)}.</sub>"]
    return "\n".join(lines)


COST_ROWS = 40


def _priced(amount: float | None, priced: bool) -> str:
    return money(amount) if priced and amount is not None else "unpriced"


GUARDRAIL_ORIGINS = {
    "event-log": "Results from the pack's run in the preview (event log).",
    "offline": "Re-derived offline: the guardrail pack run by `accel plan` over the captured resources "
               "(pass `--event-log` with `pulumi preview --event-log` output for the pack's own run).",
}


def guardrails(review: Review, tight: bool = False) -> str:
    section: Guardrails = review.guardrails
    cap = FINDING_ROWS[tight]
    lines = ["### 🛡️ Guardrails", ""]
    if not section.evaluated:
        lines.append(f"Not evaluated: {section.note or 'no guardrail results were given.'}")
        return "\n".join(lines)
    origin = GUARDRAIL_ORIGINS.get(section.origin or "")
    if origin:
        packs = ", ".join(f"{code(name, 80)} {text(version, 40)}" for name, version in section.packs[:5])
        lines += [origin + (f" Packs: {packs}." if packs else ""), ""]
    blocking = section.blocking
    advisory = len(section.findings) - len(blocking)
    if not section.findings:
        lines.append("✅ All guardrails pass.")
    else:
        summary = []
        if blocking:
            summary.append(f"❌ **{len(blocking)} mandatory** (blocks `pulumi up`)")
        if advisory:
            summary.append(f"⚠️ {advisory} advisory")
        lines.append(" · ".join(summary))
        with_status = any(f.status for f in section.findings)
        header = ["level", "policy", "resource", "message"] + (["since"] if with_status else [])
        rows = []
        for f in section.findings[:cap]:
            row = [text(f.level), code(f.policy, 80, in_table=True), text(f.resource or "—", 60),
                   text(f.message, MESSAGE_WIDTH)]
            rows.append(row + ([f.status or ""] if with_status else []))
        lines += ["", table(header, rows)]
        if len(section.findings) > cap:
            lines += ["", f"…and {len(section.findings) - cap} more violations."]
    if section.resolved:
        names = ", ".join(f"{code(f.policy, 80)} ({text(f.resource or 'stack', 60)})" for f in section.resolved[:20])
        more = f" and {len(section.resolved) - 20} more" if len(section.resolved) > 20 else ""
        lines += ["", f"Fixed by this PR: {names}{more}."]
    return "\n".join(lines)


def diagnostics(review: Review, tight: bool = False) -> str:
    if not review.diagnostics:
        return ""
    lines = ["### 🩺 Preview diagnostics", ""]
    cap = DIAGNOSTIC_LINES[tight]
    for d in review.diagnostics[:cap]:
        where = f" {code(d.resource, 80)}" if d.resource else ""
        lines.append(f"- **{text(d.severity)}**{where}: {text(d.message, MESSAGE_WIDTH)}")
    if len(review.diagnostics) > cap:
        lines.append(f"- …and {len(review.diagnostics) - cap} more in the preview output.")
    return "\n".join(lines)


def components(review: Review) -> str:
    graph = review.components
    if not graph.nodes:
        return ""
    return "\n".join(["### 🧩 Components", "", mermaid.flowchart(graph)])


def notes(review: Review) -> str:
    source = SOURCE_TITLES.get(review.headline.source, review.headline.source)
    lines = [f"> [!NOTE]\n> {note}" for note in review.notes]
    lines.append(f"<sub>accel review · changes from {source}</sub>")
    return "\n\n".join(lines)
