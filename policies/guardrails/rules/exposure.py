"""Exposure: training nodes, buckets and control planes are not reachable from the internet,
and workloads get their own credentials rather than the node's.

The three that expose a stack to the whole internet (public node IPs, public buckets, a world-open
Kubernetes API) are mandatory. A stack explicitly marked for development (stack tag
`accel:environment: development`, set through `pulumi:tags` in its stack file) is judged by one
advisory policy instead, which reports the same violations: loud, but it does not block.
"""

from __future__ import annotations

import json
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from accel.policies.guardrails.rules.common import (
    UNKNOWN,
    config,
    flagger,
    get,
    is_false,
    is_true,
    items,
    number,
    schema,
    violation,
)

PUBLIC_NODE_IPS = "no-public-node-ips"
PUBLIC_BUCKETS = "no-public-buckets"
OPEN_INGRESS = "no-open-ingress"
CONTROL_PLANE = "control-plane-not-world-open"
IMDSV2 = "imdsv2-required"
WORKLOAD_IDENTITY = "workload-identity"
SHIELDED = "shielded-nodes"

EXPOSURE_ON_DEVELOPMENT = "exposure-on-development-stack"

# The stack tag that marks a stack for development; only this exact value relaxes the rules above.
ENVIRONMENT_TAG = "accel:environment"
DEVELOPMENT = "development"

WORLD = ("0.0.0.0/0", "::/0")
_PUBLIC_ACLS = ("public-read", "public-read-write", "authenticated-read")
_PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")


def is_development_stack(args: Any) -> bool:
    """The stack carries `accel:environment: development` in its stack tags (what the analyzer hands policies)."""
    tags = getattr(args, "stack_tags", None) or {}
    return str(tags.get(ENVIRONMENT_TAG, "")).strip().lower() == DEVELOPMENT


def _outside_development(validate):
    """Run `validate` only on stacks not marked for development (those get EXPOSURE_ON_DEVELOPMENT)."""
    def run(args, report) -> None:
        if not is_development_stack(args):
            validate(args, report)
    run.__doc__ = validate.__doc__
    return run


# --- no-public-node-ips -----------------------------------------------------------------


def _validate_public_node_ips(args, report) -> None:
    t, props = args.resource_type, args.props

    flag = flagger(args, report, PUBLIC_NODE_IPS)

    if t == "gcp:container/cluster:Cluster":
        private = get(props, "privateClusterConfig", "enablePrivateNodes")
        if private is not UNKNOWN and not is_true(private) and not is_true(get(props, "enableAutopilot")):
            flag("its nodes get public IPs (privateClusterConfig.enablePrivateNodes is not true)",
                 'set private_cluster_config={"enable_private_nodes": True, "master_ipv4_cidr_block": ...} '
                 "and give the nodes egress through Cloud NAT")
    elif t == "gcp:container/nodePool:NodePool":
        if is_false(get(props, "networkConfig", "enablePrivateNodes")):
            flag("networkConfig.enablePrivateNodes is false, so its nodes get public IPs",
                 "remove the override or set network_config.enable_private_nodes=True")
    elif t == "gcp:tpu/v2Vm:V2Vm":
        if is_true(get(props, "networkConfig", "enableExternalIps")):
            flag("networkConfig.enableExternalIps is true, so every TPU host gets a public IP",
                 "set network_config.enable_external_ips=False and use Cloud NAT for egress")
    elif t == "gcp:tpu/v2QueuedResource:V2QueuedResource":
        for spec in items(get(props, "tpu", "nodeSpecs")):
            if is_true(get(spec, "node", "networkConfig", "enableExternalIps")):
                flag("a node spec sets networkConfig.enableExternalIps, so its TPU hosts get public IPs",
                     "set enable_external_ips=False in tpu.node_specs[].node.network_config")
                break
    elif t == "gcp:compute/instance:Instance":
        if any(items(get(nic, "accessConfigs")) for nic in items(get(props, "networkInterfaces"))):
            flag("a network interface has an accessConfig, which gives the VM a public IP",
                 "remove access_configs and reach the VM through IAP or a private network")
    elif t == "aws:ec2/subnet:Subnet":
        if is_true(get(props, "mapPublicIpOnLaunch")):
            flag("mapPublicIpOnLaunch is true, so every node launched in it gets a public IP",
                 "set map_public_ip_on_launch=False; nodes reach the internet through a NAT gateway, "
                 "which does not need it either")
    elif t == "aws:ec2/launchTemplate:LaunchTemplate":
        if any(is_true(get(nic, "associatePublicIpAddress")) for nic in items(get(props, "networkInterfaces"))):
            flag("a network interface sets associatePublicIpAddress, so its nodes get public IPs",
                 'set associate_public_ip_address="false" on every network interface')
    elif t == "aws:ec2/instance:Instance":
        if is_true(get(props, "associatePublicIpAddress")):
            flag("associatePublicIpAddress is true", "set associate_public_ip_address=False")


