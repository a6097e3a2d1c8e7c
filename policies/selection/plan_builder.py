"""From a Choice to the Plan the components build: pools, fabric, zones, capacity, storage."""

from __future__ import annotations

from accel.policies.selection.capacity import obtaining, price_is_upper_bound
from accel.policies.catalog.model import Catalog
from accel.policies.selection.choice import Choice
from accel.policies.estimator.estimate import filesystem_plan
from accel.policies.selection.fleet_layout import gpu_nodes_per_pool
from accel.policies.plan import Capacity, GpuPool, Plan, plan_contradictions, plan_parallelism
from accel.policies.selection.pools import planned_tpu_pool
from accel.policies.workload import WorkloadSpec


def make_plan(spec: WorkloadSpec, choice: Choice, catalog: Catalog) -> Plan:
    """Turn a Choice into the Plan the components build: pools, fabric, zones, capacity, storage."""
    option = choice.chosen
    # A pin put on a declared reservation is billed as it bills it (choice.held); its storage share, GKE's
    # placement rule and the price bound are judged on the fleet as sized.
    sized = choice.held.sized if choice.held is not None else option
    offering = choice.chosen_offering
    if offering is None or offering.id != option.offering:
        offering = catalog.offering(option.offering)
    region_info = offering.regions[option.region]
    training = spec.kind != "inference"
    tpu = gpu = None
    if option.family == "tpu":
        assert option.topology is not None
        tpu = planned_tpu_pool(option.accelerator, option.topology, option.slices)
        zones = [option.zone or region_info.zones[0]]
    else:
        multi_node_training = training and option.hosts > 1
        replica_chips = int(choice.estimate.details.get("replica_chips", offering.chips_per_host))
        # A serving replica of pipeline stages over the scale-out network (policies/selection/ladders.py
        # pipeline_sizes) is placed as a training group is: its nodes in one compact placement / cluster placement
        # group, so each hand-off between stages crosses the nearest links.
        pipelined = not training and int(choice.estimate.details.get("pipeline_stages", 1) or 1) > 1
        compact = multi_node_training or pipelined
        # GPUDirect networks and EFA interfaces only pay when collectives cross nodes: a training
        # fleet of several nodes, or a serving replica wider than one node.
        crosses_nodes = multi_node_training or (not training and replica_chips > offering.chips_per_host)
        fabric = offering.fabric if crosses_nodes else "none"
        gpu = GpuPool(accelerator=option.accelerator, machine_type=offering.machine_type,
                      alternate_machine_types=_spot_alternates(offering) if (option.spot and offering.cloud == "aws") else [],
                      gpus_per_node=offering.chips_per_host, nodes=option.hosts,
                      guest_accelerator=offering.guest_accelerator if offering.cloud == "gcp" else None,
                      fabric=fabric,
                      extra_networks=offering.extra_networks if crosses_nodes else 0,
                      efa_interfaces=offering.efa_interfaces if crosses_nodes else 0,
                      local_ssd_count=offering.local_ssd_count,
                      compact_placement=compact and not _gke_rejects_compact(offering.cloud, sized, fabric),
                      nvlink_clique_nodes=offering.nvlink_clique_nodes)
        # A fleet over the per-pool limit is several pools (policies/selection/fleet_layout.py), each a whole number of
        # the model replicas the Plan's parallelism derives.
        parallelism = plan_parallelism(spec.kind, gpu, choice.estimate, spec.model.experts,
                                       architecture=spec.model.architecture)
        assert parallelism is not None
        gpu = gpu.model_copy(update={"nodes_per_pool": gpu_nodes_per_pool(
            offering, option.hosts, compact=compact, training=training,
            group_nodes=parallelism.group_nodes)})
        blocks = _capacity_blocks(choice, option.hosts)
        if blocks is not None and len(blocks) > 1:   # one node group per Capacity Block (policies/cloud/booking.py)
            gpu = gpu.model_copy(update={"nodes_per_pool": blocks[0]})
        # Tightly coupled training lives in one zone (placement policy / cluster placement group), and so does a
        # pipelined serving fleet; other serving spreads over every zone that has the GPU.
        zones = [option.zone or region_info.zones[0]] if compact or training else list(region_info.zones)
    details = choice.estimate.details
    legs = details.get("capacity_legs")
    held = choice.held
    # A held fleet's estimate has no queue's risk or legs (reservations.bill_on_reservation drops them); its mode is
    # the held one, while the mode it was judged on stays in the details for the price bound.
    capacity = Capacity.model_construct(provisioning=option.provisioning, reservation=choice.reservation or offering.reservation,
                                        mode=held.mode if held else str(details.get("capacity_mode") or "") or None,
                                        risk=str(details.get("capacity_risk") or "") or None,
                                        legs=int(legs) if legs else None,
                                        price_bound="upper" if price_is_upper_bound(obtaining(spec), offering, sized,
                                                                                    str(details.get("capacity_mode") or ""))
                                        else None)
    if held is not None:
        zones = [held.zone]
    storage, storage_reason = filesystem_plan(spec, option.cloud, option.hosts, sized.hourly_usd, catalog.defaults)
    rationale = list(choice.rationale)
    node_limit = choice.estimate.details.get("node_limit")
    if node_limit:
        rationale.append(f"Fleet size: {node_limit}.")
    if gpu is not None and (gpu.pools > 1 or ((training or pipelined) and gpu.nodes > 1)):
        rationale.append(_layout_words(gpu, plan_parallelism(spec.kind, gpu, choice.estimate, spec.model.experts,
                                       architecture=spec.model.architecture)))
    expert = next((a for a in choice.estimate.assumptions if a.name == "mixture of experts"), None)
    if training and expert is not None:
        # The expert-parallel layout the estimate costed (policies/estimator/moe.py).
        rationale.append(f"Experts: {str(expert.value).split(': ', 1)[-1]}.")
    rationale.append(f"Storage: {storage_reason}.")
    if held is not None:
        rationale.append(held.line)
    # Assembled from validated parts (the workload, the catalog's, the search's option and estimate) without
    # validating the whole again, which would first build the Plan's validator and every model inside it
    # (~10 ms of a choose); the cross-checks its validator makes are made here all the same. A plan read
    # back from a stack file is validated in full (Plan.model_validate).
    plan = Plan.model_construct(workload=spec, catalog=choice.catalog, chosen=option,
                                zones=zones, tpu=tpu, gpu=gpu, capacity=capacity, storage=storage,
                                estimate=choice.estimate, rationale=rationale, pinned=choice.pinned)
    problems = plan_contradictions(plan)
    if problems:
        raise ValueError("; ".join(problems))
    return plan


