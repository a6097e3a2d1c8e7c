"""How long `accel plan` takes and how much memory it needs, for every example stack and for a
synthetic stack of up to 36 training clusters (2,052 resources); its overhead over Pulumi's bare
mock engine; and whether its time grows linearly with the number of resources.

    uv run --no-sync python benchmarks/bench_plan.py          # full run (several minutes on 2 cores)
    uv run --no-sync python benchmarks/bench_plan.py --quick  # smoke run
    uv run --no-sync python benchmarks/bench_plan.py --json   # the figures as JSON on stdout

Targets (issues 5 and 18): accel plan under 1.5x the bare mock engine; time linear in resources up
to 2,000+; the replay registers exactly the captured resources. The whole-process comparison
(`accel plan` against a bare program of the same resource types) is benchmarks/bench_startup.py.
Progress goes to stderr; stdout holds only the tables (or the JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.metadata
import json
import logging
import os
import platform
import pstats
import resource
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(BENCH_DIR)]

DEFAULT_STACK = "llama-70b-tpu"
OVERHEAD_TARGET = 1.5
MIB = 1024 * 1024


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def quiet_pulumi_log() -> None:
    # The mock engine sends pulumi.log to the root logger; component warnings are not figures.
    logging.getLogger().addHandler(logging.NullHandler())


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class GcPauses:
    """Collections the interpreter ran while active, by generation, and the time they took."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._started = 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            generation = info["generation"]
            self.count[generation] += 1
            self.seconds[generation] += time.perf_counter() - self._started

    def __enter__(self) -> Self:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *_exc) -> None:
        gc.callbacks.remove(self._callback)

    def as_json(self) -> dict[str, Any]:
        return {"gen2_collections": self.count[2], "gen2_ms": round(self.seconds[2] * 1000, 1),
                "all_collections": sum(self.count), "all_ms": round(sum(self.seconds) * 1000, 1)}


# --- fresh processes: cold time and whole-process memory -------------------------------------

def child_stack(stack: str) -> dict[str, Any]:
    """One `plan_stack` in this (fresh) process: the cold figure a user sees on a first run."""
    started = time.perf_counter()
    from accel.offline_plan import plan_stack

    imported = time.perf_counter()
    with GcPauses() as pauses:
        result = plan_stack(stack, None, ROOT)
    done = time.perf_counter()
    return {"stack": stack, "resources": len(result.capture.resources),
            "import_accel_s": round(imported - started, 3), "plan_stack_s": round(done - imported, 3),
            "provider_import_s": {k: round(v, 3) for k, v in result.provider_load_seconds.items()},
            "gc": pauses.as_json(), "max_rss_mib": round(max_rss_mib(), 1)}


def child_synthetic(scale: int) -> dict[str, Any]:
    started = time.perf_counter()
    import plan_programs

    imported = time.perf_counter()
    with GcPauses() as pauses:
        run = plan_programs.synthetic_plan(scale)
    done = time.perf_counter()
    return {"scale": scale, "resources": len(run.capture.resources),
            "import_accel_s": round(imported - started, 3), "plan_s": round(done - imported, 3),
            "gc": pauses.as_json(), "max_rss_mib": round(max_rss_mib(), 1)}


def in_fresh_process(flag: str, value: str) -> dict[str, Any]:
    started = time.perf_counter()
    completed = subprocess.run([sys.executable, str(Path(__file__).resolve()), flag, value],
                               capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{flag} {value} failed:\n{completed.stderr[-2000:]}")
    figures = json.loads(completed.stdout.strip().splitlines()[-1])
    figures["process_wall_s"] = round(wall, 3)
    return figures


# --- in-process timing -------------------------------------------------------------------------

ACCEL, STOCK, REPLAY = "accel", "stock", "replay"


@dataclass
class Subject:
    """One stack or synthetic size: the three ways of running it, and their timed samples."""

    key: str
    variants: dict[str, Callable[[], Any]]
    resources: int
    row: dict[str, Any]
    wall: dict[str, list[float]] = field(default_factory=lambda: {ACCEL: [], STOCK: [], REPLAY: []})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {ACCEL: [], STOCK: [], REPLAY: []})


