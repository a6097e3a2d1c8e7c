"""Booked capacity modes (issue #27): EC2 Capacity Blocks for ML and GCP calendar-mode reservations are modes of
the search, and a stack written from such a choice plans into exactly that mode; the ODCR, flex-start and queued
stacks plan into theirs (docs/capacity.md, "The modes chosen by the search").

The search: a booked fleet is offered only within its mode's limits (one block of 1, 2, 4, ..., 64 instances; at
most 80 VMs or 1,024 TPU chips per calendar request; windows on the mode's grid, at most 182 or 90 days), timed as
lead + run against the deadline, billed for the whole window at the mode's sourced price (calendar: on-demand
list, labelled an upper bound).
The stacks: `accel choose --write-stack` then `accel plan --json` (the offline plan of the stack program).
"""

from __future__ import annotations

import math
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from accel.offline_plan import plan_stack
from accel.policies.catalog import load_catalog
from accel.policies.cloud.booking import block_sizes, supply_problem, window_days
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.selection.capacity import Obtaining, booked_timing, obtaining
from accel.policies.selection.choose import NoFeasibleOption, choose, make_plan
from accel.policies.workload import workload_from_mapping
from accel.stack.bookings import PLACEHOLDER_BLOCK_ID, PLACEHOLDER_CALENDAR_NAME
from tests.conftest import ROOT
from tests.crds import CRDS
from tests.test_real_schemas import crd_validator

CB_GRID = set(range(1, 15)) | set(range(21, 183, 7))


def workload(name: str, *, clouds, accelerators, tokens: str = "100B", deadline: int = 30, capacity=None,
             kind: str = "finetune", framework: str = "pytorch"):
    constraints = {"clouds": clouds, "accelerators": accelerators, "deadline_days": deadline, "spot": "never"}
    if capacity is not None:
        constraints["capacity"] = capacity
    return workload_from_mapping({
        "name": name, "kind": kind, "model": {"parameters": "70B", "sequence_length": 8192},
        "training": {"tokens": tokens, "framework": framework, "precision": "bf16"},
        "constraints": constraints, "owner": "capacity-tests", "cost_center": "cc-1"}, name)


# A 70B fine-tune on P5 with a month: a Capacity Block ($41.528/instance-h in us-east-1) beats on-demand list.
CB_WORKLOAD = dict(name="cb-finetune", clouds=["aws"], accelerators=["h100-80gb"])
# Ten times the tokens in two months: past one block, booked as several (a node group each).
BLOCKS_WORKLOAD = {**CB_WORKLOAD, "name": "cb-blocks", "deadline": 60, "tokens": "1T"}
# H200 on Google Cloud where flex-start is expected to supply at most 8 hosts (an override): calendar mode supplies.
CALENDAR_WORKLOAD = dict(name="calendar-pretrain", clouds=["gcp"], accelerators=["h200-141gb"], tokens="300B",
                         kind="pretrain", framework="jax",
                         capacity={"obtainability": {"frontier-gpu": {"flex-start": {"max_hosts": 8}}}})


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def booked_details(choice):
    return [(option, detail) for option, detail in zip(choice.options, choice.option_details)
            if detail.get("capacity_mode") in ("aws-capacity-block", "gcp-calendar")]


# ----------------------------------------------------------------------------------------------- the search

def test_a_capacity_block_wins_where_it_is_cheaper_than_on_demand(catalog):
    choice = choose(workload(**CB_WORKLOAD), catalog)
    chosen, detail = choice.chosen, choice.option_details[0]
    assert chosen.provisioning == "capacity-block" and detail["capacity_mode"] == "aws-capacity-block"
    rate, _ = load_modes().cb_instance_usd(chosen.machine_type, chosen.region)
    # Billed for the whole window at the block's sourced rate.
    assert chosen.total_usd == pytest.approx(rate * chosen.hosts * chosen.hours, rel=1e-6)
    assert chosen.hours / 24 in CB_GRID
    # Wall-clock is the lead time and the run, within the deadline.
    assert float(detail["capacity_wall_hours"]) <= 30 * 24
    assert float(detail["capacity_wall_hours"]) >= detail["capacity_lead_days"] * 24
    on_demand = [o for o in choice.options if o.provisioning == "on-demand"]
    assert on_demand and min(o.total_usd for o in on_demand) > chosen.total_usd
    words = " ".join(choice.rationale)
    assert "capacity blocks must be booked ~14 days ahead (estimate), not cancellable" in words
    assert "the best fleet of another mode" in words


