"""`accel plan`: what a stack would build, what it costs and whether the guardrails pass, offline."""

from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from accel.base.errors import EXIT_GUARDRAIL, AccelError, fail
from accel.commands.completion import complete_stack
from accel.base.units import money

DEFAULT_STACK = "llama-70b-tpu"
# Width of the human output when stdout is a file or a pipe (CI logs): wide enough that resource
# names and the guardrail table do not wrap mid-word, as `accel choose` does.
PIPED_WIDTH = 140


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)


def plan(
    stack: Optional[str] = typer.Option(
        None, "--stack", "-s", metavar="STACK", autocompletion=complete_stack,
        help=f"Stack to plan (stacks/Pulumi.<stack>.yaml); default {DEFAULT_STACK}"),
    config: Optional[Path] = typer.Option(
        None, "--config", metavar="FILE",
        help="Stack file to plan, e.g. stacks/Pulumi.x.yaml (stack name from the file name)"),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON on stdout"),
    policy_config: Optional[Path] = typer.Option(
        None, "--policy-config", metavar="FILE",
        help="Guardrail configuration (YAML or JSON: policy name -> settings)"),
    cwd: Optional[Path] = typer.Option(
        None, "--cwd", "-C", metavar="DIR", help="Project directory (default: the nearest one holding Pulumi.yaml)"),
) -> None:
    """Run the stack program on Pulumi's mock engine (preview) and show resources, cost and guardrails."""
    from accel.stack import config as stack_config
    from accel.offline_plan import plan_stack

    status_console = Console(stderr=True, emoji=False)
    if stack is None and config is None:
        stack = DEFAULT_STACK
    try:
        project_dir = stack_config.find_project_dir(cwd or Path.cwd())
        with status_console.status("planning", spinner="dots") as status:
            result = plan_stack(stack, config, project_dir, policy_config=policy_config,
                                progress=lambda message: status.update(f"{message}…"))
    except AccelError as error:
        fail(error)

    if as_json:
        sys.stdout.write(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    else:
        render(result, output_console())
    if result.mandatory_violations:
        count = len(result.mandatory_violations)
        print(f"error: {count} mandatory guardrail violation{'s' if count != 1 else ''}", file=sys.stderr)
        raise typer.Exit(EXIT_GUARDRAIL)
    if result.job_errors:  # the same findings `accel job` exits 2 on (docs/contracts.md)
        count = len(result.job_errors)
        print(f"error: the stack's job would not run ({count} problem{'s' if count != 1 else ''}); "
              f"details: accel job -s {result.stack}", file=sys.stderr)
        raise typer.Exit(result.exit_code)


# ---- human output ------------------------------------------------------------------------------

def output_console() -> Console:
    """The terminal's width on a terminal or as COLUMNS says; else PIPED_WIDTH (rich would use 80)."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console(emoji=False)  # data, not prose: `:name:` is never an emoji code (choose.py)
    return Console(width=PIPED_WIDTH, emoji=False)


def render(result: Any, console: Console) -> None:
    from accel.stack.config import display_path

    console.print(f"[bold]accel plan[/bold] · stack [cyan]{result.stack}[/cyan] "
                  f"({display_path(result.stack_file)}) · mock engine, preview")
    console.print(resource_tree(result))
    console.print(type_table(result))
    render_decision(result, console)
    render_job(result.job, result.stack, console)
    render_warnings(result, console)
    render_guardrails(result, console)
    render_needed_before_up(result, console)
    render_quotas(result, console)
    timings = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sorted(result.provider_load_seconds.items()))
    console.print(f"[dim]providers: {', '.join(result.providers_used) or 'none'}"
                  + (f" (loaded {timings})" if timings else "") + "[/dim]")


def resource_tree(result: Any) -> Tree:
    resources = result.capture.resources
    tree = Tree(f"[bold]{result.project}-{result.stack}[/bold] ({len(resources)} resources)")
    children: dict[str | None, list] = defaultdict(list)
    known = {r.urn for r in resources}
    for r in resources:
        children[r.parent if r.parent in known else None].append(r)

    def add(node: Tree, parent_urn: str | None) -> None:
        for r in children.get(parent_urn, []):
            label = f"[bold]{r.name}[/bold] [dim]{r.type}[/dim]" if not r.custom else f"{r.name} [dim]{r.type}[/dim]"
            flags = [flag for flag, on in (("protect", r.protect), ("retain", r.retain_on_delete)) if on]
            if flags:
                label += f" [yellow]({', '.join(flags)})[/yellow]"
            add(node.add(label), r.urn)

    add(tree, None)
    return tree


def type_table(result: Any) -> Table:
    table = Table(title="Resources by type", title_justify="left")
    table.add_column("type")
    table.add_column("count", justify="right")
    for type_token, count in result.capture.by_type().items():
        table.add_row(type_token, str(count))
    return table


def _money(value: float | None) -> str:
    return "unknown" if value is None else money(value, cents=True)


def render_job(job: dict | None, stack: str, console: Console) -> None:
    """One line for the generated job's schedule check (`accel job -s STACK` writes the job), each problem
    with its rule and fix, and each flagged risk (a rule of severity "flag", accel/job/rules)."""
    if job is None:
        return
    if job["schedulable"]:
        placed = "; ".join(f"{p['count']} pods on {len(p['pools'])} pool(s)" for p in job["placements"])
        console.print(f"[bold]Job[/bold]: {', '.join(job['kinds'])} {job['name']} schedules ({placed}); "
                      f"write it with `accel job -s {stack}`")
    else:
        console.print(f"[bold]Job[/bold]: [red]{job['name']} would not schedule[/red]")
    for error in job["errors"]:
        pool = f" (pool {error['pool']})" if error["pool"] else ""
        rule = f" [dim](rule {error['rule']})[/dim]" if error.get("rule") else ""
        fix = f"; fix: {error['fix']}" if error.get("fix") else ""
        console.print(f"  [red]✗[/red] {error['pod']}: {error['field']}{pool}: {error['message']}{rule}{fix}")
    for warning in job.get("warnings") or []:
        if warning.get("rule"):
            console.print(f"  [yellow]![/yellow] {warning['pod']}: {warning['field']}: {warning['message']} "
                          f"[dim](rule {warning['rule']}, flagged)[/dim]")


def render_decision(result: Any, console: Console) -> None:
    plan = result.plan
    console.print()
    if not plan:
        console.print("[bold]Hardware[/bold]: the program exported no plan")
    else:
        chosen = plan.get("chosen") or {}
        shape = f"{chosen.get('chips')} × {chosen.get('accelerator')}"
        if chosen.get("topology"):
            slices = chosen.get("slices") or 1
            shape += f", topology {chosen['topology']} × {slices} slice{'s' if slices != 1 else ''}"
        hosts = chosen.get("hosts")
        shape += f", {hosts} host{'s' if hosts != 1 else ''} of {chosen.get('machine_type')}"
        where = f"{plan.get('cloud')} {plan.get('region')}"
        # the capacity it is obtained on (flex-start, a reservation, a capacity block...), not only spot or not
        spot = chosen.get("provisioning") or ("spot" if chosen.get("spot") else "on-demand")
        how = "pinned" if plan.get("pinned") else "chosen"
        console.print(f"[bold]Hardware[/bold] ({how}): {shape} on {where}, {spot}")
        hours = chosen.get("hours")
        serving = (plan.get("workload") or {}).get("kind") == "inference"
        if hours is not None and serving:  # a service has a period, not a run, and a utilisation, not an MFU
            console.print(f"  serving period: {hours:,.0f} h ({hours / 24:,.1f} days), "
                          f"utilisation {chosen.get('mfu', 0):.0%} of peak")
            at_target, flat_out = chosen.get("usd_per_million_tokens_at_target"), chosen.get("usd_per_million_tokens")
            if at_target is not None and flat_out is not None:   # policies/plan.py serving_token_prices
                console.print(f"  per million tokens: {_money(at_target)} at the target rate, {_money(flat_out)} "
                              f"flat out")
            elif chosen.get("usd_per_million_tokens_unpriced"):   # on a reservation already paid for
                from rich.markup import escape

                console.print(f"  per million tokens: {escape(str(chosen['usd_per_million_tokens_unpriced']))}")
        elif hours is not None:
            console.print(f"  estimated run: {hours:,.1f} h ({hours / 24:,.1f} days), MFU {chosen.get('mfu', 0):.0%}")
        for line in plan.get("rationale") or []:
            console.print(f"  • {line}")
    console.print(f"[bold]Cost[/bold]: {_money(result.hourly_usd)}/h · {_money(result.run_usd)} per run")
    built = getattr(result, "built", None)
    if built is not None:
        console.print(f"  priced from the declared resources (catalog {built.catalog_version}): "
                      f"accelerators {_money(built.accelerator_hourly_usd)}/h, storage {_money(built.storage_hourly_usd)}/h")
        unpriced = sorted({u.machine_type or u.type for u in built.unpriced})
        if unpriced:
            console.print(f"  not priced (not in the catalog): {', '.join(unpriced)}")
    drift = getattr(result, "drift", None)
    if drift is not None:
        console.print(f"  [yellow]price drift[/yellow]: {drift.note}")


def _short_resource(resource: Any) -> str:
    """`urn:pulumi:dev::accel::...$gcp:storage/bucket:Bucket::ckpt` -> `ckpt`; --json keeps the URN."""
    if not resource:
        return "(stack)"
    return str(resource).rsplit("::", 1)[-1] if str(resource).startswith("urn:") else str(resource)


def render_warnings(result: Any, console: Console) -> None:
    """The program's warnings, already in stack-file words (accel/stack/words.py)."""
    if not result.warnings:
        return
    console.print()
    console.print(f"[bold]Warnings[/bold] ({len(result.warnings)})")
    for message in result.warnings:
        console.print(f"  [yellow]![/yellow] {message}", highlight=False)


def render_guardrails(result: Any, console: Console) -> None:
    console.print()
    if not result.guardrails_evaluated:
        console.print(f"[bold]Guardrails[/bold]: [yellow]not evaluated ({result.guardrails_note})[/yellow]")
        return
    if not result.violations:
        console.print("[bold]Guardrails[/bold]: [green]all passed[/green]")
        return
    by_level: dict[str, list] = defaultdict(list)
    for violation in result.violations:
        by_level[str(violation.get("level", "advisory")).lower()].append(violation)
    console.print(f"[bold]Guardrails[/bold]: {len(result.violations)} violation(s)")
    for level in sorted(by_level, key=lambda lv: (lv != "mandatory", lv)):
        style = "red" if level == "mandatory" else "yellow"
        table = Table(title=f"{level} ({len(by_level[level])})", title_style=style, title_justify="left")
        for column in ("policy", "resource", "message"):
            table.add_column(column, overflow="fold")
        for policy, resources, message in group_violations(by_level[level]):
            shown = resources[0] if len(resources) == 1 else f"{len(resources)} resources: {', '.join(resources)}"
            table.add_row(policy, shown, message)
        console.print(table)


_VIOLATION_HEAD = re.compile(r"^(?P<type>\S+) '(?P<name>[^']*)' violates (?P<policy>\S+): (?P<rest>.*)$", re.S)


def group_violations(violations: list[dict]) -> list[tuple[str, list[str], str]]:
    """(policy, resources, message) rows: violations of one policy that say the same thing about several
    resources (a stack without cost_center: every billable resource) are one row naming them all, the
    message without the per-resource head `<type> '<name>' violates <policy>: `. --json keeps one entry
    per resource."""
    rows: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (policy, message) -> [(resource, whole message)]
    for violation in violations:
        policy, message = str(violation.get("policy", "")), str(violation.get("message", ""))
        head = _VIOLATION_HEAD.match(message)
        if head and head["policy"] == policy:
            key, resource = (policy, head["rest"]), head["name"]
        else:  # a message in another shape stays on its own row, whole
            key, resource = (policy, message), _short_resource(violation.get("resource"))
        rows.setdefault(key, []).append((resource, message))
    return [(policy, [resource for resource, _ in members], members[0][1] if len(members) == 1 else message)
            for (policy, message), members in rows.items()]


def render_needed_before_up(result: Any, console: Console) -> None:
    """Keys only the user can give: planned with placeholders here, required by `pulumi up`."""
    needed = result.needed_before_up
    if not needed:
        return
    console.print()
    console.print(f"[bold]Before `pulumi up`[/bold]: {len(needed)} key(s) this plan filled with placeholders; set them:")
    from rich.markup import escape

    for item in needed:  # escaped: `accel:apiAccessCidrs[0]` is not markup
        console.print(f"  [cyan]{escape(item['command'])}[/cyan]", soft_wrap=True)
        console.print(f"    [dim]{escape(item['key'])}: {escape(item['why'])}[/dim]")


def render_quotas(result: Any, console: Console) -> None:
    """The quota the region needs, by the names the cloud console shows: request it before `pulumi up`."""
    quotas = result.quotas
    if not quotas:
        return
    console.print()
    console.print(f"[bold]Quota[/bold] to have in {quotas[0]['region']} before `pulumi up`:")
    for need in quotas:
        console.print(f"  {need['name']}: {need['amount']:,} {need['unit']} [dim]({need['why']})[/dim]")
