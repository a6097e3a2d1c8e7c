"""The EKS Kubernetes version a new cluster gets is the table's, and the table keeps it in standard support.

Past its end of standard support an EKS cluster silently moves to extended support (on by default) and its
control plane is billed at the extended rate; the default must never be a version about to get there."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from accel.components.aws.cluster import EksClusterArgs
from accel.base.errors import ComponentArgsError
from accel.components.tags import ResourceTags
from accel.policies.cloud.eks_versions import load_eks_versions

TABLE = load_eks_versions()


def _args(**overrides) -> EksClusterArgs:
    values = dict(region="us-east-1", subnet_ids=["subnet-a", "subnet-b"], control_plane_security_group_id="sg-cp",
                  node_security_group_id="sg-n", tags=ResourceTags(workload="llama-70b", stack="aws-dev",
                                                                    owner="ml-platform"),
                  public_access_cidrs=["35.190.10.0/24"])
    values.update(overrides)
    return EksClusterArgs(**values)


def test_a_cluster_without_a_version_gets_the_tables_default():
    assert _args().kubernetes_version == TABLE.default


def test_the_default_has_at_least_ninety_days_of_standard_support_left_when_the_table_was_read():
    """When this fails the table is stale: add the newer EKS release (with its dates) and move `default`."""
    release = TABLE.releases[TABLE.default]
    assert release.end_of_standard_support - TABLE.as_of >= timedelta(days=90), (
        f"EKS {TABLE.default} leaves standard support on {release.end_of_standard_support}")
    assert TABLE.in_standard_support(TABLE.default, TABLE.as_of) is True


def test_the_default_is_the_newest_release_listed():
    newest = max(TABLE.releases.values(), key=lambda r: r.released)
    assert TABLE.default == newest.version


def test_a_version_past_its_standard_support_is_told_apart():
    assert TABLE.in_standard_support("1.32", TABLE.as_of) is False
    assert TABLE.in_standard_support("1.99", TABLE.as_of) is None


def test_a_default_the_table_does_not_list_is_refused(tmp_path: Path):
    bad = tmp_path / "eks_versions.yaml"
    bad.write_text('as_of: "2026-11-26"\nsource: x\ndefault: "1.40"\n'
                   'releases:\n  "1.35": {released: "2026-01-28", end_of_standard_support: "2027-03-27"}\n')
    with pytest.raises(ValueError, match="default '1.40' is not one of the releases"):
        load_eks_versions(bad)


def test_a_patch_version_is_still_refused_with_the_default_as_the_example():
    with pytest.raises(ComponentArgsError, match=f"like {TABLE.default}"):
        _args(kubernetes_version="1.35.2")
