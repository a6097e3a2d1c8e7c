"""The parallelism a GPU plan implies: tensor-parallel within a node, pipeline-parallel across nodes,
data-parallel over model replicas. A pure decision over figures the Plan already holds.

- Training: a model replica is a tensor- x pipeline-parallel group large enough for its share of the training
  state. The job a PyTorch stack runs is Megatron-LM with --use-distributed-optimizer (accel/job/megatron_run.py):
  every data-parallel replica holds the bf16 weights and fp32 gradients whole and the replicas split the fp32
  master weights and Adam moments, 6 + 12/d bytes per parameter (Megatron-LM docs/source/api-guide/
  dist_optimizer.md at core_v0.15.3, 309ffca6, the same row at the job's core_v0.19.0 in docs/user-guide/features/
  dist_optimizer.md l.19; assumptions.yaml training.distributed_optimizer). So the replica
  is the smallest of the layouts below whose GPUs hold (weights + gradients + activation headroom + optimizer
  state / DP) / (TP x PP) with DP the fleet over it, solved per fleet (`distributed_replica_need` over the
  estimate's `ShardedState`). Other jobs (JAX, a TPU), a long sequence's layout and a Plan pinned before the
  estimate recorded that state keep a replica holding the whole state (`estimate.min_chips_for_memory` chips:
  weights, gradients, optimizer state and activation headroom). Either figure is `training_degrees`' first
  argument, the GPUs' worth of state the replica is laid out for. Tensor parallelism
  stays inside an NVLink domain: every GPU of the node once the state needs more than one node, and,
  where the domain spans nodes (GB200 NVL72) and the cloud places whole domains as a unit a job can
  require (`tensor_nodes`: A4X's 18-node sub-block), as many whole nodes as the state needs up to the
  largest power of two that tiles the unit (TP8 over two 4-GPU trays of an 18-tray rack, as NVIDIA's
  GB200 Nemotron-4 340B recipe runs TP8 x PP8). The pipeline degree is the tensor-parallel groups that
  hold the state, rounded up to a power of two as Megatron-style pipelines are laid out, and never
  more than the fleet. Llama 3.1 405B on 16,384 H100 comes out as TP8 x PP8 x DP256 with the distributed
  optimizer (Megatron's own Llama 3 405B recipe runs TP8 x PP8; the Llama 3 paper, Table 4, ran TP8 x PP16 x
  DP128, which memory does not force: docs/scale.md, "Distributed optimizer"), TP8 x PP16 holding the whole
  state.
- Long sequences (training): where one sequence's activations do not fit beside the state on that replica
  (policies/estimator/activations.py: full recomputation, Korthikanti et al. 2022), tensor parallelism widens to
  the narrowest group that holds it (`tensor`), else takes the whole node and context parallelism (`context`,
  CP) splits each sequence over CP whole tensor-parallel groups: the replica is TP x CP x PP GPUs, the
  data-parallel degree the fleet over that (Llama 3 405B at 131,072 tokens: TP8 x CP16 x PP16, Table 4). Where
  the state nearly fills the GPU the sequence's layout may also run a deeper pipeline than the state's own
  (`pipeline`: the shallowest depth at which the exchange is hidden, activations.py), which the estimate records
  as details.pipeline_parallel. Absent at the usual lengths.
- Mixture of experts (training): the routed experts are spread over one scale-up domain (a node's
  NVLink domain: EP = min(experts, domain GPUs)), so the all-to-all stays on NVLink; expert parallelism
  reuses the GPUs of a replica's node rather than multiplying the fleet (`expert`, absent for a dense
  model). The same rule sizes the all-to-all the estimate costs (policies/estimator/moe.py). The replica's
  share of the state counts every parameter, the experts' too, as held by its TP x PP GPUs: Megatron spreads the
  experts over the EP ranks as well, so for a mixture of experts the replica is an upper bound.
- Serving: the estimate's replica (`estimate.details.replica_chips`) is the group: tensor-parallel over
  the GPUs of a node, pipeline-parallel over the nodes it spans (what `accel job` passes to vLLM).

`group_nodes` (the nodes one replica spans) is what the fleet layout keeps inside one pool
(policies/selection/fleet_layout.py) and what `accel job` asks Kueue to keep inside one placement unit;
`tensor_nodes` (present only when a tensor-parallel group spans nodes) is what it keeps inside one NVLink
domain when a whole replica cannot be (accel/job/topology.py).
"""

