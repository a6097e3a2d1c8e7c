"""Accelerator sanity: what the cloud would reject, or what would silently waste the chips.

TPU shapes come from policies/hardware/shapes.py and every machine fact (GPUs per machine type, TPU
hosts, labels, taints) from the hardware facts table, accel.policies.hardware: the same table
`accel choose` and the components use. The pack stays free of third-party imports beyond
pulumi-policy, which the table's stdlib-only loader allows.
"""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from accel.policies import hardware

from accel.policies.hardware import shapes
from accel.policies.guardrails.rules.common import (
    UNKNOWN,
    cluster_facts,
    get,
    is_true,
    items,
    number,
    violation,
)

TPU_TOPOLOGY = "tpu-topology-valid"
GPU_TAINTED = "gpu-node-pool-tainted"
GPU_COUNT = "gpu-count-matches-machine"
COMPACT_ZONE = "compact-placement-single-zone"
GPU_FABRIC = "gpu-fabric-present"

EFA_INTERFACE_TYPES = ("efa", "efa-only")


def gcp_machine_gpus(machine_type: str) -> tuple[str, int] | None:
    """(guest accelerator type, GPUs) built into a GCP machine type; None if it has none."""
    machine = hardware.current().gcp_gpu_machines.get(machine_type)
    return (machine.gke_accelerator, machine.gpus) if machine else None


def aws_instance_gpus(instance_type: str) -> tuple[str, int] | None:
    """(chip id, GPUs) of an AWS GPU instance type; None if it has none."""
    instance = hardware.current().aws_gpu_instances.get(instance_type)
    return (instance.chip, instance.gpus) if instance else None


def _gke_gpu_pool(props: Any) -> bool:
    machine = get(props, "nodeConfig", "machineType")
    return bool(items(get(props, "nodeConfig", "guestAccelerators"))) or (
        isinstance(machine, str) and gcp_machine_gpus(machine) is not None)


def _eks_gpu_group(props: Any) -> bool:
    return any(isinstance(t, str) and aws_instance_gpus(t) for t in items(get(props, "instanceTypes")))


# --- tpu-topology-valid -----------------------------------------------------------------


def _slice_error(gen_name: str, topology: str | None, chips: int | None) -> str | None:
    """Why a slice of this generation/topology/chip count cannot exist, or None."""
    if topology is not None:
        try:
            shapes.check_topology(gen_name, topology)
        except shapes.ShapeError as error:
            return str(error)
        if chips is not None and shapes.topology_chips(topology) != chips:
            return f"topology {topology} has {shapes.topology_chips(topology)} chips, the type says {chips}"
        return None
    if chips is not None and all(shapes.topology_chips(t) != chips for t in shapes.valid_topologies(gen_name)):
        sizes = sorted({shapes.topology_chips(t) for t in shapes.valid_topologies(gen_name)})
        return f"no TPU {gen_name} slice has {chips} chips (slices have {', '.join(map(str, sizes[:12]))}, ... chips)"
    return None


def _scales_from_zero(props: Any) -> bool:
    """GKE Dynamic Workload Scheduler pools: queued provisioning or flex-start (nodes come on demand)."""
    return is_true(get(props, "queuedProvisioning", "enabled")) or is_true(get(props, "nodeConfig", "flexStart"))


