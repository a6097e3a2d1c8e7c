"""The day-one flow over a generated grid of workloads the repository has never seen.

For each workload: `accel choose W --write-stack NAME`, `accel plan -s NAME --json`, `accel job -s NAME` and
`accel job -s NAME --validate`, in a scratch project (a copy of Pulumi.yaml and __main__.py with an empty
stacks/, as a user's clone has), then checks of what was built that the commands themselves do not make:

- every Kubernetes object the plan declares and every manifest the job writes against the upstream CRDs in
  ../shared/crds (JobSet, Kueue, LeaderWorkerSet, ComputeDomain: jsonschema, unknown fields refused as the API
  server prunes them) and core objects and pod templates against Kubernetes' OpenAPI (kubernetes-validate,
  strict);
- the accelerator pools built against the plan's chips, the Kueue quota against the pools' capacity, each
  ResourceFlavor's topology against a declared Topology, a pod's required/preferred topology level against that
  Topology's levels, node and pod address ranges against the pools' largest node count, and the images of Arm
  (Grace) nodes.

On-prem (`clouds: [kubernetes]`) workloads cannot be pinned by `choose` (it sees no inventory), so their stack
is written with an `accel:cluster` inventory and the workload, decided at plan time, as stacks/Pulumi.onprem-*.yaml
are.

    uv run --no-sync python benchmarks/sweep_day_one.py OUT_DIR [--only NAME,...] [--limit N]
    uv run --no-sync python benchmarks/sweep_day_one.py OUT_DIR --report      # the counts of a finished run

A run of ~100 workloads takes ~25 minutes on 2 cores; it resumes where it stopped (one result file per
workload under OUT_DIR/results). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import collections
import ipaddress
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import yaml

ROOT = Path(__file__).resolve().parents[1]
ACCEL = [str(ROOT / ".venv" / "bin" / "accel")]
KUBERNETES_VERSION = "1.33"

# ----------------------------------------------------------------------------- the grid

DENSE = ["125M", "350M", "1.3B", "3B", "8B", "13B", "34B", "70B", "180B", "405B"]
MOE_ARCHITECTURES = ["mixtral-8x7b", "mixtral-8x22b", "deepseek3-671b", "qwen3-235b-a22b", "qwen3-30b-a3b"]
CUSTOM_MOE = {"parameters": "120B", "active_parameters": "20B", "experts": 64, "experts_per_token": 4,
              "layers": 48, "hidden": 6144}
GPU_LISTS = [["h100-80gb"], ["h200-141gb"], ["b200"], ["gb200"], ["a100-80gb"], ["h100-80gb", "h200-141gb", "b200"]]
TPU_LISTS = [["tpu-v5p"], ["tpu-v6e"], ["tpu7x"], ["tpu-v5e"], ["tpu-v4"]]
SERVING_GPU_LISTS = [["l4"], ["l40s"], ["h100-80gb"], ["h200-141gb"], ["b200"], ["gb200"], ["a10g"]]
INVENTORIES = {
    "a100-l40s": [{"accelerator": "a100-80gb", "chips": 64, "gpus_per_node": 8, "usd_per_chip_hour": 1.10,
                   "name": "a100", "node_labels": {"gpu.acme.dev/model": "a100-80gb"}},
                  {"accelerator": "l40s", "chips": 32, "gpus_per_node": 4, "usd_per_chip_hour": 0.55,
                   "name": "l40s", "node_labels": {"gpu.acme.dev/model": "l40s"}}],
    "gb200": [{"accelerator": "gb200", "chips": 144, "gpus_per_node": 4, "usd_per_chip_hour": 4.20, "name": "gb200",
               "node_labels": {"gpu.acme.dev/model": "gb200"},
               "tolerations": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64",
                                "effect": "NoSchedule"}]}],
    "h100": [{"accelerator": "h100-80gb", "chips": 256, "gpus_per_node": 8, "usd_per_chip_hour": 2.0, "name": "h100",
              "node_labels": {"gpu.acme.dev/model": "h100"}}],
    # Nodes of 16 GPUs (HGX-2 class) and a GB200 rack labelled in cliques of 32 GPUs: tensor groups of 16 and 32,
    # past some named models' heads (heads_sweep)
    "a100-16": [{"accelerator": "a100-40gb", "chips": 128, "gpus_per_node": 16, "usd_per_chip_hour": 1.0,
                 "name": "hgx2", "node_labels": {"gpu.acme.dev/model": "a100"}}],
    "h100-16": [{"accelerator": "h100-80gb", "chips": 128, "gpus_per_node": 16, "usd_per_chip_hour": 2.0,
                 "name": "h16", "node_labels": {"gpu.acme.dev/model": "h100"}}],
    "gb200-32": [{"accelerator": "gb200", "chips": 144, "gpus_per_node": 4, "usd_per_chip_hour": 4.0, "name": "nvl",
                  "nvlink_domain_gpus": 32, "nvlink_clique_label": True,
                  "node_labels": {"gpu.acme.dev/model": "gb200"},
                  "tolerations": [{"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64",
                                   "effect": "NoSchedule"}]}],
}


def _model(rng: random.Random, moe: bool, largest: int = len(DENSE)) -> dict[str, Any]:
    if moe:
        return ({"architecture": rng.choice(MOE_ARCHITECTURES)} if rng.random() < 0.8 else dict(CUSTOM_MOE))
    return {"parameters": rng.choice(DENSE[:largest])}


def _parameters(model: dict[str, Any]) -> float:
    from accel.base.units import parse_quantity  # noqa: PLC0415 (only the generator needs it)

    if "architecture" in model:
        return {"mixtral-8x7b": 12.9e9, "mixtral-8x22b": 39.2e9, "deepseek3-671b": 37e9,
                "qwen3-235b-a22b": 22.2e9, "qwen3-30b-a3b": 3.35e9}[model["architecture"]]
    return float(parse_quantity(model.get("active_parameters", model["parameters"])))


def _training_constraints(rng: random.Random, index: int, chip_hours: float) -> dict[str, Any]:
    """Clouds, spot, accelerators, deadline and budget, spread by `index` so every value is met."""
    tpu = index % 3 == 0
    clouds = ["gcp"] if tpu else [["aws"], ["gcp"], ["gcp", "aws"]][(index // 3) % 3]
    constraints: dict[str, Any] = {"clouds": clouds, "spot": ["never", "required", "allowed"][(index // 2) % 3]}
    constraints["accelerators"] = rng.choice(TPU_LISTS if tpu else GPU_LISTS)
    if index % 4 == 0:
        del constraints["accelerators"]
        constraints["clouds"] = ["gcp", "aws"]
    # chip-hours at ~160 TFLOP/s delivered; the deadline against a 2,048-chip fleet, the budget at ~$3/chip-hour
    tight = index % 2 == 0
    constraints["deadline_days"] = round(min(365, max(1.0, chip_hours / 2048 / 24 * (1.3 if tight else 5))), 1)
    if rng.random() < 0.5:
        constraints["budget_usd"] = int(max(2_000, chip_hours * 3 * (0.9 if tight else 3)))
    if rng.random() < 0.2:
        constraints["max_chips"] = rng.choice([64, 256, 1024])
    return constraints


def grid(seed: int = 5) -> list[dict[str, Any]]:
    """~110 workloads: pretrain, fine-tune and serving, dense and MoE, GPU and TPU, gcp/aws/on-prem."""
    rng = random.Random(seed)
    workloads: list[dict[str, Any]] = []
    sequences = [2048, 4096, 8192, 32768, 131072]
    for index in range(45):   # pretraining
        moe = index % 5 == 4
        model = _model(rng, moe)
        model["sequence_length"] = sequences[index % len(sequences)] if index % 7 else 131072
        if model.get("architecture") is None and model["sequence_length"] > 8192 and rng.random() < 0.5:
            model["sequence_length"] = 8192
        active = _parameters(model)
        tokens = min(20 * active * rng.choice([0.25, 1, 4]), 2e12)
        constraints = _training_constraints(rng, index, 6 * active * tokens / 160e12 / 3600)
        framework = "jax" if any(a.startswith("tpu") for a in constraints.get("accelerators", [])) or \
            (index % 4 == 0 and rng.random() < 0.5) else "pytorch"
        precision = "fp8" if index % 6 == 5 and framework == "pytorch" else "bf16"
        workloads.append({"name": f"pt{index:02d}", "kind": "pretrain", "model": model,
                          "training": {"tokens": f"{tokens / 1e9:.0f}B" if tokens >= 1e9 else f"{tokens / 1e6:.0f}M",
                                       "framework": framework, "precision": precision},
                          "constraints": constraints, "owner": "sweep", "cost_center": "sweep-5"})
    for index in range(25):   # fine-tuning
        model = _model(rng, index % 6 == 5, largest=10)
        model["sequence_length"] = [4096, 8192, 16384, 32768, 131072][index % 5]
        active = _parameters(model)
        tokens = rng.choice([1e9, 5e9, 20e9, 100e9])
        constraints = _training_constraints(rng, index + 1, 6 * active * tokens / 160e12 / 3600)
        if index % 5 == 2:
            constraints["custom_cuda_kernels"] = True
            constraints.pop("accelerators", None)
        framework = "jax" if any(a.startswith("tpu") for a in constraints.get("accelerators", [])) else "pytorch"
        training: dict[str, Any] = {"tokens": f"{tokens / 1e9:.0f}B", "framework": framework}
        if index % 4 == 3:
            training["trainable_fraction"] = 0.01
        if index % 6 == 1 and framework == "pytorch":
            training["precision"] = "fp8"
        workloads.append({"name": f"ft{index:02d}", "kind": "finetune", "model": model, "training": training,
                          "constraints": constraints, "owner": "sweep", "cost_center": "sweep-5"})
    for index in range(28):   # serving
        moe = index % 4 == 3
        model = _model(rng, moe, largest=10)
        if not moe and rng.random() < 0.3:
            model = {"architecture": rng.choice(["llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "gemma3-27b",
                                                 "qwen3-32b", "mistral-7b"])}
        inference: dict[str, Any] = {"tokens_per_second": rng.choice([500, 2000, 8000, 20000, 100000]),
                                     "p99_latency_ms": rng.choice([30, 60, 100, 250]),
                                     "framework": "jax" if index % 5 == 0 else "pytorch"}
        if index % 3 == 1:
            inference["precision"] = "fp8"
        if index % 7 == 2:
            inference["hours"] = 24
        constraints = {"clouds": [["gcp"], ["aws"], ["gcp", "aws"]][index % 3],
                       "spot": ["never", "allowed", "required"][index % 3 if index % 2 else 0]}
        if index % 5 == 0:
            constraints["accelerators"] = rng.choice([["tpu-v5e"], ["tpu-v6e"], ["tpu-v5p"]])
            constraints["clouds"] = ["gcp"]
        elif index % 2:
            constraints["accelerators"] = rng.choice(SERVING_GPU_LISTS)
        if index % 4 == 1:
            constraints["budget_usd"] = rng.choice([5_000, 50_000, 500_000])
        if index % 6 == 4:
            constraints["portability"] = True
        workloads.append({"name": f"sv{index:02d}", "kind": "inference", "model": model, "inference": inference,
                          "constraints": constraints, "owner": "sweep", "cost_center": "sweep-5"})
    onprem = [("finetune", {"parameters": "8B"}, "a100-l40s"), ("finetune", {"parameters": "70B"}, "a100-l40s"),
              ("pretrain", {"parameters": "1.3B"}, "a100-l40s"), ("inference", {"parameters": "8B"}, "a100-l40s"),
              ("finetune", {"parameters": "70B"}, "gb200"), ("pretrain", {"architecture": "mixtral-8x7b"}, "gb200"),
              ("inference", {"architecture": "llama3.1-70b"}, "gb200"), ("finetune", {"parameters": "34B"}, "h100"),
              ("pretrain", {"parameters": "8B", "sequence_length": 32768}, "h100"),
              ("inference", {"architecture": "mixtral-8x7b"}, "h100")]
    for index, (kind, model, inventory) in enumerate(onprem):
        workload: dict[str, Any] = {"name": f"op{index:02d}", "kind": kind, "model": model,
                                    "constraints": {"clouds": ["kubernetes"], "deadline_days": 10},
                                    "owner": "sweep", "cost_center": "sweep-5", "x-inventory": inventory}
        if kind == "inference":
            workload["inference"] = {"tokens_per_second": 2000, "p99_latency_ms": 100}
            del workload["constraints"]["deadline_days"]
        else:
            workload["training"] = {"tokens": "20B", "framework": "pytorch"}
        workloads.append(workload)
    a4x = [{"name": "a4x-nvl72-reservation", "machineType": "a4x-highgpu-4g", "count": 36, "zone": "us-central1-b"}]
    p6e = [{"name": "cr-0b200e72a1b2c3d4e", "kind": "capacity-block", "machineType": "p6e-gb200.36xlarge", "count": 18,
            "ultraserverType": "u-p6e-gb200x72", "zone": "us-east-1-dfw-2a", "start": "2030-01-06T11:30:00Z",
            "end": "2030-01-13T11:30:00Z"}]
    a3mega = [{"name": "a3mega-reservation", "machineType": "a3-megagpu-8g", "count": 32, "zone": "us-central1-a"}]
    reserved = [("finetune", {"parameters": "70B"}, ["gcp"], a4x, 10), ("pretrain", {"architecture": "mixtral-8x7b"},
                                                                         ["gcp"], a4x, 30),
                ("inference", {"architecture": "llama3.1-70b"}, ["gcp"], [dict(a4x[0], count=18)], None),
                ("pretrain", {"parameters": "8B"}, ["aws"], p6e, 6), ("finetune", {"parameters": "405B"}, ["aws"], p6e, 6),
                ("pretrain", {"parameters": "70B", "sequence_length": 32768}, ["gcp"], a3mega, 40)]
    for index, (kind, model, clouds, reservations, deadline) in enumerate(reserved):
        workload = {"name": f"rs{index:02d}", "kind": kind, "model": model,
                    "constraints": {"clouds": clouds, "spot": "never",
                                    "accelerators": ["h100-80gb"] if reservations is a3mega else ["gb200"]},
                    "owner": "sweep", "cost_center": "sweep-5",
                    "x-reservations": reservations}
        if kind == "inference":
            workload["inference"] = {"tokens_per_second": 4000, "p99_latency_ms": 80}
        else:
            workload["training"] = {"tokens": "40B" if kind == "finetune" else "300B", "framework": "pytorch"}
            workload["constraints"]["deadline_days"] = deadline
        workloads.append(workload)
    workloads += new_ground()
    workloads += heads_sweep()
    return workloads


CLEAN = "clean"   # an expectation: choose, plan, job and job --validate all exit 0 with no finding

# A declared u-p6e-gb300x72 Capacity Block (18 trays), and one of 9 trays, which is no whole UltraServer.
GB300_BLOCK = {"name": "cr-0b300e72a1b2c3d4e", "kind": "capacity-block", "machineType": "p6e-gb300.36xlarge",
               "count": 18, "ultraserverType": "u-p6e-gb300x72", "zone": "us-east-1-dfw-2a",
               "start": "2030-01-06T11:30:00Z", "end": "2030-01-13T11:30:00Z"}
A4X_RACK = {"name": "a4x-nvl72-reservation", "machineType": "a4x-highgpu-4g", "count": 18, "zone": "us-central1-b"}


def new_ground() -> list[dict[str, Any]]:
    """The ground this session's changes opened (vLLM TPU, vLLM v0.33.0's multi-node LWS recipe and EFA image,
    GB300 on x72 Capacity Blocks, replicas filling A4X racks, MoE fp8 online quantization), each workload with its
    expectation (`x-expect`): CLEAN, or `refused: <regex>` that a refusing step's message must match."""
    def serve(name: str, model: dict[str, Any], tps: int, p99: int, accelerators: list[str] | None,
              clouds: list[str], expect: str, framework: str = "pytorch", precision: str | None = None,
              **extra: Any) -> dict[str, Any]:
        inference: dict[str, Any] = {"tokens_per_second": tps, "p99_latency_ms": p99, "framework": framework}
        if precision:
            inference["precision"] = precision
        if accelerators in (["tpu7x"], ["h200-141gb"], ["b200"]) and clouds == ["gcp"] or "x-reservations" in extra \
                and extra["x-reservations"][0].get("kind") == "capacity-block":
            inference["hours"] = 150     # TPU7x, A3 Ultra, A4 on GCP: flex-start only, requests of at most 168 h
        constraints: dict[str, Any] = {"clouds": clouds, "spot": "never"}
        if accelerators:
            constraints["accelerators"] = accelerators
        return {"name": name, "kind": "inference", "model": model, "inference": inference,
                "constraints": constraints, "owner": "sweep", "cost_center": "sweep-6", "x-expect": expect, **extra}

    gb300_pin = {"accelerator": "gb300", "chips": 72, "cloud": "aws", "spot": False}
    return [
        # vLLM TPU: named models whose head counts are not powers of two, on each TPU generation served
        serve("nt00", {"architecture": "qwen3-14b"}, 4000, 60, ["tpu-v5e"], ["gcp"], CLEAN, "jax"),
        serve("nt01", {"architecture": "llama2-13b"}, 2000, 60, ["tpu-v6e"], ["gcp"], CLEAN, "jax"),
        serve("nt02", {"architecture": "gemma3-27b"}, 8000, 100, ["tpu7x"], ["gcp"], CLEAN, "jax"),
        serve("nt03", {"architecture": "gemma2-9b"}, 2000, 30, ["tpu-v5e"], ["gcp"], CLEAN, "jax"),
        # fp8 on TPU: TPU7x quantizes as it loads; v6e has no fp8 in tpu-inference, so the plan sizes bf16
        serve("nt04", {"architecture": "llama3.1-70b"}, 4000, 60, ["tpu7x"], ["gcp"], CLEAN, "jax", "fp8"),
        serve("nt05", {"architecture": "llama3.1-70b"}, 4000, 60, ["tpu-v6e"], ["gcp"], CLEAN, "jax", "fp8"),
        # int8 on TPU: only from an 8-bit checkpoint; without one choose refuses, naming model.checkpoint
        serve("nt06", {"architecture": "llama3.1-8b"}, 2000, 60, ["tpu-v6e"], ["gcp"], "refused: model.checkpoint",
              "jax", "int8"),
        serve("nt07", {"architecture": "llama3.1-8b", "checkpoint": "gs://acme-models/llama-3.1-8b-w8a8"}, 2000, 60,
              ["tpu-v6e"], ["gcp"], CLEAN, "jax", "int8"),
        # a gs:// checkpoint streamed by vLLM TPU
        serve("nt08", {"architecture": "llama3.1-70b", "checkpoint": "gs://acme-models/llama-3.1-70b-instruct"}, 4000,
              100, ["tpu-v6e"], ["gcp"], CLEAN, "jax"),
        # MoE fp8 on TPU: from a bf16 checkpoint tpu-inference leaves the experts in bf16, so the plan sizes and
        # serves bf16, saying why; from the model's own fp8 checkpoint it serves fp8
        serve("nt09", {"architecture": "qwen3-30b-a3b"}, 8000, 60, ["tpu7x"], ["gcp"], CLEAN, "jax", "fp8"),
        serve("nt10", {"architecture": "qwen3-30b-a3b", "checkpoint": "Qwen/Qwen3-30B-A3B-FP8"}, 8000, 60, ["tpu7x"],
              ["gcp"], CLEAN, "jax", "fp8"),
        # vLLM v0.33.0 over several nodes: EFA (the -efa image), and each GCP fabric
        serve("ng00", {"architecture": "llama3.1-405b"}, 2000, 100, ["h100-80gb"], ["aws"], CLEAN),
        serve("ng01", {"architecture": "llama3.1-405b"}, 2000, 100, ["h100-80gb"], ["gcp"], CLEAN),
        serve("ng02", {"architecture": "llama3.1-405b"}, 1000, 250, ["a100-80gb"], ["gcp"], "refused: memory"),
        serve("ng03", {"architecture": "deepseek3-671b"}, 4000, 100, ["h200-141gb"], ["gcp"], CLEAN),
        serve("ng04", {"architecture": "deepseek3-671b"}, 4000, 100, ["h200-141gb"], ["aws"], CLEAN),
        # MoE fp8 from a bf16 checkpoint on GPU: --quantization fp8_per_tensor
        serve("ng05", {"architecture": "mixtral-8x22b"}, 8000, 60, ["h100-80gb"], ["aws"], CLEAN, precision="fp8"),
        serve("ng06", {"architecture": "qwen3-235b-a22b"}, 8000, 60, ["b200"], ["gcp"], CLEAN, precision="fp8"),
        # V100 is built no more by vLLM: not a chip a workload may ask for; B300 is (p6-b300.48xlarge on demand)
        serve("ng07", {"architecture": "llama3.1-8b"}, 2000, 60, ["v100"], ["aws"], "refused: accelerators"),
        serve("ng08", {"architecture": "llama3.1-8b"}, 2000, 60, ["b300"], ["aws"], CLEAN),
        # an 18-tray A4X reservation served: replicas fill the rack; MoE fp8 there too
        serve("na00", {"architecture": "llama3.1-8b"}, 20000, 30, ["gb200"], ["gcp"], CLEAN,
              **{"x-reservations": [A4X_RACK]}),
        serve("na01", {"architecture": "qwen3-235b-a22b"}, 8000, 60, ["gb200"], ["gcp"], CLEAN, precision="fp8",
              **{"x-reservations": [A4X_RACK]}),
        serve("na02", {"architecture": "llama3.1-405b"}, 8000, 80, ["gb200"], ["gcp"], CLEAN,
              **{"x-reservations": [A4X_RACK]}),
        # GB300 pinned to a declared x72 block: training and serving; a block of 9 trays is refused
        {"name": "nb00", "kind": "pretrain", "model": {"parameters": "405B", "sequence_length": 8192},
         "training": {"tokens": "10B", "framework": "pytorch", "precision": "bf16"},
         "constraints": {"clouds": ["aws"], "spot": "never"}, "hardware": dict(gb300_pin),
         "owner": "sweep", "cost_center": "sweep-6", "x-reservations": [GB300_BLOCK], "x-expect": CLEAN},
        {"name": "nb01", "kind": "finetune", "model": {"architecture": "deepseek3-671b", "sequence_length": 8192},
         "training": {"tokens": "5B", "framework": "pytorch", "precision": "fp8"},
         "constraints": {"clouds": ["aws"], "spot": "never"}, "hardware": dict(gb300_pin),
         "owner": "sweep", "cost_center": "sweep-6", "x-reservations": [GB300_BLOCK], "x-expect": CLEAN},
        serve("nb02", {"architecture": "llama3.1-405b"}, 5000, 100, None, ["aws"], CLEAN,
              hardware=dict(gb300_pin), **{"x-reservations": [GB300_BLOCK]}),
        serve("nb03", {"architecture": "deepseek3-671b"}, 8000, 100, None, ["aws"], CLEAN, precision="fp8",
              hardware=dict(gb300_pin), **{"x-reservations": [GB300_BLOCK]}),
        serve("nb04", {"architecture": "llama3.1-70b"}, 20000, 60, ["gb300"], ["aws"], CLEAN,
              **{"x-reservations": [GB300_BLOCK]}),
        serve("nb05", {"architecture": "llama3.1-405b"}, 5000, 100, None, ["aws"], "refused: UltraServer",
              hardware=dict(gb300_pin, chips=36), **{"x-reservations": [dict(GB300_BLOCK, count=9)]}),
    ] + [  # a month's service on a one-week block: refused at choose, pinned or searched, naming the block
        dict(workload, name=name, inference={**workload["inference"], "hours": 730},
             **{"x-expect": "refused: capacity block 'cr-0b300e72a1b2c3d4e' has 167"})
        for name, workload in (("nb06", serve("nb02", {"architecture": "llama3.1-405b"}, 5000, 100, None, ["aws"],
                                              CLEAN, hardware=dict(gb300_pin), **{"x-reservations": [GB300_BLOCK]})),
                               ("nb07", serve("nb04", {"architecture": "llama3.1-70b"}, 20000, 60, ["gb300"], ["aws"],
                                              CLEAN, **{"x-reservations": [GB300_BLOCK]})))]


