"""Units people write and read: quantities (70B), money ($1.85M), durations and TTLs (1d12h),
instants (2026-11-22T18:00:00Z). Standard library only, so the guardrail pack can use it.

Each grammar is parsed here and nowhere else; each kind of figure is formatted here one way.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any

from accel.base.errors import UsageError


class UnitError(UsageError, ValueError):
    """A quantity, TTL or instant that cannot be read; the message says what forms are accepted."""


# ----------------------------------------------------------------------------- quantities

HOURS_PER_MONTH = 730.0  # the clouds' per-month prices (storage, committed use) are per 730 hours
_SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
_QUANTITY = re.compile(r"^\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMBGTP]?)\s*$", re.IGNORECASE)
_QUANTITY_FORMS = "70e9, 70B, 1.5T or 7M"


def parse_quantity(value: Any) -> float:
    """Read a human number: 70e9, 70B, 1.5T, 7M, 2_000, or a plain int/float (finite only)."""
    if isinstance(value, bool):
        raise UnitError(f"expected a number such as {_QUANTITY_FORMS}, not a boolean")
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an int past float's range (YAML reads 1 followed by 400 zeros as one)
            raise UnitError("must be a finite number (this one is too large to hold)") from None
    elif isinstance(value, str):
        match = _QUANTITY.match(value.replace("_", "").replace(",", ""))
        if not match:
            raise UnitError(f"{value!r} is not a number; use forms like {_QUANTITY_FORMS}")
        number = float(match.group(1)) * _SUFFIXES.get(match.group(2).upper(), 1.0)
    else:
        raise UnitError(f"expected a number such as {_QUANTITY_FORMS}, got {type(value).__name__}")
    if not math.isfinite(number):
        raise UnitError("must be a finite number")
    return number


def human_number(value: float) -> str:
    """70e9 -> 70B, 2e12 -> 2T, 20000 -> 20K: the forms a workload file accepts."""
    for suffix, scale in (("P", 1e15), ("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g}{suffix}"
    return f"{value:g}"


def plural(count: int, word: str) -> str:
    """'1 chip', '2 chips', '1,024 hosts'."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


# ----------------------------------------------------------------------------- money

def money(usd: float, *, cents: bool = False) -> str:
    """$9.80, $4,512, $12.3k, $1.85M, $2.40B, $1.50T, then $1.00e+15.

    The precision a reader compares options by. `cents=True` keeps exact cents below $10k
    (hourly rates in tables).
    """
    if not math.isfinite(usd):
        return "$inf" if usd > 0 else ("-$inf" if usd < 0 else "$nan")
    if usd < 0:
        return "-" + money(-usd, cents=cents)
    if usd >= 1e15:
        return f"${usd:.2e}"
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if usd >= scale:
            return f"${usd / scale:,.2f}{suffix}"
    if usd >= 1e4:
        return f"${usd / 1e3:,.1f}k"
    return f"${usd:,.2f}" if (cents or usd < 100) else f"${usd:,.0f}"


def money_pair(amount: float, limit: float) -> tuple[str, str]:
    """Two amounts to compare ('costs X, over the Y budget'), with as many digits as it takes to tell them apart."""
    for formatted in (money, lambda usd: f"${usd:,.0f}", lambda usd: f"${usd:,.2f}"):
        a, b = formatted(amount), formatted(limit)
        if a != b or amount == limit:
            return a, b
    return a, b


# ----------------------------------------------------------------------------- durations

def hours_text(hours: float) -> str:
    """Hours below two days, days above; an endless spot run says why it never ends."""
    if not math.isfinite(hours):
        return "forever (preemptions stall it)"
    if hours >= 48:
        return f"{hours / 24:.1f} days"
    return f"{hours:.1f} h"


def humanize_duration(span: timedelta) -> str:
    """'2d 3h', '3h 20m', '45m', 'under a minute': two units at most."""
    seconds = int(abs(span).total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts[:2]) or "under a minute"