def _validate_gke_tpu_pool(args, report) -> None:
    props = args.props
    machine = get(props, "nodeConfig", "machineType")
    facts = hardware.current()
    host = facts.tpu_machines.get(machine) if isinstance(machine, str) else None
    if host is None:
        return
    gen = facts.tpu_generations[host.generation]
    per_vm = host.chips
    multi_host_per_vm = facts.tpu_machines[gen.multi_host_machine_type].chips
    topology = get(props, "placementPolicy", "tpuTopology")
    if topology is UNKNOWN:
        return
    if not topology:
        return  # independent single-host slices, one per node
    problem = _slice_error(gen.name, topology, None)
    if problem:
        report(violation(args, TPU_TOPOLOGY, problem,
                         f"use one of the {gen.name} topologies from `accel choose` (e.g. "
                         f"{', '.join(shapes.valid_topologies(gen.name)[:5])})"))
        return
    chips = shapes.topology_chips(topology)
    if chips % per_vm or (per_vm != multi_host_per_vm and chips != per_vm):
        expected = shapes.machine_type(gen.name, topology)
        report(violation(args, TPU_TOPOLOGY, f"machine type {machine} cannot form a {topology} slice",
                         f"use machine type {expected} for topology {topology}"))
        return
    hosts = chips // per_vm
    if _scales_from_zero(props):
        # Flex-start / queued (Dynamic Workload Scheduler) pools start empty and GKE adds the whole
        # slice when a workload asks: what must equal the slice is the autoscaling ceiling.
        ceiling = number(get(props, "autoscaling", "maxNodeCount"))
        if ceiling is None:
            ceiling = number(get(props, "autoscaling", "totalMaxNodeCount"))
        if ceiling is None or int(ceiling) != hosts:
            shown = "missing" if ceiling is None else int(ceiling)
            report(violation(args, TPU_TOPOLOGY,
                             f"a flex-start/queued {topology} slice grows to {hosts} node(s), but its autoscaling "
                             f"maximum is {shown}",
                             f"set autoscaling max_node_count={hosts} with min 0 and initial_node_count=0"))
        return
    count = number(get(props, "nodeCount"))
    if count is None:
        count = number(get(props, "initialNodeCount"))
    if count is not None and int(count) != hosts:
        report(violation(args, TPU_TOPOLOGY,
                         f"a {topology} slice on {machine} is {hosts} node(s), but the pool asks for {int(count)}",
                         f"set node_count={hosts} (one pool per slice; add pools for multislice)"))
    max_nodes = number(get(props, "autoscaling", "maxNodeCount"))
    if max_nodes is not None and int(max_nodes) != hosts and hosts > 1:
        report(violation(args, TPU_TOPOLOGY,
                         f"autoscaling.maxNodeCount={int(max_nodes)} but a {topology} slice is {hosts} nodes",
                         f"set autoscaling max_node_count={hosts} (multi-host slices scale as a whole)"))
    placement = get(props, "placementPolicy", "type")
    if hosts > 1 and placement not in (UNKNOWN, "COMPACT"):
        report(violation(args, TPU_TOPOLOGY, f"a multi-host {topology} slice needs COMPACT placement, got {placement}",
                         f'set placement_policy={{"type": "COMPACT", "tpu_topology": "{topology}"}}'))


def _validate_tpu_vm_type(args, report, accelerator_type: Any, accelerator_config: Any, where: str) -> None:
    if accelerator_type is UNKNOWN or accelerator_config is UNKNOWN:
        return
    if isinstance(accelerator_type, str) and accelerator_type:
        try:
            gen, chips = shapes.parse_tpu_vm_type(accelerator_type)
        except shapes.ShapeError as error:
            report(violation(args, TPU_TOPOLOGY, f"{where}: {error}", f"use a type such as {shapes.tpu_type_examples()}"))
            return
        problem = _slice_error(gen.name, None, chips)
        if problem:
            sizes = ", ".join(shapes.tpu_vm_type(gen.name, shapes.topology_chips(t))
                              for t in shapes.valid_topologies(gen.name)[:6])
            report(violation(args, TPU_TOPOLOGY, f"{where}: {accelerator_type}: {problem}",
                             f"use a valid slice size such as {sizes}"))
        return
    config_type = get(accelerator_config, "type")
    topology = get(accelerator_config, "topology")
    if isinstance(config_type, str) and isinstance(topology, str):
        gen = hardware.current().generation_of_config_type(config_type)
        if gen is None:
            return
        gen_name = gen.name
        problem = _slice_error(gen_name, topology, None)
        if problem:
            report(violation(args, TPU_TOPOLOGY, f"{where}: {problem}",
                             f"use a valid {gen_name} topology, e.g. {shapes.valid_topologies(gen_name)[1]}"))


