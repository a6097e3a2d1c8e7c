"""The part of a GPU training fleet a run is timed on: the nodes holding its whole model replicas.

A training job starts ranks only on the nodes that hold the Plan's whole replicas (tensor x pipeline x data
GPUs, accel/job/plan_view.py `rank_nodes`): a fleet sized past them (36 A4X trays for 16-tray replicas, bought as
two 18-tray racks) keeps the rest idle. The estimate times the run on the same nodes, by the same layout rule the
Plan derives (policies/parallelism.py `training_degrees`, the integers of `training_parallelism`, which
policies/plan.py `plan_parallelism` builds: no pydantic model on the search's hot path); the fleet's cost stays
on every node. A named architecture's heads narrow the Plan's tensor degree into a deeper pipeline with the same
GPUs per replica and the same data-parallel degree (policies/parallelism.py within_heads), so the nodes timed here
are the Plan's without reading the row. TPU fleets (a slice trains whole) and serving are left as they are.

The global batch bounds it too (training_size's `batch_chips`): a step has only so many sequences, each shared by at most so many
GPUs (policies/estimator/estimate.py batch_chip_limit), so a fleet of whole nodes past them (one 8-GPU node for a
batch of 3 sequences at one GPU each) trains on the busy GPUs alone and pays for the node.
"""

from __future__ import annotations

from functools import lru_cache

from accel.policies.parallelism import ShardedState, layout_need, training_degrees
from accel.policies.selection.ladders import Size


@lru_cache(maxsize=None)
def replica_layout(min_chips_for_memory: int, gpus_per_node: int, nodes: int, domain_unit_nodes: int,
                   context: int = 0, pipeline_floor: int = 0, state: ShardedState | None = None,
                   busy_gpus: int = 0) -> tuple[int, int]:
    """(nodes of a `nodes`-node GPU fleet that hold whole model replicas, GPUs of one replica) under the Plan's
    training layout (`context`, `pipeline_floor`: a long sequence's context-parallel degree and deeper pipeline,
    training_degrees; `state`, a distributed optimizer's state, and `busy_gpus`, the global batch's GPUs: layout_need).
    Memoized: a search on a large catalog asks ~10^5 times for a few hundred distinct fleets."""
    need = layout_need(min_chips_for_memory, gpus_per_node, nodes, domain_unit_nodes, context, pipeline_floor, state,
                       busy_gpus)
    tensor, pipeline, data, _ = training_degrees(need, gpus_per_node, nodes, domain_unit_nodes,
                                                 context, pipeline_floor)
    replica = tensor * max(1, context) * pipeline
    return min(nodes, -(-(replica * data) // gpus_per_node)), replica


def replica_nodes(min_chips_for_memory: int, gpus_per_node: int, nodes: int, domain_unit_nodes: int,
                  context: int = 0, pipeline_floor: int = 0) -> int:
    """Nodes of a `nodes`-node GPU fleet that hold whole model replicas under the Plan's training layout."""
    return replica_layout(min_chips_for_memory, gpus_per_node, nodes, domain_unit_nodes, context, pipeline_floor)[0]


def training_size(size: Size, min_chips_for_memory: int, domain_unit_nodes: int, context: int = 0,
                  pipeline: int = 0, batch_chips: int = 0, state: ShardedState | None = None) -> Size:
    """The part of `size` a training run is timed on: for a GPU fleet (topology None) its whole-replica nodes, and
    of those at most the whole replicas that keep `batch_chips` GPUs busy (the global batch's; 0: no bound), never
    fewer than one replica; the fleet itself for a TPU one."""
    if size.topology is not None or size.slices != 1:
        return size
    nodes, replica = replica_layout(min_chips_for_memory, size.chips_per_host, size.hosts, domain_unit_nodes,
                                    context, pipeline, state, max(0, batch_chips))
    chips = nodes * size.chips_per_host
    if 0 < batch_chips < chips:
        chips = min(chips, replica * max(1, batch_chips // replica))
        nodes = -(-chips // size.chips_per_host)
    if chips == size.chips:
        return size
    return size._replace(chips=chips, hosts=nodes)
