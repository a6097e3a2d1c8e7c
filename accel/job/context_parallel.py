"""A long sequence's context parallelism, handed to the training program.

The Plan's layout carries a context-parallel degree where one sequence's activations do not fit beside the
state (policies/estimator/activations.py): TP x CP x PP GPUs hold one model replica, DP replicas the fleet.
The program must be told, or it lays the ranks out as TP x PP x DP and runs out of memory. The default MaxText
command gets its mesh axes (accel/job/runtime.yaml context_parallel), the default Megatron-LM command its flags
(accel/job/megatron_run.py); a program of the user's own is told in the job's notes which Megatron-Core / NeMo
arguments carry the degrees.
A long sequence's layout may instead (or as well) run a deeper pipeline than the state's own (the estimate's
details.pipeline_parallel), or only widen tensor parallelism (details.context_parallel 1): it is
told the same way. Nothing is written for the state's own layout.

On a TPU slice (no GPU layout: plan.parallelism is None) the estimate records the ICI degrees the sequence needs
(details.tensor_parallel, details.context_parallel; policies/estimator/slice_sequence.py): the default MaxText
command gets ici_tensor_parallelism and ici_context_parallelism, ici_fsdp_parallelism -1 (MaxText's default)
sharding the state over the rest of the slice; a command of the user's own is told them in the notes.
MaxText counts those axes and its per_device_batch_size in JAX devices (accel/job/tpu_devices.py), one per chip but
on TPU7x, two: there the chips' share of a sequence is split over both devices of each chip (slice_layout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from accel.base.errors import UsageError
from accel.job.facts import runtime
from accel.policies.parallelism import Parallelism

if TYPE_CHECKING:
    from accel.policies.plan import Plan


def sequence_layout(plan: Plan) -> bool:
    """Whether the plan's layout is a long sequence's: a context-parallel degree, a pipeline deeper than the
    state's own (details.pipeline_parallel), or tensor parallelism widened for the sequence alone
    (details.context_parallel 1: the estimate records it wherever the sequence moved the layout,
    policies/estimator/activations.py SequenceFit.changes_layout)."""
    layout, details = plan.parallelism, plan.estimate.details
    return layout is not None and bool(layout.context or "pipeline_parallel" in details
                                       or "context_parallel" in details)


def maxtext_sequence_args(sequence_length: int, chips_per_sequence: int, batch_sequences: int = 0,
                          chips: int = 0) -> str:
    """The MaxText arguments that train at the plan's sequence length with one sequence shared by
    `chips_per_sequence` chips (TP x CP): max_target_length, and per_device_batch_size 1 / (TP x CP), written
    exactly (a power of two's reciprocal has a finite decimal). Given the plan's global batch (`batch_sequences`)
    and the job's `chips`, gradient_accumulation_steps brings MaxText's batch (chips x per_device_batch_size
    sequences per micro-step, times the steps accumulated) up to the plan's, where one micro-step holds fewer."""
    flags = runtime()["context_parallel"]["maxtext_sequence"]
    args = (f"{flags['length']}={sequence_length} "
            f"{flags['batch_per_chip']}={repr(1.0 / chips_per_sequence) if chips_per_sequence > 1 else '1'}")
    per_step = chips // chips_per_sequence
    if per_step and batch_sequences > per_step:
        args += f" {flags['accumulation']}={-(-batch_sequences // per_step)}"
    return args


def maxtext_mesh_args(layout: Parallelism, long_sequence: bool = False, sequence_length: int | None = None,
                      batch_sequences: int = 0) -> str:
    """The MaxText arguments that lay a TP x CP x PP replica out (ici_fsdp_parallelism -1, its default, takes the
    data-parallel rest), and, given the `sequence_length`, the length and per-chip batch of that layout
    (maxtext_sequence_args, with the steps accumulated to the plan's `batch_sequences` over the layout's
    TP x CP x PP x DP GPUs); empty unless the layout is a long sequence's (context parallelism, or
    `long_sequence`: sequence_layout)."""
    if not (layout.context or long_sequence):
        return ""
    flags = runtime()["context_parallel"]["maxtext"]
    degrees = {"tensor": layout.tensor, "context": layout.context or 1, "pipeline": layout.pipeline}
    mesh = " ".join(f"{flags[axis]}={degree}" for axis, degree in degrees.items() if degree > 1)
    if sequence_length is None:
        return mesh
    group = layout.tensor * (layout.context or 1)
    world = group * layout.pipeline * layout.data
    return f"{mesh} {maxtext_sequence_args(sequence_length, group, batch_sequences, world)}"


def notes(layout: Parallelism | None, framework: str, written: bool, long_sequence: bool = False,
          sequence_length: int | None = None, batch_sequences: int = 0) -> list[str]:
    """What the job says of a long sequence's layout (context parallelism, or `long_sequence`: sequence_layout):
    the flags it wrote into the default command (`written`), else the ones the user's program must be given."""
    if layout is None or not (layout.context or long_sequence):
        return []
    table = runtime()["context_parallel"]
    world = layout.replica_gpus * layout.data
    split = (f"context parallelism {layout.context}: one sequence is split over {layout.context} tensor-parallel "
             "groups" if layout.context else
             f"a long sequence's layout without context parallelism: tensor parallelism {layout.tensor} and "
             f"pipeline parallelism {layout.pipeline} leave its activations room beside the state")
    context = f"CP{layout.context} x " if layout.context else ""
    head = (f"{split}; world size TP{layout.tensor} x {context}PP{layout.pipeline} x DP{layout.data} = "
            f"{world:,} ranks")
    packing = [table["maxtext_packing"]] if layout.context and framework != "pytorch" else []
    if written:
        mesh = maxtext_mesh_args(layout, long_sequence, sequence_length, batch_sequences)
        return [f"{head}; the MaxText mesh is passed as {mesh} "
                f"({table['maxtext_source']}; {table['maxtext_sequence_source']})", *packing]
    if framework == "pytorch":
        return [f"{head}; give the training program the same degrees: Megatron-LM {table['megatron']}, or NeMo "
                f"{table['nemo']} ({table['source']})"]
    flags = table["maxtext"]
    return [f"{head}; give the training program the same degrees: MaxText {flags['tensor']}, {flags['context']}, "
            f"{flags['pipeline']} ({table['maxtext_source']})", *packing]


@dataclass(frozen=True)
class SliceLayout:
    """A long sequence's layout on a TPU slice as MaxText is given it, in JAX devices: the estimate's ICI degrees
    over chips (`chip_tensor`, `chip_context`) and the devices each chip shows (`per_chip`). Where a chip is more
    than one device (TPU7x: two, each with half its HBM) the chips' share of a sequence is split over both, so each
    device holds half what the estimate sized a chip to hold: by context parallelism (the activations halve exactly,
    micro_batch_bytes / CP) where the length splits into its 2 x CP chunks, else by tensor parallelism."""

    chip_tensor: int
    chip_context: int
    per_chip: int
    context: int        # ici_context_parallelism, over devices
    tensor: int         # ici_tensor_parallelism, over devices

    @property
    def chips_per_sequence(self) -> int:
        return self.chip_tensor * self.chip_context

    @property
    def devices_per_sequence(self) -> int:
        return self.tensor * self.context


def slice_layout(plan: Plan) -> SliceLayout | None:
    """The layout of a long sequence's TPU slice (None where the state alone sets it, or on GPUs): the estimate's
    details.tensor_parallel and details.context_parallel over chips, on the slice's JAX devices (SliceLayout)."""
    from accel.job import tpu_devices
    from accel.job.plan_view import hardware
    from accel.policies.estimator.activations import largest_context

    details = plan.estimate.details
    if plan.parallelism is not None or "tensor_parallel" not in details:
        return None
    tensor, context = int(details["tensor_parallel"]), int(details.get("context_parallel", 1) or 1)
    if tensor <= 1 and context <= 1:
        return None
    each = tpu_devices.per_chip(hardware(plan).accelerator)
    if each == 1:
        return SliceLayout(tensor, context, 1, context, tensor)
    if context * each <= largest_context(plan.workload.model.sequence_length):
        return SliceLayout(tensor, context, each, context * each, tensor)
    return SliceLayout(tensor, context, each, context, tensor * each)


def slice_heads_problem(plan: Plan) -> str | None:
    """Why MaxText cannot run a long sequence's TPU slice layout (slice_layout) for the plan's named architecture, or
    None: its ICI tensor degree over devices must divide the query and the KV heads (Architecture.tensor_heads, the
    rule the estimate bounds the chips' degree by: policies/estimator/slice_sequence.py), as MaxText shards both over
    its tensor axis and replicates neither (runtime.yaml context_parallel.maxtext_heads_source). The estimate's
    degree over chips divides them; on TPU7x a length that does not split into more context-parallel chunks doubles
    it over the two devices of each chip, which may not."""
    from accel.job import model_run

    layout = slice_layout(plan)
    row = model_run.named_model(plan).architecture if layout is not None else None
    if row is None or row.tensor_heads % layout.tensor == 0:
        return None
    length = plan.workload.model.sequence_length
    return (f"model.architecture: {row.name}: a {length:,}-token sequence is shared by ICI TP{layout.chip_tensor}"
            + (f" x CP{layout.chip_context}" if layout.chip_context > 1 else "")
            + f" chips, {layout.per_chip} JAX devices each, which MaxText counts; {length:,} tokens do not split "
            f"into the 2 x CP{layout.chip_context * layout.per_chip} chunks context parallelism over the devices "
            f"needs, and tensor parallelism {layout.tensor} over them does not divide its {row.query_heads} query "
            f"and {row.kv_heads} KV heads, which MaxText shards over its tensor axis replicating neither "
            f"({runtime()['context_parallel']['maxtext_heads_source']}); give model.sequence_length a multiple of "
            f"{2 * layout.chip_context * layout.per_chip}, or pin a TPU of one device per chip")


def check_slice_heads(plan: Plan) -> None:
    """UsageError where MaxText would refuse the slice layout the default command is given (slice_heads_problem)."""
    problem = slice_heads_problem(plan)
    if problem:
        raise UsageError(problem)


def slice_degrees(plan: Plan) -> dict[str, int]:
    """The ICI degrees a long sequence's TPU slice layout takes, by MaxText axis, in JAX devices ({} where the state
    alone sets the layout, or on GPUs): slice_layout's, those above 1."""
    layout = slice_layout(plan)
    if layout is None:
        return {}
    flags = runtime()["context_parallel"]["maxtext"]
    degrees = {"tensor": layout.tensor, "context": layout.context}
    return {flags[axis]: degree for axis, degree in degrees.items() if degree > 1}


def slice_mesh_args(plan: Plan) -> str:
    """The MaxText arguments of a long sequence's TPU slice layout (slice_degrees) with its length and per-device
    batch (maxtext_sequence_args), empty where there is none."""
    layout = slice_layout(plan)
    if layout is None:
        return ""
    mesh = " ".join(f"{flag}={degree}" for flag, degree in slice_degrees(plan).items())
    sequences, devices = plan_batch(plan)
    sequence = maxtext_sequence_args(plan.workload.model.sequence_length, layout.devices_per_sequence, sequences,
                                     devices)
    return f"{mesh} {sequence}"


def plan_batch(plan: Plan) -> tuple[int, int]:
    """(the plan's global batch in sequences, the JAX devices its job runs on: chips x devices per chip, what
    MaxText multiplies per_device_batch_size by): the estimate's global batch (policies/estimator/estimate.py
    global_batch, the workload's or the default for its size)."""
    from accel.job import tpu_devices
    from accel.job.plan_view import hardware
    from accel.policies.catalog import load_catalog
    from accel.policies.estimator.estimate import batch_sequences, global_batch

    tokens, _ = global_batch(plan.workload, load_catalog().defaults)
    hw = hardware(plan)
    chips = hw.nodes * hw.chips_per_node
    return batch_sequences(plan.workload, tokens), (tpu_devices.devices(hw.accelerator, chips) if hw.family == "tpu"
                                                    else chips)


def slice_notes(plan: Plan, written: bool) -> list[str]:
    """What the job says of a long sequence's TPU slice layout: the flags it wrote into the default command
    (`written`), else the ones the user's program must be given."""
    layout = slice_layout(plan)
    if layout is None:
        return []
    args = slice_mesh_args(plan)
    table = runtime()["context_parallel"]
    source = f"{table['maxtext_source']}; {table['maxtext_sequence_source']}"
    tensor, context = layout.chip_tensor, layout.chip_context
    head = (f"one {plan.workload.model.sequence_length:,}-token sequence is shared by ICI TP{tensor}"
            + (f" x CP{context}" if context > 1 else "") + f" = {layout.chips_per_sequence} chips of the slice, FSDP "
            "sharding the state over the rest (ici_fsdp_parallelism -1)")
    if layout.per_chip > 1:
        by = "context" if layout.context != context else "tensor"
        head += (f"; MaxText counts JAX devices, {layout.per_chip} per chip here, so those chips are "
                 f"{layout.devices_per_sequence} devices, TP{layout.tensor}"
                 + (f" x CP{layout.context}" if layout.context > 1 else "")
                 + f" ({by} parallelism {layout.per_chip}x the chips'): each device holds 1/{layout.per_chip} of "
                 f"a chip's share, as it has 1/{layout.per_chip} of its HBM"
                 + ("" if by == "context" else
                    f"; not by context parallelism, since {plan.workload.model.sequence_length:,} tokens do not "
                    f"split into the 2 x CP{context * layout.per_chip} chunks MaxText's needs"))
    sequences, devices = plan_batch(plan)
    per_step = devices // layout.devices_per_sequence
    trained = per_step * max(1, -(-sequences // per_step))
    unit = "chips" if layout.per_chip == 1 else "JAX devices"
    batch = (f"; MaxText trains {trained:,} sequences of {plan.workload.model.sequence_length:,} tokens a step "
             f"({unit.split()[-1]} x per_device_batch_size x gradient_accumulation_steps)"
             + (f", the plan's global batch" if trained == sequences else
                f", more than the plan's global batch of {sequences:,}: its {devices:,} {unit} take {per_step:,} "
                "sequences at once" + (" and accumulate whole micro-steps" if per_step < sequences else "")
                + f" (training.global_batch_tokens {trained * plan.workload.model.sequence_length:,} plans that "
                "batch)"))
    packing = [table["maxtext_packing"]] if layout.context > 1 else []
    if written:
        return [f"{head}; passed to MaxText as {args}{batch} ({source})", *packing]
    problem = slice_heads_problem(plan)
    refused = [f"MaxText would refuse these degrees: {problem}"] if problem else []
    return [f"{head}; give the training program the same degrees: MaxText {args}{batch} ({source})", *packing,
            *refused]