# --- no-public-buckets ------------------------------------------------------------------


def _world_readable_statement(policy_text: Any) -> bool:
    try:
        policy = json.loads(policy_text) if isinstance(policy_text, str) else policy_text
    except ValueError:
        return False
    statements = policy.get("Statement", []) if isinstance(policy, dict) else []
    if isinstance(statements, dict):
        statements = [statements]
    for statement in statements:
        if not isinstance(statement, dict) or statement.get("Effect") != "Allow" or statement.get("Condition"):
            continue
        principal = statement.get("Principal")
        if principal == "*" or (isinstance(principal, dict) and "*" in (
                principal.get("AWS") if isinstance(principal.get("AWS"), list) else [principal.get("AWS")])):
            return True
    return False


def _validate_public_buckets(args, report) -> None:
    t, props = args.resource_type, args.props

    flag = flagger(args, report, PUBLIC_BUCKETS)

    if t == "gcp:storage/bucket:Bucket":
        prevention = get(props, "publicAccessPrevention")
        if prevention is not UNKNOWN and prevention != "enforced" and config(args).get("requirePublicAccessPrevention", True):
            flag(f"publicAccessPrevention is {prevention or 'unset'}, so an IAM grant can make it public",
                 'set public_access_prevention="enforced" and uniform_bucket_level_access=True')
    elif t in ("gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding"):
        members = [get(props, "member")] + items(get(props, "members"))
        public = [m for m in members if m in _PUBLIC_MEMBERS]
        if public:
            flag(f"it grants {get(props, 'role')} to {public[0]}, which makes the bucket public",
                 "grant the role to a service account or group instead")
    elif t in ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2", "aws:s3/bucketAcl:BucketAcl",
               "aws:s3/bucketAclV2:BucketAclV2"):
        acl = get(props, "acl")
        if acl in _PUBLIC_ACLS:
            flag(f"its canned ACL is {acl}", 'use acl="private" (or no ACL) and grant access through IAM')
    elif t == "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock":
        fields = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
        off = [f for f in fields if get(props, f) is not UNKNOWN and not is_true(get(props, f))]
        if off:
            flag(f"{', '.join(off)} {'is' if len(off) == 1 else 'are'} not true, so public access is not fully blocked",
                 "set block_public_acls, block_public_policy, ignore_public_acls and restrict_public_buckets to True")
    elif t == "aws:s3/bucketPolicy:BucketPolicy":
        if _world_readable_statement(get(props, "policy")):
            flag("its policy allows Principal \"*\" without a condition",
                 "name the principals (roles, accounts) that need access, or add a condition")


# --- no-open-ingress --------------------------------------------------------------------


def _port_ranges(ports: list[Any]) -> list[tuple[int, int]] | None:
    """['22', '8000-9000'] -> [(22, 22), (8000, 9000)]; None means every port."""
    if not ports:
        return None
    ranges = []
    for port in ports:
        text = str(port)
        low, _, high = text.partition("-")
        try:
            ranges.append((int(low), int(high or low)))
        except ValueError:
            return None
    return ranges


def _outside(ranges: list[tuple[int, int]] | None, allowed: list[int]) -> bool:
    """True when some port in `ranges` is not in `allowed` (None = every port)."""
    if ranges is None:
        return True
    allowed_set = set(allowed)
    return any(high - low >= 1024 or not allowed_set.issuperset(range(low, high + 1)) for low, high in ranges)


