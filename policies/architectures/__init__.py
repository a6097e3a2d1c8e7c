"""Published model architectures a workload may name (`model.architecture`): MaxText's model_name, the shape the
estimator reads (layers, hidden width, experts), the parameter count, the heads and vocabulary, the Hugging Face
checkpoint and the tokenizer MaxText runs it with. One row per name, each fact once with its source, in
architectures.yaml beside this module (read once per process, only when a workload names an architecture).

The rows and their lookup live in `rows.py`, loaded on first use: every `accel choose` keys its cached workload on
TABLE's path, and only a workload naming an architecture needs the rows (warm start-up, benchmarks/bench_startup.py).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent / "architectures.yaml"


def architecture_heads(architecture: str | None) -> tuple[int, int]:
    """(heads a tensor degree must divide, layers) of a named architecture (model.architecture), as a training layout
    respects them (policies/parallelism.py within_heads); (0, 0) where none is named or the table lacks it. Here, not
    in rows.py: every training plan asks, and only one naming an architecture loads the rows (~3 ms of start-up)."""
    if not architecture:
        return 0, 0
    row = importlib.import_module(f"{__name__}.rows").lookup(architecture)
    return (row.tensor_heads, row.layers) if row is not None else (0, 0)


def __getattr__(name: str) -> Any:
    # import_module, not `from . import rows`: a from-import asks this very hook for `rows` first and recurses.
    rows = importlib.import_module(f"{__name__}.rows")
    try:
        return getattr(rows, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
