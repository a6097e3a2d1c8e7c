"""The tensor-parallel degrees a serving engine splits a named architecture's attention over: vLLM's rule on GPUs, and
vLLM TPU's over JAX devices (tpu-inference checks the KV heads the same way). One rule, read by the search, which
sizes no serving replica at a degree the engine refuses (policies/selection/served_sizes.py), and by the jobs, which
refuse such a layout naming the engine's source (accel/job/model_run.py, accel/job/vllm_tpu.py: runtime.yaml
model_run.vllm_heads_source, vllm_tpu.heads_source).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accel.policies.architectures.rows import Architecture


def tensor_parallel_problem(row: Architecture, tensor: int) -> str | None:
    """Why vLLM (and vLLM TPU) refuses to split `row`'s attention over `tensor` ranks, or None: the query heads must
    divide evenly, and the KV heads too, or, fewer than the ranks, divide the ranks (each replicated). vLLM's own
    rule, ported (runtime.yaml model_run.vllm_heads_source: vllm/config/model.py l.1557-1564,
    model_executor/layers/linear.py l.1065-1071; tpu-inference's KV check: vllm_tpu.heads_source)."""
    if row.query_heads % tensor:
        return f"its {row.query_heads} query heads do not split over tensor parallelism {tensor}"
    kv = row.kv_heads
    if (tensor >= kv and tensor % kv) or (tensor < kv and kv % tensor):
        return (f"its {kv} KV heads neither split over tensor parallelism {tensor} nor replicate evenly "
                f"onto it ({tensor} is no multiple of {kv})")
    return None
