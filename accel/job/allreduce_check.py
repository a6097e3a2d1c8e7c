"""The multi-node fabric check's program: an all-reduce bus-bandwidth run over torch.distributed (NCCL).

`accel job --validate` across nodes starts this file with torchrun in every pod, exactly as the training job
starts PyTorch, so every GPU of every node joins one communicator and the check crosses the path the job will
use (same image, fabric env, volumes and NCCL plugin mounts). nccl-tests' all_reduce_perf needs MPI to do that.

Standard library and torch only: the validation pod writes this source to a file and runs it (accel/job/
validate.py), so it imports nothing from accel and has no dollar sign in it (Kubernetes expands a dollar-parenthesis
reference to a variable in a container's command).

Bus bandwidth as nccl-tests defines it (NVIDIA/nccl-tests doc/PERFORMANCE.md, "Bus bandwidth", AllReduce):
algbw = S / t, busbw = algbw x 2(n-1)/n for n ranks, in GB/s (1e9 bytes). The first local rank of each node
prints nccl-tests' summary line, "# Avg bus bandwidth    : X" (the mean busbw over the sizes), so the pod's
awk pass line and the NCCL-log transport check (accel/job/nccl_log.py) read it as they read all_reduce_perf's.
Every rank exits 1 below the pass line: all ranks judge the same figure (the slowest rank's time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

GIB = 2 ** 30


def bus_bandwidth(size_bytes: int, seconds: float, ranks: int) -> float:
    """GB/s on the bus for one all-reduce of `size_bytes` taking `seconds` over `ranks` ranks (0 for one rank)."""
    if ranks < 1 or seconds <= 0 or size_bytes < 0:
        raise ValueError(f"need ranks >= 1, seconds > 0 and size >= 0 (got {ranks}, {seconds}, {size_bytes})")
    return size_bytes / seconds / 1e9 * 2 * (ranks - 1) / ranks


def sizes_from(smallest: int, largest: int, factor: int = 2) -> list[int]:
    """nccl-tests' -b/-e/-f sweep: smallest, smallest x factor, ... up to largest."""
    sizes, size = [], smallest
    while size <= largest:
        sizes.append(size)
        size *= factor
    return sizes


def _time_all_reduce(torch, dist, size_bytes: int, device, warmup: int, iters: int) -> float:
    """Seconds per all-reduce of a float32 tensor of `size_bytes`, the slowest rank's."""
    tensor = torch.zeros(size_bytes // 4, dtype=torch.float32, device=device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        dist.all_reduce(tensor)
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(tensor)
    sync()
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


def run(sizes: list[int], warmup: int, iters: int, line: float, backend: str = "nccl", out=sys.stdout) -> int:
    """Measure every size in the process group torchrun set up; 0 when the mean bus bandwidth reaches `line`."""
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend)
    ranks = dist.get_world_size()
    speak = local_rank == 0
    if speak:
        print(f"# all-reduce over {ranks} ranks ({backend}), {warmup} warm-up and {iters} timed iterations", file=out)
        print("#        size(B)    time(us)  algbw(GB/s)  busbw(GB/s)", file=out)
    results = []
    for size in sizes:
        seconds = _time_all_reduce(torch, dist, size, device, warmup, iters)
        busbw = bus_bandwidth(size, seconds, ranks)
        results.append(busbw)
        if speak:
            print(f"{size:16d} {seconds * 1e6:11.1f} {size / seconds / 1e9:12.2f} {busbw:12.2f}", file=out)
    dist.destroy_process_group()
    average = sum(results) / len(results)
    if speak:
        print(f"# Avg bus bandwidth    : {average:.4f} ", file=out)
        if average < line:
            print(f"# below the pass line {line} GB/s", file=out)
    return 0 if average >= line else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="all-reduce bus bandwidth over torch.distributed")
    parser.add_argument("--line", type=float, required=True, help="pass line, GB/s of bus bandwidth")
    parser.add_argument("--min-gib", type=int, default=1)
    parser.add_argument("--max-gib", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--backend", default="nccl")
    args = parser.parse_args(argv)
    return run(sizes_from(args.min_gib * GIB, args.max_gib * GIB), args.warmup, args.iters, args.line, args.backend)


if __name__ == "__main__":
    sys.exit(main())