def test_a_booking_whose_lead_and_run_miss_the_deadline_is_not_offered(catalog):
    # Fourteen days: the 14-day lead alone fills the deadline, so no Capacity Block is offered...
    choice = choose(workload(**{**CB_WORKLOAD, "deadline": 14}), catalog)
    assert not booked_details(choice)
    # ...and with a lead the user knows to be 2 days (an override), blocks are back and still meet the deadline.
    quick = {"obtainability": {"frontier-gpu": {"capacity-block": {"lead_days": 2}}}}
    choice = choose(workload(**{**CB_WORKLOAD, "deadline": 14, "capacity": quick}), catalog)
    booked = booked_details(choice)
    assert booked and all(float(d["capacity_wall_hours"]) <= 14 * 24 for _, d in booked)


@pytest.mark.parametrize("spec", [CB_WORKLOAD, CALENDAR_WORKLOAD, BLOCKS_WORKLOAD],
                         ids=["cb", "calendar", "cb-long"])
def test_no_booked_option_is_past_its_modes_limits_or_off_its_window_grid(catalog, spec):
    choice = choose(workload(**spec), catalog)
    booked = booked_details(choice)
    assert booked
    for option, detail in booked:
        days = option.hours / 24
        assert days == int(days) and detail["capacity_window_days"] == days
        if detail["capacity_mode"] == "aws-capacity-block":
            blocks = block_sizes(load_modes().modes["aws-capacity-block"], option.hosts)
            assert blocks and all(size in (1, 2, 4, 8, 16, 32, 64) for size in blocks) and option.hosts <= 256
            assert days in CB_GRID
        else:
            assert option.hosts <= 80 and 1 <= days <= 90


def test_calendar_mode_supplies_what_flex_start_cannot_and_says_its_price_is_an_upper_bound(catalog):
    spec = workload(**CALENDAR_WORKLOAD)
    choice = choose(spec, catalog)
    chosen, detail = choice.chosen, choice.option_details[0]
    assert (chosen.provisioning, detail["capacity_mode"]) == ("reservation", "gcp-calendar")
    assert 8 < chosen.hosts <= 80
    # No calendar-mode rate was found: on-demand list for the whole window, labelled.
    chip, host = catalog.offering(chosen.offering).prices(chosen.region, False)
    hourly = chosen.chips * chip.usd + chosen.hosts * (host.usd if host else 0)
    assert chosen.total_usd == pytest.approx(hourly * chosen.hours, rel=1e-6)
    assert "UPPER BOUND" in detail["capacity_risk"]
    plan = make_plan(spec, choice, catalog)
    assert (plan.capacity.mode, plan.capacity.price_bound, plan.capacity.reservation) == ("gcp-calendar", "upper", None)


def test_the_405b_fleet_is_still_past_every_self_service_mode(catalog):
    # 2,048 p5.48xlarge: past one Capacity Block (and past 256 across blocks); priced as an upper bound.
    from tests.test_capacity_modes import EXAMPLES
    from accel.policies.workload import load_workload

    spec = load_workload(EXAMPLES / "llama-405b-h100.yaml")
    plan = make_plan(spec, choose(spec, catalog), catalog)
    assert (plan.chosen.provisioning, plan.capacity.price_bound) == ("on-demand", "upper")
    assert any("No self-service capacity mode supplies it" in line for line in plan.rationale)
    # Searched instead of pinned, no option of the search books more than one block.
    unpinned = spec.model_copy(update={"hardware": None})
    try:
        choice = choose(unpinned, catalog)
    except NoFeasibleOption:
        return
    assert all(o.hosts <= 64 for o, _ in booked_details(choice))


