"""EksCluster: the EKS control plane, its IAM, IRSA, core add-ons and a small system node group.

The cluster is built with `bootstrap_self_managed_addons=False` and the core add-ons declared as
EKS managed add-ons, so their versions are visible in a diff. vpc-cni, kube-proxy and the Pod
Identity agent must exist before any node joins; coredns needs a node to run on, so it follows
the system node group. GPU node groups wait for `compute_dependencies`.

IAM is least privilege: the control plane role has AmazonEKSClusterPolicy only; the node role has
AmazonEKSWorkerNodePolicy and AmazonEC2ContainerRegistryPullOnly, and the VPC CNI gets
AmazonEKS_CNI_Policy through its own IRSA role instead of through every node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from accel.base.cidrs import VpcCniSettings, documentation_range_problem
from accel.base.errors import invalid_arg
from accel.policies.cloud.eks_versions import default_eks_version
from accel.components.aws.vpc_cni import TRAINING_VPC_CNI
from accel.components.aws.common import (
    SYSTEM_INSTANCE_TYPES,
    SYSTEM_NODES,
    check_cidr,
    check_region,
    is_availability_zone,
    irsa_trust,
    managed_policy_arn,
    register_declared_outputs,
    resource_tags,
    service_trust,
    system_max_nodes,
    template_version,
)
from accel.components.tags import ResourceTags

_ARGS = "EksClusterArgs"
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_K8S_VERSION = re.compile(r"^1\.\d{2}$")
_ARN = re.compile(r"^arn:aws[a-z-]*:(iam|sts)::\d{12}:[\w+=,.@/-]+$")

REQUIRED_ADDONS = ("vpc-cni", "kube-proxy", "coredns")
# Add-ons that have to be running before a node can become Ready.
BEFORE_COMPUTE_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
# The FSx for Lustre CSI driver as an EKS managed add-on. Name verified against the EKS user guide,
# "Deploy the FSx for Lustre driver" (docs.aws.amazon.com/eks/latest/userguide/fsx-csi-create.html:
# `aws eks create-addon --addon-name aws-fsx-csi-driver`), as of 2026-11-24. The add-on authenticates
# through EKS Pod Identity or IRSA (same page), hence eks-pod-identity-agent in the defaults; static volumes
# need no FSx API calls, the node plugin only mounts. The node's Lustre client is not in the AL2023 EKS
# AMIs: GpuNodeGroup installs it at boot (components/aws/gpu.py, lustre_client).
FSX_CSI_ADDON = "aws-fsx-csi-driver"
KNOWN_ADDONS = (*REQUIRED_ADDONS, "eks-pod-identity-agent", "aws-ebs-csi-driver", "eks-node-monitoring-agent",
                "snapshot-controller", "amazon-cloudwatch-observability", FSX_CSI_ADDON)
# Add-on -> (namespace, service account, AWS managed policy) it needs through IRSA.
ADDON_IRSA = {
    "vpc-cni": ("kube-system", "aws-node", "AmazonEKS_CNI_Policy"),
    "aws-ebs-csi-driver": ("kube-system", "ebs-csi-controller-sa", "service-role/AmazonEBSCSIDriverPolicy"),
}
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
SYSTEM_AMI_TYPE = "AL2023_x86_64_STANDARD"


@dataclass(frozen=True)
class EksClusterArgs:
    region: str
    subnet_ids: Sequence[pulumi.Input[str]] = field(metadata={"doc": "Private subnets in at least two zones"})
    control_plane_security_group_id: pulumi.Input[str]
    node_security_group_id: pulumi.Input[str]
    tags: ResourceTags
    cluster_name: str | None = None          # default: the component's name
    # The newest EKS release in policies/cloud/eks_versions.yaml (with its standard-support window and source).
    kubernetes_version: str = field(default_factory=default_eks_version)
    private_endpoint: bool = False           # True: the API server is reachable only from inside the VPC
    # Who may reach the public API endpoint: the user's ranges, like the project id. No default:
    # an open endpoint by default is a choice nobody made (explicit 0.0.0.0/0 is still accepted).
    public_access_cidrs: Sequence[str] = ()
    system_instance_types: Sequence[str] = SYSTEM_INSTANCE_TYPES
    system_nodes: int = SYSTEM_NODES
    addons: Sequence[str] = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
    addon_versions: Mapping[str, str] = field(default_factory=dict)
    admin_principal_arns: Sequence[str] = ()  # extra IAM roles/users given cluster-admin (e.g. CI)
    secrets_kms_key_arn: str | None = None
    log_types: Sequence[str] = ("api", "audit", "authenticator")
    extended_support: bool = False           # EXTENDED support costs 6x the control plane hourly price
    kubeconfig_profile: str | None = None    # AWS_PROFILE for `aws eks get-token`
    imds_hop_limit: int = 1                  # 1 keeps pods away from the node role's credentials
    # How many subnet addresses each node holds (components/aws/vpc_cni.py); AwsNetworkArgs.for_plan sizes
    # the GPU zone's subnet with the same settings.
    vpc_cni: VpcCniSettings = TRAINING_VPC_CNI

    def __post_init__(self) -> None:
        check_region(_ARGS, self.region)
        if self.cluster_name is not None and not _CLUSTER_NAME.fullmatch(self.cluster_name):
            raise invalid_arg(_ARGS, "cluster_name", self.cluster_name,
                          "1-100 characters: letters, digits, '-' and '_', starting with a letter or digit")
        if not _K8S_VERSION.fullmatch(self.kubernetes_version or ""):
            raise invalid_arg(_ARGS, "kubernetes_version", self.kubernetes_version, f"expected a minor version like {default_eks_version()}")
        if isinstance(self.subnet_ids, (str, bytes)) or len(list(self.subnet_ids)) < 2:
            raise invalid_arg(_ARGS, "subnet_ids", self.subnet_ids,
                          "EKS needs private subnets in at least two availability zones")
        if not self.private_endpoint:
            if not self.public_access_cidrs:
                raise invalid_arg(_ARGS, "public_access_cidrs", self.public_access_cidrs,
                              "a public endpoint needs at least one CIDR; or set private_endpoint=True")
            for i, cidr in enumerate(self.public_access_cidrs):
                check_cidr(_ARGS, f"public_access_cidrs[{i}]", cidr)
                problem = documentation_range_problem(cidr)
                if problem:
                    raise invalid_arg(_ARGS, f"public_access_cidrs[{i}]", cidr, problem)
        if not self.system_instance_types or isinstance(self.system_instance_types, str):
            raise invalid_arg(_ARGS, "system_instance_types", self.system_instance_types,
                          "give a list of one or more instance types, e.g. ['m6i.xlarge']")
        if not isinstance(self.system_nodes, int) or not 1 <= self.system_nodes <= 20:
            raise invalid_arg(_ARGS, "system_nodes", self.system_nodes, "between 1 and 20 nodes")
        unknown = [a for a in self.addons if a not in KNOWN_ADDONS]
        if unknown:
            raise invalid_arg(_ARGS, "addons", unknown, f"known add-ons: {', '.join(KNOWN_ADDONS)}")
        missing = [a for a in REQUIRED_ADDONS if a not in self.addons]
        if missing:
            raise invalid_arg(_ARGS, "addons", list(self.addons),
                          f"nodes cannot work without {', '.join(missing)} (self-managed add-ons are not bootstrapped)")
        stray = [a for a in self.addon_versions if a not in self.addons]
        if stray:
            raise invalid_arg(_ARGS, "addon_versions", stray, "versions may only be pinned for add-ons in 'addons'")
        for i, arn in enumerate(self.admin_principal_arns):
            if not _ARN.fullmatch(arn):
                raise invalid_arg(_ARGS, f"admin_principal_arns[{i}]", arn, "expected an IAM role or user ARN")
        bad_logs = [t for t in self.log_types if t not in LOG_TYPES]
        if bad_logs:
            raise invalid_arg(_ARGS, "log_types", bad_logs, f"allowed: {', '.join(LOG_TYPES)}")
        if self.imds_hop_limit not in (1, 2):
            raise invalid_arg(_ARGS, "imds_hop_limit", self.imds_hop_limit,
                          "1 (pods cannot reach instance metadata) or 2 (they can)")
        if not isinstance(self.tags, ResourceTags):
            raise invalid_arg(_ARGS, "tags", self.tags, "expected accel.components.tags.ResourceTags")

    @classmethod
    def for_network(cls, network, tags: ResourceTags, **overrides) -> "EksClusterArgs":
        """Cluster args wired to an AwsNetwork's private subnets in Availability Zones (a Local Zone's subnet is for
        the GPU nodes only) and its security groups."""
        return cls(
            region=network.region,
            subnet_ids=[subnet for zone, subnet in network.private_subnet_ids.items()
                        if is_availability_zone(zone, network.region)],
            control_plane_security_group_id=network.control_plane_security_group_id,
            node_security_group_id=network.node_security_group_id,
            tags=tags,
            **overrides,
        )


def _issuer_url(identities: Any) -> str:
    for identity in identities or []:
        for oidc in identity.get("oidcs") or []:
            if oidc.get("issuer"):
                return oidc["issuer"]
    return ""  # only before the cluster exists (previews, mocks)


def render_kubeconfig(name: str, endpoint: str | None, ca_data: str | None, region: str,
                      profile: str | None = None) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (no long-lived token inside)."""
    user_exec: dict[str, Any] = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"],
        "interactiveMode": "Never",
    }
    if profile:
        user_exec["env"] = [{"name": "AWS_PROFILE", "value": profile}]
    return json.dumps({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name,
                      "cluster": {"server": endpoint or "", "certificate-authority-data": ca_data or ""}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": {"exec": user_exec}}],
    }, indent=2)


