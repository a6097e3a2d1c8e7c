"""What accelerator training needs inside a cluster: drivers' device plugin, Kueue, JobSet, queues.

`AcceleratorStack` runs against any cluster reachable through the Kubernetes provider it gets
in `opts` (one the stack just built, or an existing cluster from a kubeconfig). It installs
the pinned charts of charts.yaml, then declares the Kueue objects that turn the plan's chips
into admission quota: one ResourceFlavor per accelerator pool (node labels + tolerations), a
ClusterQueue whose quota is exactly the provisioned chips, and a LocalQueue in the workload
namespace, plus PriorityClasses and the ServiceAccount bound to the cloud identity.

Pools whose nodes come only through ProvisioningRequests (GKE queued provisioning) get a Kueue
ProvisioningRequestConfig and AdmissionCheck, so Kueue asks GKE for the whole slice before it
admits a workload. Pools with EFA get the AWS EFA device plugin, and their EFA interfaces become
quota too: Kueue admits only workloads whose every requested resource the ClusterQueue covers.

GKE GPUDirect pools (A3 High/Mega TCPX/TCPXO, A3 Ultra RDMA) get one GKENetworkParamSet and one
Network per extra node network (gke_networks.py), so pods can attach the GPU NICs; the stack
exposes the pod annotations that do so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from accel.components.kubernetes.charts import ChartPin, ChartPins, load_chart_pins
from accel.components.kubernetes.names import DNS_SUBDOMAIN, LABEL_KEY, LABEL_VALUE, dns_label_problem
from accel.components.kubernetes.storage_mounts import StorageMount, declare_mounts
from accel.components.kubernetes.gke_networks import (
    GKE_NETWORKING_API,
    GKE_NETWORKING_GROUP,
    GkeNetworkAttachment,
    check_gke_networks,
    pod_network_annotations,
)
from accel.base.errors import ComponentArgsError
from accel.base.mappings import without_none
from accel.components.tags import ResourceTags
from accel.policies import hardware

# Extended resource names and node labels, from the hardware facts table (accel.policies.hardware).
_NAMES = hardware.current().kubernetes
TPU_RESOURCE = _NAMES.tpu_resource
GPU_RESOURCE = _NAMES.gpu_resource
ACCELERATOR_RESOURCES = (TPU_RESOURCE, GPU_RESOURCE)
GKE_TPU_ACCELERATOR_LABEL = _NAMES.gke_tpu_accelerator_label
# The AWS EFA device plugin advertises each node's EFA interfaces under this extended resource.
EFA_RESOURCE = _NAMES.efa_resource
# Kueue's built-in admission check controller for ProvisioningRequests (Kueue "Provisioning Request" docs).
PROVISIONING_REQUEST_CONTROLLER = "kueue.x-k8s.io/provisioning-request"

# PriorityClass values: training above the default 0, preemptible experiments below it.
PRIORITY_LEVELS: dict[str, tuple[int, str]] = {
    "high": (100_000, "Production training runs; Kueue preempts lower priorities for these"),
    "normal": (10_000, "Default priority for training workloads of this stack"),
    "low": (1_000, "Preemptible experiments; first to be evicted when quota is short"),
}


class AcceleratorStackError(ComponentArgsError):
    """Arguments the Kubernetes layer cannot declare; the message names field, value and what is allowed."""


def _check_dns_label(field_name: str, value: str) -> str:
    if (problem := dns_label_problem(field_name, value)) is not None:
        raise AcceleratorStackError(problem)
    return value


class Toleration(BaseModel):
    """A pod toleration for a node taint (core/v1 Toleration, without tolerationSeconds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    operator: Literal["Exists", "Equal"] = "Exists"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"

    @model_validator(mode="after")
    def _value_matches_operator(self) -> "Toleration":
        if self.operator == "Exists" and self.value is not None:
            raise ValueError(f"toleration {self.key!r}: operator Exists takes no value (got {self.value!r})")
        if self.operator == "Equal" and self.value is None:
            raise ValueError(f"toleration {self.key!r}: operator Equal needs a value")
        return self

    def to_kubernetes(self) -> dict[str, str]:
        return without_none({"key": self.key, "operator": self.operator, "effect": self.effect, "value": self.value})


class AcceleratorPool(BaseModel):
    """Chips of one kind on nodes that share labels: becomes one Kueue ResourceFlavor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Flavor name suffix, a DNS label, e.g. tpu-v5p-2x2x2 or h100-80gb")
    resource: Literal[ACCELERATOR_RESOURCES]  # type: ignore[valid-type]
    chips: int = Field(gt=0, description="Chips this pool provisions: the ClusterQueue quota")
    node_labels: dict[str, str] = Field(default_factory=dict, description="Labels every node of the pool carries")
    tolerations: tuple[Toleration, ...] = ()
    accelerator: str | None = Field(None, description="Catalog accelerator id, for labels and reports")
    extra_resources: dict[str, int] = Field(
        default_factory=dict,
        description="Other extended resources the pool's pods request, with the amount the pool provides "
                    "(e.g. vpc.amazonaws.com/efa: interfaces per node x nodes)")
    provisioning_request_class: str | None = Field(
        None, description="The pool's nodes come only through ProvisioningRequests of this class "
                          "(GKE queued provisioning: queued-provisioning.gke.io)")
    topology_levels: tuple[str, ...] = Field(
        (), description="Node labels of the cloud's placement levels, broadest first, ending with the node "
                        "(kubernetes.io/hostname): a Kueue Topology the flavor names, for topology-aware "
                        "scheduling (docs/scale.md); empty: no Topology")

    @field_validator("name")
    @classmethod
    def _name_is_dns_label(cls, value: str) -> str:
        return _check_dns_label("name", value)

    @field_validator("node_labels")
    @classmethod
    def _labels_are_kubernetes_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            if not LABEL_KEY.fullmatch(key):
                raise ValueError(f"node label key {key!r} is not a valid Kubernetes label key")
            if not LABEL_VALUE.fullmatch(value):
                raise ValueError(f"node label {key}={value!r}: values are at most 63 letters, digits, '-', '_', '.'")
        return labels

    @field_validator("extra_resources")
    @classmethod
    def _extra_resources_are_extended_resources(cls, resources: dict[str, int]) -> dict[str, int]:
        for key, amount in resources.items():
            if "/" not in key or not LABEL_KEY.fullmatch(key):
                raise ValueError(f"extra resource {key!r} is not an extended resource name like vpc.amazonaws.com/efa")
            if key in ACCELERATOR_RESOURCES:
                raise ValueError(f"extra resource {key!r}: chips are the pool's `resource` and `chips`")
            if amount < 0:
                raise ValueError(f"extra resource {key}: {amount} cannot be negative")
        return resources

    @field_validator("provisioning_request_class")
    @classmethod
    def _class_is_a_dns_subdomain(cls, value: str | None) -> str | None:
        if value is not None and not DNS_SUBDOMAIN.fullmatch(value):
            raise ValueError(f"provisioning_request_class {value!r} is not a class name like queued-provisioning.gke.io")
        return value

    @model_validator(mode="after")
    def _tpu_pools_name_their_accelerator(self) -> "AcceleratorPool":
        if self.resource == TPU_RESOURCE and GKE_TPU_ACCELERATOR_LABEL not in self.node_labels:
            raise ValueError(
                f"pool {self.name!r}: a google.com/tpu pool needs the node label {GKE_TPU_ACCELERATOR_LABEL} "
                "(TPU nodes exist only on GKE, which sets it)"
            )
        return self


@dataclass(frozen=True)
class CloudIdentity:
    """The ServiceAccount annotation that binds pods to a cloud identity that reads data and writes checkpoints."""

    annotation: str
    value: pulumi.Input[str]

    @classmethod
    def gke_workload_identity(cls, service_account_email: pulumi.Input[str]) -> "CloudIdentity":
        return cls("iam.gke.io/gcp-service-account", service_account_email)

    @classmethod
    def eks_irsa(cls, role_arn: pulumi.Input[str]) -> "CloudIdentity":
        return cls("eks.amazonaws.com/role-arn", role_arn)

    @classmethod
    def aks_workload_identity(cls, client_id: pulumi.Input[str]) -> "CloudIdentity":
        return cls("azure.workload.identity/client-id", client_id)


@dataclass(frozen=True)
class AcceleratorStackArgs:
    """What the Kubernetes layer declares. Names here are the real in-cluster names workloads use."""

    tags: ResourceTags
    pools: Sequence[AcceleratorPool]
    namespace: str = "training"
    service_account: str = "trainer"
    queue: str = "training"
    identity: CloudIdentity | None = None
    # NVIDIA device plugin: for GPU nodes whose image has drivers but whose cluster does not
    # manage the plugin (EKS NVIDIA AMIs, most on-prem). GKE manages both itself.
    install_device_plugin: bool = False
    # GPU Operator: for GPU nodes without drivers (bare on-prem); it brings its own device plugin.
    install_gpu_operator: bool = False
    # AWS EFA device plugin: pods get EFA interfaces only through it. None = when a pool has EFA.
    install_efa_device_plugin: bool | None = None
    # Clusters that already run Kueue / JobSet (a managed add-on, a shared cluster) skip the release.
    install_kueue: bool = True
    install_jobset: bool = True
    # LeaderWorkerSet: for plans whose serving replica spans nodes (workloads.needs_leader_worker_set).
    install_lws: bool = False
    # NVIDIA DRA driver (ComputeDomains, IMEX): for GPU pools whose NVLink domain spans nodes (GB200 NVL72).
    # `dra_driver_root`: where the node keeps the NVIDIA driver (GKE: /home/kubernetes/bin/nvidia; the EKS
    # NVIDIA AMIs: the host root).
    install_dra_driver: bool = False
    dra_driver_root: str = "/"
    # Kueue admits a workload only if the ClusterQueue covers every resource its pods request,
    # so cpu and memory must be covered too. Chips are the binding quota; these never bind, even on the
    # largest cluster a cloud builds (GKE: 15,000 nodes x 224 vCPUs, ~3 TiB each; docs/scale.md).
    cpu_quota: str = "10000000"
    memory_quota: str = "100Pi"
    charts: ChartPins = field(default_factory=load_chart_pins)
    # GKE GPUDirect: the plan's GpuPool.fabric, and one attachment per extra node network of the
    # GPU pool (gpudirect_attachments over GcpNetwork.extra_networks). Empty for other fabrics.
    gpu_fabric: str = "none"
    gke_networks: Sequence[GkeNetworkAttachment] = ()
    # The GPU nodes' CPU architecture (kubernetes.io/arch; the machine type's `arch` in the hardware table):
    # picks the fabric's node installers (A4X is Arm and needs the arm64 gIB build; node_installers.yaml).
    gpu_arch: Literal["amd64", "arm64"] = "amd64"
    # Stores the training pods mount (storage_mounts.py): one static PV + PVC each, in `namespace`.
    storage_mounts: Sequence[StorageMount] = ()

    def __post_init__(self) -> None:
        self.validate()  # the arguments check themselves on construction (one convention, every cloud)

    def validate(self) -> None:
        _check_dns_label("namespace", self.namespace)
        _check_dns_label("service_account", self.service_account)
        _check_dns_label("queue", self.queue)
        if not self.pools:
            raise AcceleratorStackError("pools: at least one accelerator pool is needed to size the ClusterQueue")
        for index, pool in enumerate(self.pools):
            if not isinstance(pool, AcceleratorPool):
                raise AcceleratorStackError(f"pools[{index}]: expected an AcceleratorPool, got {type(pool).__name__}")
        names = [pool.name for pool in self.pools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise AcceleratorStackError(f"pools: names must be unique; repeated: {', '.join(duplicates)}")
        has_gpu = any(pool.resource == GPU_RESOURCE for pool in self.pools)
        if self.install_device_plugin and self.install_gpu_operator:
            raise AcceleratorStackError(
                "install_device_plugin and install_gpu_operator are both true; the GPU Operator ships its own "
                "device plugin, so choose one"
            )
        for flag in ("install_device_plugin", "install_gpu_operator"):
            if getattr(self, flag) and not has_gpu:
                raise AcceleratorStackError(f"{flag}: true, but no pool provides {GPU_RESOURCE}")
        if self.identity is not None and not isinstance(self.identity, CloudIdentity):
            raise AcceleratorStackError(f"identity: expected a CloudIdentity, got {type(self.identity).__name__}")
        has_efa = any(EFA_RESOURCE in pool.extra_resources for pool in self.pools)
        if self.install_efa_device_plugin and not has_efa:
            raise AcceleratorStackError(f"install_efa_device_plugin: true, but no pool provides {EFA_RESOURCE}")
        if self.install_dra_driver and self.charts.nvidia_dra_driver is None:
            raise AcceleratorStackError("install_dra_driver: true, but no nvidia-dra-driver-gpu chart is pinned; "
                                        "pin it in charts.yaml")
        if self.install_dra_driver and not has_gpu:
            raise AcceleratorStackError(f"install_dra_driver: true, but no pool provides {GPU_RESOURCE}")
        if self.install_lws and self.charts.lws is None:
            raise AcceleratorStackError("install_lws: true, but no lws chart is pinned; pin it in charts.yaml")
        if self.efa_device_plugin_wanted and self.charts.aws_efa_device_plugin is None:
            raise AcceleratorStackError(
                f"charts: a pool provides {EFA_RESOURCE} but no aws-efa-k8s-device-plugin chart is pinned; "
                "pin it in charts.yaml or set install_efa_device_plugin: false")
        try:
            check_gke_networks(self.gpu_fabric, list(self.gke_networks))
        except ValueError as error:
            raise AcceleratorStackError(str(error)) from None
        self._check_node_installers()
        claims = [mount.claim for mount in self.storage_mounts]
        for claim in claims:
            _check_dns_label("storage_mounts[].claim", claim)
        if len(set(claims)) != len(claims):
            raise AcceleratorStackError(f"storage_mounts: claim names must be unique; got {claims}")
        if self.gke_networks and not has_gpu:
            raise AcceleratorStackError(f"gke_networks: GPUDirect networks given, but no pool provides {GPU_RESOURCE}")

    def _check_node_installers(self) -> None:
        """The fabric's node installers for `gpu_arch` exist and their node affinity admits every GPU pool: an
        installer that cannot schedule on the pool's nodes leaves them without the NCCL plugin, silently."""
        from accel.components.kubernetes.node_installers import NoInstallerForArch, load_node_installers

        if self.gpu_arch not in ("amd64", "arm64"):
            raise AcceleratorStackError(
                f"gpu_arch: {self.gpu_arch!r} is not a node architecture; allowed: amd64, arm64")
        installers = load_node_installers()
        try:
            installers.for_fabric(self.gpu_fabric, self.gpu_arch)
        except NoInstallerForArch as error:
            raise AcceleratorStackError(f"gpu_arch: {error}") from None
        for pool in self.pools:
            if pool.resource != GPU_RESOURCE:
                continue
            refused = installers.unadmitted(self.gpu_fabric, self.gpu_arch, pool.node_labels)
            if refused:
                raise AcceleratorStackError(
                    f"pools.{pool.name}: the {self.gpu_fabric} node installers for {self.gpu_arch} nodes would never "
                    f"run on its nodes, by their node affinity: {'; '.join(refused)}. Set gpu_arch to the pool's "
                    "architecture, or gpu_fabric to the pool's fabric (components/kubernetes/node_installers.yaml)")

    @property
    def efa_device_plugin_wanted(self) -> bool:
        if self.install_efa_device_plugin is not None:
            return self.install_efa_device_plugin
        return any(EFA_RESOURCE in pool.extra_resources for pool in self.pools)

    def admission_check_name(self, provisioning_class: str) -> str:
        """queued-provisioning.gke.io -> <namespace>-queued-provisioning (cluster-scoped, so namespaced by name)."""
        return f"{self.namespace}-{provisioning_class.split('.', 1)[0]}"

    @property
    def cluster_queue(self) -> str:
        """ClusterQueues are cluster-scoped; one per workload namespace, named after it, never clashes."""
        return self.namespace

    def flavor_name(self, pool: AcceleratorPool) -> str:
        return f"{self.namespace}-{pool.name}"

    def topology_name(self, levels: tuple[str, ...]) -> str:
        """The cluster-scoped Kueue Topology over these placement levels, named after the namespace and cloud."""
        cloud = levels[0].split("/", 1)[0].replace(".", "-") if "/" in levels[0] else "nodes"
        return f"{self.namespace}-{cloud}"[:253]

    def priority_class_name(self, level: str) -> str:
        return f"{self.namespace}-{level}"

    def chip_quota(self) -> dict[str, int]:
        quota: dict[str, int] = {}
        for pool in self.pools:
            quota[pool.resource] = quota.get(pool.resource, 0) + pool.chips
        return quota


class AcceleratorStack(pulumi.ComponentResource):
    """Device plugin or GPU Operator, Kueue, JobSet, and the queues, priorities and identity of one workload."""

    TYPE = "accel:kubernetes:AcceleratorStack"

    def __init__(self, name: str, args: AcceleratorStackArgs, opts: pulumi.ResourceOptions | None = None):
        args.validate()  # before anything registers: a bad pool must not leave half a stack
        super().__init__(self.TYPE, name, None, opts)
        import pulumi_kubernetes as k8s  # lazily: only stacks with a Kubernetes layer pay for it

        self._k8s = k8s
        self._name = name
        self._args = args
        self._labels = args.tags.kubernetes_labels()
        child = pulumi.ResourceOptions(parent=self)

        self.releases: dict[str, Any] = {}
        self.chart_versions: dict[str, str] = {}
        if args.install_gpu_operator:
            self.releases["gpu-operator"] = self._release("gpu-operator", args.charts.gpu_operator,
                                                          values={"driver": {"enabled": True}})
        if args.install_device_plugin:
            self.releases["nvidia-device-plugin"] = self._release(
                "nvidia-device-plugin", args.charts.nvidia_device_plugin, values=self._device_plugin_values())
        if args.efa_device_plugin_wanted:
            assert args.charts.aws_efa_device_plugin is not None  # validate() guarantees it
            self.releases["aws-efa-k8s-device-plugin"] = self._release(
                "aws-efa-k8s-device-plugin", args.charts.aws_efa_device_plugin,
                values={"tolerations": self._addon_tolerations(
                    [p for p in args.pools if EFA_RESOURCE in p.extra_resources])})
        if args.install_dra_driver:
            assert args.charts.nvidia_dra_driver is not None  # validate() guarantees it
            gpu_pools = [p for p in args.pools if p.resource == GPU_RESOURCE]
            self.releases["nvidia-dra-driver-gpu"] = self._release(
                "nvidia-dra-driver-gpu", args.charts.nvidia_dra_driver, values={
                    # ComputeDomains only: the device plugin keeps serving nvidia.com/gpu (Cluster Toolkit A4X).
                    "nvidiaDriverRoot": args.dra_driver_root,
                    "resources": {"gpus": {"enabled": False}},
                    "kubeletPlugin": {"tolerations": self._addon_tolerations(gpu_pools)},
                })
        if args.install_jobset:
            self.releases["jobset"] = self._release("jobset", args.charts.jobset)
        if args.install_lws:
            assert args.charts.lws is not None  # validate() guarantees it
            self.releases["lws"] = self._release("lws", args.charts.lws)
        if args.install_kueue:
            # Kueue enables its JobSet and LWS integrations only if their CRDs exist when it starts.
            after = [self.releases[r] for r in ("jobset", "lws") if r in self.releases]
            self.releases["kueue"] = self._release("kueue", args.charts.kueue, values=self._kueue_values(),
                                                   depends_on=after)
        kueue_release = self.releases.get("kueue")  # None on clusters that already run Kueue
        kueue_ready = pulumi.ResourceOptions(parent=self, depends_on=[kueue_release] if kueue_release else [])

        self.namespace_resource = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": args.namespace, "labels": self._labels},
            opts=child,
        )
        # The name is fixed by args, so it is written plainly (known in preview too) and the
        # ordering comes from depends_on.
        in_namespace = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace_resource])

        self.storage_volumes = declare_mounts(k8s, name, args.namespace, args.storage_mounts, self._labels,
                                              in_namespace)
        self.claim_names = [mount.claim for mount in args.storage_mounts]

        annotations = {args.identity.annotation: args.identity.value} if args.identity else {}
        self.service_account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata={"name": args.service_account, "namespace": args.namespace,
                      "labels": self._labels, "annotations": annotations},
            opts=in_namespace,
        )

        self.priority_classes = {
            level: k8s.scheduling.v1.PriorityClass(
                f"{name}-priority-{level}",
                metadata={"name": args.priority_class_name(level), "labels": self._labels},
                value=value,
                global_default=False,
                preemption_policy="PreemptLowerPriority",
                description=description,
                opts=child,
            )
            for level, (value, description) in PRIORITY_LEVELS.items()
        }

        api_version = args.charts.kueue_api_version
        # One Kueue Topology per distinct set of placement levels; the flavors of those pools name it.
        self.topologies = {
            levels: k8s.apiextensions.CustomResource(
                f"{name}-topology-{index}",
                api_version=api_version,
                kind="Topology",
                metadata={"name": args.topology_name(levels), "labels": self._labels},
                spec={"levels": [{"nodeLabel": label} for label in levels]},
                opts=kueue_ready,
            )
            for index, levels in enumerate(dict.fromkeys(p.topology_levels for p in args.pools if p.topology_levels))
        }
        self.flavors = [
            k8s.apiextensions.CustomResource(
                f"{name}-flavor-{pool.name}",
                api_version=api_version,
                kind="ResourceFlavor",
                metadata={"name": args.flavor_name(pool), "labels": self._labels},
                spec=self._flavor_spec(pool, args),
                opts=pulumi.ResourceOptions.merge(kueue_ready, pulumi.ResourceOptions(
                    depends_on=[self.topologies[pool.topology_levels]] if pool.topology_levels else [])),
            )
            for pool in args.pools
        ]
        self.admission_checks = self._provisioning_admission_checks(kueue_ready)
        self.gke_network_param_sets, self.gke_network_objects = self._gke_networks()
        self.node_installers = self._gpudirect_node_installers()
        self.cluster_queue = k8s.apiextensions.CustomResource(
            f"{name}-cluster-queue",
            api_version=api_version,
            kind="ClusterQueue",
            metadata={"name": args.cluster_queue, "labels": self._labels},
            spec=self._cluster_queue_spec(),
            opts=pulumi.ResourceOptions.merge(
                kueue_ready, pulumi.ResourceOptions(depends_on=[*self.flavors, *self.admission_checks])),
        )
        self.local_queue = k8s.apiextensions.CustomResource(
            f"{name}-local-queue",
            api_version=api_version,
            kind="LocalQueue",
            metadata={"name": args.queue, "namespace": args.namespace, "labels": self._labels},
            spec={"clusterQueue": args.cluster_queue},
            opts=pulumi.ResourceOptions.merge(
                kueue_ready, pulumi.ResourceOptions(depends_on=[self.cluster_queue, self.namespace_resource])),
        )

        self.namespace = args.namespace
        self.service_account_name = args.service_account
        self.local_queue_name = args.queue
        self.cluster_queue_name = args.cluster_queue
        self.flavor_names = [args.flavor_name(pool) for pool in args.pools]
        self.priority_class_names = {level: args.priority_class_name(level) for level in PRIORITY_LEVELS}
        self.chip_quota = args.chip_quota()
        self.gke_network_names = [attachment.name for attachment in args.gke_networks]
        # Copy into a training pod template's metadata.annotations to give it every GPU NIC.
        self.pod_network_annotations = pod_network_annotations(args.gke_networks)
        self.register_outputs({
            "namespace": self.namespace,
            "serviceAccount": self.service_account_name,
            "localQueue": self.local_queue_name,
            "clusterQueue": self.cluster_queue_name,
            "resourceFlavors": self.flavor_names,
            "priorityClasses": self.priority_class_names,
            "chipQuota": self.chip_quota,
            "charts": self.chart_versions,
            "gkeNetworks": self.gke_network_names,
            "nodeInstallers": list(self._node_installer_names()),
            "persistentVolumeClaims": self.claim_names,
            "podNetworkAnnotations": self.pod_network_annotations,
        })

    def _release(self, release: str, pin: ChartPin, values: Mapping[str, Any] | None = None,
                 depends_on: Sequence[pulumi.Resource] = ()):
        helm = self._k8s.helm.v3
        self.chart_versions[release] = pin.version
        return helm.Release(
            f"{self._name}-{release}",
            name=release,  # a fixed release name: `helm list` and upgrades find it
            chart=pin.chart,
            version=pin.version,
            repository_opts=helm.RepositoryOptsArgs(repo=pin.repo) if pin.repo else None,
            namespace=pin.namespace,
            create_namespace=True,
            values=dict(values or {}),
            timeout=600,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )

    def _kueue_values(self) -> dict[str, Any]:
        """The chart's manager configuration with the integrations accel's workloads need (charts.yaml), and
        the pod integration kept off the system namespaces and the controllers' own (kueue plain_pods.md)."""
        import yaml

        config = dict(self._args.charts.kueue_manager_config)
        if not config:
            return {}
        system = {"kube-system", self._args.charts.kueue.namespace,
                  *(pin.namespace for pin in (self._args.charts.jobset, self._args.charts.lws) if pin)}
        system |= {pin.namespace for name, pin in (("gpu-operator", self._args.charts.gpu_operator),
                                                   ("nvidia-device-plugin", self._args.charts.nvidia_device_plugin))
                   if name in self.releases}
        config["managedJobsNamespaceSelector"] = {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": sorted(system)}]}
        return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}

    @staticmethod
    def _addon_tolerations(pools: Sequence[AcceleratorPool]) -> list[dict[str, str]]:
        """A node daemon must tolerate the taints of the pools it serves (e.g. nvidia.com/gpu)."""
        tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
        for pool in pools:
            for toleration in pool.tolerations:
                if toleration.to_kubernetes() not in tolerations:
                    tolerations.append(toleration.to_kubernetes())
        return tolerations

    def _device_plugin_values(self) -> dict[str, Any]:
        gpu_pools = [p for p in self._args.pools if p.resource == GPU_RESOURCE]
        values: dict[str, Any] = {"tolerations": self._addon_tolerations(gpu_pools)}
        # The chart's default affinity wants Node Feature Discovery labels, which plain EKS and
        # on-prem nodes lack; pin the daemonset to the GPU pools' own labels when all have some.
        if gpu_pools and all(p.node_labels for p in gpu_pools):
            terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": [v]}
                                           for k, v in sorted(p.node_labels.items())]}
                     for p in gpu_pools]
            values["affinity"] = {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
        # A pool placed by its NVLink clique (p6e-gb200; an inventory saying nvlink_clique_label) needs the label GPU
        # Feature Discovery writes, nvidia.com/gpu.clique: Kueue leaves a node without it out of its Topology. The
        # chart runs GFD, with its Node Feature Discovery dependency, when gfd.enabled (nvidia-device-plugin 0.17.1
        # values.yaml:105-106, Chart.yaml:10-15; its labeler internal/lm/imex.go:39 in that release), on the same
        # affinity and tolerations as the plugin. NFD's worker publishes GFD's labels from each GPU node, so it
        # tolerates the pools' taints too: its default tolerates only nvidia.com/gpu=present (GKE's value).
        clique = hardware.current().kubernetes.nvlink_topology_levels[0]
        if any(clique in p.topology_levels for p in gpu_pools):
            values["gfd"] = {"enabled": True}
            values["nfd"] = {"worker": {"tolerations": values["tolerations"]}}
        return values

    @staticmethod
    def _flavor_spec(pool: AcceleratorPool, args: "AcceleratorStackArgs") -> dict[str, Any]:
        spec: dict[str, Any] = {"nodeLabels": dict(pool.node_labels)}
        if pool.topology_levels:
            spec["topologyName"] = args.topology_name(pool.topology_levels)
        if pool.tolerations:
            spec["tolerations"] = [t.to_kubernetes() for t in pool.tolerations]
        return spec

    def _provisioning_admission_checks(self, kueue_ready: pulumi.ResourceOptions) -> list[Any]:
        """One ProvisioningRequestConfig + AdmissionCheck per provisioning class the pools need.

        A GKE queued-provisioning pool scales up only for ProvisioningRequests; without this
        check Kueue would admit workloads whose pods then wait for nodes that never come.
        """
        k8s, args, name = self._k8s, self._args, self._name
        api_version = args.charts.kueue_api_version
        checks = []
        for provisioning_class in sorted({p.provisioning_request_class for p in args.pools
                                          if p.provisioning_request_class}):
            check_name = args.admission_check_name(provisioning_class)
            managed = sorted({p.resource for p in args.pools if p.provisioning_request_class == provisioning_class})
            config = k8s.apiextensions.CustomResource(
                f"{name}-{check_name}-config",
                api_version=api_version,
                kind="ProvisioningRequestConfig",
                metadata={"name": check_name, "labels": self._labels},
                spec={"provisioningClassName": provisioning_class, "managedResources": managed},
                opts=kueue_ready,
            )
            checks.append(k8s.apiextensions.CustomResource(
                f"{name}-{check_name}-check",
                api_version=api_version,
                kind="AdmissionCheck",
                metadata={"name": check_name, "labels": self._labels},
                spec={"controllerName": PROVISIONING_REQUEST_CONTROLLER,
                      "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                     "name": check_name}},
                opts=pulumi.ResourceOptions.merge(kueue_ready, pulumi.ResourceOptions(depends_on=[config])),
            ))
        return checks

    def _gke_networks(self) -> tuple[list[Any], list[Any]]:
        """Per GPUDirect node network: a GKENetworkParamSet (VPC, subnet, device mode) and a Device Network.

        Both are cluster-scoped and carry the same name, the one pod annotations reference.
        """
        k8s, name = self._k8s, self._name
        param_sets, networks = [], []
        for attachment in self._args.gke_networks:
            params = k8s.apiextensions.CustomResource(
                f"{name}-gke-params-{attachment.name}",
                api_version=GKE_NETWORKING_API,
                kind="GKENetworkParamSet",
                metadata={"name": attachment.name, "labels": self._labels},
                spec={"vpc": attachment.vpc, "vpcSubnet": attachment.subnet, "deviceMode": attachment.device_mode},
                opts=pulumi.ResourceOptions(parent=self),
            )
            networks.append(k8s.apiextensions.CustomResource(
                f"{name}-gke-network-{attachment.name}",
                api_version=GKE_NETWORKING_API,
                kind="Network",
                metadata={"name": attachment.name, "labels": self._labels},
                spec={"type": "Device",
                      "parametersRef": {"group": GKE_NETWORKING_GROUP, "kind": "GKENetworkParamSet",
                                        "name": attachment.name}},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[params]),
            ))
            param_sets.append(params)
        return param_sets, networks

    def _node_installer_names(self) -> tuple[str, ...]:
        from accel.components.kubernetes.node_installers import load_node_installers

        return load_node_installers().for_fabric(self._args.gpu_fabric, self._args.gpu_arch)

    def _gpudirect_node_installers(self) -> list[Any]:
        """The DaemonSets NCCL needs on a GKE GPUDirect fabric (node_installers.yaml), pinned manifests.

        Cluster-level node software: without it NCCL falls back to the primary NIC. A training pod
        still carries the fabric's own sidecar/env (the workload's concern, see `accel job`).
        """
        from accel.components.kubernetes.node_installers import load_node_installers

        installers = load_node_installers()
        return [
            self._k8s.yaml.v2.ConfigFile(
                f"{self._name}-{installers.resource_name(installer)}",
                file=installers.url(installer),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for installer in installers.for_fabric(self._args.gpu_fabric, self._args.gpu_arch)
        ]

    def _cluster_queue_spec(self) -> dict[str, Any]:
        args = self._args
        accelerator_resources = [r for r in ACCELERATOR_RESOURCES if any(p.resource == r for p in args.pools)]
        extra_resources = sorted({r for p in args.pools for r in p.extra_resources})
        # One resource group: Kueue lets a resource appear in only one group, and cpu/memory are
        # requested by every pod, so all flavors share a group; each flavor holds only its own chips
        # (and its own EFA interfaces), and lists every covered resource in the same order.
        flavors = []
        for pool in args.pools:
            resources = [{"name": "cpu", "nominalQuota": args.cpu_quota},
                         {"name": "memory", "nominalQuota": args.memory_quota}]
            resources += [{"name": r, "nominalQuota": pool.chips if r == pool.resource else 0}
                          for r in accelerator_resources]
            resources += [{"name": r, "nominalQuota": pool.extra_resources.get(r, 0)} for r in extra_resources]
            flavors.append({"name": args.flavor_name(pool), "resources": resources})
        spec: dict[str, Any] = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": args.namespace}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Never"},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", *accelerator_resources, *extra_resources],
                                "flavors": flavors}],
        }
        gated = sorted({p.provisioning_request_class for p in args.pools if p.provisioning_request_class})
        if gated:
            # Per flavor: only the queued pools wait for a ProvisioningRequest.
            spec["admissionChecksStrategy"] = {"admissionChecks": [
                {"name": args.admission_check_name(c),
                 "onFlavors": [args.flavor_name(p) for p in args.pools if p.provisioning_request_class == c]}
                for c in gated]}
        return spec