def heads_sweep() -> list[dict[str, Any]]:
    """Named models served at targets that force multi-chip replicas, where the replica's tensor degree meets the
    model's heads (vLLM and vLLM TPU refuse a degree the query heads do not split over, or the KV heads neither split
    over nor replicate evenly onto: policies/architectures/serving_heads.py): choose must never pick a degree the job
    then refuses. 40 heads (Qwen3 14B, Llama 2 13B) and 8 (Gemma 2 2B) on 16-GPU nodes, 48 (Mixtral 8x22B) on a
    32-GPU clique; on TPU v5e, v6e and TPU7x (8 JAX devices a host) the 4-KV-head models; H100 1- and 8-GPU machines
    and nodes over the network in the cloud."""
    def serve(name: str, model: dict[str, Any], tps: int, p99: int, expect: str, accelerators: list[str] | None = None,
              inventory: str | None = None, framework: str = "pytorch") -> dict[str, Any]:
        inference: dict[str, Any] = {"tokens_per_second": tps, "p99_latency_ms": p99, "framework": framework}
        constraints: dict[str, Any] = {"clouds": ["kubernetes"] if inventory else ["gcp"]}
        if accelerators:
            constraints["accelerators"] = accelerators
            constraints["spot"] = "never"
        if accelerators == ["tpu7x"]:
            inference["hours"] = 150     # TPU7x: flex-start only, requests of at most 168 h
        workload = {"name": name, "kind": "inference", "model": model, "inference": inference,
                    "constraints": constraints, "owner": "sweep", "cost_center": "sweep-7", "x-expect": expect}
        return {**workload, "x-inventory": inventory} if inventory else workload

    return [
        # existing clusters: nodes of 16 GPUs, a 32-GPU NVLink clique (tensor groups of 16 and 32)
        serve("nh00", {"architecture": "qwen3-14b"}, 20000, 15, CLEAN, inventory="a100-16"),
        serve("nh01", {"architecture": "qwen3-14b"}, 2000, 15, CLEAN, inventory="a100-16"),
        serve("nh02", {"architecture": "llama2-13b"}, 20000, 12, CLEAN, inventory="h100-16"),
        serve("nh03", {"architecture": "gemma2-2b"}, 2000, 15, CLEAN, inventory="a100-16"),
        serve("nh04", {"architecture": "gemma3-4b"}, 2000, 8, CLEAN, inventory="h100-16"),
        serve("nh05", {"architecture": "llama2-13b"}, 20000, 10, CLEAN, inventory="gb200-32"),
        serve("nh06", {"architecture": "mixtral-8x22b"}, 20000, 15, CLEAN, inventory="gb200-32"),
        # the cloud: H100 1-GPU and 8-GPU machines, nodes over the network; TPU v5e, v6e, TPU7x
        serve("nh07", {"architecture": "llama2-13b"}, 20000, 12, CLEAN, ["h100-80gb"]),
        serve("nh08", {"architecture": "qwen3-14b"}, 2000, 60, CLEAN, ["h100-80gb"]),
        serve("nh09", {"architecture": "llama3.1-405b"}, 2000, 100, CLEAN, ["h100-80gb"]),
        serve("nh10", {"architecture": "gemma2-2b"}, 20000, 15, CLEAN, ["tpu7x"], framework="jax"),
        serve("nh11", {"architecture": "qwen3-30b-a3b"}, 20000, 15, CLEAN, ["tpu7x"], framework="jax"),
        serve("nh12", {"architecture": "qwen3-14b"}, 20000, 15, CLEAN, ["tpu-v6e"], framework="jax"),
        serve("nh13", {"architecture": "llama2-13b"}, 2000, 15, CLEAN, ["tpu-v5e"], framework="jax"),
    ]


