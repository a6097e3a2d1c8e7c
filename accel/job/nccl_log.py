"""Which transport NCCL used, read from its NCCL_DEBUG=INFO log, and whether that is the fabric's fast path.

`accel job --validate` measures bus bandwidth, but a run can pass a loose bandwidth line on a degraded path,
and a slow path is worth naming. Each fabric's acceptable transports and the lines that betray a fallback
are data (runtime.yaml `validate.nccl_transports`, `validate.nccl_slow_path`, each with the public log it
comes from); this module judges a log by them (tested on recorded lines under tests/fixtures/nccl/) and
writes the same judgement as the shell the validation pod runs, so the two cannot drift apart.

Fail closed: a log without any "Using network <name>" line fails (nothing says the fast path was used), and
so does a network name the fabric does not list. NCCL's bootstrap line "NET/Socket : Using [0]eth0:..." is
not a fallback and is not matched: only "Using network Socket" and channels "via NET/Socket/" are.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from accel.job.facts import runtime

USING_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")


@dataclass(frozen=True)
class TransportVerdict:
    ok: bool
    networks: tuple[str, ...]                      # every network NCCL said it used, in order of first use
    problems: list[str] = field(default_factory=list)


def transports(fabric: str) -> tuple[str, ...] | None:
    """The networks NCCL may use on this fabric (None: the fabric has no transport check)."""
    row = runtime()["validate"].get("nccl_transports", {}).get(fabric)
    return tuple(row["networks"]) if row else None


def slow_path_patterns() -> list[tuple[str, str]]:
    return [(row["pattern"], row["source"]) for row in runtime()["validate"]["nccl_slow_path"]]


def judge(log: str, fabric: str) -> TransportVerdict:
    """The verdict on one NCCL_DEBUG=INFO log (all ranks' lines together) for the fabric."""
    allowed = transports(fabric)
    if allowed is None:
        raise ValueError(f"fabric {fabric!r} has no NCCL transport check in runtime.yaml")
    problems: list[str] = []
    networks: list[str] = []
    for line in log.splitlines():
        match = USING_NETWORK.search(line)
        if match and match.group(1) not in networks:
            networks.append(match.group(1))
    for pattern, source in slow_path_patterns():
        hit = next((line.strip() for line in log.splitlines() if re.search(pattern, line)), None)
        if hit is not None:
            problems.append(f"slow path: {hit!r} ({source})")
    if not networks:
        problems.append("no 'NCCL INFO Using network <name>' line: the log cannot show the fast path was used "
                        "(run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET)")
    for network in networks:
        if network not in allowed:
            problems.append(f"NCCL used network {network!r}; {fabric} expects {' or '.join(allowed)}")
    return TransportVerdict(not problems, tuple(networks), problems)


def shell_check(fabric: str, log_file: str) -> str:
    """The same judgement as `judge`, as POSIX shell over `log_file` (exit 1 on a slow path or no fast one)."""
    allowed = transports(fabric)
    if allowed is None:
        raise ValueError(f"fabric {fabric!r} has no NCCL transport check in runtime.yaml")
    slow = "|".join(f"({pattern})" for pattern, _ in slow_path_patterns())
    fast = "NCCL INFO Using network (" + "|".join(re.escape(n).replace("\\ ", " ") for n in allowed) + r")\s*$"
    using = "NCCL INFO Using network "
    file = shlex.quote(log_file)
    return (f"if grep -Eq {shlex.quote(slow)} {file}; then echo 'NCCL slow path:'; grep -E {shlex.quote(slow)} {file} "
            f"| head -3; exit 1; fi; "
            f"grep -E {shlex.quote(fast)} {file} >/dev/null || {{ echo 'NCCL used no {fabric} transport'; exit 1; }}; "
            f"if grep -F {shlex.quote(using)} {file} | grep -Evq {shlex.quote(fast)}; then "
            f"echo 'NCCL used another network:'; grep -F {shlex.quote(using)} {file} | sort -u | head -3; exit 1; fi")