def _validate_tpu_topology(args, report) -> None:
    t, props = args.resource_type, args.props
    if t == "gcp:container/nodePool:NodePool":
        _validate_gke_tpu_pool(args, report)
    elif t == "gcp:tpu/v2Vm:V2Vm":
        _validate_tpu_vm_type(args, report, get(props, "acceleratorType"), get(props, "acceleratorConfig"),
                              "acceleratorType")
    elif t == "gcp:tpu/v2QueuedResource:V2QueuedResource":
        for spec in items(get(props, "tpu", "nodeSpecs")):
            _validate_tpu_vm_type(args, report, get(spec, "node", "acceleratorType"), None,
                                  "tpu.nodeSpecs[].node.acceleratorType")


# --- gpu-node-pool-tainted --------------------------------------------------------------


def _validate_gpu_tainted(args, report) -> None:
    t, props = args.resource_type, args.props
    names = hardware.current().kubernetes
    key = names.gpu_taint_key
    if t == "gcp:container/nodePool:NodePool" and _gke_gpu_pool(props):
        declared = get(props, "nodeConfig", "taints")
        fix = f'add node_config.taints=[{{"key": "{key}", "value": "{names.gke_gpu_taint_value}", "effect": "NO_SCHEDULE"}}]'
    elif t == "aws:eks/nodeGroup:NodeGroup" and _eks_gpu_group(props):
        declared = get(props, "taints")
        fix = f'add taints=[{{"key": "{key}", "value": "{names.eks_gpu_taint_value}", "effect": "NO_SCHEDULE"}}]'
    else:
        return
    taints = items(declared)
    if declared is UNKNOWN or UNKNOWN in taints:
        return
    if not any(get(taint, "key") == key
               and str(get(taint, "effect") or "").replace("_", "").lower() == "noschedule" for taint in taints):
        report(violation(args, GPU_TAINTED,
                         f"GPU nodes have no {key} NoSchedule taint, so ordinary pods can land on them "
                         "and hold GPUs idle", fix))


# --- gpu-count-matches-machine ----------------------------------------------------------


def _validate_gpu_count(args, report) -> None:
    t, props = args.resource_type, args.props
    if t == "gcp:container/nodePool:NodePool":
        machine = get(props, "nodeConfig", "machineType")
        built_in = gcp_machine_gpus(machine) if isinstance(machine, str) else None
        if built_in is None:
            return
        kind, count = built_in
        fix = (f'set node_config.guest_accelerators=[{{"type": "{kind}", "count": {count}, '
               '"gpu_driver_installation_config": {"gpu_driver_version": "LATEST"}}]')
        declared = get(props, "nodeConfig", "guestAccelerators")
        accelerators = items(declared)
        if declared is UNKNOWN or UNKNOWN in accelerators:
            return
        if not accelerators:
            report(violation(args, GPU_COUNT, f"{machine} has {count} x {kind} but the pool declares no guestAccelerators",
                             fix))
            return
        for accelerator in accelerators:
            declared_type, declared = get(accelerator, "type"), number(get(accelerator, "count"))
            if declared_type is UNKNOWN or get(accelerator, "count") is UNKNOWN:
                continue
            if declared_type != kind or declared is None or int(declared) != count:
                report(violation(args, GPU_COUNT,
                                 f"{machine} comes with {count} x {kind}, the pool declares "
                                 f"{int(declared) if declared is not None else '?'} x {declared_type}", fix))
                return
    elif t == "aws:eks/nodeGroup:NodeGroup":
        types = [x for x in items(get(props, "instanceTypes")) if isinstance(x, str)]
        problems = alternate_problems(types)
        if problems:
            report(violation(args, GPU_COUNT, "its instance types cannot all run the same job: " + "; ".join(problems),
                             ALTERNATES_FIX))


