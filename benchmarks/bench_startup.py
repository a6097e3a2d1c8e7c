"""Whole-process start-up: `accel choose` and `accel plan` as a user runs them, each beside its
baseline, interleaved in one run.

    uv run --no-sync python benchmarks/bench_startup.py [--repeat 9] [--json]

Targets (issues 18 and 25), measured after README's set-up (`uv sync --frozen --compile-bytecode`):
- `accel choose examples/llama-70b-pretrain.yaml` at most 3.5x `python -c "import pydantic, yaml"` in
  CPU time (issue 25; issue 18's 2.5x lay below the floor of any command line that validates with
  pydantic and prints with rich), printed beside the floors its libraries set:
  benchmarks/bare_cli_program.py, a typer + rich + pydantic command line with choose's options that
  validates one model and prints one table, and benchmarks/bare_argparse_program.py, the same with
  argparse;
- `accel plan -s llama-70b-tpu` at most 1.05x a bare Pulumi program of the same resource types
  (benchmarks/bare_plan_program.py: the same provider SDK modules imported, the same resources
  registered on the SDK's stock mock engine as instances of their provider SDK classes, no accel
  code; printed beside it, the same resources as plain CustomResources, a lower bound no program
  declaring those types reaches, since the SDK works out each class's typed outputs). `accel plan` runs without the cyclic
  garbage collector (a one-shot process; accel/cli.py), which the bare program, as any stock
  Pulumi program, keeps: the same bare program without the collector is printed beside it, and
  `accel plan` over that is accel's own fixed cost like for like (informational, no target).

`accel choose` keeps derived data (the checked hardware facts, the validated catalog, the fitted MFU
model) in a user cache (accel/base/derived_cache.py): it is measured warm (the cache filled by an
earlier run, as every run after a user's first) and cold (an empty cache directory for each run).
The warm runs read a cache directory of their own, filled by the untimed first run: the user's cache
keeps a few entries per kind, and other runs on the machine (other checkouts, other workloads) would
evict this one's, turning some "warm" runs cold.

Every figure is a fresh process started from this one, its wall time and its CPU time
(user + system, from wait4): the CPU time barely moves when other work shares the machine, the
wall time does. Runs are interleaved (every command once per round) so load falls on all alike.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
PYTHON = sys.executable
ACCEL = str(Path(PYTHON).with_name("accel"))
STACK = "llama-70b-tpu"
WORKLOAD = "examples/llama-70b-pretrain.yaml"
CHOOSE_TARGET = 3.5
PLAN_TARGET = 1.05


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclasses.dataclass
class Command:
    key: str
    label: str
    argv: list[str]
    fresh_cache_in: Path | None = None  # every run gets an empty derived-data cache directory in here
    cache_dir: Path | None = None       # every run reads and fills this derived-data cache directory
    wall: list[float] = dataclasses.field(default_factory=list)
    cpu: list[float] = dataclasses.field(default_factory=list)
    max_rss_mib: float = 0.0

    def run(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(BENCH_DIR)}
        if self.fresh_cache_in is not None:
            env["ACCEL_CACHE_DIR"] = tempfile.mkdtemp(dir=self.fresh_cache_in)
        elif self.cache_dir is not None:
            env["ACCEL_CACHE_DIR"] = str(self.cache_dir)
        started = time.perf_counter()
        process = subprocess.Popen(self.argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _pid, status, usage = os.wait4(process.pid, 0)
        self.wall.append(time.perf_counter() - started)
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(self.argv)} exited {process.returncode}:\n{stderr[-2000:]}")
        self.cpu.append(usage.ru_utime + usage.ru_stime)
        self.max_rss_mib = max(self.max_rss_mib, usage.ru_maxrss / 1024)

    def figures(self) -> dict[str, Any]:
        return {"label": self.label, "argv": self.argv[1:] if self.argv[0] == PYTHON else self.argv,
                "wall_median_s": round(statistics.median(self.wall), 3), "wall_min_s": round(min(self.wall), 3),
                "cpu_median_s": round(statistics.median(self.cpu), 3), "cpu_min_s": round(min(self.cpu), 3),
                "max_rss_mib": round(self.max_rss_mib, 1), "runs": len(self.wall)}


def bytecode_status() -> dict[str, Any]:
    """How much of what the commands import has its .pyc next to it (README's set-up compiles
    site-packages; the project's own sources are compiled by Python on a user's first run)."""
    def share(root: Path) -> tuple[int, int]:
        sources = [p for p in root.rglob("*.py")]
        compiled = sum(1 for p in sources
                       if any((p.parent / "__pycache__").glob(f"{p.stem}.{sys.implementation.cache_tag}*.pyc")))
        return compiled, len(sources)

    site = Path(sysconfig.get_paths()["purelib"])
    packages = [site / name for name in ("pydantic", "yaml", "typer", "rich", "pulumi", "pulumi_gcp",
                                         "pulumi_kubernetes")]
    site_compiled = site_total = 0
    for package in packages:
        done, total = share(package)
        site_compiled, site_total = site_compiled + done, site_total + total
    project_compiled = project_total = 0
    for folder in ("accel", "components", "policies"):
        done, total = share(ROOT / folder)
        project_compiled, project_total = project_compiled + done, project_total + total
    return {"site_packages": f"{site_compiled}/{site_total}", "project": f"{project_compiled}/{project_total}",
            "site_packages_compiled": site_compiled == site_total,
            "project_compiled": project_compiled == project_total}


def dump_plan(stack: str, out: str) -> None:
    """Child process: plan the stack and write what the bare program needs to declare the same."""
    import logging

    logging.getLogger().addHandler(logging.NullHandler())
    from accel.offline_plan import PROVIDER_PACKAGES, plan_stack

    result = plan_stack(stack, None, ROOT)
    # Only the modules the plan executed: a provider package registers its submodules in
    # sys.modules as lazy stubs (pulumi._utils.lazy_import) that load on first attribute access,
    # and importing a stub by name in the bare program would execute it (pulumi_kubernetes'
    # scheduling.v1alpha1..v1beta1 alone: ~0.2 s the plan never spends). `type()` does not load one.
    modules = [name for name, module in list(sys.modules.items())
               if name.split(".")[0] in PROVIDER_PACKAGES and type(module).__name__ != "_LazyModule"]
    Path(out).write_text(json.dumps({
        "project": result.project, "stack": result.stack, "provider_modules": modules,
        "outputs": result.capture.outputs,
        "resources": [dataclasses.asdict(r) for r in result.capture.resources]}, default=str), encoding="utf-8")


def ratio(numerator: list[float], denominator: list[float]) -> float:
    return round(statistics.median(numerator) / statistics.median(denominator), 2)


def paired_ratio(numerator: list[float], denominator: list[float]) -> float:
    """Median of the per-round ratios: each round runs every command once, so a pair shares its load."""
    return round(statistics.median(a / b for a, b in zip(numerator, denominator)), 2)


def verdict(wall: float, cpu: float, target: float) -> str:
    if max(wall, cpu) <= target:
        return "meets"
    if min(wall, cpu) > target:
        return "MISSES"
    return "wall and CPU disagree on"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=9, help="runs of each command (default 9)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    parser.add_argument("--dump-plan", nargs=2, metavar=("STACK", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump_plan:
        dump_plan(*args.dump_plan)
        return 0

    status = bytecode_status()
    if not status["project_compiled"]:
        # A user's first run writes these .pyc files; an environment with PYTHONDONTWRITEBYTECODE
        # never does, and would otherwise measure compiling the project on every run.
        say("byte-compiling the project's sources (as a user's first run does)")
        for folder in ("accel", "components", "policies"):
            compileall.compile_dir(ROOT / folder, quiet=1)
        status = bytecode_status()
    if not status["site_packages_compiled"]:
        say(f"warning: site-packages not byte-compiled ({status['site_packages']} files): "
            "run README's set-up (uv sync --frozen --compile-bytecode) first")
    with tempfile.TemporaryDirectory() as scratch:
        dump = str(Path(scratch) / "resources.json")
        say(f"capturing {STACK} for the bare program")
        subprocess.run([PYTHON, __file__, "--dump-plan", STACK, dump], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        resources = len(json.loads(Path(dump).read_text(encoding="utf-8"))["resources"])
        commands = [
            Command("imports", 'python -c "import pydantic, yaml"', [PYTHON, "-c", "import pydantic, yaml"]),
            Command("cli_imports", 'python -c "import typer, rich.console, rich.table, pydantic, yaml"',
                    [PYTHON, "-c", "import typer, rich.console, rich.table, pydantic, yaml"]),
            # `import pydantic` is lazy: BaseModel loads the model machinery (and importlib.metadata,
            # for pydantic's plugin lookup) that any program defining a model pays.
            Command("libraries", "the same + from pydantic import BaseModel",
                    [PYTHON, "-c", "from pydantic import BaseModel; import yaml, typer, rich.console, rich.table"]),
            # Any program that validates data with pydantic builds a model's validator once: that
            # loads the rest of pydantic (its schema generator, importlib.metadata for plugins).
            Command("one_model", "the same + one pydantic model defined and validated",
                    [PYTHON, "-c", "from pydantic import BaseModel; import yaml, typer, rich.console, rich.table\n"
                                   "class M(BaseModel):\n    x: int\nM(x=1)"]),
            Command("bare_cli", "floor: typer + rich + pydantic CLI, same options, 1 model, 1 table",
                    [PYTHON, str(BENCH_DIR / "bare_cli_program.py"), "choose", WORKLOAD]),
            Command("bare_argparse", "floor: argparse + rich + pydantic CLI, same options, 1 model, 1 table",
                    [PYTHON, str(BENCH_DIR / "bare_argparse_program.py"), "choose", WORKLOAD]),
            Command("choose_cold", f"accel choose {WORKLOAD} (empty derived-data cache)",
                    [ACCEL, "choose", WORKLOAD], fresh_cache_in=Path(scratch)),
            Command("choose", f"accel choose {WORKLOAD} (warm cache)", [ACCEL, "choose", WORKLOAD],
                    cache_dir=Path(scratch) / "warm-cache"),
            Command("bare_plan", f"bare program, same {resources} resources, provider modules and classes",
                    [PYTHON, str(BENCH_DIR / "bare_plan_program.py"), dump]),
            Command("bare_plan_plain", "the same resources as plain CustomResources (lower bound)",
                    [PYTHON, str(BENCH_DIR / "bare_plan_program.py"), dump, "--plain"]),
            Command("bare_plan_without_collector", "the bare program (classes) without the garbage collector",
                    [PYTHON, str(BENCH_DIR / "bare_plan_program.py"), dump, "--without-collector"]),
            Command("plan", f"accel plan -s {STACK}", [ACCEL, "plan", "-s", STACK]),
        ]
        for command in commands:  # warm the file cache; not timed
            command.run()
            command.wall.clear(), command.cpu.clear()
            command.max_rss_mib = 0.0   # the untimed run (the warm choose's: a cold one) counts for nothing
        for round_ in range(args.repeat):
            say(f"round {round_ + 1}/{args.repeat}")
            for command in commands:
                command.run()

    by_key = {c.key: c for c in commands}
    report = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": [round(x, 1) for x in os.getloadavg()]},
        "bytecode": status,
        "commands": {c.key: c.figures() for c in commands},
        "choose": {"wall_ratio": ratio(by_key["choose"].wall, by_key["imports"].wall),
                   "cpu_ratio": ratio(by_key["choose"].cpu, by_key["imports"].cpu),
                   "paired_cpu_ratio": paired_ratio(by_key["choose"].cpu, by_key["imports"].cpu),
                   "cold_wall_ratio": ratio(by_key["choose_cold"].wall, by_key["imports"].wall),
                   "cold_cpu_ratio": ratio(by_key["choose_cold"].cpu, by_key["imports"].cpu),
                   "cli_imports_cpu_ratio": ratio(by_key["cli_imports"].cpu, by_key["imports"].cpu),
                   "libraries_cpu_ratio": ratio(by_key["libraries"].cpu, by_key["imports"].cpu),
                   "one_model_cpu_ratio": ratio(by_key["one_model"].cpu, by_key["imports"].cpu),
                   "bare_cli_wall_ratio": ratio(by_key["bare_cli"].wall, by_key["imports"].wall),
                   "bare_cli_cpu_ratio": ratio(by_key["bare_cli"].cpu, by_key["imports"].cpu),
                   "above_bare_cli_cpu_ratio": ratio(by_key["choose"].cpu, by_key["bare_cli"].cpu),
                   "bare_argparse_wall_ratio": ratio(by_key["bare_argparse"].wall, by_key["imports"].wall),
                   "bare_argparse_cpu_ratio": ratio(by_key["bare_argparse"].cpu, by_key["imports"].cpu),
                   "above_bare_argparse_cpu_ratio": ratio(by_key["choose"].cpu, by_key["bare_argparse"].cpu),
                   "target": CHOOSE_TARGET},
        "plan": {"wall_ratio": ratio(by_key["plan"].wall, by_key["bare_plan"].wall),
                 "cpu_ratio": ratio(by_key["plan"].cpu, by_key["bare_plan"].cpu), "target": PLAN_TARGET,
                 "plain_wall_ratio": ratio(by_key["plan"].wall, by_key["bare_plan_plain"].wall),
                 "plain_cpu_ratio": ratio(by_key["plan"].cpu, by_key["bare_plan_plain"].cpu),
                 "without_collector_wall_ratio": ratio(by_key["plan"].wall, by_key["bare_plan_without_collector"].wall),
                 "without_collector_cpu_ratio": ratio(by_key["plan"].cpu, by_key["bare_plan_without_collector"].cpu)},
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0

    print(f"Start-up, whole processes: {report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
          f"load average {report['machine']['load_average']}, {args.repeat} runs each, interleaved; "
          f"byte-compiled: site-packages {status['site_packages']}, project {status['project']}")
    print(f"{'command':<72}{'wall median':>12}{'CPU median':>12}{'CPU min':>9}{'max RSS':>10}")
    for command in commands:
        f = command.figures()
        print(f"{f['label']:<72}{f['wall_median_s']:>11.3f}s{f['cpu_median_s']:>11.3f}s{f['cpu_min_s']:>8.3f}s"
              f"{f['max_rss_mib']:>6.0f} MiB")
    choose, plan = report["choose"], report["plan"]
    met = "meets" if choose["paired_cpu_ratio"] <= CHOOSE_TARGET else "MISSES"
    print(f"\naccel choose / import pydantic, yaml: {choose['paired_cpu_ratio']:.2f}x CPU, median of the paired runs "
          f"({met} the {CHOOSE_TARGET}x CPU target); ratio of medians {choose['wall_ratio']:.2f}x wall, "
          f"{choose['cpu_ratio']:.2f}x CPU warm, "
          f"{choose['cold_wall_ratio']:.2f}x wall, {choose['cold_cpu_ratio']:.2f}x CPU cold")
    print(f"floor, the libraries alone / import pydantic, yaml: typer and rich {choose['cli_imports_cpu_ratio']:.2f}x CPU; "
          f"with pydantic's BaseModel {choose['libraries_cpu_ratio']:.2f}x; with one model validated "
          f"{choose['one_model_cpu_ratio']:.2f}x; a bare typer + rich + pydantic CLI with choose's options "
          f"{choose['bare_cli_wall_ratio']:.2f}x wall, {choose['bare_cli_cpu_ratio']:.2f}x CPU "
          f"(accel choose warm: {choose['above_bare_cli_cpu_ratio']:.2f}x its CPU)")
    print(f"floor, argparse: an argparse + rich + pydantic CLI with choose's options / import pydantic, yaml: "
          f"{choose['bare_argparse_wall_ratio']:.2f}x wall, {choose['bare_argparse_cpu_ratio']:.2f}x CPU "
          f"(accel choose warm: {choose['above_bare_argparse_cpu_ratio']:.2f}x its CPU)")
    print(f"accel plan / bare program of the same resource types: {plan['wall_ratio']:.2f}x wall, "
          f"{plan['cpu_ratio']:.2f}x CPU ({verdict(plan['wall_ratio'], plan['cpu_ratio'], PLAN_TARGET)} "
          f"the {PLAN_TARGET}x target); like for like, over the bare program without the collector: "
          f"{plan['without_collector_wall_ratio']:.2f}x wall, {plan['without_collector_cpu_ratio']:.2f}x CPU; "
          f"over plain CustomResources (no SDK classes): {plan['plain_wall_ratio']:.2f}x wall, "
          f"{plan['plain_cpu_ratio']:.2f}x CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