# No `from __future__ import annotations` in a module of pydantic models: pydantic would compile each field's
# annotation string when its class is defined, ~3 ms of every `accel choose` (docs/choose.md, "Start-up").

import math
from typing import NamedTuple

from pydantic import Field, computed_field, model_serializer

from accel.base.errors import UsageError
from accel.base.model import StrictModel


class Parallelism(StrictModel):
    """Tensor x (context x) pipeline x data parallel degrees of a GPU fleet (docs/scale.md)."""

    tensor: int = Field(gt=0, description="GPUs one tensor-parallel group spans (inside one node, or inside one "
                        "NVLink domain that spans nodes: see tensor_nodes)")
    pipeline: int = Field(gt=0, description="Pipeline stages of one model replica, one node each (tensor_nodes "
                          "nodes each where a tensor-parallel group spans nodes)")
    data: int = Field(gt=0, description="Model replicas the fleet holds (data-parallel degree)")
    expert: int | None = Field(None, gt=0, description="Mixture-of-experts training: GPUs one expert-parallel "
                               "group spreads the routed experts over (inside one NVLink domain); absent for a "
                               "dense model")
    tensor_nodes: int | None = Field(None, gt=1, description="Nodes one tensor-parallel group spans, where it spans "
                                     "several inside one NVLink domain (GB200 NVL72); absent when it stays in a node")
    context: int | None = Field(None, gt=1, description="Context-parallel degree: ranks one sequence is split over, "
                                "each a whole tensor-parallel group, where one sequence's activations do not fit "
                                "beside the state (policies/estimator/activations.py); absent without")
    stages_per_node: int | None = Field(None, gt=1, description="Pipeline stages of one replica that share a node, "
                                        "where a stage's ranks (TP x CP x DP, Megatron's pipeline outermost) fill "
                                        "less than one (a named architecture's heads narrowing tensor parallelism "
                                        "on a one-node fleet); absent where each stage takes whole nodes")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def group_nodes(self) -> int:
        """Nodes one model replica (a tensor- x context- x pipeline-parallel group) spans."""
        return -(-self.pipeline // (self.stages_per_node or 1)) * (self.tensor_nodes or 1) * (self.context or 1)

    @property
    def replica_gpus(self) -> int:
        """GPUs of one model replica: tensor x context x pipeline."""
        return self.tensor * (self.context or 1) * self.pipeline

    @model_serializer(mode="wrap")
    def _absent_keys_stay_absent(self, handler):
        # A dense plan's document stays as it was before expert parallelism was part of the layout, and one whose
        # tensor parallelism stays in a node as it was before tensor groups could span nodes.
        data = handler(self)
        if isinstance(data, dict):
            for key in ("expert", "tensor_nodes", "context", "stages_per_node"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data

    def text(self) -> str:
        context = f"CP{self.context} x " if self.context else ""
        layout = f"TP{self.tensor} x {context}PP{self.pipeline} x DP{self.data}"
        return layout if self.expert is None else f"{layout}, EP{self.expert}"


def expert_parallelism(experts: int, domain_chips: int | None, chips: int | None = None) -> int:
    """The expert-parallel degree: the routed experts spread over one scale-up domain (`domain_chips` GPUs of
    an NVLink domain; 0 or None: no such domain, e.g. a TPU slice, whose domain is the fleet's `chips`),
    never more than there are experts or chips, and dividing the experts: Megatron-LM refuses a number of experts
    that is no multiple of the expert-parallel size (accel/job/runtime.yaml megatron.refusals.experts), so DeepSeek-V3's
    256 experts on a 72-GPU GB200 NVL72 domain take EP64, not EP72."""
    domain = domain_chips or chips or experts
    bound = max(1, min(experts, domain, chips or experts))
    return next(degree for degree in range(bound, 0, -1) if experts % degree == 0)


def _power_of_two_at_least(value: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, value))))


def tensor_parallel_nodes(domain_unit_nodes: int) -> int:
    """The most nodes one tensor-parallel group may span when whole NVLink domains of `domain_unit_nodes` nodes
    are placed as a unit (1: the domain is the node): the largest power of two that divides the unit, so the
    groups tile it and none straddles two domains (18 trays of an NVL72 rack: 2, TP8 on 4-GPU trays; an
    UltraServer of 9: 1)."""
    if domain_unit_nodes < 1:
        raise ValueError("domain_unit_nodes must be positive")
    return domain_unit_nodes & -domain_unit_nodes


