"""The job layer's data file (runtime.yaml), read once; machine shapes from the hardware facts table; node arithmetic."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from accel.base.safe_files import read_text
from accel.base.yaml_files import parse_yaml  # libyaml, duplicate keys refused

from accel.policies import hardware

HERE = Path(__file__).parent
GIB = 1024 ** 3
MIB = 1024 ** 2


@dataclass(frozen=True)
class MachineShape:
    vcpus: int
    memory_gib: float


@cache
def runtime() -> dict[str, Any]:
    """runtime.yaml: default programs, multislice wiring, fabric sidecars and env, pass lines."""
    return parse_yaml(read_text(HERE / "runtime.yaml", "job runtime table"))


def cite(source: str) -> str:
    """The part of a runtime.yaml source before its first colon: where it is, without what it says."""
    return source.split(":")[0]


def machine_shape(machine_type: str) -> MachineShape | None:
    """vCPUs and memory of one node of `machine_type`, from the hardware facts table; None when
    unknown (e.g. on-prem nodes). The table gives memory in decimal GB as the clouds' pages list it."""
    facts = hardware.current()
    machine = facts.gpu_machine(machine_type) or facts.tpu_machines.get(machine_type)
    return MachineShape(machine.vcpus, machine.memory_gb * 1e9 / GIB) if machine else None


def _banded(total: float, bands: list[list[Any]]) -> float:
    """Sum of fraction x amount over consecutive bands ([size or None for 'the rest', fraction])."""
    reserved, left = 0.0, total
    for size, fraction in bands:
        amount = left if size is None else min(left, size)
        reserved += amount * fraction
        left -= amount
        if left <= 0:
            break
    return reserved


def allocatable(shape: MachineShape) -> tuple[int, int]:
    """(milli-CPU, bytes) a pod may request on a node of this shape: capacity minus kubelet reservations."""
    rules = runtime()["allocatable"]
    cpu = shape.vcpus - _banded(shape.vcpus, rules["cpu_reserved"])
    memory_gib = shape.memory_gib - _banded(shape.memory_gib, rules["memory_reserved"])
    return math.floor(cpu * 1000), math.floor(memory_gib * GIB) - rules["eviction_mib"] * MIB


def pod_requests(shape: MachineShape) -> tuple[int, int]:
    """(milli-CPU, MiB) a job pod asks for on a node of this shape: runtime.yaml request_share of allocatable."""
    share = runtime()["request_share"]
    cpu, memory = allocatable(shape)
    return math.floor(cpu * share), math.floor(memory * share / MIB)
