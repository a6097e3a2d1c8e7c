"""An inventory's name is its pool's machine type (policies/catalog/loader.py offerings_from_inventory): a cloud
machine type's name would bring that machine's facts to nodes that are not it, e.g. A4X's 18-node sub-block, so the
Plan would lay tensor-parallel groups across nodes and the job require a Kueue level an on-prem cluster lacks."""

from __future__ import annotations

import pytest

from accel.policies import hardware
from accel.policies.catalog import CatalogError, offerings_from_inventory


def test_an_inventory_named_like_a_cloud_machine_type_is_refused_naming_the_field():
    assert hardware.current().nvlink_domain_unit_nodes("a4x-highgpu-4g") == 18   # what the name would bring
    with pytest.raises(CatalogError, match=r"inventory\[0\]\.name: 'a4x-highgpu-4g' is a cloud machine type"):
        offerings_from_inventory([{"accelerator": "gb200", "count": 72, "usd_per_chip_hour": 2.0,
                                   "name": "a4x-highgpu-4g"}])
    with pytest.raises(CatalogError, match=r"inventory\[1\]\.name: 'ct5p-hightpu-4t' is a cloud machine type"):
        offerings_from_inventory([{"accelerator": "l4", "count": 8, "usd_per_chip_hour": 1.0, "name": "l4"},
                                  {"accelerator": "h100-80gb", "count": 8, "usd_per_chip_hour": 2.0,
                                   "name": "ct5p-hightpu-4t"}])


@pytest.mark.parametrize("name", [None, "gb200", "rack-a", "dc2-nvl72"])
def test_an_inventory_named_for_its_cluster_loads(name):
    item = {"accelerator": "gb200", "count": 72, "usd_per_chip_hour": 2.0, **({"name": name} if name else {})}
    [offering] = offerings_from_inventory([item])
    assert offering.machine_type == (name or "gb200") and offering.chips_per_host == 4


@pytest.mark.parametrize("first, second", [({"name": "rack"}, {"name": "rack"}), ({}, {})])
def test_two_entries_of_one_name_are_refused_naming_the_field(first, second):
    # Before: both loaded as offering kubernetes-rack (or kubernetes-gb200), one machine type with two NVLink cliques
    # (18 and 9 nodes): the search keys a machine's clique by its name and the Plan names its offering by id.
    nvl72 = {"accelerator": "gb200", "count": 72, "usd_per_chip_hour": 2.0, "nvlink_clique_label": True, **first}
    nvl36 = {"accelerator": "gb200", "count": 72, "usd_per_chip_hour": 2.0, "nvlink_clique_label": True,
             "nvlink_domain_gpus": 36, **second}
    with pytest.raises(CatalogError, match=r"inventory\[1\]\.name: '(rack|gb200)' names inventory\[0\] too"):
        offerings_from_inventory([nvl72, nvl36])
    assert len(offerings_from_inventory([nvl72, {**nvl36, "name": "rack-b"}])) == 2