def _aws_range(props: Any, protocol_key: str) -> list[tuple[int, int]] | None:
    protocol = str(get(props, protocol_key) or "")
    if protocol in ("-1", "all"):
        return None
    low, high = number(get(props, "fromPort")), number(get(props, "toPort"))
    if low is None or high is None:
        return None
    return [(int(low), int(high))]


def _validate_open_ingress(args, report) -> None:
    t, props = args.resource_type, args.props
    allowed = [int(p) for p in (config(args).get("allowedPublicPorts") or [])]
    fix_sg = ("restrict the source to your VPC, a bastion's security group or a known CIDR; "
              "NAT needs no inbound rule, and load balancer health checks come from inside the VPC")

    flag = flagger(args, report, OPEN_INGRESS)

    if t == "gcp:compute/firewall:Firewall":
        direction = get(props, "direction") or "INGRESS"
        sources = [s for s in items(get(props, "sourceRanges")) if s in WORLD]
        if direction != "INGRESS" or not sources or is_true(get(props, "disabled")):
            return
        for rule in items(get(props, "allows")):
            if _outside(_port_ranges(items(get(rule, "ports"))), allowed):
                ports = ",".join(str(p) for p in items(get(rule, "ports"))) or "all ports"
                flag(f"it allows {get(rule, 'protocol')} {ports} from {sources[0]}",
                     "limit source_ranges to your networks, IAP (35.235.240.0/20) or Google health checks "
                     "(35.191.0.0/16, 130.211.0.0/22)")
                return
    elif t == "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule":
        source = get(props, "cidrIpv4") if get(props, "cidrIpv4") in WORLD else get(props, "cidrIpv6")
        if source in WORLD and _outside(_aws_range(props, "ipProtocol"), allowed):
            flag(f"it opens {_describe(props, 'ipProtocol')} to {source}", fix_sg)
    elif t == "aws:ec2/securityGroupRule:SecurityGroupRule":
        sources = [c for c in items(get(props, "cidrBlocks")) + items(get(props, "ipv6CidrBlocks")) if c in WORLD]
        if get(props, "type") == "ingress" and sources and _outside(_aws_range(props, "protocol"), allowed):
            flag(f"it opens {_describe(props, 'protocol')} to {sources[0]}", fix_sg)
    elif t == "aws:ec2/securityGroup:SecurityGroup":
        for rule in items(get(props, "ingress")):
            sources = [c for c in items(get(rule, "cidrBlocks")) + items(get(rule, "ipv6CidrBlocks")) if c in WORLD]
            if sources and _outside(_aws_range(rule, "protocol"), allowed):
                flag(f"an inline ingress rule opens {_describe(rule, 'protocol')} to {sources[0]}",
                     fix_sg)
                return
    elif t == "aws:eks/nodeGroup:NodeGroup":
        remote = get(props, "remoteAccess")
        if remote and remote is not UNKNOWN and not items(get(remote, "sourceSecurityGroupIds")):
            flag("remoteAccess without sourceSecurityGroupIds opens SSH (22) on every node to 0.0.0.0/0",
                 "remove remote_access (use SSM) or set remote_access.source_security_group_ids")


def _describe(props: Any, protocol_key: str) -> str:
    ports = _describe_range(props)
    return ports if ports == "all traffic" else f"{get(props, protocol_key)} {ports}"


def _describe_range(props: Any) -> str:
    low, high = number(get(props, "fromPort")), number(get(props, "toPort"))
    if str(get(props, "protocol") or get(props, "ipProtocol")) in ("-1", "all"):
        return "all traffic"
    if low is None or high is None:
        return "all ports"
    return f"port {int(low)}" if low == high else f"ports {int(low)}-{int(high)}"


# --- control-plane-not-world-open -------------------------------------------------------