# ----------------------------------------------------------------------------- running the flow

def _run(args: list[str], cwd: Path, timeout: int = 300) -> dict[str, Any]:
    started = time.monotonic()
    try:
        done = subprocess.run(ACCEL + args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "COLUMNS": "140"})
        rc, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired:
        rc, out, err = "timeout", "", ""
    return {"args": args, "rc": rc, "stdout": out, "stderr": err, "seconds": round(time.monotonic() - started, 1)}


def scratch_project(directory: Path) -> Path:
    (directory / "stacks").mkdir(parents=True, exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        (directory / name).write_text((ROOT / name).read_text())
    return directory


def run_one(workload: dict[str, Any], project: Path, workloads_dir: Path) -> dict[str, Any]:
    name = workload["name"]
    stack = f"sw-{name}"
    inventory = workload.pop("x-inventory", None)
    reservations = workload.pop("x-reservations", None)
    expect = workload.pop("x-expect", None)
    path = workloads_dir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(workload, sort_keys=False))
    held: list[str] = []
    if reservations is not None:
        (workloads_dir / f"{name}.reservations.yaml").write_text(yaml.safe_dump(reservations, sort_keys=False))
        held = ["--reservations", str(workloads_dir / f"{name}.reservations.yaml")]
    steps: dict[str, Any] = {}
    stack_file = project / "stacks" / f"Pulumi.{stack}.yaml"
    stack_file.unlink(missing_ok=True)
    steps["choose"] = _run(["choose", str(path), "--write-stack", stack, *held], project)
    if inventory is not None and steps["choose"]["rc"] == 3:
        cluster = {"name": f"dc-{name}", "kubeconfig": "~/.kube/dc.yaml", "context": "dc-admin",
                   "gpu_setup": "device-plugin", "inventory": INVENTORIES[inventory]}
        stack_file.write_text(yaml.safe_dump({"config": {"accel:owner": "sweep", "accel:costCenter": "sweep-5",
                                                         "accel:cluster": cluster, "accel:workload": workload}},
                                             sort_keys=False))
    if stack_file.is_file():
        steps["plan"] = _run(["plan", "-s", stack, "--json"], project)
        steps["job"] = _run(["job", "-s", stack, "--json"], project)
        steps["validate"] = _run(["job", "-s", stack, "--validate", "--json"], project)
    return {"name": name, "workload": workload, "inventory": inventory, "reservations": reservations,
            "expect": expect, "steps": steps}