def run_interleaved(subjects: list[Subject], repeat: int) -> None:
    """Round-robin: every repetition times each subject's accel, stock and replay run in turn, so
    load from other processes on the shared machine falls on all of them alike. Wall time and
    this process's CPU time (all threads) are both kept: CPU time barely moves with that load."""
    from plan_programs import release_run_loop

    for round_ in range(repeat):
        say(f"  timed round {round_ + 1}/{repeat}")
        for subject in subjects:
            for name, function in subject.variants.items():
                gc.collect()  # every run starts from the same collector state (see NOTES)
                wall, cpu = time.perf_counter(), time.process_time()
                function()
                subject.cpu[name].append(time.process_time() - cpu)
                subject.wall[name].append(time.perf_counter() - wall)
                release_run_loop()  # not timed: the loop and thread pool the run left behind


def summary_ms(samples: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(samples) * 1000, 1),
            "mean_ms": round(statistics.fmean(samples) * 1000, 1),
            "min_ms": round(min(samples) * 1000, 1),
            "max_ms": round(max(samples) * 1000, 1), "runs": len(samples)}


def ratio(numerator: list[float], denominator: list[float]) -> float:
    return round(statistics.median(numerator) / statistics.median(denominator), 2)


def finish(subject: Subject) -> dict[str, Any]:
    wall, cpu = subject.wall, subject.cpu
    row = subject.row
    row["resources"] = subject.resources
    row["accel_plan"] = summary_ms(wall[ACCEL])
    row["accel_plan_cpu"] = summary_ms(cpu[ACCEL])
    row["ms_per_resource"] = round(statistics.median(wall[ACCEL]) * 1000 / subject.resources, 2)
    row["cpu_ms_per_resource"] = round(statistics.median(cpu[ACCEL]) * 1000 / subject.resources, 2)
    row["program_on_stock_engine"] = summary_ms(wall[STOCK])
    row["program_on_stock_engine_cpu"] = summary_ms(cpu[STOCK])
    row["bare_replay"] = summary_ms(wall[REPLAY])
    row["bare_replay_cpu"] = summary_ms(cpu[REPLAY])
    row["ratio_vs_stock_engine"] = ratio(wall[ACCEL], wall[STOCK])
    row["ratio_vs_stock_engine_cpu"] = ratio(cpu[ACCEL], cpu[STOCK])
    row["ratio_vs_bare_replay"] = ratio(wall[ACCEL], wall[REPLAY])
    row["ratio_vs_bare_replay_cpu"] = ratio(cpu[ACCEL], cpu[REPLAY])
    return row


def traced_peak_mib(function: Callable[[], Any]) -> float:
    """tracemalloc's peak over one run (Python allocations only; the run itself is slower)."""
    from plan_programs import release_run_loop

    gc.collect()
    tracemalloc.start()
    try:
        function()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        release_run_loop()
    return round(peak / MIB, 1)


def example_stacks(only: list[str] | None) -> list[str]:
    found = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    if only:
        missing = sorted(set(only) - set(found))
        if missing:
            raise SystemExit(f"--stacks: no stacks/Pulumi.<name>.yaml for {', '.join(missing)}; "
                             f"have {', '.join(found)}")
        found = [s for s in found if s in only]
    return sorted(found, key=lambda s: (s != DEFAULT_STACK, s))


def prepare_stack(stack: str) -> Subject:
    """Warm-up run (its capture drives the replay), replay check, tracemalloc peak."""
    import plan_programs as programs

    from accel.offline_plan import plan_stack

    def plan():
        return plan_stack(stack, None, ROOT)

    started = time.perf_counter()
    first = plan()  # cold only for providers that no earlier stack in this process loaded
    first_s = time.perf_counter() - started
    programs.release_run_loop()
    capture = first.capture
    differences = programs.replay_differences(capture, project=first.project, stack=first.stack)
    programs.release_run_loop()
    replay = programs.replay_program(capture)
    row = {"stack": stack, "first_run_in_process_ms": round(first_s * 1000, 1),
           "tracemalloc_peak_mib": traced_peak_mib(plan), "guardrail_violations": len(first.violations),
           "replay_differences": differences}
    return Subject(stack, {
        ACCEL: plan,
        STOCK: lambda: programs.stack_on_bare_engine(stack),
        REPLAY: lambda: programs.run_bare(replay, project=first.project, stack=first.stack),
    }, len(capture.resources), row)


