"""`accel choose` assembles its plan from values it computed without pydantic's validation
(model_construct: no validator is built on a choose, issue #25); what a component builds from is still
checked in full where the component takes it, and a pool a person writes by hand is validated as ever."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from accel.base.errors import ComponentArgsError
from accel.base.model import revalidated
from accel.components.tags import ResourceTags
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose, make_plan
from accel.policies.selection.pools import planned_tpu_pool, tpu_pool
from accel.policies.workload import load_workload

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(None)


@pytest.fixture(scope="module")
def tpu_plan(catalog):
    spec = load_workload(ROOT / "examples" / "llama-70b-pretrain.yaml")
    plan = make_plan(spec, choose(spec, catalog, "cost"), catalog)
    assert plan.tpu is not None, "the example's choice is a TPU plan (the pool below needs one)"
    return plan


@pytest.mark.parametrize("objective", ["cost", "time"])
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_choose_plan_is_exactly_what_validating_it_gives(catalog, example, objective):
    """Every value typed and bounded as validation would make it: the repr (which tells 1 from 1.0) of the
    assembled plan and of its validated copy agree, field by field, model by model."""
    spec = load_workload(example)
    plan = make_plan(spec, choose(spec, catalog, objective), catalog)
    again = revalidated(plan)
    # The workload is the user's file as validated when read (an unset default, such as InferenceSpec.hours'
    # 730, keeps its literal's type there): only what the plan assembles is compared.
    for field in type(plan).model_fields:
        if field != "workload":
            assert repr(getattr(again, field)) == repr(getattr(plan, field)), field


def test_a_bad_value_in_an_assembled_plan_is_refused_by_the_training_cluster(tpu_plan):
    from accel.components.training_cluster import TrainingClusterArgs, TrainingClusterError

    TrainingClusterArgs(plan=tpu_plan, tags=TAGS, gcp_project="acme-ml")  # the plan as assembled: accepted
    over_one = tpu_plan.model_copy(update={"chosen": tpu_plan.chosen.model_copy(update={"mfu": 1.5})})
    with pytest.raises(TrainingClusterError, match=r"TrainingCluster: plan\.chosen\.mfu: .*less than or equal to 1"):
        TrainingClusterArgs(plan=over_one, tags=TAGS, gcp_project="acme-ml")
    bad_runtime = tpu_plan.model_copy(update={"tpu": tpu_plan.tpu.model_copy(update={"runtime_version": "Not A Version"})})
    with pytest.raises(TrainingClusterError, match=r"plan\.tpu\.runtime_version: String should match pattern"):
        TrainingClusterArgs(plan=bad_runtime, tags=TAGS, gcp_project="acme-ml")


@pytest.fixture
def bad_v5p_runtime(tmp_path):
    """The hardware table with v5p's runtime version broken (upper case and a space): the table's loader
    reads it as any string; TpuPool's pattern is the rule that refuses it."""
    text = (Path(hardware.__file__).parent / "facts.toml").read_text(encoding="utf-8")
    assert text.count('runtime_version = "v2-alpha-tpuv5"\n') == 1
    path = tmp_path / "facts.toml"
    path.write_text(text.replace('runtime_version = "v2-alpha-tpuv5"\n', 'runtime_version = "V2 Alpha"\n'),
                    encoding="utf-8")
    with hardware.using(hardware.load_facts(path)):
        yield


def test_a_tpu_pool_written_by_hand_is_validated(bad_v5p_runtime):
    with pytest.raises(ValidationError, match="runtime_version"):
        tpu_pool("v5p", "2x2x4")


def test_a_planned_tpu_pool_with_a_bad_value_is_refused_by_the_tpu_slice(bad_v5p_runtime):
    from accel.components.gcp.cluster import ClusterRef
    from accel.components.gcp.tpu import TpuSliceArgs, TpuVmSliceArgs
    from accel.policies.plan import Capacity

    pool = planned_tpu_pool("v5p", "2x2x4", 1)  # assembled without validation: the bad value is in it
    assert pool.runtime_version == "V2 Alpha"
    cluster = ClusterRef(name="train", location="us-east5", node_service_account_email="n@acme.iam.gserviceaccount.com",
                         upgrades_paused=True)
    with pytest.raises(ComponentArgsError, match=r"TpuSlice: pool\.runtime_version: String should match pattern"):
        TpuSliceArgs(pool=pool, capacity=Capacity(), cluster=cluster, zone="us-east5-a", tags=TAGS)
    with pytest.raises(ComponentArgsError, match=r"TpuVmSlice: pool\.runtime_version: String should match pattern"):
        TpuVmSliceArgs(pool=pool, capacity=Capacity(), zone="us-east5-a", network="net", subnetwork="sub", tags=TAGS)


