"""Putting untrusted text (resource names, messages, property values) into GitHub Markdown safely.

Resource names and policy messages come from the PR under review: a `|` must not split a
table cell, a `</details>` must not close the collapsed section, a backtick must not end a
code span early. Nor may the text speak with the bot's voice: an `@team` would notify a team
and a URL would become a link under the bot's name, so a zero-width space entity follows every
`@` (what Dependabot does) and breaks every autolink (`https://`, `www.`); and what a reader sees
must be what the bytes say, so control and format characters (bidi overrides such as U+202E,
zero-width characters, ANSI escapes) are shown as their code points, never passed through.
"""

from __future__ import annotations

import re
import unicodedata

from accel.base import units

# `$` too: GitHub renders $...$ as math, which would swallow two prices on one line.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]#~|$])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}

ACTION_LABELS = {
    "create": "➕ create",
    "update": "✏️ update",
    "replace": "♻️ replace",
    "delete": "🗑️ delete",
    "import": "📥 import",
    "read": "📖 read",
    "refresh": "🔄 refresh",
    "discard": "discard",
    "same": "unchanged",
}
# The order the CLI prints its summary in.
HEADLINE_ORDER = ("create", "update", "replace", "delete", "import", "read", "refresh", "discard")
HEADLINE_WORDS = {"create": "to create", "update": "to update", "replace": "to replace", "delete": "to delete",
                  "import": "to import", "read": "to read", "refresh": "to refresh", "discard": "to discard"}


_ZERO_WIDTH_SPACE = "&#8203;"
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|file)(?=:)|\b(www)(?=\.)")


def visible(value: str) -> str:
    """Control and format characters (Unicode Cc, Cf, Co, Cs, Zl, Zp: bidi overrides, zero-width
    characters, ESC) shown as ⟦U+202E⟧, so a name displays as what its bytes are; tab and newline
    are left for the caller to flatten."""
    out = []
    for ch in value:
        if ch in "\t\n\r" or unicodedata.category(ch) not in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp"):
            out.append(ch)
        else:
            out.append(f"⟦U+{ord(ch):04X}⟧")
    return "".join(out)


def inert(markdown: str) -> str:
    """No mention and no autolink: a zero-width space entity after each `@` and inside each URL scheme."""
    markdown = markdown.replace("@", "@" + _ZERO_WIDTH_SPACE)
    return _AUTOLINK.sub(lambda m: (m.group(1) or m.group(2)) + _ZERO_WIDTH_SPACE, markdown)


def one_line(value: str, width: int | None = None) -> str:
    flat = " ".join(visible(str(value)).split())
    if width is not None and len(flat) > width:
        flat = flat[: width - 1] + "…"
    return flat


def text(value: str, width: int | None = None) -> str:
    """Plain text, safe in a paragraph, a list item or a table cell."""
    flat = one_line(value, width)
    flat = "".join(_HTML.get(ch, ch) for ch in flat)
    return inert(_MARKDOWN_SPECIAL.sub(r"\\\1", flat))


def code(value: str, width: int | None = None, in_table: bool = False) -> str:
    """An inline code span that survives backticks; `in_table` also keeps a `|` from splitting the cell."""
    flat = one_line(value, width) or " "
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {flat} " if flat.startswith("`") or flat.endswith("`") else flat
    escaped = padded.replace("|", "\\|") if in_table else padded  # GFM splits cells before code spans
    return f"{fence}{escaped}{fence}"


def action_label(action: str) -> str:
    return ACTION_LABELS.get(action, f"❔ {text(action)}")


def money(value: float | None) -> str:
    return "—" if value is None else units.money(value, cents=True).replace("$", "\\$")


def _signed(value: float | None, render) -> str:
    """A delta with an explicit sign (a true minus, ± for no change); — when unknown."""
    if value is None:
        return "—"
    sign = "+" if value > 0 else ("−" if value < 0 else "±")
    return sign + render(abs(value))


def signed_money(value: float | None) -> str:
    return _signed(value, money)


def hours(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} h"


def signed_hours(value: float | None) -> str:
    return _signed(value, hours)


def percent(value: float | None) -> str:
    return _signed(value, lambda v: f"{v:.1f}%")


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    """A complete GFM table; `align` per column: 'l' or 'r'."""
    align = align or ["l"] * len(header)
    separator = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(separator) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def marker(stack: str | None) -> str:
    """The hidden first line CI looks for to update its own comment instead of adding another."""
    safe = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9_./-]", "_", stack or "unknown"))
    return f"<!-- accel-review stack={safe} -->"