def prepare_synthetic(scale: int) -> tuple[Subject, list[Any]]:
    import plan_programs as programs

    warm = programs.synthetic_plan(scale)
    programs.release_run_loop()
    capture = warm.capture
    differences = programs.replay_differences(capture, project="accel", stack=programs.BASE_STACK)
    programs.release_run_loop()
    replay = programs.replay_program(capture)
    runs: list[programs.SyntheticRun] = []
    row = {"scale": scale, "tpu_slices": programs.BASE_SLICES * scale,
           "gpu_node_pools": programs.BASE_GPU_POOLS * scale, "guardrail_violations": warm.violations,
           "tracemalloc_peak_mib": traced_peak_mib(lambda: programs.synthetic_plan(scale)),
           "replay_differences": differences}
    return Subject(f"x{scale}", {
        ACCEL: lambda: runs.append(programs.synthetic_plan(scale)),
        STOCK: lambda: programs.synthetic_on_bare_engine(scale),
        REPLAY: lambda: programs.run_bare(replay, project="accel", stack=programs.BASE_STACK),
    }, len(capture.resources), row), runs


def finish_synthetic(subject: Subject, runs: list[Any]) -> dict[str, Any]:
    row = finish(subject)
    row["phases_median_ms"] = {
        "program": round(statistics.median(r.program_s for r in runs) * 1000, 1),
        "guardrails": round(statistics.median(r.guardrails_s for r in runs) * 1000, 1),
        "json": round(statistics.median(r.json_s for r in runs) * 1000, 1)}
    return row