# ----------------------------------------------------------------------------- checks of what was built

class Schemas:
    """The upstream CRDs' served schemas, by (apiVersion, kind)."""

    def __init__(self) -> None:
        from tests.crds import served_schemas  # noqa: PLC0415 (the tests' one parse of ../shared/crds)

        self.by_kind: dict[tuple[str, str], dict] = served_schemas()

    def problems(self, obj: dict[str, Any]) -> list[str]:
        import jsonschema  # noqa: PLC0415
        import kubernetes_validate  # noqa: PLC0415

        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        found: list[str] = []
        if key in self.by_kind:
            schema = self.by_kind[key]
            validator = jsonschema.Draft7Validator(schema)
            found += [f"{'.'.join(map(str, e.absolute_path))}: {e.message[:160]}" for e in validator.iter_errors(obj)]
            found += [f"{field}: unknown field (pruned by the API server)" for field in _unknown(obj, schema)]
            for where, template in _pod_templates(obj):
                found += [f"{where}: {p}" for p in _core_problems({"apiVersion": "v1", "kind": "PodTemplate",
                                                                    "metadata": {"name": "t"}, "template": template},
                                                                   kubernetes_validate)]
        elif key[0].split("/")[0] in {group.split("/")[0] for group, _ in self.by_kind}:
            found.append(f"no schema for {key}")
        else:
            found += _core_problems(obj, kubernetes_validate)
        return found


