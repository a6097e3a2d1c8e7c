"""policies/lifecycle.py: TTLs, expiries, the stack tags that mark a stack ephemeral, reap decisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import pytest

from accel.base.units import MAX_TTL
from hypothesis import given
from hypothesis import strategies as st

from accel.components.tags import ResourceTags
from accel.policies.lifecycle import (
    TAG_EPHEMERAL,
    TAG_EXPIRES_AT,
    TAG_TTL,
    Lifecycle,
    LifecycleError,
    STORAGE_TYPES,
    Reason,
    expiry,
    humanize_duration,
    node_max_run_duration,
    parse_timestamp,
    parse_ttl,
    reap_decision,
    stack_tag_problems,
    stack_tags,
    teardown_blockers,
)

UTC = timezone.utc
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@dataclass
class Summary:
    """The StackSummary fields the decision reads (pulumi.automation.StackSummary has them too)."""

    name: str = "spot-run"
    update_in_progress: bool | None = False
    last_update: datetime | None = T0


# --- parse_ttl ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("90m", timedelta(minutes=90)),
    ("12h", timedelta(hours=12)),
    ("3d", timedelta(days=3)),
    ("1w", timedelta(weeks=1)),
    ("1d12h", timedelta(hours=36)),
    (" 12H ", timedelta(hours=12)),
])
def test_ttl_reads_minutes_hours_days_weeks(text, expected):
    assert parse_ttl(text) == expected


@given(amount=st.integers(min_value=1, max_value=10_000), unit=st.sampled_from(["m", "h", "d", "w"]))
def test_ttl_of_one_unit_is_that_many_units(amount, unit):
    seconds = {"m": 60, "h": 3600, "d": 86400, "w": 604800}[unit]
    if timedelta(seconds=amount * seconds) > MAX_TTL:
        with pytest.raises(LifecycleError, match="longer than 3,660 days"):
            parse_ttl(f"{amount}{unit}")
    else:
        assert parse_ttl(f"{amount}{unit}") == timedelta(seconds=amount * seconds)


@pytest.mark.parametrize("text", ["99999999999w", "9" * 400 + "m", "523w", "3661d", "3660d1m"])
def test_a_ttl_past_ten_years_is_refused_not_an_overflow(text):
    with pytest.raises(LifecycleError, match="longer than 3,660 days"):
        parse_ttl(text)


def test_ttl_without_unit_suggests_one():
    with pytest.raises(LifecycleError, match=r"'12' has no unit; write e.g. '12h'"):
        parse_ttl("12")


def test_ttl_with_unknown_unit_lists_the_allowed_ones():
    with pytest.raises(LifecycleError, match=r"unknown unit 'x'; allowed: m \(minutes\), h \(hours\), d \(days\), w"):
        parse_ttl("12x")


@pytest.mark.parametrize("text", ["", "   ", "h", "12h3", "-1h", "1.5h", "12 h", "PT12H"])
def test_ttl_that_is_not_a_duration_is_rejected(text):
    with pytest.raises(LifecycleError):
        parse_ttl(text)


def test_ttl_of_zero_is_rejected():
    with pytest.raises(LifecycleError, match="longer than zero"):
        parse_ttl("0h")


def test_ttl_repeating_a_unit_is_rejected():
    with pytest.raises(LifecycleError, match="repeats unit 'h'"):
        parse_ttl("1h2h")


def test_ttl_that_is_not_text_is_rejected():
    with pytest.raises(LifecycleError, match="text with a unit"):
        parse_ttl(12)  # type: ignore[arg-type]


# --- parse_timestamp ---------------------------------------------------------------------

def test_timestamp_with_z_is_utc():
    assert parse_timestamp("2026-11-22T18:00:00Z") == datetime(2026, 11, 22, 18, tzinfo=UTC)


def test_timestamp_with_offset_is_converted_to_utc():
    assert parse_timestamp("2026-11-22T20:00:00+02:00") == datetime(2026, 11, 22, 18, tzinfo=UTC)


def test_timestamp_without_zone_is_rejected_with_an_example():
    with pytest.raises(LifecycleError, match="no time zone; write it in UTC with a trailing Z"):
        parse_timestamp("2026-11-22T18:00:00")


def test_date_without_time_is_rejected():
    with pytest.raises(LifecycleError, match="date without a time"):
        parse_timestamp(date(2026, 11, 22))


def test_timestamp_that_is_not_iso_is_rejected():
    with pytest.raises(LifecycleError, match="not an ISO 8601 time"):
        parse_timestamp("next tuesday")


# --- Lifecycle from stack config -----------------------------------------------------------

def test_stack_without_lifecycle_config_is_not_ephemeral():
    lifecycle = Lifecycle.from_config({"accel:owner": "ml-infra"})
    assert (lifecycle.ephemeral, lifecycle.ttl, lifecycle.expires_at) == (False, None, None)


def test_ttl_makes_a_stack_ephemeral():
    lifecycle = Lifecycle.from_config({"accel:ttl": "12h"})
    assert lifecycle.ephemeral and lifecycle.ttl == "12h"


def test_expiry_makes_a_stack_ephemeral():
    lifecycle = Lifecycle.from_config({"accel:expiresAt": "2026-11-22T18:00:00Z"})
    assert lifecycle.ephemeral and lifecycle.expires_at == datetime(2026, 11, 22, 18, tzinfo=UTC)


def test_bare_config_keys_mean_the_accel_namespace():
    assert Lifecycle.from_config({"ttl": "3d", "ephemeral": "true"}).ttl == "3d"


def test_expiry_parsed_by_yaml_as_a_datetime_is_accepted():
    parsed_by_yaml = datetime(2026, 11, 22, 18, tzinfo=UTC)
    assert Lifecycle.from_config({"accel:expiresAt": parsed_by_yaml}).expires_at == parsed_by_yaml


def test_bad_ttl_in_config_names_the_key():
    with pytest.raises(LifecycleError, match=r"^accel:ttl: TTL '12' has no unit"):
        Lifecycle.from_config({"accel:ttl": "12"})


def test_bad_expiry_in_config_names_the_key():
    with pytest.raises(LifecycleError, match=r"^accel:expiresAt: .*no time zone"):
        Lifecycle.from_config({"accel:expiresAt": "2026-11-22T18:00"})


def test_ttl_and_expiry_together_are_rejected():
    with pytest.raises(LifecycleError, match="either accel:ttl .* or accel:expiresAt .*, not both"):
        Lifecycle.from_config({"accel:ttl": "12h", "accel:expiresAt": "2026-11-22T18:00:00Z"})


def test_ephemeral_without_expiry_is_rejected_because_it_would_never_be_reaped():
    with pytest.raises(LifecycleError, match="neither accel:ttl .* nor accel:expiresAt .* never be reaped"):
        Lifecycle.from_config({"accel:ephemeral": "true"})


def test_not_ephemeral_with_a_ttl_is_a_contradiction():
    with pytest.raises(LifecycleError, match="accel:ephemeral is false but an expiry is set"):
        Lifecycle.from_config({"accel:ephemeral": "false", "accel:ttl": "12h"})


def test_ephemeral_must_be_a_boolean():
    with pytest.raises(LifecycleError, match=r"^accel:ephemeral: expected true or false, got 'sometimes'"):
        Lifecycle.from_config({"accel:ephemeral": "sometimes", "accel:ttl": "1h"})


def test_lifecycle_expiry_counts_a_ttl_from_the_last_update():
    assert Lifecycle(ttl="12h").expiry(T0) == T0 + timedelta(hours=12)


def test_lifecycle_exports_its_settings():
    assert Lifecycle(expires_at="2026-11-22T18:00:00Z").outputs() == {
        "ephemeral": True, "ttl": None, "expiresAt": "2026-11-22T18:00:00Z"}


# --- what the program stamps ---------------------------------------------------------------

def test_ttl_stack_is_tagged_ephemeral_with_its_ttl():
    assert stack_tags(Lifecycle(ttl="12h")) == {TAG_EPHEMERAL: "true", TAG_TTL: "12h"}


def test_expiring_stack_is_tagged_with_its_utc_expiry():
    lifecycle = Lifecycle(expires_at="2026-11-22T20:00:00+02:00")
    assert stack_tags(lifecycle) == {TAG_EPHEMERAL: "true", TAG_EXPIRES_AT: "2026-11-22T18:00:00Z"}


def test_long_lived_stack_carries_no_lifecycle_tags():
    assert stack_tags(Lifecycle()) == {}


def test_tag_keys_are_the_documented_ones():
    assert (TAG_EPHEMERAL, TAG_TTL, TAG_EXPIRES_AT) == ("accel:ephemeral", "accel:ttl", "accel:expires-at")


def test_stack_file_tags_matching_the_config_have_no_problems():
    lifecycle = Lifecycle(ttl="12h")
    assert stack_tag_problems(lifecycle, stack_tags(lifecycle)) == []


def test_stack_file_missing_the_ephemeral_tag_is_a_problem():
    assert stack_tag_problems(Lifecycle(ttl="12h"), {TAG_TTL: "12h"}) == [
        "pulumi:tags: missing accel:ephemeral: 'true'"]


def test_stack_file_tag_disagreeing_with_the_config_is_a_problem():
    problems = stack_tag_problems(Lifecycle(ttl="12h"), {TAG_EPHEMERAL: "true", TAG_TTL: "3d"})
    assert problems == ["pulumi:tags: accel:ttl must be '12h' (got '3d')"]


def test_stray_lifecycle_tag_on_a_long_lived_stack_is_a_problem():
    assert stack_tag_problems(Lifecycle(), {TAG_EPHEMERAL: "true"}) == [
        "pulumi:tags: accel:ephemeral is set but the stack config does not make the stack ephemeral this way; "
        "remove it"]


def test_resource_labels_carry_the_ttl_of_a_ttl_stack():
    tags = ResourceTags(workload="llama", stack="spot-run", **Lifecycle(ttl="12h").resource_tag_fields())
    labels = tags.gcp_labels()
    assert (labels["ephemeral"], labels["ttl"], "expires-at" in labels) == ("true", "12h", False)


def test_resource_labels_carry_the_expiry_of_an_expiring_stack():
    lifecycle = Lifecycle(expires_at="2026-11-22T18:00:00Z")
    tags = ResourceTags(workload="llama", stack="spot-run", **lifecycle.resource_tag_fields())
    assert tags.aws_tags()["accel:expires-at"] == "2026-11-22t18-00-00z"
    assert "accel:ttl" not in tags.aws_tags()


def test_resource_tags_without_ttl_render_as_before():
    assert "ttl" not in ResourceTags(workload="llama", stack="prod").gcp_labels()


def test_node_max_run_duration_is_the_ttl_in_seconds():
    assert node_max_run_duration(Lifecycle(ttl="12h")) == "43200s"


def test_fixed_expiry_sets_no_node_max_run_duration():
    assert node_max_run_duration(Lifecycle(expires_at="2026-11-22T18:00:00Z")) is None


# --- expiry from tags ----------------------------------------------------------------------

def test_expiry_from_a_ttl_tag_counts_from_the_last_update():
    assert expiry({TAG_EPHEMERAL: "true", TAG_TTL: "3d"}, T0) == T0 + timedelta(days=3)


def test_expiry_tag_is_used_as_is():
    assert expiry({TAG_EXPIRES_AT: "2026-03-02T00:00:00Z"}, T0) == datetime(2026, 3, 2, tzinfo=UTC)


def test_with_both_tags_the_earlier_expiry_wins():
    tags = {TAG_TTL: "1h", TAG_EXPIRES_AT: "2026-03-02T00:00:00Z"}
    assert expiry(tags, T0) == T0 + timedelta(hours=1)


def test_ttl_without_an_update_has_no_expiry():
    assert expiry({TAG_TTL: "12h"}, None) is None


def test_naive_update_time_from_the_automation_api_is_utc():
    assert expiry({TAG_TTL: "1h"}, T0.replace(tzinfo=None)) == T0 + timedelta(hours=1)


def test_unreadable_expiry_tag_names_the_tag():
    with pytest.raises(LifecycleError, match="^accel:expires-at: 'soon' is not an ISO 8601 time"):
        expiry({TAG_EXPIRES_AT: "soon"}, T0)


# --- reap_decision -------------------------------------------------------------------------

def test_expired_ttl_stack_is_destroyed():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "true", TAG_TTL: "12h"}, T0 + timedelta(hours=13))
    assert (decision.action, decision.reason) == ("destroy", Reason.EXPIRED)
    assert decision.detail == "expired 1h ago (2026-03-02T00:00:00Z)"


def test_stack_is_expired_at_the_exact_expiry():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "true", TAG_TTL: "12h"}, T0 + timedelta(hours=12))
    assert decision.reason is Reason.EXPIRED


def test_fresh_stack_is_skipped_and_says_when_it_expires():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "true", TAG_TTL: "12h"}, T0 + timedelta(hours=2))
    assert (decision.action, decision.reason) == ("skip", Reason.FRESH)
    assert decision.detail == "expires in 10h (2026-03-02T00:00:00Z)"
    assert decision.expires_at == T0 + timedelta(hours=12)


def test_stack_without_marker_is_not_ephemeral_even_with_a_past_expiry():
    decision = reap_decision(Summary(), {TAG_EXPIRES_AT: "2020-01-01T00:00:00Z"}, T0)
    assert (decision.action, decision.reason) == ("skip", Reason.NOT_EPHEMERAL)


def test_stack_marked_not_ephemeral_is_skipped():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "false", TAG_TTL: "1h"}, T0 + timedelta(days=9))
    assert decision.reason is Reason.NOT_EPHEMERAL


def test_unparseable_ttl_tag_is_skipped_with_the_problem():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "true", TAG_TTL: "forever"}, T0)
    assert (decision.action, decision.reason) == ("skip", Reason.UNPARSEABLE_TAG)
    assert decision.detail.startswith("accel:ttl: ")


def test_unparseable_marker_is_skipped():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "yes please", TAG_TTL: "1h"}, T0 + timedelta(days=1))
    assert decision.reason is Reason.UNPARSEABLE_TAG


def test_marker_without_expiry_is_undecided():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "true"}, T0)
    assert (decision.reason, decision.detail) == (
        Reason.NO_EXPIRY, "accel:ephemeral is true but neither accel:expires-at nor accel:ttl is set")
    assert decision.undecided


def test_unreadable_ttl_is_undecided_not_a_quiet_skip():
    decision = reap_decision(Summary(), {TAG_EPHEMERAL: "true", TAG_TTL: "forever"}, T0)
    assert decision.undecided


def test_ttl_stack_never_deployed_is_skipped_as_decided():
    decision = reap_decision(Summary(last_update=None), {TAG_EPHEMERAL: "true", TAG_TTL: "1h"}, T0)
    assert (decision.reason, decision.undecided) == (Reason.NEVER_DEPLOYED, False)


def test_an_update_running_on_a_freshly_expired_stack_is_waited_for():
    summary = Summary(update_in_progress=True, last_update=None)
    decision = reap_decision(summary, {TAG_EPHEMERAL: "true", TAG_EXPIRES_AT: "2026-03-01T11:00:00Z"},
                             datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc), busy_limit=timedelta(hours=6))
    assert (decision.reason, decision.undecided) == (Reason.UPDATE_IN_PROGRESS, False)


def test_a_stack_busy_longer_than_the_limit_past_its_expiry_is_undecided():
    summary = Summary(update_in_progress=True, last_update=None)
    decision = reap_decision(summary, {TAG_EPHEMERAL: "true", TAG_EXPIRES_AT: "2026-03-01T05:00:00Z"},
                             datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc), busy_limit=timedelta(hours=6))
    assert (decision.reason, decision.undecided) == (Reason.BUSY_PAST_LIMIT, True)
    assert "longer than the 6h limit" in decision.detail


def test_last_deployment_time_overrides_the_last_operation_time():
    tags = {TAG_EPHEMERAL: "true", TAG_TTL: "12h"}
    refreshed_later = Summary(last_update=T0 + timedelta(hours=11))
    decision = reap_decision(refreshed_later, tags, T0 + timedelta(hours=13), last_deployed=T0)
    assert decision.reason is Reason.EXPIRED


@given(
    ttl_hours=st.integers(min_value=1, max_value=24 * 30),
    age_minutes=st.integers(min_value=0, max_value=60 * 24 * 60),
)
def test_config_to_tags_to_decision_destroys_exactly_when_the_ttl_has_run_out(ttl_hours, age_minutes):
    tags = stack_tags(Lifecycle.from_config({"accel:ttl": f"{ttl_hours}h"}))
    now = T0 + timedelta(minutes=age_minutes)
    decision = reap_decision(Summary(), tags, now)
    assert (decision.action == "destroy") == (age_minutes >= ttl_hours * 60)


def test_durations_read_like_a_person_would_say_them():
    assert [humanize_duration(timedelta(seconds=s)) for s in (20, 45 * 60, 3 * 3600 + 20 * 60, 2 * 86400 + 3 * 3600 + 5)] \
        == ["under a minute", "45m", "3h 20m", "2d 3h"]


# --- teardown_blockers ---------------------------------------------------------------------

def _resource(type_, name, inputs=None, **flags):
    return {"urn": f"urn:pulumi:s::accel::{type_}::{name}", "type": type_, "inputs": inputs or {}, **flags}


def test_retained_data_and_unretained_compute_can_be_torn_down():
    resources = [
        _resource("gcp:storage/bucket:Bucket", "checkpoints", {"labels": {"data-role": "checkpoint"}},
                  retainOnDelete=True),
        _resource("aws:fsx/lustreFileSystem:LustreFileSystem", "datasets", retainOnDelete=True),
        _resource("gcp:container/nodePool:NodePool", "tpu-pool"),
    ]
    assert teardown_blockers(resources) == []


def test_data_resource_not_retained_blocks_teardown():
    problems = teardown_blockers([_resource("aws:s3/bucket:Bucket", "datasets",
                                            {"tags": {"accel:data-role": "dataset"}})])
    assert problems == ["urn:pulumi:s::accel::aws:s3/bucket:Bucket::datasets: holds dataset data and is not "
                        "retain_on_delete; destroying would delete it"]


def test_unlabelled_storage_counts_as_data():
    problems = teardown_blockers([_resource("gcp:compute/disk:Disk", "cache")])
    assert len(problems) == 1 and "has no data-role label, so it may hold data" in problems[0]


def test_scratch_storage_goes_with_the_compute():
    scratch = _resource("gcp:lustre/instance:Instance", "scratch", {"labels": {"data-role": "scratch"}})
    assert teardown_blockers([scratch]) == []


def test_gcp_abandon_deletion_policy_counts_as_retained():
    bucket = _resource("gcp:storage/bucket:Bucket", "ckpt", {"deletionPolicy": "ABANDON"})
    assert teardown_blockers([bucket]) == []


def test_protected_resource_blocks_teardown():
    problems = teardown_blockers([_resource("gcp:storage/bucket:Bucket", "ckpt", retainOnDelete=True, protect=True)])
    assert len(problems) == 1 and "protected, so destroy would fail" in problems[0]


def test_prevent_deletion_policy_blocks_teardown():
    bucket = _resource("gcp:storage/bucket:Bucket", "ckpt", {"deletionPolicy": "PREVENT"})
    assert any("deletionPolicy PREVENT" in p for p in teardown_blockers([bucket]))


def test_gke_cluster_with_deletion_protection_blocks_teardown():
    cluster = _resource("gcp:container/cluster:Cluster", "gke", {"deletionProtection": True})
    assert any("deletion_protection is on" in p for p in teardown_blockers([cluster]))


def test_deletion_protection_on_a_retained_resource_does_not_block_teardown():
    cluster = _resource("gcp:container/cluster:Cluster", "shared-gke", {"deletionProtection": True},
                        retainOnDelete=True)
    assert teardown_blockers([cluster]) == []


def test_storage_types_cover_the_guardrails_storage_types():
    from accel.policies.guardrails.rules.common import STORAGE_TYPES as GUARDED

    assert GUARDED <= STORAGE_TYPES
