"""EksCluster: control plane, least-privilege IAM, IRSA, core add-ons, system nodes, kubeconfig."""

import json

import pulumi
import pytest

from accel.components.aws.cluster import EksCluster, EksClusterArgs, render_kubeconfig
from accel.base.errors import ComponentArgsError
from accel.components.tags import ResourceTags
from accel.policies.cloud.eks_versions import load_eks_versions
from tests import harness

TAGS = ResourceTags(workload="llama-70b", stack="aws-dev", owner="ml-platform")
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def args(**overrides) -> EksClusterArgs:
    values = dict(region="us-east-1", subnet_ids=["subnet-a", "subnet-b"], control_plane_security_group_id="sg-cp",
                  node_security_group_id="sg-nodes", tags=TAGS, public_access_cidrs=[OFFICE])
    values.update(overrides)
    return EksClusterArgs(**values)


OFFICE = "35.190.10.0/24"  # any routable range a user would give


def build(**overrides):
    return lambda: EksCluster("train", args(**overrides))


def rejected(declare, build_args) -> str:
    return str(harness.rejected(declare, build_args, ComponentArgsError))


def policies_of(capture, role_name: str) -> set[str]:
    role = capture.named(role_name)
    return {a.inputs["policyArn"] for a in capture.of_type(ATTACHMENT) if role.urn in a.dependencies}


def test_cluster_runs_in_the_private_subnets_with_the_control_plane_group(declare):
    cluster = declare(build()).named("train-cluster")
    vpc = cluster.inputs["vpcConfig"]
    assert vpc["subnetIds"] == ["subnet-a", "subnet-b"]
    assert vpc["securityGroupIds"] == ["sg-cp"]
    assert cluster.inputs["name"] == "train" and cluster.inputs["version"] == load_eks_versions().default


def test_private_endpoint_option_closes_the_public_endpoint(declare):
    vpc = declare(build(private_endpoint=True)).named("train-cluster").inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in vpc


def test_public_endpoint_is_limited_to_the_given_cidrs(declare):
    vpc = declare(build(public_access_cidrs=[OFFICE])).named("train-cluster").inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == [OFFICE]
    assert vpc["endpointPrivateAccess"] is True


def test_access_is_api_mode_and_add_ons_are_managed_not_bootstrapped(declare):
    cluster = declare(build()).named("train-cluster")
    assert cluster.inputs["accessConfig"]["authenticationMode"] == "API"
    assert cluster.inputs["bootstrapSelfManagedAddons"] is False
    assert cluster.inputs["upgradePolicy"] == {"supportType": "STANDARD"}


