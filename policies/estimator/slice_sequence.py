"""A long sequence on a TPU slice: ICI tensor and context parallelism beside the FSDP-sharded state.

The same activation count as on GPUs (policies/estimator/activations.py `micro_batch_bytes`: Korthikanti et al.
2022, full recomputation, micro-batch 1, over the tensor x context-parallel chips that share the sequence); only
the state is laid out differently. MaxText, the default TPU program (accel/job/manifests.py), shards the training
state FSDP over the whole slice (`ici_fsdp_parallelism: -1`, its default, takes what the other ICI axes leave), so
a chip holds state / slice chips of it, not state / (TP x PP) as a GPU replica does; a pipeline is not used.

The rule, in the order the GPU rule takes its steps (tensor parallelism first, then context parallelism, powers of
two): for each slice the generation offers, smallest first, from the smallest that holds the state (`min_chips`)
to the most chips one slice may take (`max_slice_chips`: the workload's bound or the generation's largest slice;
a multislice is data parallel across slices, so each slice holds the state and the sequence on its own), the
first of ICI TP1, TP2, ... up to `max_tensor` (one host's chips), then ICI CP2, CP4, ... (TP x CP dividing the
slice: MaxText's ICI axes multiply to its chips, `ici_contexts`) at that most tensor
parallelism, whose share of one sequence fits beside the slice's share of the state. The smallest slice with any
fit wins, with the least split of the sequence within it. Where none does, the sequence cannot train there: the
refusal names model.sequence_length and the longest that would fit.

MaxText's context parallelism (`ici_context_parallelism`) splits each sequence into 2 x CP chunks for its
load-balanced causal mask (`context_parallel_load_balance`, default True, src/maxtext/configs/types.py:1127) and
requires the length to divide by them (`reorder_sequence`, src/maxtext/utils/max_utils.py:872-877: "cp_size must
be a multiple of 2", "seq_len % (cp_size * 2)"; github.com/AI-Hypercomputer/maxtext at e591f30c, 2026-08-22): the
same rule as Megatron-LM's, activations.CHUNKS_PER_RANK and `largest_context`.

The key/value exchange of the context-parallel ranks is not costed (MaxText's default strategy gathers the keys
and values, `context_parallel_strategy: all_gather`, types.py:1128-1131): activations.CONTEXT_EXCHANGE says so.
"""

from __future__ import annotations

import math

from typing import TYPE_CHECKING, Sequence

from accel.policies.estimator.activations import SequenceFit, largest_context, micro_batch_bytes, powers_of_two

if TYPE_CHECKING:
    from accel.policies.catalog.model import Accelerator, Defaults
    from accel.policies.estimator.estimate import Resolved
    from accel.policies.workload import WorkloadSpec

# Said beside the context-parallel degree: MaxText's default strategy gathers keys and values, it runs no ring.
SLICE_EXCHANGE = ("the context-parallel key/value exchange (MaxText's default context_parallel_strategy all_gather: "
                  "each layer's keys and values gathered over the CP ranks on the slice's ICI) is not costed in the "
                  "estimate's hours")
# Said where the chosen layout is recorded (the estimate's assumption on activation memory).
SLICE_LAYOUT = ("MaxText lays it out on the slice's ICI: ici_tensor_parallelism x ici_context_parallelism chips per "
                "sequence, ici_fsdp_parallelism -1 (its default) sharding the state over the whole slice")


