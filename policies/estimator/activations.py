"""Activation memory of one training micro-batch, and the context parallelism a long sequence needs to fit.

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv:2205.05198,
section 4 and Table 2), count the bytes one transformer layer keeps for the backward pass, for a micro-batch
of b sequences of s tokens, hidden width h, a attention heads, tensor-parallel degree t (16-bit activations):

    no recomputation, tensor + sequence parallel    s*b*h*(34 + 5*a*s/h) / t
    selective recomputation (attention recomputed)  34*s*b*h / t
    full recomputation                              2*s*b*h per layer kept (the layer's input), the rest rebuilt

The regime accel assumes is FULL recomputation with sequence parallelism, the frugal one long-context runs fall
back to: each layer keeps only its input, split over the tensor-parallel ranks by sequence parallelism
(2*s*b*h/t), and the backward pass rebuilds one layer at a time, whose working set is the selective figure
(34*s*b*h/t; the 5*a*s/h attention term is never stored: flash attention recomputes the scores in its kernel).
Why that regime: it is what makes the published layouts fit. Llama 3 405B trained at 8,192 tokens on TP8 x PP16
without context parallelism and at 131,072 tokens on TP8 x CP16 x PP16 (Dubey et al. 2024, Table 4); under
selective recomputation alone even the 8,192-token layout would not fit an 80 GB H100 beside its state, and
under full recomputation both do, the long one at CP16 (tests/test_activations.py). Its price, re-running each
layer's forward pass (~30% more compute, Megatron Bridge "Activation Recomputation"), is not charged: the MFU
model is fitted on published whole runs, which recompute as they need to.

A pipeline does not shrink it: under the 1F1B schedule the first stage holds activations for p micro-batches
of L/p layers each, L layers' worth whatever p (Korthikanti et al. section 4.2.3). Context parallelism (CP)
does: each of CP ranks holds s/CP tokens of every layer (Megatron-Core `context_parallel_size`; ring
attention passes the keys and values around the CP group).

    activation bytes per GPU = (L x 2*s*b*h + 34*s*b*h) / (t x CP),  b = 1

A GPU must hold its share of the training state (the sizing's state with its activation headroom, sharded over
the tensor x pipeline group) beside that; the headroom stays as the allowance for what the formula leaves out
(the fp32 logits and loss, communication buffers). CP is the smallest power of two that fits, 1 at the usual
lengths.

Which pipeline depth: a deeper pipeline does not shrink the activations but does shrink the state per GPU, and
where the state nearly fills the GPU that is what leaves them room (Llama 3 405B on a 141 GB H200: at the state's
own PP8, 126.6 GB of state leave 0.3 GB, and CP256 would split each sequence into 512-token chunks whose exchange
the attention cannot hide; at PP16 the state halves and CP2 fits, a 256-GPU replica instead of 16,384). So every
pipeline depth is tried, powers of two from the state's own up to the model's layers (a stage holds at least one
layer; an uneven split like Llama 3's 126 layers over 16 stages is allowed, as the state's own layout already
allows it), each with its smallest fitting CP, and the rule is:

- the SHALLOWEST depth at which that CP's key/value exchange is hidden under the attention it overlaps
  (`ring_exchange`; CP1 has none to hide). While hidden, CP costs nothing but GPUs the sequence needs anyway; a
  deeper pipeline costs its bubble ((p - 1) / (m + p - 1) of each step for m micro-batches) and needs more
  micro-batches per replica to amortise it, so it is taken only where the shallower one would expose the ring.
  Where the state's own depth already hides it the layout is as before: Llama 3's own TP8 x CP16 x PP16 on H100
  (Table 4), the H100 example's TP8 x CP8 x PP16.
- where no depth hides it, the layout with the SMALLEST replica (TP x CP x PP GPUs; the shallower of equals),
  its exposed milliseconds named in the rationale as before (not charged).

Where accel knows no fabric for the chip (no [collective_fabrics] entry) the exchange cannot be judged, and the
state's own depth is kept with its smallest fitting CP.

The sequence length must divide by 2 x CP: Megatron-LM asserts `seq_length % (context_parallel_size * 2) == 0`
(megatron/training/arguments.py:1335-1337) because it splits each sequence into 2 x CP chunks, rank i taking
chunks i and 2CP-1-i to balance the causal mask (megatron/core/utils.py:2504-2561,
`_get_batch_on_this_cp_rank_per_sequence_balancing`; github.com/NVIDIA/Megatron-LM at d98e8a64, 2026-08-22).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from accel.policies.parallelism import training_degrees

if TYPE_CHECKING:
    from accel.policies.catalog.model import Accelerator, Defaults
    from accel.policies.estimator.estimate import Resolved
    from accel.policies.workload import WorkloadSpec

SOURCE = ("Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models' "
          "(arXiv:2205.05198), section 4 and Table 2")
REGIME = ("full recomputation with sequence parallelism: each layer keeps its input, 2*s*h bytes split over the "
          "tensor-parallel ranks, for every layer (a 1F1B pipeline's first stage holds p micro-batches of L/p "
          "layers: L layers whatever p, section 4.2.3), plus one layer rebuilt in the backward pass, 34*s*h bytes "
          "(the selective-recomputation figure; flash attention keeps no 5*a*s/h scores); micro-batch 1; "
          "divided by tensor x context parallelism")
# Said where the exchange could not be set against a fabric (a chip without a [collective_fabrics] entry).
CONTEXT_EXCHANGE = ("the context-parallel key/value exchange (ring attention, each layer's keys and values passed "
                    "around the CP ranks, overlapped with the attention it feeds) is not costed in the estimate's "
                    "hours")
KV_BYTES = 2.0   # bf16 keys and values
CAUSAL_SHARE = 0.5   # a causal mask leaves half of each ring step's block to compute (2 x CP chunks balance it)
KEPT_BYTES_PER_TOKEN_WIDTH = 2.0       # full recomputation: a layer's input, 16-bit
WORKING_BYTES_PER_TOKEN_WIDTH = 34.0   # one layer's stored activations under selective recomputation
ATTENTION_SCORE_BYTES = 5.0            # per head per token pair, without recomputation (scores, softmax, dropout)
# Megatron-Core splits each sequence into 2 x CP chunks (rank i takes chunks i and 2CP-1-i, balancing the causal
# mask): the sequence length must divide by 2 x CP (Megatron-LM megatron/training/arguments.py:1335-1337, asserting
# seq_length % (context_parallel_size * 2) == 0; the split in megatron/core/utils.py:2504-2561; at commit d98e8a64).
CHUNKS_PER_RANK = 2
NO_LIMIT_NODES = 1 << 30   # a fleet large enough that only the state bounds the layout


def layer_bytes(sequence: float, hidden: float, heads: float, micro_batch: float = 1.0, tensor: int = 1,
                regime: str = "full") -> float:
    """Bytes one transformer layer keeps for the backward pass per GPU, by Korthikanti et al. 2022 Table 2 (tensor
    and sequence parallel over `tensor` ranks): "none" s*b*h*(34 + 5*a*s/h)/t, "selective" 34*s*b*h/t, "full"
    2*s*b*h/t (the layer's input)."""
    sbh = sequence * micro_batch * hidden
    if regime == "none":
        return sbh * (WORKING_BYTES_PER_TOKEN_WIDTH + ATTENTION_SCORE_BYTES * heads * sequence / hidden) / tensor
    if regime == "selective":
        return sbh * WORKING_BYTES_PER_TOKEN_WIDTH / tensor
    if regime == "full":
        return sbh * KEPT_BYTES_PER_TOKEN_WIDTH / tensor
    raise ValueError(f"regime must be none, selective or full, not {regime!r}")


def micro_batch_bytes(sequence: float, hidden: float, layers: float, tensor: int = 1, context: int = 1) -> float:
    """Activation bytes per GPU of one micro-batch (one sequence) under accel's regime: every layer's kept input
    plus one layer rebuilt, over tensor x context-parallel ranks."""
    whole = (layers * layer_bytes(sequence, hidden, 0, regime="full")
             + layer_bytes(sequence, hidden, 0, regime="selective"))
    return whole / (tensor * context)


@dataclass(frozen=True)
class SequenceFit:
    """How one sequence's activations sit beside the training state on one GPU of a layout."""

    context: int                 # context-parallel degree (1: none); 0 when no degree fits
    tensor: int
    pipeline: int
    tensor_nodes: int            # nodes one tensor-parallel group spans
    sequence_length: int
    state_gb: float              # per GPU: the state with its headroom over tensor x pipeline
    activation_gb: float         # per GPU at `context`
    activation_gb_alone: float   # per GPU without context parallelism, at the layout's tensor degree
    usable_gb: float
    past_headroom: bool          # the activations outgrow the headroom the sizing allows for them
    max_context: int             # the largest degree the sequence splits into (2 x CP chunks)
    widened: bool = False        # tensor parallelism widened for the sequence (the state alone needed own_tensor)
    exchange: str = CONTEXT_EXCHANGE   # the key/value exchange against its fabric (ring_exchange), said beside why
    own_pipeline: int = 0        # the pipeline depth the state alone sets (0: `pipeline`)
    own_tensor: int = 0          # the tensor degree the state alone sets (0: `tensor`)
    unhidden: bool = False       # no depth hides the exchange: the smallest replica was taken
    slice_chips: int = 0         # a TPU slice's layout (policies/estimator/slice_sequence.py): the smallest slice
    own_slice_chips: int = 0     # holding state and sequence, and the state's own; 0 on GPUs

    @property
    def floor_chips(self) -> int:
        """The fewest chips the layout trains on: a GPU replica (TP x CP x PP), or a TPU slice whose FSDP share of
        the state leaves one sequence room."""
        return self.slice_chips or self.replica_gpus

    @property
    def deepened(self) -> bool:
        """Whether the sequence's layout runs a deeper pipeline than the state's own (halving the state per GPU)."""
        return self.own_pipeline > 0 and self.pipeline != self.own_pipeline

    @property
    def changes_layout(self) -> bool:
        """Whether the sequence moves the layout off the state's own (a context-parallel degree, a wider tensor
        group, a deeper pipeline, or no fit at all)."""
        return self.context != 1 or self.widened or self.deepened or self.slice_chips != self.own_slice_chips

    @property
    def fits(self) -> bool:
        return self.context >= 1

    @property
    def replica_gpus(self) -> int:
        """GPUs of one model replica: tensor x context x pipeline."""
        return self.tensor * max(self.context, 1) * self.pipeline

    def why(self) -> str:
        """Why the layout has this context-parallel degree, in figures."""
        tokens = f"one {self.sequence_length:,}-token micro-batch's activations"
        if self.slice_chips:
            return self._slice_why(tokens)
        reason = ("no depth hides the key/value exchange, and this is the smallest replica that fits" if self.unhidden
                  else "the shallowest depth at which the key/value exchange is hidden")
        deeper = (f"; the pipeline deepened from PP{self.own_pipeline} to PP{self.pipeline} ({self.state_gb:,.1f} GB of "
                  f"state per GPU): {reason}" if self.deepened else "")
        if self.context == 1 and self.deepened:
            return (f"{tokens} take {self.activation_gb_alone:,.1f} GB per GPU at TP{self.tensor}, past the room the "
                    f"state leaves at PP{self.own_pipeline}; at PP{self.pipeline} they fit beside {self.state_gb:,.1f} "
                    f"GB of state ({self.usable_gb:,.1f} GB usable): no context parallelism (TP{self.tensor} x "
                    f"PP{self.pipeline}, a {self.replica_gpus:,}-GPU replica)")
        if self.context == 1:
            wider = (f" (tensor parallelism widened for them: the state alone needed TP{self.own_tensor})"
                     if self.widened else "")
            return (f"{tokens} take {self.activation_gb_alone:,.1f} GB per GPU at TP{self.tensor}{wider} beside "
                    f"{self.state_gb:,.1f} GB of state, within the {self.usable_gb:,.1f} GB usable: no context "
                    "parallelism")
        if self.context == 0:
            return (f"{tokens} take {self.activation_gb_alone:,.1f} GB per GPU at TP{self.tensor} beside "
                    f"{self.state_gb:,.1f} GB of state, and no context-parallel degree up to CP{self.max_context} "
                    f"brings them within the {self.usable_gb:,.1f} GB usable")
        return (f"context parallelism {self.context}: {tokens} take {self.activation_gb_alone:,.1f} GB per GPU at "
                f"TP{self.tensor}, past the {self.usable_gb - self.state_gb:,.1f} GB left beside "
                f"{self.state_gb:,.1f} GB of state ({self.usable_gb:,.1f} GB usable); split over {self.context} "
                f"ranks they take {self.activation_gb:,.1f} GB (TP{self.tensor} x CP{self.context} x "
                f"PP{self.pipeline}, a {self.replica_gpus:,}-GPU replica{deeper})")

    def _slice_why(self, tokens: str) -> str:
        """why() on a TPU slice: ICI tensor and context parallelism share the sequence, FSDP the state."""
        state = (f"{self.state_gb:,.1f} GB of state per chip (FSDP over the {self.slice_chips:,}-chip slice; "
                 f"{self.usable_gb:,.1f} GB usable)")
        if not self.fits:
            return (f"{tokens} take {self.activation_gb_alone:,.1f} GB per chip at ICI TP{self.tensor} beside {state} "
                    f"in the largest slice allowed, and no ICI context-parallel degree up to CP{self.max_context} "
                    "brings them within it")
        layout = f"ICI TP{self.tensor}" + (f" x CP{self.context}" if self.context > 1 else "")
        own = (f"; the state alone needs {self.own_slice_chips:,} chips" if self.slice_chips != self.own_slice_chips
               else "")
        if self.context > 1:
            return (f"context parallelism {self.context}: {tokens} take {self.activation_gb_alone:,.1f} GB per chip "
                    f"at ICI TP{self.tensor}, past the {self.usable_gb - self.state_gb:,.1f} GB left beside {state}; "
                    f"split over {self.context} ranks they take {self.activation_gb:,.1f} GB ({layout}: "
                    f"{self.tensor * self.context} chips per sequence{own})")
        return (f"{tokens} take {self.activation_gb:,.1f} GB per chip at {layout} beside {state}: no context "
                f"parallelism ({layout}: {self.tensor} chips per sequence{own})")

    def longest_sequence(self, context: int) -> int:
        """The longest sequence whose activations fit beside the state at `context` (0: not even one token), a
        multiple of the 2 x CP chunks it is split into under context parallelism (CHUNKS_PER_RANK)."""
        room = self.usable_gb - self.state_gb
        if room <= 0:
            return 0
        per_token = self.activation_gb_alone / self.sequence_length
        tokens = int(room * context / per_token)
        chunks = CHUNKS_PER_RANK * context if context > 1 else 1
        return tokens - tokens % chunks


def powers_of_two(limit: float) -> list[int]:
    """1, 2, 4, ... up to `limit`: the degrees a layout tries (pipeline depths, context- and tensor-parallel
    degrees here and on TPU slices, slice_sequence.py)."""
    degrees = [1]
    while degrees[-1] * 2 <= limit:
        degrees.append(degrees[-1] * 2)
    return degrees


def largest_context(sequence_length: int) -> int:
    """The largest context-parallel degree (a power of two) a sequence splits into: its length must divide by the
    2 x CP chunks of the load-balanced split (CHUNKS_PER_RANK; Megatron-LM and MaxText alike)."""
    max_context = max(1, 1 << int(math.log2(max(1, sequence_length // CHUNKS_PER_RANK))))
    while max_context > 1 and sequence_length % (CHUNKS_PER_RANK * max_context):
        max_context //= 2
    return max_context


def sequence_fit(sequence_length: int, layers: float, hidden: float, state_bytes: float, headroom: float,
                 usable_bytes: float, min_chips: int, gpus_per_node: int, domain_unit_nodes: int = 1,
                 hides: Callable[[int, int], bool] | None = None, max_gpus: int | None = None) -> SequenceFit:
    """The layout a GPU training replica needs for `sequence_length` (`layers` x `hidden` model; `state_bytes`, the
    state with its `headroom` share for activations; `usable_bytes` of HBM per GPU), starting from the layout
    policies/parallelism.py derives from `min_chips` (the fewest GPUs holding the state). Tensor parallelism widens
    first, to the narrowest group that holds the sequence; context parallelism comes after it has taken the whole
    node (or the nodes of an NVLink domain its tensor group already spans for the state), the cheaper split.

    `hides(tensor, context)`: whether the key/value exchange of TP`tensor` x CP`context` is hidden under the
    attention it overlaps (`ring_exchange` against the fabric). Given it, every pipeline depth from the state's own
    up to the model's layers (powers of two) is tried with its smallest fitting CP, and the shallowest whose
    exchange hides wins; where none hides, the smallest replica (see the module's docstring). Without it (a chip
    whose fabric accel does not know), the state's own depth with its smallest fitting CP.

    `max_gpus`: the most GPUs a replica may take (the workload's max_chips, or a pinned fleet). The
    rule chooses among the layouts within it where any fits (Llama 3 405B at 131,072 tokens within 512 H100: TP8 x
    CP2 x PP32, not a refusal for want of the 1,024 GPUs TP8 x CP8 x PP16 takes), else as without it (the refusal
    then names that layout)."""
    tensor, own_pipeline, _, span = training_degrees(min_chips, gpus_per_node, NO_LIMIT_NODES, domain_unit_nodes)
    tensor_alone = tensor
    alone = micro_batch_bytes(sequence_length, hidden, layers, tensor)
    state = state_bytes / (tensor * own_pipeline)
    max_context = largest_context(sequence_length)
    past_headroom = alone > state * headroom / (1.0 + headroom)

    def fit(context: int, t: int, pipeline: int, a: float, unhidden: bool = False) -> SequenceFit:
        s = state_bytes / (t * pipeline)
        return SequenceFit(context, t, pipeline, span, sequence_length, s / 1e9, a / max(context, 1) / 1e9,
                           a / 1e9, usable_bytes / 1e9, past_headroom, max_context, t != tensor_alone,
                           own_pipeline=own_pipeline, own_tensor=tensor_alone, unhidden=unhidden)

    if state + alone <= usable_bytes:
        return fit(1, tensor, own_pipeline, alone)
    # The state fitted in part of a node: tensor parallelism widens first, doubling up to the node (or the nodes of
    # its NVLink domain), and stops at the narrowest group that holds the sequence: every doubling adds collectives
    # per FLOP, so a 1.9B model whose 4,096-token sequence needs two A100-40GB trains at TP2, not TP8.
    while tensor < gpus_per_node * span:
        tensor = min(tensor * 2, gpus_per_node * span)
        alone = micro_batch_bytes(sequence_length, hidden, layers, tensor)
        if state_bytes / (tensor * own_pipeline) + alone <= usable_bytes:
            return fit(1, tensor, own_pipeline, alone)

    def smallest_context(pipeline: int) -> int:
        """The smallest context-parallel degree fitting beside the state at `pipeline` (0: none up to max_context)."""
        room = usable_bytes - state_bytes / (tensor * pipeline)
        return next((context for context in powers_of_two(max_context) if alone / context <= room), 0)

    # A stage holds at least one layer: the depths run from the state's own to the most whole layers allow.
    depths = ([own_pipeline * step for step in powers_of_two(layers / own_pipeline)] if hides is not None
              else [own_pipeline])
    fitting = [(pipeline, context) for pipeline in depths if (context := smallest_context(pipeline))]
    if not fitting:
        return fit(0, tensor, own_pipeline, alone)
    if max_gpus is not None:
        within = [(pipeline, context) for pipeline, context in fitting if tensor * context * pipeline <= max_gpus]
        fitting = within or fitting
    for pipeline, context in fitting:   # the shallowest depth whose exchange is hidden (CP1: none to hide)
        if hides is None or context == 1 or hides(tensor, context):
            return fit(context, tensor, pipeline, alone)
    # No depth hides it: the smallest replica (the shallowest of equals), its exposure named.
    pipeline, context = min(fitting, key=lambda pc: (pc[0] * pc[1], pc[0]))
    return fit(context, tensor, pipeline, alone, unhidden=True)


def sequence_fit_of(spec: WorkloadSpec, resolved: Resolved, defaults: Defaults, accelerator: Accelerator,
                    min_chips: int, gpus_per_node: int, domain_unit_nodes: int = 1,
                    machine_type: str | None = None, max_gpus: int | None = None) -> SequenceFit:
    """`sequence_fit` for a training workload on one GPU machine (`machine_type`, whose own NVLink domain counts
    where the hardware table states one): the model's layers and width (given, else estimated:
    estimate.model_architecture), its state with the headroom (estimate.training_memory_bytes), the accelerator's
    usable HBM, and the key/value exchange of its context parallelism against the fabric it crosses."""
    from accel.policies.estimator.estimate import model_architecture, training_memory_bytes, usable_hbm_bytes

    from accel.policies import hardware

    layers, hidden, _ = model_architecture(spec, defaults)
    sequence = spec.model.sequence_length
    fabric = hardware.current().collective_fabric(accelerator.id, machine_type)

    def exchange(tensor: int, context: int) -> tuple[float, float, str]:
        # CP ranks are whole tensor-parallel groups: inside one NVLink domain while TP x CP GPUs fit in it, else
        # over the scale-out network, one GPU to its counterpart in the next group.
        assert fabric is not None
        inside = fabric.domain_chips and tensor * context <= fabric.domain_chips
        link = (f"the {fabric.domain_chips}-GPU NVLink domain ({fabric.scale_up_gbytes_per_s:g} GB/s per GPU)"
                if inside else f"the scale-out network ({fabric.scale_out_gbps:g} Gb/s per GPU)")
        speed = fabric.scale_up_gbytes_per_s * 1e9 if inside else fabric.scale_out_gbps * 1e9 / 8
        return ring_exchange(sequence, hidden, defaults.inference.kv_cache_width.value, tensor, context,
                             accelerator.peak_bf16_tflops * 1e12, speed, link)

    def hides(tensor: int, context: int) -> bool:
        transfer, attention, _ = exchange(tensor, context)
        return transfer <= attention

    fit = sequence_fit(sequence, layers, hidden, training_memory_bytes(spec, resolved),
                       resolved["activation_headroom"], usable_hbm_bytes(accelerator, resolved),
                       min_chips, gpus_per_node, domain_unit_nodes, hides if fabric is not None else None, max_gpus)
    if fit.context < 2 or fabric is None:
        return fit
    _, _, words = exchange(fit.tensor, fit.context)
    return replace(fit, exchange=f"{words} (fabric: policies/hardware/facts.toml [collective_fabrics."
                                 f"{accelerator.id}]; key/value width: {defaults.inference.kv_cache_width.source})")


def ring_exchange(sequence: int, hidden: float, kv_width: float, tensor: int, context: int, peak_flops: float,
                  link_bytes_per_s: float, link: str) -> tuple[float, float, str]:
    """(seconds to pass one key/value chunk, seconds of the attention it feeds, the words): one step of ring
    attention on a CP rank. Each of the CP - 1 steps of a layer sends the rank's chunk of s/CP tokens' keys and
    values (`kv_width` wide, split over the tensor-parallel ranks, 2 bytes each) to the next rank while it
    computes its queries against the chunk it holds (QK^T and PV: 4 x (s/CP)^2 x hidden/TP FLOPs, half of it
    under the causal mask of a load-balanced ring), so the
    exchange is hidden wherever it is the shorter (Megatron-Core's ring overlaps them). The attention is timed
    at the chip's peak, the least time it can take: the most conservative side for hiding. The backward pass
    and the recomputed forward send and compute in the same proportion."""
    chunk = sequence / context
    transfer = chunk * 2 * (kv_width / tensor) * KV_BYTES / link_bytes_per_s
    attention = 4.0 * CAUSAL_SHARE * chunk * chunk * (hidden / tensor) / peak_flops
    hidden_words = ("hidden under the attention it feeds, not charged" if transfer <= attention else
                    f"{(transfer - attention) * 1e3:,.3g} ms of each step exposed, not charged")
    words = (f"the context-parallel key/value exchange (ring attention) passes {chunk:,.0f} tokens' keys and values, "
             f"{transfer * 1e3:,.3g} ms per ring step over {link}, against {attention * 1e3:,.3g} ms of the "
             f"attention it overlaps at the chip's peak: {hidden_words}")
    return transfer, attention, words