def linear_fit(xs: list[float], ys: list[float]) -> dict[str, float]:
    """Least squares y = a + b x, with R^2."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    return {"slope": slope, "intercept": intercept, "r2": 1 - residual / total if total else 1.0}


def growth(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], float]) -> dict[str, Any]:
    """Least-squares line, and a curvature check: the cost per added resource over the upper half of
    the sizes against the lower half. Linear growth keeps it near 1; quadratic growth would make it
    (n_last + n_mid) / (n_mid + n_first). Verdict: linear if R^2 >= 0.98 and the ratio is closer to 1
    than to the quadratic value."""
    xs = [float(r["resources"]) for r in rows]
    ys = [key(r) for r in rows]
    fit = linear_fit(xs, ys)
    consecutive = [(ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i]) for i in range(len(xs) - 1)]
    result = {"slope_per_resource": round(fit["slope"], 3), "intercept": round(fit["intercept"], 1),
              "r2": round(fit["r2"], 4), "marginal_per_resource": [round(m, 3) for m in consecutive],
              "upper_to_lower_marginal": None, "quadratic_would_give": None, "linear": fit["r2"] >= 0.98}
    if len(xs) >= 3:
        mid = len(xs) // 2
        lower = (ys[mid] - ys[0]) / (xs[mid] - xs[0])
        upper = (ys[-1] - ys[mid]) / (xs[-1] - xs[mid])
        quadratic = (xs[-1] + xs[mid]) / (xs[mid] + xs[0])
        curvature = upper / lower if lower > 0 else float("inf")
        result.update(upper_to_lower_marginal=round(curvature, 2), quadratic_would_give=round(quadratic, 2),
                      linear=bool(fit["r2"] >= 0.98 and curvature < (1 + quadratic) / 2))
    return result


PROFILE_BUCKETS = (
    ("project code (accel, components, policies)", lambda f: any(f.startswith(str(ROOT / d)) for d in
                                                                ("accel", "components", "policies", "__main__.py"))),
    ("pulumi SDK (runtime, rpc, Output)", lambda f: "/site-packages/pulumi/" in f),
    ("provider SDK classes (pulumi_gcp, pulumi_kubernetes)", lambda f: "/site-packages/pulumi_" in f),
    ("pydantic", lambda f: "/site-packages/pydantic" in f),
    ("asyncio", lambda f: "/asyncio/" in f),
)
OTHER_BUCKET = "C builtins (incl. running asyncio callbacks) and other stdlib"


def profile_split(scale: int) -> dict[str, Any]:
    """Self time by where the code lives, over one synthetic run (cProfile inflates small calls)."""
    import plan_programs as programs

    profiler = cProfile.Profile()
    profiler.enable()
    programs.synthetic_plan(scale)
    profiler.disable()
    programs.release_run_loop()
    buckets: dict[str, float] = {name: 0.0 for name, _ in PROFILE_BUCKETS}
    buckets[OTHER_BUCKET] = 0.0
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(profiler).stats.items():
        bucket = next((name for name, test in PROFILE_BUCKETS if test(filename)), OTHER_BUCKET)
        buckets[bucket] += tottime
    total = sum(buckets.values())
    return {"scale": scale, "profiled_s": round(total, 3),
            "share": {name: round(seconds / total, 3) for name, seconds in buckets.items()}}


def leak_check(stack: str, runs: int = 3) -> dict[str, Any]:
    """Threads and file descriptors one plan_stack leaves behind when nobody cleans up after it."""
    from plan_programs import release_loops, release_run_loop

    from accel.offline_plan import plan_stack

    release_run_loop()
    gc.collect()
    threads, fds = threading.active_count(), len(os.listdir("/proc/self/fd"))
    loops_left = []
    for _ in range(runs):
        plan_stack(stack, None, ROOT)
        loops_left.append(asyncio.get_event_loop())
    gc.collect()
    leaked = {"runs": runs, "threads_per_run": (threading.active_count() - threads) / runs,
              "fds_per_run": (len(os.listdir("/proc/self/fd")) - fds) / runs}
    release_loops(loops_left)
    return leaked


# --- report ------------------------------------------------------------------------------------

WARM_PAIR = f"{'wall':>8}{'cpu':>7}"


def comparison_cells(row: dict[str, Any]) -> str:
    """Stock engine, bare replay (median ms) and accel plan's ratio to each: wall, then CPU."""
    stock, stock_cpu = row["program_on_stock_engine"], row["program_on_stock_engine_cpu"]
    return (f"{stock['median_ms']:>8.0f}{stock_cpu['median_ms']:>7.0f}"
            f"{row['bare_replay']['median_ms']:>8.0f}{row['bare_replay_cpu']['median_ms']:>7.0f}"
            f"{row['ratio_vs_stock_engine']:>8.2f}{row['ratio_vs_stock_engine_cpu']:>7.2f}"
            f"{row['ratio_vs_bare_replay']:>8.2f}{row['ratio_vs_bare_replay_cpu']:>7.2f}")


