"""The sections that grow with the stack: replacements and deletions, and the resource list.

Each takes a detail level; accel.review.render picks the most detailed levels that fit the
comment limit. Every table is rendered whole or not at all, and every list is capped.
"""

from __future__ import annotations

from collections import Counter

from accel.review.changes import action_rank
from accel.review.markdown_text import action_label, code, table, text
from accel.review.model import AttentionItem, Review, TypeGroup

FULL_ATTENTION_ITEMS = 25
ATTENTION_TABLE_ROWS = 100
CHANGED_RESOURCE_ROWS = 400
TYPE_ROWS = 150
TIGHT_TYPE_ROWS = 30
TYPE_WIDTH = 120


def _attention_item(item: AttentionItem) -> str:
    category = {"data": " · **data**", "compute": " · compute"}.get(item.category, "")
    lines = [f"- {action_label(item.action)} {code(item.type)} **{text(item.name)}**{category}"]
    lines += [f"  - {warning}" for warning in item.warnings]
    if item.reasons:
        lines.append("  - replaced because of: " + ", ".join(code(r) for r in item.reasons))
    for change in item.property_changes:
        forced = " (forces replacement)" if change.forces_replacement else ""
        lines.append(f"  - {code(change.path)}: {code(change.before)} → {code(change.after)}{forced}")
    return "\n".join(lines)


def _attention_table(items: list[AttentionItem]) -> str:
    # Warnings are accel's own sentences (no pipes); reasons are property names from the input.
    rows = [[action_label(i.action), i.category, code(i.type, TYPE_WIDTH, in_table=True), text(i.name, 80),
             i.warnings[0] if i.warnings else ", ".join(code(r, in_table=True) for r in i.reasons)]
            for i in items]
    return table(["change", "kind", "type", "name", "why it matters"], rows)


def _attention_counts(items: list[AttentionItem], cap: int) -> str:
    counts = Counter((i.category, i.type, i.action) for i in items)
    by_type: dict[tuple[str, str], dict[str, int]] = {}
    for (kind, type_token, action), n in counts.items():
        by_type.setdefault((kind, type_token), {})[action] = n
    order = {"data": 0, "compute": 1, "other": 2}
    keys = sorted(by_type, key=lambda k: (order.get(k[0], 3), k[1]))
    rows = [[kind, code(t, TYPE_WIDTH, in_table=True), str(by_type[(kind, t)].get("replace", 0)),
             str(by_type[(kind, t)].get("delete", 0))] for kind, t in keys[:cap]]
    if len(keys) > cap:
        rest = sum(sum(by_type[k].values()) for k in keys[cap:])
        rows.append(["…", f"{len(keys) - cap} more types ({rest} resources)", "", ""])
    return table(["kind", "type", "replace", "delete"], rows, ["l", "l", "r", "r"])


def _remainder(items: list[AttentionItem]) -> str:
    counts = Counter(i.action for i in items)
    parts = ", ".join(f"{n} {a}" for a, n in sorted(counts.items()))
    return f"…and {len(items)} more ({parts}); see the resource list below."


def attention(review: Review, level: int) -> str:
    """level 0: details for the first items, a table for the rest; 1: one table; 2: counts by type;
    3: counts for the most types that surely fit."""
    items = list(review.attention)
    if not items:
        return ""
    data = sum(1 for i in items if i.category == "data")
    lines = ["### ⚠️ Replacements and deletions", ""]
    if data:
        lines += [f"**{data} data resource{'s' if data != 1 else ''}** (bucket, filesystem, disk) "
                  f"{'are' if data != 1 else 'is'} replaced or deleted.", ""]
    if level == 0:
        lines += [_attention_item(i) for i in items[:FULL_ATTENTION_ITEMS]]
        rest = items[FULL_ATTENTION_ITEMS:]
        if rest:
            lines += ["", _attention_table(rest[:ATTENTION_TABLE_ROWS])]
            if len(rest) > ATTENTION_TABLE_ROWS:
                lines += ["", _remainder(rest[ATTENTION_TABLE_ROWS:])]
    elif level == 1:
        lines.append(_attention_table(items[:ATTENTION_TABLE_ROWS]))
        if len(items) > ATTENTION_TABLE_ROWS:
            lines += ["", _remainder(items[ATTENTION_TABLE_ROWS:])]
    else:
        lines.append(_attention_counts(items, TYPE_ROWS if level == 2 else TIGHT_TYPE_ROWS))
    return "\n".join(lines)


