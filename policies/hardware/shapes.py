"""TPU slice shapes and GPU node counts: which topologies exist and how they map to VMs.

The generations' facts live in the hardware table (policies/hardware/facts.toml); this module
derives shapes from them:
- v4 and v5p slices are 3D (AxBxC, A<=B<=C). Past the base shapes 2x2x1, 2x2x2, 2x2x4, 2x4x4
  every dimension is a multiple of 4. Four chips per VM. Their `v4-N` / `v5p-N` names count
  TensorCores, two per chip.
- v5e and v6e slices are 2D from a fixed list; single-host shapes (1x1, 2x2, 2x4) use 1-, 4-
  and 8-chip machines, multi-host shapes use 4-chip machines. `v5litepod-N` / `v6e-N` count chips.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.hardware import TpuGeneration


class ShapeError(UsageError, ValueError):
    """A topology or TPU type that the generation cannot have. A ValueError too: raised inside a
    pydantic validator it becomes that model's ValidationError."""


def __getattr__(name: str):
    """GENERATIONS and GENERATION_BY_ACCELERATOR, read from the hardware facts table in use."""
    if name == "GENERATIONS":
        return dict(hardware.current().tpu_generations)
    if name == "GENERATION_BY_ACCELERATOR":
        return hardware.current().generations_by_chip()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _generations() -> Mapping[str, TpuGeneration]:
    return hardware.current().tpu_generations


_TOPOLOGY = re.compile(r"^\d+(x\d+){1,2}$")


def generation(name_or_accelerator: str) -> TpuGeneration:
    """Look up a generation by name (v5p) or accelerator id (tpu-v5p)."""
    facts = hardware.current()
    gen = facts.tpu_generations.get(name_or_accelerator) or facts.generation_of_chip(name_or_accelerator)
    if gen is None:
        known = ", ".join(sorted(facts.tpu_generations))
        raise ShapeError(f"unknown TPU generation {name_or_accelerator!r}; known: {known}")
    return gen


def parse_topology(topology: str) -> tuple[int, ...]:
    if not isinstance(topology, str):
        raise ShapeError(f"topology {topology!r} is not of the form AxB or AxBxC")
    return _parsed_topology(topology)


@lru_cache(maxsize=4096)
def _parsed_topology(topology: str) -> tuple[int, ...]:
    """A search reads the same few dozen topologies ~1,500 times: each is parsed once (errors are not cached)."""
    if not _TOPOLOGY.fullmatch(topology):
        raise ShapeError(f"topology {topology!r} is not of the form AxB or AxBxC")
    return tuple(int(d) for d in topology.split("x"))


def topology_chips(topology: str) -> int:
    return math.prod(parse_topology(topology))


def valid_topologies(gen_name: str) -> tuple[str, ...]:
    """Every topology the generation supports, smallest first."""
    return _topologies(generation(gen_name))


@lru_cache(maxsize=None)
def _topologies(gen: TpuGeneration) -> tuple[str, ...]:
    if gen.dimensions == 2:
        return gen.base_topologies
    # (chips, longest side, topology): the sort key beside each shape, worked out from its sides
    shapes = [(math.prod(dims), max(dims), t) for t in gen.base_topologies for dims in [parse_topology(t)]]
    # Every AxBxC with A <= B <= C, each a multiple of 4 up to max_dimension, at most max_chips_per_slice
    # chips, in (A, B, C) order; each loop stops at its first side past the bound, since every larger side is
    # past it too (tpu7x's 256-chip sides would otherwise make 64^3 candidates on every `accel choose`).
    limit, top = gen.max_chips_per_slice, gen.max_dimension + 1
    for a in range(4, top, 4):
        if a * a * a > limit:
            break
        for b in range(a, top, 4):
            if a * b * b > limit:
                break
            for c in range(b, top, 4):
                if a * b * c > limit:
                    break
                shapes.append((a * b * c, c, f"{a}x{b}x{c}"))
    # smallest first, then the flatter of equal sizes; a stable sort keeps the order above for ties
    return tuple(t for _, _, t in sorted(shapes, key=lambda shape: shape[:2]))