def _capacity_blocks(choice: Choice, hosts: int) -> list[int] | None:
    """The Capacity Blocks a fleet the search booked through them is bought as (None for other modes)."""
    from accel.policies.cloud.booking import block_sizes
    from accel.policies.cloud.capacity_modes import load_modes

    mode = load_modes().modes.get(str(choice.estimate.details.get("capacity_mode") or ""))
    if mode is None or mode.provisioning != "capacity-block" or not mode.limits.hosts_per_request:
        return None
    return block_sizes(mode, hosts)


def _spot_alternates(offering) -> list[str]:
    """The catalog's spot alternates that can stand in for the offering's machine (same GPU count, a GPU
    that runs the same kernels with at least its memory: the hardware table's rule, which the node group
    and the gpu-count-matches-machine guardrail apply too), so `choose` never writes a group they refuse."""
    from accel.policies import hardware

    facts = hardware.current()
    primary = facts.aws_gpu_instances.get(offering.machine_type)
    if primary is None:
        return []
    return [alternate for alternate in offering.spot_alternates
            if (spec := facts.aws_gpu_instances.get(alternate)) is not None
            and spec.can_stand_in_for(primary, facts.chips)]


def _gke_rejects_compact(cloud: str, option, fabric: str) -> bool:
    """GKE refuses COMPACT placement for some capacity modes (gke_rules.yaml): plan the pool without it. A flex-start
    fleet on a fabric is built with queued provisioning (policies/cloud/flex_start.py), so the queued rule is its."""
    if cloud != "gcp":
        return False
    from accel.policies.cloud.flex_start import gke_provisioning  # GPU plans only (a TPU choose skips them)
    from accel.policies.cloud.gke_rules import compact_placement_problem

    return compact_placement_problem(option.machine_type, gke_provisioning(option.provisioning, fabric)) is not None


def _layout_words(gpu: GpuPool, parallelism) -> str:
    """One rationale line: the parallelism and how the pools hold whole model replicas."""
    replica = (f"a model replica spans {parallelism.group_nodes} nodes" if parallelism.group_nodes > 1
               else "a model replica stays inside one node")
    if parallelism.tensor_nodes:
        replica += f"; tensor-parallel groups of {parallelism.tensor_nodes} nodes, each inside one NVLink domain"
    sizes = gpu.pool_sizes
    pools = (f"one pool of {sizes[0]} nodes" if len(sizes) == 1 else
             f"{len(sizes)} pools: {sizes.count(sizes[0])} x {sizes[0]}" + (f" + {sizes[-1]}" if sizes[-1] != sizes[0] else "")
             + " nodes")
    return f"Parallelism: {parallelism.text()} ({replica}); {pools}{_replicas_in_pools(sizes, parallelism.group_nodes)}."


def _replicas_in_pools(sizes: list[int], group_nodes: int) -> str:
    """How the pools hold whole replicas of `group_nodes` nodes, as it is: a replica stays inside one pool, so the
    nodes of a pool past its last whole replica hold none (a fleet of whole 18-node A4X sub-blocks is not a whole
    number of 16-node replicas)."""
    if group_nodes > sizes[0]:
        return ": a replica is wider than one pool may hold, so it crosses pools"
    replicas = sum(size // group_nodes for size in sizes)
    spare = sum(size % group_nodes for size in sizes)
    if not spare:
        return ", each a whole number of replicas" if len(sizes) > 1 else ", a whole number of replicas"
    return (f" holding {replicas} replica{'s' if replicas != 1 else ''} of {group_nodes} nodes; {spare} "
            f"node{'s hold' if spare != 1 else ' holds'} no whole replica")
