"""The price of a fleet bought through a queued mode (DWS flex-start, and queued provisioning, which is billed
as flex-start): the machine's on-demand price times the mode's factor for that machine type
(policies/cloud/capacity_modes.yaml, `price.factor_by_machine`, with its source and date). The one place that
price is derived; the search (policies/selection/candidates.py) sizes fleets at it.

The factor is the mode's per-GPU-hour price over the on-demand one on the same price sheet, so it applies to the
whole machine: the GPUs and the host VM billed beside them. A machine type with no factor (A4, TPU7x: none was
found) keeps the catalog's on-demand figure, which then stays an upper bound of what the mode bills: said once,
here (`upper_bound_words`, `listed_prices`), and read by the search's price source, the rationale and the Plan's
`capacity.price_bound`."""

from __future__ import annotations

from datetime import date

from accel.policies.catalog.model import Price
from accel.policies.cloud.capacity_modes import ModeTable


def queued_hourly(table: ModeTable, mode_id: str, machine_type: str, on_demand_usd: float, on_demand_source: str
                  ) -> tuple[float, str] | None:
    """($/h, source) of a pool of `machine_type` bought through `mode_id`, from what it costs on demand
    ($/h and that price's source); None when the mode has no factor for the machine type. What `accel plan`
    prices a built flex-start or queued pool at (policies/cloud/pricing.py), by the same factor as the search."""
    found = table.price_factor(mode_id, machine_type)
    if found is None:
        return None
    factor, source_id, words = found
    return on_demand_usd * factor, _words(source_id, mode_id, factor, words, "", on_demand_source)


def on_demand_hourly(table: ModeTable, cloud: str, machine_type: str, provisioning: str, hourly_usd: float) -> float:
    """What a fleet priced through a queued mode (`provisioning`, at $`hourly_usd`/h) costs on demand: the mode's
    factor divided back out (the factor multiplies the whole machine, queued_prices), or the figure itself where
    the mode has no factor for the machine or is not queued. A reservation bills on demand, not at the queue's
    price (policies/cloud/reservations.py use_reservation)."""
    mode = table.mode_for(cloud, machine_type, provisioning)
    found = table.price_factor(mode.id, machine_type) if mode is not None else None
    return hourly_usd if found is None else hourly_usd / found[0]


def upper_bound_words(table: ModeTable, mode_id: str, machine_type: str) -> str | None:
    """Why a fleet of `machine_type` bought through the queued mode `mode_id` is priced as an upper bound: the mode
    has no factor for it (A4, TPU7x: no flex-start rate was found, capacity_modes.yaml), so it is priced at the
    machine's on-demand list, which the mode does not exceed (gcp-flex-start-vms: A4 and A3 flex-start VMs are
    sold at a discount). None where the mode has a factor for it, or is not a queued mode."""
    mode = table.modes.get(mode_id)
    if mode is None or mode.kind != "queued" or table.price_factor(mode_id, machine_type) is not None:
        return None
    return (f"no {mode.provisioning} rate for {machine_type} was found, so it is priced at on-demand list: an UPPER "
            "BOUND (docs/capacity.md, \"Flex-start's price\")")


def listed_prices(table: ModeTable, mode_id: str, machine_type: str, chip: Price, host: Price | None
                  ) -> tuple[Price, Price | None]:
    """(chip price, host price) of `machine_type` bought through `mode_id` where the mode has no factor for it: the
    on-demand figures, their source saying they are an upper bound of the mode's (upper_bound_words)."""
    if upper_bound_words(table, mode_id, machine_type) is None:
        return chip, host
    provisioning = table.modes[mode_id].provisioning

    def bounded(price: Price) -> Price:
        source_id, _, rest = price.source.partition(":")
        # Copied, not validated again, as the search's other prices (a warm choose builds no validator).
        return price.model_copy(update={"source": f"{source_id} at on-demand list, an upper bound of {provisioning}"
                                                  + (f":{rest}" if rest else "")})

    return bounded(chip), (bounded(host) if host is not None else None)


def _words(source_id: str, mode_id: str, factor: float, words: str, what: str, on_demand_source: str) -> str:
    return (f"{source_id}: {mode_id} at {factor:g} x the on-demand{what} price (the mode's per-GPU-hour price over "
            f"on-demand, {words}; observed, to be re-verified); on-demand: {on_demand_source}")


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
        # From a validated catalog price and the validated mode table, so assembled without validation
        # (model_construct), as the search's other output: a warm choose builds no validator
        # (tests/test_cli_startup.py).
        source = _words(source_id, mode_id, factor, words, f" {what}", f"{price.source} (as of {price.as_of})")
        return Price.model_construct(usd=price.usd * factor, source=source, as_of=observed, estimate=price.estimate,
                                     by_zone=None)

    return derived(chip, "chip"), (derived(host, "host") if host is not None else None)