def test_an_assembled_option_is_stored_exactly_as_model_construct_stores_it(catalog):
    """`assembled` (the search's fast model_construct for options) gives the same fields, in the same order, the
    same set fields and no extra or private values; given fewer fields it is model_construct itself (defaults)."""
    from accel.base.model import assembled
    from accel.policies.plan import Option

    spec = load_workload(ROOT / "examples" / "llama-70b-finetune-aws.yaml")
    for option in choose(spec, catalog, "cost").options[:20]:
        values = dict(option.__dict__)
        fast, slow = assembled(Option, **dict(reversed(list(values.items())))), Option.model_construct(**values)
        assert list(fast.__dict__.items()) == list(slow.__dict__.items())
        assert fast.model_fields_set == slow.model_fields_set
        assert (fast.__pydantic_extra__, fast.__pydantic_private__) == (slow.__pydantic_extra__, slow.__pydantic_private__)
        assert fast.model_dump_json() == slow.model_dump_json() and fast == slow
    partial = {k: v for k, v in values.items() if k not in ("price_estimate", "price_source")}
    short = assembled(Option, **partial)
    assert short.model_fields_set == set(partial) and short.price_estimate == Option.model_construct(**partial).price_estimate


def test_an_option_given_in_field_order_is_stored_exactly_as_model_construct_stores_it(catalog):
    """`assembled_in_order` (to_option's dict literal, stored as the instance's own) gives what model_construct
    gives; a dict in another order or missing fields goes through `assembled` and still does."""
    from accel.base.model import assembled_in_order
    from accel.policies.plan import Option

    spec = load_workload(ROOT / "examples" / "llama-70b-finetune-aws.yaml")
    for option in choose(spec, catalog, "cost").options[:20]:
        values = dict(option.__dict__)
        for given in (dict(values), dict(reversed(list(values.items())))):
            fast, slow = assembled_in_order(Option, given), Option.model_construct(**values)
            assert list(fast.__dict__.items()) == list(slow.__dict__.items())
            assert fast.model_fields_set == slow.model_fields_set
            assert (fast.__pydantic_extra__, fast.__pydantic_private__) == (slow.__pydantic_extra__,
                                                                            slow.__pydantic_private__)
            assert fast.model_dump_json() == slow.model_dump_json() and fast == slow
    partial = {k: v for k, v in values.items() if k not in ("price_estimate", "price_source")}
    short = assembled_in_order(Option, partial)
    assert short.model_fields_set == set(partial) and short.price_estimate == Option.model_construct(**partial).price_estimate


@pytest.mark.parametrize("example", ["llama-8b-finetune-cuda", "llama-70b-inference"])
def test_options_made_with_one_memo_are_the_options_made_one_by_one(catalog, example):
    """to_options rounds each figure and words each price source once per search (OptionMemo); every option it
    makes is the one to_option makes alone, field by field (repr tells 1 from 1.0)."""
    from accel.policies.selection.candidates import search_context, to_option, to_options
    from accel.policies.selection.choose import search

    spec = load_workload(ROOT / "examples" / f"{example}.yaml")
    found = search(search_context(spec, catalog, "cost", ()), list(catalog.offerings))
    items = [(candidate, region, None if i % 3 else "ranked after: a reason") for i, (_, candidate, region)
             in enumerate(found.ranked)]
    assert len(items) > 50
    together = to_options(items)
    alone = [to_option(candidate, region, why) for candidate, region, why in items]
    assert [repr(o.__dict__) for o in together] == [repr(o.__dict__) for o in alone]


def test_options_assembled_in_order_share_a_fields_set_no_change_reaches(catalog):
    """Assembled options of a frozen model share one set of every field name (an object fewer each for the
    collector): setting a field is refused, and model_copy gives the copy a set of its own, so no change to one
    option reaches another's."""
    from pydantic import ValidationError

    spec = load_workload(ROOT / "examples" / "llama-8b-finetune-cuda.yaml")
    first, second = choose(spec, catalog, "cost").options[:2]
    assert first.model_fields_set is second.model_fields_set == set(type(first).model_fields)
    with pytest.raises(ValidationError, match="frozen"):
        first.mfu = 0.5
    copied = first.model_copy(update={"mfu": 0.5})
    assert copied.model_fields_set is not first.model_fields_set and copied.mfu == 0.5
    assert second.model_fields_set == set(type(first).model_fields) and first.mfu != 0.5
