"""The part of a GPU training fleet a run is timed on: the nodes holding its whole model replicas.

A training job starts ranks only on the nodes that hold the Plan's whole replicas (tensor x pipeline x data
GPUs, accel/job/plan_view.py `rank_nodes`): a fleet sized past them (36 A4X trays for 16-tray replicas, bought as
two 18-tray racks) keeps the rest idle. The estimate times the run on the same nodes, by the same layout rule the
Plan derives (policies/parallelism.py `training_degrees`, the integers of `training_parallelism`, which
policies/plan.py `plan_parallelism` builds: no pydantic model on the search's hot path); the fleet's cost stays
on every node. TPU fleets (a slice trains whole) and serving are left as they are.
"""

from __future__ import annotations

from functools import lru_cache

from accel.policies.parallelism import training_degrees
from accel.policies.selection.ladders import Size


@lru_cache(maxsize=None)
def replica_nodes(min_chips_for_memory: int, gpus_per_node: int, nodes: int, domain_unit_nodes: int,
                  context: int = 0, pipeline_floor: int = 0) -> int:
    """Nodes of a `nodes`-node GPU fleet that hold whole model replicas under the Plan's training layout
    (`context`, `pipeline_floor`: a long sequence's context-parallel degree and deeper pipeline, training_degrees).
    Memoized: a search on a large catalog asks ~10^5 times for a few hundred distinct fleets."""
    tensor, pipeline, data, _ = training_degrees(min_chips_for_memory, gpus_per_node, nodes, domain_unit_nodes,
                                                 context, pipeline_floor)
    gpus = tensor * max(1, context) * pipeline * data
    return min(nodes, -(-gpus // gpus_per_node))


def training_size(size: Size, min_chips_for_memory: int, domain_unit_nodes: int, context: int = 0,
                  pipeline: int = 0) -> Size:
    """The part of `size` a training run is timed on: its whole-replica nodes for a GPU fleet (topology None),
    the fleet itself for a TPU one."""
    if size.topology is not None or size.slices != 1:
        return size
    nodes = replica_nodes(min_chips_for_memory, size.chips_per_host, size.hosts, domain_unit_nodes, context, pipeline)
    if nodes == size.hosts:
        return size
    return size._replace(chips=nodes * size.chips_per_host, hosts=nodes)
