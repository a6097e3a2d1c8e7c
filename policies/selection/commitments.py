"""The price points a declared commitment adds to the search: for each Savings Plan or committed-use discount the
user holds (policies/cloud/commitments.py) that covers an offering's on-demand usage in an allowed region, one
point at that region's on-demand price, sized apart (the commitment's price is not a multiple of the list price)
and billed as the commitment says. The on-demand point stays: the search keeps whichever is cheaper, and on
equal figures prefers the commitment (choose._rank_key)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the commitment rules load only when a run declares something (policies/cloud/commitments.py)
    from accel.policies.cloud.commitments import DeclaredCommitment
    from accel.policies.catalog.model import Offering, Price
    from accel.policies.selection.candidates import SearchContext


# An option priced under a commitment says so in its price_source (the OPTION contract has no field for it):
# "aws-p4d-list-2026 (2026-08-26); commitment 'sp-0a1b'". The table keeps such options on rows of their own.
COMMITMENT_MARK = "; commitment "


def commitment_source(price_source: str, commitment: DeclaredCommitment) -> str:
    return f"{price_source}{COMMITMENT_MARK}{commitment.name!r}"


def commitment_of(option) -> str | None:
    """The declared commitment an option is priced under (its quoted name), or None at the list price."""
    source = option.price_source or ""
    return source.split(COMMITMENT_MARK, 1)[1] if COMMITMENT_MARK in source else None


def commitments_of(held) -> list[DeclaredCommitment]:
    if not held:
        return []
    from accel.policies.cloud.commitments import DeclaredCommitment

    return [item for item in held if isinstance(item, DeclaredCommitment)]


def committed_groups(ctx: "SearchContext", offering: "Offering"
                     ) -> list[tuple[DeclaredCommitment, list[str], "Price", "Price | None"]]:
    """(commitment, [region], on-demand chip price, host price) for each held commitment covering the offering's
    on-demand usage in a region the workload allows."""
    if ctx.spec.constraints.spot == "required" or offering.reserved_only:
        return []
    allowed = ctx.spec.constraints.regions
    groups = []
    for commitment in commitments_of(ctx.reservations):
        for region in offering.regions:
            if allowed and region not in allowed:
                continue
            if not commitment.applies_to(offering.cloud, offering.machine_type, region, offering.provisioning):
                continue
            prices = offering.prices(region, False)
            if prices is not None:
                groups.append((commitment, [region], *prices))
    return groups
