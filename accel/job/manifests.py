"""Kubernetes manifests that run a Plan's workload on the Plan's hardware.

Training: a JobSet (jobset.x-k8s.io/v1alpha2), one replicated job whose replicas are the TPU
slices (or the one GPU fleet), parallelism = hosts per slice, every pod taking a whole node.
Serving: a Deployment (one node or less per replica) or a LeaderWorkerSet (a replica spanning
nodes) of vLLM (GPUs) or vLLM TPU (TPUs, one host per replica), and a Service in front.

Labels, taints and resource names come from the same pool description the stack's Kueue
flavors are built from (accel.components.kubernetes.pools), so the job and the queue agree.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from accel.components.kubernetes.accelerator_stack import EFA_RESOURCE, GPU_RESOURCE, TPU_RESOURCE, AcceleratorPool
from accel.components.kubernetes.gke_networks import DEFAULT_INTERFACE, DEFAULT_NETWORK
from accel.components.kubernetes import workloads
from accel.components.kubernetes.node_installers import load_node_installers
from accel.components.kubernetes.pools import plan_pools
from accel.policies import hardware
from accel.policies.hardware import tpu_serving as serving_hosts
from accel.policies.plan import Plan

from accel.job import plan_view
from accel.job import compute_domain, context_parallel, maxtext_entry, megatron_run, model_run, tpu_serving, vllm_tpu
from accel.job.context import JobContext
from accel.job.facts import cite, machine_shape, pod_requests, runtime
from accel.job.pod_templates import LWS_WORKER_INDEX
from accel.job.restarts import max_restarts
from accel.job import replica_spread, serving_fabric, stand_in, vllm_serving
from accel.job.precision_words import PrecisionFlags, chip_name
from accel.job.topology import (
    PODSET_GROUP,
    PREFERRED,
    REQUIRED,
    level_nodes,
    replica_level,
    topology_request,
)

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
LWS_API = "leaderworkerset.x-k8s.io/v1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
# LWS's own key: one replica (group) per topology domain, here one TPU slice node pool per replica
# (lws v0.10.0 api/leaderworkerset/v1/leaderworkerset_types.go ExclusiveKeyAnnotationKey).
LWS_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
JOBSET_NAME_ENV = {"name": "JOBSET_NAME",
                   "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/jobset-name']"}}}
JOB_INDEX_ENV = {"name": "MEGASCALE_SLICE_ID",
                 "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-index']"}}}
NODE_RANK_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
CHECKPOINT_MOUNT = "/checkpoints"
DATASET_MOUNT = "/data"
SERVING_PORT = 8000


@dataclass(frozen=True)
class JobOptions:
    image: str | None = None
    command: str | None = None
    validate: bool = False


@dataclass
class GeneratedJob:
    name: str
    manifests: list[dict[str, Any]]
    derivations: list[str] = field(default_factory=list)  # "what came from what", for the header


def dns_name(text: str, limit: int = 40) -> str:
    """A DNS-1035 label: JobSet, LeaderWorkerSet and Service names must start with a letter (rules jobset/job-names,
    lws/name, meta/name), and 40 characters leave room for the pod names a JobSet derives from it."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if name[:1].isdigit():
        name = f"w-{name}"  # "70b-pretrain" -> "w-70b-pretrain"
    return name[:limit].strip("-") or "job"


def _pool(plan: Plan, ctx: JobContext) -> AcceleratorPool:
    return ctx.inventory_pool if ctx.inventory_pool is not None else plan_pools(plan)[0]


def _chip_resource(hw: plan_view.Hardware) -> str:
    return TPU_RESOURCE if hw.family == "tpu" else GPU_RESOURCE


def _resources(hw: plan_view.Hardware, chips: int, node_share: float = 1.0) -> dict[str, Any]:
    limits: dict[str, Any] = {_chip_resource(hw): chips}
    if hw.efa_interfaces and node_share == 1.0:
        limits[EFA_RESOURCE] = hw.efa_interfaces
    resources: dict[str, Any] = {"limits": limits}
    shape = machine_shape(hw.machine_type)
    if shape is not None:
        cpu, memory = pod_requests(shape)
        resources["requests"] = {"cpu": f"{int(cpu * node_share)}m", "memory": f"{int(memory * node_share)}Mi",
                                 **limits}
    return resources


