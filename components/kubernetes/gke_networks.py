"""GKE multi-networking objects that let pods use an A3 node's GPUDirect NICs.

A GPUDirect node pool attaches extra VPC subnets to every node (`additional_node_network_configs`),
but pods see only the default network until each of those subnets is declared in the cluster:
one `GKENetworkParamSet` (which VPC and subnet, and how the NIC is handed to the pod) and one
`Network` of type Device that points at it. A training pod then lists the Networks it wants in
its `networking.gke.io/interfaces` annotation.

The Network names are the ones Google's GPUDirect guides and NCCL test manifests use, so those
manifests work unchanged on a stack built here:
- A3 High (GPUDirect-TCPX): `vpc1`..`vpc4`, deviceMode NetDevice, pod interfaces eth1..eth4.
- A3 Mega (GPUDirect-TCPXO): `vpc1`..`vpc8`, deviceMode NetDevice, eth1..eth8.
- A3 Ultra (GPUDirect RDMA): `gvnic-1` (the second gVNIC, NetDevice, eth1) and `rdma-0`..`rdma-7`
  (one per CX-7 NIC, deviceMode RDMA, eth2..eth9).

This module declares nothing itself: AcceleratorStack declares the objects; this holds their
typed description, the per-fabric naming, the checks, and the pod annotation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, get_args

import pulumi

from accel.components.kubernetes.names import dns_label_problem
from accel.policies.plan import GpuFabric

GKE_NETWORKING_API = "networking.gke.io/v1"
GKE_NETWORKING_GROUP = "networking.gke.io"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
# The pod's primary interface and the name GKE gives the cluster's own network.
DEFAULT_INTERFACE = "eth0"
DEFAULT_NETWORK = "default"

# GKENetworkParamSet.spec.deviceMode values the GPUDirect guides use: TCPX/TCPXO NICs and the
# A3 Ultra second gVNIC are NetDevice; A3 Ultra CX-7 NICs are RDMA.
NET_DEVICE = "NetDevice"
RDMA_DEVICE = "RDMA"
DEVICE_MODES = (NET_DEVICE, RDMA_DEVICE)

GPU_FABRICS: tuple[str, ...] = get_args(GpuFabric)
# Networks per fabric whose count is fixed by the machine (GPU NICs per node).
TCP_FABRIC_NETWORKS = {"gpudirect-tcpx": 4, "gpudirect-tcpxo": 8}
GPUDIRECT_FABRICS = (*TCP_FABRIC_NETWORKS, "rdma")


class NodeNetwork(Protocol):
    """An additional node network: accel.components.gcp.network.ExtraNetworkRef has this shape."""

    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]


@dataclass(frozen=True)
class GkeNetworkAttachment:
    """One additional node network made visible to pods: a GKENetworkParamSet + a Network, both `name`."""

    name: str                        # the Network (and GKENetworkParamSet) name pods reference
    vpc: pulumi.Input[str]           # VPC network name
    subnet: pulumi.Input[str]        # subnet name in that VPC
    device_mode: str = NET_DEVICE    # NetDevice or RDMA


def gpudirect_attachments(fabric: str, node_networks: Sequence[NodeNetwork]) -> list[GkeNetworkAttachment]:
    """The attachments a GPUDirect pool's extra networks need, named as Google's guides name them.

    `node_networks` is GcpNetwork.extra_networks, in its order: for RDMA the gVNIC network comes
    first, then one RDMA subnet per GPU NIC. Other fabrics attach nothing.
    """
    if fabric in TCP_FABRIC_NETWORKS:
        return [GkeNetworkAttachment(f"vpc{i + 1}", ref.network, ref.subnetwork, NET_DEVICE)
                for i, ref in enumerate(node_networks)]
    if fabric == "rdma":
        if not node_networks:
            return []
        gvnic, *rdma = node_networks
        return [GkeNetworkAttachment("gvnic-1", gvnic.network, gvnic.subnetwork, NET_DEVICE),
                *(GkeNetworkAttachment(f"rdma-{i}", ref.network, ref.subnetwork, RDMA_DEVICE)
                  for i, ref in enumerate(rdma))]
    return []


def check_gke_networks(fabric: str, attachments: Sequence[GkeNetworkAttachment]) -> None:
    """Raise ValueError naming the field, the value and what is allowed; silent when all is well."""
    if fabric not in GPU_FABRICS:
        raise ValueError(f"gpu_fabric: {fabric!r} is not a GPU fabric; allowed: {', '.join(GPU_FABRICS)}")
    for index, attachment in enumerate(attachments):
        if not isinstance(attachment, GkeNetworkAttachment):
            raise ValueError(f"gke_networks[{index}]: expected a GkeNetworkAttachment, "
                             f"got {type(attachment).__name__}")
        where = f"gke_networks[{index}]"
        if (problem := dns_label_problem(f"{where}.name", attachment.name)) is not None:
            raise ValueError(problem)
        if attachment.name == DEFAULT_NETWORK:
            raise ValueError(f"{where}.name: {DEFAULT_NETWORK!r} is the pod's primary network in GKE; "
                             "choose another name")
        if attachment.device_mode not in DEVICE_MODES:
            raise ValueError(f"{where}.device_mode: {attachment.device_mode!r} is not a GPUDirect device "
                             f"mode; allowed: {', '.join(DEVICE_MODES)}")
        for field_name in ("vpc", "subnet"):
            value = getattr(attachment, field_name)
            if value is None or (isinstance(value, str) and not value.strip()):
                raise ValueError(f"{where}.{field_name}: {value!r}: name the "
                                 f"{'VPC network' if field_name == 'vpc' else 'subnet'} the node pool attaches")
    names = [a.name for a in attachments]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"gke_networks: names must be unique (they are cluster-scoped); repeated: "
                         f"{', '.join(repeated)}")
    _check_fabric(fabric, attachments)


def _check_fabric(fabric: str, attachments: Sequence[GkeNetworkAttachment]) -> None:
    modes = [a.device_mode for a in attachments]
    if fabric not in GPUDIRECT_FABRICS:
        if attachments:
            raise ValueError(f"gke_networks: {len(attachments)} network(s) given, but gpu_fabric is {fabric!r}; "
                             f"GKE network objects are for the GPUDirect fabrics {', '.join(GPUDIRECT_FABRICS)}")
        return
    if not attachments:
        raise ValueError(f"gke_networks: none given, but gpu_fabric {fabric!r} puts the GPU NICs on extra "
                         "VPCs that pods reach only through GKE networks; pass them (gpudirect_attachments "
                         "over GcpNetwork.extra_networks)")
    if fabric in TCP_FABRIC_NETWORKS:
        wanted = TCP_FABRIC_NETWORKS[fabric]
        if len(attachments) != wanted:
            raise ValueError(f"gke_networks: {len(attachments)} network(s); {fabric} needs exactly {wanted}, "
                             "one per GPU NIC VPC (pass GcpNetwork.extra_networks of the same GPU pool)")
        if any(mode != NET_DEVICE for mode in modes):
            raise ValueError(f"gke_networks: {fabric} NICs are handed to pods as {NET_DEVICE}; got {modes}")
        return
    if RDMA_DEVICE not in modes:
        raise ValueError(f"gke_networks: {len(attachments)} network(s) and none in {RDMA_DEVICE} mode; rdma "
                         f"needs one {RDMA_DEVICE} network per GPU NIC (plus the second gVNIC as {NET_DEVICE})")


def pod_network_annotations(attachments: Sequence[GkeNetworkAttachment]) -> dict[str, str]:
    """The annotations a training pod carries to get every attached NIC: eth0 default, then eth1.. in order.

    Empty when nothing is attached. The interface order matches the NCCL settings Google documents
    (TCPX(O) NICs on eth1..; A3 Ultra gVNIC on eth1 and RDMA NICs on eth2..eth9).
    """
    if not attachments:
        return {}
    interfaces = [{"interfaceName": DEFAULT_INTERFACE, "network": DEFAULT_NETWORK}]
    interfaces += [{"interfaceName": f"eth{i + 1}", "network": a.name} for i, a in enumerate(attachments)]
    return {
        DEFAULT_INTERFACE_ANNOTATION: DEFAULT_INTERFACE,
        INTERFACES_ANNOTATION: json.dumps(interfaces, separators=(",", ":")),
    }
