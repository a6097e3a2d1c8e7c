"""The floor of `accel choose`: the least a typer + rich + pydantic command line does with the same
arguments, and no accel code. It parses the same options as `accel choose` (typer coerces each
through a pydantic TypeAdapter), reads the workload with PyYAML, validates it with one pydantic
model and prints one rich table: every library `accel choose` needs, each used once.

    python benchmarks/bare_cli_program.py choose examples/llama-70b-pretrain.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
import yaml
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=True, pretty_exceptions_enable=False)


class Workload(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    kind: str


@app.callback()
def _root() -> None:
    """The bare command line."""


@app.command("choose")
def choose(
    workload: str = typer.Argument(..., metavar="WORKLOAD.yaml"),
    as_json: bool = typer.Option(False, "--json"),
    objective: str = typer.Option("cost", "--objective"),
    catalog: Optional[Path] = typer.Option(None, "--catalog"),
    plot: Optional[Path] = typer.Option(None, "--plot"),
    write_stack: Optional[str] = typer.Option(None, "--write-stack"),
) -> None:
    data = yaml.load(Path(workload).read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    spec = Workload.model_validate(data)
    table = Table(title=spec.name)
    table.add_column("kind")
    table.add_column("objective")
    table.add_row(spec.kind, objective)
    (Console() if sys.stdout.isatty() else Console(width=140)).print(table)


if __name__ == "__main__":
    app()
