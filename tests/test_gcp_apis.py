"""Google APIs: every GKE stack enables what it calls, with gcp.projects.Service, before calling it."""

from __future__ import annotations

import copy
import inspect

import pytest

from accel.components.gcp.apis import API_OF_MODULE, GoogleApisArgs, api_order_problems, plan_apis

GCP_STACKS = ["llama-405b-h100-gcp", "llama-70b-tpu", "llama-70b-v5p"]


def gcp_resources(planned_stacks, stack):
    return planned_stacks[stack]["resources"]


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_every_google_resource_of_a_stack_waits_for_its_api(planned_stacks, stack):
    assert api_order_problems(gcp_resources(planned_stacks, stack)) == []


@pytest.mark.parametrize("stack", GCP_STACKS)
def test_the_apis_stay_on_when_the_stack_is_destroyed(planned_stacks, stack):
    services = [r for r in gcp_resources(planned_stacks, stack) if r["type"] == "gcp:projects/service:Service"]
    assert {"container.googleapis.com", "compute.googleapis.com"} <= {s["inputs"]["service"] for s in services}
    for service in services:
        assert service["inputs"]["disableOnDestroy"] is False
        assert service["inputs"]["project"] == "acme-ml-training"


def test_a_resource_that_does_not_wait_for_its_api_is_caught(planned_stacks):
    resources = copy.deepcopy(gcp_resources(planned_stacks, "llama-405b-h100-gcp"))
    pool = next(r for r in resources if r["type"] == "gcp:container/nodePool:NodePool")
    pool["dependencies"] = [d for d in pool["dependencies"] if "apis-container" not in d]
    [problem] = api_order_problems(resources)
    assert pool["name"] in problem and "container.googleapis.com" in problem and "depends_on" in problem


def test_a_stack_that_does_not_enable_an_api_it_calls_is_caught(planned_stacks):
    resources = [r for r in gcp_resources(planned_stacks, "llama-70b-tpu")
                 if r["inputs"].get("service") != "lustre.googleapis.com"]
    problems = api_order_problems(resources)
    assert problems and all("lustre.googleapis.com" in p and "does not enable" in p for p in problems)


def test_an_unknown_google_module_is_caught():
    resource = {"type": "gcp:bigquery/dataset:Dataset", "name": "d", "urn": "u", "inputs": {}, "dependencies": []}
    [problem] = api_order_problems([resource])
    assert "bigquery" in problem and "API_OF_MODULE" in problem


def test_every_api_module_names_a_real_pulumi_gcp_module_and_the_service_takes_the_arguments_used():
    import importlib

    import pulumi_gcp

    for module in API_OF_MODULE:
        importlib.import_module(f"pulumi_gcp.{module}")
    parameters = inspect.signature(pulumi_gcp.projects.Service._internal_init).parameters
    for argument in ("service", "project", "disable_on_destroy", "disable_dependent_services"):
        assert argument in parameters


def test_the_apis_follow_the_plans_storage(planned_results):
    from accel.policies.plan import Plan

    plan = Plan.model_validate(planned_results["llama-70b-tpu"].plan)
    apis = plan_apis(plan)
    assert "lustre.googleapis.com" in apis and "servicenetworking.googleapis.com" in apis
    without = plan.model_copy(update={"storage": plan.storage.model_copy(update={"filesystem": "none"})})
    assert "lustre.googleapis.com" not in plan_apis(without)


def test_apis_args_refuse_what_cannot_be_enabled():
    from accel.base.errors import ComponentArgsError

    with pytest.raises(ComponentArgsError):
        GoogleApisArgs(project="p", apis=["container"])
    with pytest.raises(ComponentArgsError):
        GoogleApisArgs(project="p", apis=["serviceusage.googleapis.com"])


def test_the_mandatory_guardrail_refuses_a_google_resource_that_does_not_wait_for_its_api(planned_stacks):
    from accel.policies.guardrails.offline import evaluate

    resources = copy.deepcopy(gcp_resources(planned_stacks, "llama-70b-a3mega-gcp"))
    assert [v for v in evaluate(resources) if "google-apis-enabled" in str(v)] == []
    pool = next(r for r in resources if r["type"] == "gcp:container/nodePool:NodePool")
    pool["dependencies"] = [d for d in pool["dependencies"] if "apis-container" not in d]
    found = [v for v in evaluate(resources) if "google-apis-enabled" in str(v)]
    assert len(found) == 1 and pool["name"] in str(found[0]) and "container.googleapis.com" in str(found[0])
