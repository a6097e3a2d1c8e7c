"""The argparse floor of `accel choose`: the least any command line does with its arguments when it
validates with pydantic and prints with rich, and no accel code. argparse parses the same options as
`accel choose`, PyYAML reads the workload, one pydantic model validates it and rich prints one table.
Beside benchmarks/bare_cli_program.py (the same with typer), it shows what the framework costs.

    python benchmarks/bare_argparse_program.py choose examples/llama-70b-pretrain.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table


class Workload(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    kind: str


def main() -> None:
    parser = argparse.ArgumentParser(prog="bare")
    commands = parser.add_subparsers(dest="command", required=True)
    choose = commands.add_parser("choose")
    choose.add_argument("workload", metavar="WORKLOAD.yaml")
    choose.add_argument("--json", action="store_true")
    choose.add_argument("--objective", default="cost")
    choose.add_argument("--catalog", type=Path)
    choose.add_argument("--plot", type=Path)
    choose.add_argument("--write-stack")
    choose.add_argument("--reservations", type=Path)
    args = parser.parse_args()
    data = yaml.load(Path(args.workload).read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    spec = Workload.model_validate(data)
    table = Table(title=spec.name)
    table.add_column("kind")
    table.add_column("objective")
    table.add_row(spec.kind, args.objective)
    (Console() if sys.stdout.isatty() else Console(width=140)).print(table)


if __name__ == "__main__":
    main()
