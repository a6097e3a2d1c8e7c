"""Spot prices observed zone by zone (AWS spot varies by Availability Zone): a region's spot price is the median
over its zones, the zones' spread is kept and shown next to a chosen price, and bad zone figures are refused like
any price. Also: which bundled figures are still estimates, and that docs/choose.md lists exactly those."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accel.policies.catalog import CatalogError, load_catalog
from accel.policies.catalog.model import SENTINEL_PRICES, Price
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping

DOCS = Path(__file__).resolve().parent.parent / "docs" / "choose.md"
PRICE_FIELDS = ("on_demand", "spot", "host_on_demand", "host_spot")

zone_names = st.from_regex(r"[a-z]{2,4}[0-9]-az[0-9]", fullmatch=True)
amounts = st.floats(min_value=0.01, max_value=140, allow_nan=False).filter(lambda v: v not in SENTINEL_PRICES)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def by_zone_price(key: str, zones: dict[str, float], chips_per_host: int | None = None) -> Price:
    return Price.model_validate({key: zones, "source": "observed", "as_of": "2026-11-01"},
                                context={"chips_per_host": chips_per_host})


@given(st.dictionaries(zone_names, amounts, min_size=1, max_size=8))
def test_a_spot_price_given_by_zone_is_the_median_of_its_zones(zones):
    price = by_zone_price("zone_usd", zones)
    at_or_below = sum(value <= price.usd + 1e-12 for value in zones.values())
    at_or_above = sum(value >= price.usd - 1e-12 for value in zones.values())
    assert 2 * at_or_below >= len(zones) and 2 * at_or_above >= len(zones)
    assert price.by_zone == zones and price.zone_range == (min(zones.values()), max(zones.values()))


@given(st.dictionaries(zone_names, amounts, min_size=1, max_size=6), st.sampled_from([1, 4, 8]))
def test_per_instance_zone_prices_are_divided_by_the_chips_of_the_machine(zones, chips):
    per_chip = by_zone_price("zone_instance_usd", zones, chips_per_host=chips)
    assert per_chip.by_zone == pytest.approx({zone: value / chips for zone, value in zones.items()})


def test_a_price_given_both_as_one_figure_and_by_zone_is_refused():
    with pytest.raises(ValueError, match="not usd and zone_usd"):
        Price.model_validate({"usd": 2.0, "zone_usd": {"use1-az1": 2.0}, "source": "s", "as_of": "2026-11-01"})


def overlay(tmp_path, spot: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(f"""
        prices:
          - {{offering: aws-p5.48xlarge, region: us-east-2, spot: {spot}, source: "our spot log", as_of: 2026-11-01}}
    """))
    return path


@pytest.mark.parametrize("bad", ["0", "-3.5", ".nan", ".inf", "cheap", "999.0"])
def test_a_bad_zone_price_in_your_price_file_is_refused_naming_the_zone(tmp_path, bad):
    with pytest.raises(CatalogError, match=r"mine\.yaml.*us-east-2.*zone_instance_usd\.use2-az2"):
        load_catalog(overlay(tmp_path, f"{{zone_instance_usd: {{use2-az1: 16.0, use2-az2: {bad}}}}}"))


def test_your_price_file_can_give_spot_prices_by_zone(tmp_path):
    mine = load_catalog(overlay(tmp_path, "{zone_instance_usd: {use2-az1: 8.0, use2-az2: 16.0, use2-az3: 40.0}}"))
    spot, _ = mine.offering("aws-p5.48xlarge").prices("us-east-2", True)
    assert spot.usd == pytest.approx(16.0 / 8) and spot.zone_range == pytest.approx((1.0, 5.0))


def test_an_aws_spot_price_is_either_observed_by_zone_or_flagged_as_an_estimate(catalog):
    spots = [(offering.id, region, info.spot) for offering in catalog.offerings if offering.cloud == "aws"
             for region, info in offering.regions.items() if info.spot is not None]
    assert spots and not [(o, r) for o, r, spot in spots if not spot.by_zone and not spot.estimate]
    assert sum(bool(spot.by_zone) for _, _, spot in spots) > len(spots) // 2


def test_no_google_cloud_host_vm_price_is_an_estimate(catalog):
    hosts = [(offering.id, region, price) for offering in catalog.offerings if offering.cloud == "gcp"
             for region, info in offering.regions.items() for price in (info.host_on_demand, info.host_spot)
             if price is not None]
    assert hosts and not [(o, r) for o, r, price in hosts if price.estimate]


def pinned_p5_spot(region: str):
    return workload_from_mapping({
        "name": "t", "kind": "pretrain", "model": {"parameters": "8B"},
        "training": {"tokens": "20B", "framework": "pytorch"},
        "hardware": {"accelerator": "h100-80gb", "chips": 16, "machine_type": "p5.48xlarge", "cloud": "aws",
                     "region": region, "spot": True}},
        "t.yaml")


def price_assumption(choice) -> str:
    return next(a for a in choice.estimate.assumptions if a.name == "price").value


def test_choose_shows_the_zone_spread_of_a_chosen_spot_price(catalog):
    spot, _ = catalog.offering("aws-p5.48xlarge").prices("us-east-1", True)
    assert spot.by_zone and len(spot.by_zone) > 1
    low, high = spot.zone_range
    words = price_assumption(choose(pinned_p5_spot("us-east-1"), catalog))
    assert f"${spot.usd:,.4g}/chip-h (median of {len(spot.by_zone)} zones, ${low:,.4g}-${high:,.4g}/chip-h)" in words


def test_a_spot_price_seen_in_one_zone_only_says_so(catalog):
    spot, _ = catalog.offering("aws-p5.48xlarge").prices("eu-north-1", True)
    assert spot.by_zone and len(spot.by_zone) == 1
    assert "observed in 1 zone only" in price_assumption(choose(pinned_p5_spot("eu-north-1"), catalog))


def documented_estimates() -> set[tuple[str, str, str]]:
    """The rows of the 'still estimates' table in docs/choose.md: offering, region, price field."""
    section = DOCS.read_text(encoding="utf-8").split("Still estimates", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| `([a-z0-9.\-]+)` \| ([a-z0-9\-]+) \| ([a-z_, ]+) \|", section, flags=re.M)
    return {(offering, region, field.strip()) for offering, region, fields in rows for field in fields.split(",")}


def test_the_prices_still_estimated_are_exactly_those_docs_choose_lists(catalog):
    estimated = {(offering.id, region, field) for offering in catalog.offerings
                 for region, info in offering.regions.items() for field in PRICE_FIELDS
                 if getattr(info, field) is not None and getattr(info, field).estimate}
    assert estimated and estimated == documented_estimates()