def test_control_plane_role_has_only_the_cluster_policy(declare):
    capture = declare(build())
    assert policies_of(capture, "train-cluster-role") == {"arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"}
    trust = json.loads(capture.named("train-cluster-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}


def test_node_role_has_worker_and_image_pull_policies_only(declare):
    capture = declare(build())
    assert policies_of(capture, "train-node-role") == {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    }


def test_vpc_cni_gets_its_policy_through_irsa_not_the_node_role(declare, mode):
    capture = declare(build())
    assert policies_of(capture, "train-vpc-cni-role") == {"arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"}
    addon = capture.named("train-vpc-cni")
    assert capture.named("train-vpc-cni-policy").urn in addon.dependencies  # the role, with its policy
    if mode == "up":  # the trust policy depends on the cluster's OIDC issuer
        trust = json.loads(capture.named("train-vpc-cni-role").inputs["assumeRolePolicy"])
        statement = trust["Statement"][0]
        assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
        conditions = statement["Condition"]["StringEquals"]
        assert sorted(conditions.values()) == ["sts.amazonaws.com", "system:serviceaccount:kube-system:aws-node"]


def test_oidc_provider_trusts_the_sts_audience(declare):
    oidc = declare(build()).named("train-oidc")
    assert oidc.type == "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
    assert oidc.inputs["clientIdLists"] == ["sts.amazonaws.com"]


def test_core_add_ons_are_installed(declare):
    names = {a.inputs["addonName"] for a in declare(build()).of_type(ADDON)}
    assert names == {"vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"}


def test_networking_add_ons_come_before_nodes_and_coredns_after(declare):
    capture = declare(build())
    system_group = capture.named("train-system")
    for early in ("train-vpc-cni", "train-kube-proxy", "train-eks-pod-identity-agent"):
        assert capture.named(early).urn in system_group.dependencies
    assert system_group.urn in capture.named("train-coredns").dependencies


def test_system_nodes_are_small_on_demand_untainted_and_require_imdsv2(declare):
    capture = declare(build())
    group = capture.named("train-system")
    assert group.type == NODE_GROUP
    assert group.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert group.inputs["capacityType"] == "ON_DEMAND"
    assert group.inputs["instanceTypes"] == ["m6i.xlarge"]
    assert group.inputs["scalingConfig"] == {"minSize": 1, "desiredSize": 2, "maxSize": 4}
    assert "taints" not in group.inputs
    template = capture.named("train-system-template")
    assert template.urn in group.dependencies
    assert template.inputs["metadataOptions"]["httpTokens"] == "required"
    assert template.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert template.inputs["vpcSecurityGroupIds"] == ["sg-nodes"]


def test_kubeconfig_is_secret_and_authenticates_with_aws_eks_get_token(declare, mode):
    def program():
        cluster = EksCluster("train", args(kubeconfig_profile="ml"))
        pulumi.export("kubeconfig", cluster.kubeconfig)
        pulumi.export("kubeconfig_plain", pulumi.Output.unsecret(cluster.kubeconfig))

    capture = declare(program)
    assert capture.outputs["kubeconfig"] == "[secret]"
    if mode == "up":  # in preview the endpoint is unknown, so the whole kubeconfig is
        config = json.loads(capture.outputs["kubeconfig_plain"])
        user = config["users"][0]["user"]["exec"]
        assert user["command"] == "aws"
        assert user["args"] == ["eks", "get-token", "--cluster-name", "train", "--region", "us-east-1",
                                "--output", "json"]
        assert user["env"] == [{"name": "AWS_PROFILE", "value": "ml"}]
        assert config["current-context"] == "train"


def test_render_kubeconfig_points_at_the_endpoint_and_ca():
    config = json.loads(render_kubeconfig("c", "https://ABC.gr7.us-west-2.eks.amazonaws.com", "Q0E=", "us-west-2"))
    cluster = config["clusters"][0]["cluster"]
    assert cluster == {"server": "https://ABC.gr7.us-west-2.eks.amazonaws.com", "certificate-authority-data": "Q0E="}
    assert "env" not in config["users"][0]["user"]["exec"]


def test_admin_principals_get_cluster_admin_access_entries(declare):
    capture = declare(build(admin_principal_arns=["arn:aws:iam::123456789012:role/ci"]))
    entry = capture.named("train-admin-0")
    assert entry.type == "aws:eks/accessEntry:AccessEntry"
    assert entry.inputs["principalArn"] == "arn:aws:iam::123456789012:role/ci"
    association = capture.named("train-admin-0-policy")
    assert entry.urn in association.dependencies
    assert association.inputs["policyArn"].endswith(":cluster-access-policy/AmazonEKSClusterAdminPolicy")
    assert association.inputs["accessScope"] == {"type": "cluster"}


def test_compute_dependencies_hold_node_policies_and_early_add_ons():
    holder = {}

    def program():
        holder["cluster"] = EksCluster("train", args())

    from tests.harness import run
    capture = run(program, mode="up")
    names = sorted(r._name for r in holder["cluster"].compute_dependencies)
    assert names == sorted(["train-node-AmazonEKSWorkerNodePolicy", "train-node-AmazonEC2ContainerRegistryPullOnly",
                            "train-vpc-cni", "train-kube-proxy", "train-eks-pod-identity-agent"])
    assert capture.named("train-cluster").inputs["name"] == "train"


def test_cluster_and_children_are_tagged(declare):
    capture = declare(build())
    tagged = [r for r in capture.resources if r.custom and "tags" in r.inputs]
    assert {r.type for r in tagged} >= {"aws:eks/cluster:Cluster", NODE_GROUP, ADDON, "aws:iam/role:Role"}
    assert all(r.inputs["tags"]["accel:stack"] == "aws-dev" for r in tagged)


def test_one_subnet_is_rejected(declare):
    assert "at least two" in rejected(declare, lambda: args(subnet_ids=["subnet-a"]))


def test_dropping_a_required_add_on_is_rejected(declare):
    message = rejected(declare, lambda: args(addons=["vpc-cni", "kube-proxy"]))
    assert "EksClusterArgs.addons" in message and "coredns" in message


def test_unknown_add_on_is_rejected_with_the_known_list(declare):
    message = rejected(declare, lambda: args(addons=["vpc-cni", "kube-proxy", "coredns", "istio"]))
    assert "istio" in message and "aws-ebs-csi-driver" in message


@pytest.mark.parametrize("field,value", [
    ("kubernetes_version", "1.34.2"),
    ("cluster_name", "-bad"),
    ("admin_principal_arns", ["someone"]),
    ("public_access_cidrs", ["0.0.0.0/33"]),
    ("region", "moon-1"),
    ("imds_hop_limit", 3),
])
def test_invalid_field_is_named_in_the_message(declare, field, value):
    assert f"EksClusterArgs.{field}" in rejected(declare, lambda: args(**{field: value}))


def test_component_name_that_cannot_be_a_cluster_name_is_rejected_before_registering(declare):
    message = rejected(declare, lambda: EksCluster("bad name", args()))
    assert "cluster_name" in message


@pytest.mark.parametrize("cidr", ["203.0.113.0/24", "192.0.2.10/32", "198.51.100.0/25"])
def test_a_documentation_range_is_refused_for_the_public_endpoint(cidr):
    with pytest.raises(ComponentArgsError, match="reserved for documentation"):
        args(public_access_cidrs=[cidr])


def test_a_public_endpoint_has_no_default_allowlist():
    with pytest.raises(ComponentArgsError, match="public_access_cidrs"):
        args(public_access_cidrs=())


def test_the_outputs_it_registers_are_the_ones_its_class_declares(monkeypatch):
    registered = {}
    monkeypatch.setattr(EksCluster, "register_outputs", lambda self, outputs: registered.update(outputs))
    from tests.harness import run
    run(lambda: EksCluster("train", args()), mode="up")
    assert list(registered) == ["name", "endpoint", "kubeconfig", "oidc_provider_arn", "oidc_issuer", "node_role_arn"]


def test_the_control_plane_takes_availability_zone_subnets_only_never_a_local_zones():
    """EKS runs its control plane in the Region: a Local Zone's subnet (p6e-gb200 in us-east-1-dfw-2a) carries the
    GPU nodes, and the cluster gets the two Availability Zones' subnets the training cluster adds beside it."""
    from types import SimpleNamespace

    network = SimpleNamespace(region="us-east-1", control_plane_security_group_id="sg-cp",
                              node_security_group_id="sg-nodes", private_subnet_ids={
                                  "us-east-1-dfw-2a": "subnet-local", "us-east-1a": "subnet-a", "us-east-1b": "subnet-b"})
    cluster = EksClusterArgs.for_network(network, TAGS, public_access_cidrs=[OFFICE])
    assert list(cluster.subnet_ids) == ["subnet-a", "subnet-b"]


def test_the_p6e_stack_gives_its_cluster_two_availability_zones_beside_the_local_zone(planned_stacks):
    document = planned_stacks["llama-405b-p6e"]
    subnets = [r for r in document["resources"] if r["type"] == "aws:ec2/subnet:Subnet" and "-private-" in r["name"]]
    zones = sorted(s["inputs"]["availabilityZone"] for s in subnets)
    assert zones == ["us-east-1-dfw-2a", "us-east-1a", "us-east-1b"]
    (cluster,) = [r for r in document["resources"] if r["type"] == "aws:eks/cluster:Cluster"]
    assert len(cluster["inputs"]["vpcConfig"]["subnetIds"]) == 2
