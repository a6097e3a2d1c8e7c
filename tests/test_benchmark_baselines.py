"""The bare programs the start-up benchmark compares `accel plan` with declare what the plan declares."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import plan_programs  # noqa: E402  (benchmarks/ is not a package)
from replay import provider_sdk_class  # noqa: E402

from tests.conftest import planned_result  # noqa: E402


@pytest.fixture(scope="module")
def tpu_plan():
    result = planned_result("llama-70b-tpu")  # the suite's shared plan (tests/conftest.py)
    plan_programs.release_run_loop()
    # The SDK classes are found in the registry each provider package fills when it is imported. A plan this
    # worker read from another worker's cache (tests/shared.py) imported none of them here: import them.
    import importlib

    for package in sorted({r.type.split(":")[0] for r in result.capture.resources if r.custom} - {"pulumi"}):
        importlib.import_module(f"pulumi_{package}")
    return result


@pytest.mark.parametrize("through_classes", [False, True], ids=["plain", "provider classes"])
def test_the_bare_replay_registers_exactly_what_the_plan_registered(tpu_plan, through_classes):
    differences = plan_programs.replay_differences(tpu_plan.capture, project=tpu_plan.project,
                                                   stack=tpu_plan.stack, through_classes=through_classes)
    plan_programs.release_run_loop()
    assert differences == []


def test_the_class_replay_hands_every_google_cloud_resource_its_input_type(tpu_plan):
    from replay import _as_input_type

    gcp = [r for r in tpu_plan.capture.resources if r.custom and r.type.startswith("gcp:")]
    as_types = [_as_input_type(provider_sdk_class(r.type), dict(r.inputs)) for r in gcp]
    assert gcp and all(type(args).__name__ == f"{provider_sdk_class(r.type).__name__}Args"
                       for r, args in zip(gcp, as_types))


def test_every_provider_resource_type_but_custom_resources_has_its_sdk_class(tpu_plan):
    custom_types = {r.type for r in tpu_plan.capture.resources if r.custom}
    without_class = {t for t in custom_types if provider_sdk_class(t) is None}
    # Kubernetes custom resources (Kueue's CRDs) have no generated class: the bare program keeps them plain.
    assert without_class and all(t.startswith("kubernetes:kueue.x-k8s.io/") for t in without_class)
    assert provider_sdk_class("gcp:container/cluster:Cluster").__name__ == "Cluster"
    assert provider_sdk_class("pulumi:providers:kubernetes").__name__ == "Provider"