def print_report(report: dict[str, Any]) -> None:
    settings = report["settings"]
    print(f"accel plan benchmark: {report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
          f"pulumi {report['machine']['pulumi']}; {settings['repeat']} timed runs per figure after a warm-up")

    fresh = {f["stack"]: f for f in report.get("fresh_process", {}).get("stacks", [])}
    print("\nExample stacks, one process (warm: provider modules already imported); times in ms")
    print(f"{'':<29}{' accel plan ':-^34}{'tracemalloc':>12}{'stock engine':>13}{'bare replay':>13}"
          f"{'x stock':>13}{'x replay':>13}")
    print(f"{'stack':<24}{'res':>5}{'median':>8}{'mean':>6}{'max':>6}{'cpu':>6}{'cpu/res':>8}{'peak MiB':>12}"
          f"{WARM_PAIR}{WARM_PAIR}{WARM_PAIR}{WARM_PAIR}")
    for row in report["stacks"]:
        if "error" in row:
            print(f"{row['stack']:<24}  failed: {row['error']}")
            continue
        accel = row["accel_plan"]
        print(f"{row['stack']:<24}{row['resources']:>5}{accel['median_ms']:>8.0f}{accel['mean_ms']:>6.0f}"
              f"{accel['max_ms']:>6.0f}{row['accel_plan_cpu']['median_ms']:>6.0f}{row['cpu_ms_per_resource']:>8.2f}"
              f"{row['tracemalloc_peak_mib']:>12.1f}{comparison_cells(row)}")
    if fresh:
        print("\nExample stacks, a fresh process each (cold: the first `accel plan` a user runs)")
        print(f"{'stack':<24}{'res':>5}{'process':>9}{'import accel+SDK':>18}{'plan_stack':>12}"
              f"{'of which providers':>20}{'gen2 GC':>13}{'max RSS':>11}")
        for stack, f in fresh.items():
            providers = f["provider_import_s"]
            loaded = sum(providers.values())
            names = "+".join(p.removeprefix("pulumi_") for p in sorted(providers)) or "-"
            print(f"{stack:<24}{f['resources']:>5}{f['process_wall_s']:>8.2f}s{f['import_accel_s']:>17.2f}s"
                  f"{f['plan_stack_s']:>11.2f}s{loaded:>8.2f}s {names:<11}"
                  f"{f['gc']['gen2_collections']:>3} {f['gc']['gen2_ms']:>6.0f}ms{f['max_rss_mib']:>7.0f} MiB")
        synthetic_child = report["fresh_process"].get("synthetic")
        if synthetic_child:
            print(f"{'synthetic x' + str(synthetic_child['scale']):<24}{synthetic_child['resources']:>5}"
                  f"{synthetic_child['process_wall_s']:>8.2f}s{synthetic_child['import_accel_s']:>17.2f}s"
                  f"{synthetic_child['plan_s']:>11.2f}s{'(pipeline)':>20}"
                  f"{synthetic_child['gc']['gen2_collections']:>3} {synthetic_child['gc']['gen2_ms']:>6.0f}ms"
                  f"{synthetic_child['max_rss_mib']:>7.0f} MiB")

    print(f"\nSynthetic stack: {report['synthetic_description']}; times in ms")
    print(f"{'':<22}{' accel plan, wall median ':-^29}{'':<14}{'tracemalloc':>11}{'stock engine':>13}"
          f"{'bare replay':>13}{'x stock':>13}{'x replay':>13}")
    print(f"{'scale':>5}{'slices':>7}{'gpu':>5}{'res':>6}{'total':>8}{'program':>8}{'guard':>7}{'json':>6}"
          f"{'cpu':>6}{'cpu/res':>8}{'peak MiB':>11}{WARM_PAIR}{WARM_PAIR}{WARM_PAIR}{WARM_PAIR}")
    for row in report["synthetic"]:
        phases = row["phases_median_ms"]
        print(f"{'x' + str(row['scale']):>5}{row['tpu_slices']:>7}{row['gpu_node_pools']:>5}{row['resources']:>6}"
              f"{row['accel_plan']['median_ms']:>8.0f}{phases['program']:>8.0f}{phases['guardrails']:>7.0f}"
              f"{phases['json']:>6.0f}{row['accel_plan_cpu']['median_ms']:>6.0f}{row['cpu_ms_per_resource']:>8.2f}"
              f"{row['tracemalloc_peak_mib']:>11.1f}{comparison_cells(row)}")

    if report["growth"]:
        sizes = len(report["synthetic"])
        some = next(iter(report["growth"].values()))
        print(f"\nGrowth with resources: least squares over {sizes} sizes, and the cost per added resource over the "
              f"upper half of the sizes / the lower half (linear ~1, quadratic {some['quadratic_would_give']})")
        print(f"  {'measure':<22}{'intercept':>10}{'per resource':>14}{'R^2':>8}{'upper/lower':>13}  verdict")
        for label, key in (("wall, median (ms)", "time_ms"), ("CPU, median (ms)", "cpu_ms"),
                           ("CPU, fastest (ms)", "cpu_fastest_ms"), ("tracemalloc (MiB)", "tracemalloc_mib")):
            g = report["growth"][key]
            print(f"  {label:<22}{g['intercept']:>10}{g['slope_per_resource']:>14}{g['r2']:>8}"
                  f"{g['upper_to_lower_marginal']!s:>13}  {'linear' if g['linear'] else 'NOT linear'}")

    largest = report["synthetic"][-1]
    print(f"\nOverhead at the largest size ({largest['resources']} resources):")
    for label, key in (("same program on the stock MockMonitor", "ratio_vs_stock_engine"),
                       ("same resources replayed with plain SDK classes", "ratio_vs_bare_replay")):
        wall, cpu = largest[key], largest[key + "_cpu"]
        verdict = "meets" if max(wall, cpu) < OVERHEAD_TARGET else (
            "MISSES" if min(wall, cpu) >= OVERHEAD_TARGET else "wall and CPU disagree on")
        print(f"  accel plan / {label}: {wall:.2f}x wall, {cpu:.2f}x CPU ({verdict} the {OVERHEAD_TARGET}x target)")
    profile = report.get("profile")
    if profile:
        shares = ", ".join(f"{name} {share:.0%}" for name, share in profile["share"].items())
        print(f"  where accel plan's time goes (cProfile self time, x{profile['scale']}): {shares}")
    replay_problems = [d for row in report["stacks"] + report["synthetic"] for d in row.get("replay_differences", [])]
    same = "yes, for every stack and size" if not replay_problems else f"NO: {replay_problems[:5]}"
    print(f"  replay check: the replay registers the same resources (type, name, parent, inputs, provider, "
          f"dependencies, protect, retainOnDelete): {same}")

    leak = report.get("leak")
    if leak:
        print(f"\nLeft behind per plan_stack ({leak['runs']} runs, no cleanup by the benchmark): "
              f"{leak['threads_per_run']:.1f} threads, {leak['fds_per_run']:.1f} file descriptors")

    print("\nNotes:")
    for note in report["notes"]:
        print(f"  - {note}")