@lru_cache(maxsize=None)
def _topology_set(gen: TpuGeneration) -> frozenset[str]:
    """The generation's topologies as a set: a search checks ~400 slices against them (each a scan of the tuple)."""
    return frozenset(_topologies(gen))


def check_topology(gen_name: str, topology: str) -> None:
    """Raise ShapeError naming the allowed shapes if the generation cannot have `topology`."""
    gen = generation(gen_name)
    dims = parse_topology(topology)
    if len(dims) != gen.dimensions:
        raise ShapeError(
            f"TPU {gen.name} slices are {gen.dimensions}D; topology {topology!r} has {len(dims)} dimensions"
        )
    if topology not in _topology_set(gen):
        if gen.dimensions == 2:
            allowed = ", ".join(gen.base_topologies)
        else:
            allowed = (f"{', '.join(gen.base_topologies)}, or AxBxC with A<=B<=C, each a multiple of 4, "
                       f"at most {gen.max_chips_per_slice} chips")
        raise ShapeError(f"TPU {gen.name} has no topology {topology!r}; allowed: {allowed}")


def machine_type(gen_name: str, topology: str) -> str:
    gen = generation(gen_name)
    check_topology(gen.name, topology)
    return gen.single_host_machine_types.get(topology, gen.multi_host_machine_type)


def chips_per_host(gen_name: str, topology: str) -> int:
    """Chips on each VM of a slice with this topology (the `-Nt` of the machine type)."""
    host = hardware.current().tpu_machines[machine_type(gen_name, topology)]
    return min(host.chips, topology_chips(topology))


def hosts_per_slice(gen_name: str, topology: str) -> int:
    return topology_chips(topology) // chips_per_host(gen_name, topology)


def tpu_vm_type(gen_name: str, chips: int) -> str:
    """The Cloud TPU accelerator type for a slice: v5p-128 is 64 chips, v6e-64 is 64 chips."""
    gen = generation(gen_name)
    return f"{gen.type_prefix}-{chips * gen.cores_per_chip}"


def parse_tpu_vm_type(tpu_type: str) -> tuple[TpuGeneration, int]:
    """Read `v5p-128` → (v5p, 64 chips); `v5litepod-16` → (v5e, 16 chips)."""
    match = re.fullmatch(r"^([a-z0-9]+)-(\d+)$", tpu_type or "")
    gen = hardware.current().generation_of_type_prefix(match.group(1)) if match else None
    if gen is None:
        raise ShapeError(f"{tpu_type!r} is not a TPU type like {tpu_type_examples()}")
    count = int(match.group(2))
    if count % gen.cores_per_chip:
        raise ShapeError(f"{tpu_type!r}: {gen.type_prefix}-N counts TensorCores, so N must be even")
    return gen, count // gen.cores_per_chip


def tpu_type_examples() -> str:
    """'v4-32, v5p-128, v5litepod-16 or v6e-64': one valid multi-host type per generation, for messages."""
    examples = []
    for gen in _generations().values():
        multi_host = [t for t in valid_topologies(gen.name) if topology_chips(t) >= 16]
        examples.append(tpu_vm_type(gen.name, topology_chips(multi_host[1 if gen.dimensions == 3 else 0])))
    return f"{', '.join(examples[:-1])} or {examples[-1]}"


def smallest_topology(gen_name: str, chips: int) -> str:
    """The smallest valid single-slice topology with at least `chips` chips."""
    for topology in valid_topologies(gen_name):
        if topology_chips(topology) >= chips:
            return topology
    gen = generation(gen_name)
    raise ShapeError(f"{chips} chips exceed the largest TPU {gen.name} slice ({gen.max_chips_per_slice} chips)")


def gpu_nodes(chips: int, gpus_per_node: int) -> int:
    """Whole nodes: GPUs come in machines of a fixed size."""
    if chips <= 0 or gpus_per_node <= 0:
        raise ShapeError("chips and gpus_per_node must be positive")
    return math.ceil(chips / gpus_per_node)
