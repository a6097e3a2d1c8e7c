"""`accel job --validate`: a short fabric check for the same nodes, with the bandwidth it should reach.

GPU: NCCL all_reduce_perf (nccl-tests) across every node, one pod per node, all GPUs; TPU: a JAX psum
over every chip of every slice. The pass line is runtime.yaml `validate.pass_share` of the fabric's
line rate per node (or NVLink/PCIe within one node, ICI per chip on TPU), each with its source.
"""

from __future__ import annotations

from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job import compute_domain
from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.nccl_log import shell_check, transports
from accel.job.manifests import (
    EXCLUSIVE_TOPOLOGY,
    JOBSET_API,
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


def pass_line(plan: Plan) -> tuple[float, str]:
    """(GB/s per node or chip, why) the check must reach."""
    facts = runtime()["validate"]
    share = facts["pass_share"]
    hw = plan_view.hardware(plan)
    if hw.family == "tpu":
        row = facts["tpu_ici_gbytes"][hw.tpu_generation]
        what = "per chip over ICI"
    elif hw.nodes > 1 and hw.machine_type in facts["line_rate_gbytes"]:
        row = facts["line_rate_gbytes"][hw.machine_type]
        what = "per node across nodes"
    else:
        row = facts["intra_node_gbytes"].get(hw.accelerator, {"value": 10, "source": "unknown interconnect"})
        what = "within a node" if hw.nodes == 1 else "per node (no fabric data for this machine: PCIe/NVLink line)"
    value = round(row["value"] * share, 1)
    return value, f"{value} GB/s {what} = {share} x {row['value']} GB/s ({row['source']})"


def validation_job(plan: Plan, ctx: JobContext) -> GeneratedJob:
    hw = plan_view.hardware(plan)
    name = dns_name(f"{plan.workload.name}-fabric-check")
    line, why = pass_line(plan)
    facts = runtime()["validate"]
    replicated = replicated_job_name(hw)
    if hw.family == "tpu":
        image = runtime()["defaults"]["jax-tpu"]["image"]
        command = TPU_PROGRAM.replace("{line}", str(line))
    else:
        image = facts["efa_tests_image"] if hw.fabric == "efa" else facts["nccl_tests_image"]
        if hw.fabric in ("gpudirect-tcpx", "gpudirect-tcpxo"):
            # Google's NCCL tests run in the plugin image the node installer put there (the pairing table).
            from accel.components.kubernetes.node_installers import load_node_installers
            image = load_node_installers().fabrics[hw.fabric].plugin
        ranks = hw.nodes * hw.chips_per_node
        command = (f"all_reduce_perf -b 1G -e 8G -f 2 -g 1 -n 20 2>&1 | tee /tmp/out && "
                   f"awk '/Avg bus bandwidth/ {{ if ($NF < {line}) exit 1 }}' /tmp/out")
        if hw.nodes > 1 and transports(hw.fabric) is not None:
            # Fail closed when NCCL fell back to a slow path (accel/job/nccl_log.py, runtime.yaml).
            command += " && " + shell_check(hw.fabric, "/tmp/out")
        command += f"  # {ranks} ranks, launched by the image's MPI/torchrun wrapper"
    extra_env = ([{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET"}]
                 if hw.family == "gpu" and hw.nodes > 1 and transports(hw.fabric) is not None else None)
    pod, _, notes = training_pod(plan, ctx, name, replicated, image, command, extra_env)
    domain, domain_notes = compute_domain.attach(pod, name, plan, ctx.namespace)
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
        ("TPU: a JAX psum over every chip" if hw.family == "tpu"
         else f"GPU: nccl-tests all_reduce_perf over {hw.nodes * hw.chips_per_node} GPUs ({image})"),
        f"pass line: bus bandwidth >= {why}",
        *([f"transport: NCCL_DEBUG=INFO, and the check fails closed unless NCCL used "
           f"{' or '.join(transports(hw.fabric) or ())} with no slow-path line (accel/job/nccl_log.py)"]
          if extra_env else []),
        "run it after `pulumi up`, before the real job: it fails (exit 1) below the pass line",
        *notes,
    ]
    return GeneratedJob(name, [*domain, jobset], derivations)
