"""`accel choose WORKLOAD.yaml`: which hardware, where, how many, how long, what it costs, and why.

Exit 0 with a choice, 2 on invalid input (workload, catalog, options), 3 when nothing is feasible.
`--json` prints the object of docs/contracts.md (section 2.1) on stdout and nothing else; progress goes to stderr.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from accel.base.errors import AccelError, NothingFeasible, UsageError, fail
from accel.base.units import human_number, money

PLOT_SUFFIXES = (".png", ".svg")
TOP_OPTIONS = 5  # a person compares a handful side by side; --json holds every option


def register(app: Any) -> None:
    """Add the typer command (help, -h, completion, usage errors); a plain run may skip typer entirely
    (accel/commands/choose_options.py), so typer is imported here, not by the module."""
    import typer

    from accel.commands.choose_options import BY_DEST as O

    def option(dest: str) -> Any:
        declared = O[dest]
        if not declared.flags:
            return typer.Argument(..., metavar=declared.metavar, help=declared.help)
        return typer.Option(declared.default, *declared.flags, metavar=declared.metavar, help=declared.help)

    @app.command("choose")
    def choose(
        workload: str = option("workload"),
        as_json: bool = option("as_json"),
        objective: str = option("objective"),
        catalog: Optional[Path] = option("catalog"),
        plot: Optional[Path] = option("plot"),
        write_stack: Optional[str] = option("write_stack"),
        reservations: Optional[Path] = option("reservations"),
    ) -> None:
        """Choose TPUs or GPUs for a workload and explain why."""
        main(workload=workload, as_json=as_json, objective=objective, catalog=catalog, plot=plot,
             write_stack=write_stack, reservations=reservations)


def main(*, workload: str, as_json: bool, objective: str, catalog: Path | None, plot: Path | None,
         write_stack: str | None, reservations: Path | None) -> None:
    """The command: exit 0 with a choice, 2 on invalid input, 3 when nothing is feasible."""
    # emoji=False: the output is data (names, regions, prices), where `:name:` is never an emoji code, and
    # rich's emoji table (~25 ms to load) stays unread.
    status = Console(stderr=True, emoji=False)
    try:
        out = Console(emoji=False) if sys.stdout.isatty() else Console(width=140, emoji=False)
        run(workload, as_json=as_json, objective=objective, catalog_path=catalog, plot=plot,
            write_stack=write_stack, out=out, status=status, reservations_path=reservations)
    except NothingFeasible as error:
        if as_json and hasattr(error, "to_json"):
            import json

            sys.stdout.write(json.dumps(error.to_json(), indent=2) + "\n")
        fail(error)
    except AccelError as error:
        fail(error)


def run(workload: str, *, as_json: bool, objective: str, catalog_path: Path | None, plot: Path | None,
        write_stack: str | None, out: Console, status: Console, reservations_path: Path | None = None) -> Any:
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choose import OBJECTIVES, choose as choose_hardware, make_plan
    from accel.policies.workload import WorkloadFieldError, load_workload

    if objective not in OBJECTIVES:
        raise UsageError(f"--objective: {objective!r} is not allowed; use one of {', '.join(OBJECTIVES)}")
    if plot is not None:
        check_plot_path(plot)
    if write_stack is not None:
        from accel.stack.config import check_stack_name  # only when writing one: keeps a plain choose's start-up

        check_stack_name(write_stack, "--write-stack")
    held, held_key = read_reservations(reservations_path) if reservations_path is not None else ([], ())
    spec = load_workload(workload)
    cat = load_catalog(catalog_path)
    status.print(f"[dim]catalog {cat.version} (as of {cat.as_of}), {len(cat.offerings)} offerings[/dim]", highlight=False)
    if reservations_path is not None:
        refuse_unknown_reservations(held, reservations_path, held_key, cat)
        from accel.policies.cloud.reservations import with_declared_cliques

        cat = with_declared_cliques(cat, held)   # UltraServer blocks that say their type: the layout's clique
    try:
        choice = choose_hardware(spec, cat, objective, reservations=held)  # type: ignore[arg-type]
    except WorkloadFieldError as error:
        raise error.with_source(workload) from None
    if write_stack is not None:
        refuse_pinning_a_commitment(choice, write_stack)
    plan = make_plan(spec, choice, cat)
    if held and choice.pinned:
        from accel.policies.cloud.reservations import reservation_problems

        # A pin is not searched: its evaluation put its fleet on the declared reservation of its machine, priced as
        # it bills it, as `accel plan` puts a stack's pin on its accel:reservations (selection.pin), and it is
        # refused here as `accel plan` would refuse it (a run longer than its block, more machines than held).
        problems = reservation_problems(plan, held) if plan.capacity.reservation else []
        if problems:
            raise UsageError(f"--reservations {reservations_path}: the pinned fleet does not fit the declared "
                             "reservations: " + "; ".join(problems))
    if as_json:
        import json  # only --json prints JSON (~1 ms of a plain run's imports)

        sys.stdout.write(json.dumps(choice.to_json(), indent=2) + "\n")
    else:
        render(choice, plan, out)
    if plot is not None:
        write_plot(choice, plot)
        status.print(f"wrote {plot}")
    if write_stack is not None:
        on = plan.capacity.reservation   # the choice's (make_plan: choice.reservation, else the offering's)
        used = next((r for r in held if r.name == on), None) if on else None
        path = write_stack_file(write_stack, spec, plan, warn=lambda message: status.print(
            f"[yellow]warning:[/yellow] {message}", highlight=False, soft_wrap=True),
            reservation=None if used is None else used.model_dump(mode="json", exclude_none=True))
        status.print(f"wrote {path}; next: accel plan -s {write_stack} (offline), then pulumi up -s {write_stack}")
        if used is not None:
            status.print(f"the plan runs on {used.kind} {used.name!r}: declared in {path.name} (accel:reservations) "
                         "so `accel plan` prices and checks it", highlight=False, soft_wrap=True)
    return choice


# ----------------------------------------------------------------------------- reservations

RESERVATIONS_KEY = "accel:reservations"


def read_reservations(path: Path) -> tuple[list[Any], tuple[Any, ...]]:
    """The reservations in FILE (a stack file's `config: accel:reservations`, a mapping with `reservations:`,
    or a YAML list of them; docs/scale.md) and the key they sit under there (('config', 'accel:reservations'),
    ('reservations',) or () for a bare list), which the messages about them name. UsageError (exit 2) naming
    the file and the field."""
    from pydantic import TypeAdapter, ValidationError

    from accel.base.model import describe_validation_error
    from accel.base.yaml_files import read_yaml_file
    from accel.policies.cloud.commitments import COMMITMENT_KINDS, DeclaredCommitment
    from accel.policies.cloud.reservations import DeclaredReservation

    data = read_yaml_file(path, "reservations file")
    prefix: tuple[Any, ...] = ()
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data, prefix = data["config"].get(RESERVATIONS_KEY), ("config", RESERVATIONS_KEY)
        if data is None:
            raise UsageError(f"--reservations: {path}: the stack file declares no {RESERVATIONS_KEY}")
    elif isinstance(data, dict) and "reservations" in data:
        data, prefix = data["reservations"], ("reservations",)
    if not isinstance(data, list) or not data:
        raise UsageError(f"--reservations: {path}: expected a non-empty list of reservations "
                         "({name, machineType, count, zone[, kind, committedUsdPerMachineHour | marginal: zero]}), "
                         f"a `reservations:` list or a stack file with {RESERVATIONS_KEY}")
    held, problems = [], []
    for index, item in enumerate(data):
        # A Savings Plan or committed-use discount (kind savings-plan / committed-use) is a commitment: a price,
        # not capacity (docs/capacity.md); anything else is a reservation.
        model = (DeclaredCommitment if isinstance(item, dict) and item.get("kind") in COMMITMENT_KINDS
                 else DeclaredReservation)
        try:
            held.append(TypeAdapter(model).validate_python(item))
        except ValidationError as error:
            problems.append(describe_validation_error(error, str(path), model, prefix=(*prefix, index)))
    if problems:
        raise UsageError("--reservations: " + "\n--reservations: ".join(problems))
    return held, prefix


def refuse_pinning_a_commitment(choice: Any, stack: str) -> None:
    """UsageError (exit 2) before anything is written when the chosen option is priced under a declared commitment:
    a stack's accel:reservations holds reservations only, so `accel plan` would price the pinned pools at list
    and refuse the pin's figures."""
    from accel.policies.selection.commitments import commitment_of

    name = commitment_of(choice.chosen)
    if name is not None:
        raise UsageError(f"--write-stack {stack}: the chosen option is priced under the declared commitment {name}, "
                         "which a stack cannot declare yet (accel:reservations takes reservations and capacity "
                         "blocks), so `accel plan` would price its pools at list and refuse the pinned figures; "
                         "to pin, choose without the commitment (drop it from --reservations): the list-price answer")


