"""No floating image tags: every image reference accel writes (job manifests of every bundled stack, the
runtime defaults, the GPUDirect pairing table) names a version or a digest, never `:latest` or nothing."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from accel.components.kubernetes.node_installers import floating_image_problem, load_node_installers
from accel.job.facts import runtime
from accel.job.manifests import JobOptions
from accel.job.service import job_of
from tests.conftest import planned_result

ROOT = Path(__file__).resolve().parents[1]
STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def images_in(node, path="") -> list[tuple[str, str]]:
    """(where, image) for every `image` field, or `*_image` string, anywhere in a document."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, str) and (key == "image" or key.endswith("_image")):
                found.append((where, value))
            else:
                found += images_in(value, where)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += images_in(value, f"{path}[{i}]")
    return found


@pytest.mark.parametrize("image, problem", [
    ("ubuntu", "untagged"),
    ("nvcr.io/nvidia/pytorch", "untagged"),
    ("registry.local:5000/trainer", "untagged"),
    ("public.ecr.aws/hpc-cloud/nccl-tests:latest", ":latest"),
    ("nvcr.io/nvidia/pytorch:25.01-py3", None),
    ("registry.local:5000/trainer:v1", None),
    ("gke.gcr.io/pause@sha256:" + "a" * 64, None),
])
def test_the_rule_knows_a_floating_reference(image, problem):
    found = floating_image_problem(image)
    assert (found is None) if problem is None else (problem in found)


def test_the_runtime_defaults_name_no_floating_image():
    assert [(w, i) for w, i in images_in(runtime()) if floating_image_problem(i)] == []


def test_a_floating_runtime_default_would_be_caught():
    facts = copy.deepcopy(runtime())  # runtime() is cached: never mutate it
    facts["defaults"]["jax-tpu"]["image"] = "us-docker.pkg.dev/tpu-prod-env-multipod/maxtext_jax_stable:latest"
    assert [w for w, i in images_in(facts) if floating_image_problem(i)] == ["defaults.jax-tpu.image"]


def test_the_pairing_table_floats_only_where_it_says_google_does():
    table = load_node_installers()
    for software in table.fabrics.values():
        for image in filter(None, (software.plugin, software.sidecar)):
            assert floating_image_problem(image) is None
    for name, pin in table.installers.items():
        floating = {i for i in pin.images if floating_image_problem(i)}
        assert floating == set(pin.floating_upstream), name



def moving_upstream() -> dict[str, str]:
    """Images runtime.yaml says upstream publishes only under a moving tag (image -> why), as the pairing table's
    floating_upstream does for installers."""
    return runtime()["validate"].get("floating_upstream", {})


# Stacks whose `--validate` is refused: one-GPU nodes with no GPU network have no all-reduce to check
# (tests/test_validate_host_network.py).
NO_FABRIC_CHECK = {"llama-8b-serving-gpu"}


@pytest.mark.parametrize("validate, stack", [(validate, stack) for validate in (False, True) for stack in STACKS
                                             if not (validate and stack in NO_FABRIC_CHECK)])
def test_every_image_a_stacks_job_runs_is_pinned(stack, validate):
    job = job_of(planned_result(stack), JobOptions(validate=validate))
    images = [(w, i) for manifest in job.manifests for w, i in images_in(manifest)]
    assert images, "the job runs no container"
    floating = [(w, i) for w, i in images if floating_image_problem(i) and i not in moving_upstream()]
    assert floating == []


def test_only_the_fabric_check_images_upstream_publishes_under_a_moving_tag_may_float():
    validate = runtime()["validate"]
    named = {image for by_arch in validate["nccl_tests_images"].values()
             for arch, image in by_arch.items() if arch in ("amd64", "arm64")}
    assert {i for i in named if floating_image_problem(i)} == set(moving_upstream())
    assert all(len(why) > 40 for why in moving_upstream().values())
