"""The catalog: coverage, sourced and dated prices, sanity checks, user overlays and inventories."""

import textwrap
from pathlib import Path

import pytest

from accel.base.errors import UsageError
from accel.policies.hardware import shapes
from accel.policies.catalog import CatalogError, Offering, load_catalog, offerings_from_inventory

REQUIRED = {
    "gcp": {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "l4"},
    "aws": {"a100-40gb", "a100-80gb", "h100-80gb", "h200-141gb", "l4", "a10g", "l40s"},
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def overlay(tmp_path, text: str, name: str = "mine.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_bundled_catalog_has_a_version_and_a_date(catalog):
    assert catalog.version and catalog.as_of.year >= 2026


@pytest.mark.parametrize("cloud", sorted(REQUIRED))
def test_the_bundled_catalog_covers_the_required_accelerators(catalog, cloud):
    present = {o.accelerator for o in catalog.offerings if o.cloud == cloud}
    assert REQUIRED[cloud] <= present


def test_every_price_names_its_source_and_date(catalog):
    for offering in catalog.offerings:
        prices = []
        for info in offering.regions.values():
            prices += [info.on_demand, info.spot, info.host_on_demand, info.host_spot]
        for price in filter(None, prices):
            assert price.usd > 0 and len(price.source) > 10 and price.as_of, offering.id


def test_per_instance_list_prices_become_per_chip_prices(catalog):
    # AWS's June 2025 P4/P5 on-demand reduction (us-east-1 list per instance-hour, eight GPUs each).
    us_east_1 = {"aws-p5.48xlarge": 55.04, "aws-p5en.48xlarge": 63.296, "aws-p4d.24xlarge": 21.957642,
                 "aws-p4de.24xlarge": 27.44705}
    for offering_id, instance_usd in us_east_1.items():
        chip, _ = catalog.offering(offering_id).prices("us-east-1", False)
        assert chip.usd == pytest.approx(instance_usd / 8) and "June 2025" in chip.source


def test_spot_never_costs_more_than_on_demand(catalog):
    for offering in catalog.offerings:
        for region in offering.regions:
            spot, on_demand = offering.prices(region, True), offering.prices(region, False)
            if spot is not None:
                assert spot[0].usd <= on_demand[0].usd, offering.id


def test_tpu_offerings_know_their_zones(catalog):
    assert catalog.offering("gcp-tpu-v5p").regions["us-east5"].zones == ["us-east5-a"]
    assert catalog.offering("gcp-tpu-v4").regions["us-central2"].zones == ["us-central2-b"]


def test_tpu_host_sizes_divide_every_multi_host_slice(catalog):
    for offering in catalog.offerings:
        generation = shapes.GENERATION_BY_ACCELERATOR.get(offering.accelerator)
        if generation:
            assert all(shapes.topology_chips(t) % offering.chips_per_host == 0
                       for t in shapes.valid_topologies(generation.name) if shapes.topology_chips(t) > 8)


def test_gpu_fabrics_match_their_machine_types(catalog):
    fabric = {o.machine_type: (o.fabric, o.extra_networks, o.efa_interfaces) for o in catalog.offerings}
    assert fabric["a3-highgpu-8g"] == ("gpudirect-tcpx", 4, 0)
    assert fabric["a3-megagpu-8g"] == ("gpudirect-tcpxo", 8, 0)
    assert fabric["a3-ultragpu-8g"] == ("rdma", 1, 0)
    assert fabric["p5.48xlarge"] == ("efa", 0, 32)
    assert fabric["p5en.48xlarge"] == ("efa", 0, 16)
    assert fabric["p4d.24xlarge"] == ("efa", 0, 4)


def test_a_negotiated_price_overrides_one_region(tmp_path, catalog):
    path = overlay(tmp_path, """
        version: acme-2026q1
        prices:
          - offering: gcp-tpu-v5p
            region: us-east5
            on_demand: 2.10
            source: "ACME contract 2026-01"
            as_of: 2026-01-10
    """)
    mine = load_catalog(path)
    v5p = mine.offering("gcp-tpu-v5p")
    assert v5p.prices("us-east5", False)[0].usd == 2.10
    assert v5p.prices("us-east5", False)[0].source == "ACME contract 2026-01"
    assert v5p.prices("us-central1", False)[0] == catalog.offering("gcp-tpu-v5p").prices("us-central1", False)[0]
    assert mine.version.endswith("+acme-2026q1")


def test_a_reservation_is_an_offering_copied_from_an_existing_one(tmp_path):
    path = overlay(tmp_path, """
        offerings:
          - id: acme-v5p-reservation
            like: gcp-tpu-v5p
            provisioning: reservation
            reservation: projects/acme/reservations/v5p-512
            max_chips: 512
            on_demand: {usd: 1.9, source: "prepaid reservation", as_of: 2026-02-01}
            spot: null
            regions: {us-east5: {zones: [us-east5-a]}}
    """)
    reserved = load_catalog(path).offering("acme-v5p-reservation")
    assert (reserved.machine_type, reserved.max_chips, reserved.has_spot()) == ("ct5p-hightpu-4t", 512, False)
    assert reserved.prices("us-east5", False)[0].usd == 1.9
    assert list(reserved.regions) == ["us-east5"]


def test_a_price_csv_overrides_prices(tmp_path):
    path = tmp_path / "prices.csv"
    path.write_text("offering,region,on_demand_usd_per_chip_hour,spot_usd_per_chip_hour,source,as_of\n"
                    "aws-p5.48xlarge,us-east-1,6.88,2.5,AWS price cut 2025-06,2025-06-05\n")
    p5 = load_catalog(path).offering("aws-p5.48xlarge")
    assert p5.prices("us-east-1", False)[0].usd == 6.88
    assert p5.prices("us-east-1", True)[0].usd == 2.5


@pytest.mark.parametrize("value, message", [
    (0, "positive"), (-1.5, "positive"), (700.0, r"placeholder \(sentinel\)"), (".nan", "positive"),
])
def test_nonsense_prices_are_rejected(tmp_path, value, message):
    path = overlay(tmp_path, f"""
        prices:
          - offering: gcp-tpu-v6e
            on_demand: {value}
            source: feed
            as_of: 2026-02-01
    """)
    with pytest.raises(CatalogError, match=message) as error:
        load_catalog(path)
    assert "mine.yaml" in str(error.value)


def test_spot_above_on_demand_is_rejected(tmp_path):
    path = overlay(tmp_path, """
        prices:
          - {offering: gcp-tpu-v6e, spot: 3.5, source: feed, as_of: 2026-02-01}
    """)
    with pytest.raises(CatalogError, match=r"spot price \$3.5 is above the on-demand price \$2.7"):
        load_catalog(path)


def test_a_per_instance_price_given_per_chip_is_implausible(tmp_path):
    path = overlay(tmp_path, """
        prices:
          - {offering: aws-p5.48xlarge, on_demand: 98.32, spot: null, source: feed, as_of: 2026-02-01}
    """)
    load_catalog(path)   # $98/chip-h is dear but possible
    path = overlay(tmp_path, """
        prices:
          - {offering: aws-p5.48xlarge, on_demand: 786.56, spot: null, source: feed, as_of: 2026-02-01}
    """)
    with pytest.raises(CatalogError, match="implausible; a per-instance price belongs in instance_usd"):
        load_catalog(path)


def test_a_chips_per_host_that_contradicts_the_hardware_table_is_rejected(tmp_path):
    path = overlay(tmp_path, """
        offerings:
          - {id: odd-v5p, like: gcp-tpu-v5p, chips_per_host: 3}
    """)
    with pytest.raises(CatalogError, match="odd-v5p.chips_per_host: 3 contradicts the hardware facts table: "
                                           "ct5p-hightpu-4t has chips_per_host 4"):
        load_catalog(path)


def test_a_price_without_a_known_source_needs_a_date(tmp_path):
    path = overlay(tmp_path, """
        prices:
          - {offering: gcp-tpu-v6e, on_demand: 2.0, source: "my spreadsheet"}
    """)
    with pytest.raises(CatalogError, match="give an as_of date"):
        load_catalog(path)


def test_an_unknown_offering_in_an_override_suggests_the_nearest(tmp_path):
    path = overlay(tmp_path, """
        prices:
          - {offering: gcp-tpu-v6, on_demand: 2.0, source: x, as_of: 2026-01-01}
    """)
    with pytest.raises(CatalogError, match="did you mean 'gcp-tpu-v6e'"):
        load_catalog(path)


def test_an_unknown_overlay_key_suggests_the_nearest(tmp_path):
    path = overlay(tmp_path, "offering: []\n")
    with pytest.raises(CatalogError, match="did you mean 'offerings'"):
        load_catalog(path)


def test_catalog_errors_exit_like_any_bad_input():
    assert issubclass(CatalogError, UsageError)


def test_a_missing_catalog_file_is_a_clear_error(tmp_path):
    with pytest.raises(CatalogError, match="no such catalog file"):
        load_catalog(tmp_path / "absent.yaml")


def test_a_stand_alone_catalog_needs_offerings(tmp_path):
    path = overlay(tmp_path, "base: none\nversion: empty\nas_of: 2026-01-01\n")
    with pytest.raises(CatalogError, match="needs at least one offering"):
        load_catalog(path)


def test_inventory_items_become_kubernetes_offerings():
    [offering] = offerings_from_inventory([{"accelerator": "h100-80gb", "count": 64, "usd_per_chip_hour": 3.1,
                                            "name": "rack-a"}])
    assert isinstance(offering, Offering)
    assert (offering.cloud, list(offering.regions), offering.max_chips, offering.chips_per_host) == (
        "kubernetes", ["on-prem"], 64, 8)
    assert offering.prices("on-prem", False)[0].usd == 3.1 and not offering.has_spot()
    assert offering.id == "kubernetes-rack-a"


def test_an_inventory_item_with_a_bad_accelerator_is_named():
    with pytest.raises(CatalogError, match=r"inventory\[0\].accelerator: unknown accelerator 'h100'"):
        offerings_from_inventory([{"accelerator": "h100", "count": 8, "usd_per_chip_hour": 2}])


def test_an_inventory_item_with_a_free_price_is_rejected():
    with pytest.raises(CatalogError, match=r"inventory\[0\]"):
        offerings_from_inventory([{"accelerator": "l4", "count": 8, "usd_per_chip_hour": 0}])


def test_the_overlay_example_in_the_catalog_readme_loads(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "policies" / "catalog" / "README.md").read_text()
    example = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    mine = load_catalog(overlay(tmp_path, example))
    assert mine.offering("gcp-tpu-v5p").prices("us-east5", False)[0].usd == 2.90
    assert mine.offering("gcp-tpu-v5p").prices("us-east5", True) is None
    assert mine.offering("acme-v5p-reservation").provisioning == "reservation"
    assert mine.defaults.preemptions_per_host_day["gcp"].value == 0.03


# ----------------------------------------------------------------------------- node-pool limits and filesystem sizes

def test_gke_gpu_offerings_carry_the_compact_placement_limit_the_gpu_pool_enforces(catalog):
    from accel.policies import hardware

    compact_max = hardware.current().limit("gke_compact_placement_max_nodes")
    for offering in (o for o in catalog.offerings if o.cloud == "gcp" and o.family == "gpu"):
        limit = offering.max_nodes
        assert limit is not None, offering.id
        assert (limit.value, limit.applies_to) == (compact_max, "training"), offering.id
        assert "compact placement" in limit.source.lower()


def test_eks_offerings_carry_the_nodes_per_managed_node_group_quota(catalog):
    for offering in (o for o in catalog.offerings if o.cloud == "aws"):
        limit = offering.max_nodes
        assert limit is not None, offering.id
        assert (limit.value, limit.applies_to) == (450, "all"), offering.id
        assert "Nodes per managed node group" in limit.source


def test_a_raised_node_group_quota_is_an_overlay_away(tmp_path):
    path = overlay(tmp_path, """
        offerings:
          - id: acme-p5en
            like: aws-p5en.48xlarge
            max_nodes: {value: 1200, name: raised EKS quota, source: "our quota increase, case 1234"}
    """)
    mine = load_catalog(path).offering("acme-p5en")
    assert (mine.max_nodes.value, mine.max_nodes.applies_to) == (1200, "all")


def test_a_node_limit_without_a_source_is_rejected(tmp_path):
    path = overlay(tmp_path, """
        offerings:
          - {id: acme-p5en, like: aws-p5en.48xlarge, max_nodes: {value: 600, name: quota}}
    """)
    with pytest.raises(CatalogError, match=r"offerings.acme-p5en.max_nodes.source: Field required"):
        load_catalog(path)


def test_filesystem_sizes_are_the_minimum_then_multiples_of_the_step(catalog):
    fsx = catalog.defaults.storage.filesystems["aws"]
    assert [fsx.capacity_gib(w) for w in (1, 1200, 1201, 2400, 2401, 3600, 4801)] == [
        1200, 1200, 2400, 2400, 4800, 4800, 7200]
    lustre = catalog.defaults.storage.filesystems["gcp"]
    assert [lustre.capacity_gib(w) for w in (1, 18000, 18001, 27001)] == [18000, 18000, 27000, 36000]


def test_a_filesystem_minimum_off_its_step_is_rejected(tmp_path):
    path = overlay(tmp_path, """
        assumptions:
          storage:
            filesystems:
              aws: {min_capacity_gib: 3000}
    """)
    with pytest.raises(CatalogError, match="not a multiple"):
        load_catalog(path)


# ----------------------------------------------------------------------------- storage tiers and node-limit kinds

def _component_default(args_class, field_name):
    import dataclasses

    return next(f.default for f in dataclasses.fields(args_class) if f.name == field_name)


def test_each_filesystem_is_priced_at_the_throughput_tier_its_component_builds(catalog):
    from accel.components.aws.storage import TrainingStorageArgs as AwsStorageArgs
    from accel.components.gcp.storage import TrainingStorageArgs as GcpStorageArgs

    filesystems = catalog.defaults.storage.filesystems
    assert filesystems["gcp"].throughput_mbps_per_tib == _component_default(GcpStorageArgs, "lustre_throughput_mbps_per_tib")
    assert filesystems["aws"].throughput_mbps_per_tib == _component_default(AwsStorageArgs, "fsx_throughput_per_tib")
    for offer in filesystems.values():
        assert offer.price_per_gib_month == offer.prices_per_gib_month[offer.throughput_mbps_per_tib]


def test_every_filesystem_tier_price_names_its_source_and_date(catalog):
    for cloud, offer in catalog.defaults.storage.filesystems.items():
        for tier, price in offer.prices_per_gib_month.items():
            assert price.source and price.as_of, (cloud, tier)
        assert offer.capacity_rule, cloud


def test_a_faster_lustre_tier_never_costs_less_per_gib(catalog):
    for offer in catalog.defaults.storage.filesystems.values():
        prices = [offer.prices_per_gib_month[t].usd for t in sorted(offer.prices_per_gib_month)]
        assert prices == sorted(prices)


def test_a_filesystem_whose_built_tier_has_no_price_is_rejected(tmp_path):
    path = overlay(tmp_path, """
        assumptions:
          storage:
            filesystems:
              aws: {throughput_mbps_per_tib: 2000}
    """)
    with pytest.raises(CatalogError, match=r"throughput_mbps_per_tib 2000 .* has no entry in prices_per_gib_month"):
        load_catalog(path)


def test_price_per_gib_month_in_an_overlay_is_the_built_tiers_price(tmp_path):
    path = overlay(tmp_path, """
        sources:
          acme-fsx: {title: "our FSx discount", as_of: 2026-03-01}
        assumptions:
          storage:
            filesystems:
              aws: {price_per_gib_month: {usd: 0.12, source: acme-fsx}}
    """)
    fsx = load_catalog(path).defaults.storage.filesystems["aws"]
    assert fsx.price_per_gib_month.usd == 0.12 and fsx.prices_per_gib_month[fsx.throughput_mbps_per_tib].usd == 0.12
    assert fsx.prices_per_gib_month[125].usd == 0.145   # the other tiers keep the bundled prices


def test_gke_compact_placement_is_a_fixed_limit_and_the_eks_node_group_limit_a_quota(catalog):
    for offering in catalog.offerings:
        if offering.max_nodes is None:
            continue
        assert offering.max_nodes.adjustable == (offering.cloud == "aws"), offering.id


def test_the_raised_quota_example_in_the_catalog_readme_loads(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "policies" / "catalog" / "README.md").read_text()
    section = readme.split("## Node-pool limits", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    limit = load_catalog(overlay(tmp_path, example)).offering("aws-p5.48xlarge").max_nodes
    assert (limit.value, limit.adjustable, limit.applies_to) == (1000, True, "all")


@pytest.mark.parametrize("document", ["README.md", "docs/contracts.md", "docs/choose.md"])
def test_the_documented_accelerator_ids_are_the_catalogs(catalog, document):
    """The list a person picks a pin from names every accelerator the catalog sells, and no other."""
    import re

    text = (Path(__file__).resolve().parent.parent / document).read_text()
    listed = re.search(r"Accelerator ids: `([^`]*)`", text)
    assert listed is not None, f"{document} lost its 'Accelerator ids:' list"
    assert sorted(listed.group(1).split()) == sorted(catalog.accelerators)
