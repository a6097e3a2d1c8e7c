"""`accel job --validate`: a short fabric check for the same nodes, with the bandwidth it should reach.

GPU, one node: NCCL all_reduce_perf (nccl-tests), one process driving all the node's GPUs. GPU, across nodes:
an all-reduce over torch.distributed (accel/job/allreduce_check.py) started by torchrun in every pod exactly as
the training job starts PyTorch, in the training image with the job's fabric env and mounts (all_reduce_perf
would need MPI to join its ranks across pods). TPU: a JAX psum over every chip of every slice. The pass line is runtime.yaml `validate.pass_share` of what the all-reduce
crosses, each with its source: the NVLink/PCIe figure within one node, or within one NVLink domain that spans
nodes (a GB200 NVL72 rack: its nodes share NVLink through IMEX); beyond one domain the scale-out line rate per
node (the machine's [collective_fabrics] scale-out figure, policies/hardware); ICI per chip on TPU. The one-node
nccl-tests image is the fabric's for the nodes' architecture (Arm on A4X, p6e-gb200 and GB200 inventories).
"""

from __future__ import annotations

from pathlib import Path

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.plan import Plan

from accel.job import allreduce_check, plan_view, tpu_devices
from accel.job.architectures import node_arch
from accel.job import compute_domain
from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.render import Script
from accel.job.nccl_log import shell_check, transports
from accel.job.manifests import (
    EXCLUSIVE_TOPOLOGY,
    JOBSET_API,
    torchrun_launch,
    torchrun_node_rank_env,
    GeneratedJob,
    _labels,
    dns_name,
    replicated_job_name,
    training_pod,
)

TPU_PROGRAM = ("python3 -c \"import time, jax, jax.numpy as jnp; n = jax.device_count(); "
               "x = jnp.ones((jax.local_device_count(), 64 * 2**20), jnp.bfloat16); "
               "f = jax.pmap(lambda v: jax.lax.psum(v, 'i'), axis_name='i'); f(x).block_until_ready(); "
               "t = time.time(); [f(x).block_until_ready() for _ in range(10)]; s = (time.time() - t) / 10; "
               "bw = 2 * (n - 1) / n * x[0].nbytes / s / 1e9; print(f'devices {n} busbw {bw:.1f} GB/s'); "
               "assert bw >= {line}, f'below the pass line {line} GB/s'\"")


def _nvlink_domain(hw: plan_view.Hardware, stated_domain_gpus: int | None = None) -> int | None:
    """GPUs on the job's NVLink domain when that domain spans nodes (GB200 NVL72: 72 over 18 nodes), else None;
    `stated_domain_gpus`: what the stack's inventory says of its nodes' domain (GB200 NVL4: 4, the node)."""
    if not hardware.current().nvlink_domain_spans_nodes(hw.accelerator, hw.machine_type or None, stated_domain_gpus):
        return None
    return stated_domain_gpus or hardware.current().scale_up_domain_chips(hw.accelerator, hw.machine_type or None)


def _scale_out(hw: plan_view.Hardware) -> dict | None:
    """GB/s per node beyond the NVLink domain, with its source: the machine's scale-out per GPU (policies/hardware
    [collective_fabrics], the machine's own where its NICs differ from its chip's: A3 High, A3 Mega, P4d) times its
    GPUs per node, the one figure the estimate's hand-offs and all-to-all read too; None for a chip the table gives
    no scale-out fabric."""
    fabric = hardware.current().collective_fabric(hw.accelerator, hw.machine_type or None)
    if fabric is None or not fabric.domain_chips:
        return None
    value = fabric.scale_out_gbps * hw.chips_per_node / 8
    return {"value": round(value, 1), "source": f"{hw.chips_per_node} x {fabric.scale_out_gbps:g} Gb/s per GPU, "
            f"{hw.machine_type or hw.accelerator}'s scale-out ([collective_fabrics.{fabric.id}] in policies/hardware: "
            f"{fabric.source})"}


def host_network_only(plan: Plan, stated_domain_gpus: int | None = None) -> bool:
    """A cloud GPU fleet across nodes for which the stack built no GPU network (fabric none: no EFA interfaces, no
    GPUDirect NICs, no NVLink domain spanning nodes), as a serving pool of whole-node replicas is: between nodes its
    GPUs reach each other only over the hosts' own network, which no scale-out figure in the hardware table describes.
    An inventory is left out: its nodes may have a network the stack does not know (the chip's scale-out figure)."""
    hw = plan_view.hardware(plan)
    return (hw.family == "gpu" and hw.nodes > 1 and hw.fabric == "none" and hw.cloud in ("gcp", "aws")
            and _nvlink_domain(hw, stated_domain_gpus) is None)


