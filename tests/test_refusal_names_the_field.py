"""A refusal names the field whose change would move it: a cluster inventory's chips where they, not max_chips, bound
the fleet, and no `spot: allowed` line for offerings that were sized on demand too and failed there (found by the
audit4 sweep of `accel choose`). A GPU node the global batch keeps partly busy is no longer refused: it trains on the
busy GPUs (tests/test_batch_node.py, which also shows the batch named below a TPU generation's smallest slice)."""

import pytest

from accel.policies.catalog import load_catalog, offerings_from_inventory
from accel.policies.selection.choose import NoFeasibleOption, choose
from accel.policies.workload import workload_from_mapping

# The inventory of stacks/Pulumi.onprem-gpus.yaml: 64 A100 80GB (8 a node) and 32 L40S (4 a node).
ONPREM = [{"accelerator": "a100-80gb", "count": 64, "gpus_per_node": 8, "usd_per_chip_hour": 1.10, "name": "a100"},
          {"accelerator": "l40s", "count": 32, "gpus_per_node": 4, "usd_per_chip_hour": 0.55, "name": "l40s"}]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def refusal(catalog, inventory=(), **data) -> NoFeasibleOption:
    workload = workload_from_mapping({"name": "t", **data}, "t.yaml")
    with pytest.raises(NoFeasibleOption) as raised:
        choose(workload, catalog, extra_offerings=offerings_from_inventory(inventory))
    return raised.value


def reasons_of(error: NoFeasibleOption, offering: str) -> list[str]:
    return next(r["reasons"] for r in error.rejected if r["offering"] == offering)


def test_a_global_batch_below_one_node_no_longer_eliminates_it(catalog):
    # 125M at 131,072 tokens: the default 0.5M-token batch is 3 sequences, 3 chips busy, less than an 8-GPU node.
    # Refused before (global_batch); the node now trains on its 3 busy GPUs (tests/test_batch_node.py).
    choice = choose(workload_from_mapping({"name": "t", "kind": "pretrain",
                                           "model": {"parameters": "125M", "sequence_length": 131072},
                                           "training": {"tokens": "300B", "framework": "pytorch"},
                                           "constraints": {"clouds": ["gcp"], "deadline_days": 90}}, "t.yaml"),
                    catalog)
    assert not any("below one node" in reason for r in choice.rejected for reason in r["reasons"])
    assert choice.chosen.chips == 8 and choice.estimate.details["busy_chips"] == 3
    # An A100 node, 3 of its GPUs busy, misses the deadline; the refusal names the batch as what ends its ladder.
    assert all("the fastest fleet (8 chips)" in reason and "the global batch keeps at most 3 GPUs busy" in reason
               for reason in reasons_of(choice, "gcp-a2-highgpu-8g"))


def test_an_inventory_too_small_for_the_serving_fleet_is_named_and_not_max_chips(catalog):
    error = refusal(catalog, ONPREM, kind="inference", model={"parameters": "13B", "sequence_length": 131072},
                    inference={"tokens_per_second": 5000, "p99_latency_ms": 100},
                    constraints={"clouds": ["kubernetes"], "spot": "never"})
    assert error.eliminations == {"clouds": error.eliminations["clouds"],
                                  "offering_chips": ["kubernetes-a100", "kubernetes-l40s"]}
    assert "max_chips" not in str(error)
    # The closest fleet is larger than the inventory: it does not "meet the limits it was measured against".
    assert error.closest is not None and error.closest.chips > 64
    assert f"needs {error.closest.chips} chips > the 64 kubernetes-a100 holds" in error.closest_misses


def test_an_inventory_too_small_for_the_training_state_is_named_and_not_max_chips(catalog):
    error = refusal(catalog, ONPREM, kind="pretrain", model={"parameters": "405B"},
                    training={"tokens": "1T", "framework": "pytorch"},
                    constraints={"clouds": ["kubernetes"], "deadline_days": 90, "spot": "never"})
    assert error.eliminations["offering_chips"] == ["kubernetes-a100", "kubernetes-l40s"]
    assert any(reason.endswith("kubernetes-a100 holds 64 chips") for reason in reasons_of(error, "kubernetes-a100"))


def test_spot_allowed_is_not_listed_for_an_offering_that_failed_on_demand_too(catalog):
    # An inventory has no spot; with spot allowed it is sized on demand, and that sizing's reason is the one shown.
    error = refusal(catalog, ONPREM, kind="pretrain", model={"parameters": "405B"},
                    training={"tokens": "1T", "framework": "pytorch"},
                    constraints={"clouds": ["kubernetes"], "deadline_days": 90, "spot": "allowed"})
    assert "spot" not in error.eliminations
    assert error.eliminations["offering_chips"] == ["kubernetes-a100", "kubernetes-l40s"]
    assert "no spot capacity in the allowed regions" in reasons_of(error, "kubernetes-a100")   # still listed


def test_spot_required_still_names_spot_and_a_workload_max_chips_still_names_max_chips(catalog):
    required = refusal(catalog, ONPREM, kind="pretrain", model={"parameters": "8B"},
                       training={"tokens": "100B", "framework": "pytorch"},
                       constraints={"clouds": ["kubernetes"], "spot": "required"})
    assert required.eliminations["spot"] == ["kubernetes-a100", "kubernetes-l40s"]
    capped = refusal(catalog, kind="pretrain", model={"parameters": "70B"},
                     training={"tokens": "100B", "framework": "pytorch"},
                     constraints={"clouds": ["gcp"], "max_chips": 4, "accelerators": ["h100-80gb"]})
    assert capped.eliminations["max_chips"] and "global_batch" not in capped.eliminations
    assert "max_chips 4 eliminated" in str(capped)