class EksCluster(pulumi.ComponentResource):
    """EKS control plane + OIDC provider + managed core add-ons + system node group."""

    # Its outputs, registered as declared here (register_declared_outputs). It also sets, for the code that
    # builds on it: certificate_authority_data, node_role_name, cluster_security_group_id, system_node_group_name,
    # kubernetes_version, region, and compute_dependencies (what GPU node groups wait for).
    name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        if not isinstance(args, EksClusterArgs):
            raise invalid_arg(_ARGS, "args", type(args).__name__, "pass an EksClusterArgs")
        cluster_name = args.cluster_name or name
        if not _CLUSTER_NAME.fullmatch(cluster_name):
            raise invalid_arg(_ARGS, "cluster_name", cluster_name,
                          "the component name is used as the cluster name; pass a valid cluster_name")
        super().__init__("accel:aws:EksCluster", name, None, opts)
        import pulumi_aws as aws

        self._aws = aws
        self._args = args
        self._name = name
        self._cluster_name = cluster_name
        child = pulumi.ResourceOptions(parent=self)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition

        cluster_role = aws.iam.Role(
            f"{name}-cluster-role",
            description=f"EKS control plane of {cluster_name}",
            assume_role_policy=service_trust("eks.amazonaws.com", "sts:AssumeRole", "sts:TagSession"),
            tags=self._tags(f"{name}-cluster-role"),
            opts=child,
        )
        cluster_policy = aws.iam.RolePolicyAttachment(
            f"{name}-cluster-policy",
            role=cluster_role.id,
            policy_arn=partition.apply(lambda p: managed_policy_arn(p, "AmazonEKSClusterPolicy")),
            opts=child,
        )

        vpc_config: dict[str, Any] = {
            "subnet_ids": list(args.subnet_ids),
            "security_group_ids": [args.control_plane_security_group_id],
            "endpoint_private_access": True,
            "endpoint_public_access": not args.private_endpoint,
        }
        if not args.private_endpoint:
            vpc_config["public_access_cidrs"] = list(args.public_access_cidrs)
        cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=cluster_name,
            role_arn=cluster_role.arn,
            version=args.kubernetes_version,
            vpc_config=vpc_config,
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            bootstrap_self_managed_addons=False,
            enabled_cluster_log_types=list(args.log_types),
            encryption_config=({"provider": {"key_arn": args.secrets_kms_key_arn}, "resources": ["secrets"]}
                               if args.secrets_kms_key_arn else None),
            upgrade_policy={"support_type": "EXTENDED" if args.extended_support else "STANDARD"},
            tags=self._tags(cluster_name),
            # Without the policy attached first, EKS cannot clean up its ENIs on delete.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster_policy]),
        )

        issuer = cluster.identities.apply(_issuer_url)
        oidc = aws.iam.OpenIdConnectProvider(
            f"{name}-oidc",
            url=issuer,
            client_id_lists=["sts.amazonaws.com"],
            tags=self._tags(f"{name}-oidc"),
            opts=child,
        )

        node_role = aws.iam.Role(
            f"{name}-node-role",
            description=f"EKS worker nodes of {cluster_name}",
            assume_role_policy=service_trust("ec2.amazonaws.com", "sts:AssumeRole"),
            tags=self._tags(f"{name}-node-role"),
            opts=child,
        )
        node_policies = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{policy}",
                role=node_role.id,
                policy_arn=partition.apply(lambda p, policy=policy: managed_policy_arn(p, policy)),
                opts=child,
            )
            for policy in ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly")
        ]

        for i, principal in enumerate(args.admin_principal_arns):
            entry = aws.eks.AccessEntry(f"{name}-admin-{i}", cluster_name=cluster.name, principal_arn=principal,
                                        type="STANDARD", tags=self._tags(f"{name}-admin-{i}"), opts=child)
            aws.eks.AccessPolicyAssociation(
                f"{name}-admin-{i}-policy",
                cluster_name=cluster.name,
                principal_arn=principal,
                policy_arn=partition.apply(
                    lambda p: f"arn:{p}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"),
                access_scope={"type": "cluster"},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]),
            )

        early_addons = [self._addon(cluster, addon, oidc, issuer, partition)
                        for addon in args.addons if addon in BEFORE_COMPUTE_ADDONS]
        system_group = self._system_node_group(cluster, node_role, [*node_policies, *early_addons])
        for addon in args.addons:
            if addon not in BEFORE_COMPUTE_ADDONS:
                self._addon(cluster, addon, oidc, issuer, partition, depends_on=[system_group])

        self.name = cluster.name
        self.endpoint = cluster.endpoint
        self.certificate_authority_data = cluster.certificate_authority.apply(lambda ca: (ca or {}).get("data") or "")
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, cluster.endpoint, self.certificate_authority_data).apply(
                lambda v: render_kubeconfig(v[0], v[1], v[2], args.region, args.kubeconfig_profile)))
        self.oidc_provider_arn = oidc.arn
        self.oidc_issuer = issuer
        self.node_role_arn = node_role.arn
        self.node_role_name = node_role.id  # an IAM role's id is its name
        self.cluster_security_group_id = cluster.vpc_config.apply(
            lambda c: (c or {}).get("cluster_security_group_id") or "")
        self.system_node_group_name = system_group.node_group_name
        self.kubernetes_version = args.kubernetes_version
        self.region = args.region
        # GPU node groups must not launch before the node role's policies and the CNI are in place.
        self.compute_dependencies: list[pulumi.Resource] = [*node_policies, *early_addons]
        register_declared_outputs(self)

    def _tags(self, name: str) -> dict[str, str]:
        return resource_tags(self._args.tags, name)

    def _addon(self, cluster, addon: str, oidc, issuer, partition, depends_on=()):
        aws, name = self._aws, self._name
        role_arn = None
        if addon in ADDON_IRSA:
            namespace, service_account, policy = ADDON_IRSA[addon]
            role = aws.iam.Role(
                f"{name}-{addon}-role",
                description=f"IRSA role of the {addon} add-on",
                assume_role_policy=pulumi.Output.all(oidc.arn, issuer).apply(
                    lambda v: irsa_trust(v[0], v[1], [f"system:serviceaccount:{namespace}:{service_account}"])),
                tags=self._tags(f"{name}-{addon}-role"),
                opts=pulumi.ResourceOptions(parent=self),
            )
            attachment = aws.iam.RolePolicyAttachment(
                f"{name}-{addon}-policy", role=role.id,
                policy_arn=partition.apply(lambda p: managed_policy_arn(p, policy)),
                opts=pulumi.ResourceOptions(parent=self))
            role_arn = role.arn
            depends_on = [*depends_on, attachment]
        return aws.eks.Addon(
            f"{name}-{addon}",
            cluster_name=cluster.name,
            addon_name=addon,
            addon_version=self._args.addon_versions.get(addon),
            # The add-on's documented `env` values (aws eks describe-addon-configuration, vpc-cni).
            configuration_values=json.dumps({"env": self._args.vpc_cni.env()}) if addon == "vpc-cni" else None,
            service_account_role_arn=role_arn,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="PRESERVE",
            tags=self._tags(f"{name}-{addon}"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )

    def _system_node_group(self, cluster, node_role, depends_on):
        aws, name, args = self._aws, self._name, self._args
        tags = self._tags(f"{name}-system")
        template = aws.ec2.LaunchTemplate(
            f"{name}-system-template",
            description=f"System nodes of {self._cluster_name}: IMDSv2, encrypted gp3 root",
            metadata_options={"http_endpoint": "enabled", "http_tokens": "required",
                              "http_put_response_hop_limit": args.imds_hop_limit},
            vpc_security_group_ids=[args.node_security_group_id],
            block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {
                "volume_size": 50, "volume_type": "gp3", "encrypted": "true", "delete_on_termination": "true"}}],
            tag_specifications=[{"resource_type": kind, "tags": tags}
                                for kind in ("instance", "volume", "network-interface")],
            update_default_version=True,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster.name,
            node_role_arn=node_role.arn,
            subnet_ids=list(args.subnet_ids),
            ami_type=SYSTEM_AMI_TYPE,
            capacity_type="ON_DEMAND",
            instance_types=list(args.system_instance_types),
            scaling_config={"min_size": 1, "desired_size": args.system_nodes, "max_size": system_max_nodes(args.system_nodes)},
            launch_template={"id": template.id, "version": template.latest_version.apply(template_version)},
            labels={"accel.dev/node-role": "system"},
            update_config={"max_unavailable": 1},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on),
                                        ignore_changes=["scalingConfig.desiredSize"]),
        )

