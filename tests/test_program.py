"""The stack program's one step: stack config -> validated settings -> Plan -> cluster arguments."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from accel.base.errors import UsageError
from accel.stack.program import MAX_RESOURCE_NAME, read_stack, resource_name, stack_error_message
from accel.base.errors import ComponentArgsError
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping

WORKLOAD = {
    "name": "tiny-pretrain",
    "kind": "pretrain",
    "model": {"parameters": "1B"},
    "training": {"tokens": "20B", "framework": "jax"},
    "constraints": {"clouds": ["gcp"], "deadline_days": 10},
}


def config(**values) -> dict[str, str]:
    """Fully qualified Pulumi config as the CLI hands it to a program (objects JSON-encoded)."""
    result = {"gcp:project": "acme-proj"}
    for key, value in values.items():
        full = key if ":" in key else f"accel:{key}"
        result[full] = value if isinstance(value, str) else json.dumps(value)
    return result


def test_unpinned_stack_decides_at_run_time_and_says_so():
    program = read_stack(config(workload=WORKLOAD), "dev")
    assert not program.pinned
    assert program.plan.family == "tpu"
    assert any("decided" in note or "chose" in note for note in program.notes)


def test_pinned_plan_is_used_as_written_without_a_search():
    spec = workload_from_mapping(WORKLOAD, "test")
    pinned = choose_plan(spec, load_catalog(), "time")  # differs from what a cost search would pick
    program = read_stack(config(workload=WORKLOAD, plan=pinned.model_dump(mode="json")), "dev")
    assert program.pinned
    assert program.plan == pinned


def test_pinned_plan_for_another_workload_is_refused_with_the_changed_fields():
    spec = workload_from_mapping(WORKLOAD, "test")
    pinned = choose_plan(spec, load_catalog())
    changed = {**WORKLOAD, "training": {"tokens": "40B", "framework": "jax"}}
    with pytest.raises(UsageError, match=r"different workload \(changed: training\)"):
        read_stack(config(workload=changed, plan=pinned.model_dump(mode="json")), "dev")


def test_unknown_accel_key_suggests_the_nearest_one():
    with pytest.raises(UsageError, match=r"stacks/Pulumi.dev.yaml: accel:workloads: unknown key; did you mean 'accel:workload'"):
        read_stack(config(workloads=WORKLOAD), "dev")


def test_bad_workload_field_names_the_stack_file_and_the_key_path():
    bad = {**WORKLOAD, "model": {"parameters": "-1B"}}
    with pytest.raises(UsageError, match=r"stacks/Pulumi.dev.yaml: accel:workload.model.parameters"):
        read_stack(config(workload=bad), "dev")


def test_a_region_no_offering_has_names_the_stack_file_and_the_workload_key():
    typo = {**WORKLOAD, "constraints": {**WORKLOAD["constraints"], "regions": ["us-east99"]}}
    with pytest.raises(UsageError, match=r"stacks/Pulumi.dev.yaml: accel:workload.constraints.regions: 'us-east99'"):
        read_stack(config(workload=typo), "dev")


def test_missing_workload_says_how_to_add_one():
    with pytest.raises(UsageError, match="accel:workload: missing"):
        read_stack(config(owner="me"), "dev")


def test_a_gcp_plan_without_a_project_is_refused_with_the_command_that_sets_it():
    values = config(workload=WORKLOAD)
    del values["gcp:project"]
    with pytest.raises(UsageError, match="pulumi config set gcp:project <your-project-id> -s dev"):
        read_stack(values, "dev")


TTL_TAGS = {"pulumi:tags": {"accel:ephemeral": "true", "accel:ttl": "12h"}}


def test_offline_planning_uses_a_placeholder_project_and_reports_it():
    from accel.stack.deploy_keys import PLACEHOLDER_PROJECT, offline_placeholders

    values = config(workload=WORKLOAD)
    del values["gcp:project"]
    with offline_placeholders():
        program = read_stack(values, "dev")
    assert program.cluster_args.gcp_project == PLACEHOLDER_PROJECT
    assert [key.key for key in program.missing_for_up] == ["gcp:project"]


def test_api_access_cidrs_refuse_documentation_ranges():
    with pytest.raises(UsageError, match=r"accel:apiAccessCidrs.*RFC 5737"):
        read_stack(config(workload=WORKLOAD, apiAccessCidrs=["203.0.113.0/24"]), "dev")


def test_ttl_is_stamped_on_tags_and_must_match_declared_stack_tags():
    program = read_stack(config(workload=WORKLOAD, ttl="12h", **TTL_TAGS), "dev")
    assert program.cluster_args.tags.ttl == "12h" and program.cluster_args.tags.ephemeral
    with pytest.raises(UsageError, match="pulumi:tags"):
        read_stack(config(workload=WORKLOAD, ttl="12h", **{"pulumi:tags": {"accel:ephemeral": "true"}}), "dev")


def test_an_ephemeral_stack_without_stack_tags_is_refused_because_the_reaper_could_not_find_it():
    with pytest.raises(UsageError) as raised:
        read_stack(config(workload=WORKLOAD, ttl="12h"), "dev")
    message = str(raised.value)
    assert message.startswith("stacks/Pulumi.dev.yaml: pulumi:tags: missing accel:ephemeral: 'true'")
    assert "missing accel:ttl: '12h'" in message and "`accel reap` reads only the stack's tags" in message


def test_reaper_tags_on_a_stack_that_is_not_ephemeral_by_config_are_refused():
    with pytest.raises(UsageError, match="accel:ephemeral is set but the stack config does not make"):
        read_stack(config(workload=WORKLOAD, **TTL_TAGS), "dev")


def test_hardware_pin_and_pinned_plan_together_are_ambiguous():
    spec = workload_from_mapping(WORKLOAD, "test")
    pinned = choose_plan(spec, load_catalog())
    with pytest.raises(UsageError, match="accel:hardware and accel:plan are both set"):
        read_stack(config(workload=WORKLOAD, plan=pinned.model_dump(mode="json"),
                          hardware={"accelerator": "tpu-v5e", "chips": 8}), "dev")


def test_error_messages_are_prefixed_with_the_stack_file_once():
    assert stack_error_message(ValueError("x"), "dev") == "stacks/Pulumi.dev.yaml: x"
    assert stack_error_message(ValueError("stacks/Pulumi.dev.yaml: x"), "dev") == "stacks/Pulumi.dev.yaml: x"


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=60))
def test_resource_names_are_short_dns_labels_and_stable(stack):
    name = resource_name(stack)
    assert len(name) <= MAX_RESOURCE_NAME
    assert name[0].isalpha() and name[-1].isalnum()
    assert all(c.isalnum() or c == "-" for c in name)
    assert resource_name(stack) == name
