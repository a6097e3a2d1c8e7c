"""A long sequence's context parallelism, handed to the training program.

The Plan's layout carries a context-parallel degree where one sequence's activations do not fit beside the
state (policies/estimator/activations.py): TP x CP x PP GPUs hold one model replica, DP replicas the fleet.
The program must be told, or it lays the ranks out as TP x PP x DP and runs out of memory. The default MaxText
command gets its mesh axes (accel/job/runtime.yaml context_parallel); a program of the user's own (the PyTorch
default is a placeholder) is told in the job's notes which Megatron-Core / NeMo arguments carry the degrees.
Nothing is written for a layout without context parallelism.
"""

from __future__ import annotations

from accel.job.facts import runtime
from accel.policies.parallelism import Parallelism


def maxtext_mesh_args(layout: Parallelism) -> str:
    """The MaxText arguments that lay a TP x CP x PP replica out (ici_fsdp_parallelism -1, its default, takes the
    data-parallel rest); empty without context parallelism."""
    if not layout.context:
        return ""
    flags = runtime()["context_parallel"]["maxtext"]
    degrees = {"tensor": layout.tensor, "context": layout.context, "pipeline": layout.pipeline}
    return " ".join(f"{flags[axis]}={degree}" for axis, degree in degrees.items() if degree > 1)


def notes(layout: Parallelism | None, framework: str, written: bool) -> list[str]:
    """What the job says of the context-parallel degree: the flags it wrote into the default command
    (`written`), else the ones the user's program must be given."""
    if layout is None or not layout.context:
        return []
    table = runtime()["context_parallel"]
    world = layout.replica_gpus * layout.data
    head = (f"context parallelism {layout.context}: one sequence is split over {layout.context} tensor-parallel "
            f"groups; world size TP{layout.tensor} x CP{layout.context} x PP{layout.pipeline} x DP{layout.data} = "
            f"{world:,} ranks")
    if written:
        return [f"{head}; the MaxText mesh is passed as {maxtext_mesh_args(layout)} ({table['maxtext_source']})"]
    if framework == "pytorch":
        return [f"{head}; give the training program the same degrees: Megatron-LM {table['megatron']}, or NeMo "
                f"{table['nemo']} ({table['source']})"]
    flags = table["maxtext"]
    return [f"{head}; give the training program the same degrees: MaxText {flags['tensor']}, {flags['context']}, "
            f"{flags['pipeline']} ({table['maxtext_source']})"]
