"""A spot fleet the spot pool stopped early says so: the refusal names the pool's figures, where they live and the
fields that would move it (constraints.spot, constraints.deadline_days, constraints.capacity.obtainability), as the
other refusals name theirs (tests/test_refusal_names_the_field.py). Found by the audit4 sweep: a 70B spot-only run
on AWS in 7 days read "even the fastest fleet (256 chips) takes 158.5 days" with no word of why 256."""

import pytest

from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import NoFeasibleOption, choose
from accel.policies.workload import workload_from_mapping

ESTIMATES = ("estimates in policies/cloud/capacity_modes.yaml; yours go in "
             "constraints.capacity.obtainability.frontier-gpu.spot")


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def spot_run(**constraints):
    """The sweep's workload (/tmp/audit4/repro/f11.yaml), on B200 alone to keep the search short."""
    return workload_from_mapping({
        "name": "spot-only", "kind": "pretrain", "model": {"parameters": "70B", "sequence_length": 8192},
        "training": {"tokens": "2T", "framework": "pytorch"},
        "constraints": {"clouds": ["aws"], "deadline_days": 7, "spot": "required", "accelerators": ["b200"],
                        **constraints}}, "spot-only.yaml")


def refusal(catalog, **constraints) -> NoFeasibleOption:
    with pytest.raises(NoFeasibleOption) as raised:
        choose(spot_run(**constraints), catalog)
    return raised.value


def b200_reasons(error: NoFeasibleOption) -> list[str]:
    return next(r["reasons"] for r in error.rejected if r["offering"] == "aws-p6-b200.48xlarge")


def test_a_spot_fleet_stopped_by_the_pool_names_the_pool_its_source_and_the_fields_that_move_it(catalog):
    error = refusal(catalog)
    [reason] = b200_reasons(error)
    assert reason.startswith("spot: even the fastest fleet (256 chips) takes ")
    assert ("spot stops at 32 hosts: in the 64-host frontier-gpu spot pool one zone is expected to hold, a larger "
            "fleet finishes later (slower to obtain, hit by more reclaim waves, stalled by drains that leave 32; "
            f"{ESTIMATES})") in reason
    assert reason.endswith("; allow on-demand or another capacity mode (constraints.spot: allowed) or set a later "
                           "constraints.deadline_days")
    # The human message (no --json) says it on its closest line: the closest fleet is that capped spot fleet.
    assert error.closest is not None and error.closest.spot and error.closest.hosts == 32
    assert "spot stops at 32 hosts" in error.closest_misses and "spot stops at 32 hosts" in str(error)


def test_what_the_refusal_suggests_moves_it(catalog):
    # A later deadline: the same spot-only run is offered (on at most the 32 hosts the words name).
    later = choose(spot_run(deadline_days=90), catalog).chosen
    assert later.spot and later.hosts <= 32
    # Other figures for the pool: the fleet grows past 32 hosts and the words name the user's figures, not ours.
    deeper = refusal(catalog, capacity={"obtainability": {"frontier-gpu": {"spot": {"pool_hosts": 256}}}})
    [reason] = b200_reasons(deeper)
    assert "spot stops at 128 hosts" in reason and "256-host frontier-gpu spot pool" in reason
    assert "; your constraints.capacity.obtainability.frontier-gpu.spot figures)" in reason
    assert ESTIMATES not in reason


def test_a_fleet_stopped_at_the_pool_itself_says_so_and_names_no_cause_switched_off(catalog):
    # No waves, no drains, instant obtaining: only the pool's size stops the fleet, and the words say only that.
    error = refusal(catalog, capacity={"obtainability": {"frontier-gpu": {"spot": {
        "waves_per_week": 0, "drains_per_week": 0, "obtain_hosts_per_hour": 1e9}}}})
    [reason] = b200_reasons(error)
    assert "(512 chips) takes" in reason
    assert ("spot stops at 64 hosts, the 64-host frontier-gpu spot pool one zone is expected to hold (your "
            "constraints.capacity.obtainability.frontier-gpu.spot figures)") in reason
    assert "finishes later" not in reason and "drains" not in reason


def test_spot_allowed_does_not_send_the_user_to_allow_it_and_a_max_chips_cap_is_not_blamed_on_spot(catalog):
    allowed = refusal(catalog, spot="allowed", deadline_days=2)
    spot_reason = next(r for r in b200_reasons(allowed) if r.startswith("spot:"))
    assert "spot stops at 32 hosts" in spot_reason and "constraints.spot" not in spot_reason
    assert spot_reason.endswith("; set a later constraints.deadline_days for spot")
    capped = refusal(catalog, max_chips=64)
    [reason] = b200_reasons(capped)
    assert "the largest fleet max_chips 64 allows" in reason and "spot stops" not in reason
    assert capped.closest_misses.endswith("max_chips 64 stopped it growing")