def _unknown(obj: Any, schema: dict, path: str = "") -> Iterator[str]:
    if isinstance(obj, dict) and "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        for key, value in obj.items():
            if key in schema["properties"]:
                yield from _unknown(value, schema["properties"][key], f"{path}.{key}")
            elif not (path == "" and key in ("apiVersion", "kind", "metadata")) and \
                    "additionalProperties" not in schema:
                yield f"{path}.{key}"
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for index, value in enumerate(obj):
            yield from _unknown(value, schema["items"], f"{path}[{index}]")


def _pod_templates(obj: dict[str, Any]) -> Iterator[tuple[str, dict]]:
    spec = obj.get("spec", {})
    for job in spec.get("replicatedJobs", []):
        yield f"replicatedJobs[{job.get('name')}]", job["template"]["spec"]["template"]
    lws = spec.get("leaderWorkerTemplate", {})
    for role in ("leaderTemplate", "workerTemplate"):
        if role in lws:
            yield role, lws[role]


def _core_problems(obj: dict[str, Any], kubernetes_validate: Any) -> list[str]:
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{'.'.join(map(str, error.path))}: {error.message[:160]}"]
    except Exception as error:  # noqa: BLE001 (an unknown kind: reported, not fatal)
        return [f"{type(error).__name__}: {str(error)[:160]}"]
    return []


