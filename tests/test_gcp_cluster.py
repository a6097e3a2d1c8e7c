"""GkeCluster: a private GKE cluster with Workload Identity and a least-privilege node identity."""

from __future__ import annotations

from datetime import datetime, timezone

import yaml

from accel.mock_engine import SECRET_PLACEHOLDER
from accel.base.errors import ComponentArgsError
from accel.components.gcp.cluster import ClusterRef, GkeCluster, GkeClusterArgs, UpgradePause, build_kubeconfig
from accel.components.tags import ResourceTags
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research")
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
PROJECT_IAM = "gcp:projects/iAMMember:IAMMember"


def cluster_args(**overrides) -> GkeClusterArgs:
    return GkeClusterArgs(**{
        "project": "acme-ml", "location": "us-central1", "network": "projects/acme-ml/global/networks/train",
        "subnetwork": "projects/acme-ml/regions/us-central1/subnetworks/train", "tags": TAGS,
        "node_zones": ["us-central1-a"], **overrides,
    })


def cluster(declare, **overrides):
    built = {}

    def program():
        built["cluster"] = GkeCluster("train", cluster_args(**overrides))

    capture = declare(program)
    return capture, built["cluster"]


def rejected(declare, match: str, name: str = "train", **overrides) -> ComponentArgsError:
    return harness.rejected(declare, lambda: GkeCluster(name, cluster_args(**overrides)), ComponentArgsError, match)


def gke(capture):
    (resource,) = capture.of_type(CLUSTER)
    return resource.inputs


def test_nodes_are_private(declare):
    capture, _ = cluster(declare)
    assert gke(capture)["privateClusterConfig"]["enablePrivateNodes"] is True
    for pool in capture.of_type(NODE_POOL):
        assert pool.inputs["networkConfig"]["enablePrivateNodes"] is True


def test_workload_identity_pool_is_the_projects(declare):
    capture, built = cluster(declare)
    assert gke(capture)["workloadIdentityConfig"] == {"workloadPool": "acme-ml.svc.id.goog"}
    assert built.workload_pool == "acme-ml.svc.id.goog"


def test_cluster_is_hardened_and_gets_the_gcs_fuse_driver(declare):
    inputs = gke(cluster(declare)[0])
    assert inputs["releaseChannel"] == {"channel": "REGULAR"}
    assert inputs["enableShieldedNodes"] is True
    assert inputs["datapathProvider"] == "ADVANCED_DATAPATH"
    assert inputs["addonsConfig"]["gcsFuseCsiDriverConfig"] == {"enabled": True}
    assert inputs["networkingMode"] == "VPC_NATIVE"
    assert inputs["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods",
                                            "servicesSecondaryRangeName": "services"}


def test_default_node_pool_is_removed(declare):
    inputs = gke(cluster(declare)[0])
    assert inputs["removeDefaultNodePool"] is True


def test_control_plane_is_reachable_by_dns_and_not_by_any_ip(declare):
    inputs = gke(cluster(declare)[0])
    assert inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    assert inputs["masterAuthorizedNetworksConfig"] == {"cidrBlocks": [], "gcpPublicCidrsAccessEnabled": False}


def test_authorized_networks_are_listed(declare):
    inputs = gke(cluster(declare, master_authorized_cidrs=["35.190.10.0/24"])[0])
    assert [b["cidrBlock"] for b in inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["35.190.10.0/24"]


def test_node_service_account_has_only_node_roles(declare):
    capture, _ = cluster(declare)
    roles = sorted(b.inputs["role"] for b in capture.of_type(PROJECT_IAM))
    assert roles == ["roles/artifactregistry.reader", "roles/container.defaultNodeServiceAccount"]
    for binding in capture.of_type(PROJECT_IAM):
        assert binding.inputs["member"] == "serviceAccount:train-nodes@acme-ml.iam.gserviceaccount.com"


def test_nodes_run_as_the_dedicated_account(declare):
    capture, _ = cluster(declare)
    system = capture.named("train-system")
    assert system.inputs["nodeConfig"]["serviceAccount"] == "train-nodes@acme-ml.iam.gserviceaccount.com"
    assert system.inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert system.inputs["nodeConfig"]["shieldedInstanceConfig"]["enableSecureBoot"] is True


def test_system_pool_is_small_and_labelled(declare):
    system = cluster(declare)[0].named("train-system")
    assert system.inputs["nodeConfig"]["machineType"] == "e2-standard-4"
    assert system.inputs["initialNodeCount"] == 1
    labels = system.inputs["nodeConfig"]["resourceLabels"]
    assert (labels["workload"], labels["stack"], labels["owner"]) == ("llama-70b", "dev", "ml-platform")


def test_regional_cluster_keeps_nodes_in_the_plans_zones(declare):
    inputs = gke(cluster(declare, node_zones=["us-central1-a", "us-central1-b"])[0])
    assert inputs["location"] == "us-central1"
    assert inputs["nodeLocations"] == ["us-central1-a", "us-central1-b"]


def test_zonal_cluster_lists_only_its_other_zones(declare):
    inputs = gke(cluster(declare, location="us-central1-a", node_zones=["us-central1-a"])[0])
    assert inputs["location"] == "us-central1-a"
    assert "nodeLocations" not in inputs


def test_multi_networking_for_gpudirect(declare):
    capture, built = cluster(declare, multi_networking=True)
    assert gke(capture)["enableMultiNetworking"] is True
    assert built.ref.multi_networking is True


def test_upgrade_pause_becomes_a_maintenance_exclusion(declare):
    pause = UpgradePause(datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 12, 1, tzinfo=timezone.utc))
    capture, built = cluster(declare, upgrade_pause=pause)
    (exclusion,) = gke(capture)["maintenancePolicy"]["maintenanceExclusions"]
    assert exclusion["exclusionOptions"] == {"scope": "NO_MINOR_OR_NODE_UPGRADES"}
    assert (exclusion["startTime"], exclusion["endTime"]) == ("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z")
    assert built.ref.upgrades_paused is True


