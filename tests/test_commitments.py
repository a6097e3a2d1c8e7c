"""Commitments the user holds (policies/cloud/commitments.py): AWS Savings Plans and GCP committed-use discounts,
declared beside reservations (`accel choose --reservations FILE`, kind savings-plan / committed-use). A commitment
prices matching on-demand usage up to its committed amount at the committed rate and the rest at on-demand; the
search prefers it when that makes an option cheaper and says so; a bad declaration exits 2 naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
import yaml
from hypothesis import given, strategies as st
from pydantic import ValidationError
from typer.testing import CliRunner

from accel.policies.catalog import load_catalog
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.cloud.commitments import DeclaredCommitment
from accel.policies.selection.choose import choose
from accel.policies.workload import workload_from_mapping

ROOT = Path(__file__).resolve().parent.parent
H100_NODE = "a3-highgpu-8g"
SAVINGS_PLAN_ID = "0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f"  # a Savings Plan id is a lowercase UUID (reservation_names)


# The same catalog and 8B Google Cloud run the reservations' tests price (its cheapest on-demand option is not an
# H100 node, and the team has no flex-start capacity in reach), so a commitment and a reservation are weighed on one
# workload, whose choice is between on-demand fleets, which a commitment prices.
from tests.test_reservations import catalog, small_run  # noqa: E402,F401  (pytest fixtures)


def cud(**fields) -> DeclaredCommitment:
    return DeclaredCommitment.model_validate({"name": "cud-a3", "kind": "committed-use", "machineType": H100_NODE,
                                              "count": 16, "region": "us-central1", "discount": 0.55, **fields})


# The AWS fine-tune example as a team with no Capacity Block in reach would run it: a block of A100s is not
# expected within 7 days (an obtainability override), so the week is bought on demand, where a Savings Plan
# applies to the on-demand fleet. With the bundled lead time the
# example books blocks (docs/capacity.md), and a commitment has nothing to price.
NO_BLOCKS = {"obtainability": {"prior-gpu": {"capacity-block": {"lead_days": 7}}}}


def finetune_on_demand():
    data = yaml.safe_load((ROOT / "examples" / "llama-70b-finetune-aws.yaml").read_text())
    data["constraints"]["capacity"] = NO_BLOCKS
    return workload_from_mapping(data, "llama-70b-finetune-aws (no blocks)")


def on_demand_per_node(catalog, machine_type: str, region: str) -> float:
    offering = next(o for o in catalog.offerings if o.machine_type == machine_type and o.provisioning == "on-demand")
    chip, host = offering.prices(region, False)
    return offering.chips_per_host * chip.usd + (host.usd if host else 0.0)


# ------------------------------------------------------------------------------------------- the price
def test_a_committed_use_discount_prices_its_machines_at_the_committed_rate_and_is_used(catalog, small_run):
    plain = choose(small_run, catalog)
    assert plain.chosen.machine_type != H100_NODE
    choice = choose(small_run, catalog, reservations=[cud()])
    chosen = choice.chosen
    assert (chosen.machine_type, chosen.region, chosen.provisioning) == (H100_NODE, "us-central1", "on-demand")
    assert chosen.hosts <= 16 and chosen.total_usd < plain.chosen.total_usd
    per_node = on_demand_per_node(catalog, H100_NODE, "us-central1")
    assert chosen.hourly_usd == pytest.approx(chosen.hosts * per_node * 0.45, rel=1e-6)
    assert choice.reservation is None   # a commitment is a price, not capacity: the plan names no reservation
    line = next(line for line in choice.rationale if line.startswith("Price: the declared commitment was used"))
    assert "'cud-a3'" in line and "55% off on-demand" in line and "reserves no capacity" in line


def test_machines_beyond_the_commitment_are_priced_on_demand(catalog, small_run):
    choice = choose(small_run, catalog, reservations=[cud(count=1)])
    committed = [o for o in choice.options if o.machine_type == H100_NODE and o.region == "us-central1"]
    per_node = on_demand_per_node(catalog, H100_NODE, "us-central1")
    priced = [o for o in committed if o.hourly_usd < o.hosts * per_node - 1e-6]
    assert priced
    for option in priced:
        assert option.hourly_usd == pytest.approx(per_node * 0.45 + (option.hosts - 1) * per_node, rel=1e-6)


@pytest.mark.parametrize("commitment", [
    {"name": "5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f", "kind": "savings-plan", "plan": "ec2-instance", "instanceFamily": "p5", "region": "us-east-1",
     "hourlyCommitmentUsd": 500, "discount": 0.3},   # another cloud
    {"name": "cud-eu", "kind": "committed-use", "machineType": H100_NODE, "count": 16, "region": "us-central1",
     "committedUsdPerMachineHour": 10_000},           # a committed rate above on-demand is never used
])
def test_a_commitment_that_covers_nothing_cheaper_changes_no_price(catalog, small_run, commitment):
    plain = choose(small_run, catalog)
    choice = choose(small_run, catalog, reservations=[DeclaredCommitment.model_validate(commitment)])
    assert choice.chosen == plain.chosen
    priced = {(o.offering, o.region, o.hosts, o.provisioning): o.total_usd for o in plain.options}
    assert all(priced.get((o.offering, o.region, o.hosts, o.provisioning), o.total_usd) == pytest.approx(o.total_usd)
               for o in choice.options)
    assert not any("commitment was used" in line for line in choice.rationale)


def test_an_unmatched_savings_plan_says_it_priced_nothing(catalog, small_run):
    sp = DeclaredCommitment(name="5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f", kind="savings-plan", plan="compute", hourlyCommitmentUsd=100, discount=0.3)
    choice = choose(small_run, catalog, reservations=[sp])
    assert any("Savings Plan '5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f'" in line and "priced no option" in line for line in choice.rationale)


def test_a_compute_savings_plan_covers_its_hourly_commitment_of_the_aws_example(catalog):
    workload = finetune_on_demand()
    plain = choose(workload, catalog)
    assert plain.chosen.provisioning == "on-demand"
    per_node = plain.chosen.hourly_usd / plain.chosen.hosts
    commitment = 10 * per_node * 0.7   # ten machines' worth at 30% off
    sp = DeclaredCommitment(name="5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f", kind="savings-plan", plan="compute", hourlyCommitmentUsd=commitment,
                            discount=0.3)
    choice = choose(workload, catalog, reservations=[sp])
    same = (choice.chosen.offering, choice.chosen.region, choice.chosen.hosts)
    assert same == (plain.chosen.offering, plain.chosen.region, plain.chosen.hosts)
    # ten machines' worth at the plan's rate, the rest of the fleet at on-demand
    assert choice.chosen.hourly_usd == pytest.approx(plain.chosen.hourly_usd - 0.3 * 10 * per_node, rel=1e-6)
    assert any(line.startswith("Price: the declared commitment was used") and "10 machines at" in line
               and "beyond the commitment" in line for line in choice.rationale)


@given(machines=st.integers(1, 4096), on_demand=st.floats(0.5, 200), discount=st.floats(0.01, 0.9),
       commitment=st.floats(0.01, 100_000))
def test_a_savings_plan_bills_its_commitment_at_plan_rates_and_the_rest_on_demand(machines, on_demand, discount,
                                                                                  commitment):
    sp = DeclaredCommitment(name="0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f", kind="savings-plan", plan="compute", hourlyCommitmentUsd=commitment,
                            discount=discount)
    rate = on_demand * (1 - discount)
    covered = min(machines, commitment / rate)
    hourly = sp.hourly(machines, on_demand)
    assert hourly == pytest.approx(covered * rate + (machines - covered) * on_demand)
    assert hourly <= machines * on_demand * (1 + 1e-12)


@given(count=st.integers(1, 512), machines=st.integers(1, 1024), on_demand=st.floats(0.5, 200),
       rate=st.floats(0.1, 400))
def test_a_committed_use_discount_bills_its_count_at_its_rate_and_never_more_than_on_demand(count, machines,
                                                                                            on_demand, rate):
    held = cud(count=count, discount=None, committedUsdPerMachineHour=rate)
    inside = min(count, machines)
    assert held.hourly(machines, on_demand) == pytest.approx(inside * min(rate, on_demand)
                                                             + (machines - inside) * on_demand)


@pytest.mark.parametrize("machine_type, region, provisioning, covered", [
    ("p5.48xlarge", "us-east-1", "on-demand", True),
    ("p5.48xlarge", "us-west-2", "on-demand", False),      # another region
    ("p5en.48xlarge", "us-east-1", "on-demand", False),    # another family
    ("p5.48xlarge", "us-east-1", "capacity-block", False),  # Capacity Blocks have their own price
])
def test_an_ec2_instance_savings_plan_covers_its_family_in_its_region_on_demand(machine_type, region, provisioning,
                                                                                covered):
    sp = DeclaredCommitment(name="0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f", kind="savings-plan", plan="ec2-instance", instanceFamily="p5",
                            region="us-east-1", hourlyCommitmentUsd=100, discount=0.4)
    assert sp.applies_to("aws", machine_type, region, provisioning) is covered
    assert not sp.applies_to("gcp", machine_type, region, provisioning)


def test_the_commitment_modes_cite_their_sources():
    table = load_modes()
    for mode in ("aws-savings-plan", "gcp-cud"):
        assert table.modes[mode].kind == "commitment" and table.modes[mode].limits.source in table.sources


# ------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("fields, says", [
    ({"kind": "savings-plan", "plan": "ec2-instance", "hourlyCommitmentUsd": 100, "discount": 0.3},
     "instanceFamily and region: missing"),
    ({"kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "discount": 0.3, "region": "us-east-1"},
     "region: not used by a compute Savings Plan"),
    ({"kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100}, "discount / committedUsdPerMachineHour"),
    ({"kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "committedUsdPerMachineHour": 20},
     "committedUsdPerMachineHour: a compute Savings Plan's rate differs by instance type"),
    ({"kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "discount": 1.5}, "discount"),
    ({"kind": "savings-plan", "plan": "reserved", "hourlyCommitmentUsd": 100, "discount": 0.3}, "plan"),
    ({"kind": "committed-use", "machineType": H100_NODE, "region": "us-central1", "discount": 0.3}, "count"),
    ({"kind": "committed-use", "machineType": H100_NODE, "count": 4, "region": "us-central1", "discount": 0.3,
      "hourlyCommitmentUsd": 10}, "hourlyCommitmentUsd: not used by committed-use"),
])
def test_a_bad_commitment_is_refused_naming_the_field(fields, says):
    with pytest.raises(ValidationError, match=says.replace("/", ".")):
        DeclaredCommitment.model_validate({"name": "c" if fields["kind"] == "committed-use" else SAVINGS_PLAN_ID, **fields})


def choose_with(tmp_path, entries, workload="llama-8b-finetune-cuda.yaml"):
    from accel.commands import choose as choose_command

    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    path = tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump({"reservations": entries}))
    return path, CliRunner().invoke(app, ["choose", str(ROOT / "examples" / workload), "--reservations", str(path)])


@pytest.mark.parametrize("entry, says", [
    ({"name": "0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f", "kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "discount": 0.3,
      "committedUsdPerMachineHour": 5}, "reservations.0: "),
    ({"name": "0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f", "kind": "savings-plan", "plan": "ec2-instance", "instanceFamily": "p55", "region": "us-east-1",
      "hourlyCommitmentUsd": 100, "discount": 0.3}, "reservations.0.instanceFamily: 'p55' is the family of no catalog"),
    ({"name": "cud", "kind": "committed-use", "machineType": H100_NODE, "count": 4, "region": "us-centrl1",
      "discount": 0.3}, "reservations.0.region: 'us-centrl1' is not a region the catalog lists for it; did you mean "
                        "'us-central1'"),
    ({"name": "cud", "kind": "committed-use", "machineType": H100_NODE, "count": 4, "region": "us-central1",
      "discount": 0.3, "zone": "us-central1-a"}, "reservations.0.zone: unknown key"),
])
def test_accel_choose_refuses_a_bad_commitment_with_exit_2_naming_the_file_and_field(tmp_path, entry, says):
    path, result = choose_with(tmp_path, [entry])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"--reservations: {path}: " in result.output and says in result.output


def test_accel_choose_reads_a_commitment_beside_a_reservation(tmp_path):
    from accel.commands.choose import read_reservations
    from accel.policies.cloud.reservations import DeclaredReservation

    path = tmp_path / "held.yaml"
    path.write_text(yaml.safe_dump([
        {"name": "a3-held", "machineType": H100_NODE, "count": 16, "zone": "us-central1-a"},
        {"name": "5d6e7f80-1a2b-4c3d-8e4f-0a1b2c3d4e5f", "kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 250, "discount": 0.25}]))
    (reservation, commitment), _ = read_reservations(path)
    assert isinstance(reservation, DeclaredReservation) and isinstance(commitment, DeclaredCommitment)
    assert commitment.hourlyCommitmentUsd == 250


def test_the_table_keeps_a_committed_option_apart_from_the_same_fleet_at_list_price(catalog):
    """The table merges options identical but for the region; a commitment's price is not the list price, so its
    option is a row of its own, the list-price one says so, and its price source names the commitment."""
    from accel.policies.selection.tradeoffs import ranked_alternatives

    sp = DeclaredCommitment(name="3f2b1c4d-8e9a-4b7c-9d1e-2a3b4c5d6e7f", kind="savings-plan", plan="ec2-instance", instanceFamily="p4d",
                            region="us-east-1", hourlyCommitmentUsd=400, discount=0.35)
    choice = choose(finetune_on_demand(), catalog, reservations=[sp])
    rows, _ = ranked_alternatives(list(choice.options), False, 12)
    chosen = rows[0]
    assert chosen.regions == ("us-east-1",) and chosen.option.price_source.endswith("; commitment '3f2b1c4d-8e9a-4b7c-9d1e-2a3b4c5d6e7f'")
    at_list = next(row for row in rows if row.option.chips == chosen.option.chips and row is not chosen)
    assert len(at_list.regions) > 1 and "at list price" in at_list.tradeoffs
    assert at_list.option.total_usd > chosen.option.total_usd


def test_pinning_an_option_priced_under_a_commitment_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    """A stack cannot declare a commitment yet, so `accel plan` would price the pinned pools at list and refuse
    the pin's figures: --write-stack says so (exit 2) instead of writing a stack that cannot plan."""
    from accel.commands import choose as choose_command

    monkeypatch.chdir(tmp_path)
    (tmp_path / "stacks").mkdir()
    held = tmp_path / "held.yaml"
    held.write_text(yaml.safe_dump([{"name": "3f2b1c4d-8e9a-4b7c-9d1e-2a3b4c5d6e7f", "kind": "savings-plan", "plan": "ec2-instance",
                                     "instanceFamily": "p4d", "region": "us-east-1", "hourlyCommitmentUsd": 400,
                                     "discount": 0.35}]))
    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    workload = tmp_path / "finetune.yaml"
    workload.write_text(yaml.safe_dump(finetune_on_demand().model_dump(mode="json", exclude_none=True)))
    result = CliRunner().invoke(app, ["choose", str(workload), "--reservations", str(held),
                                      "--write-stack", "committed"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "priced under the declared commitment '3f2b1c4d-8e9a-4b7c-9d1e-2a3b4c5d6e7f'" in " ".join(result.output.split())
    assert not list((tmp_path / "stacks").iterdir())


def test_a_stack_declaring_a_commitment_is_told_where_commitments_go():
    import json

    from accel.base.errors import UsageError
    from accel.stack.settings import settings_from_config

    entry = {"name": "0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f", "kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "discount": 0.3}
    with pytest.raises(UsageError, match=r"accel:reservations: entry 0 \('0c1d2e3f-4a5b-4c6d-9e7f-8a9b0c1d2e3f'\) is a savings-plan commitment"):
        settings_from_config({"accel:reservations": json.dumps([entry])}, "stacks/Pulumi.x.yaml")


# ---------------------------------------------------------------- names the clouds know a commitment by

@pytest.mark.parametrize("kind, good, bad, says", [
    # Compute Engine Commitment.name: [a-z]([-a-z0-9]*[a-z0-9])?, 1-63 (RFC 1035)
    ("committed-use", "cud-a3-2026", "CUD_a3", "not a Google Cloud commitment name"),
    ("committed-use", "c" * 63, "c" * 64, "not a Google Cloud commitment name"),
    ("committed-use", "cud-1", "cud-", "not a Google Cloud commitment name"),
    ("committed-use", "cud-1", "1cud", "not a Google Cloud commitment name"),
    # Savings Plans API: the id in savingsplan/<id> is a lowercase UUID
    ("savings-plan", SAVINGS_PLAN_ID, "sp-1", "not a Savings Plan id"),
    ("savings-plan", SAVINGS_PLAN_ID, SAVINGS_PLAN_ID.upper(), "not a Savings Plan id"),
    ("savings-plan", SAVINGS_PLAN_ID, SAVINGS_PLAN_ID[:-1], "not a Savings Plan id"),
])
def test_a_commitment_is_named_as_its_cloud_names_it(kind, good, bad, says):
    fields = ({"kind": "committed-use", "machineType": H100_NODE, "count": 4, "region": "us-central1", "discount": 0.3}
              if kind == "committed-use" else
              {"kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "discount": 0.3})
    assert DeclaredCommitment.model_validate({"name": good, **fields}).name == good
    with pytest.raises(ValidationError, match=says):
        DeclaredCommitment.model_validate({"name": bad, **fields})


def test_accel_choose_refuses_a_commitment_name_its_cloud_would_not_know(tmp_path):
    entry = {"name": "sp-1", "kind": "savings-plan", "plan": "compute", "hourlyCommitmentUsd": 100, "discount": 0.3}
    path, result = choose_with(tmp_path, [entry])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    words = " ".join(result.output.split())
    assert "reservations.0" in words and "'sp-1' is not a Savings Plan id: a lowercase UUID" in words, words