def device_bus_scale(chips: int, devices: int) -> float:
    """What a TPU's per-chip ICI line becomes in the unit the psum prints: bus bandwidth per JAX device. The program
    (TPU_PROGRAM) counts its all-reduce as nccl-tests does, 2(n-1)/n x the bytes over the time, with n its devices;
    where a chip shows two (TPU7x, policies/hardware/facts.toml jax_devices_per_chip) the two reduce over the chip's
    own die-to-die link and what crosses ICI is the chips' all-reduce, 2(c-1)/c x the bytes. A fabric at the chip's
    line then prints ((n-1)/n) / ((c-1)/c) x it (a 2x2x1: 7/6), so the line scales by that; 1 where a chip is one
    device, and on one chip, whose psum crosses no ICI."""
    if devices == chips or chips <= 1:
        return 1.0
    return ((devices - 1) / devices) / ((chips - 1) / chips)


def pass_line(plan: Plan, stated_domain_gpus: int | None = None) -> tuple[float, str]:
    """(GB/s per node or chip, why) the check must reach; `stated_domain_gpus` as _nvlink_domain takes it."""
    facts = runtime()["validate"]
    share = facts["pass_share"]
    hw = plan_view.hardware(plan)
    domain = _nvlink_domain(hw, stated_domain_gpus) if hw.family == "gpu" else None
    within_domain = domain is not None and hw.nodes * hw.chips_per_node <= domain
    each_node = host_network_only(plan, stated_domain_gpus)
    scale_out = (_scale_out(hw) if hw.family == "gpu" and hw.nodes > 1 and not within_domain and not each_node
                 else None)
    scale = 1.0
    if hw.family == "tpu":
        row = facts["tpu_ici_gbytes"][hw.tpu_generation]
        chips = hw.nodes * hw.chips_per_node
        devices = tpu_devices.devices(hw.accelerator, chips)
        scale = device_bus_scale(chips, devices)
        what = ("per chip over ICI" if scale == 1.0 else
                f"per JAX device over ICI (the psum counts {devices} devices, 2(n-1)/n, while ICI carries a "
                f"{chips}-chip all-reduce, 2(c-1)/c: the chip's line x {scale:.4g})")
    elif scale_out is not None:
        row = scale_out
        what = ("per node across nodes" if domain is None else
                f"per node across nodes ({hw.nodes * hw.chips_per_node} GPUs span more than one {domain}-GPU NVLink "
                "domain: the all-reduce crosses the scale-out network)")
    else:
        row = facts["intra_node_gbytes"].get(hw.accelerator, {"value": 10, "source": "unknown interconnect"})
        what = ("within a node" if hw.nodes == 1 else
                "within each node (the stack built no GPU network across nodes: fabric none)" if each_node else
                f"within one NVLink domain ({hw.nodes} nodes, {hw.nodes * hw.chips_per_node} of its {domain} GPUs, "
                "joined through IMEX)" if within_domain else
                "per node (no fabric data for this machine: PCIe/NVLink line)")
    value = round(row["value"] * share * scale, 1)
    return value, f"{value} GB/s {what} = {share} x {row['value']:g} GB/s ({row['source']})"


def tests_image(hw: plan_view.Hardware, line: str) -> tuple[str, list[str]]:
    """(the nccl-tests image for the fabric and the nodes' architecture, notes); UsageError when runtime.yaml
    states none for them. GPUDirect-TCPX/TCPXO run the plugin image the node installer put there."""
    if hw.fabric in ("gpudirect-tcpx", "gpudirect-tcpxo"):
        # Google's NCCL tests run in the plugin image the node installer put there (the pairing table).
        from accel.components.kubernetes.node_installers import load_node_installers
        return load_node_installers().fabrics[hw.fabric].plugin, []
    arch = node_arch(hw.machine_type, hw.accelerator) or "amd64"
    images = runtime()["validate"]["nccl_tests_images"]
    row = images.get(hw.fabric) or images["none"]
    image = row.get(arch)
    if image is None:
        stated = sorted(fabric for fabric, by_arch in images.items() if arch in by_arch)
        raise UsageError(
            f"no nccl-tests image for {arch} nodes on fabric {hw.fabric!r}: runtime.yaml (validate nccl_tests_images) "
            f"states {arch} images for {', '.join(stated) or 'no fabric'} only, and those carry a cloud's own network "
            f"plugin. Run nccl-tests' all_reduce_perf from an {arch} build of NVIDIA/nccl-tests over all "
            f"{hw.nodes * hw.chips_per_node} GPUs and expect a bus bandwidth of at least {line}; "
            f"`accel job --validate --image IMAGE` writes the check with that build (all_reduce_perf on PATH)")
    notes = [f"nccl-tests image {image}: a moving tag, the only one its publisher names "
             f"(runtime.yaml validate nccl_tests_images.{hw.fabric})"] if image.endswith(":latest") else []
    return image, notes