def ici_contexts(chips: int, tensor: int, max_context: int) -> list[int]:
    """The context-parallel degrees (CP2, CP4, ...) a `chips`-chip slice at ICI TP`tensor` can run: within the
    sequence's own most (`max_context`) and dividing the slice, since MaxText's ICI axes multiply to its chips
    (ici_fsdp_parallelism -1 takes the quotient; a v5p 4x4x12 slice's 192 chips take TP4 x CP16, not CP32)."""
    return [context for context in powers_of_two(min(max_context, chips // tensor))[1:]
            if chips % (tensor * context) == 0]


def slice_sequence_fit(sequence_length: int, layers: float, hidden: float, state_bytes: float, usable_bytes: float,
                        min_chips: int, slice_sizes: Sequence[int], max_tensor: int) -> SequenceFit:
    """The layout one TPU slice needs for `sequence_length` (`layers` x `hidden` model; `state_bytes`, the state
    with the sizing's activation headroom, sharded FSDP over the slice; `usable_bytes` of HBM per chip), over
    `slice_sizes` (the chip counts of the slices allowed, any order): see the module's docstring. `min_chips` is the
    fewest chips holding the state, the layout the state alone sets (TP1, CP1)."""
    alone = micro_batch_bytes(sequence_length, hidden, layers)
    sizes = sorted(n for n in set(slice_sizes) if n >= min_chips)
    own = sizes[0] if sizes else min_chips
    # Past the room the state's share of the smallest slice leaves (a larger slice's FSDP share leaves more): what
    # the sizing's headroom was to allow them.
    past_headroom = state_bytes / own + alone > usable_bytes
    max_context = largest_context(sequence_length)

    def fit(context: int, tensor: int, chips: int, most_context: int = max_context) -> SequenceFit:
        whole = micro_batch_bytes(sequence_length, hidden, layers, tensor)
        return SequenceFit(context, tensor, 1, 1, sequence_length, state_bytes / chips / 1e9,
                           whole / max(context, 1) / 1e9, whole / 1e9, usable_bytes / 1e9, past_headroom,
                           most_context, tensor != 1, exchange=SLICE_EXCHANGE, slice_chips=chips,
                           own_slice_chips=own)

    if not sizes or state_bytes / own + alone <= usable_bytes:
        return fit(1, 1, own)
    for chips in sizes:
        room = usable_bytes - state_bytes / chips
        tensors = [t for t in powers_of_two(min(max_tensor, chips)) if chips % t == 0]
        for tensor in tensors:
            if micro_batch_bytes(sequence_length, hidden, layers, tensor) <= room:
                return fit(1, tensor, chips)
        tensor = tensors[-1]
        for context in ici_contexts(chips, tensor, max_context):
            if micro_batch_bytes(sequence_length, hidden, layers, tensor, context) <= room:
                return fit(context, tensor, chips)
    largest = sizes[-1]
    tensor = powers_of_two(min(max_tensor, largest))[-1]
    return fit(0, tensor, largest, ([1] + ici_contexts(largest, tensor, max_context))[-1])


def slice_sequence_fit_of(spec: WorkloadSpec, resolved: Resolved, defaults: Defaults, accelerator: Accelerator,
                          min_chips: int, slice_sizes: Sequence[int], max_tensor: int) -> SequenceFit:
    """`slice_sequence_fit` for a training workload on a TPU generation: the model's layers and width (given, else
    estimated: estimate.model_architecture), its state with the headroom (estimate.training_memory_bytes) and the
    chip's usable HBM, as activations.sequence_fit_of reads them for a GPU."""
    from accel.policies.estimator.estimate import model_architecture, training_memory_bytes, usable_hbm_bytes
    from accel.policies.architectures import architecture_heads

    layers, hidden, _ = model_architecture(spec, defaults)
    # A named architecture's heads bound the ICI tensor degree: MaxText shards the query and KV heads over the
    # mesh's tensor axis (base.yml logical_axis_rules 'heads' and 'kv_heads'), as Megatron splits them over its
    # tensor ranks (Architecture.tensor_heads): Qwen3 MoE's 4 KV heads take at most ICI TP4.
    heads, _ = architecture_heads(spec.model.architecture)
    if heads:
        max_tensor = math.gcd(max_tensor, heads)
    return slice_sequence_fit(spec.model.sequence_length, layers, hidden, training_memory_bytes(spec, resolved),
                              usable_hbm_bytes(accelerator, resolved),
                              min_chips, slice_sizes, max_tensor)