def _group_counts(group: TypeGroup) -> str:
    counts = Counter(line.action for line in group.lines)
    return ", ".join(f"{n} {text(a) if a != 'same' else 'unchanged'}" for a, n in counts.items())


def _type_table(groups: tuple[TypeGroup, ...]) -> str:
    columns = ("create", "update", "replace", "delete")
    rows = []
    for group in groups[:TYPE_ROWS]:
        counts = Counter(line.action for line in group.lines)
        other = sum(n for a, n in counts.items() if a not in columns and a != "same")
        rows.append([code(group.type, TYPE_WIDTH, in_table=True), str(len(group.lines)),
                     *[str(counts.get(c, 0)) for c in columns], str(other), str(counts.get("same", 0))])
    if len(groups) > TYPE_ROWS:
        rest = groups[TYPE_ROWS:]
        rows.append([f"…{len(rest)} more types", str(sum(len(g.lines) for g in rest)), "", "", "", "", "", ""])
    return table(["type", "total", "create", "update", "replace", "delete", "other", "unchanged"], rows,
                 ["l"] + ["r"] * 7)


def _resource_rows(lines, with_type: str | None = None) -> list[list[str]]:
    rows = []
    for line in lines:
        change = action_label(line.action)
        if len(line.ops) > 1 or (line.ops and line.ops[0] != line.action):
            change += " (" + ", ".join(text(op) for op in line.ops) + ")"
        row = [text(line.name, 80), change, text(line.parent or "—", 60), text(line.note, 160)]
        rows.append(([code(with_type, TYPE_WIDTH, in_table=True)] if with_type else []) + row)
    return rows


def resources(review: Review, level: int, changed_rows: int = CHANGED_RESOURCE_ROWS) -> str:
    """level 0: every resource; 1: counts per type + up to `changed_rows` changed ones; 2: counts; 3: omitted."""
    groups = review.groups
    total = sum(len(g.lines) for g in groups)
    if not groups:
        return ""
    summary = f"All {total} resource{'s' if total != 1 else ''} in this change, by type"
    out = ["<details>", f"<summary>{summary}</summary>", ""]
    if level == 0:
        for group in groups:
            out += [f"#### {code(group.type)} ({_group_counts(group)})", "",
                    table(["name", "change", "parent", "note"], _resource_rows(group.lines)), ""]
    elif level == 1:
        out += [_type_table(groups), ""]
        changed = [(g.type, line) for g in groups for line in g.lines if line.action != "same"]
        if changed:
            shown = sorted(changed, key=lambda item: action_rank(item[1].action))[:changed_rows]
            rows = [r for t, line in shown for r in _resource_rows([line], with_type=t)]
            out += ["Changed resources:", "", table(["type", "name", "change", "parent", "note"], rows), ""]
            if len(changed) > changed_rows:
                out += [f"…and {len(changed) - changed_rows} more changed resources "
                        "(the comment size limit leaves them out; see the preview output).", ""]
    elif level == 2:
        out += [_type_table(groups), "", "Per-resource rows left out to fit GitHub's comment size limit.", ""]
    else:
        return (f"<sub>{total} resources in {len(groups)} types; the list is left out to fit GitHub's "
                "comment size limit.</sub>")
    out.append("</details>")
    return "\n".join(out)