def refuse_unknown_reservations(held: list[Any], path: Path, key: tuple[Any, ...], catalog: Any) -> None:
    """UsageError (exit 2) for a reservation in FILE whose machine type or zone the catalog does not know,
    naming the file, the key and the closest names."""
    from accel.policies.cloud.reservations import declaration_problems

    problems = declaration_problems(held, catalog.offerings, catalog_key="--catalog")
    if problems:
        raise UsageError("\n".join(f"--reservations: {path}: {'.'.join(map(str, (*key, p.index, p.key)))}: "
                                    f"{p.problem}" for p in problems))


# ----------------------------------------------------------------------------- human output

def _time(hours: float) -> str:
    return f"{hours / 24:,.1f} d" if hours >= 48 else f"{hours:,.1f} h"


def layout_of(option: Any) -> str:
    """'4 x 16x16' (TPU slices), '16x16' (one slice) or '2 x a3-highgpu-8g' (GPU nodes)."""
    return (f"{option.slices} x {option.topology}" if option.topology and option.slices > 1
            else option.topology or f"{option.hosts} x {option.machine_type}")


def render(choice: Any, plan: Any, console: Console) -> None:
    from accel.policies.selection.choose import accelerator_name
    from accel.policies.selection.tradeoffs import ranked_alternatives

    spec = choice.workload
    inference = spec.kind == "inference"
    named = f" ({spec.model.architecture})" if spec.model.architecture else ""
    title = (f"{spec.name}: {spec.kind}, {human_number(spec.model.parameters)} parameters{named}, "
             + (f"{human_number(spec.inference.tokens_per_second)} tok/s at p99 <= {spec.inference.p99_latency_ms:g} ms"
                if inference else f"{human_number(spec.training.tokens)} tokens")
             + f" ({spec.framework}), {choice.objective} objective")
    # Every text below that comes from data (names, reasons, sources) is escaped: rich would read a "[...]" in it as
    # markup and drop it (a rationale naming "facts.toml [limits.x]" lost its bracket).
    table = Table(title=escape(title), title_justify="left", show_lines=False)
    for column, justify in (("#", "right"), ("hardware", "left"), ("where", "left"), ("chips", "right"),
                            ("layout", "left"), ("capacity", "left"), ("$/h", "right"),
                            ("time" if not inference else "$/M tok", "right"), ("total", "right"),
                            ("MFU" if not inference else "util.", "right"), ("against the chosen", "left")):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    rows, rest = ranked_alternatives(list(choice.options), inference, TOP_OPTIONS)
    for row in rows:
        option = row.option
        layout = layout_of(option)
        where = f"{option.cloud} {option.region}" + (f" +{len(row.regions) - 1}" if len(row.regions) > 1 else "")
        table.add_row(f"{row.rank}" + (" *" if row.chosen else ""), escape(accelerator_name(option.accelerator)),
                      escape(where), f"{option.chips:,}", escape(layout),
                      escape(option.provisioning),
                      money(option.hourly_usd, cents=True) + (" (estimate)" if option.price_estimate else ""),
                      _per_million(option) if inference else _time(option.hours), money(option.total_usd, cents=True),
                      f"{option.mfu:.0%}", escape("; ".join(row.tradeoffs)), style="bold green" if row.chosen else None)
    table.caption = "* chosen; +N: the same option in N more regions" + (f"; {summarise_rest(rest, inference)}" if rest else "")
    if inference:   # every serving option serves the same hours: the column says what a token costs instead
        table.caption += (f"; $/M tok: per million tokens at {human_number(spec.inference.tokens_per_second)} tok/s "
                          f"(flat out: --json usd_per_million_tokens); total: over {spec.inference.hours:,.0f} h")
        if any(row.option.usd_per_million_tokens_unpriced for row in rows):
            table.caption += ("; held (prepaid): on a reservation declared already paid for (marginal: zero), whose "
                              "$0/h prices no token (--json usd_per_million_tokens_unpriced)")
    # Where each shown price comes from (catalog sources, with their dates; "estimate" marks a rule-derived one).
    sources = list(dict.fromkeys(row.option.price_source + (" estimate" if row.option.price_estimate else "")
                                 for row in rows if row.option.price_source))
    if sources:
        table.caption += "; prices: " + escape(", ".join(sources))
    table.caption_justify = "left"
    console.print(table)
    # highlight=False here and on every line below: rich's repr highlighter (its first use compiles ~20 regular
    # expressions, ~1.5 ms of a choose) would only colour the numbers and brackets of a heading on a terminal.
    # A heading and its lines go in one print, one line each (sep): the same text as a print per line, without
    # a print's fixed cost (~50 us) per line.
    console.print("[bold]Why[/bold]", *(f"  - {escape(line)}" for line in plan.rationale), sep="\n", highlight=False)
    assumptions = Table(title="Assumptions", title_justify="left", show_header=True)
    assumptions.add_column("assumption")
    assumptions.add_column("value", justify="right")
    assumptions.add_column("source", overflow="fold")
    for item in choice.estimate.assumptions:
        value = item.value if isinstance(item.value, str) else f"{item.value:g}"
        # Sources name table keys in brackets ("facts.toml [collective_fabrics.a100-40gb]"): text, not rich markup.
        assumptions.add_row(escape(item.name), escape(value), escape(item.source))
    console.print(assumptions)
    if choice.rejected:
        console.print(f"[bold]Rejected[/bold] ({len(choice.rejected)} offerings)",
                      *(f"  - {escape(item['offering'])}: {escape(item['reasons'][0])}"
                        + (f" (and {len(item['reasons']) - 1} more reason{'s' if len(item['reasons']) > 2 else ''}; "
                           "--json lists them)" if len(item["reasons"]) > 1 else "")
                        + (f"\n      closest: {escape(closest_words(item['closest'], choice.chosen, inference))}"
                           if "closest" in item else "")
                        for item in choice.rejected),
                      sep="\n", highlight=False)