PROGRAM_PATH = "accel/job/allreduce_check.py"
PROGRAM_FILE = "/tmp/allreduce_check.py"
HEREDOC_END = "ALLREDUCE_CHECK_PY"


def allreduce_program() -> str:
    """The multi-node check's program source, as the pod writes it (accel/job/allreduce_check.py)."""
    source = Path(allreduce_check.__file__).read_text()
    # The module's docstring stays in the repository: the pod needs the code.
    source = source[source.index("from __future__"):]
    # Kubernetes expands $(NAME) in a container command, and a line equal to the heredoc's delimiter would end it.
    if "$" in source or HEREDOC_END in source.splitlines():
        raise ValueError(f"{PROGRAM_PATH} must hold no '$' and no line {HEREDOC_END!r}: it is embedded in a command")
    return source


def torchrun_check_command(hw: plan_view.Hardware, replicated: str, line: float, transport_check: str | None) -> str:
    """The pod's command across nodes: write the program, start it with torchrun exactly as the training job
    starts PyTorch (one rank per GPU, node rank = the pod's completion index, rendezvous at pod 0 of replica 0),
    then judge its "Avg bus bandwidth" line (required: the awk fails when it is missing) and NCCL's transport.
    The program's own exit (1 below the line) carries through the pipe (pipefail)."""
    facts = runtime()["validate"]["multi_node_program"]
    run = (f"{torchrun_launch(hw.nodes, hw.chips_per_node, replicated)} {PROGRAM_FILE} "
           f"--line {line} --min-gib {facts['min_gib']} --max-gib {facts['max_gib']} --warmup {facts['warmup']} "
           f"--iters {facts['iters']}")
    judge = (f"awk '/Avg bus bandwidth/ {{ found = 1; if ($NF < {line}) low = 1 }} END {{ exit (low || !found) }}' "
             "/tmp/out")
    first = (f"cat > {PROGRAM_FILE} <<'{HEREDOC_END}' && set -o pipefail && {run} 2>&1 | tee /tmp/out && {judge}"
             + (f" && {transport_check}" if transport_check else ""))
    return f"{first}\n{allreduce_program()}{HEREDOC_END}\n"


