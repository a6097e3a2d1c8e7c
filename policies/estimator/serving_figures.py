"""Published serving throughput (policies/catalog/published_serving.yaml) against the serving model: each
figure's batch, prompt and output lengths, precision and tensor-parallel chips go through InferenceModel
unchanged, with the model's own KV-cache size and the attention kernel the source says it ran; nothing is
fitted on these figures. TPU figures (serving runs whose scheduler set the batch, the table's round-7 rule) are
out of sample: scored beside the GPU figures, held to no target."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from accel.base.model import StrictModel
from accel.base.yaml_files import read_yaml_file
from accel.policies.catalog.model import Catalog
from accel.policies.estimator import tpu_kv_layout
from accel.policies.estimator.estimate import InferenceModel, resolve
from accel.policies.workload import AcceleratorId, workload_from_mapping

PUBLISHED_SERVING = Path(__file__).resolve().parent.parent / "catalog" / "published_serving.yaml"


class Architecture(StrictModel):
    parameters: float = Field(gt=0)
    layers: int = Field(gt=0)
    kv_width: int = Field(gt=0)
    query_heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    source: str = Field(min_length=3)


class ServingFigure(StrictModel):
    id: str = Field(min_length=3)
    model: str
    accelerator: AcceleratorId
    chips: int = Field(gt=0)
    precision: Literal["bf16", "fp16", "fp8", "int8"]
    batch: int = Field(gt=0)
    prompt_tokens: int = Field(gt=0)
    output_tokens: int = Field(gt=0)
    tokens_per_second_per_chip: float = Field(gt=0)
    source: str
    # False: the run's decode attention read each grouped-query KV head once per query head (the source says
    # which kernel it ran); the model then reads the KV cache query_heads / kv_heads times per step.
    grouped_query_kernel: bool = True
    # "fixed": the run served exactly `batch` sequences at once. "scheduler": a serving run whose scheduler set the
    # batch (the TPU rows' rule, published_serving.yaml): `batch` is the server's max-num-seqs, the bound it ran under.
    batch_set_by: Literal["fixed", "scheduler"] = "fixed"


class PublishedServing(StrictModel):
    as_of: date
    sources: dict[str, str] = Field(min_length=1)
    # The serving engine each source ran: its per-step host overhead and all-reduce kernel
    # (policies/catalog/assumptions.yaml inference.engines, allreduce_latency_us).
    source_engines: dict[str, str] = Field(min_length=1)
    architectures: dict[str, Architecture] = Field(min_length=1)
    figures: list[ServingFigure] = Field(min_length=1)

    @model_validator(mode="after")
    def _references_resolve(self) -> "PublishedServing":
        for figure in self.figures:
            if figure.source not in self.sources or figure.model not in self.architectures:
                raise ValueError(f"figure {figure.id}: unknown source or model")
        if set(self.source_engines) != set(self.sources):
            raise ValueError("source_engines must name the engine of every source, and only those")
        return self


@lru_cache(maxsize=1)
def published_serving() -> PublishedServing:
    return PublishedServing.model_validate(read_yaml_file(PUBLISHED_SERVING, "published serving table"))


@dataclass(frozen=True)
class ServingError:
    figure: ServingFigure
    predicted: float   # generated tokens/s per chip
    # A TPU row (published_serving.yaml's round-7 rule): scored and printed, held to no target, fitted into nothing.
    out_of_sample: bool = False

    @property
    def error(self) -> float:
        return self.predicted / self.figure.tokens_per_second_per_chip - 1.0


def figure_model(figure: ServingFigure, architecture: Architecture, catalog: Catalog, engine: str) -> InferenceModel:
    """The serving model of the figure's exact configuration: its model, chip, precision and lengths."""
    kv_per_value = catalog.defaults.inference.precisions[figure.precision].kv_bytes_per_value
    spec = workload_from_mapping({
        "name": "published", "kind": "inference", "model": {"parameters": architecture.parameters},
        "inference": {"tokens_per_second": 1, "precision": figure.precision, "p99_latency_ms": 1e6,
                      "prompt_tokens": figure.prompt_tokens, "output_tokens": figure.output_tokens},
        "assumptions": {"kv_cache_bytes_per_token": 2 * architecture.layers * architecture.kv_width * kv_per_value},
    }, figure.id)
    kv_reads = 1.0 if figure.grouped_query_kernel else architecture.query_heads / architecture.kv_heads
    # The figure's own KV heads, which its tensor-parallel ranks split (or replicate: InferenceModel.kv_copies).
    # Its heads' width too, which vLLM TPU pads (tpu_kv_layout.py).
    head_dim = architecture.kv_width // architecture.kv_heads
    resolved = dataclasses.replace(resolve(spec, catalog.defaults, engine), kv_heads=architecture.kv_heads,
                                   kv_head_dim=head_dim, tpu_kv_width=tpu_kv_layout.width_factor(head_dim))
    return InferenceModel(spec, resolved, catalog.accelerator(figure.accelerator), kv_reads, architecture.layers)


def predicted_throughput(figure: ServingFigure, architecture: Architecture, catalog: Catalog, engine: str) -> float:
    """Generated tokens/s per chip the serving model gives for the figure's exact configuration."""
    return figure_batch_throughput(figure_model(figure, architecture, catalog, engine), figure)


def figure_batch_throughput(model: InferenceModel, figure: ServingFigure) -> float:
    """Generated tokens/s per chip at the figure's batch: its fixed batch, or for a scheduler-set run the least of
    the server's max-num-seqs and the sequences whose KV cache the model's own memory sizing fits on the chips."""
    batch = figure.batch
    if figure.batch_set_by == "scheduler":
        batch = max(1, min(batch, model.memory_batch(figure.chips)))
    step, _ = model.step_seconds(figure.chips, batch)
    return batch / step / figure.chips


def serving_errors(catalog: Catalog) -> list[ServingError]:
    table = published_serving()
    return [ServingError(f, predicted_throughput(f, table.architectures[f.model], catalog,
                                                 table.source_engines[f.source]),
                         catalog.accelerator(f.accelerator).family == "tpu")
            for f in table.figures]
