"""Kubernetes resource quantities ("500m", "64Gi", "1000Ti", 8) as numbers, for comparing requests with capacity."""

from __future__ import annotations

import re
from fractions import Fraction

_SUFFIX = {"": 1, "m": Fraction(1, 1000), "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15,
           "E": 10 ** 18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def parse_quantity(value: object) -> Fraction:
    """The quantity's value in base units (cores, bytes, devices); ValueError when it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Fraction(value)
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (e.g. 8, 500m, 64Gi)")
    return Fraction(match.group(1)) * _SUFFIX[match.group(2) or ""]