def test_filesystem_csi_driver_follows_the_plan(declare):
    assert gke(cluster(declare, filesystem="managed-lustre")[0])["addonsConfig"]["lustreCsiDriverConfig"] == {
        "enabled": True}
    assert gke(cluster(declare, filesystem="filestore")[0])["addonsConfig"]["gcpFilestoreCsiDriverConfig"] == {
        "enabled": True}


def test_cluster_is_labelled_and_destroyable(declare):
    inputs = gke(cluster(declare)[0])
    assert inputs["resourceLabels"]["workload"] == "llama-70b"
    assert inputs["deletionProtection"] is False
    assert inputs["name"] == "train"


def test_kubeconfig_is_a_secret(declare):
    def program():
        import pulumi

        pulumi.export("kubeconfig", GkeCluster("train", cluster_args()).kubeconfig)

    assert declare(program).outputs["kubeconfig"] == SECRET_PLACEHOLDER


def test_clusters_kubeconfig_names_the_cluster_and_the_plugin(declare):
    seen: list[str] = []

    def program():
        GkeCluster("train", cluster_args()).kubeconfig.apply(seen.append)

    declare(program)
    assert len(seen) == 1
    config = yaml.safe_load(seen[0])
    assert config["current-context"] == "gke_acme-ml_us-central1_train"
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_kubeconfig_authenticates_through_the_gke_plugin():
    config = yaml.safe_load(build_kubeconfig("gke_acme_us-central1_train", "gke-abc.us-central1.gke.goog", None))
    user = config["users"][0]["user"]["exec"]
    assert user["command"] == "gke-gcloud-auth-plugin"
    assert config["clusters"][0]["cluster"] == {"server": "https://gke-abc.us-central1.gke.goog"}
    assert config["current-context"] == "gke_acme_us-central1_train"


def test_kubeconfig_carries_the_ca_for_the_ip_endpoint():
    config = yaml.safe_load(build_kubeconfig("ctx", "10.0.0.2", "Q0EK"))
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] == "Q0EK"


def test_ref_describes_the_cluster_for_node_pools(declare):
    _, built = cluster(declare, release_channel="STABLE")
    assert isinstance(built.ref, ClusterRef)
    assert (built.ref.location, built.ref.release_channel, built.ref.auto_upgrade) == ("us-central1", "STABLE", True)


def test_node_zone_outside_the_region_is_rejected(declare):
    error = rejected(declare, "must be a zone of us-central1", node_zones=["us-east5-a"])
    assert error.field == "node_zones[0]"


def test_control_plane_open_to_the_world_is_rejected(declare):
    rejected(declare, "whole internet", master_authorized_cidrs=["0.0.0.0/0"])


def test_authorized_networks_refuse_documentation_ranges(declare):
    rejected(declare, "RFC 5737 TEST-NET-3", master_authorized_cidrs=["203.0.113.0/24"])


def test_unknown_release_channel_is_rejected(declare):
    rejected(declare, "allowed: RAPID", release_channel="NIGHTLY")


def test_name_too_long_for_gke_is_rejected(declare):
    rejected(declare, "GCP allows 40", name="a-very-long-training-cluster-name")


def test_upgrade_pause_must_end_after_it_starts(declare):
    moment = datetime(2026, 11, 1, tzinfo=timezone.utc)
    rejected(declare, "must be after start", upgrade_pause=UpgradePause(moment, moment))


def test_upgrade_pause_past_the_channel_s_end_of_support_is_refused(declare):
    # GKE holds a NO_MINOR_OR_NODE_UPGRADES exclusion only until the minor version leaves support (gke_rules.yaml).
    start = datetime.now(timezone.utc)
    far = start.replace(year=start.year + 3)
    rejected(declare, "14 months", upgrade_pause=UpgradePause(start, far))
    rejected(declare, "24 months", upgrade_pause=UpgradePause(start, far), release_channel="EXTENDED")