def validation_job(plan: Plan, ctx: JobContext, image_override: str | None = None) -> GeneratedJob:
    """The fabric check on the plan's nodes; `image_override` (`--validate --image`) is the image the check's own
    command runs in: one with nccl-tests' all_reduce_perf on PATH (GPU, one node: for a node no stated image serves,
    an Arm inventory without a cloud fabric, or a build of your own), one with torch (GPU across nodes: instead of
    the training image), or JAX (TPU)."""
    hw = plan_view.hardware(plan)
    name = dns_name(f"{plan.workload.name}-fabric-check")
    line, why = pass_line(plan, ctx.nvlink_domain_gpus)
    replicated = replicated_job_name(hw)
    image_notes: list[str] = []
    # Nodes joined by no GPU network each check themselves: an all-reduce across them would cross the hosts' own
    # network, whose bandwidth no line states, and fail on a sound cluster against a fabric the stack never built.
    each_node = host_network_only(plan, ctx.nvlink_domain_gpus)
    across = hw.family == "gpu" and hw.nodes > 1 and not each_node
    checks_transport = across and transports(hw.fabric) is not None
    if hw.family == "gpu" and not across and hw.chips_per_node == 1:
        # nccl-tests reports a one-rank all-reduce's bus bandwidth as 0 (busBw = algBw x 2(n-1)/n): a check that
        # could never pass is refused rather than written.
        raise UsageError(f"--validate: each {hw.machine_type} node holds one GPU and "
                         + ("the stack built no GPU network between its nodes (fabric none)" if hw.nodes > 1 else
                            "the fleet is that one node")
                         + ", so there is no all-reduce to check (nccl-tests reports a one-GPU all-reduce's bus "
                           "bandwidth as 0); run the job itself as the check")
    # Fail closed when NCCL fell back to a slow path (accel/job/nccl_log.py, runtime.yaml).
    transport_check = shell_check(hw.fabric, "/tmp/out") if checks_transport else None
    if hw.family == "tpu":
        image = image_override or runtime()["defaults"]["jax-tpu"]["image"]
        command = TPU_PROGRAM.replace("{line}", str(line))
    elif not across:
        image, image_notes = ((image_override, [f"nccl-tests image {image_override}: given by --image (all_reduce_perf "
                                                 "on PATH)"]) if image_override else tests_image(hw, why))
        # One node: one process drives all its GPUs (-g), which needs no launcher; a single rank's all-reduce moves
        # nothing, and nccl-tests reports its bus bandwidth as 0 (busBw = algBw x 2(n-1)/n, n = 1), so `-g 1` alone
        # in the pod could never pass.
        command = (f"all_reduce_perf -b 1G -e 8G -f 2 -g {hw.chips_per_node} -n 20 2>&1 | tee /tmp/out && "
                   f"awk '/Avg bus bandwidth/ {{ if ($NF < {line}) exit 1 }}' /tmp/out")
    else:
        # Across nodes: torchrun in every pod, as the training job starts PyTorch, joins every GPU in one NCCL
        # communicator with no SSH or MPI (nccl-tests' all_reduce_perf needs mpirun to start its ranks).
        image = image_override or runtime()["defaults"]["pytorch-gpu"]["image"]
        image_notes = [f"image {image}: " + ("given by --image (torch on PATH)" if image_override else
                                             "the training image (runtime.yaml defaults.pytorch-gpu)")]
        command = torchrun_check_command(hw, replicated, line, transport_check)
    extra_env = ([{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"}]
                 if checks_transport else [])
    if across:
        extra_env.append(torchrun_node_rank_env())
    pod, _, notes = training_pod(plan, ctx, name, replicated, image, command, extra_env or None)
    if across:
        shell = pod["spec"]["containers"][0]["command"]
        shell[-1] = Script(shell[-1])
    domain, domain_notes = compute_domain.attach([pod], name, plan, ctx.namespace, hw.nodes, ctx.nvlink_domain_gpus)
    notes += domain_notes
    jobset = {
        "apiVersion": JOBSET_API, "kind": "JobSet",
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": _labels(ctx, name),
                     **({"annotations": {EXCLUSIVE_TOPOLOGY: "cloud.google.com/gke-nodepool"}}
                        if hw.family == "tpu" else {})},
        "spec": {"failurePolicy": {"maxRestarts": 0},
                 "network": {"enableDNSHostnames": True, "subdomain": name},
                 "replicatedJobs": [{"name": replicated, "replicas": hw.slices, "template": {"spec": {
                     "parallelism": hw.nodes_per_slice, "completions": hw.nodes_per_slice, "backoffLimit": 0,
                     "completionMode": "Indexed", "template": pod}}}]},
    }
    derivations = [
        f"fabric check on the same nodes as the job: {hw.slices} x {hw.nodes_per_slice} {hw.machine_type}",
        (("TPU: a JAX psum over every chip" if tpu_devices.per_chip(hw.accelerator) == 1 else
          f"TPU: a JAX psum over all {tpu_devices.counted(hw.accelerator, hw.nodes * hw.chips_per_node)}")
         if hw.family == "tpu"
         else f"GPU: nccl-tests all_reduce_perf over {hw.nodes * hw.chips_per_node} GPUs ({image})" if hw.nodes == 1
         else f"GPU: nccl-tests all_reduce_perf over the {hw.chips_per_node} GPUs of each of the {hw.nodes} nodes, each "
              f"node on its own ({image}): the stack built no GPU network across them (fabric none), so an "
              "all-reduce across nodes would cross the hosts' own network, for which no line is stated" if each_node
         else f"GPU: an all-reduce over torch.distributed (NCCL) across {hw.nodes * hw.chips_per_node} GPUs, bus "
              f"bandwidth as nccl-tests defines it ({PROGRAM_PATH}, {image})"),
        f"pass line: bus bandwidth >= {why}",
        *([f"transport: NCCL_DEBUG=INFO, and the check fails closed unless NCCL used "
           f"{' or '.join(transports(hw.fabric) or ())} with no slow-path line (accel/job/nccl_log.py)"]
          if checks_transport else []),
        "run it after `pulumi up`, before the real job: it fails (exit 1) below the pass line",
        *([f"launch: torchrun --nnodes={hw.nodes} --nproc-per-node={hw.chips_per_node} in every pod, as the training "
           f"job starts PyTorch (rendezvous at pod 0, port {runtime()['torchrun']['rendezvous_port']}): one NCCL "
           f"communicator of {hw.nodes * hw.chips_per_node} ranks with no SSH or MPI, in the training image with the "
           "job's fabric env, volumes and NCCL plugin mounts; the command writes the program "
           f"({PROGRAM_PATH}) into the pod, and each node's first rank prints nccl-tests' 'Avg bus bandwidth' line"]
          if across else []),
        *image_notes,
        *notes,
    ]
    return GeneratedJob(name, [*domain, jobset], derivations)
