"""GpuNodeGroup: an EKS managed node group of whole GPU machines, as the Plan's GpuPool says.

What it builds:
- an EC2 launch template that requires IMDSv2, encrypts the root volume, tags instances, and
  declares the network interfaces itself: with EFA one interface per network card (card 0 /
  device 0 of type "efa", every further card device 1 of type "efa" or, on the P5 family,
  "efa-only"), and a cluster placement group, all in one explicit zone;
- capacity: ON_DEMAND, SPOT (the primary type plus same-GPU-count alternates), ON_DEMAND aimed
  at an On-Demand Capacity Reservation, or CAPACITY_BLOCK with the launch template's
  `instance_market_options.market_type = "capacity-block"` and the reservation as target;
- the EKS NVIDIA AL2023 AMI type, the `nvidia.com/gpu=true:NoSchedule` taint, labels that say
  what the node is, and scaling from zero up to the plan's node count;
- on a Capacity Block, AWS's procedure for managed node groups: created at size 0, and two scheduled
  actions on the group's Auto Scaling group, scale out to the block's size at its start and back to 0
  before EC2 terminates its instances (policies/cloud/capacity_blocks.py and .yaml, with the sources);
- with FSx for Lustre, the Lustre client installed at boot (the AL2023 EKS AMIs do not ship it).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from accel.base.errors import invalid_arg
from accel.components.aws.common import resource_tags, template_version
from accel.components.tags import ResourceTags
from accel.components.kubernetes.names import LABEL_KEY, LABEL_VALUE
from accel.policies import hardware
from accel.policies.cloud.capacity_blocks import CapacityBlockWindow
from accel.policies.cloud.reservation_names import AWS_RESERVATION_ID
from accel.policies.hardware import AwsGpuInstance
from accel.policies.plan import Capacity, GpuPool
from accel.policies.selection.pools import gpu_pool, pool_capacity

_ARGS = "GpuNodeGroupArgs"
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
# Arm (Grace) GPU instances, p6e-gb200: the EKS AMI type of the AL2023 ARM NVIDIA variant the EKS UltraServer
# guide asks for (name as the EKS API's AMIType enum spells it; the provider SDK takes any string).
GPU_AMI_TYPES = {"x86_64": GPU_AMI_TYPE, "arm64": "AL2023_ARM_64_NVIDIA"}
CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "spot": "SPOT", "reservation": "ON_DEMAND",
                  "capacity-block": "CAPACITY_BLOCK"}
RESERVED = ("reservation", "capacity-block")


def gpu_taint() -> dict[str, str]:
    """The EKS GPU node taint (key from the hardware facts table; the EKS AMI docs' value `true`)."""
    names = hardware.current().kubernetes
    return {"key": names.gpu_taint_key, "value": names.eks_gpu_taint_value, "effect": "NO_SCHEDULE"}

# AL2023 nodeadm: stripe the instance-store NVMe disks into one RAID0 volume for containerd and
# the kubelet, so image layers and scratch data land on local NVMe instead of the EBS root.
_LOCAL_NVME_PART = """Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: RAID0
"""
# The FSx CSI driver's node plugin mounts with the host's Lustre kernel client, which the AL2023 EKS AMIs
# (the NVIDIA one included) do not ship: EKS's own FSx tuning guide installs it from node user data
# (docs.aws.amazon.com/eks/latest/userguide/fsx-csi-tuning-non-efa.html, "Install Lustre client" for AL2023),
# and the EKS AMI maintainers declined to bake it in, pointing to user data (awslabs/amazon-eks-ami#2696).
# The AL2023 package is `lustre-client` (FSx for Lustre User Guide, "Installing the Lustre client").
_LUSTRE_CLIENT_PART = """Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
set -euo pipefail
dnf install -y lustre-client
"""


def node_user_data(local_nvme_raid0: bool, lustre_client: bool) -> str | None:
    """The launch template's MIME multi-part user data (EKS merges its own NodeConfig part), base64."""
    parts = [part for wanted, part in ((local_nvme_raid0, _LOCAL_NVME_PART), (lustre_client, _LUSTRE_CLIENT_PART))
             if wanted]
    if not parts:
        return None
    body = "".join(f"--ACCEL\n{part}\n" for part in parts)
    text = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="ACCEL"\n\n{body}--ACCEL--\n'
    return base64.b64encode(text.encode()).decode()


@dataclass(frozen=True)
class GpuNodeGroupArgs:
    pool: GpuPool
    capacity: Capacity
    cluster_name: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    subnet_ids: Mapping[str, pulumi.Input[str]] = field(metadata={"doc": "Private subnet per zone"})
    security_group_ids: Sequence[pulumi.Input[str]]
    tags: ResourceTags
    availability_zone: str | None = None     # required for EFA, placement groups and reservations
    accelerator: str | None = None           # label value; default: from the instance type
    kubernetes_version: str | None = None    # default: the cluster's version
    disk_size_gib: int = 512
    start_nodes: int | None = None           # desired size at creation; default: pool.nodes
    labels: Mapping[str, str] = field(default_factory=dict)
    imds_hop_limit: int = 1
    local_nvme_raid0: bool = True
    lustre_client: bool = False              # install the Lustre client at boot (FSx for Lustre mounts)
    node_repair: bool = True
    # Capacity blocks: the block's window; the group is scaled out at its start and in before its end.
    capacity_block_window: CapacityBlockWindow | None = None
    depends_on: Sequence[pulumi.Resource] = ()  # e.g. EksCluster.compute_dependencies

    def __post_init__(self) -> None:
        pool = self.pool if isinstance(self.pool, GpuPool) else _coerce(GpuPool, self.pool, "pool")
        capacity = self.capacity if isinstance(self.capacity, Capacity) else _coerce(Capacity, self.capacity,
                                                                                     "capacity")
        object.__setattr__(self, "pool", pool)
        object.__setattr__(self, "capacity", capacity)
        if pool.pools > 1:
            raise invalid_arg(_ARGS, "pool.nodes_per_pool", pool.nodes_per_pool,
                              f"the fleet is {pool.pools} node groups; build one GpuNodeGroup per GpuPool.split() "
                              "(TrainingCluster does)")
        types = self._check_instance_types()
        self._check_fabric(types)
        self._check_capacity()
        self._check_placement()
        if not isinstance(self.disk_size_gib, int) or not 100 <= self.disk_size_gib <= 16384:
            raise invalid_arg(_ARGS, "disk_size_gib", self.disk_size_gib,
                          "between 100 and 16384 GiB (GPU images are tens of GB)")
        if self.start_nodes is not None and not 0 <= self.start_nodes <= pool.nodes:
            raise invalid_arg(_ARGS, "start_nodes", self.start_nodes, f"between 0 and pool.nodes ({pool.nodes})")
        if self.imds_hop_limit not in (1, 2):
            raise invalid_arg(_ARGS, "imds_hop_limit", self.imds_hop_limit,
                          "1 (pods cannot reach instance metadata) or 2 (they can)")
        for key, value in dict(self.labels).items():
            if not LABEL_KEY.fullmatch(key) or not isinstance(value, str) or not LABEL_VALUE.fullmatch(value):
                raise invalid_arg(_ARGS, f"labels[{key!r}]", value, "Kubernetes label keys/values (values: at most 63 "
                                  "letters, digits, '-', '_' and '.', starting and ending with a letter or digit)")
        if not self.security_group_ids or isinstance(self.security_group_ids, str):
            raise invalid_arg(_ARGS, "security_group_ids", self.security_group_ids,
                          "give the node security group(s) as a list")
        if not isinstance(self.tags, ResourceTags):
            raise invalid_arg(_ARGS, "tags", self.tags, "expected accel.components.tags.ResourceTags")

    # -- validation -------------------------------------------------------------------------

    @property
    def instance_types(self) -> list[str]:
        return [self.pool.machine_type, *self.pool.alternate_machine_types]

    def _check_instance_types(self) -> list[AwsGpuInstance]:
        names = self.instance_types
        table = hardware.current()
        if len(set(names)) != len(names):
            raise invalid_arg(_ARGS, "pool.alternate_machine_types", self.pool.alternate_machine_types,
                          "alternates must differ from each other and from pool.machine_type")
        found = []
        for i, instance in enumerate(names):
            facts = table.aws_gpu_instances.get(instance)
            where = "pool.machine_type" if i == 0 else f"pool.alternate_machine_types[{i - 1}]"
            if facts is None:
                raise invalid_arg(_ARGS, where, instance,
                              f"known GPU instance types: {', '.join(sorted(table.aws_gpu_instances))}")
            if facts.gpus != self.pool.gpus_per_node:
                raise invalid_arg(_ARGS, where, instance,
                              f"it has {facts.gpus} GPUs but pool.gpus_per_node is {self.pool.gpus_per_node}; "
                              "every type in a node group must have the same GPU count")
            if found and not facts.can_stand_in_for(found[0], table.chips):
                raise invalid_arg(_ARGS, where, instance,
                              f"an alternate needs the same GPU as {names[0]} ({found[0].accelerator}) with at "
                              f"least its memory; {instance} has {facts.accelerator}")
            found.append(facts)
        return found

    def _check_fabric(self, types: list[AwsGpuInstance]) -> None:
        pool = self.pool
        if pool.fabric not in ("none", "efa"):
            raise invalid_arg(_ARGS, "pool.fabric", pool.fabric, "on AWS: 'efa' or 'none' (the others are GCP fabrics)")
        if pool.fabric == "none":
            if pool.efa_interfaces:
                raise invalid_arg(_ARGS, "pool.efa_interfaces", pool.efa_interfaces, "must be 0 when pool.fabric is 'none'")
            return
        if pool.efa_interfaces < 1:
            raise invalid_arg(_ARGS, "pool.efa_interfaces", pool.efa_interfaces,
                          "EFA needs at least one interface: one per network card ("
                          + ", ".join(f"{t.name} {t.efa_cards}" for t in types if t.efa_cards) + ")")
        for t in types:
            if t.efa_cards == 0:
                raise invalid_arg(_ARGS, "pool.fabric", "efa", f"{t.name} does not support EFA")
            if pool.efa_interfaces > t.efa_cards:
                raise invalid_arg(_ARGS, "pool.efa_interfaces", pool.efa_interfaces,
                              f"{t.name} has {t.efa_cards} EFA-capable network card(s); one interface per card")
        if len({t.efa_first_card for t in types}) > 1:
            # One launch template serves every type of the group: its interfaces start on one card for all.
            raise invalid_arg(_ARGS, "pool.alternate_machine_types", pool.alternate_machine_types,
                              "EFA alternates must put their first EFA interface on the same network card as "
                              f"{pool.machine_type} (card 0 of one is ENA only: policies/hardware/facts.toml efa_first_card)")

    def _check_capacity(self) -> None:
        capacity, pool = self.capacity, self.pool
        if capacity.provisioning not in CAPACITY_TYPES:
            raise invalid_arg(_ARGS, "capacity.provisioning", capacity.provisioning,
                          f"on AWS: {', '.join(CAPACITY_TYPES)} (flex-start and queued are GCP options)")
        if capacity.provisioning in RESERVED:
            if not capacity.reservation or not AWS_RESERVATION_ID.fullmatch(capacity.reservation):
                raise invalid_arg(_ARGS, "capacity.reservation", capacity.reservation,
                              f"{capacity.provisioning} needs the capacity reservation id, e.g. cr-0123456789abcdef0")
            if pool.alternate_machine_types:
                raise invalid_arg(_ARGS, "pool.alternate_machine_types", pool.alternate_machine_types,
                              f"a {capacity.provisioning} holds one instance type ({pool.machine_type}); no alternates")
        elif capacity.reservation:
            raise invalid_arg(_ARGS, "capacity.reservation", capacity.reservation,
                          "only used with provisioning 'reservation' or 'capacity-block', "
                          f"not {capacity.provisioning!r}")
        window = self.capacity_block_window
        if capacity.provisioning == "capacity-block":
            if not isinstance(window, CapacityBlockWindow):
                raise invalid_arg(_ARGS, "capacity_block_window", window,
                                  "a CapacityBlockWindow(start, end): a capacity block's instances run only in its "
                                  "window, and the node group is scaled out at its start and in before its end "
                                  "(docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)")
            if self.start_nodes not in (None, 0):
                raise invalid_arg(_ARGS, "start_nodes", self.start_nodes,
                                  "0 (or unset) on a capacity block: the group starts at size 0 and the scheduled "
                                  "scale-out at the block's start brings the nodes (EKS capacity-blocks-mng.html)")
        elif window is not None:
            raise invalid_arg(_ARGS, "capacity_block_window", window,
                              f"only for provisioning 'capacity-block', not {capacity.provisioning!r}")

    def needs_single_zone(self) -> str | None:
        return single_zone_reason(self.pool, self.capacity)

    def _check_placement(self) -> None:
        zones = dict(self.subnet_ids)
        if not zones:
            raise invalid_arg(_ARGS, "subnet_ids", zones,
                          "give the private subnet id per zone, e.g. AwsNetwork.private_subnet_ids")
        reason = self.needs_single_zone()
        if self.availability_zone is None:
            if reason:
                raise invalid_arg(_ARGS, "availability_zone", None, f"{reason}: name the zone (the plan's zones[0])")
        elif self.availability_zone not in zones:
            raise invalid_arg(_ARGS, "availability_zone", self.availability_zone,
                          f"no private subnet in that zone; zones with subnets: {', '.join(zones)}")

    # -- wiring helpers ---------------------------------------------------------------------

    @classmethod
    def from_gpus(cls, accelerator: str, gpus: int, *, cluster_name: pulumi.Input[str], node_role_arn: pulumi.Input[str],
                  subnet_ids: Mapping[str, pulumi.Input[str]], security_group_ids: Sequence[pulumi.Input[str]],
                  tags: ResourceTags, machine_type: str | None = None, provisioning: str = "on-demand",
                  reservation: str | None = None, **rest: Any) -> "GpuNodeGroupArgs":
        """By hand: `gpus` GPUs of `accelerator` (e.g. h100-80gb) in whole instances; the instance type (unless
        given) and GPUs per node follow from the hardware table. No EFA: for it, plan the stack and use `for_plan`."""
        return cls(pool=gpu_pool(accelerator, gpus, cloud="aws", machine_type=machine_type, component=_ARGS),
                   capacity=pool_capacity(provisioning, reservation, component=_ARGS), cluster_name=cluster_name,
                   node_role_arn=node_role_arn, subnet_ids=subnet_ids, security_group_ids=security_group_ids,
                   tags=tags, **rest)

    @classmethod
    def for_plan(cls, plan, *, cluster, network, tags: ResourceTags, **overrides) -> "GpuNodeGroupArgs":
        """Args for a GPU Plan's pool on an EksCluster in an AwsNetwork."""
        if plan.gpu is None:
            raise invalid_arg(_ARGS, "plan.family", plan.family, "a GPU node group needs a GPU plan (plan.gpu)")
        pool, capacity = plan.gpu, plan.capacity
        single_zone = single_zone_reason(pool, capacity) is not None
        values: dict[str, Any] = dict(
            pool=pool, capacity=capacity, cluster_name=cluster.name, node_role_arn=cluster.node_role_arn,
            subnet_ids=network.private_subnet_ids, security_group_ids=[network.node_security_group_id],
            tags=tags, availability_zone=plan.zones[0] if single_zone else None,
            accelerator=pool.accelerator, kubernetes_version=cluster.kubernetes_version,
            depends_on=list(cluster.compute_dependencies),
            lustre_client=plan.storage.filesystem == "fsx-lustre",
        )
        values.update(overrides)
        return cls(**values)


def single_zone_reason(pool: GpuPool, capacity: Capacity) -> str | None:
    """Why a group must live in one zone, or None."""
    if pool.fabric == "efa":
        return "EFA nodes share a cluster placement group"
    if pool.compact_placement:
        return "a cluster placement group lives in one zone"
    if capacity.provisioning in RESERVED:
        return f"a {capacity.provisioning} belongs to one zone"
    return None


def _coerce(model, value, field_name: str):
    try:
        return model.model_validate(value)
    except Exception as error:  # pydantic ValidationError; re-raise with the field named
        raise invalid_arg(_ARGS, field_name, value, f"expected a {model.__name__} ({error})") from None


def network_interfaces(efa_interfaces: int, efa_only_secondaries: bool,
                       security_group_ids: Sequence[pulumi.Input[str]], secondary_device_index: int = 1,
                       first_efa_card: int = 0) -> list[dict[str, Any]]:
    """Launch template interfaces: one per EFA network card, or a single ENA interface. Card 0 device 0 is the
    primary (EFA with ENA: the primary may not be EFA-only); each further card carries one EFA interface at
    `secondary_device_index` (1 in the EC2 guide's P5 section, 0 in its general multi-card rule: P6). Where card 0
    cannot carry EFA (`first_efa_card` 1: p6-b300) the primary is a plain ENA interface (EC2 API reference,
    LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.InterfaceType: "If you are not creating an EFA, specify
    interface or omit this parameter") and the EFA interfaces take cards 1..efa_interfaces, every one a secondary."""
    groups = list(security_group_ids)
    if efa_interfaces == 0:
        return [{"device_index": 0, "network_card_index": 0, "associate_public_ip_address": "false",
                 "delete_on_termination": "true", "security_groups": groups}]
    cards = range(first_efa_card, first_efa_card + efa_interfaces)   # the EFA interfaces' network cards
    primary: dict[str, Any] = {"device_index": 0, "network_card_index": 0,
                               "interface_type": "efa" if 0 in cards else "interface",
                               "delete_on_termination": "true", "security_groups": groups}
    if list(cards) == [0]:
        # EC2 never gives a public address to a multi-interface launch; with one interface, say so.
        primary["associate_public_ip_address"] = "false"
    secondary_type = "efa-only" if efa_only_secondaries else "efa"
    return [primary] + [
        {"device_index": secondary_device_index, "network_card_index": card, "interface_type": secondary_type,
         "delete_on_termination": "true", "security_groups": groups}
        for card in cards if card != 0
    ]


def _start_nodes(args: GpuNodeGroupArgs) -> int:
    """Desired size at creation. A Capacity Block's instances launch only while the block is active,
    and EKS's procedure for managed node groups with Capacity Blocks keeps the desired size at 0 until
    then (and at 0 for upgrades); scaling to the block's size at its start and back to 0 before its
    end is done by scheduled scaling on the node group's Auto Scaling group (docs.aws.amazon.com/eks/
    latest/userguide/capacity-blocks-mng.html). desiredSize is ignored after creation, so that
    scaling is never reverted by the next `pulumi up`."""
    if args.capacity.provisioning == "capacity-block":
        return 0
    return args.pool.nodes if args.start_nodes is None else args.start_nodes


def _autoscaling_group_name(resources) -> str:
    """The node group's Auto Scaling group, as EKS reports it (one per managed node group)."""
    return resources[0].autoscaling_groups[0].name


class GpuNodeGroup(pulumi.ComponentResource):
    """Launch template (+ placement group) + EKS managed node group for one GPU pool."""

    node_group_name: pulumi.Output[str]
    launch_template_id: pulumi.Output[str]
    placement_group_name: pulumi.Output[str] | None
    node_labels: dict[str, str]
    node_taints: list[dict[str, str]]
    capacity_type: str
    instance_types: list[str]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        if not isinstance(args, GpuNodeGroupArgs):
            raise invalid_arg(_ARGS, "args", type(args).__name__, "pass a GpuNodeGroupArgs")
        super().__init__("accel:aws:GpuNodeGroup", name, None, opts)
        import pulumi_aws as aws

        pool, capacity = args.pool, args.capacity
        facts = hardware.current().aws_gpu_instances.get(pool.machine_type)
        assert facts is not None  # the args validated every instance type
        provisioning = capacity.provisioning
        capacity_type = CAPACITY_TYPES[provisioning]
        tags = resource_tags(args.tags, name, **{"capacity": provisioning, "gpu-pool": name})
        child = pulumi.ResourceOptions(parent=self)

        placement_group = None
        # Reserved capacity is placed where it was reserved: AWS says a Capacity Block needs no cluster
        # placement group, and an existing ODCR cannot be moved into one (EC2 capacity-blocks-using.html,
        # cr-cpg.html). Only on-demand and spot fleets get a new cluster placement group.
        if (pool.fabric == "efa" or pool.compact_placement) and provisioning not in RESERVED:
            placement_group = aws.ec2.PlacementGroup(f"{name}-placement", strategy="cluster", tags=tags, opts=child)

        template_args: dict[str, Any] = dict(
            description=f"GPU nodes {name}: {', '.join(args.instance_types)} {capacity_type}",
            metadata_options={"http_endpoint": "enabled", "http_tokens": "required",
                              "http_put_response_hop_limit": args.imds_hop_limit},
            network_interfaces=network_interfaces(
                pool.efa_interfaces, all(hardware.current().aws_gpu_instances[t].efa_only_secondaries
                                        for t in args.instance_types),
                args.security_group_ids,
                hardware.current().aws_gpu_instances[pool.machine_type].efa_secondary_device_index,
                hardware.current().aws_gpu_instances[pool.machine_type].efa_first_card),
            block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {
                "volume_size": args.disk_size_gib, "volume_type": "gp3", "encrypted": "true",
                "delete_on_termination": "true"}}],
            tag_specifications=[{"resource_type": kind, "tags": tags}
                                for kind in ("instance", "volume", "network-interface")],
            update_default_version=True,
            tags=tags,
        )
        if placement_group is not None:
            template_args["placement"] = {"group_name": placement_group.name}
        user_data = node_user_data(args.local_nvme_raid0, args.lustre_client)
        if user_data is not None:
            template_args["user_data"] = user_data
        if provisioning in RESERVED:
            template_args["capacity_reservation_specification"] = {
                "capacity_reservation_target": {"capacity_reservation_id": capacity.reservation}}
        if provisioning == "capacity-block":
            # A capacity block is bought for one type; EKS reads it from the launch template.
            template_args["instance_market_options"] = {"market_type": "capacity-block"}
            template_args["instance_type"] = pool.machine_type
        template = aws.ec2.LaunchTemplate(f"{name}-template", **template_args, opts=child)

        zones = dict(args.subnet_ids)
        subnet_ids = [zones[args.availability_zone]] if args.availability_zone else list(zones.values())
        labels = self._labels(name, args, facts)
        start = _start_nodes(args)
        node_group = aws.eks.NodeGroup(
            f"{name}-nodes",
            cluster_name=args.cluster_name,
            node_role_arn=args.node_role_arn,
            subnet_ids=subnet_ids,
            ami_type=GPU_AMI_TYPES[hardware.current().aws_gpu_instances[args.pool.machine_type].arch],
            capacity_type=capacity_type,
            instance_types=None if provisioning == "capacity-block" else args.instance_types,
            version=args.kubernetes_version,
            scaling_config={"min_size": 0, "desired_size": start, "max_size": pool.nodes},
            launch_template={"id": template.id, "version": template.latest_version.apply(template_version)},
            labels=labels,
            taints=[gpu_taint()],
            # Scarce GPUs: replace nodes in place rather than surging extra capacity that may not exist.
            update_config={"max_unavailable": 1, "update_strategy": "MINIMAL"},
            node_repair_config={"enabled": True} if args.node_repair else None,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on),
                                        ignore_changes=["scalingConfig.desiredSize"]),
        )

        self.scheduled_actions = self._capacity_block_schedule(name, args, node_group)
        self.node_group_name = node_group.node_group_name
        self.launch_template_id = template.id
        self.placement_group_name = placement_group.name if placement_group is not None else None
        self.node_labels = labels
        self.node_taints = [gpu_taint()]
        self.capacity_type = capacity_type
        self.instance_types = args.instance_types
        self.register_outputs({
            "node_group_name": self.node_group_name,
            "launch_template_id": self.launch_template_id,
            "capacity_type": capacity_type,
            "instance_types": args.instance_types,
        })

    def _capacity_block_schedule(self, name: str, args: GpuNodeGroupArgs, node_group) -> list:
        """Scheduled actions on the node group's Auto Scaling group around the capacity block's window.

        EKS names the group's Auto Scaling group only once it exists (`resources[0].autoscaling_groups[0].name`),
        so the actions take that output and depend on the node group."""
        import pulumi_aws as aws

        window = args.capacity_block_window
        if window is None:
            return []
        group_name = node_group.resources.apply(_autoscaling_group_name)
        return [
            aws.autoscaling.Schedule(
                f"{name}-{action.role}",
                autoscaling_group_name=group_name,
                scheduled_action_name=f"{name}-{action.role}",
                start_time=action.start_time,
                min_size=action.min_size,
                max_size=action.max_size,
                desired_capacity=action.desired_capacity,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[node_group]),
            )
            for action in window.scaling(args.pool.nodes)
        ]

    @staticmethod
    def _labels(name: str, args: GpuNodeGroupArgs, facts: AwsGpuInstance) -> dict[str, str]:
        labels = {
            **args.tags.kubernetes_labels(),
            "accel.dev/node-role": "gpu",
            "accel.dev/gpu-pool": name[:63],
            "accel.dev/accelerator": args.accelerator or facts.accelerator,
            "accel.dev/capacity": args.capacity.provisioning,
            # The NVIDIA device plugin schedules on this label when Node Feature Discovery is absent.
            hardware.current().kubernetes.gpu_present_label: "true",
        }
        if args.pool.fabric == "efa":
            labels["accel.dev/efa"] = "true"
        labels.update(args.labels)
        return labels