def test_a_run_past_the_longest_window_is_not_offered_and_says_why():
    table = load_modes()
    cb, calendar = table.modes["aws-capacity-block"], table.modes["gcp-calendar"]
    assert window_days(cb, 182 * 24) == 182 and window_days(cb, 182 * 24 + 1) is None
    assert window_days(cb, 15 * 24) == 21 and window_days(cb, 14 * 24) == 14
    assert window_days(calendar, 90 * 24) == 90 and window_days(calendar, 90 * 24 + 1) is None
    ob = Obtaining(table, 0.9)
    booking = next(b for b in ob.bookings(load_catalog().offering("aws-p5.48xlarge")) if b.id == "aws-capacity-block")
    late = booked_timing(booking, 64, 512, 183 * 24, tpu=False)
    assert math.isinf(late.wall_hours) and "past the longest window" in late.reason


def test_a_fleet_past_one_request_is_refused_by_the_modes_limits():
    table = load_modes()
    cb, calendar = table.modes["aws-capacity-block"], table.modes["gcp-calendar"]
    assert supply_problem(cb, 64, 512, tpu=False) is None
    assert supply_problem(cb, 96, 768, tpu=False) is None                    # 64 + 32: a node group each
    assert "not full 64-instance blocks" in supply_problem(cb, 48, 384, tpu=False)   # 32 + 16: no such layout
    assert "past the 256" in supply_problem(cb, 2048, 16384, tpu=False)
    assert supply_problem(calendar, 80, 640, tpu=False) is None
    assert "past the 80" in supply_problem(calendar, 81, 648, tpu=False)
    assert supply_problem(calendar, 256, 1024, tpu=True) is None
    assert "past the 1024" in supply_problem(calendar, 257, 1028, tpu=True)


def test_a_booked_mode_reuses_the_on_demand_sizing(catalog):
    """The run on a booked mode is the on-demand run: no model is built or run-time computed for it."""
    from accel.policies.selection.candidates import search_context
    from accel.policies.selection.choose import search
    from accel.policies.selection.ladders import gpu_fleet

    spec = workload(**CB_WORKLOAD)
    ctx = search_context(spec, catalog, "cost")
    search(ctx, [catalog.offering("aws-p5.48xlarge")])
    offering = catalog.offering("aws-p5.48xlarge")
    on_demand = ctx.model_key(offering, False)   # the chip, cloud, no spot, and the machine's NVLink domain
    assert set(ctx.hours_cache) == {on_demand}   # the on-demand run only
    booked = ctx.timing_cache[("aws-p5.48xlarge", "aws-capacity-block")]
    lead = obtaining(spec).figure(offering, "capacity-block", "lead_days")[0] * 24
    run = ctx.hours_cache[on_demand]   # by the fleet each size trains on: its whole replicas (replica_fleet)

    def trained(key):
        size = ctx.trained_size(offering, gpu_fleet(offering, key[1]))
        return size.chips, size.hosts, size.slices

    assert booked and all(t.wall_hours == pytest.approx(lead + run[trained(key)]) for key, t in booked.items()
                          if math.isfinite(t.wall_hours))


# ----------------------------------------------------------------------------------------------- the stacks

def fresh_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, project / name)
    return project


