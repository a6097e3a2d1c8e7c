"""Prices per region: every region of every offering carries its own on-demand and spot price, traceable to a
dated source; rule-derived figures are flagged; the user's price file overrides any of them; the loader refuses a
region without its own prices."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from accel.policies.catalog import CatalogError, load_catalog
from accel.policies.catalog.loader import BUNDLED_DIR
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def region_prices(catalog):
    for offering in catalog.offerings:
        for region, info in offering.regions.items():
            yield offering, region, info


def test_every_bundled_region_states_its_own_on_demand_and_spot_price():
    # Read the data file itself: a region may not lean on another's figure, so the keys are in each region.
    raw = yaml.safe_load((BUNDLED_DIR / "offerings.yaml").read_text())
    missing = [(item["id"], region) for item in raw["offerings"] for region, info in item["regions"].items()
               if not {"on_demand", "spot"} <= set(info)]
    offering_level = [item["id"] for item in raw["offerings"] if {"on_demand", "spot"} & set(item)]
    assert raw["offerings"] and not missing and not offering_level


def test_every_regional_price_names_a_catalog_source_with_its_date(catalog):
    for offering, region, info in region_prices(catalog):
        for price in filter(None, (info.on_demand, info.spot, info.host_on_demand, info.host_spot)):
            source_id = price.source.split(":", 1)[0]
            assert source_id in catalog.sources, (offering.id, region, price.source)
            assert price.as_of == catalog.sources[source_id].as_of


def test_a_rule_derived_price_is_flagged_as_an_estimate(catalog):
    flagged = {(price.estimate, catalog.sources[price.source.split(":", 1)[0]].title.startswith("estimate"))
               for _, _, info in region_prices(catalog) for price in filter(None, (info.on_demand, info.spot))}
    assert flagged == {(True, True), (False, False)}


def test_regions_of_one_offering_can_differ_in_price(catalog):
    spots = {region: info.spot.usd for offering, region, info in region_prices(catalog)
             if offering.id == "gcp-tpu-v6e" and info.spot is not None}
    assert len(set(spots.values())) > 1


def pinned(region: str, spot: bool):
    return workload_from_mapping({
        "name": "t", "kind": "pretrain", "model": {"parameters": "8B"},
        "training": {"tokens": "20B", "framework": "jax"},
        "hardware": {"accelerator": "tpu-v6e", "chips": 16, "cloud": "gcp", "region": region, "spot": spot}},
        "t.yaml")


@pytest.mark.parametrize("spot", [False, True])
def test_choose_prices_a_fleet_at_its_own_regions_price(catalog, spot):
    offering = catalog.offering("gcp-tpu-v6e")
    answers = {region: choose(pinned(region, spot), catalog).chosen for region in ("us-east5", "us-central1")}
    for region, option in answers.items():
        assert option.region == region
        assert option.hourly_usd == pytest.approx(option.chips * offering.prices(region, spot)[0].usd, rel=1e-6)


def test_choose_says_when_the_chosen_price_is_an_estimate(catalog):
    choice = choose(workload_from_mapping({
        "name": "t", "kind": "pretrain", "model": {"parameters": "1B"}, "training": {"tokens": "1B", "framework": "jax"},
        "hardware": {"accelerator": "a100-40gb", "chips": 8, "machine_type": "a2-highgpu-8g", "cloud": "gcp",
                     "region": "europe-west4", "spot": False}},
        "t.yaml"), catalog)
    price = next(a for a in choice.estimate.assumptions if a.name == "price")
    assert "estimate for europe-west4" in price.value and "gcp-region-estimate-2026" in price.source
    listed = choose(pinned("us-east5", True), catalog)
    assert "estimate" not in next(a for a in listed.estimate.assumptions if a.name == "price").value


def overlay(tmp_path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_users_price_file_overrides_one_regions_spot_price(tmp_path, catalog):
    mine = load_catalog(overlay(tmp_path, """
        prices:
          - {offering: gcp-tpu-v6e, region: us-south1, spot: 0.5, source: "our quote", as_of: 2026-11-01}
    """)).offering("gcp-tpu-v6e")
    assert mine.prices("us-south1", True)[0].usd == 0.5
    bundled = catalog.offering("gcp-tpu-v6e")
    assert all(mine.prices(r, True) == bundled.prices(r, True) for r in bundled.regions if r != "us-south1")


def test_a_price_override_without_a_region_sets_every_region(tmp_path, catalog):
    mine = load_catalog(overlay(tmp_path, """
        prices:
          - {offering: aws-p5en.48xlarge, on_demand: 4.0, spot: null, source: "our EDP rate", as_of: 2026-11-01}
    """)).offering("aws-p5en.48xlarge")
    assert {mine.prices(r, False)[0].usd for r in mine.regions} == {4.0} and not mine.has_spot()


def test_an_overlay_offering_level_price_applies_to_every_region_it_copies(tmp_path):
    mine = load_catalog(overlay(tmp_path, """
        offerings:
          - {id: deal-v6e, like: gcp-tpu-v6e, on_demand: {usd: 1.5, source: deal, as_of: 2026-11-01}, spot: null}
    """)).offering("deal-v6e")
    assert len(mine.regions) > 1 and {mine.prices(r, False)[0].usd for r in mine.regions} == {1.5}


def catalog_copy(tmp_path) -> Path:
    directory = tmp_path / "catalog"
    shutil.copytree(BUNDLED_DIR, directory, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return directory


def test_the_loader_refuses_a_region_without_its_own_spot_price(tmp_path):
    directory = catalog_copy(tmp_path)
    path = directory / "offerings.yaml"
    data = yaml.safe_load(path.read_text())
    del data["offerings"][0]["regions"]["us-central2"]["spot"]
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match=r"us-central2.*no spot price of its own: every region carries its own "
                                           r"on-demand and spot price \(write spot: null where spot is not sold\)"):
        load_catalog(directory)


def test_the_loader_refuses_an_offering_level_price_in_a_full_catalog(tmp_path):
    directory = catalog_copy(tmp_path)
    path = directory / "offerings.yaml"
    data = yaml.safe_load(path.read_text())
    data["offerings"][0]["on_demand"] = {"usd": 3.0, "source": "gcp-tpu-pricing-2026"}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError, match=r"gcp-tpu-v4.on_demand: a catalog gives every region its own prices"):
        load_catalog(directory)


def test_an_overlay_offering_without_any_on_demand_price_is_refused_naming_the_region(tmp_path):
    path = overlay(tmp_path, """
        offerings:
          - {id: bare, cloud: gcp, machine_type: ct6e-standard-4t, path: gke-tpu-node-pool,
             regions: {us-east5: {zones: [us-east5-b]}}}
    """)
    with pytest.raises(CatalogError, match=r"mine.yaml.*us-east5.*no on_demand or spot price of its own"):
        load_catalog(path)


def test_an_overlay_region_copied_with_like_keeps_that_regions_prices(tmp_path, catalog):
    mine = load_catalog(overlay(tmp_path, """
        offerings:
          - {id: east5-v6e, like: gcp-tpu-v6e, regions: {us-east5: {zones: [us-east5-b]}}}
    """)).offering("east5-v6e")
    assert mine.prices("us-east5", True) == catalog.offering("gcp-tpu-v6e").prices("us-east5", True)


def spot_run(deadline_days: float):
    return workload_from_mapping({
        "name": "t", "kind": "pretrain", "model": {"parameters": "8B"}, "training": {"tokens": "100B", "framework": "jax"},
        "constraints": {"spot": "required", "clouds": ["gcp"], "deadline_days": deadline_days}}, "t.yaml")


def test_spot_choices_finish_within_the_deadline_judged_by_the_obtainability_model(catalog):
    """Spot is judged at the P90 of its reclaim waves and pool drains (policies/cloud/obtainability.py),
    which replaced the flat spot slack wherever the model applies: the expected run ends inside the
    deadline with room for the bad tail."""
    slack = catalog.defaults.training.spot_deadline_slack.value
    assert 0 < slack < 1  # still the rule where no obtainability model applies (sizing.py)
    for deadline_days in (2, 4, 8):
        chosen = choose(spot_run(deadline_days), catalog).chosen
        assert chosen.spot and chosen.hours <= deadline_days * 24