ACCELERATOR_RESOURCES = ("nvidia.com/gpu", "google.com/tpu")


def built_checks(plan: dict[str, Any]) -> list[str]:
    """What the plan builds against what it planned: pools, quota, topology, address ranges."""
    findings: list[str] = []
    resources = plan.get("resources", [])
    hardware = plan.get("outputs", {}).get("hardware") or {}
    planned = hardware.get("chips")
    built_cost = plan.get("cost", {}).get("built") or {}
    built = built_cost.get("chips") if built_cost.get("pools") else None   # an existing cluster builds no pools
    if planned is not None and built is not None and built < planned:
        findings.append(f"pools hold {built} chips, the plan {planned}")
    quotas = collections.Counter()
    flavor_topologies, topologies = [], {}
    for resource in resources:
        inputs = resource.get("inputs") or {}
        kind = inputs.get("kind")
        if kind == "ClusterQueue":
            for group in inputs["spec"].get("resourceGroups", []):
                for flavor in group.get("flavors", []):
                    for item in flavor.get("resources", []):
                        if item["name"] in ACCELERATOR_RESOURCES:
                            quotas[item["name"]] += int(item["nominalQuota"])
        elif kind == "ResourceFlavor":
            flavor_topologies.append((inputs["metadata"]["name"], inputs.get("spec", {}).get("topologyName")))
        elif kind == "Topology":
            topologies[inputs["metadata"]["name"]] = [level["nodeLabel"] for level in inputs["spec"]["levels"]]
    quota = sum(quotas.values())
    if built is not None and quotas and quota != built:
        findings.append(f"Kueue quota {dict(quotas)} against {built} chips in the pools")
    if planned is not None and quotas and quota < planned:
        findings.append(f"Kueue quota {quota} below the plan's {planned} chips")
    for flavor, topology in flavor_topologies:
        if topology is not None and topology not in topologies:
            findings.append(f"ResourceFlavor {flavor} names Topology {topology}, which the stack does not declare")
    findings += _address_checks(resources)
    return findings