def _validate_control_plane(args, report) -> None:
    t, props = args.resource_type, args.props
    if t == "aws:eks/cluster:Cluster":
        if is_false(get(props, "vpcConfig", "endpointPublicAccess")):
            return
        cidrs = items(get(props, "vpcConfig", "publicAccessCidrs"))
        if UNKNOWN in cidrs or get(props, "vpcConfig", "publicAccessCidrs") is UNKNOWN:
            return
        if not cidrs or any(c in WORLD for c in cidrs):
            report(violation(args, CONTROL_PLANE,
                             "its Kubernetes API endpoint is public and open to 0.0.0.0/0",
                             "set vpc_config.endpoint_private_access=True and either endpoint_public_access=False "
                             "or public_access_cidrs to your office/CI ranges"))
    elif t == "gcp:container/cluster:Cluster":
        if is_true(get(props, "privateClusterConfig", "enablePrivateEndpoint")):
            return
        networks = get(props, "masterAuthorizedNetworksConfig")
        if networks is UNKNOWN:
            return
        cidrs = [get(block, "cidrBlock") for block in items(get(networks, "cidrBlocks"))]
        if not networks or any(c in WORLD for c in cidrs):
            report(violation(args, CONTROL_PLANE,
                             "its control plane endpoint is public with no authorized networks",
                             "set master_authorized_networks_config.cidr_blocks to your office/CI ranges, "
                             "or private_cluster_config.enable_private_endpoint=True"))


# --- imdsv2-required --------------------------------------------------------------------


def _validate_imdsv2(args, report) -> None:
    t, props = args.resource_type, args.props
    if t in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance"):
        tokens = get(props, "metadataOptions", "httpTokens")
        if tokens is UNKNOWN or get(props, "metadataOptions", "httpEndpoint") == "disabled":
            return
        if tokens != "required":
            report(violation(args, IMDSV2,
                             f"metadataOptions.httpTokens is {tokens or 'unset'}, so IMDSv1 stays reachable and "
                             "any SSRF in a pod can read the node role's credentials",
                             'set metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 2}'))
    elif t == "aws:eks/nodeGroup:NodeGroup":
        if get(props, "launchTemplate") is None:
            report(violation(args, IMDSV2,
                             "it has no launch template, so its instances keep the default metadata options",
                             "attach a launch template whose metadata_options.http_tokens is \"required\""))


# --- exposure-on-development-stack -------------------------------------------------------


def _validate_exposure_on_development(args, report) -> None:
    if not is_development_stack(args):
        return
    for rule, validate in ((PUBLIC_NODE_IPS, _validate_public_node_ips), (PUBLIC_BUCKETS, _validate_public_buckets),
                           (CONTROL_PLANE, _validate_control_plane)):
        def relabel(message: str, *rest: Any, rule: str = rule) -> None:
            report(message.replace(f"violates {rule}: ",
                                   f"violates {EXPOSURE_ON_DEVELOPMENT}: ({rule}, not blocking on a development "
                                   "stack) ", 1), *rest)
        validate(args, relabel)


# --- workload-identity (stack) ----------------------------------------------------------


def _validate_workload_identity(args, report) -> None:
    types = {r.resource_type for r in args.resources}
    for resource in args.resources:
        t, props = resource.resource_type, resource.props
        if t == "gcp:container/cluster:Cluster":
            pool = get(props, "workloadIdentityConfig", "workloadPool")
            if pool is not UNKNOWN and not pool and not is_true(get(props, "enableAutopilot")):
                report(violation(resource, WORKLOAD_IDENTITY,
                                 "Workload Identity is off, so pods act with the node service account",
                                 'set workload_identity_config={"workload_pool": "<project>.svc.id.goog"}'),
                       resource.urn)
        elif t == "gcp:container/nodePool:NodePool":
            if get(props, "nodeConfig", "workloadMetadataConfig", "mode") == "GCE_METADATA":
                report(violation(resource, WORKLOAD_IDENTITY,
                                 "workloadMetadataConfig.mode is GCE_METADATA, so pods see the node's credentials",
                                 'set node_config.workload_metadata_config={"mode": "GKE_METADATA"}'),
                       resource.urn)
        elif t == "aws:eks/cluster:Cluster":
            pod_identity = "aws:eks/podIdentityAssociation:PodIdentityAssociation" in types or any(
                r.resource_type == "aws:eks/addon:Addon" and get(r.props, "addonName") == "eks-pod-identity-agent"
                for r in args.resources)
            if "aws:iam/openIdConnectProvider:OpenIdConnectProvider" not in types and not pod_identity:
                report(violation(resource, WORKLOAD_IDENTITY,
                                 "the stack has neither an IAM OIDC provider (IRSA) nor EKS Pod Identity, so pods "
                                 "can only use the node role",
                                 "add an aws.iam.OpenIdConnectProvider for the cluster's OIDC issuer (IRSA) or the "
                                 "eks-pod-identity-agent add-on with PodIdentityAssociations"),
                       resource.urn)


