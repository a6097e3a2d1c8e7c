"""`accel job`: the Kubernetes manifests that run a stack's workload on its hardware, proven schedulable."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer


from accel.base.errors import EXIT_INVALID, AccelError, UsageError, fail
from accel.commands.completion import complete_stack

DEFAULT_STACK = "llama-70b-tpu"


def register(app: typer.Typer) -> None:
    app.command("job")(job)


def _read_manifests(path: Path) -> list[dict]:
    from accel.base.yaml_files import read_yaml_file

    # The shared reader: its messages for missing, directory, unreadable, syntax, and its bounds.
    documents = read_yaml_file(path, "manifest file", all_documents=True)
    bad = [i for i, d in enumerate(documents) if not isinstance(d, dict) or "kind" not in d]
    if bad:
        raise UsageError(f"{path}: document {bad[0] + 1} is not a Kubernetes object (no 'kind')")
    return documents


def _refuse_ignored_options(*, check_file: Optional[Path], validate: bool, image: Optional[str],
                            command: Optional[str], output: Optional[Path] = None, as_json: bool = False) -> None:
    """UsageError for an option the chosen mode would ignore: --check checks a file as written, and --validate's
    fabric check runs its own command (nccl-tests' all_reduce_perf on one node, a torchrun all-reduce across nodes,
    a JAX psum), so it takes no --command; its --image replaces the check's image (one with all_reduce_perf on PATH,
    with torch across nodes, or JAX on a TPU)."""
    given = [name for name, value in (("--image", image), ("--command", command)) if value is not None]
    if check_file is not None and (given or validate):
        raise UsageError(f"--check checks {check_file} as written; {', '.join(given or ['--validate'])} would be "
                         "ignored: leave it out, or drop --check to generate the manifests")
    if check_file is not None and output is not None and not as_json:
        # --check writes no manifests (the file is checked as it is), so -o alone would write nothing, silently.
        raise UsageError(f"--check checks {check_file} as written and writes no manifests; -o {output} would be "
                         "ignored: leave it out, or add --json to write the check's report there")
    if validate and command is not None:
        raise UsageError("--validate writes the fabric check with its own command (all_reduce_perf, a JAX psum); "
                         "--command would be ignored: leave it out, or drop --validate for the workload's job "
                         "(--image may stay: the check runs in it)")


def job(
    stack: Optional[str] = typer.Option(None, "--stack", "-s", metavar="STACK", autocompletion=complete_stack,
                                        help=f"Stack whose workload to run (default {DEFAULT_STACK})"),
    image: Optional[str] = typer.Option(None, "--image", metavar="IMAGE", help="Container image (default: the documented example)"),
    command: Optional[str] = typer.Option(None, "--command", metavar="CMD", help="Command the container runs"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", help="Write the manifests here"),
    as_json: bool = typer.Option(False, "--json", help="Print manifests and the schedule check as JSON"),
    validate: bool = typer.Option(False, "--validate", help="The fabric check job (NCCL all-reduce / TPU psum) instead"),
    check_file: Optional[Path] = typer.Option(None, "--check", metavar="FILE",
                                              help="Check a manifest file against what the stack builds"),
    cwd: Optional[Path] = typer.Option(None, "--cwd", "-C", metavar="DIR", help="Project directory"),
) -> None:
    """Write the manifests that run the stack's workload, checked against what the stack declares."""
    from rich.console import Console

    from accel.stack import config as stack_config
    from accel.job.manifests import JobOptions
    from accel.job.render import render
    from accel.job.service import check_manifests, job_of
    from accel.offline_plan import plan_stack

    status = Console(stderr=True)
    try:
        if stack is not None and not stack.strip():
            raise UsageError(f"--stack: empty; name a stack (a stacks/Pulumi.<stack>.yaml file), or leave "
                             f"the option out for {DEFAULT_STACK}")
        if command is not None and not command.strip():
            raise UsageError("--command: empty; give the command the container runs (e.g. --command 'python "
                             "train.py'), or leave the option out for the documented example's")
        _refuse_ignored_options(check_file=check_file, validate=validate, image=image, command=command, output=output,
                                as_json=as_json)
        if image is not None:
            from accel.base.image_reference import check_image_reference

            check_image_reference(image)
        if output is not None:
            from accel.base.safe_files import check_writable

            check_writable(output, "manifests")
        manifests_in = _read_manifests(check_file) if check_file else None
        project_dir = stack_config.find_project_dir(cwd or Path.cwd())
        with status.status("planning", spinner="dots") as spinner:
            result = plan_stack(stack or DEFAULT_STACK, None, project_dir,
                                progress=lambda message: spinner.update(f"{message}…"))
        if manifests_in is None:
            generated = job_of(result, JobOptions(image=image, command=command, validate=validate))
            if generated is None:
                raise UsageError(f"stack {result.stack}: the program exported no plan to derive a job from")
            manifests = generated.manifests
        else:
            generated, manifests = None, manifests_in
        report = check_manifests(result, manifests)
        if output is not None:
            from accel.base.safe_files import check_not_an_input

            check_not_an_input(output, {"stack file": result.stack_file, "--check file": check_file,
                                        "project file": project_dir / "Pulumi.yaml"}, "manifests")
    except AccelError as error:
        fail(error)

    if as_json:
        payload = {"stack": result.stack, "manifests": manifests, "check": report.to_json()}
        text = json.dumps(payload, indent=2) + "\n"
    elif generated is not None:
        text = render(generated, result.stack, "Fabric check job" if validate else "Workload")
    else:
        text = ""
    # Manifests that would not schedule are never written to -o: a FILE a pipeline applies next (kubectl apply
    # -f FILE) must hold only a job that runs; an older FILE is left as it was. The errors below say why; the
    # manifests are not printed either (run without -o to see them).
    if output and text and report.errors:
        print(f"note: nothing written to {output}: the job would not schedule (drop -o to see the manifests)",
              file=sys.stderr)
    elif output and text:
        from accel.base.safe_files import write_text

        try:
            write_text(output, text, "manifests")
        except AccelError as error:
            fail(error)
        print(f"wrote {output}", file=sys.stderr)
    elif text:
        sys.stdout.write(text)
    for finding in report.warnings:
        print(f"warning: {finding}", file=sys.stderr)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if report.errors:
        for finding in report.errors:
            print(f"error: {finding}", file=sys.stderr)
        print(f"error: the job would not schedule on stack {result.stack} "
              f"({len(report.errors)} problem{'s' if len(report.errors) != 1 else ''})", file=sys.stderr)
        raise typer.Exit(EXIT_INVALID)
    placed = "; ".join(f"{p['count']} pods of {p['pods']} on {', '.join(p['pools'])}" for p in report.placements)
    print(f"schedulable on stack {result.stack}: {placed}", file=sys.stderr)