# The stack key a planned stack lists spot alternates under, and the rule they must follow.
ALTERNATES_FIX = ("list only alternates that can stand in for the first instance type (same GPU count, a GPU "
                  "with the same compute capability and at least its memory) under "
                  "accel:plan.gpu.alternate_machine_types in the stack file, or remove them")


def alternate_problems(instance_types: list[str]) -> list[str]:
    """What differs between a node group's first (primary) instance type and each alternate, by the rule
    the hardware table states once (AwsGpuInstance.can_stand_in_for): same GPU count, chips of the same
    compute capability (they run the same kernels) with at least the primary's memory. [] when every
    alternate qualifies, or when the group has no GPU types."""
    facts = hardware.current()
    known = {x: facts.aws_gpu_instances.get(x) for x in instance_types}
    if not any(known.values()):
        return []
    primary_type = instance_types[0]
    primary = known[primary_type]
    if primary is None:
        return [f"{primary_type} has no GPU but {', '.join(x for x in instance_types if known[x])} do"]
    problems = []
    for alternate in instance_types[1:]:
        spec = known[alternate]
        if spec is None:
            problems.append(f"{alternate} has no GPU ({primary_type} has {primary.gpus} x {primary.chip})")
            continue
        if spec.can_stand_in_for(primary, facts.chips):
            continue
        mine, theirs = facts.chips[spec.chip], facts.chips[primary.chip]
        differs = []
        if spec.gpus != primary.gpus:
            differs.append(f"{spec.gpus} GPUs per node against {primary.gpus}")
        if mine.compute_capability != theirs.compute_capability:
            differs.append(f"GPU model {spec.chip} (compute capability {mine.compute_capability}) against "
                           f"{primary.chip} ({theirs.compute_capability})")
        elif mine.hbm_gb < theirs.hbm_gb:
            differs.append(f"{spec.chip} has {mine.hbm_gb:g} GB per GPU against {primary.chip}'s {theirs.hbm_gb:g} GB")
        problems.append(f"{alternate} differs from {primary_type}: {', '.join(differs)}")
    return problems


# --- compact-placement-single-zone ------------------------------------------------------


_ZONE = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")


def _validate_compact_zone(args, report) -> None:
    if args.resource_type != "gcp:container/nodePool:NodePool":
        return
    props = args.props
    if get(props, "placementPolicy", "type") != "COMPACT":
        return
    zones = items(get(props, "nodeLocations"))
    if UNKNOWN in zones or get(props, "nodeLocations") is UNKNOWN:
        return
    location = get(props, "location")
    fix = "set node_locations to exactly one zone (the plan's zones[0])"
    if len(zones) > 1:
        report(violation(args, COMPACT_ZONE,
                         f"COMPACT placement spans {len(zones)} zones ({', '.join(zones)}); it needs one", fix))
    elif not zones and isinstance(location, str) and not _ZONE.fullmatch(location):
        report(violation(args, COMPACT_ZONE,
                         f"COMPACT placement in regional location {location} without node_locations spreads "
                         "nodes over every zone of the region", fix))


# --- gpu-fabric-present (stack) ---------------------------------------------------------


