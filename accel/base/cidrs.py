"""Address ranges: the documentation ranges no allowlist may use, and how many addresses a node takes
from each range (address capacity: the rule every network component sizes and checks its ranges by).

RFC 5737 reserves 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 (TEST-NET-1..3) and RFC 3849
reserves 2001:db8::/32 for examples in documentation; they are never routed on the internet. An
allowlist made of them locks everyone out of the endpoint (a copied example, not a user's range).
Standard library only.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from accel.base.mappings import without_none

DOCUMENTATION_RANGES = {
    "192.0.2.0/24": "RFC 5737 TEST-NET-1",
    "198.51.100.0/24": "RFC 5737 TEST-NET-2",
    "203.0.113.0/24": "RFC 5737 TEST-NET-3",
    "2001:db8::/32": "RFC 3849 IPv6 documentation prefix",
}


def documentation_range(cidr: str) -> str | None:
    """'RFC 5737 TEST-NET-3' when `cidr` lies inside a documentation range; None otherwise (or unparsable)."""
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except (TypeError, ValueError):
        return None
    for reserved, name in DOCUMENTATION_RANGES.items():
        block = ipaddress.ip_network(reserved)
        if network.version == block.version and network.subnet_of(block):  # type: ignore[arg-type]
            return f"{name} ({reserved})"
    return None


def documentation_range_problem(cidr: str) -> str | None:
    """The message for an allowlist entry that is a documentation range, or None."""
    reserved = documentation_range(cidr)
    if reserved is None:
        return None
    return (f"{cidr} is in {reserved}, reserved for documentation and never routed: no client could reach "
            "the endpoint; give your own office/VPN/CI egress ranges")


# ------------------------------------------------------------------------------ address capacity
# The one place that says how many addresses a node takes from each range, and whether a range holds
# the largest node count a stack can reach. Components size their ranges with these functions and
# refuse a range that cannot hold its fleet; tests/test_address_capacity.py mutates each case.
#
# Google Cloud:
# - A subnet's primary range loses 4 addresses (network, gateway, second-to-last, broadcast): VPC docs,
#   "Subnets: Unusable addresses in IPv4 subnet ranges" (cloud.google.com/vpc/docs/subnets), 2026-11-26.
#   Each node takes one address in the node subnet and one in each additional node network's subnet
#   (GKE "Maximize GPU network bandwidth": one NIC per additional network).
# - GKE gives every node a pod block of the smallest power of two holding twice its maximum Pods:
#   the page's table: 65-110 Pods (110 is the Standard default) -> /24, 33-64 -> /25, 17-32 -> /26,
#   9-16 -> /27, 8 -> /28 ("The block always contains at least twice as many addresses as the maximum
#   number of Pods per node").
#   "Node creation is limited by the number of available addresses in the Pod address range": GKE
#   "Configure maximum Pods per node" (cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr)
#   and "IP address management" / alias IP ranges (cloud.google.com/kubernetes-engine/docs/concepts/alias-ips),
#   read 2026-11-26.
# AWS:
# - A subnet loses 5 addresses (first four and the last): Amazon VPC User Guide, "Subnet CIDR blocks".
#   EKS asks for free addresses in every cluster subnet for its own network interfaces ("at least six,
#   we recommend 16": EKS User Guide, "VPC and subnet requirements"), so 16 more are kept aside.
# - The VPC CNI gives every non-hostNetwork pod a VPC address and keeps a warm pool per node
#   (aws/amazon-vpc-cni-k8s, page eni-and-ip-target.md of its docs, read 2026-11-26): the default WARM_ENI_TARGET=1
#   keeps "a full ENI" of free addresses, so a node with any pod holds two whole ENIs (p3dn.24xlarge in
#   that table: 3 pods -> 98 secondary addresses); with WARM_IP_TARGET + MINIMUM_IP_TARGET it holds
#   max(MINIMUM_IP_TARGET, pods + WARM_IP_TARGET) secondary addresses plus the ENI's primary.
#   ENABLE_PREFIX_DELEGATION hands out /28 prefixes (16 addresses) instead, which also need free
#   contiguous /28s in the subnet; accel keeps secondary-IP mode with the warm/minimum targets.

GCP_RESERVED_PER_SUBNET = 4
AWS_RESERVED_PER_SUBNET = 5
EKS_FREE_PER_SUBNET = 16
GKE_DEFAULT_MAX_PODS_PER_NODE = 110
WARM_PREFIX_TARGET_DEFAULT = 1   # the VPC CNI's default in prefix mode


def usable_addresses(cidr: str, reserved: int) -> int:
    """Addresses of `cidr` left for nodes after the cloud's reserved ones."""
    return max(0, ipaddress.ip_network(cidr, strict=False).num_addresses - reserved)


