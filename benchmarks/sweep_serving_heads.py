"""Every named architecture served where its replica's tensor degree meets its heads, in process: the search
(`choose_plan`, as `accel choose` then `accel plan` make the Plan) and then the serving job's own heads check on the
degree the Plan lays out (accel/job/model_run.py check_vllm_tensor_parallel on GPUs; on TPU the job's vLLM TPU
server, which checks its JAX devices). A refusal after a successful choice is what `accel choose` must never leave.

Families: GCP and AWS GPU machines of 1 to 8 GPUs and nodes over the network (A100 40GB, H100, L4, GB200), TPU v5e,
v6e and TPU7x, each at four targets (tokens/s x p99) under both objectives; existing clusters of 16-GPU nodes
(A100, H100), of 12, 10 and 6 GPUs a node, and a GB200 rack labelled in cliques of 32 GPUs, at a denser grid of
targets; pins of A100 x 16 and 32, H100 x 16, TPU7x x 4, v5e and v6e x 8.

    uv run --no-sync python benchmarks/sweep_serving_heads.py [--only cloud,cluster,pin]

The day-one flow over the CLI for a sample of these is sweep_day_one.py's heads_sweep. Not part of the test suite
(~2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]

CLOUD = {   # family -> (accelerators, clouds, framework, hours)
    "gpu-a100-40": (["a100-40gb"], ["gcp"], "pytorch", None),
    "gpu-h100": (["h100-80gb"], ["gcp", "aws"], "pytorch", None),
    "gpu-l4": (["l4"], ["gcp"], "pytorch", None),
    "gpu-gb200": (["gb200"], ["gcp"], "pytorch", None),
    "tpu-v5e": (["tpu-v5e"], ["gcp"], "jax", None),
    "tpu-v6e": (["tpu-v6e"], ["gcp"], "jax", None),
    "tpu7x": (["tpu7x"], ["gcp"], "jax", 150),   # flex-start only: requests of at most 168 h
}
CLUSTERS = {
    "a100x16": {"accelerator": "a100-40gb", "count": 128, "gpus_per_node": 16, "usd_per_chip_hour": 1.0, "name": "a16"},
    "h100x16": {"accelerator": "h100-80gb", "count": 128, "gpus_per_node": 16, "usd_per_chip_hour": 2.0, "name": "h16"},
    "h100x12": {"accelerator": "h100-80gb", "count": 96, "gpus_per_node": 12, "usd_per_chip_hour": 2.0, "name": "h12"},
    "l40sx10": {"accelerator": "l40s", "count": 80, "gpus_per_node": 10, "usd_per_chip_hour": 0.5, "name": "l10"},
    "h100x6": {"accelerator": "h100-80gb", "count": 96, "gpus_per_node": 6, "usd_per_chip_hour": 2.0, "name": "h6"},
    "gb200c32": {"accelerator": "gb200", "count": 144, "gpus_per_node": 4, "usd_per_chip_hour": 4.0, "name": "nvl",
                 "nvlink_domain_gpus": 32, "nvlink_clique_label": True},
}
PINS = [{"accelerator": "a100-40gb", "chips": 16, "cloud": "gcp"}, {"accelerator": "a100-40gb", "chips": 32, "cloud": "gcp"},
        {"accelerator": "h100-80gb", "chips": 16}, {"accelerator": "tpu7x", "chips": 4},
        {"accelerator": "tpu-v5e", "chips": 8}, {"accelerator": "tpu-v6e", "chips": 8}]


def cases(only: set[str]) -> Iterator[tuple[str, str, dict[str, Any], str, tuple]]:
    """(group, case, workload, objective, extra offerings' inventory) for every case of the chosen groups."""
    from accel.policies.architectures import table

    for name in table().names():
        model = {"architecture": name}
        if "cloud" in only:
            for family, (accelerators, clouds, framework, hours) in CLOUD.items():
                for tps, p99 in ((20000, 15), (4000, 40), (2000, 10), (100000, 30)):
                    inference = {"tokens_per_second": tps, "p99_latency_ms": p99, "framework": framework,
                                 **({"hours": hours} if hours else {})}
                    for objective in ("time", "cost"):
                        yield ("cloud", f"{name} {family} {tps}/{p99} {objective}",
                               {"model": model, "inference": inference,
                                "constraints": {"clouds": clouds, "spot": "never", "accelerators": accelerators}},
                               objective, ())
        if "cluster" in only:
            for cluster, inventory in CLUSTERS.items():
                for tps in (2000, 20000):
                    for p99 in (8, 10, 12, 15, 30, 60):
                        for objective in ("time", "cost"):
                            yield ("cluster", f"{name} {cluster} {tps}/{p99} {objective}",
                                   {"model": model, "inference": {"tokens_per_second": tps, "p99_latency_ms": p99},
                                    "constraints": {"clouds": ["kubernetes"]}}, objective, (inventory,))
        if "pin" in only:
            for pin in PINS:
                for tps, p99 in ((20000, 15), (2000, 100)):
                    tpu = pin["accelerator"].startswith("tpu")
                    inference = {"tokens_per_second": tps, "p99_latency_ms": p99, "framework": "jax" if tpu else "pytorch",
                                 **({"hours": 150} if pin["accelerator"] == "tpu7x" else {})}
                    yield ("pin", f"{name} pin {pin['accelerator']} x{pin['chips']} {tps}/{p99}",
                           {"model": model, "inference": inference, "hardware": pin}, "cost", ())


def job_refusal(plan: Any) -> str | None:
    """The serving job's heads refusal of `plan`, or None: the GPU job's check on the Plan's tensor degree, the TPU
    job's server (which checks the host's JAX devices)."""
    from accel.base.errors import UsageError
    from accel.job import model_run, plan_view, vllm_tpu
    from accel.job.manifests import SERVING_PORT

    try:
        if plan.gpu is not None:
            model_run.check_vllm_tensor_parallel(plan, plan.parallelism.tensor)
        else:
            hw = plan_view.hardware(plan)
            chips = min(plan_view.serving_layout(plan)[1], hw.chips_per_node)
            vllm_tpu.server(plan, hw, chips, SERVING_PORT)
    except UsageError as error:
        return str(error)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="cloud,cluster,pin")
    args = parser.parse_args()
    from accel.policies.catalog import load_catalog
    from accel.policies.catalog.loader import offerings_from_inventory
    from accel.policies.selection.choose import choose_plan
    from accel.policies.workload import workload_from_mapping

    catalog = load_catalog()
    counts: collections.Counter = collections.Counter()
    for group, case, body, objective, inventory in cases(set(args.only.split(","))):
        spec = workload_from_mapping({"name": "heads", "kind": "inference", **body}, "w.yaml")
        try:
            plan = choose_plan(spec, catalog, objective, offerings_from_inventory(inventory) if inventory else ())
        except Exception as error:  # noqa: BLE001 (nothing feasible, or a pin refused: no Plan to check)
            counts[group, "no choice"] += 1
            print(f"{case} | no choice | {type(error).__name__}", flush=True)
            continue
        details = plan.estimate.details
        layout = (f"replica {details.get('replica_chips')} stages {details.get('pipeline_stages', 1)}"
                  + (f" TP{plan.parallelism.tensor} PP{plan.parallelism.pipeline}" if plan.parallelism else ""))
        refusal = job_refusal(plan)
        counts[group, "JOB REFUSED" if refusal else "job ok"] += 1
        print(f"{case} | {'JOB REFUSED' if refusal else 'job ok'} | {layout}"
              + (f" | {refusal[:160]}" if refusal else ""), flush=True)
    for (group, outcome), count in sorted(counts.items()):
        print(f"{group}: {outcome} {count}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
