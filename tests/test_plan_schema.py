"""Plan schema 2: each fact once, contradictions refused on load, schema-1 pins upgraded unchanged.

The schema-1 fixtures are the stack files as they were committed with a schema-1 `accel:plan`
(tests/fixtures/plans_schema1); a user's pinned stack must keep building exactly the same resources.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import get_args

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from accel.commands.choose import write_stack_file
from accel.offline_plan import plan_stack
from accel.policies.plan import Capacity, Option, Plan, Provisioning
from accel.policies.plan_migration import upgrade_schema_1

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_1 = ROOT / "tests" / "fixtures" / "plans_schema1"
PINNED_STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in SCHEMA_1.glob("Pulumi.*.yaml"))
CONTRACT_OPTION_KEYS = ["cloud", "region", "accelerator", "family", "chips", "hosts", "slices", "topology",
                        "machine_type", "spot", "hourly_usd", "hours", "total_usd", "mfu"]


def stack_document(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def schema_1_pin(stack: str) -> dict:
    return stack_document(SCHEMA_1 / f"Pulumi.{stack}.yaml")["config"]["accel:plan"]


def a_plan_document() -> dict:
    """A valid schema-2 document: the shipped TPU pin, migrated."""
    return Plan.model_validate(schema_1_pin("llama-70b-tpu")).model_dump(mode="json")


def resources_with_pin(tmp_path: Path, stack: str, pin: dict) -> list[dict]:
    document = stack_document(SCHEMA_1 / f"Pulumi.{stack}.yaml")
    document["config"]["accel:plan"] = pin
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return plan_stack(None, path, ROOT).resources_json()


def test_the_schema_1_fixtures_are_the_pinned_stacks_of_schema_1():
    assert PINNED_STACKS == ["llama-70b-finetune-aws", "llama-70b-tpu"]
    assert all(schema_1_pin(stack)["schema_version"] == 1 for stack in PINNED_STACKS)


@pytest.mark.parametrize("stack", PINNED_STACKS)
def test_a_schema_1_pin_loads_as_schema_2_with_the_accelerator_on_its_pool(stack):
    plan = Plan.model_validate(schema_1_pin(stack))
    assert plan.schema_version == 2
    assert plan.pool.accelerator == schema_1_pin(stack)["chosen"]["accelerator"]


@pytest.mark.parametrize("stack", PINNED_STACKS)
def test_a_schema_1_pin_and_its_schema_2_form_build_identical_resources(tmp_path, stack):
    old = schema_1_pin(stack)
    new = Plan.model_validate(old).model_dump(mode="json")
    assert new["schema_version"] == 2
    from_old = resources_with_pin(tmp_path, stack, old)
    from_new = resources_with_pin(tmp_path, stack, new)
    assert from_old, "the stack builds something"
    assert from_old == from_new


@pytest.mark.parametrize("stack", PINNED_STACKS)
def test_the_shipped_stack_pins_a_schema_2_plan_as_choose_writes_it(stack):
    """The shipped pins were re-decided since schema 1 (tests/test_pin_freshness.py: a shipped pin is what
    `accel choose` answers today); what schema 1 pinned is still built unchanged (the test above)."""
    shipped = stack_document(ROOT / "stacks" / f"Pulumi.{stack}.yaml")["config"]["accel:plan"]
    assert shipped["schema_version"] == 2
    assert Plan.model_validate(shipped).model_dump(mode="json") == shipped


@given(st.sampled_from(get_args(Provisioning)))
def test_spot_is_derived_from_the_one_capacity_type(provisioning):
    capacity = Capacity(provisioning=provisioning)
    assert capacity.spot == (provisioning == "spot")
    assert Capacity.model_validate(capacity.model_dump(mode="json")) == capacity


@given(st.sampled_from(get_args(Provisioning)), st.booleans())
def test_a_given_spot_that_contradicts_the_capacity_type_is_refused(provisioning, spot):
    if spot == (provisioning == "spot"):
        assert Capacity(spot=spot, provisioning=provisioning).provisioning == provisioning
    else:
        with pytest.raises(ValidationError, match=r"capacity\.spot .* capacity\.provisioning"):
            Capacity(spot=spot, provisioning=provisioning)


def test_schema_1_spot_on_demand_capacity_becomes_spot_as_the_gcp_components_built_it():
    document = copy.deepcopy(schema_1_pin("llama-70b-tpu"))
    document["capacity"] = {"spot": True, "provisioning": "on-demand", "reservation": None}
    document["chosen"]["spot"] = True
    document["chosen"]["provisioning"] = "spot"
    assert Plan.model_validate(document).capacity.provisioning == "spot"


@pytest.mark.parametrize("provisioning", ["flex-start", "queued", "reservation", "capacity-block"])
def test_schema_1_spot_with_another_capacity_type_is_refused_naming_both(provisioning):
    document = copy.deepcopy(schema_1_pin("llama-70b-tpu"))
    document["capacity"] = {"spot": True, "provisioning": provisioning, "reservation": None}
    with pytest.raises(ValidationError, match=f"capacity.spot is true but capacity.provisioning is '{provisioning}'"):
        Plan.model_validate(document)


def test_upgrading_leaves_the_schema_1_document_unchanged():
    document = schema_1_pin("llama-70b-finetune-aws")
    before = copy.deepcopy(document)
    upgrade_schema_1(document)
    assert document == before


def _set(document: dict, path: str, value) -> dict:
    *parents, key = path.split(".")
    target = document
    for part in parents:
        target = target[part]
    target[key] = value
    return document


@pytest.mark.parametrize(("path", "value", "message"), [
    ("region", "europe-west4", r"plan\.region is 'europe-west4' but chosen\.region says 'us-east5'"),
    ("cloud", "aws", r"plan\.cloud is 'aws' but chosen\.cloud says 'gcp'"),
    ("family", "gpu", r"plan\.family is 'gpu' but chosen\.family says 'tpu'"),
    ("tpu.generation", "v5p", r"tpu\.generation is 'v5p' but tpu\.accelerator says 'v6e'"),
    ("tpu.accelerator", "tpu-v5p", r"tpu\.accelerator is 'tpu-v5p' but chosen\.accelerator is 'tpu-v6e'"),
    ("tpu.slices", 2, r"chosen\.chips is 1024 but the tpu pool makes it 512"),
    ("chosen.machine_type", "ct6e-standard-8t", r"chosen\.machine_type is 'ct6e-standard-8t' but the tpu pool"),
    ("capacity.provisioning", "spot", r"capacity\.provisioning is 'spot' but chosen\.provisioning is 'on-demand'"),
    ("estimate.total_usd", 1.0, r"chosen\.total_usd is .* but estimate\.total_usd is 1\.0"),
    ("chosen.spot", True, r"chosen\.spot is True but chosen\.provisioning is 'on-demand'"),
])
def test_a_fact_stored_twice_that_disagrees_is_refused_naming_both_fields(path, value, message):
    document = a_plan_document()
    for derived in ("cloud", "region", "family", "tpu.generation", "capacity.spot", "chosen.spot"):
        *parents, key = derived.split(".")
        (document[parents[0]] if parents else document).pop(key)
    with pytest.raises(ValidationError, match=message):
        Plan.model_validate(_set(document, path, value))


def test_a_plan_dump_reads_back_equal_and_keeps_the_derived_contract_fields():
    document = a_plan_document()
    plan = Plan.model_validate(document)
    assert Plan.model_validate(document) == plan
    assert (document["cloud"], document["region"], document["family"]) == ("gcp", "us-east5", "tpu")
    assert document["capacity"]["spot"] is False and document["chosen"]["spot"] is False


def test_an_option_dump_keeps_the_contract_fields_first_in_contract_order():
    option = Option.model_validate(a_plan_document()["chosen"])
    assert list(option.model_dump(mode="json"))[:len(CONTRACT_OPTION_KEYS)] == CONTRACT_OPTION_KEYS


def test_re_pinning_a_stack_keeps_its_comments_and_other_keys(tmp_path):
    (tmp_path / "Pulumi.yaml").write_text("name: accel\nruntime: python\n")
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    original = (SCHEMA_1 / "Pulumi.llama-70b-tpu.yaml").read_text(encoding="utf-8")
    commented = original.replace("  accel:owner:", "  # who to ask\n  accel:owner:")
    (stacks / "Pulumi.dev.yaml").write_text(commented, encoding="utf-8")
    plan = Plan.model_validate(schema_1_pin("llama-70b-tpu"))
    path = write_stack_file("dev", plan.workload, plan, root=tmp_path)
    text = path.read_text(encoding="utf-8")
    comments = [line for line in commented.splitlines() if line.lstrip().startswith("#")]
    assert comments and all(comment in text.splitlines() for comment in comments)
    assert stack_document(path)["config"]["gcp:project"] == "acme-ml-training"
    assert stack_document(path)["config"]["accel:plan"]["schema_version"] == 2