def _validate_gpu_fabric(args, report) -> None:
    found = cluster_facts(args.resources)
    if found is None:
        return
    cluster, facts = found
    gpu = get(facts.plan, "gpu")
    if not isinstance(gpu, dict):
        return
    fabric = gpu.get("fabric") or "none"
    extra = int(gpu.get("extra_networks") or 0)
    efa = int(gpu.get("efa_interfaces") or 0)
    cloud_name = facts.plan.get("cloud")
    fabrics = hardware.current().fabrics
    if cloud_name == "gcp" and fabric in fabrics and fabrics[fabric].cloud == "gcp" and extra > 0:
        pools = [r for r in args.resources
                 if r.resource_type == "gcp:container/nodePool:NodePool" and _gke_gpu_pool(r.props)]
        for pool in pools:
            networks = items(get(pool.props, "networkConfig", "additionalNodeNetworkConfigs"))
            if get(pool.props, "networkConfig", "additionalNodeNetworkConfigs") is UNKNOWN:
                continue
            if len(networks) < extra:
                report(violation(pool, GPU_FABRIC,
                                 f"the plan asks for {fabric} with {extra} extra networks, the pool attaches {len(networks)}",
                                 f"add {extra} network_config.additional_node_network_configs (one VPC + subnet each) "
                                 "and enable multi-networking on the cluster"), pool.urn)
        if not pools:
            report(violation(cluster, GPU_FABRIC, f"the plan asks for {fabric} but the stack has no GKE GPU node pool",
                             "declare the GPU node pool the plan describes"), cluster.urn)
    if cloud_name == "aws" and fabric == "efa" and efa > 0:
        templates = [r for r in args.resources if r.resource_type == "aws:ec2/launchTemplate:LaunchTemplate"]
        best, best_template = 0, None
        for template in templates:
            if get(template.props, "networkInterfaces") is UNKNOWN:
                return
            nics = items(get(template.props, "networkInterfaces"))
            # P5-class cards past the first carry "efa-only" interfaces (EFA without an IP).
            count = sum(1 for nic in nics if get(nic, "interfaceType") in EFA_INTERFACE_TYPES)
            if best_template is None or count > best:
                best, best_template = count, template
        if best < efa:
            target = best_template or cluster
            report(violation(target, GPU_FABRIC,
                             f"the plan asks for {efa} EFA interfaces per node, the launch template has {best}",
                             f'declare {efa} network_interfaces with interface_type="efa" '
                             "(one per network card) and a cluster placement group"), target.urn)
    if gpu.get("compact_placement"):
        if cloud_name == "gcp":
            for pool in args.resources:
                if pool.resource_type == "gcp:container/nodePool:NodePool" and _gke_gpu_pool(pool.props):
                    kind = get(pool.props, "placementPolicy", "type")
                    if kind not in (UNKNOWN, "COMPACT"):
                        report(violation(pool, GPU_FABRIC, "the plan asks for compact placement, the pool has "
                                                           f"{kind or 'none'}",
                                         'set placement_policy={"type": "COMPACT"} and a single node location'),
                               pool.urn)
        elif cloud_name == "aws" and get(facts.plan, "capacity", "provisioning") not in ("reservation",
                                                                                          "capacity-block"):
            # Reserved capacity sits where it was reserved: no new placement group can hold it
            # (EC2 capacity-blocks-using.html, cr-cpg.html), so only other capacity is checked.
            groups = [r for r in args.resources if r.resource_type == "aws:ec2/placementGroup:PlacementGroup"
                      and get(r.props, "strategy") == "cluster"]
            if not groups:
                report(violation(cluster, GPU_FABRIC,
                                 "the plan asks for compact placement but the stack has no cluster placement group",
                                 'add aws.ec2.PlacementGroup(strategy="cluster") and reference it from the launch '
                                 "template's placement.group_name"), cluster.urn)


POLICIES = [
    ResourceValidationPolicy(
        name=TPU_TOPOLOGY,
        description="TPU slices use a topology their generation has, the matching machine type and node count.",
        validate=_validate_tpu_topology,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=GPU_TAINTED,
        description=f"GPU node pools carry the {hardware.current().kubernetes.gpu_taint_key} NoSchedule taint.",
        validate=_validate_gpu_tainted,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=GPU_COUNT,
        description="Declared GPUs per node match the machine type (and spot alternates match each other).",
        validate=_validate_gpu_count,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name=COMPACT_ZONE,
        description="COMPACT placement keeps a node pool in exactly one zone.",
        validate=_validate_compact_zone,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name=GPU_FABRIC,
        description="GPU fabrics the plan asks for (GPUDirect networks, EFA, compact placement) are declared.",
        validate=_validate_gpu_fabric,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