def gke_pod_block(max_pods_per_node: int = GKE_DEFAULT_MAX_PODS_PER_NODE) -> int:
    """Addresses of the pod range GKE gives each node: the smallest power of two >= 2 x max Pods (>= 16)."""
    if not 8 <= max_pods_per_node <= 256:
        raise ValueError(f"max Pods per node must be between 8 and 256 (got {max_pods_per_node})")
    block = 16
    while block < 2 * max_pods_per_node:
        block *= 2
    return block


def gke_pod_range_nodes(cidr: str, max_pods_per_node: int = GKE_DEFAULT_MAX_PODS_PER_NODE) -> int:
    """Nodes a GKE pod (cluster secondary) range can hold."""
    return ipaddress.ip_network(cidr, strict=False).num_addresses // gke_pod_block(max_pods_per_node)


def prefix_for(addresses: int, *, reserved: int = 0, largest: int = 8) -> int:
    """The longest IPv4 prefix (the smallest block) with at least `addresses` usable after `reserved`."""
    for prefix in range(32, largest - 1, -1):
        if 2 ** (32 - prefix) - reserved >= addresses:
            return prefix
    raise ValueError(f"{addresses} addresses need more than a /{largest}")


def gke_pod_range_prefix(nodes: int, max_pods_per_node: int = GKE_DEFAULT_MAX_PODS_PER_NODE) -> int:
    """The prefix of the smallest GKE pod range holding `nodes` nodes."""
    return prefix_for(nodes * gke_pod_block(max_pods_per_node))


@dataclass(frozen=True)
class VpcCniSettings:
    """The aws-node (ipamd) variables that decide how many addresses each node holds."""

    warm_eni_target: int | None = 1          # the CNI's default
    warm_ip_target: int | None = None
    minimum_ip_target: int | None = None
    prefix_delegation: bool = False

    def env(self) -> dict[str, str]:
        """The add-on's `env` configuration values (strings, as the EKS add-on schema takes them)."""
        targets = without_none({"WARM_ENI_TARGET": self.warm_eni_target, "WARM_IP_TARGET": self.warm_ip_target,
                                "MINIMUM_IP_TARGET": self.minimum_ip_target})
        return {"ENABLE_PREFIX_DELEGATION": "true" if self.prefix_delegation else "false",
                **{key: str(value) for key, value in targets.items()}}


def vpc_cni_addresses_per_node(settings: VpcCniSettings, *, pods: int, ips_per_eni: int, max_enis: int) -> int:
    """VPC addresses one node holds with `pods` non-hostNetwork pods (primaries of attached ENIs included)."""
    secondary_per_eni = ips_per_eni - 1
    if settings.prefix_delegation:
        # /28 prefixes (16 addresses) on the primary ENI: with IP targets, enough prefixes for
        # max(MINIMUM_IP_TARGET, pods + WARM_IP_TARGET); otherwise the pods' prefixes plus
        # WARM_PREFIX_TARGET (default 1) free ones. Plus the ENI's primary address.
        if settings.warm_ip_target is not None or settings.minimum_ip_target is not None:
            wanted = max(settings.minimum_ip_target or 0, pods + (settings.warm_ip_target or 0))
            prefixes = max(1, -(-wanted // 16))
        else:
            prefixes = -(-pods // 16) + WARM_PREFIX_TARGET_DEFAULT
        return 1 + 16 * prefixes
    if settings.warm_ip_target is not None or settings.minimum_ip_target is not None:
        secondary = max(settings.minimum_ip_target or 0, pods + (settings.warm_ip_target or 0))
        enis = max(1, -(-secondary // secondary_per_eni))
    else:
        # WARM_ENI_TARGET: the ENIs the pods need, plus that many whole free ENIs.
        enis = min(max_enis, max(1, -(-pods // secondary_per_eni)) + (settings.warm_eni_target or 0))
        if pods == 0:
            enis = min(max_enis, max(1, settings.warm_eni_target or 0))
        secondary = enis * secondary_per_eni
    return enis + min(secondary, enis * secondary_per_eni)


@dataclass(frozen=True)
class RangeNeed:
    """One address range and what the stack needs of it, in one unit (nodes or addresses)."""

    field: str                 # the argument or config key that sets the range
    cidr: str
    holds: int                 # what the range holds, in `unit`
    needs: int                 # the largest the stack can reach, in `unit`
    unit: str                  # "nodes" or "addresses"
    why: str                   # how `needs` was counted
    fix: str                   # what to change

    def problem(self) -> str | None:
        if self.holds >= self.needs:
            return None
        return (f"{self.field} {self.cidr} holds {self.holds:,} {self.unit} but the stack can reach "
                f"{self.needs:,} ({self.why}); {self.fix}")


def capacity_problems(needs: list[RangeNeed]) -> list[str]:
    """Every range that cannot hold what the stack can reach, as messages naming range, need and fix."""
    return [p for p in (need.problem() for need in needs) if p]