NOTES = [
    ("accel plan (examples) = plan_stack(): read Pulumi.yaml + stack file, run __main__.py on the recording mock "
     "engine in preview (stack settings, pinned plan validation or a run-time policy decision for unpinned stacks, "
     "TrainingCluster and its components), normalise the plan output, build the resource JSON, evaluate the "
     "guardrails offline. Not included: the CLI's rendering."),
    ("accel plan (synthetic) = the same steps over a program that widens the default stack's pinned plan "
     "(read_stack, TrainingCluster, exports) and adds GKE GPU node pools, plus the `accel plan --json` document "
     "(PlanResult.to_json + json.dumps); program / guard / json are the medians of those phases."),
    ("stock engine = the same program (stack config, policy decisions, components, exports) on the SDK's stock "
     "MockMonitor with the same echo mocks: no recording, no guardrails, no JSON. 'x stock' is the overhead of "
     "accel plan's own machinery."),
    ("replay = the captured resources registered with plain pulumi.CustomResource / ComponentResource / "
     "ProviderResource (same type tokens, names, parents, inputs, providers, depends_on, protect, retainOnDelete) "
     "on the stock MockMonitor, plain values only: no provider SDK classes, no Outputs between resources, no invokes, "
     "no policy decisions. 'x replay' therefore also counts the provider SDK classes' own cost (one Output per "
     "output property) that any Pulumi program using them pays."),
    ("tracemalloc = Python-allocation peak of one warm run; max RSS = whole process, fresh, one plan (includes the "
     "interpreter and the provider modules)."),
    ("Warm figures: median, mean, max of the timed runs (wall), and the median CPU time of this process (all "
     "threads), which barely moves when other processes load the shared machine. Runs are interleaved "
     "(accel, stock, replay for every stack and size, round after round). Before timing, the heap left by imports "
     "and warm-ups (~400k objects, mostly provider modules) is frozen with gc.freeze(), and each run starts after "
     "gc.collect() and after the previous run's event loop and thread pool were shut down (none of that timed). "
     "Without the freeze, a full collection over that heap (~150 ms) lands in every third or fourth run; what "
     "the collector costs a real one-shot `accel plan` is the 'gen2 GC' column of the fresh-process table."),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=None, help="timed runs per figure (default 3, --quick 2)")
    parser.add_argument("--scales", default=None, help="synthetic sizes (clusters), comma separated (default 1,4,12,36)")
    parser.add_argument("--stacks", default=None, help="only these example stacks, comma separated")
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 runs, sizes 1,4,12, default stack cold only")
    parser.add_argument("--no-subprocess", action="store_true", help="skip the fresh-process cold/RSS figures")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile split")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    parser.add_argument("--child-stack", help=argparse.SUPPRESS)
    parser.add_argument("--child-synthetic", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    os.chdir(ROOT)
    quiet_pulumi_log()
    if args.child_stack:
        print(json.dumps(child_stack(args.child_stack)))
        return 0
    if args.child_synthetic:
        print(json.dumps(child_synthetic(args.child_synthetic)))
        return 0

    repeat = args.repeat or (2 if args.quick else 3)
    scales = [int(s) for s in (args.scales or ("1,4,12" if args.quick else "1,4,12,36")).split(",")]
    stacks = example_stacks(args.stacks.split(",") if args.stacks else None)
    started = time.perf_counter()

    report: dict[str, Any] = {"settings": {"repeat": repeat, "scales": scales, "quick": args.quick}}
    if not args.no_subprocess:
        cold = stacks[:1] if args.quick else stacks
        report["fresh_process"] = {"stacks": []}
        for stack in cold:
            say(f"fresh process: {stack}")
            report["fresh_process"]["stacks"].append(in_fresh_process("--child-stack", stack))
        say(f"fresh process: synthetic x{scales[-1]}")
        report["fresh_process"]["synthetic"] = in_fresh_process("--child-synthetic", str(scales[-1]))

    import plan_programs as programs  # after the children ran: nothing this process imports is in their figures

    report["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                         "pulumi": importlib.metadata.version("pulumi")}
    subjects: list[Subject] = []
    failed: list[dict[str, Any]] = []
    for stack in stacks:
        say(f"warm-up, replay check, tracemalloc: {stack}")
        try:
            subjects.append(prepare_stack(stack))
        except Exception as error:  # noqa: BLE001 (a broken stack is reported, the rest still measured)
            failed.append({"stack": stack, "error": f"{type(error).__name__}: {error}"})
    synthetic: list[tuple[Subject, list[Any]]] = []
    for scale in scales:
        say(f"warm-up, replay check, tracemalloc: synthetic x{scale}")
        synthetic.append(prepare_synthetic(scale))
    # What is alive now (interpreter, provider modules, caches) lives as long as any CLI process:
    # freeze it, so the collections inside timed runs scan only what the runs allocate.
    gc.collect()
    gc.freeze()
    say(f"timing {len(subjects) + len(synthetic)} subjects x 3 variants, interleaved")
    run_interleaved(subjects + [subject for subject, _ in synthetic], repeat)
    report["stacks"] = [finish(subject) for subject in subjects] + failed
    report["synthetic_description"] = (
        f"k training clusters, each {programs.BASE_STACK}'s pinned TPU v6e 16x16 plan widened to "
        f"{programs.BASE_SLICES} slices plus {programs.BASE_GPU_POOLS} GKE GpuNodePools "
        f"({programs.SYNTHETIC_GPU_POOL.machine_type} x {programs.SYNTHETIC_GPU_POOL.nodes}), at scale k")
    report["synthetic"] = [finish_synthetic(subject, runs) for subject, runs in synthetic]
    if len(scales) >= 2:
        report["growth"] = {
            "time_ms": growth(report["synthetic"], lambda r: r["accel_plan"]["median_ms"]),
            "cpu_ms": growth(report["synthetic"], lambda r: r["accel_plan_cpu"]["median_ms"]),
            "cpu_fastest_ms": growth(report["synthetic"], lambda r: r["accel_plan_cpu"]["min_ms"]),
            "tracemalloc_mib": growth(report["synthetic"], lambda r: r["tracemalloc_peak_mib"]),
        }
    else:
        report["growth"] = {}
    if not args.no_profile:
        say("profile split")
        report["profile"] = profile_split(min(scales, key=lambda s: abs(s - 4)))  # cProfile doubles the time
    say("leak check")
    report["leak"] = leak_check(DEFAULT_STACK if DEFAULT_STACK in stacks else stacks[0])
    report["notes"] = NOTES
    report["elapsed_s"] = round(time.perf_counter() - started, 1)

    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
        print(f"\n(benchmark took {report['elapsed_s']} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