def training_degrees(min_chips_for_memory: int, gpus_per_node: int, nodes: int,
                     domain_unit_nodes: int = 1, context: int = 0, pipeline: int = 0,
                     tensor: int = 0) -> tuple[int, int, int, int]:
    """(tensor, pipeline, data, nodes one tensor group spans) of `training_parallelism`, as plain integers: what
    the search reads for every fleet it times (policies/selection/replica_fleet.py), without building a model.

    `context`: 0, the layout the state alone sets; 1 or more, a long sequence's layout
    (policies/estimator/activations.py): tensor parallelism widened first (`tensor`, else the whole node), then
    `context` whole tensor-parallel groups share each sequence, multiplying the model-parallel group (TP x CP x PP)
    and dividing the data-parallel degree. `pipeline`: 0, the depth the state sets; more, a long sequence's deeper
    pipeline (a power of two the sequence's layout chose, policies/estimator/activations.py: a deeper pipeline
    halves the state per GPU, leaving room for the activations), still never more than the fleet. `tensor`: 0, as
    above; more, the narrower tensor group a sequence without context parallelism widened to (TP2 where the state
    alone needs TP1 and the sequence fits at TP2), where the state fits in one node."""
    if min(min_chips_for_memory, gpus_per_node, nodes, domain_unit_nodes) < 1 or context < 0 or pipeline < 0:
        raise ValueError("min_chips_for_memory, gpus_per_node, nodes and domain_unit_nodes must be positive")
    ranks = max(1, context)
    if min_chips_for_memory <= gpus_per_node and pipeline > 1:
        # The state fits in one node but the sequence's layout pipelines it over whole nodes.
        depth = max(1, min(nodes // ranks, pipeline))
        return gpus_per_node, depth, max(1, nodes // (depth * ranks)), 1
    if min_chips_for_memory <= gpus_per_node:
        # The state fits in one node: tensor parallelism over just the GPUs that hold it; for a long sequence, over
        # the group it widened to (`tensor`, without context parallelism) or else the whole node, its
        # context-parallel ranks on whole nodes.
        own = min(gpus_per_node, _power_of_two_at_least(min_chips_for_memory))
        if tensor and context <= 1:
            tensor = min(gpus_per_node, max(tensor, own))
        else:
            tensor = gpus_per_node if context else own
        return tensor, 1, max(1, nodes * gpus_per_node // (tensor * ranks)), 1
    # Whole nodes of one domain, as many as the state needs (a power of two), within the unit and the fleet.
    span = min(tensor_parallel_nodes(domain_unit_nodes),
               _power_of_two_at_least(math.ceil(min_chips_for_memory / gpus_per_node)))
    while nodes % span:
        span //= 2
    tensor = gpus_per_node * span
    depth = max(pipeline, _power_of_two_at_least(math.ceil(min_chips_for_memory / tensor)))
    depth = max(1, min(nodes // (span * ranks), depth))
    return tensor, depth, max(1, nodes // (depth * span * ranks)), span


class ShardedState(NamedTuple):
    """One model's training state under Megatron's distributed optimizer, in GPUs' worth of usable HBM (activation
    headroom included): `replicated`, what every data-parallel replica holds whole (bf16 weights and fp32
    gradients, and any frozen weights), `sharded`, what the replicas split between them (fp32 master weights and
    Adam moments). Written by the estimate (policies/estimator/estimate.py distributed_optimizer_state)."""

    replicated: float
    sharded: float

    def per_gpu(self, replica_gpus: int, data: int) -> float:
        """The share of one GPU's usable HBM each GPU of a `replica_gpus`-GPU replica holds, `data` replicas
        sharing the sharded part: (replicated + sharded / DP) / (TP x PP)."""
        return (self.replicated + self.sharded / max(1, data)) / replica_gpus

    def fits(self, replica_gpus: int, data: int) -> bool:
        return self.per_gpu(replica_gpus, data) <= 1.0


def distributed_replica_need(state: ShardedState, gpus_per_node: int, nodes: int, domain_unit_nodes: int = 1,
                             busy_gpus: int = 0) -> int:
    """The GPUs' worth of state (`training_degrees`' `min_chips_for_memory`) that lays out the smallest replica whose
    GPUs hold their share of `state` on this fleet, the data-parallel degree being the fleet over that replica: the
    replicas `training_degrees` builds are tried smallest first (tensor parallelism in the node, then whole nodes of
    one NVLink domain, then a power-of-two pipeline), each with its own DP, and the first that fits is taken. Where
    none does, the largest the fleet holds (as the whole-state rule caps it at the fleet). `busy_gpus` (0: none), the
    GPUs the global batch keeps busy: only the replicas they hold train, so only they share the optimizer state."""
    need = 1
    while True:
        tensor, depth, data, _ = training_degrees(need, gpus_per_node, nodes, domain_unit_nodes)
        replica = tensor * depth
        if busy_gpus:
            data = min(data, max(1, busy_gpus // replica))
        if state.fits(replica, data):
            return need
        tensor, depth, _, _ = training_degrees(replica + 1, gpus_per_node, nodes, domain_unit_nodes)
        if tensor * depth <= replica:      # the fleet holds no larger replica
            return need
        need = replica + 1


def layout_need(min_chips_for_memory: int, gpus_per_node: int, nodes: int, domain_unit_nodes: int,
                context: int = 0, pipeline_floor: int = 0, state: ShardedState | None = None,
                busy_gpus: int = 0) -> int:
    """The GPUs' worth of state the layout of this fleet is laid out for (training_degrees' first argument): under a
    distributed optimizer (`state`, a PyTorch job's: policies/estimator/estimate.py distributed_optimizer_state) the
    smallest replica that holds its share on this fleet (distributed_replica_need); without one, or where a long
    sequence sets the layout (`context`, `pipeline_floor`), the whole state. `busy_gpus`: the global batch's GPUs
    (0: every replica trains), the replicas that share the optimizer state. The one rule the search's timed nodes
    (policies/selection/replica_fleet.py) and the Plan's layout (policies/plan.py) both read."""
    if state is None or context or pipeline_floor:
        return min_chips_for_memory
    return distributed_replica_need(state, gpus_per_node, nodes, domain_unit_nodes, busy_gpus)


class HeadsLayoutError(UsageError, ValueError):
    """No layout of this fleet splits a named architecture the way Megatron-LM requires (its layers over the pipeline
    stages once tensor parallelism narrows to its heads): the fleet cannot train it."""


def within_heads(tensor: int, pipeline: int, span: int, heads: int, layers: int = 0) -> tuple[int, int, int]:
    """(tensor, pipeline, nodes one tensor group spans) of a layout narrowed to a named architecture's heads
    (policies/architectures/rows.py Architecture.tensor_heads; 0: no architecture named, the layout as it is): the widest tensor degree dividing both the
    layout's and the heads (their gcd), the state it no longer holds going to a pipeline that much deeper, so the
    replica keeps its GPUs, and with them its data-parallel degree, the search's timed nodes and the fleet. Qwen3
    30B-A3B's 4 KV heads on 64 H100: TP8 x PP1 x DP8 becomes TP4 x PP2 x DP8. `layers` (0: unchecked): a pipeline
    deeper than the row's layers is no layout Megatron builds (runtime.yaml megatron.refusals.pipeline_layers):
    HeadsLayoutError, naming the figures."""
    narrowed = math.gcd(tensor, heads) if heads else tensor
    deeper = pipeline * (tensor // narrowed)
    if layers and deeper > layers:
        why = (f"its {heads} heads (the gcd of its query and KV heads) split over at most tensor parallelism "
               f"{narrowed}, and the state TP{tensor} x PP{pipeline} holds then takes PP{deeper}"
               if narrowed < tensor else f"the state takes TP{tensor} x PP{pipeline}")
        raise HeadsLayoutError(f"{why}, more pipeline stages than its {layers} layers (each stage holds at least one)")
    return narrowed, deeper, max(1, narrowed * span // tensor)


def training_parallelism(min_chips_for_memory: int, gpus_per_node: int, nodes: int,
                         domain_unit_nodes: int = 1, context: int = 0, pipeline: int = 0,
                         tensor: int = 0, heads: int = 0, layers: int = 0) -> Parallelism:
    """The 3D-parallel layout of a training fleet of `nodes` nodes whose model replica must hold
    `min_chips_for_memory` GPUs' worth of training state; `domain_unit_nodes`, the nodes of one NVLink domain the
    cloud places as a unit a job can require (1: the domain is the node), bounds the nodes a tensor-parallel
    group may span (`tensor_parallel_nodes`); `context`, a long sequence's context-parallel degree
    (`training_degrees`); `pipeline`, its deeper pipeline (0: the state's own depth); `tensor`, its widened tensor
    group without context parallelism (0: the state's own, or the whole node). `heads` and `layers`, a named
    architecture's (Architecture.tensor_heads; 0: none named): the tensor degree narrowed to divide its heads, the pipeline
    deepened to hold what it no longer does (`within_heads`), the stages then sharing a node."""
    tensor, depth, data, span = training_degrees(min_chips_for_memory, gpus_per_node, nodes, domain_unit_nodes,
                                                 context, pipeline, tensor)
    tensor, depth, span = within_heads(tensor, depth, span, heads, layers)
    # Megatron lays ranks out tensor, context, data, then pipeline outermost (parallel_state.py order
    # "tp-cp-ep-dp-pp"): a stage is TP x CP x DP consecutive ranks, and only where those fill less than a node do
    # several of a replica's stages share one.
    shared = min(depth, gpus_per_node // (tensor * max(1, context) * data)) if depth > 1 else 1
    return Parallelism(tensor=tensor, pipeline=depth, data=data, tensor_nodes=span if span > 1 else None,
                       context=context if context > 1 else None, stages_per_node=shared if shared > 1 else None)


def serving_parallelism(replica_chips: int, gpus_per_node: int, nodes: int, domain_unit_nodes: int = 1) -> Parallelism:
    """The layout of a serving fleet of `nodes` nodes whose replicas take `replica_chips` GPUs each. A replica of
    whole nodes within the span a tensor-parallel group may take inside one NVLink domain (`tensor_parallel_nodes`
    of `domain_unit_nodes`: two A4X trays of an NVL72 rack) is one tensor-parallel group over them, as the serving
    estimate costs it (InferenceModel: one all-reduce group of the replica's GPUs over NVLink); elsewhere tensor
    parallelism stays in the node and the replica's nodes are pipeline stages."""
    if min(replica_chips, gpus_per_node, nodes, domain_unit_nodes) < 1:
        raise ValueError("replica_chips, gpus_per_node, nodes and domain_unit_nodes must be positive")
    span = replica_chips // gpus_per_node
    if span > 1 and replica_chips % gpus_per_node == 0 and span <= tensor_parallel_nodes(domain_unit_nodes):
        return Parallelism(tensor=replica_chips, pipeline=1, data=max(1, nodes // span), tensor_nodes=span)
    tensor = min(replica_chips, gpus_per_node)
    pipeline = math.ceil(replica_chips / gpus_per_node)
    return Parallelism(tensor=tensor, pipeline=pipeline, data=max(1, nodes * gpus_per_node // (tensor * pipeline)))


def expert_within_ranks(layout: Parallelism) -> Parallelism:
    """A mixture of experts' layout whose expert-parallel degree also divides the ranks of one pipeline stage (TP x CP
    x DP): the job runs expert tensor parallelism 1, and Megatron-LM refuses a world size that is no multiple of
    expert TP x EP x PP (accel/job/runtime.yaml megatron.refusals.expert_world). Met by the
    domain's degree wherever tensor parallelism takes the node; narrowed to their gcd, which still divides the
    experts, where a named architecture's heads or a one-replica fleet leave fewer ranks."""
    if not layout.expert:
        return layout
    ranks = layout.tensor * (layout.context or 1) * layout.data
    expert = math.gcd(layout.expert, ranks)
    if expert == layout.expert:
        return layout
    return layout.model_copy(update={"expert": expert if expert > 1 else None})


def gpu_parallelism(training: bool, gpus_per_node: int, nodes: int, min_chips_for_memory: int,
                    replica_chips: int | None, expert: int | None = None, domain_unit_nodes: int = 1,
                    context: int = 0, pipeline: int = 0, tensor: int = 0, heads: int = 0,
                    layers: int = 0) -> Parallelism:
    """The parallelism of a GPU plan: training from the state's memory, serving from its replica; `expert`,
    the expert-parallel degree of a mixture-of-experts model, is part of a training layout, and so is a
    tensor-parallel group spanning nodes of one NVLink domain placed as a unit of `domain_unit_nodes` nodes (a
    serving replica's tensor parallelism spans nodes only within that span, `serving_parallelism`); `context`, a
    long sequence's context-parallel degree, `pipeline` its deeper pipeline and `tensor` its widened tensor group
    (`training_degrees`); `heads` and `layers`, a named architecture's (`within_heads`)."""
    if training or replica_chips is None:
        layout = training_parallelism(min_chips_for_memory, gpus_per_node, nodes, domain_unit_nodes, context,
                                      pipeline, tensor, heads, layers)
        return layout.model_copy(update={"expert": expert}) if expert and expert > 1 else layout
    return serving_parallelism(replica_chips, gpus_per_node, nodes, domain_unit_nodes)
