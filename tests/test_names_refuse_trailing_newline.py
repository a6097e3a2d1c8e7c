"""A name check refuses a value with a trailing newline, as the cloud and the API server do: Python's `$`
also matches before a final newline, so `pattern.match("abc\\n")` passed every `^...$` check while
Kubernetes (`IsDNS1123Label`, Go's regexp has no such rule), GCP and AWS refuse the name."""

from __future__ import annotations

import pytest

from accel.components.aws import common as aws_common
from accel.components.gcp import _common as gcp_common
from accel.components.kubernetes.names import dns_label_problem
from accel.policies.hardware.shapes import ShapeError, parse_topology


def test_a_kubernetes_name_with_a_trailing_newline_is_refused():
    assert dns_label_problem("namespace", "training") is None
    assert dns_label_problem("namespace", "training\n") is not None


def test_a_gcp_name_zone_and_region_with_a_trailing_newline_are_refused():
    gcp_common.check_name("Args", "cluster")
    gcp_common.check_zone("Args", "zone", "us-central1-a")
    for check in (lambda: gcp_common.check_name("Args", "cluster\n"),
                  lambda: gcp_common.check_zone("Args", "zone", "us-central1-a\n"),
                  lambda: gcp_common.check_location("Args", "location", "us-central1\n")):
        with pytest.raises(Exception, match="expected|must start"):
            check()
    assert not gcp_common.is_zone("us-central1-a\n")


def test_an_aws_region_with_a_trailing_newline_is_refused():
    aws_common.check_region("Args", "us-east-1")
    with pytest.raises(Exception, match="expected an AWS region"):
        aws_common.check_region("Args", "us-east-1\n")


def test_a_tpu_topology_with_a_trailing_newline_is_refused():
    assert parse_topology("2x2x4") == (2, 2, 4)
    with pytest.raises(ShapeError):
        parse_topology("2x2x4\n")


def test_a_workload_name_with_a_trailing_newline_is_refused():
    import yaml
    from pathlib import Path

    from accel.policies.workload import WorkloadSpec

    text = yaml.safe_load((Path(__file__).resolve().parent.parent / "examples" / "llama-8b-serving.yaml").read_text())
    WorkloadSpec.model_validate(text)
    with pytest.raises(Exception, match="workload name"):
        WorkloadSpec.model_validate({**text, "name": text["name"] + "\n"})

