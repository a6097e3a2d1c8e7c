"""The component tree as a Mermaid flowchart (GitHub renders ```mermaid blocks)."""

from __future__ import annotations

from accel.review.markdown_text import one_line
from accel.review.model import ComponentGraph, ComponentNode

STYLES = {
    "create": "fill:#dafbe1,stroke:#1a7f37",
    "update": "fill:#ddf4ff,stroke:#0969da",
    "replace": "fill:#fff8c5,stroke:#9a6700",
    "delete": "fill:#ffebe9,stroke:#cf222e",
    "same": "fill:#f6f8fa,stroke:#8c959f",
    "other": "fill:#fbefff,stroke:#8250df",
}
NAME_WIDTH = 40


def label_text(value: str) -> str:
    """Mermaid entity escapes, so names cannot close the label or inject markup; one line (a newline
    would break the quoted label), control and format characters shown as code points."""
    out = []
    for ch in one_line(value):
        if ch in '"#<>&`':
            out.append(f"#{ord(ch)};")
        else:
            out.append(ch)
    return "".join(out)


def _short(value: str) -> str:
    return value if len(value) <= NAME_WIDTH else value[: NAME_WIDTH - 1] + "…"


def _children(node: ComponentNode) -> str:
    total = sum(node.children.values())
    if not total:
        return "no resources of its own"
    parts = [f"{count} {action if action != 'same' else 'unchanged'}" for action, count in node.children.items()]
    return f"{total} resource{'s' if total != 1 else ''}: " + ", ".join(parts)


def _style(state: str) -> str:
    return state if state in STYLES else "other"


def flowchart(graph: ComponentGraph) -> str:
    ids = {node.key: f"c{i}" for i, node in enumerate(graph.nodes)}
    lines = ["```mermaid", "flowchart LR"]
    for node in graph.nodes:
        kind = node.type.rsplit(":", 1)[-1]
        label = "<br/>".join(label_text(part) for part in (f"{kind}: {_short(node.name)}", _children(node)))
        lines.append(f'  {ids[node.key]}["{label}"]:::{_style(node.state)}')
    for node in graph.nodes:
        if node.parent in ids:
            lines.append(f"  {ids[node.parent]} --> {ids[node.key]}")
    if graph.hidden:
        lines.append(f'  more["… {graph.hidden} more component{"s" if graph.hidden != 1 else ""}"]:::same')
    used = {_style(n.state) for n in graph.nodes} | ({"same"} if graph.hidden else set())
    for style in STYLES:
        if style in used:
            lines.append(f"  classDef {style} {STYLES[style]}")
    lines.append("```")
    return "\n".join(lines)