def closest_words(closest: Any, chosen: Any, inference: bool) -> str:
    """A rejected offering's near miss (selection.choose closest_miss) in one line, priced so a user can weigh what
    it misses against what it saves: '3 x g5.48xlarge (24 chips), aws us-east-1, on-demand: $48.86/h, $0.90 per
    million tokens at the target; 38% cheaper than the chosen' (training: its total and run time instead; past twice
    the chosen's cost, the multiple)."""
    if not inference:
        priced = f", {money(closest.total_usd)} in {_time(closest.hours)}"
    elif closest.usd_per_million_tokens_at_target is not None:
        priced = f", {_per_million(closest)} per million tokens at the target"
    elif closest.usd_per_million_tokens_unpriced:   # on a reservation already paid for: why it has no price
        priced = f", {_per_million(closest)}"
    else:
        priced = ""
    words = (f"{layout_of(closest)} ({closest.chips:,} chips), {closest.cloud} {closest.region}, "
             f"{closest.provisioning}: {money(closest.hourly_usd, cents=True)}/h{priced}")
    if chosen.total_usd <= 0:   # the chosen costs nothing more (a reservation already paid for): no ratio to it
        return words
    ratio = closest.total_usd / chosen.total_usd
    versus = (f"{ratio:,.1f}x the chosen's cost" if ratio >= 2 else f"{ratio - 1:.0%} dearer than the chosen"
              if ratio >= 1.005 else f"{1 - ratio:.0%} cheaper than the chosen" if ratio <= 0.995
              else "about the chosen's cost")
    return f"{words}; {versus}"