def _address_checks(resources: list[dict[str, Any]]) -> list[str]:
    findings: list[str] = []
    nodes = 0
    max_pods = 110
    for resource in resources:
        inputs = resource.get("inputs") or {}
        if resource["type"] == "gcp:container/nodePool:NodePool":
            count = inputs.get("nodeCount") or (inputs.get("autoscaling") or {}).get("totalMaxNodeCount") or \
                (inputs.get("autoscaling") or {}).get("maxNodeCount") or inputs.get("initialNodeCount") or 0
            nodes += int(count)
            max_pods = max(max_pods, int((inputs.get("maxPodsPerNode") or 0)))
        elif resource["type"] == "aws:eks/nodeGroup:NodeGroup":
            nodes += int((inputs.get("scalingConfig") or {}).get("maxSize") or 0)
    for resource in resources:
        inputs = resource.get("inputs") or {}
        if resource["type"] == "gcp:compute/subnetwork:Subnetwork" and inputs.get("ipCidrRange"):
            primary = ipaddress.ip_network(inputs["ipCidrRange"]).num_addresses - 4
            if not inputs.get("secondaryIpRanges"):
                continue      # a fabric VPC's subnetwork: one address per node's NIC
            if primary < nodes:
                findings.append(f"subnetwork {inputs.get('name')} {inputs['ipCidrRange']}: {primary} node addresses "
                                f"for {nodes} nodes")
            for secondary in inputs.get("secondaryIpRanges") or []:
                if "pod" in secondary.get("rangeName", ""):
                    per_node = 2 ** (max(max_pods * 2 - 1, 1)).bit_length()
                    if ipaddress.ip_network(secondary["ipCidrRange"]).num_addresses < nodes * per_node:
                        findings.append(f"pod range {secondary['ipCidrRange']}: room for "
                                        f"{ipaddress.ip_network(secondary['ipCidrRange']).num_addresses // per_node} "
                                        f"nodes at {max_pods} pods per node, the pools reach {nodes}")
    private = [ipaddress.ip_network(r["inputs"]["cidrBlock"]).num_addresses - 5 for r in resources
               if r["type"] == "aws:ec2/subnet:Subnet" and "private" in r["name"] and (r.get("inputs") or {}).get(
                   "cidrBlock")]
    if private and nodes and max(private) < nodes * 2:
        findings.append(f"private subnets of {max(private)} addresses for {nodes} nodes")
    return findings


def manifest_checks(document: dict[str, Any], plan: dict[str, Any] | None, schemas: Schemas) -> list[str]:
    findings: list[str] = []
    topologies = {}
    for resource in (plan or {}).get("resources", []):
        inputs = resource.get("inputs") or {}
        if inputs.get("kind") == "Topology":
            topologies[inputs["metadata"]["name"]] = [level["nodeLabel"] for level in inputs["spec"]["levels"]]
    levels = {label for labels in topologies.values() for label in labels}
    accelerator = ((plan or {}).get("outputs", {}).get("hardware") or {}).get("accelerator")
    for manifest in document.get("manifests", []):
        where = f"{manifest.get('kind')} {manifest.get('metadata', {}).get('name')}"
        findings += [f"{where}: {p}" for p in schemas.problems(manifest)]
        for path, template in _pod_templates(manifest):
            annotations = template.get("metadata", {}).get("annotations", {})
            for key in ("kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology"):
                if key in annotations and topologies and annotations[key] not in levels:
                    findings.append(f"{where} {path}: {key}={annotations[key]} is no level of the stack's Topology")
            spec = template.get("spec", {})
            selectors = spec.get("nodeSelector", {})
            tolerations = json.dumps(spec.get("tolerations", []))
            if accelerator in ("gb200", "gb300") and selectors.get("kubernetes.io/arch") != "arm64" and "arm64" not in \
                    tolerations and "arm64" not in json.dumps(spec.get("affinity", {})):
                findings.append(f"{where} {path}: a {accelerator} (Grace, arm64) pod does not select arm64 nodes")
    return findings


def classify(result: dict[str, Any], schemas: Schemas) -> dict[str, Any]:
    """Outcome and findings of one workload's flow."""
    steps = result["steps"]
    findings: list[str] = []
    for step, run in steps.items():
        if "Traceback" in run["stderr"] or "Traceback" in run["stdout"]:
            findings.append(f"TRACEBACK in {step}: " + run["stderr"].strip().splitlines()[-1][:200])
        if run["rc"] not in (0, 2, 3, 4):
            findings.append(f"{step} exit {run['rc']}")
    choose = steps["choose"]
    expect = result.get("expect")
    if expect and expect.startswith("refused:"):
        return _refusal_expected(expect.removeprefix("refused:").strip(), steps, findings)
    if choose["rc"] == 3 and "plan" not in steps:
        return {"outcome": "infeasible", "findings": findings + (["expected clean, choose found nothing"]
                                                                  if expect == CLEAN else [])}
    if choose["rc"] not in (0, 3):
        return {"outcome": f"choose exit {choose['rc']}", "findings": findings + [choose["stderr"][-400:]]}
    plan_doc = None
    if steps["plan"]["rc"] in (0, 4):
        plan_doc = json.loads(steps["plan"]["stdout"])
        for violation in plan_doc["policy"]["violations"]:
            if violation["level"] == "mandatory":
                findings.append(f"MANDATORY {violation['policy']}: {violation['message'][:240]}")
        findings += [f"plan warning: {w[:240]}" for w in plan_doc.get("warnings", [])]
        findings += [f"built: {f}" for f in built_checks(plan_doc)]
        for resource in plan_doc["resources"]:
            inputs = resource.get("inputs") or {}
            if (inputs.get("apiVersion"), inputs.get("kind")) in schemas.by_kind:
                findings += [f"plan object {inputs['kind']} {resource['name']}: {p}" for p in schemas.problems(inputs)]
    else:
        findings.append(f"plan exit {steps['plan']['rc']}: {steps['plan']['stderr'][-400:]}")
    for step in ("job", "validate"):
        run = steps[step]
        if run["rc"] != 0:
            findings.append(f"{step} exit {run['rc']}: {run['stderr'].strip()[-400:]}")
        try:
            document = json.loads(run["stdout"])
        except ValueError:
            continue
        findings += [f"{step} warning: {str(w)[:240]}" for w in ((document.get("check") or document).get("warnings") or [])]
        findings += [f"{step}: {f}" for f in manifest_checks(document, plan_doc, schemas)]
    outcome = "ok" if steps["plan"]["rc"] == 0 and steps["job"]["rc"] == 0 and steps["validate"]["rc"] == 0 \
        else f"plan {steps['plan']['rc']} job {steps['job']['rc']} validate {steps['validate']['rc']}"
    return {"outcome": outcome, "findings": findings}


