"""The price of a fleet bought through a queued mode (DWS flex-start, and queued provisioning, which is billed
as flex-start): the machine's on-demand price times the mode's factor for that machine type
(policies/cloud/capacity_modes.yaml, `price.factor_by_machine`, with its source and date). The one place that
price is derived; the search (policies/selection/candidates.py) sizes fleets at it.

The factor is the mode's per-GPU-hour price over the on-demand one on the same price sheet, so it applies to the
whole machine: the GPUs and the host VM billed beside them. A machine type with no factor (A4, TPU7x: none was
found) keeps the catalog's on-demand figure, which then stays an upper bound of what the mode bills."""

from __future__ import annotations

from datetime import date

from accel.policies.catalog.model import Price
from accel.policies.cloud.capacity_modes import ModeTable


def queued_prices(table: ModeTable, mode_id: str, machine_type: str, chip: Price, host: Price | None
                  ) -> tuple[Price, Price | None] | None:
    """(chip price, host price) of `machine_type` bought through `mode_id` (gcp-flex-start, gcp-queued), derived
    from its on-demand `chip` and `host` prices; None when the mode has no factor for the machine type."""
    found = table.price_factor(mode_id, machine_type)
    if found is None:
        return None
    factor, source_id, words = found
    as_of = table.sources[source_id].as_of

    def derived(price: Price, what: str) -> Price:
        # Dated by the older input: a derived figure is as stale as the oldest fact it is made of.
        observed = min(price.as_of, date.fromisoformat(as_of[:10]))
        return Price(usd=price.usd * factor, as_of=observed, estimate=price.estimate,
                     source=(f"{source_id}: {mode_id} at {factor:g} x the on-demand {what} price "
                             f"(the mode's per-GPU-hour price over on-demand, {words}; observed, to be re-verified); "
                             f"on-demand: {price.source} (as of {price.as_of})"))

    return derived(chip, "chip"), (derived(host, "host") if host is not None else None)