def _per_million(option: Any) -> str:
    """A serving option's price per million tokens at the workload's target rate (policies/plan.py
    serving_token_prices), or '-' for an option without one (a plan read from an older document)."""
    price = option.usd_per_million_tokens_at_target
    if price is None and option.usd_per_million_tokens_unpriced:   # on a reservation already paid for
        from accel.policies.plan import PREPAID_CELL

        return PREPAID_CELL
    return "-" if price is None else money(price, cents=True)


def summarise_rest(rest: list[Any], inference: bool) -> str:
    """One line for the options not in the table: how many, and the range of cost and time they span."""
    costs = [o.hourly_usd if inference else o.total_usd for o in rest]
    hours = [o.hours for o in rest]
    span = (f"{money(min(costs))}/h to {money(max(costs))}/h" if inference
            else f"{money(min(costs))} to {money(max(costs))}, {_time(min(hours))} to {_time(max(hours))}")
    return f"{len(rest)} more option{'s' if len(rest) != 1 else ''} not shown ({span}); --json lists them all"


# ----------------------------------------------------------------------------- plot

def time_unit(hours: list[float]) -> tuple[str, float]:
    """(unit, hours per unit) for a run-time axis: days once anything plotted reaches two days, else hours."""
    finite = [h for h in hours if math.isfinite(h)]
    return ("days", 24.0) if finite and max(finite) >= 48 else ("hours", 1.0)