# --- shielded-nodes ---------------------------------------------------------------------


def _validate_shielded(args, report) -> None:
    t, props = args.resource_type, args.props
    if t == "gcp:container/nodePool:NodePool":
        path = ("nodeConfig", "shieldedInstanceConfig", "enableSecureBoot")
        field = "node_config.shielded_instance_config"
    elif t == "gcp:tpu/v2Vm:V2Vm":
        path = ("shieldedInstanceConfig", "enableSecureBoot")
        field = "shielded_instance_config"
    elif t == "gcp:container/cluster:Cluster":
        if is_false(get(props, "enableShieldedNodes")):
            report(violation(args, SHIELDED, "enableShieldedNodes is false", "remove the override (default is on)"))
        return
    else:
        return
    secure_boot = get(props, *path)
    if secure_boot is not UNKNOWN and not is_true(secure_boot):
        report(violation(args, SHIELDED, "secure boot is not enabled, so a tampered boot chain goes unnoticed",
                         f'set {field}={{"enable_secure_boot": True, "enable_integrity_monitoring": True}}'))


_REQUIRE_PREVENTION = {"type": "boolean", "default": True,
                       "description": "GCS buckets must set publicAccessPrevention=enforced themselves"}

POLICIES = [
    ResourceValidationPolicy(
        name=PUBLIC_NODE_IPS,
        description="Training nodes have no public IPs (private GKE nodes, no external TPU IPs, no public subnets).",
        validate=_outside_development(_validate_public_node_ips),
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=PUBLIC_BUCKETS,
        description="No bucket is readable by the public (prevention enforced, no allUsers, no public ACL or policy).",
        validate=_outside_development(_validate_public_buckets),
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(requirePublicAccessPrevention=_REQUIRE_PREVENTION),
    ),
    ResourceValidationPolicy(
        name=OPEN_INGRESS,
        description="No firewall or security group admits 0.0.0.0/0 (NAT and health checks need no such rule).",
        validate=_validate_open_ingress,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema(
            allowedPublicPorts={"type": "array", "items": {"type": "integer"}, "default": [],
                                "description": "Ports that may be open to the world (e.g. 443 for a public endpoint)"},
        ),
    ),
    ResourceValidationPolicy(
        name=CONTROL_PLANE,
        description="The Kubernetes API endpoint is private or limited to known networks.",
        validate=_outside_development(_validate_control_plane),
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=EXPOSURE_ON_DEVELOPMENT,
        description=f"On stacks tagged {ENVIRONMENT_TAG}={DEVELOPMENT}: the public-node-IP, public-bucket and "
                    "open-API-endpoint rules, reported without blocking.",
        validate=_validate_exposure_on_development,
        enforcement_level=EnforcementLevel.ADVISORY,
        config_schema=schema(requirePublicAccessPrevention=_REQUIRE_PREVENTION),
    ),
    ResourceValidationPolicy(
        name=IMDSV2,
        description="AWS nodes require IMDSv2 (httpTokens=required).",
        validate=_validate_imdsv2,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=WORKLOAD_IDENTITY,
        description="Pods get their own cloud identity (GKE Workload Identity, EKS IRSA or Pod Identity).",
        validate=_validate_workload_identity,
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
    ResourceValidationPolicy(
        name=SHIELDED,
        description="GKE and TPU nodes boot with Shielded VM secure boot where available.",
        validate=_validate_shielded,
        enforcement_level=EnforcementLevel.ADVISORY,
    ),
]
