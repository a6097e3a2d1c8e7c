"""Every price says where a user can check it: a public page with its date, or the user's own file."""

from __future__ import annotations

from accel.policies.catalog import load_catalog


def test_every_bundled_source_names_a_public_page_and_a_date():
    catalog = load_catalog()
    assert catalog.sources
    for key, source in catalog.sources.items():
        assert source.page.startswith("https://"), (key, source.page)
        assert source.as_of is not None


def test_no_price_cites_the_project_brief():
    catalog = load_catalog()
    cited = [price.source for offering in catalog.offerings for info in offering.regions.values()
             for price in (info.on_demand, info.spot) if price is not None]
    assert cited and not [text for text in cited if "brief" in text.lower()]
    assert all("https://" in text for text in cited)


def test_an_overlay_source_without_a_page_is_checked_in_the_overlay_file(tmp_path):
    overlay = tmp_path / "deal.yaml"
    overlay.write_text("version: deal\nsources:\n  acme-contract: {title: our negotiated H100 rate, as_of: 2026-03-01}\n"
                       "prices:\n  - {offering: aws-p5.48xlarge, on_demand: {usd: 9.0, source: acme-contract}}\n")
    catalog = load_catalog(overlay)
    assert catalog.sources["acme-contract"].page == str(overlay)
    for region in catalog.offering("aws-p5.48xlarge").regions:
        price, _ = catalog.offering("aws-p5.48xlarge").prices(region, False)
        assert str(overlay) in price.source and price.usd == 9.0
