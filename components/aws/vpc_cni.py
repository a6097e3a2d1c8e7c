"""How the Amazon VPC CNI spends subnet addresses on a training cluster's nodes, and the settings accel gives it.

Each non-hostNetwork pod takes a VPC address, and ipamd keeps a warm pool per node. With the CNI's
default (WARM_ENI_TARGET=1) a p5.48xlarge with any pod holds both of its card-0 ENIs whole: 100
addresses per node, so 2,048 p5 nodes would need about 205k addresses, far more than a /16. accel sets
WARM_IP_TARGET and MINIMUM_IP_TARGET instead, as the CNI's docs advise for clusters whose subnets are
tight and whose pod churn is very low (a training node runs one long-lived pod): every GPU node then
holds its primary address plus MINIMUM_IP_TARGET (aws/amazon-vpc-cni-k8s, page eni-and-ip-target.md of its docs,
read 2026-11-26: "If you plan to run around 10 pods, ... set MINIMUM_IP_TARGET slightly higher than
that, like 12, and have WARM_IP_TARGET=2"; "only set WARM_IP_TARGET for small clusters, or clusters
with very low pod churn", because each change is an EC2 call). Prefix delegation
(ENABLE_PREFIX_DELEGATION) would take a /28 (16 addresses) per node at least and "can fail if IP
addresses are scattered throughout the subnet CIDR" (EKS User Guide, "Increase the available IP
addresses for your Amazon EKS node": subnets need contiguous /28 blocks), so it is left off. The
arithmetic lives in accel/base/cidrs.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from accel.base.cidrs import VpcCniSettings, vpc_cni_addresses_per_node
from accel.policies import hardware

# Pods that take a VPC address on a GPU node besides the workload's own: the NVIDIA device plugin
# and whatever the user adds (kube-proxy, aws-node, the EFA device plugin, eks-pod-identity-agent and
# the FSx CSI node run with hostNetwork). An estimate with headroom, not a count from a live node.
DAEMONSET_PODS_WITH_VPC_ADDRESSES = 4
WARM_IP_TARGET = 2
MINIMUM_IP_TARGET = 8   # the workload pod + DAEMONSET_PODS_WITH_VPC_ADDRESSES, with headroom of WARM_IP_TARGET + 1

TRAINING_VPC_CNI = VpcCniSettings(warm_eni_target=None, warm_ip_target=WARM_IP_TARGET,
                                  minimum_ip_target=MINIMUM_IP_TARGET)
DEFAULT_VPC_CNI = VpcCniSettings()  # what the add-on does when nobody configures it

def eni_limits(instance_type: str) -> tuple[int, int]:
    """(ENIs on network card 0, IPv4 addresses per ENI) of an instance type, from the hardware table. A type
    its [aws_eni_limits] does not list is counted as the table's smallest entry (more primaries per pod: an
    over-count, never an under-count)."""
    table = hardware.current().aws_eni_limits
    limit = table.get(instance_type) or min(table.values(), key=lambda e: (e.enis * e.ipv4_per_eni, e.ipv4_per_eni))
    return limit.enis, limit.ipv4_per_eni
# System nodes run the controllers (CoreDNS, Kueue, JobSet, CSI controllers, ...): counted at their
# instance type's full ENI capacity, the most they can ever hold.


@dataclass(frozen=True)
class NodeAddresses:
    """Addresses one node of an instance type holds under a CNI setting."""

    instance_type: str
    per_node: int
    why: str


def node_addresses(instance_type: str, *, pods: int, settings: VpcCniSettings = TRAINING_VPC_CNI,
                   extra_interface_addresses: int = 0) -> NodeAddresses:
    """One node's addresses: the CNI's (accel/base/cidrs.py) plus the primary address of every extra
    interface that has one (EFA interfaces of type `efa` past the primary; `efa-only` ones have none)."""
    enis, ips = eni_limits(instance_type)
    cni = vpc_cni_addresses_per_node(settings, pods=pods, ips_per_eni=ips, max_enis=enis)
    env = ", ".join(f"{k}={v}" for k, v in settings.env().items())
    extra = f" + {extra_interface_addresses} EFA interface address(es)" if extra_interface_addresses else ""
    return NodeAddresses(instance_type, cni + extra_interface_addresses,
                         f"{cni} per {instance_type} with {pods} pod(s) on VPC addresses ({env}){extra}")


def system_node_addresses(instance_type: str) -> int:
    """A system node at its ENI capacity (all its ENIs, every address). A type the table does not list is
    counted at the table's largest capacity: eni_limits' smallest entry, an over-count for a node holding a few
    pods, would be an under-count here for a type larger than it (m6i.16xlarge: 15 x 50)."""
    table = hardware.current().aws_eni_limits
    limit = table.get(instance_type) or max(table.values(), key=lambda e: e.enis * e.ipv4_per_eni)
    return limit.enis * limit.ipv4_per_eni
