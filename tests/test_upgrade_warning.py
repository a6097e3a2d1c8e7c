"""The GKE auto-upgrade warning is said once per plan, and only where an automatic upgrade can reach the run.

A release-channel cluster keeps node auto-upgrade on; a NO_MINOR_OR_NODE_UPGRADES exclusion (accel:upgradePause)
holds it off. GKE upgrades a cluster it has just created, and after it the nodes, no sooner than the default cluster
disruption budget (24 h for patch versions: policies/cloud/gke_rules.yaml disruption_budget), so a run that ends
within it needs no pause. GkeCluster judges that once for its pools; each pool warned for itself before (15 times for
the 15-pool H100 stack) and for an 18-hour run as for a month-long one.
"""

from __future__ import annotations

import logging

import pytest

from accel.components.gcp.cluster import GkeCluster, GkeClusterArgs, UpgradePause
from accel.components.tags import ResourceTags
from accel.policies.cloud.gke_rules import load_gke_rules, run_outlasts_first_upgrade

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research")


def warnings_of_cluster(declare, caplog, **overrides) -> list[str]:
    args = GkeClusterArgs(**{"project": "acme-ml", "location": "us-central1",
                             "network": "projects/acme-ml/global/networks/train",
                             "subnetwork": "projects/acme-ml/regions/us-central1/subnetworks/train", "tags": TAGS,
                             "node_zones": ["us-central1-a"], **overrides})
    with caplog.at_level(logging.WARNING):
        declare(lambda: GkeCluster("train", args))
    return [r.getMessage() for r in caplog.records if "auto-upgrade" in r.getMessage()]


def test_the_budget_is_the_tables_with_its_source():
    budget = load_gke_rules().disruption_budget
    assert budget.patch_hours == 24 and "cluster-disruption-budget" in budget.source and "read 2026-11-27" in budget.source
    assert not run_outlasts_first_upgrade(24) and run_outlasts_first_upgrade(24.5)
    assert run_outlasts_first_upgrade(None)     # a run whose end is not known can be reached


def test_a_run_within_the_budget_is_not_warned(declare, caplog):
    assert warnings_of_cluster(declare, caplog, run_hours=4) == []


@pytest.mark.parametrize("run_hours", [48, None])
def test_a_run_past_the_budget_is_warned_once_saying_why(declare, caplog, run_hours):
    [warning] = warnings_of_cluster(declare, caplog, run_hours=run_hours)
    assert "past the 24 h GKE waits after creating a cluster" in warning and "upgrade_pause" in warning


def test_a_paused_or_unchanneled_cluster_is_not_warned(declare, caplog):
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    assert warnings_of_cluster(declare, caplog, run_hours=720,
                               upgrade_pause=UpgradePause(now, now + timedelta(days=30))) == []
    assert warnings_of_cluster(declare, caplog, run_hours=720, release_channel="UNSPECIFIED") == []


def test_a_stack_warns_once_per_plan_and_not_for_a_short_run(planned_results):
    upgrade = {name: [w for w in result.warnings if "auto-upgrade" in w] for name, result in planned_results.items()}
    assert len(upgrade["llama-405b-h100-gcp"]) == 1          # 15 GPU pools: one warning, was one a pool
    assert upgrade["dev-spot"] == []                         # a ~18-hour run ends within the budget
    assert len(upgrade["llama-70b-tpu"]) == 1