def _storage(plan: Plan, ctx: JobContext) -> tuple[list[dict], list[dict], list[dict], dict[str, str], list[str]]:
    """(volumes, mounts, env, pod annotations, derivations): buckets through GCS FUSE on GKE, s3:// URLs on EKS.

    A bucket the stack already declares as a claim of the same name (storage_mounts.py: a static GCS FUSE
    PV + PVC) is mounted through that claim; declaring it a second time as an ephemeral CSI volume would
    repeat the volume name, which the API server refuses (rule pod/volume-names-unique).
    """
    volumes: list[dict] = []
    mounts: list[dict] = []
    env: list[dict] = []
    annotations: dict[str, str] = {}
    notes: list[str] = []
    buckets = [("checkpoints", ctx.checkpoint_bucket, CHECKPOINT_MOUNT, False, "CHECKPOINT_DIR"),
               ("datasets", ctx.dataset_bucket, DATASET_MOUNT, True, "DATASET_DIR")]
    claims = list(ctx.volume_claims)
    for name, bucket, mount, read_only, variable in buckets:
        if not bucket:
            continue
        if plan.cloud == "gcp":
            annotations[GCSFUSE_ANNOTATION] = "true"
            if name in claims:
                claims.remove(name)
                volumes.append({"name": name, "persistentVolumeClaim": {"claimName": name, "readOnly": read_only}})
                how = f"the stack's claim {name} (GCS FUSE PV)"
            else:
                volumes.append({"name": name, "csi": {"driver": GCSFUSE_DRIVER, "readOnly": read_only,
                                                       "volumeAttributes": {"bucketName": bucket,
                                                                            "mountOptions": "implicit-dirs"}}})
                how = "GCS FUSE CSI"
            mounts.append({"name": name, "mountPath": mount, "readOnly": read_only})
            env.append({"name": variable, "value": mount})
            notes.append(f"{variable}: bucket {bucket} mounted at {mount} ({how})")
        else:
            env.append({"name": variable, "value": f"s3://{bucket}/"})
            notes.append(f"{variable}: s3://{bucket}/ (IRSA credentials from the ServiceAccount)")
    for claim in claims:
        volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim}})
        mounts.append({"name": claim, "mountPath": f"/mnt/{claim}"})
        notes.append(f"volume claim {claim} mounted at /mnt/{claim}")
    if not any(e["name"] == "CHECKPOINT_DIR" for e in env):
        volumes.append({"name": "checkpoints", "emptyDir": {}})
        mounts.append({"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT})
        env.append({"name": "CHECKPOINT_DIR", "value": CHECKPOINT_MOUNT})
        notes.append("CHECKPOINT_DIR: the stack declares no checkpoint bucket; a node-local emptyDir "
                     "(lost with the pod: point it at durable storage)")
    return volumes, mounts, env, annotations, notes


def _fabric(hw: plan_view.Hardware, ctx: JobContext) -> tuple[list[dict], list[dict], list[dict], list[dict],
                                                              dict[str, str], str | None]:
    """(sidecars, volumes, main mounts, env, annotations, env profile to source) for the GPU fabric."""
    facts = runtime()["fabrics"].get(hw.fabric)
    if facts is None or hw.family != "gpu":
        return [], [], [], [], {}, None
    env = [{"name": k, "value": str(v)} for k, v in facts.get("env", {}).items()]
    volumes = [{"name": n, "hostPath": {"path": p}} for n, p in facts.get("host_paths", {}).items()]
    volumes += [{"name": n, "emptyDir": {}} for n in facts.get("empty_dirs", [])]
    mounts = [{"name": n, "mountPath": p} for n, p in facts.get("main_mounts", {}).items()]
    annotations: dict[str, str] = {}
    if ctx.gke_networks:
        interfaces = [{"interfaceName": DEFAULT_INTERFACE, "network": DEFAULT_NETWORK}]
        interfaces += [{"interfaceName": f"eth{i + 1}", "network": n} for i, n in enumerate(ctx.gke_networks)]
        annotations[DEFAULT_INTERFACE_ANNOTATION] = DEFAULT_INTERFACE
        annotations[INTERFACES_ANNOTATION] = json.dumps(interfaces)
    sidecars = []
    if "sidecar" in facts:
        car = facts["sidecar"]
        sidecars.append({
            "name": car["name"], "image": paired_sidecar_image(hw.fabric), "command": list(car["command"]),
            "restartPolicy": "Always",  # a native sidecar: it ends when the trainer does, so the Job completes
            # What Google's samples grant, no more: capabilities, never privileged (runtime.yaml cites them).
            "securityContext": {"privileged": False, "capabilities": {"add": list(car["capabilities"])}},
            "env": [{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
            "volumeMounts": [{"name": n, "mountPath": p} for n, p in car.get("mounts", {}).items()],
        })
        annotations[facts["device_annotation"]] = "".join(f"- path: {d}\n" for d in facts["devices"])
    return sidecars, volumes, mounts, env, annotations, _env_profile(hw.fabric, facts)


GPUDIRECT_TCP = ("gpudirect-tcpx", "gpudirect-tcpxo")


def _fabric_security(hw: plan_view.Hardware) -> dict | None:
    """The NCCL process's securityContext on GPUDirect-TCPX/TCPXO: IPC_LOCK, as Google's samples grant it."""
    return {"capabilities": {"add": ["IPC_LOCK"]}} if hw.fabric in GPUDIRECT_TCP else None


def _fabric_note(hw: plan_view.Hardware) -> str:
    return f"fabric {hw.fabric}: {runtime()['fabrics'][hw.fabric]['source']}"


def wire_fabric(templates: list[dict], hw: plan_view.Hardware, ctx: JobContext) -> list[str]:
    """Give each pod template (its first container the one whose processes run NCCL) the fabric wiring a training
    pod of the same machine gets, from the same facts (`_fabric`): the NCCL plugin's host paths and mounts, its env
    (a name the container already sets is kept), the RxDM sidecar and its device annotation, the GKE multi-network
    annotations, IPC_LOCK, and the plugin's env profile sourced before the container's command, so every process it
    starts (vLLM's worker processes) inherits it. Returns the derivation lines."""
    sidecars, volumes, mounts, env, annotations, profile = _fabric(hw, ctx)
    security = _fabric_security(hw)
    for template in templates:
        if annotations:
            template["metadata"].setdefault("annotations", {}).update(annotations)
        spec = template["spec"]
        container = spec["containers"][0]
        own = {e["name"] for e in container.get("env", [])}
        container["env"] = [*container.get("env", []), *(copy.deepcopy(e) for e in env if e["name"] not in own)]
        if mounts:
            container.setdefault("volumeMounts", []).extend(copy.deepcopy(mounts))
        if security:
            container["securityContext"] = copy.deepcopy(security)
        if profile:
            container["command"] = _shell(profile, container["command"][-1])
        if volumes:
            spec.setdefault("volumes", []).extend(copy.deepcopy(volumes))
        if sidecars:
            spec.setdefault("initContainers", []).extend(copy.deepcopy(sidecars))
    return [_fabric_note(hw)] if hw.fabric in runtime()["fabrics"] else []


def _env_profile(fabric: str, facts: dict) -> str | None:
    """The NCCL env script the trainer sources: the pairing table's env_script in the node directory its
    installers fill (node_installers.yaml), at the path where this pod mounts that directory."""
    main_mounts = facts.get("main_mounts", {})
    mounts = {host: main_mounts[name] for name, host in facts.get("host_paths", {}).items() if name in main_mounts}
    return load_node_installers().env_profile(fabric, mounts)


def paired_sidecar_image(fabric: str) -> str:
    """The RxDM image paired with the fabric's NCCL plugin installer: one table for both
    (components/kubernetes/node_installers.yaml), so the node's plugin and the pod's daemon match."""
    image = load_node_installers().sidecar(fabric)
    if image is None:
        raise ValueError(f"node_installers.yaml names no sidecar for fabric {fabric!r}")
    return image


def _defaults(plan: Plan, hw: plan_view.Hardware) -> dict[str, str]:
    table = runtime()["defaults"]
    if plan_view.is_serving(plan):
        if hw.family == "tpu":
            return table["vllm-tpu"]
        return table["vllm"]   # one multi-arch release; the GPU generation picks its row (vllm_serving.default_image)
    if plan_view.framework(plan) == "pytorch":
        return table["pytorch-gpu"]
    return table["jax-tpu" if hw.family == "tpu" else "jax-gpu"]


def _pod_spec(ctx: JobContext, pool: AcceleratorPool, containers: list[dict], volumes: list[dict],
              init: list[dict], restart_policy: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "nodeSelector": dict(pool.node_labels),
        "tolerations": [t.model_dump(exclude_none=True) for t in pool.tolerations],
        "containers": containers,
    }
    if ctx.service_account:
        spec["serviceAccountName"] = ctx.service_account
    if ctx.priority_class:
        spec["priorityClassName"] = ctx.priority_class
    if init:
        spec["initContainers"] = init
    if volumes:
        spec["volumes"] = volumes
    return spec


def _shell(profile: str | None, command: str) -> list[str]:
    script = f"source {profile} && {command}" if profile else command
    return ["/bin/bash", "-c", script]


def generate(plan: Plan, ctx: JobContext, options: JobOptions = JobOptions()) -> GeneratedJob:
    """The manifests for `plan` on the stack described by `ctx`."""
    if options.validate:
        from accel.job.validate import validation_job
        return validation_job(plan, ctx, options.image)
    if plan_view.is_serving(plan):
        return _serving(plan, ctx, options)
    return _training(plan, ctx, options)


def _labels(ctx: JobContext, name: str) -> dict[str, str]:
    return {QUEUE_LABEL: ctx.queue, "app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "accel",
            "accel.dev/stack": ctx.stack}


def training_pod(plan: Plan, ctx: JobContext, name: str, replicated_job: str, image: str, command: str,
                 extra_env: list[dict] | None = None) -> tuple[dict, dict[str, str], list[str]]:
    """(pod template, pod annotations, derivations) of one training host: a whole node each."""
    hw = plan_view.hardware(plan)
    pool = _pool(plan, ctx)
    volumes, mounts, env, annotations, notes = _storage(plan, ctx)
    sidecars, fabric_volumes, fabric_mounts, fabric_env, fabric_annotations, profile = _fabric(hw, ctx)
    annotations.update(fabric_annotations)
    # A variable the caller sets (e.g. --validate's NCCL_DEBUG=INFO) replaces the fabric's default of that name
    # (once: a default equal to the override is not kept beside it).
    overridden = {e["name"] for e in extra_env or []}
    env = [e for e in [JOBSET_NAME_ENV, *env, *fabric_env] if e["name"] not in overridden] + list(extra_env or [])
    if hw.family == "tpu":
        ports = [{"containerPort": p} for p in runtime()["tpu"]["container_ports"]]
        if hw.slices > 1:
            port = runtime()["tpu"]["megascale_port"]
            env += [{"name": "MEGASCALE_COORDINATOR_ADDRESS", "value": f"$(JOBSET_NAME)-{replicated_job}-0-0.$(JOBSET_NAME)"},
                    {"name": "MEGASCALE_NUM_SLICES", "value": str(hw.slices)},
                    JOB_INDEX_ENV,
                    {"name": "MEGASCALE_PORT", "value": str(port)}]
            notes.append(f"JAX multislice: MEGASCALE_* for {hw.slices} slices, coordinator pod 0 of slice 0, "
                         f"port {port} ({runtime()['tpu']['source']})")
    else:
        ports = []
    if hw.family == "tpu":
        generation = hardware.current().tpu_generations.get(hw.tpu_generation)
        if generation is not None and generation.containers_per_vm > 1:
            # GKE allows one container per NUMA node on TPU7x (xpk runs 2, each with half the chips); one
            # container with every chip of the VM is the documented default (Cluster Toolkit's TPU7x job).
            notes.append(f"TPU {generation.name}: one container takes the VM's {hw.chips_per_node} chips; GKE also "
                         f"allows {generation.containers_per_vm} per VM, one per NUMA node ({generation.source.split(',')[1].strip()})")
    container = {"name": "trainer", "image": image, "command": _shell(profile, command),
                 "env": env, "resources": _resources(hw, hw.chips_per_node),
                 "volumeMounts": [*mounts, *fabric_mounts]}
    if ports:
        container["ports"] = ports
    security = _fabric_security(hw)
    if security:
        container["securityContext"] = security
    spec = _pod_spec(ctx, pool, [container], [*volumes, *fabric_volumes], sidecars, "Never")
    if hw.fabric != "none":
        notes.append(_fabric_note(hw))
    return {"metadata": {"labels": {QUEUE_LABEL: ctx.queue}, "annotations": annotations}, "spec": spec}, \
        annotations, notes


def _training(plan: Plan, ctx: JobContext, options: JobOptions) -> GeneratedJob:
    hw = plan_view.hardware(plan)
    name = dns_name(plan.workload.name)
    defaults = _defaults(plan, hw)
    image = options.image or defaults["image"]
    maxtext = maxtext_entry.runs_maxtext(defaults)   # the jax rows run MaxText; pytorch-gpu Megatron-LM
    megatron = hw.family == "gpu" and plan_view.framework(plan) == "pytorch"
    megatron_notes: list[str] = []
    if options.command is not None:
        user_command = options.command
    elif megatron:
        # Megatron-LM's GPT pre-training with the plan's layout, shape and precision (accel/job/megatron_run.py).
        # CHECKPOINT_DIR is a URL where a bucket is not mounted (EKS: s3://, _storage); Megatron saves to a path.
        url = f"s3://{ctx.checkpoint_bucket}/" if ctx.checkpoint_bucket and plan.cloud != "gcp" else None
        user_command, megatron_notes = megatron_run.default_command(plan, url)
    else:
        user_command = maxtext_entry.default_command(defaults) + (model_run.maxtext_training_args(plan)
                                                                   if maxtext else "")
    replicated = replicated_job_name(hw)
    nodes = plan_view.rank_nodes(plan)   # the nodes holding whole replicas; hw.nodes elsewhere
    extra_env: list[dict] = []
    if hw.family == "gpu" and plan_view.framework(plan) == "pytorch":
        command = f"{torchrun_launch(nodes, hw.chips_per_node, replicated)} {torchrun_target(user_command)}"
        extra_env.append(torchrun_node_rank_env())
        launcher = "torchrun (PyTorch)"
    elif hw.family == "gpu":
        if options.command is None and plan.parallelism is not None and context_parallel.sequence_layout(plan):
            # The default MaxText command lays a long sequence's TP x CP x PP replica out (accel/job/context_parallel.py).
            mesh = context_parallel.maxtext_mesh_args(plan.parallelism, True, plan.workload.model.sequence_length,
                                                      context_parallel.plan_batch(plan)[0])
            user_command = f"{user_command} {mesh}"
        port = runtime()["jax_gpu"]["coordinator_port"]
        extra_env += [{"name": "JAX_COORDINATOR_ADDRESS", "value": f"$(JOBSET_NAME)-{replicated}-0-0.$(JOBSET_NAME)"},
                      {"name": "JAX_COORDINATOR_PORT", "value": str(port)},
                      {"name": "NNODES", "value": str(nodes)},
                      {"name": "GPUS_PER_NODE", "value": str(hw.chips_per_node)},
                      {"name": "NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": NODE_RANK_FIELD}}}]
        command = user_command
        launcher = "the JAX distributed launcher (jax.distributed.initialize reads JAX_COORDINATOR_*)"
    else:
        if options.command is None and context_parallel.slice_degrees(plan):
            # The default MaxText command lays a long sequence's ICI tensor x context group out (context_parallel.py).
            context_parallel.check_slice_heads(plan)
            user_command = f"{user_command} {context_parallel.slice_mesh_args(plan)}"
        command = user_command
        launcher = "JAX on TPU (libtpu finds the slice's hosts itself)"
    pod, _, notes = training_pod(plan, ctx, name, replicated, image, command, extra_env)
    if megatron and options.image is None and megatron_run.needs_checkout(user_command):
        notes = [megatron_run.attach_checkout(pod, image), *notes]
    if hw.family == "tpu":
        notes = [*notes, *context_parallel.slice_notes(plan, written=options.command is None)]
    if hw.family == "gpu" and plan.parallelism is not None:
        # Kueue keeps each model replica inside the finest placement level that holds it (accel/job/topology.py).
        request = topology_request(_pool(plan, ctx).topology_levels, hw.machine_type, nodes,
                                   plan.parallelism.group_nodes, plan.parallelism.tensor_nodes or 1,
                                   _clique_nodes(ctx, hw, plan),
                                   ctx.inventory_pool.chips // hw.chips_per_node if ctx.inventory_pool else None)
        pod["metadata"]["annotations"].update(request.annotations)
        notes = [_plan_parallelism_note(plan, nodes * hw.chips_per_node), *request.notes, *notes,
                 # The default Megatron command carries the degrees itself (megatron_notes say so).
                 *([] if megatron_notes else
                   context_parallel.notes(plan.parallelism, plan_view.framework(plan),
                                          written=options.command is None and plan_view.framework(plan) != "pytorch",
                                          long_sequence=context_parallel.sequence_layout(plan),
                                          sequence_length=plan.workload.model.sequence_length,
                                          batch_sequences=context_parallel.plan_batch(plan)[0]
                                          if context_parallel.sequence_layout(plan) else 0))]
    domain, domain_notes = compute_domain.attach([pod], name, plan, ctx.namespace, hw.nodes, ctx.nvlink_domain_gpus)
    notes += domain_notes
    notes += megatron_notes
    if not megatron_notes:
        notes += model_run.training_notes(plan, maxtext, written=options.command is None)
    restarts, why = max_restarts(plan)
    pods_per_slice = nodes if hw.slices == 1 else hw.nodes_per_slice
    if nodes < hw.nodes:
        notes.append(f"ranks on {nodes} of the fleet's {hw.nodes} nodes: the Plan's {plan.parallelism.text()} is "
                     f"{nodes * hw.chips_per_node} GPUs; {hw.nodes - nodes} node(s) hold no whole replica and stay "
                     "idle (a spare for a failed node), since a world size past whole replicas is refused by "
                     "TP x PP sharding")
    annotations = {EXCLUSIVE_TOPOLOGY: "cloud.google.com/gke-nodepool"} if hw.family == "tpu" else {}
    jobset = {
        "apiVersion": JOBSET_API, "kind": "JobSet",
        "metadata": {"name": name, "namespace": ctx.namespace, "labels": _labels(ctx, name),
                     **({"annotations": annotations} if annotations else {})},
        "spec": {
            "failurePolicy": {"maxRestarts": restarts},
            "network": {"enableDNSHostnames": True, "subdomain": name},
            "replicatedJobs": [{
                "name": replicated,
                "replicas": hw.slices,
                "template": {"spec": {"parallelism": pods_per_slice, "completions": pods_per_slice,
                                      "backoffLimit": 0, "completionMode": "Indexed", "template": pod}},
            }],
        },
    }
    derivations = [
        f"hardware: {hw.slices} x {hw.nodes_per_slice} {hw.machine_type} node(s), {hw.chips_per_node} "
        f"{_chip_resource(hw)} each ({hw.accelerator}{', topology ' + hw.topology if hw.topology else ''})",
        f"replicated job '{replicated}': replicas = {hw.slices} (slices), parallelism = {pods_per_slice} "
        "(hosts per slice), one pod per node" + (", exclusive node pool per slice" if hw.family == "tpu" else ""),
        f"node selector and tolerations: the pool labels and taints of {ctx.stack}'s Kueue flavor",
        f"launcher: {launcher}; image {image}",
        f"queue: LocalQueue {ctx.queue} in namespace {ctx.namespace}; priority class {ctx.priority_class}; "
        f"ServiceAccount {ctx.service_account} (cloud identity)",
        f"maxRestarts {restarts}: {why}; {'spot' if hw.spot else hw.provisioning} capacity",
        *notes,
    ]
    return GeneratedJob(name, [*domain, jobset], derivations)


def torchrun_node_rank_env() -> dict:
    """torchrun's node rank variable: the pod's completion index, read from the annotation the Job controller sets
    (a fresh mapping each time, so no two manifests share one object)."""
    return {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": NODE_RANK_FIELD}}}


def torchrun_launch(nodes: int, gpus_per_node: int, replicated: str) -> str:
    """torchrun and its options as every pod of a GPU JobSet starts it (the training job and the multi-node fabric
    check alike): one rank per GPU, node rank = the pod's completion index (torchrun_node_rank_env), rendezvous
    at pod 0 of replica 0 through the JobSet's headless service, on runtime.yaml's port."""
    port = runtime()["torchrun"]["rendezvous_port"]
    return (f"torchrun --nnodes={nodes} --nproc-per-node={gpus_per_node} "
            f"--node-rank=$(JOB_COMPLETION_INDEX) --master-addr=$(JOBSET_NAME)-{replicated}-0-0.$(JOBSET_NAME) "
            f"--master-port={port}")


_INTERPRETER = re.compile(r"^\s*(?:\S*/)?python(?:3(?:\.\d+)?)?(?:\s+|$)")


def torchrun_target(command: str) -> str:
    """What follows torchrun's options for a user command. torchrun runs its positional argument with
    the interpreter itself (`torchrun [options] training_script [args]`, pytorch.org/docs/stable/elastic/
    run.html), so `python train.py` would run `python -u python train.py`: drop the interpreter (the
    rest stays as written, so shell variables still expand), keep `-m pkg` (torchrun's own `-m`), and
    run anything else (a shell wrapper, a binary) with `--no-python`."""
    stripped = _INTERPRETER.sub("", command, count=1)
    if stripped != command:
        return stripped
    first = command.split(maxsplit=1)[0] if command.strip() else ""
    return command if first.endswith(".py") else f"--no-python {command}"


def replicated_job_name(hw: plan_view.Hardware) -> str:
    """Pods are <jobset>-<replicated job>-<slice>-<host>; pod 0 of slice 0 coordinates."""
    return "slice" if hw.family == "tpu" else "workers"


def serving_model(plan: Plan) -> str:
    """The example model named by size alone (policies/architectures/serving_checkpoints.yaml stand_ins), before the
    replica is asked: a GPU job takes stand_in.choose, which holds it to the replica planned."""
    return stand_in.by_size(plan.workload.model.parameters).model


def _server_line(program: str, image: str, model: str, plan: Plan, own_command: bool,
                 named: model_run.NamedModel, stand_in_size: float | None = None) -> str:
    """The derivation line of what the server runs: the workload's named model, or a stand-in said to be one."""
    parameters = plan.workload.model.parameters
    if own_command:
        return (f"server: {program} in {image}; your --command (model.architecture and model.checkpoint are yours "
                "to pass in it)" if named.named else
                f"server: {program} in {image}; model {model} (example for {parameters:.3g} parameters: pass "
                "--command to serve your own)")
    if named.named:
        return f"server: {program} in {image}; model {model}"
    sized = (f"a stand-in sized for {parameters / 1e9:.3g}B parameters" if stand_in_size is None else
             f"a stand-in of {stand_in_size / 1e9:.3g}B parameters for your {parameters / 1e9:.3g}B")
    return (f"server: {program} in {image}; model {model}: {sized}, "
            "not your model (name it with model.architecture or model.checkpoint in the workload, or pass "
            "--command to serve your own)")


def _node_group(pod: dict, command: str, gpu: bool, nodes: int,
                worker_command: str | None = None) -> tuple[dict, dict, str | None]:
    """(leader, worker) pod templates of a multi-node vLLM replica of `nodes` pods, and what the job says of them: as
    vLLM's own LWS example (runtime.yaml serving.multi_node), every pod runs the replica's `vllm serve` over the group
    through vLLM's multiprocessing backend (its size, its rank, the leader's address), the workers headless (no API
    server, no port: `worker_command`, the leader's without its --port, as the example writes the workers'; a
    --command of the user's runs as given on both), /dev/shm memory-backed, the leader's server port probed. A TPU
    group is left as it is."""
    if not gpu:
        return pod, pod, None
    helper = runtime()["serving"]["multi_node"]
    leader, worker = copy.deepcopy(pod), copy.deepcopy(pod)
    leader["spec"]["containers"][0]["command"] = ["/bin/bash", "-c", f"{command} {helper['flags']}"]
    leader["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": SERVING_PORT}, **helper["readiness"]}
    worker["spec"]["containers"][0]["command"] = [
        "/bin/bash", "-c", f"{worker_command or command} {helper['flags']} {helper['worker_flag']}"]
    del worker["spec"]["containers"][0]["ports"]
    for template in (leader, worker):
        spec = template["spec"]
        spec.setdefault("volumes", []).append(
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": helper["shm_size"]}})
        spec["containers"][0].setdefault("volumeMounts", []).append({"name": "dshm", "mountPath": "/dev/shm"})
    return leader, worker, (
        f"nodes: each replica's {nodes} pods run vLLM's multiprocessing backend over the group ({helper['flags']}; "
        f"the leader serves on port {SERVING_PORT}, probed for readiness once its workers have joined; workers "
        f"{helper['worker_flag']}); /dev/shm memory-backed ({helper['shm_size']}); vLLM's LWS example, "
        f"{cite(helper['source'])}")


def _clique_nodes(ctx: JobContext, hw: plan_view.Hardware, plan: Plan) -> int | None:
    """An existing cluster's nodes per NVLink clique (its inventory's domain over its GPUs per node); for a cloud
    pool, the clique the Plan was laid out by where its UltraServers say theirs (gpu.nvlink_clique_nodes: a Capacity
    Block of u-p6e-gb200x72), else None: the hardware table's placement unit."""
    if hw.family != "gpu":
        return None
    if ctx.inventory_pool is None:
        return plan.gpu.nvlink_clique_nodes if plan.gpu is not None else None
    return hardware.current().inventory_clique_nodes(hw.accelerator, hw.chips_per_node, ctx.nvlink_domain_gpus)


def _group_in_one_domain(templates: list[dict], name: str, levels: tuple[str, ...], machine_type: str,
                         nodes: int, clique_nodes: int | None = None) -> str:
    """Annotate a LeaderWorkerSet's leader and worker templates so Kueue places each group (one Workload of two
    PodSets) in one domain of the finest level that holds its `nodes` (A4X: a sub-block, one NVL72 rack): the
    PodSet group of Kueue v0.14.1 (apis/kueue/v1beta1/topology_types.go PodSetGroupName, "a unit of flavor
    assignment and topology domain fitting"; KEP 2724 "co-locate Leader with Workers within the same replica in
    LeaderWorkerSet", both templates naming the group and the same required level). Returns the note."""
    level = replica_level(levels, machine_type, nodes, clique_nodes)
    size = level_nodes(level, machine_type, clique_nodes)
    # No level holds the replica (p6e-gb200's broadest is the 9-node clique): required, it would wait forever.
    annotation, verb = (PREFERRED, "preferred") if size is not None and size < nodes else (REQUIRED, "required")
    for template in templates:
        template["metadata"].setdefault("annotations", {}).update({PODSET_GROUP: name, annotation: level})
    held = f", more than one holds ({size})" if annotation == PREFERRED else ""
    return (f"topology: each replica's leader and workers ({nodes} pods, one per node) {verb} in one {level}{held} "
            f"as one Kueue PodSet group ({PODSET_GROUP}: {name})")


def _serving(plan: Plan, ctx: JobContext, options: JobOptions) -> GeneratedJob:
    hw = plan_view.hardware(plan)
    name = dns_name(plan.workload.name)
    replicas, replica_chips = plan_view.serving_layout(plan)
    defaults = _defaults(plan, hw)
    model = serving_model(plan)
    stand_in_note: str | None = None
    stand_in_size: float | None = None   # said where the stand-in is not the one its size names (it did not fit)
    headless_command: str | None = None   # a multi-node GPU replica's workers' (no --port: _node_group)
    named = model_run.named_model(plan)
    image = options.image or defaults["image"]
    nodes_per_replica = workloads.nodes_per_replica(plan)  # >1: a LeaderWorkerSet (the stack installs LWS)
    if hw.family == "tpu" and nodes_per_replica > serving_hosts.max_hosts():
        # A plan made before choose held TPU serving to one host, or edited by hand: no server that starts there.
        raise tpu_serving.refusal(plan, nodes_per_replica, replica_chips)
    chips_per_pod = min(replica_chips, hw.chips_per_node)
    if hw.family == "gpu":
        # The plan's layout: a replica over two A4X trays is one tensor-parallel group over NVLink (as the serving
        # estimate costs it); elsewhere tensor parallelism in the node and a pipeline stage per node.
        layout = plan.parallelism
        tensor, stages = (layout.tensor, layout.pipeline) if layout is not None else (chips_per_pod, nodes_per_replica)
        if options.command is None:
            model_run.check_vllm_tensor_parallel(plan, tensor)
            if not named.named:
                # No model named: a stand-in whose weights fit the replica planned (accel/job/stand_in.py).
                standing = stand_in.choose(plan, tensor * stages, chip_name(hw.accelerator), stages)
                model, stand_in_note, stand_in_size = standing.model, standing.note, standing.said_size
        served = (model_run.vllm_model(plan, model, custom_image=options.image is not None)
                  if options.command is None else model_run.ServedModel(model, "", []))
        model, model_notes = served.model, [*([stand_in_note] if stand_in_note else []), *served.notes]
        # The vLLM release built for this GPU generation (accel/job/vllm_serving.py), unless --image names one.
        generation = vllm_serving.default_image(hw) if options.image is None else None
        if generation is not None and stages > 1:
            # Stage hand-offs over a fabric whose NCCL plugin must be in the image (EFA): the release's variant.
            generation = dataclasses.replace(generation, image=serving_fabric.pipelined_image(hw.fabric,
                                                                                              generation.image))
        image = generation.image if generation is not None else image
        # The plan's precision: what vLLM loads must be the bytes the replica was sized for.
        precision = (vllm_serving.precision_flags(plan, hw, served, tensor * stages)
                     if options.command is None else PrecisionFlags("", []))
        model_notes = [*model_notes, *precision.notes, *([generation.note] if generation and generation.note else [])]
        parallel = f" --tensor-parallel-size {tensor}" + (f" --pipeline-parallel-size {stages}" if stages > 1 else "")
        default_command = f"vllm serve {model}{served.flags} --port {SERVING_PORT}{precision.flags}{parallel}"
        # A worker of a multi-node replica runs headless, no API server to put on a port: vLLM's LWS example gives
        # its workers no --port (runtime.yaml serving.multi_node).
        headless_command = f"vllm serve {model}{served.flags}{precision.flags}{parallel}"
    elif options.command is None:
        # vLLM TPU over the replica's one host: the model as published, the plan's context and precision.
        tpu_server = vllm_tpu.server(plan, hw, chips_per_pod, SERVING_PORT)
        model, default_command, model_notes = tpu_server.model, tpu_server.command, tpu_server.notes
        stand_in_size = tpu_server.stand_in_size
    else:
        default_command, model_notes = "", []
    command = options.command or default_command
    pool = _pool(plan, ctx)
    volumes, mounts, env, annotations, notes = _storage(plan, ctx)
    container = {"name": "server", "image": image, "command": ["/bin/bash", "-c", command], "env": env,
                 "ports": [{"containerPort": SERVING_PORT, "name": "http"}],
                 "resources": _resources(hw, chips_per_pod, chips_per_pod / hw.chips_per_node),
                 "volumeMounts": mounts}
    if not mounts:
        del container["volumeMounts"]
    labels = _labels(ctx, name)
    selector = {"app.kubernetes.io/name": name}
    pod = {"metadata": {"labels": labels, **({"annotations": annotations} if annotations else {})},
           "spec": _pod_spec(ctx, pool, [container], volumes, [], "Always")}
    if hw.family == "tpu":
        # GKE's vLLM TPU pod: readiness on the port, /dev/shm in memory (accel/job/vllm_tpu.py).
        notes.append(vllm_tpu.pod(container, pod["spec"], SERVING_PORT)
                     + ("" if options.command is None else "; your --command must listen on that port"))
    domain: list[dict[str, Any]] = []
    if nodes_per_replica == 1:
        notes += replica_spread.spread(pod, selector, plan, replicas, chips_per_pod)
        workload = {"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": ctx.namespace, "labels": labels},
                    "spec": {"replicas": replicas, "selector": {"matchLabels": selector}, "template": pod}}
        shape = f"Deployment of {replicas} replica(s), {chips_per_pod} {_chip_resource(hw)} each"
    else:
        leader, worker, group_note = _node_group(pod, command, hw.family == "gpu", nodes_per_replica,
                                                 None if options.command else headless_command)
        if group_note:
            notes.append(group_note)
        if hw.family == "gpu" and stages > 1 and hw.fabric != "none":
            # The estimate costs the stage hand-offs at the fabric's bandwidth (assumptions.yaml pipeline_serving):
            # the pods get the fabric the training job gives the same machine.
            notes += wire_fabric([leader, worker], hw, ctx)
            notes.append(serving_fabric.hand_off_note(hw.fabric, image, options.image is not None))
        # A replica across trays of one NVLink domain (GB200 NVL72): leader and workers claim its IMEX channel.
        domain, domain_notes = compute_domain.attach([leader, worker], name, plan, ctx.namespace, nodes_per_replica,
                                                     ctx.nvlink_domain_gpus)
        notes += domain_notes
        if hw.family == "gpu" and pool.topology_levels:
            notes.append(_group_in_one_domain([leader, worker], name, pool.topology_levels, hw.machine_type,
                                              nodes_per_replica, _clique_nodes(ctx, hw, plan)))
        # A TPU replica is one multi-host slice: one node pool per replica, as the JobSet's slices.
        exclusive = {"annotations": {LWS_EXCLUSIVE_TOPOLOGY: NODE_POOL_LABEL}} if hw.family == "tpu" else {}
        workload = {"apiVersion": LWS_API, "kind": "LeaderWorkerSet",
                    "metadata": {"name": name, "namespace": ctx.namespace, "labels": labels, **exclusive},
                    "spec": {"replicas": replicas,
                             "leaderWorkerTemplate": {"size": nodes_per_replica, "leaderTemplate": leader,
                                                      "workerTemplate": worker}}}
        shape = (f"LeaderWorkerSet of {replicas} replica(s) x {nodes_per_replica} node(s), "
                 f"{chips_per_pod} {_chip_resource(hw)} per pod")
    if nodes_per_replica > 1:
        # Only the leader serves (vLLM's API server; the workers run headless and open no port): the label LWS puts
        # on leaders (lws v0.10.0 leaderworkerset_controller.go l.793-797; its own HPA selector, l.545, "select
        # leaders"), so traffic never reaches a worker (rule lws/service-selects-the-leaders).
        selector = {**selector, LWS_WORKER_INDEX: "0"}
    service = {"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": ctx.namespace, "labels": {"accel.dev/stack": ctx.stack}},
               "spec": {"selector": selector,
                        "ports": [{"name": "http", "port": SERVING_PORT, "targetPort": SERVING_PORT}]}}
    derivations = [
        f"serving: {shape} on {hw.machine_type} ({hw.accelerator}); replicas and chips per replica from the "
        "plan's estimate (replicas, replica_chips)",
        _server_line(shlex.split(command)[0], image, model, plan, options.command is not None, named,
                     stand_in_size),
        *model_notes,
        f"queue: LocalQueue {ctx.queue} in namespace {ctx.namespace}; priority class {ctx.priority_class}; "
        f"ServiceAccount {ctx.service_account}",
        *notes,
    ]
    return GeneratedJob(name, [*domain, workload, service], derivations)


def _plan_parallelism_note(plan: Plan, gpus: int) -> str:
    """The Plan's layout, and where its global batch keeps fewer GPUs busy than the job starts ranks on
    (details.busy_chips, policies/selection/candidates.py batch_idle_detail), what the job does instead: a rank on
    every GPU, the batch rounded up to fill them (the program's batch note says to what); the Plan timed only the
    busy ones, so the run is no slower than planned."""
    busy = plan.estimate.details.get("busy_chips")
    assert plan.parallelism is not None   # a GPU plan's (the caller's branch)
    note = f"parallelism {plan.parallelism.text()} (the Plan's)"
    if isinstance(busy, (int, float)) and 0 < busy < gpus:
        note += (f": its global batch keeps {int(busy):,} of the job's {gpus:,} GPUs busy; the job starts a rank on "
                 "every GPU, so the program's batch must fill them (the default Megatron command rounds it up: batch "
                 "below)")
    return note