def write_chosen(project: Path, stack: str, spec, reservations=()) -> dict:
    from accel.commands.choose import write_stack_file

    catalog = load_catalog()
    choice = choose(spec, catalog, reservations=list(reservations))
    used = next((r for r in reservations if r.name == choice.reservation), None)
    write_stack_file(stack, spec, make_plan(spec, choice, catalog), root=project,
                     reservation=None if used is None else used.model_dump(mode="json", exclude_none=True))
    return yaml.safe_load((project / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]


def of_type(document: dict, rtype: str) -> list[dict]:
    return [r for r in document["resources"] if r["type"] == rtype]


@pytest.fixture(scope="module")
def cb_stack(tmp_path_factory):
    project = fresh_project(tmp_path_factory.mktemp("cb"))
    config = write_chosen(project, "cb", workload(**CB_WORKLOAD))
    return project, config, plan_stack("cb", None, project).to_json()


def test_a_capacity_block_choice_plans_node_groups_at_zero_on_the_blocks_launch_templates(cb_stack):
    _, config, document = cb_stack
    hosts = config["accel:plan"]["chosen"]["hosts"]
    sizes = block_sizes(load_modes().modes["aws-capacity-block"], hosts)
    assert document["plan"]["capacity"]["provisioning"] == "capacity-block"
    groups = [g for g in of_type(document, "aws:eks/nodeGroup:NodeGroup") if g["inputs"]["capacityType"] == "CAPACITY_BLOCK"]
    assert sorted((g["inputs"]["scalingConfig"]["maxSize"] for g in groups), reverse=True) == sizes
    assert all(g["inputs"]["scalingConfig"]["minSize"] == g["inputs"]["scalingConfig"]["desiredSize"] == 0
               for g in groups)
    templates = [t["inputs"] for t in of_type(document, "aws:ec2/launchTemplate:LaunchTemplate") if "-gpu" in t["name"]]
    assert len(templates) == len(groups)
    assert all(t["instanceMarketOptions"] == {"marketType": "capacity-block"} for t in templates)
    targets = {t["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"]
               for t in templates}
    assert PLACEHOLDER_BLOCK_ID in targets and len(targets) == len(groups)
    schedules = of_type(document, "aws:autoscaling/schedule:Schedule")
    assert sorted(s["inputs"]["desiredCapacity"] for s in schedules if s["inputs"]["desiredCapacity"]) == sorted(sizes)
    starts = {s["inputs"]["startTime"] for s in schedules if s["inputs"]["desiredCapacity"]}
    (first,) = starts   # every block in one window
    start = datetime.fromisoformat(first.replace("Z", "+00:00"))
    # The placeholder blocks start at 11:30 UTC no sooner than the lead time the search counted after the plan's
    # catalog date (not the clock: the same stack plans the same schedule every day).
    lead = config["accel:plan"]["estimate"]["details"]["capacity_lead_days"]
    catalog_day = datetime.fromisoformat(config["accel:plan"]["catalog"]["as_of"]).replace(tzinfo=timezone.utc)
    assert (start.hour, start.minute) == (11, 30)
    assert timedelta(days=lead) <= start - catalog_day < timedelta(days=lead + 1)
    assert not [v for v in document["policy"]["violations"] if v["level"] == "mandatory"]


def test_the_placeholder_window_does_not_move_with_the_clock(cb_stack, monkeypatch):
    """Planned on another day, the same stack file plans the same placeholder window (so a pull request's review
    shows no schedule change nobody made)."""
    import accel.stack.bookings as bookings
    from accel.policies.plan import Plan

    _, config, _ = cb_stack
    plan = Plan.model_validate(config["accel:plan"])
    today = bookings.booking_placeholder(plan, "cb")[0]

    class Later(datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime(2027, 6, 1, tzinfo=timezone.utc)

    monkeypatch.setattr(bookings, "datetime", Later)
    assert [(r.start, r.end) for r in bookings.booking_placeholder(plan, "cb")[0]] == [(r.start, r.end) for r in today]


def test_what_to_buy_first_is_in_needed_before_up_with_how_to_get_it(cb_stack):
    _, config, document = cb_stack
    (entry,) = [n for n in document["needed_before_up"] if n["key"] == "accel:reservations"]
    machine = config["accel:plan"]["chosen"]["machine_type"]
    assert "aws ec2 describe-capacity-block-offerings" in entry["why"] and machine in entry["why"]
    assert "aws ec2 purchase-capacity-block" in entry["why"] and "not cancellable" in entry["why"]
    for command in entry["command"].split(" && "):
        assert command.startswith("pulumi config set --path 'accel:reservations[") and command.endswith("-s cb")
    assert "accel:reservations[0].name'" in entry["command"]
    assert "kind' capacity-block" in entry["command"] and "start'" in entry["command"]


def test_pulumi_up_stops_until_the_block_is_declared_and_then_plans_on_it(cb_stack, tmp_path):
    from accel.base.errors import UsageError
    from accel.stack.config import load_stack_config
    from accel.stack.program import read_stack

    shared, config, _ = cb_stack
    project = tmp_path / "project"
    shutil.copytree(shared, project)
    values = {**load_stack_config(project, "cb", None).values, "accel:apiAccessCidrs": '["10.20.30.40/32"]'}
    # Outside offline planning the placeholder is never used: the program stops naming the commands.
    with pytest.raises(UsageError, match=r"accel:reservations\[0\]\.name"):
        read_stack(values, "cb")
    # Declared (the blocks the user bought), the plan binds their ids, zone and window; nothing more is needed.
    plan = config["accel:plan"]
    sizes = block_sizes(load_modes().modes["aws-capacity-block"], plan["chosen"]["hosts"])
    blocks = [{"name": f"cr-0123456789abcde{i:02x}", "kind": "capacity-block",
               "machineType": plan["chosen"]["machine_type"], "count": size, "zone": f"{plan['chosen']['region']}b",
               "start": "2030-01-06T11:30:00Z", "end": "2030-01-10T11:30:00Z"} for i, size in enumerate(sizes)]
    path = project / "stacks" / "Pulumi.cb.yaml"
    data = yaml.safe_load(path.read_text())
    data["config"]["accel:reservations"] = blocks
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    document = plan_stack("cb", None, project).to_json()
    assert not [n for n in document["needed_before_up"] if n["key"] == "accel:reservations"]
    assert document["plan"]["capacity"]["reservation"] == blocks[0]["name"]
    assert document["plan"]["zones"] == [blocks[0]["zone"]]
    starts = sorted({s["inputs"]["startTime"] for s in of_type(document, "aws:autoscaling/schedule:Schedule")})
    # Scaled out at the blocks' start, in an hour before their end (policies/cloud/capacity_blocks.yaml).
    assert starts == ["2030-01-06T11:30:00Z", "2030-01-10T10:30:00Z"]


def test_a_fleet_of_several_blocks_plans_a_node_group_per_block_and_binds_each_declared_block(tmp_path):
    project = fresh_project(tmp_path)
    config = write_chosen(project, "blocks", workload(**BLOCKS_WORKLOAD))
    plan = config["accel:plan"]
    sizes = block_sizes(load_modes().modes["aws-capacity-block"], plan["chosen"]["hosts"])
    assert plan["capacity"]["mode"] == "aws-capacity-block" and len(sizes) > 1
    document = plan_stack("blocks", None, project).to_json()

    def groups(document):
        found = {}
        templates = {t["name"].removesuffix("-template"): t["inputs"] for t in
                     of_type(document, "aws:ec2/launchTemplate:LaunchTemplate")}
        for group in of_type(document, "aws:eks/nodeGroup:NodeGroup"):
            if group["inputs"]["capacityType"] == "CAPACITY_BLOCK":
                template = templates[group["name"].removesuffix("-nodes")]
                target = template["capacityReservationSpecification"]["capacityReservationTarget"]
                found[target["capacityReservationId"]] = group["inputs"]["scalingConfig"]["maxSize"]
        return found

    # One node group per block, each at most one block's size, each on its own (placeholder) block.
    assert sorted(groups(document).values(), reverse=True) == sizes
    assert set(groups(document)) == {f"cr-{i:017x}" for i in range(len(sizes))}
    (entry,) = [n for n in document["needed_before_up"] if n["key"] == "accel:reservations"]
    assert f"{len(sizes)} blocks of" in entry["why"] and "same window" in entry["why"]
    assert all(f"accel:reservations[{i}].name" in entry["command"] for i in range(len(sizes)))
    assert not [v for v in document["policy"]["violations"] if v["level"] == "mandatory"]
    # Declared, each group targets its block; a block in another zone than the rest does not count.
    blocks = [{"name": f"cr-0123456789abcde{i:02x}", "kind": "capacity-block", "machineType": plan["chosen"]["machine_type"],
               "count": size, "zone": f"{plan['chosen']['region']}a", "start": "2030-01-06T11:30:00Z",
               "end": (datetime(2030, 1, 6, 11, 30, tzinfo=timezone.utc)
                       + timedelta(hours=plan["chosen"]["hours"])).strftime("%Y-%m-%dT%H:%M:%SZ")}
              for i, size in enumerate(sizes)]
    path = project / "stacks" / "Pulumi.blocks.yaml"
    data = yaml.safe_load(path.read_text())
    data["config"]["accel:reservations"] = blocks
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    document = plan_stack("blocks", None, project).to_json()
    assert groups(document) == {b["name"]: b["count"] for b in blocks}
    assert not [n for n in document["needed_before_up"] if n["key"] == "accel:reservations"]
    data["config"]["accel:reservations"] = [*blocks[:-1], {**blocks[-1], "zone": f"{plan['chosen']['region']}b"}]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    document = plan_stack("blocks", None, project).to_json()
    assert [n for n in document["needed_before_up"] if n["key"] == "accel:reservations"]


def test_a_calendar_mode_choice_plans_a_gke_pool_on_its_specific_reservation(tmp_path):
    project = fresh_project(tmp_path)
    config = write_chosen(project, "calendar", workload(**CALENDAR_WORKLOAD))
    document = plan_stack("calendar", None, project).to_json()
    (pool,) = [p for p in of_type(document, "gcp:container/nodePool:NodePool") if "gpu" in p["name"]]
    assert pool["inputs"]["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
        "values": [PLACEHOLDER_CALENDAR_NAME]}
    assert not pool["inputs"]["nodeConfig"].get("flexStart")
    capacity = document["plan"]["capacity"]
    assert (capacity["mode"], capacity["provisioning"], capacity["price_bound"]) == ("gcp-calendar", "reservation",
                                                                                   "upper")
    (entry,) = [n for n in document["needed_before_up"] if n["key"] == "accel:reservations"]
    assert "gcloud compute future-reservations create" in entry["why"] and "--reservation-mode=CALENDAR" in entry["why"]
    assert f"machineType' {config['accel:plan']['chosen']['machine_type']}" in entry["command"]
    assert not [v for v in document["policy"]["violations"] if v["level"] == "mandatory"]


def test_a_tpu_multislice_booked_in_calendar_mode_plans_every_slice_on_the_reservation(tmp_path):
    # 70B x 1T tokens on TPU v6e in 30 days: on demand it takes more hosts than a zone is expected to supply, so
    # one calendar-mode request of 1,024 chips (its per-request limit: gcp-calendar-create) is booked instead.
    spec = workload("tpu-calendar", clouds=["gcp"], accelerators=["tpu-v6e"], tokens="1T", kind="pretrain",
                    framework="jax")
    project = fresh_project(tmp_path)
    config = write_chosen(project, "tpu-calendar", spec)
    plan = config["accel:plan"]
    assert (plan["capacity"]["mode"], plan["chosen"]["family"]) == ("gcp-calendar", "tpu")
    assert plan["chosen"]["chips"] <= 1024 and "TPU chips" in plan["capacity"]["risk"]
    document = plan_stack("tpu-calendar", None, project).to_json()
    slices = [p["inputs"] for p in of_type(document, "gcp:container/nodePool:NodePool") if "-tpu-" in p["name"]]
    assert len(slices) == plan["tpu"]["slices"] > 1
    assert all(s["nodeConfig"]["reservationAffinity"]["values"] == [PLACEHOLDER_CALENDAR_NAME] for s in slices)
    assert not [v for v in document["policy"]["violations"] if v["level"] == "mandatory"]


def test_an_odcr_the_user_declares_is_chosen_written_into_the_stack_and_targeted(tmp_path):
    from accel.policies.cloud.reservations import DeclaredReservation

    odcr = DeclaredReservation(name="cr-0a1b2c3d4e5f67890", machineType="p5.48xlarge", count=32, zone="us-east-1a",
                               marginal="zero")
    project = fresh_project(tmp_path)
    config = write_chosen(project, "odcr", workload(**CB_WORKLOAD), reservations=[odcr])
    assert config["accel:plan"]["capacity"]["reservation"] == odcr.name
    assert config["accel:reservations"][0]["name"] == odcr.name
    document = plan_stack("odcr", None, project).to_json()
    (template,) = [t for t in of_type(document, "aws:ec2/launchTemplate:LaunchTemplate") if "-gpu" in t["name"]]
    assert template["inputs"]["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": odcr.name}}
    assert "instanceMarketOptions" not in template["inputs"] or not template["inputs"]["instanceMarketOptions"]
    assert [n["key"] for n in document["needed_before_up"]] == ["accel:apiAccessCidrs"]
    assert document["cost"]["built"] is not None


# ------------------------------------------------------------------------ flex-start and queued (Kueue admission)

@pytest.fixture(scope="module")
def queue_stacks(tmp_path_factory):
    from tests.capacity_matrix import write_matrix_project

    project = tmp_path_factory.mktemp("queues") / "project"
    write_matrix_project(project, ROOT)
    return {name: plan_stack(name, None, project).to_json() for name in ("a3-high-flex", "a3-mega-queued")}


def kueue(document: dict, kind: str) -> list[dict]:
    return [r["inputs"] for r in document["resources"]
            if str(r["inputs"].get("apiVersion", "")).startswith("kueue.x-k8s.io/") and r["inputs"].get("kind") == kind]


def validate(document: dict) -> None:
    """The object against the upstream Kueue CRD that serves its version (../shared/crds)."""
    if not CRDS.is_dir():
        pytest.skip(f"{CRDS} is absent: the upstream CRDs live in ../shared/crds beside the checkout")
    group, version = document["apiVersion"].split("/")
    validator = crd_validator(group, version, document["kind"])
    assert validator is not None, f"{document['apiVersion']} {document['kind']} is not served by the pinned CRDs"
    validator.validate({k: document[k] for k in ("apiVersion", "kind", "metadata", "spec")})


def test_a_flex_start_choice_plans_a_flex_start_pool_that_takes_no_reservation(queue_stacks):
    (pool,) = [p for p in of_type(queue_stacks["a3-high-flex"], "gcp:container/nodePool:NodePool") if "gpu" in p["name"]]
    config = pool["inputs"]["nodeConfig"]
    assert config["flexStart"] is True and config["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    # DWS capacity comes from 0 nodes through the autoscaler, and GKE wants auto-repair off on it.
    assert pool["inputs"]["autoscaling"]["totalMinNodeCount"] == 0 and pool["inputs"]["initialNodeCount"] == 0
    assert pool["inputs"]["management"]["autoRepair"] is False
    # Four nodes on GPUDirect-TCPX, placed by a Kueue Topology: built with queued provisioning and gated by the
    # ProvisioningRequest check, so Kueue can admit the job onto nodes to come (policies/cloud/flex_start.py).
    assert pool["inputs"]["queuedProvisioning"] == {"enabled": True}
    assert [c["spec"]["controllerName"] for c in kueue(queue_stacks["a3-high-flex"], "AdmissionCheck")] == [
        "kueue.x-k8s.io/provisioning-request"]


def test_a_queued_pool_is_admitted_through_a_valid_provisioning_request_check(queue_stacks):
    document = queue_stacks["a3-mega-queued"]
    (pool,) = [p for p in of_type(document, "gcp:container/nodePool:NodePool") if "gpu" in p["name"]]
    assert pool["inputs"]["queuedProvisioning"] == {"enabled": True}
    (config,) = kueue(document, "ProvisioningRequestConfig")
    (check,) = kueue(document, "AdmissionCheck")
    assert config["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["spec"]["parameters"]["name"] == config["metadata"]["name"]
    queues = kueue(document, "ClusterQueue")
    strategy = [rule for q in queues for rule in (q["spec"].get("admissionChecksStrategy") or {}).get("admissionChecks", [])]
    assert [rule["name"] for rule in strategy] == [check["metadata"]["name"]]
    validate(config)
    validate(check)


def test_the_crd_refuses_a_provisioning_request_check_with_a_mutated_field(queue_stacks):
    import jsonschema

    (config,) = kueue(queue_stacks["a3-mega-queued"], "ProvisioningRequestConfig")
    with pytest.raises(jsonschema.ValidationError):
        validate({**config, "spec": {**config["spec"], "provisioningClassName": 7}})
    (check,) = kueue(queue_stacks["a3-mega-queued"], "AdmissionCheck")
    with pytest.raises(jsonschema.ValidationError):   # controllerName is required
        validate({**check, "spec": {k: v for k, v in check["spec"].items() if k != "controllerName"}})
