"""`accel plan` at frontier scale: the 16,384-H100 stacks (2,048 nodes) on GCP and AWS, and the same
stacks at 1/8, 1/4 and 1/2 of the fleet, to show the time stays linear in resources (issue 14: under a
minute on a 2-core machine).

    uv run --no-sync python benchmarks/bench_scale.py          # the table
    uv run --no-sync python benchmarks/bench_scale.py --json   # the figures as JSON on stdout

Each run plans a copy of stacks/Pulumi.llama-405b-h100-<cloud>.yaml with `accel:hardware.chips` set,
in a fresh process (so module imports and caches count, as they do for a user), and reports wall
seconds, resources, node pools and seconds per resource. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("llama-405b-h100-gcp", "llama-405b-h100-aws")
FRACTIONS = (8, 4, 2, 1)   # 2,048 / N nodes
TARGET_SECONDS = 60.0


def _stack_file(stack: str, chips: int, project: Path) -> Path:
    yaml = YAML()
    data = yaml.load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    data["config"]["accel:hardware"]["chips"] = chips
    path = project / f"Pulumi.{stack}-{chips}.yaml"
    with path.open("w") as handle:
        yaml.dump(data, handle)
    return path


def _plan(path: Path) -> dict:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "accel.cli", "plan", "--config", str(path), "-C", str(ROOT), "--json"],
                         capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    seconds = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"accel plan --config {path} exited {run.returncode}: {run.stderr[-2000:]}")
    document = json.loads(run.stdout)
    gpu = document["plan"]["gpu"]
    return {"seconds": round(seconds, 2), "resources": document["summary"]["count"], "nodes": gpu["nodes"],
            "pools": gpu["pools"], "nodes_per_pool": gpu["nodes_per_pool"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for stack in STACKS:
            for fraction in FRACTIONS:
                chips = 16384 // fraction
                print(f"planning {stack} at {chips} GPUs ...", file=sys.stderr, flush=True)
                rows.append({"stack": stack, "gpus": chips, **_plan(_stack_file(stack, chips, Path(tmp)))})
    for row in rows:
        row["ms_per_resource"] = round(1000 * row["seconds"] / row["resources"], 1)
    full = [r for r in rows if r["gpus"] == 16384]
    summary = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
               "target_seconds": TARGET_SECONDS, "within_target": all(r["seconds"] < TARGET_SECONDS for r in full),
               "rows": rows}
    if options.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"accel plan at frontier scale ({summary['machine']})")
    print(f"{'stack':<22} {'GPUs':>6} {'nodes':>6} {'pools':>5} {'per pool':>8} {'resources':>9} {'seconds':>8} {'ms/res':>7}")
    for r in rows:
        print(f"{r['stack']:<22} {r['gpus']:>6} {r['nodes']:>6} {r['pools']:>5} {r['nodes_per_pool'] or '-':>8} "
              f"{r['resources']:>9} {r['seconds']:>8} {r['ms_per_resource']:>7}")
    verdict = "under" if summary["within_target"] else "OVER"
    print(f"16,384-GPU plans {verdict} {TARGET_SECONDS:.0f} s: " + ", ".join(f"{r['stack']} {r['seconds']} s" for r in full))


if __name__ == "__main__":
    main()
