"""Reservations as a capacity type: a stack declares what it holds, the plan takes it, and `accel plan`
refuses pools that do not fit it, saying exactly what does not (policies/cloud/reservations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accel.base.errors import UsageError
from accel.policies.catalog import load_catalog
from accel.policies.cloud.reservations import DeclaredReservation, reservation_problems, use_reservation
from accel.policies.selection.choose import plan_from_pin
from accel.policies.workload import workload_from_mapping

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def h100_plan():
    workload = workload_from_mapping({
        "name": "r", "kind": "pretrain", "model": {"parameters": "70B"},
        "training": {"tokens": "1T", "framework": "pytorch"},
        "constraints": {"clouds": ["gcp"], "spot": "never"},
        "hardware": {"accelerator": "h100-80gb", "chips": 2048, "cloud": "gcp"}}, "r.yaml")
    return plan_from_pin(workload, load_catalog())


def held(plan, **update) -> DeclaredReservation:
    fields = {"name": "a3-block-1", "machineType": plan.gpu.machine_type, "count": plan.gpu.nodes,
              "zone": plan.zones[0], **update}
    return DeclaredReservation.model_validate(fields)


def test_a_plan_takes_the_declared_reservation_of_its_machine_type(h100_plan):
    reservation = held(h100_plan)
    plan = use_reservation(h100_plan, [reservation])
    assert (plan.capacity.provisioning, plan.capacity.reservation) == ("reservation", "a3-block-1")
    assert plan.chosen.provisioning == "reservation" and plan.zones == [reservation.zone]
    assert reservation_problems(plan, [reservation]) == []


def test_a_reservation_in_another_zone_of_the_region_moves_the_pools_there(h100_plan):
    zone = h100_plan.region + "-z"
    plan = use_reservation(h100_plan, [held(h100_plan, zone=zone)])
    assert plan.zones == [zone] and reservation_problems(plan, [held(h100_plan, zone=zone)]) == []


def test_a_reservation_too_small_for_the_pools_is_refused_with_the_shortfall(h100_plan):
    small = held(h100_plan, count=h100_plan.gpu.nodes - 48)
    [problem] = reservation_problems(use_reservation(h100_plan, [small]), [small])
    assert f"holds {small.count} x {small.machineType}" in problem and "(48 more)" in problem


def test_a_reservation_of_another_machine_type_is_refused_naming_both(h100_plan):
    other = held(h100_plan, machineType="a3-megagpu-8g")
    [problem] = reservation_problems(use_reservation(h100_plan, [other]), [other])
    assert "a3-megagpu-8g" in problem and h100_plan.gpu.machine_type in problem


def test_a_pinned_plan_on_a_reservation_in_another_zone_is_refused(h100_plan):
    plan = use_reservation(h100_plan, [held(h100_plan)])
    moved = held(h100_plan, zone=h100_plan.region + "-q")
    [problem] = reservation_problems(plan, [moved])
    assert f"is in {moved.zone} but the pools are in {plan.zones[0]}" in problem


def test_a_plan_naming_an_undeclared_reservation_is_refused(h100_plan):
    plan = use_reservation(h100_plan, [held(h100_plan)])
    [problem] = reservation_problems(plan, [held(h100_plan, name="another")])
    assert "'a3-block-1', which accel:reservations does not declare" in problem


def test_no_declared_reservation_leaves_the_plan_as_it_was(h100_plan):
    assert use_reservation(h100_plan, []) is h100_plan and reservation_problems(h100_plan, []) == []


# ---- accel plan -----------------------------------------------------------------------------------------

def write_stack(tmp_path: Path, count: int, zone: str = "us-central1-a") -> Path:
    text = (ROOT / "stacks" / "Pulumi.llama-405b-h100-gcp.yaml").read_text()
    text += (f"  accel:reservations:\n    - name: a3-reserved\n      machineType: a3-highgpu-8g\n"
             f"      count: {count}\n      zone: {zone}\n")
    path = tmp_path / "Pulumi.reserved.yaml"
    path.write_text(text)
    return path


def test_a_reservation_backed_stack_plans_every_pool_on_the_reservation(tmp_path):
    from accel.offline_plan import plan_stack

    result = plan_stack(None, write_stack(tmp_path, 2048), ROOT)
    assert result.plan["capacity"]["provisioning"] == "reservation"
    pools = [r for r in result.capture.resources if r.type == "gcp:container/nodePool:NodePool" and "-gpu-" in r.name]
    assert pools and all(p.inputs["nodeConfig"]["reservationAffinity"]["values"] == ["a3-reserved"] for p in pools)


def test_a_stack_whose_pools_overflow_its_reservation_is_refused_before_up(tmp_path):
    from accel.offline_plan import plan_stack

    with pytest.raises(UsageError) as error:
        plan_stack(None, write_stack(tmp_path, 2000), ROOT)
    assert error.value.exit_code == 2
    assert "accel:reservations" in str(error.value) and "holds 2000 x a3-highgpu-8g" in str(error.value)
    assert "(48 more)" in str(error.value)


# ---- capacity blocks: the window -------------------------------------------------------------------------

BLOCK = {"name": "cr-02168da1478b509e0", "machineType": "p5.48xlarge", "count": 4, "zone": "us-east-1a",
         "kind": "capacity-block"}


def test_a_capacity_block_declares_its_window_in_utc():
    block = DeclaredReservation.model_validate({**BLOCK, "start": "2030-01-06T13:30:00+02:00",
                                                "end": "2030-01-13T11:30:00Z"})
    assert block.window is not None and block.window.start.isoformat() == "2030-01-06T11:30:00+00:00"


@pytest.mark.parametrize("window,says", [
    ({}, "start and end: missing"),
    ({"start": "2030-01-06T11:30:00Z"}, "end: missing"),
    ({"start": "2030-01-13T11:30:00Z", "end": "2030-01-06T11:30:00Z"}, "must be after start"),
    ({"start": "2030-01-06T11:30:00Z", "end": "2030-01-06T12:00:00Z"}, "too short"),
])
def test_a_capacity_block_without_a_usable_window_is_refused_naming_the_keys(window, says):
    with pytest.raises(ValueError, match=says):
        DeclaredReservation.model_validate({**BLOCK, **window})


def test_a_time_without_a_zone_is_refused():
    with pytest.raises(ValueError, match="timezone"):
        DeclaredReservation.model_validate({**BLOCK, "start": "2030-01-06T11:30:00", "end": "2030-01-13T11:30:00Z"})


def test_a_reservation_takes_no_window():
    with pytest.raises(ValueError, match="only a kind capacity-block has a window"):
        DeclaredReservation.model_validate({**BLOCK, "kind": "reservation", "start": "2030-01-06T11:30:00Z"})


def capacity_block_stack(tmp_path: Path, reservations: str) -> Path:
    from tests.capacity_matrix import write_matrix_project

    project = tmp_path / "project"
    write_matrix_project(project, ROOT)
    path = project / "stacks" / "Pulumi.p5-capacity-block.yaml"
    text = path.read_text()
    path.write_text(text[:text.index("  accel:reservations:")] + reservations)
    return path


def test_a_capacity_block_stack_without_its_block_declared_is_refused_with_the_entry_to_add(tmp_path):
    from accel.offline_plan import plan_stack

    with pytest.raises(UsageError) as error:
        plan_stack(None, capacity_block_stack(tmp_path, ""), tmp_path / "project")
    assert error.value.exit_code == 2
    assert "cr-02168da1478b509e0" in str(error.value) and "kind: capacity-block" in str(error.value)
    assert "start: <block start>, end: <block end>" in str(error.value)


def test_a_stack_whose_block_ends_before_it_starts_is_refused_naming_the_key(tmp_path):
    from accel.offline_plan import plan_stack

    entry = ("  accel:reservations:\n  - {name: cr-02168da1478b509e0, kind: capacity-block, machineType: p5.48xlarge,"
             " count: 4, zone: us-east-1a, start: '2030-01-13T11:30:00Z', end: '2030-01-06T11:30:00Z'}\n")
    with pytest.raises(UsageError) as error:
        plan_stack(None, capacity_block_stack(tmp_path, entry), tmp_path / "project")
    assert error.value.exit_code == 2
    assert "accel:reservations.0" in str(error.value) and "must be after start" in str(error.value)
# ---- reserved prices: committed or zero marginal, preferred, overflow on demand --------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from accel.policies.selection.choose import choose  # noqa: E402
from accel.policies.cloud.reservations import reserved_hourly  # noqa: E402

H100_NODE = "a3-highgpu-8g"
ZONE = "us-central1-a"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def small_run():
    """An 8B run on Google Cloud whose cheapest on-demand option is not an H100 node, by a team with no flex-start
    capacity in reach (an obtainability override: the mode supplies no host), so what a reservation is weighed
    against is on demand (with flex-start, an A100 fleet at the mode's price: tests/test_flex_start_price.py)."""
    no_flex_start = {"max_hosts": 0}
    return workload_from_mapping({
        "name": "small", "kind": "pretrain", "model": {"parameters": "8B"},
        "training": {"tokens": "200B", "framework": "pytorch"},
        "constraints": {"clouds": ["gcp"], "spot": "never", "deadline_days": 30, "capacity": {"obtainability": {
            "frontier-gpu": {"flex-start": no_flex_start}, "prior-gpu": {"flex-start": no_flex_start}}}}},
        "small.yaml")


def on_demand_per_node(catalog, region: str = "us-central1") -> float:
    offering = next(o for o in catalog.offerings if o.cloud == "gcp" and o.machine_type == H100_NODE)
    chip, host = offering.prices(region, False)
    return offering.chips_per_host * chip.usd + (host.usd if host else 0.0)


def reservation(**fields) -> DeclaredReservation:
    return DeclaredReservation.model_validate({"name": "a3-held", "machineType": H100_NODE, "count": 16,
                                               "zone": ZONE, **fields})


def test_a_zero_marginal_reservation_beats_a_cheaper_looking_on_demand_option(catalog, small_run):
    on_demand = choose(small_run, catalog)
    assert on_demand.chosen.machine_type != H100_NODE and on_demand.chosen.total_usd > 0
    choice = choose(small_run, catalog, reservations=[reservation(marginal="zero")])
    assert (choice.chosen.machine_type, choice.chosen.provisioning, choice.chosen.zone) == (H100_NODE, "reservation", ZONE)
    assert choice.chosen.total_usd == 0 and choice.reservation == "a3-held"
    assert any("$0 marginal (already paid)" in line for line in choice.rationale)


def test_a_reservation_billed_at_the_on_demand_rate_is_preferred_over_the_same_option_on_demand(catalog, small_run):
    held = reservation(committedUsdPerMachineHour=on_demand_per_node(catalog))
    options = choose(small_run, catalog, reservations=[held]).options
    same = [o for o in options if o.machine_type == H100_NODE]
    reserved = [o for o in options if o.provisioning == "reservation"]
    tied = [(r, o) for r in reserved for o in options
            if o.provisioning == "on-demand" and (o.machine_type, o.hosts, o.region) == (r.machine_type, r.hosts, r.region)]
    assert same and tied
    for reserved_option, on_demand_option in tied:
        assert reserved_option.total_usd == pytest.approx(on_demand_option.total_usd, abs=0.02)
        assert options.index(reserved_option) < options.index(on_demand_option)


def test_a_committed_price_is_what_each_reserved_machine_costs(catalog, small_run):
    choice = choose(small_run, catalog, reservations=[reservation(committedUsdPerMachineHour=40.0)])
    assert choice.chosen.provisioning == "reservation" and choice.chosen.hosts <= 16
    assert choice.chosen.hourly_usd == pytest.approx(40.0 * choice.chosen.hosts)
    assert any("$40.00/h per machine committed" in line for line in choice.rationale)


def test_machines_beyond_the_reservation_are_priced_on_demand(h100_plan, catalog):
    per_node = h100_plan.chosen.hourly_usd / h100_plan.gpu.nodes
    held = held_for(h100_plan, count=h100_plan.gpu.nodes - 48, committedUsdPerMachineHour=20.0)
    plan = use_reservation(h100_plan, [held])
    assert plan.chosen.hourly_usd == pytest.approx(held.count * 20.0 + 48 * per_node, rel=1e-6)
    assert plan.estimate.total_usd == pytest.approx(plan.chosen.hourly_usd * plan.chosen.hours, abs=0.01)
    assert any("overflow: 48 machines beyond the reservation at on-demand" in line for line in plan.rationale)


def held_for(plan, **update) -> DeclaredReservation:
    return held(plan, **update)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(count=st.integers(1, 4096), machines=st.integers(1, 8192), rate=st.floats(0.5, 200), on_demand=st.floats(0.5, 200))
def test_a_fleet_on_a_reservation_costs_its_held_machines_at_the_rate_and_the_rest_on_demand(count, machines, rate,
                                                                                              on_demand):
    held = DeclaredReservation(name="r", machineType=H100_NODE, count=count, zone=ZONE,
                               committedUsdPerMachineHour=rate)
    inside = min(count, machines)
    assert reserved_hourly(held, machines, on_demand) == pytest.approx(inside * rate + (machines - inside) * on_demand)
    free = held.model_copy(update={"committedUsdPerMachineHour": None, "marginal": "zero"})
    assert reserved_hourly(free, machines, on_demand) == pytest.approx((machines - inside) * on_demand)


@pytest.mark.parametrize("fields, key", [
    ({"committedUsdPerMachineHour": 40, "marginal": "zero"}, "not both"),
    ({"marginal": "free"}, "marginal"),
    ({"committedUsdPerMachineHour": -1}, "committedUsdPerMachineHour"),
])
def test_a_bad_billing_declaration_exits_2_naming_the_key(tmp_path, fields, key):
    from typer.testing import CliRunner
    import typer
    import yaml

    from accel.commands import choose as choose_command

    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    path = tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump([{"name": "a3-held", "machineType": H100_NODE, "count": 16, "zone": ZONE, **fields}]))
    result = CliRunner().invoke(app, ["choose", str(ROOT / "examples" / "llama-8b-finetune-cuda.yaml"),
                                      "--reservations", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(path) in result.output and key in result.output


def test_accel_choose_reads_the_reservations_of_a_stack_file(tmp_path):
    from accel.commands.choose import read_reservations

    path = write_stack(tmp_path, 2048)
    [declared], _ = read_reservations(path)
    assert (declared.name, declared.count, declared.zone) == ("a3-reserved", 2048, "us-central1-a")


def test_accel_plan_prices_the_reserved_pools_at_the_committed_price(tmp_path):
    from accel.offline_plan import plan_stack

    path = write_stack(tmp_path, 2048)
    path.write_text(path.read_text() + "      committedUsdPerMachineHour: 60\n")
    result = plan_stack(None, path, ROOT)
    cost = result.cost_json()
    assert cost["built"]["accelerator_hourly_usd"] == pytest.approx(2048 * 60.0)
    assert cost["pinned"]["hourly_usd"] == pytest.approx(2048 * 60.0, abs=0.01)
    pools = [i for i in cost["built"]["items"] if i["kind"] == "accelerator-pool"]
    assert sum(p["reserved_nodes"] for p in pools) == 2048 and all(p["reservation"] == "a3-reserved" for p in pools)


# ---- a declaration the catalog does not know: a typo, refused with the closest names ---------------------

from hypothesis import assume  # noqa: E402

from accel.policies.cloud.reservations import declaration_problems  # noqa: E402


def catalog_zones(catalog) -> list[tuple[str, str]]:
    return sorted({(o.machine_type, zone) for o in catalog.offerings for info in o.regions.values()
                   for zone in info.zones})


def test_every_machine_type_and_zone_the_catalog_lists_is_a_valid_declaration(catalog):
    # cr-<17 hex> is both an EC2 reservation id and a valid Compute Engine name (policies/cloud/reservation_names.py)
    declared = [DeclaredReservation(name=f"cr-{i:017x}", machineType=machine_type, count=1, zone=zone)
                for i, (machine_type, zone) in enumerate(catalog_zones(catalog))]
    assert declaration_problems(declared, catalog.offerings) == []


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_machine_type_no_offering_sells_is_refused_with_the_closest_ones(catalog, data):
    machine_type, zone = data.draw(st.sampled_from(catalog_zones(catalog)))
    typo = machine_type + data.draw(st.sampled_from(["g", "x", "-1"]))
    [problem] = declaration_problems([DeclaredReservation(name="r", machineType=typo, count=1, zone=zone)],
                                     catalog.offerings)
    assert (problem.index, problem.key) == (0, "machineType")
    assert f"{typo!r} is sold by no catalog offering; did you mean {machine_type!r}" in problem.problem


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_zone_the_catalog_lists_nowhere_for_the_machine_type_is_refused_with_the_closest_ones(catalog, data):
    machine_type, zone = data.draw(st.sampled_from(catalog_zones(catalog)))
    cut = data.draw(st.integers(1, len(zone) - 2))
    typo = zone[:cut] + zone[cut + 1:]  # one letter dropped, as in us-centrl1-a
    listed = {z for o in catalog.offerings if o.machine_type == machine_type for i in o.regions.values() for z in i.zones}
    assume(typo not in listed)
    declared = [DeclaredReservation(name="cr-0123456789abcdef0", machineType=machine_type, count=1, zone=zone),
                DeclaredReservation(name="cr-0123456789abcdef1", machineType=machine_type, count=1, zone=typo)]
    [problem] = declaration_problems(declared, catalog.offerings, catalog_key="accel:catalog")
    assert (problem.index, problem.key) == (1, "zone")
    assert problem.problem.startswith(f"{typo!r} is not a zone the catalog lists for {machine_type}; did you mean ")
    assert repr(zone) in problem.problem and problem.problem.endswith("a catalog overlay, accel:catalog)")


def choose_with_reservations(path: Path, workload: str = "llama-8b-finetune-cuda.yaml"):
    from typer.testing import CliRunner
    import typer

    from accel.commands import choose as choose_command

    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    return CliRunner().invoke(app, ["choose", str(ROOT / "examples" / workload), "--reservations", str(path)])


@pytest.mark.parametrize("field, typo, meant", [
    ("machineType", "a3-highgpu-8gg", "a3-highgpu-8g"),
    ("zone", "us-centrl1-a", "us-central1-a"),
])
def test_accel_choose_refuses_a_reservation_typo_naming_the_file_the_key_and_the_closest_name(tmp_path, field,
                                                                                              typo, meant):
    import yaml

    path = tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump({"reservations": [
        {"name": "a3-held", "machineType": H100_NODE, "count": 16, "zone": ZONE, field: typo}]}))
    result = choose_with_reservations(path)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"--reservations: {path}: reservations.0.{field}: {typo!r}" in result.output
    assert f"did you mean {meant!r}" in result.output


def test_accel_choose_names_the_stack_key_of_a_typo_in_a_stack_file(tmp_path):
    path = write_stack(tmp_path, 2048, zone="us-centrl1-a")
    result = choose_with_reservations(path)
    assert result.exit_code == 2
    assert f"{path}: config.accel:reservations.0.zone: 'us-centrl1-a'" in result.output


def test_an_unknown_key_in_a_reservations_file_is_said_once_with_the_key_meant(tmp_path):
    from accel.commands.choose import read_reservations

    path = tmp_path / "held.yaml"
    path.write_text(f"- {{name: a3-held, machine_type: {H100_NODE}, count: 16, zone: {ZONE}}}\n")
    with pytest.raises(UsageError) as error:
        read_reservations(path)
    assert str(error.value).splitlines() == [
        f"--reservations: {path}: 0.machine_type: unknown key 'machine_type'; did you mean 'machineType'?"]


def test_accel_plan_refuses_a_reservation_zone_typo_naming_the_stack_key(tmp_path):
    from accel.offline_plan import plan_stack

    with pytest.raises(UsageError) as error:
        plan_stack(None, write_stack(tmp_path, 2048, zone="us-centrl1-a"), ROOT)
    assert error.value.exit_code == 2
    assert "Pulumi.reserved.yaml" in str(error.value)
    assert "accel:reservations.0.zone: 'us-centrl1-a' is not a zone the catalog lists for a3-highgpu-8g" \
        in str(error.value)


def test_a_reservation_the_search_cannot_use_is_called_declared_not_the_stacks(catalog, small_run):
    """From --reservations FILE there may be no stack: the rationale says 'declared'."""
    europe = reservation(zone="europe-west4-b")
    run = small_run.model_copy(update={"constraints": small_run.constraints.model_copy(
        update={"regions": ["us-central1"]})})
    choice = choose(run, catalog, "cost", reservations=[europe])
    lines = [line for line in choice.rationale if line.startswith("Capacity:")]
    assert lines == [f"Capacity: the declared reservation 'a3-held' (16 x {H100_NODE} in europe-west4-b) gave no "
                     "feasible option (machine type, region or constraints rule it out)."]


def test_an_unknown_key_in_a_stacks_reservations_is_said_once_with_the_key_meant(tmp_path):
    from accel.offline_plan import plan_stack

    path = write_stack(tmp_path, 2048)
    path.write_text(path.read_text().replace("      machineType:", "      machine_type:"))
    with pytest.raises(UsageError) as error:
        plan_stack(None, path, ROOT)
    assert error.value.exit_code == 2
    assert str(error.value).splitlines()[-1].endswith(
        "accel:reservations.0.machine_type: unknown key 'machine_type'; did you mean 'machineType'?")
    assert "Field required" not in str(error.value)


def test_a_block_with_no_declared_price_is_billed_at_the_blocks_rate_and_never_called_on_demand():
    # A declared Capacity Block with no committed price is billed at the rate EC2 sells the block at
    # (capacity_modes.yaml, aws-cb-price-scrape), never "on-demand": p6e-gb200 is sold only through blocks.
    from tests.conftest import planned_result

    block = DeclaredReservation.model_validate({
        "name": "cb", "kind": "capacity-block", "machineType": "p6e-gb200.36xlarge", "count": 18,
        "zone": "us-east-1-dfw-2a", "start": "2030-01-06T11:30:00Z", "end": "2030-01-13T11:30:00Z"})
    assert block.billing_words() == ("at the Capacity Block rate $42.328/h per instance (aws-cb-price-scrape, as of "
                                     "2026-07-22)")
    assert block.machine_hourly_usd(999.0) == 42.328
    assert block.model_copy(update={"committedUsdPerMachineHour": 40.0}).billing_words() == \
        "$40.00/h per machine committed"
    result = planned_result("llama-405b-p6e")
    [line] = [line for line in result.plan["rationale"] if line.startswith("Capacity: the stack's capacity-block")]
    assert "18 machines at the Capacity Block rate $42.328/h per instance" in line and "on-demand" not in line
    assert result.plan["chosen"]["price_source"].startswith("aws-capacity-blocks-2026")


def test_a_held_reservation_of_a_machine_calendar_mode_also_sells_is_labelled_a_held_reservation(catalog, small_run):
    """Calendar mode provisions a reservation too, on A3 Ultra and A4; a reservation the stack holds was not
    booked through it, so the search labels it the held mode (gcp-reservation), never gcp-calendar."""
    ultra = reservation(name="ultra-held", machineType="a3-ultragpu-8g", marginal="zero")
    choice = choose(small_run, catalog, reservations=[ultra])
    assert (choice.chosen.machine_type, choice.reservation) == ("a3-ultragpu-8g", "ultra-held")
    assert choice.estimate.details["capacity_mode"] == "gcp-reservation"


def test_a_pinned_flex_start_fleet_on_a_declared_reservation_is_timed_and_labelled_as_the_reservation():
    """A pin of 32 x H200 (A3 Ultra, bought through flex-start: five legs, four re-queues) on a reservation the
    stack declares runs on held capacity: no legs, no queue, the held mode, and the hours of one unbroken run."""
    workload = workload_from_mapping({
        "name": "h200", "kind": "pretrain", "model": {"parameters": "70B"},
        "training": {"tokens": "2T", "framework": "pytorch"},
        "constraints": {"clouds": ["gcp"], "spot": "never"},
        "hardware": {"accelerator": "h200-141gb", "chips": 256, "cloud": "gcp"}}, "h200.yaml")
    queued = plan_from_pin(workload, load_catalog())
    assert queued.capacity.mode == "gcp-flex-start" and (queued.capacity.legs or 1) > 1
    held_ultra = held(queued, name="ultra-held")
    plan = use_reservation(plan_from_pin(workload, load_catalog(), reservations=[held_ultra]), [held_ultra])
    assert (plan.capacity.provisioning, plan.capacity.reservation) == ("reservation", "ultra-held")
    assert (plan.capacity.mode, plan.capacity.legs, plan.capacity.risk) == ("gcp-reservation", None, None)
    assert not any(line.startswith("Capacity mode gcp-flex-start") or "re-queue" in line for line in plan.rationale)
    assert plan.chosen.hours < queued.chosen.hours   # no start-up paid again per leg
    assert plan.estimate.total_usd == pytest.approx(plan.chosen.hourly_usd * plan.chosen.hours, abs=0.01)
