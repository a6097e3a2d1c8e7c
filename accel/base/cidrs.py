"""Address ranges that can never reach a public endpoint: the documentation ranges.

RFC 5737 reserves 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 (TEST-NET-1..3) and RFC 3849
reserves 2001:db8::/32 for examples in documentation; they are never routed on the internet. An
allowlist made of them locks everyone out of the endpoint (a copied example, not a user's range).
Standard library only.
"""

from __future__ import annotations

import ipaddress

DOCUMENTATION_RANGES = {
    "192.0.2.0/24": "RFC 5737 TEST-NET-1",
    "198.51.100.0/24": "RFC 5737 TEST-NET-2",
    "203.0.113.0/24": "RFC 5737 TEST-NET-3",
    "2001:db8::/32": "RFC 3849 IPv6 documentation prefix",
}


def documentation_range(cidr: str) -> str | None:
    """'RFC 5737 TEST-NET-3' when `cidr` lies inside a documentation range; None otherwise (or unparsable)."""
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except (TypeError, ValueError):
        return None
    for reserved, name in DOCUMENTATION_RANGES.items():
        block = ipaddress.ip_network(reserved)
        if network.version == block.version and network.subnet_of(block):  # type: ignore[arg-type]
            return f"{name} ({reserved})"
    return None


def documentation_range_problem(cidr: str) -> str | None:
    """The message for an allowlist entry that is a documentation range, or None."""
    reserved = documentation_range(cidr)
    if reserved is None:
        return None
    return (f"{cidr} is in {reserved}, reserved for documentation and never routed: no client could reach "
            "the endpoint; give your own office/VPN/CI egress ranges")