PLOT_POINTS = 12  # numbered points a chart can label legibly; the key says how many more exist


def plot_figure(choice: Any) -> Any:
    """The options as time against cost, each numbered as in the table and named in a key beside the chart;
    deadline and budget as lines, the region that meets both shaded, the chosen option starred.

    Training: total cost against run time (days, or hours for short runs). Serving: fleet cost per hour
    against p99 latency per token (every option serves for the same hours, so time is not an axis).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from accel.policies.selection.choose import accelerator_name
    from accel.policies.selection.tradeoffs import ranked_alternatives

    spec = choice.workload
    inference = spec.kind == "inference"
    figure, axes = plt.subplots(figsize=(13.5, 6.5))
    styles = {"tpu": ("tab:blue", "o", "TPU"), "gpu": ("tab:orange", "^", "GPU")}
    details = {id(o): d for o, d in zip(choice.options, choice.option_details or [{} for _ in choice.options])}
    infeasible = [] if inference else list(choice.closest_infeasible)
    deadline_days = None if inference else spec.constraints.deadline_days
    rows, rest = ranked_alternatives(list(choice.options), inference, PLOT_POINTS)
    unit, per_unit = time_unit([row.option.hours for row in rows] + [o.hours for o in infeasible]
                               + ([deadline_days * 24] if deadline_days is not None else []))

    def x_of(option: Any) -> float:
        return float(details.get(id(option), {}).get("p99_ms_per_token", 0.0)) if inference else option.hours / per_unit

    def y_of(option: Any) -> float:
        return option.hourly_usd if inference else option.total_usd

    def name(option: Any) -> str:
        shown = f"{option.chips:,} {accelerator_name(option.accelerator)} {option.provisioning}, {layout_of(option)}"
        where = option.region
        return (f"{shown}, {where}: {money(option.hourly_usd)}/h" if inference
                else f"{shown}, {where}: {_time(option.hours)}, {money(option.total_usd)}")

    legend_done: set[str] = set()
    key_lines: list[str] = []
    labels: list[tuple[float, float, str, str]] = []   # (x, y, number or letter, colour), drawn once scaled
    points: list[tuple[float, float]] = []
    for row in rows:
        option = row.option
        colour, marker, label = styles[option.family]
        capacity = "spot" if option.spot else "on-demand" if option.provisioning == "on-demand" else "other capacity"
        legend = f"{label} {capacity}"
        x, y = x_of(option), y_of(option)
        points.append((x, y))
        if row.chosen:
            axes.scatter([x], [y], marker="*", s=360, c="tab:green", edgecolors="black", zorder=5, label="chosen",
                         gid=f"option-{row.rank}")
        else:
            axes.scatter([x], [y], c=colour if not option.spot else "none", edgecolors=colour, s=60, zorder=4,
                         marker=marker if capacity != "other capacity" else "P",
                         label=None if legend in legend_done else legend, gid=f"option-{row.rank}")
            legend_done.add(legend)
        labels.append((x, y, str(row.rank), "black"))
        key_lines.append(f"{row.rank:>2}{'*' if row.chosen else ' '} {name(option)}")
    for letter, option in zip("ABCDEFGH", infeasible):
        x, y = x_of(option), y_of(option)
        points.append((x, y))
        axes.scatter([x], [y], marker="x", s=70, c="tab:gray", zorder=4, gid=f"option-{letter}",
                     label=None if "infeasible" in legend_done else "closest infeasible")
        legend_done.add("infeasible")
        labels.append((x, y, letter, "tab:gray"))
        key_lines.append(f" {letter}  infeasible: {name(option)}")
    if rest:
        key_lines.append(f"    {len(rest)} more option{'s' if len(rest) != 1 else ''} not drawn (--json lists them)")

    budget = spec.constraints.budget_usd
    if inference:
        bound = spec.inference.p99_latency_ms
        axes.axvline(bound, color="tab:red", linestyle="--", label=f"p99 bound {bound:g} ms")
        x_limit = bound
        y_limit = budget / spec.inference.hours if budget is not None else None
    else:
        x_limit = y_limit = None
        if deadline_days is not None:
            x_limit = deadline_days * 24 / per_unit
            axes.axvline(x_limit, color="tab:red", linestyle="--",
                         label=f"deadline {deadline_days:g} d" if unit == "days" else f"deadline {x_limit:g} h")
        if budget is not None:
            y_limit = budget
    if y_limit is not None:
        # A budget far above every option would squash them into the bottom of the chart: the axis follows
        # the options, and the legend says the budget line is above it.
        top = max([y for _, y in points] or [y_limit]) * 1.12
        above = y_limit > top * 1.5
        words = (f"budget {money(budget)} over {spec.inference.hours:g} h" if inference else f"budget {money(budget)}")
        axes.axhline(y_limit, color="tab:purple", linestyle=":", label=words + (" (above the chart)" if above else ""))
        if above:
            y_limit = None
    axes.set_xlabel("p99 latency per token (ms)" if inference else f"run time ({unit})")
    axes.set_ylabel("fleet cost per hour (USD)" if inference else "total cost (USD)")
    values = [y for _, y in points if y > 0] + ([y_limit] if y_limit else [])
    log_scale = bool(values) and max(values) / min(values) > 20
    if log_scale:
        axes.set_yscale("log")
        axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axes.yaxis.set_minor_formatter(NullFormatter())
        axes.set_ylim(min(values) / 1.5, max(values) * 1.5)
    else:   # costs are never negative: no tick below $0; headroom so the top point's number shows
        axes.set_ylim(0, max(values) * 1.12 if values else None)
    axes.set_xlim(0, max([x for x, _ in points] + ([x_limit] if x_limit else [])) * 1.08 or None)
    # The feasible region: left of the deadline (or latency bound), below the budget.
    figure.canvas.draw()
    (x0, x1), (y0, y1) = axes.get_xlim(), axes.get_ylim()
    axes.fill_between([x0, x_limit if x_limit is not None else x1], y0, y_limit if y_limit is not None else y1,
                      color="tab:green", alpha=0.08, zorder=0, label="meets every limit", gid="feasible-region")
    axes.set_xlim(x0, x1)
    axes.set_ylim(y0, y1)
    label_points(axes, labels)
    tick = (lambda value, _: f"{money(value)}/h") if inference else (lambda value, _: money(value))
    axes.yaxis.set_major_formatter(FuncFormatter(tick))
    axes.set_title(f"{spec.name}: options by {'latency' if inference else 'run time'} and cost "
                   f"({choice.objective} objective; * chosen)")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    figure.text(0.585, 0.62, "\n".join(key_lines), family="monospace", fontsize="small", va="top", ha="left",
                linespacing=1.5)
    figure.subplots_adjust(left=0.07, right=0.57, top=0.93, bottom=0.1)
    return figure


def label_points(axes: Any, labels: list[tuple[float, float, str, str]], near_px: float = 14.0) -> None:
    """Number each point; points drawn on top of each other (same time and cost) share one label, "2,5"."""
    groups: list[list[tuple[float, float, str, str]]] = []
    centres: list[tuple[float, float]] = []
    for label in labels:
        px, py = axes.transData.transform((label[0], label[1]))
        for group, (cx, cy) in zip(groups, centres):
            if abs(px - cx) < near_px and abs(py - cy) < near_px:
                group.append(label)
                break
        else:
            groups.append([label])
            centres.append((px, py))
    for group in groups:
        x, y, _, colour = group[0]
        axes.annotate(",".join(text for _, _, text, _ in group), (x, y), textcoords="offset points", xytext=(7, 5),
                      color=colour, fontsize="medium", zorder=6)


class _PlotPathError(UsageError):
    def __init__(self, message: str) -> None:
        super().__init__(f"--plot: {message}")


def check_plot_path(path: Path) -> None:
    """Refuse a chart path that cannot be written before any work is done (so --json output is never followed
    by a failure): a .png or .svg name in an existing, writable directory."""
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"--plot: {path}: the chart is written as PNG or SVG; name the file *.png or *.svg")
    from accel.base.safe_files import check_writable

    check_writable(path, "chart", error=_PlotPathError)   # a missing folder, a directory, a device or FIFO
    directory = path.parent
    if not os.access(directory, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"--plot: {path}: not writable (permission denied); choose another path")


def write_plot(choice: Any, path: Path) -> None:
    """Write plot_figure(choice) as PNG or SVG (by the file's suffix)."""
    figure = plot_figure(choice)
    import matplotlib.pyplot as plt

    try:
        figure.savefig(path, format=path.suffix.lower().lstrip("."))
    except OSError as error:
        raise UsageError(f"--plot: cannot write {path}: {error.strerror or error}") from None
    finally:
        plt.close(figure)


# ----------------------------------------------------------------------------- stack file

def _project_dir(start: Path) -> Path:
    for directory in (start, *start.parents):
        if (directory / "Pulumi.yaml").is_file():
            return directory
    return start


def write_stack_file(name: str, spec: Any, plan: Any, root: Path | None = None,
                     warn: Callable[[str], None] | None = None, reservation: dict | None = None) -> Path:
    """Set accel:workload and accel:plan in stacks/Pulumi.NAME.yaml, keeping every other key and comment.

    The workload is written without unset (None) fields; the plan is the full Plan (schema 2)."""
    path = _project_dir((root or Path.cwd()).resolve()) / "stacks" / f"Pulumi.{name}.yaml"
    from accel.stack.pin import pin_to_stack_file  # ruamel.yaml only when a stack is written

    pin_to_stack_file(path, spec.model_dump(mode="json", exclude_none=True), plan.model_dump(mode="json"), warn=warn,
                      reservation=reservation)
    return path