_TTL_UNITS = {"m": ("minutes", 60), "h": ("hours", 3600), "d": ("days", 86400), "w": ("weeks", 604800)}
_TTL_PART = re.compile(r"(\d+)([a-z]+)")
TTL_EXAMPLES = "e.g. 90m, 12h, 3d, 1w or 1d12h"
MAX_TTL = timedelta(days=3660)  # ten years: past any run or lease, and far inside what datetime holds


def parse_ttl(text: str, what: str = "TTL") -> timedelta:
    """'12h' -> 12 hours. Units m, h, d, w, combinable largest first ('1d12h'). `what` names the value in messages
    (a TTL, or another duration such as reap's --busy-limit)."""
    if not isinstance(text, str):
        raise UnitError(f"a {what} is text with a unit ({TTL_EXAMPLES}), got {text!r}")
    compact = text.strip().lower()
    if not compact:
        raise UnitError(f"a {what} is empty; write a duration with a unit ({TTL_EXAMPLES})")
    if compact.isdigit():
        raise UnitError(f"{what} {text!r} has no unit; write e.g. '{compact}h' (units: m, h, d, w)")
    total = timedelta()
    position = 0
    seen: list[str] = []
    for match in _TTL_PART.finditer(compact):
        if match.start() != position:
            break
        if len(match.group(1)) > 12:  # past any bound below, and before int() meets Python's digit limit
            raise UnitError(f"{what} {text[:40]!r}{'…' if len(text) > 40 else ''} is longer than {MAX_TTL.days:,} days "
                            "(ten years), the longest accel takes")
        amount, unit = int(match.group(1)), match.group(2)
        if unit not in _TTL_UNITS:
            raise UnitError(
                f"{what} {text!r} has unknown unit {unit!r}; allowed: "
                + ", ".join(f"{u} ({name})" for u, (name, _) in _TTL_UNITS.items())
            )
        if unit in seen:
            raise UnitError(f"{what} {text!r} repeats unit {unit!r}")
        if seen and "wdhm".index(unit) < "wdhm".index(seen[-1]):
            raise UnitError(f"{what} {text!r}: write the largest unit first, e.g. 1d12h")
        seen.append(unit)
        seconds = amount * _TTL_UNITS[unit][1]
        if seconds > MAX_TTL.total_seconds():  # before timedelta() overflows a C int
            raise UnitError(f"{what} {text!r} is longer than {MAX_TTL.days:,} days (ten years), the longest accel takes")
        total += timedelta(seconds=seconds)
        position = match.end()
    if position != len(compact):
        raise UnitError(f"{what} {text!r} is not written as a duration; write it like {TTL_EXAMPLES}")
    if total <= timedelta(0):
        raise UnitError(f"{what} {text!r} must be longer than zero")
    if total > MAX_TTL:
        raise UnitError(f"{what} {text!r} is longer than {MAX_TTL.days:,} days (ten years), the longest accel takes")
    return total


# ----------------------------------------------------------------------------- instants

def parse_timestamp(value: Any) -> datetime:
    """An ISO 8601 instant with a time zone ('2026-11-22T18:00:00Z'), returned in UTC."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        raise UnitError(f"{value.isoformat()!r} is a date without a time; write e.g. {value.isoformat()}T18:00:00Z")
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise UnitError(f"{value!r} is not an ISO 8601 time; write e.g. 2026-11-22T18:00:00Z") from None
    else:
        raise UnitError(f"expected an ISO 8601 time such as 2026-11-22T18:00:00Z, got {value!r}")
    if parsed.tzinfo is None:
        raise UnitError(f"{str(value)!r} has no time zone; write it in UTC with a trailing Z, e.g. 2026-11-22T18:00:00Z")
    return parsed.astimezone(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    # The Automation API parses CLI times without a zone; the CLI writes them in UTC.
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def format_timestamp(moment: datetime) -> str:
    """UTC, second precision, trailing Z: the value written to the accel:expires-at tag."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")