def _refusal_expected(pattern: str, steps: dict[str, Any], findings: list[str]) -> dict[str, Any]:
    """A workload expected to be refused: the first step that refuses (exit 2 or 3) must name the constraint."""
    import re  # noqa: PLC0415

    for step, run in steps.items():
        if run["rc"] in (2, 3):
            said = run["stderr"] + run["stdout"]
            if not re.search(pattern, said, re.IGNORECASE):
                findings.append(f"refusal unnamed: {step} exit {run['rc']} does not say /{pattern}/: "
                                f"{said.strip()[-300:]}")
            if step != "choose":   # named, but choose wrote a stack that cannot plan: choose should have refused
                findings.append(f"chosen then refused: choose wrote the stack, {step} exits {run['rc']}")
            return {"outcome": "refused", "findings": findings}
        if run["rc"] != 0:
            break
    return {"outcome": "not refused", "findings": findings + [f"expected a refusal naming /{pattern}/, got "
                                                              + " ".join(f"{k}={v['rc']}" for k, v in steps.items())]}


def report(out: Path) -> None:
    schemas = Schemas()
    outcomes, kinds = collections.Counter(), collections.Counter()
    lines, verdicts = [], []
    # The grid's expectation of each workload as it stands (a result keeps the one it was run under)
    expected = {w["name"]: w["x-expect"] for w in grid() if "x-expect" in w}
    for path in sorted((out / "results").glob("*.json")):
        result = json.loads(path.read_text())
        result["expect"] = expected.get(result["name"], result.get("expect"))
        verdict = classify(result, schemas)
        verdicts.append(verdict)
        outcomes[verdict["outcome"]] += 1
        for finding in verdict["findings"]:
            kinds[finding.split(":")[0][:80]] += 1
        lines.append(f"{result['name']}: {verdict['outcome']} " +
                     " ".join(f"{k}={v['rc']}({v['seconds']}s)" for k, v in result["steps"].items()))
        lines += [f"    {finding}" for finding in verdict["findings"]]
    print("\n".join(lines))
    # A warning is said to the user (the plan's or the job's own); a finding is anything else the checks found.
    def faults(verdict: dict[str, Any]) -> list[str]:
        return [f for f in verdict["findings"] if not f.split(":")[0].endswith("warning")]

    clean = sum(1 for verdict in verdicts if verdict["outcome"] == "ok" and not faults(verdict))
    refused = sum(1 for verdict in verdicts if verdict["outcome"] in ("infeasible", "refused") and not faults(verdict))
    print(f"\nruns {len(verdicts)}, clean flows {clean}, refusals {refused}, "
          f"runs with findings {sum(1 for v in verdicts if faults(v))}, findings {sum(len(faults(v)) for v in verdicts)}"
          f" (and {sum(len(v['findings']) - len(faults(v)) for v in verdicts)} warnings said)")
    print("outcomes:", dict(outcomes))
    print("findings by kind:")
    for kind, count in kinds.most_common():
        print(f"  {count:4d}  {kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", help="comma-separated workload names")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--report", action="store_true", help="only print the counts of a finished run")
    args = parser.parse_args()
    if args.report:
        report(args.out)
        return
    project = scratch_project(args.out / "project")
    workloads_dir = args.out / "workloads"
    results = args.out / "results"
    workloads_dir.mkdir(parents=True, exist_ok=True)
    results.mkdir(parents=True, exist_ok=True)
    chosen = grid()
    if args.only:
        chosen = [w for w in chosen if w["name"] in args.only.split(",")]
    for workload in chosen[:args.limit]:
        relaxed = relax(workload)
        for each in (workload, relaxed):
            target = results / f"{each['name']}.json"
            if each is relaxed and ("x-inventory" in workload or "x-expect" in workload or json.loads(
                    (results / f"{workload['name']}.json").read_text())["steps"]["choose"]["rc"] != 3):
                break          # chosen as written, or on-prem: no relaxed variant
            if target.is_file() and not args.only:
                continue
            result = run_one(dict(each), project, workloads_dir)
            target.write_text(json.dumps(result))
            print(each["name"], {k: v["rc"] for k, v in result["steps"].items()},
                  round(sum(v["seconds"] for v in result["steps"].values()), 1), flush=True)
    report(args.out)


def relax(workload: dict[str, Any]) -> dict[str, Any]:
    """The workload with its limits loosened (no budget or chip limit, four times the deadline, spot allowed where
    required), run when the workload as written has nothing feasible so that its stack is built too."""
    relaxed = json.loads(json.dumps(workload))
    relaxed["name"] = workload["name"] + "r"
    constraints = relaxed["constraints"]
    for key in ("budget_usd", "max_chips"):
        constraints.pop(key, None)
    if "deadline_days" in constraints:
        constraints["deadline_days"] = min(365, constraints["deadline_days"] * 4)
    if constraints.get("spot") == "required":
        constraints["spot"] = "allowed"
    return relaxed


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
