"""Capacity modes priced and sized as what the fleet is really bought through.

- A fleet bought through flex-start where no flex-start rate was found (A4, TPU7x) is priced at on-demand list and
  says it is an upper bound: in the option's price source, the rationale, the Plan's `capacity.price_bound` and
  `accel review`'s capacity line (policies/cloud/mode_prices.py, the one place it is said).
"""

from __future__ import annotations

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose, make_plan, plan_from_pin
from accel.policies.workload import workload_from_mapping

UPPER = "an upper bound of flex-start"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def training(name: str, *, tokens: str = "20B", deadline: int = 5, clouds=("gcp",), accelerators=("b200",),
             spot: str = "never", hardware: dict | None = None, framework: str = "pytorch"):
    data = {"name": name, "kind": "pretrain", "model": {"parameters": "8B", "sequence_length": 8192},
            "training": {"tokens": tokens, "framework": framework, "precision": "bf16"},
            "constraints": {"clouds": list(clouds), "accelerators": list(accelerators), "deadline_days": deadline,
                            "spot": spot},
            "owner": "capacity-tests", "cost_center": "cc-1"}
    if hardware is not None:
        data["hardware"] = hardware
    return workload_from_mapping(data, name)


# --------------------------------------------------------------------------- flex-start with no published rate

@pytest.mark.parametrize("pin", [
    {"accelerator": "b200", "chips": 16, "cloud": "gcp", "region": "us-central1", "machine_type": "a4-highgpu-8g"},
    {"accelerator": "tpu7x", "chips": 64, "cloud": "gcp"},
], ids=["A4", "TPU7x"])
def test_a_flex_start_fleet_with_no_rate_is_labelled_an_upper_bound_everywhere(catalog, pin):
    spec = training("bound", accelerators=[pin["accelerator"]], hardware=pin,
                    framework="jax" if pin["accelerator"] == "tpu7x" else "pytorch")
    plan = plan_from_pin(spec, catalog)
    assert plan.capacity.provisioning == "flex-start" and plan.capacity.mode == "gcp-flex-start"
    assert plan.capacity.price_bound == "upper"
    assert UPPER in plan.chosen.price_source
    assert any("UPPER BOUND" in line and "no flex-start rate" in line for line in plan.rationale)
    from accel.review.comparison import _capacity
    from accel.review.plan_json import PlanView

    assert _capacity(PlanView.model_validate(plan.model_dump(mode="json"))).endswith("price is an upper bound")


def test_a_searched_a4_flex_start_option_says_its_price_is_an_upper_bound(catalog):
    choice = choose(training("search", accelerators=["b200"]), catalog)
    a4 = [o for o in choice.options if o.machine_type == "a4-highgpu-8g" and o.provisioning == "flex-start"]
    assert a4 and all(UPPER in o.price_source for o in a4)


def test_a_flex_start_fleet_at_its_factor_is_not_an_upper_bound(catalog):
    pin = {"accelerator": "h200-141gb", "chips": 64, "cloud": "gcp", "region": "us-central1",
           "machine_type": "a3-ultragpu-8g"}
    plan = plan_from_pin(training("factor", deadline=30, accelerators=["h200-141gb"], hardware=pin), catalog)
    assert plan.capacity.provisioning == "flex-start" and plan.capacity.price_bound is None
    assert UPPER not in plan.chosen.price_source
    assert not any("UPPER BOUND" in line for line in plan.rationale)
