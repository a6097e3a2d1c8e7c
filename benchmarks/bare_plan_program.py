"""A bare Pulumi program of the same resource types as a plan, as a whole process: what
`accel plan` is compared with in benchmarks/bench_startup.py.

    python benchmarks/bare_plan_program.py RESOURCES.json [--plain] [--without-collector]

RESOURCES.json (written by bench_startup.py from `plan_stack` of the stack) holds the captured
resources, the stack's outputs and the provider SDK modules the real program imported. This
process imports the Pulumi SDK and exactly those provider modules (what any program declaring
these resource types loads), then registers the same resources (type, name, parent, inputs,
provider, dependencies, protect, retainOnDelete) on the SDK's stock mock engine, each as an instance
of its provider SDK class (`gcp.container.Cluster`, ...) with its inputs in the class's input type,
as a program declaring these types does (benchmarks/replay.py; Kubernetes custom resources, which
no SDK class registers, stay plain). No accel code.

`--plain` registers every resource as a plain `pulumi.CustomResource` with a dict instead: a lower
bound no program of these types reaches, since it skips the SDK's work on each class's typed
inputs and outputs.

`--without-collector` runs it as `accel plan` runs (the cyclic garbage collector off for the whole
one-shot process, accel/cli.py): the like-for-like figure for accel's own fixed cost.
"""

from __future__ import annotations

import gc
import importlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from replay import replay_program, run_on_stock_engine


def main(path: str, through_classes: bool = True) -> None:
    dump = json.loads(Path(path).read_text(encoding="utf-8"))
    for module in dump["provider_modules"]:
        importlib.import_module(module)
    resources = [SimpleNamespace(**resource) for resource in dump["resources"]]
    capture = SimpleNamespace(resources=resources, outputs=dump["outputs"])
    run_on_stock_engine(replay_program(capture, through_classes), project=dump["project"], stack=dump["stack"])


if __name__ == "__main__":
    if "--without-collector" in sys.argv[2:]:
        gc.disable()
    main(sys.argv[1], through_classes="--plain" not in sys.argv[2:])
