"""The one table of hardware facts (facts.toml beside this module) and its derived inverses.

    from accel.policies import hardware
    facts = hardware.current()
    facts.gcp_gpu_machines["a3-highgpu-8g"].gpus         # 8
    facts.chip_of_machine("p5.48xlarge").name            # "H100"

Standard library only (tomllib, dataclasses; accel.base.derived_cache, which keeps the checked
table in the user's cache, is too): the CrossGuard pack imports this with nothing but
pulumi-policy installed. The table's plain records (a chip, a machine type, a limit) are NamedTuples:
immutable values like a frozen dataclass, but defining one generates and compiles no methods, ~0.3 ms
each of every `accel choose` (docs/choose.md, "Start-up"); a record with caches or derived copies
(TpuGeneration, CollectiveFabric, HardwareFacts) stays a dataclass. Consumers read facts through `current()` at call time, never copy them
into module constants, so `using(load_facts(path))` swaps the whole table (tests prove every
consumer reads it from here). A malformed table raises HardwareFactsError naming the file, the
entry and what is wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from accel.base.derived_cache import cached
from accel.base.errors import AccelError

BUNDLED_FACTS = Path(__file__).resolve().parent / "facts.toml"
POLICIES_DIR = Path(__file__).resolve().parent.parent  # the decision code: a cached table is invalid once it changes
FAMILIES = ("tpu", "gpu")
VM_TYPE_COUNTS = {"tensorcores", "chips"}


# How the clouds and images spell a CPU architecture -> how Kubernetes names it (the kubernetes.io/arch node label,
# GOARCH): Compute Engine and Kubernetes say amd64, EC2 says x86_64, Linux (uname -m) aarch64.
KUBERNETES_ARCH_SPELLINGS = MappingProxyType({"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64"})


def kubernetes_arch_name(spelling: str | None) -> str | None:
    """An architecture as Kubernetes names it (amd64 | arm64) from any of its spellings; None if unknown."""
    return KUBERNETES_ARCH_SPELLINGS.get(str(spelling).lower()) if spelling else None


class HardwareFactsError(AccelError, ValueError):
    """The hardware facts table is missing, not TOML, or holds an entry that is wrong (exit 1: the
    table ships with accel; a user who edits it sees the entry and the rule it breaks)."""


class Source(NamedTuple):
    """A document the table cites ([sources]): its title and the date its figures were read."""

    title: str
    as_of: str


class Chip(NamedTuple):
    """An accelerator chip ([chips]): peak throughput, memory, interconnect, whether a workload may ask for it."""

    id: str
    name: str                        # what users are shown: "H100", "TPU v5p"
    family: str                      # tpu | gpu
    peak_bf16_tflops: float          # dense, per chip
    peak_fp8_tflops: float | None
    hbm_gb: float                    # decimal GB
    hbm_gbps: float
    tensorcores: int                 # TensorCores per chip (what v4-N / v5p-N count)
    interconnect: str                # ici-3d | ici-2d | nvlink | pcie
    compute_capability: str | None   # CUDA compute capability (GPUs): same value, same kernels
    selectable: bool                 # a workload may ask for it; the catalog prices it
    source: str
    # Stated where a generation differs by them (Blackwell Ultra's gain over Blackwell is FP4 and power, not
    # bf16/fp8): the dense FP4 peak per chip and the GPU's maximum power. No estimate reads them yet.
    peak_fp4_tflops: float | None = None
    tdp_watts: int | None = None
    # The devices JAX shows per chip (1 but where each TensorCore is its own device: TPU7x's 2; v4 and v5p join
    # their two as one megacore device), what vLLM TPU's tensor parallelism and MaxText's per-device batch and ICI
    # axes count; `jax_devices_source` its [sources] entry, '' where 1 goes without saying (one TensorCore).
    jax_devices_per_chip: int = 1
    jax_devices_source: str = ""


@dataclass(frozen=True, eq=False)   # hashed by identity: a swapped table gets fresh caches
class TpuGeneration:
    """A TPU generation: how its slices, machine types, GKE labels and runtime are named and sized."""

    name: str                        # v4 | v5e | v5p | v6e
    accelerator: str                 # chip id
    dimensions: int                  # 2 or 3
    cores_per_chip: int              # what the vm-type number counts per chip
    type_prefix: str                 # v4 | v5litepod | v5p | v6e
    machine_prefix: str              # ct4p | ct5lp | ct5p | ct6e
    config_type: str                 # TPU VM acceleratorConfig.type: V4, V5LITE_POD, ...
    gke_accelerator: str             # cloud.google.com/gke-tpu-accelerator value
    multi_host_machine_type: str
    single_host_machine_types: Mapping[str, str]   # topology -> machine type
    runtime_version: str
    max_chips_per_slice: int
    max_dimension: int
    base_topologies: tuple[str, ...]  # 3D: the shapes below the 4-multiples; 2D: every topology
    flex_start: bool
    source: str
    dcn_gbps_per_chip: float = 0.0    # data-centre network bandwidth per chip (multislice all-reduce)
    dcn_source: str = ""
    placement: str = "compact"        # multi-host pools: compact (tpu_topology) | workload-policy (TPU7x)
    gke_min_version: str = ""         # the oldest GKE version that runs it ("" : any supported)
    containers_per_vm: int = 1        # containers a job runs per VM (TPU7x: one per NUMA node)
    frameworks: tuple[str, ...] = ()  # the XLA frameworks it runs, when not all of them (TPU7x: no TensorFlow)

    @property
    def tpu_vm_api(self) -> bool:
        """Whether the Cloud TPU VM API offers it (an acceleratorConfig type is known)."""
        return bool(self.config_type)

    @property
    def machine_types(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.single_host_machine_types.values(), self.multi_host_machine_type)))


class TpuMachine(NamedTuple):
    """A TPU VM machine type: its generation, chips, vCPUs and memory per host."""

    name: str
    generation: str
    chips: int
    vcpus: int
    memory_gb: float
    source: str


class Fabric(NamedTuple):
    """A GPU node's scale-out network fabric: the extra node networks a pool on it attaches."""

    name: str
    cloud: str                       # gcp | aws | any
    extra_networks: int
    extra_networks_per_gpu: int
    source: str

    def network_count(self, gpus_per_node: int) -> int:
        """Additional node networks a GKE pool on this fabric attaches."""
        return self.extra_networks + self.extra_networks_per_gpu * gpus_per_node


class MachineDomain(NamedTuple):
    """A machine type whose own collective fabric differs from its chip's ([collective_fabrics.<chip>.machines]):
    its NVLink domain (a2-megagpu-16g joins its 16 A100 over NVSwitch where an A100 board joins 8), or its
    scale-out bandwidth per GPU (a3-highgpu-8g's GPUDirect-TCPX: 4 x 200 Gb/s for 8 H100, not the chip's 400 each).
    None: the chip's figure holds."""
    machine_type: str
    domain_chips: int | None
    source: str
    scale_out_gbps: float | None = None


@dataclass(frozen=True)
class CollectiveFabric:
    """What a chip's collectives cross (the expert-parallel all-to-all, issue #30): its scale-up domain
    (the NVLink domain of a GPU; 0 for a TPU, whose domain is the slice's ICI), the scale-up bandwidth per
    chip and direction, and the scale-out (data-centre network) bandwidth per chip beyond the domain. The
    table states a GPU's NVLink domain here only, once per chip and once more for a machine whose own domain
    differs (`machines`): whether it spans machines (nvlink_spans_nodes) derives from it."""
    id: str
    domain_chips: int                # chips on one NVLink domain; 0 = the TPU slice
    scale_up_gbytes_per_s: float     # per chip, one direction
    scale_out_gbps: float            # per chip, beyond the domain
    source: str
    machines: tuple[MachineDomain, ...] = ()   # machine types whose own domain differs from the chip's

    def machine_domain(self, machine_type: str | None) -> MachineDomain | None:
        """The machine type's own NVLink domain where the table states one, else None (the chip's applies)."""
        return next((m for m in self.machines if m.machine_type == machine_type), None) if machine_type else None


class GcpGpuMachine(NamedTuple):
    """A Compute Engine GPU machine type: its GPUs, local SSDs, fabric, boot disk, vCPUs and memory."""

    name: str
    chip: str
    gke_accelerator: str             # guest accelerator type and cloud.google.com/gke-accelerator value
    gpus: int
    local_ssds: int                  # bundled count, or the most that can attach
    bundled_ssd: bool
    fabric: str
    boot_disk_type: str
    vcpus: int
    memory_gb: float
    source: str
    arch: str = "amd64"                       # amd64 | arm64 (A4X: Grace)
    accelerator_topology: str | None = None   # workload policy topology of an NVLink rack (A4X: 1x72)

    @property
    def accelerator(self) -> str:
        return self.gke_accelerator


class AwsGpuInstance(NamedTuple):
    """An EC2 GPU instance type: its GPUs, EFA network cards, vCPUs, memory and how it is sold."""

    name: str
    chip: str
    gpus: int
    efa_cards: int                   # network cards that can each carry one EFA interface
    efa_only_secondaries: bool
    fabric: str                      # efa: the scale-out fabric multi-node training uses, else none
    vcpus: int
    memory_gb: float
    source: str
    arch: str = "x86_64"                      # x86_64 | arm64 (p6e: Grace)
    ultraserver_sizes: tuple[int, ...] = ()   # sold only as UltraServers of these many instances
    efa_secondary_device_index: int = 1       # device index of the EFA interface on cards past the first
    # The UltraServer types it is sold as, EC2's ultraserverType names with their instances (sizes derive from them).
    ultraserver_types: tuple[tuple[str, int], ...] = ()
    # The network card of the first EFA interface: 0, or 1 where card 0 is ENA only (p6-b300: 17 cards, 16 carry EFA),
    # so the primary interface is a plain ENA one and the EFA interfaces sit on cards 1..efa_cards.
    efa_first_card: int = 0

    @property
    def accelerator(self) -> str:
        return self.chip

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    def can_stand_in_for(self, primary: "AwsGpuInstance", chips: Mapping[str, Chip]) -> bool:
        """A spot alternate: same GPU count, chips that run the same kernels, at least as much memory per GPU."""
        mine, theirs = chips[self.chip], chips[primary.chip]
        return (self.gpus == primary.gpus and mine.compute_capability == theirs.compute_capability
                and mine.hbm_gb >= theirs.hbm_gb)


class KubernetesNames(NamedTuple):
    """The names GKE and EKS give accelerators: node labels, resources, taints, topology levels."""

    gke_accelerator_label: str
    gke_tpu_accelerator_label: str
    gke_tpu_topology_label: str
    gpu_resource: str
    gpu_present_label: str
    tpu_resource: str
    efa_resource: str
    gpu_taint_key: str
    gke_gpu_taint_value: str
    eks_gpu_taint_value: str
    gke_topology_levels: tuple[str, ...]   # placement labels on GKE GPU nodes, broadest first (Kueue Topology)
    eks_topology_levels: tuple[str, ...]   # EKS network-node layers, broadest first, then the node
    nvlink_topology_levels: tuple[str, ...]  # a GB200 pool placed by its NVLink partition (nvidia.com/gpu.clique)
    single_node_levels: tuple[str, ...]    # levels of those lists that one node fills (host, node)
    source: str


class Limit(NamedTuple):
    """A documented cloud limit ([limits]): its value and whether a quota request can raise it."""

    name: str
    value: int
    adjustable: bool
    source: str


class PlacementUnit(NamedTuple):
    """The placement unit of a machine type: the topology level the cloud reports it as, and its nodes."""

    machine_type: str
    level: str                       # the Kueue Topology level (node label) the cloud reports the unit as
    nodes: int | None                # nodes in one unit, where the cloud documents a fixed size
    source: str


class EniLimit(NamedTuple):
    """The network interfaces of an EC2 instance type: ENIs on card 0 and IPv4 addresses per ENI."""

    instance_type: str
    enis: int                        # ENIs on network card 0 (the only card the VPC CNI uses)
    ipv4_per_eni: int
    source: str


@dataclass(frozen=True, eq=False)
class HardwareFacts:
    """The checked hardware facts table (policies/hardware/facts.toml), as the rest of accel reads it."""

    version: str
    path: str
    sources: Mapping[str, Source]
    chips: Mapping[str, Chip]
    tpu_generations: Mapping[str, TpuGeneration]
    tpu_machines: Mapping[str, TpuMachine]
    fabrics: Mapping[str, Fabric]
    gcp_gpu_machines: Mapping[str, GcpGpuMachine]
    aws_gpu_instances: Mapping[str, AwsGpuInstance]
    kubernetes: KubernetesNames
    limits: Mapping[str, Limit]
    placement_units: Mapping[str, PlacementUnit] = field(default_factory=dict)
    aws_eni_limits: Mapping[str, EniLimit] = field(default_factory=dict)
    collective_fabrics: Mapping[str, CollectiveFabric] = field(default_factory=dict)
    _inverse: dict[str, Any] = field(default_factory=dict, repr=False)

    # -- derived inverses ------------------------------------------------------------------
    @property
    def selectable_chips(self) -> tuple[str, ...]:
        """Chip ids a workload may name, in table order."""
        return tuple(c.id for c in self.chips.values() if c.selectable)

    @property
    def chip_names(self) -> dict[str, str]:
        return {c.id: c.name for c in self.chips.values()}

    def generation_of_chip(self, chip: str) -> TpuGeneration | None:
        return self._generations_by_chip().get(chip)

    def generations_by_chip(self) -> Mapping[str, TpuGeneration]:
        """TPU chip id -> its generation, read-only (worked out once: a search reads it for every offering)."""
        return MappingProxyType(self._generations_by_chip())

    def _generations_by_chip(self) -> dict[str, TpuGeneration]:
        return self._index("gen_by_chip", lambda: {g.accelerator: g for g in self.tpu_generations.values()})

    def generation_of_machine_prefix(self, prefix: str) -> TpuGeneration | None:
        """ct5p -> v5p: the generation whose GKE machine types start with this prefix."""
        return self._index("gen_by_prefix",
                           lambda: {g.machine_prefix: g for g in self.tpu_generations.values()}).get(prefix)

    def generation_of_type_prefix(self, prefix: str) -> TpuGeneration | None:
        """v5litepod -> v5e: the generation of a Cloud TPU accelerator type prefix."""
        return self._index("gen_by_type", lambda: {g.type_prefix: g for g in self.tpu_generations.values()}).get(prefix)

    def generation_of_config_type(self, config_type: str) -> TpuGeneration | None:
        """V5LITE_POD -> v5e: the generation of a TPU VM acceleratorConfig.type."""
        return self._index("gen_by_config",
                           lambda: {g.config_type: g for g in self.tpu_generations.values()}).get(config_type)

    def generation_of_tpu_machine(self, machine_type: str) -> TpuGeneration | None:
        machine = self.tpu_machines.get(machine_type)
        return self.tpu_generations[machine.generation] if machine else None

    def gpu_machine(self, machine_type: str) -> GcpGpuMachine | AwsGpuInstance | None:
        """A GPU machine type of either cloud."""
        return self.gcp_gpu_machines.get(machine_type) or self.aws_gpu_instances.get(machine_type)

    def chip_of_machine(self, machine_type: str) -> Chip | None:
        """The chip any machine type in the table carries (GPU or TPU), else None."""
        gpu = self.gpu_machine(machine_type)
        if gpu is not None:
            return self.chips[gpu.chip]
        gen = self.generation_of_tpu_machine(machine_type)
        return self.chips[gen.accelerator] if gen else None

    def gke_accelerators(self) -> dict[str, str]:
        """cloud.google.com/gke-accelerator value -> chip id."""
        return self._index("chip_by_gke", lambda: {m.gke_accelerator: m.chip for m in self.gcp_gpu_machines.values()})

    def machine_types_of_chip(self, chip: str) -> dict[str, tuple[str, ...]]:
        """Per cloud, the machine types that carry this chip, in table order."""
        if (gen := self.generation_of_chip(chip)) is not None:
            return {"gcp": gen.machine_types}
        return {"gcp": tuple(m.name for m in self.gcp_gpu_machines.values() if m.chip == chip),
                "aws": tuple(m.name for m in self.aws_gpu_instances.values() if m.chip == chip)}

    def node_step(self, machine_type: str) -> int:
        """Nodes a fleet of this GPU machine type comes in multiples of: a whole UltraServer (p6e-gb200: 9) or
        a whole NVLink domain its workload policy places (A4X: 18, the placement unit); else 1."""
        aws = self.aws_gpu_instances.get(machine_type)
        if aws is not None and aws.ultraserver_sizes:
            return min(aws.ultraserver_sizes)
        gcp = self.gcp_gpu_machines.get(machine_type)
        unit = self.placement_units.get(machine_type)
        if gcp is not None and gcp.accelerator_topology and unit is not None and unit.nodes:
            return unit.nodes
        return 1

    def sold_only_as_ultraservers(self, machine_type: str) -> bool:
        """Whether EC2 sells this machine type only as whole UltraServers (its `ultraserver_types`: p6e-gb200,
        p6e-gb300): what the UltraServer capacity modes' applicability row reads (`sold_as: ultraservers`)."""
        aws = self.aws_gpu_instances.get(machine_type)
        return aws is not None and bool(aws.ultraserver_sizes)

    def nvlink_domain_unit_nodes(self, machine_type: str, clique_nodes: int | None = None) -> int:
        """Nodes of one NVLink domain that spans machines and that the cloud places as a unit a job can require: the
        machine's documented placement unit ([placement_units], its Kueue level) when the domain spans machines and
        the unit lies inside one domain (A4X: an 18-node sub-block, the 72 GPUs of one NVL72 rack; p6e-gb200: the
        nvidia.com/gpu.clique GPU Feature Discovery labels, one UltraServer, 9 nodes: the smaller of the two it is
        sold as). `clique_nodes`: the pool's own NVLink clique, where its nodes carry that label and say how many
        nodes one holds (an inventory with nvlink_clique_label: inventory_clique_nodes), which its Kueue Topology
        then places by. 1 otherwise: the domain is the node, or no level is documented to hold exactly one domain
        (a Kubernetes inventory without the label names no rack), so a group that spanned nodes could straddle two
        domains. The one unit the layout (policies/parallelism.py) and the job's placement (accel/job/topology.py)
        both read."""
        if clique_nodes is not None:
            return clique_nodes
        unit = self.placement_units.get(machine_type)
        machine = self.gpu_machine(machine_type)
        if unit is None or not unit.nodes or machine is None or not self.nvlink_spans_nodes(machine_type):
            return 1
        domain = self.scale_up_domain_chips(machine.chip, machine_type) or 0
        return unit.nodes if unit.nodes * machine.gpus <= domain else 1

    def ultraserver_instances(self, machine_type: str, ultraserver_type: str) -> int | None:
        """Instances of one UltraServer of EC2 type `ultraserver_type` (u-p6e-gb200x72: 18) built of `machine_type`;
        None where the machine is not sold as that type."""
        aws = self.aws_gpu_instances.get(machine_type)
        return dict(aws.ultraserver_types).get(ultraserver_type) if aws is not None else None

    def inventory_clique_nodes(self, chip: str, gpus_per_node: int, stated_domain_gpus: int | None) -> int | None:
        """Nodes of one NVLink clique of an existing cluster's inventory of `chip` (its stated nvlink_domain_gpus, else
        the chip's domain in [collective_fabrics], over its GPUs per node: GB200 NVL72, 72 / 4 = 18; racks
        partitioned into cliques of 36 GPUs: 9); None where the domain is the node. GPU Feature Discovery labels one
        clique per NVLink partition (nvidia-gfd-clique), so where the nodes carry the label this is the unit they
        are placed and laid out by (nvlink_domain_unit_nodes)."""
        domain = stated_domain_gpus or self.scale_up_domain_chips(chip) or 0
        return domain // gpus_per_node if gpus_per_node and domain > gpus_per_node else None

    def pool_topology_levels(self, machine_type: str, cloud_levels: tuple[str, ...]) -> tuple[str, ...]:
        """The Kueue Topology levels of a pool of this machine type: [kubernetes] nvlink_topology_levels where its
        placement unit is a level of those (p6e-gb200: the NVLink clique, then the node), else `cloud_levels`."""
        unit = self.placement_units.get(machine_type)
        nvlink = self.kubernetes.nvlink_topology_levels
        return nvlink if unit is not None and unit.level in nvlink else cloud_levels

    def nvlink_spans_nodes(self, machine_type: str) -> bool:
        """Whether a cloud machine type's NVLink domain joins several machines (nvlink_domain_spans_nodes of
        the chip it carries); False for a machine type the table does not list."""
        machine = self.gpu_machine(machine_type)
        return machine is not None and self.nvlink_domain_spans_nodes(machine.chip, machine_type)

    def nvlink_domain_spans_nodes(self, chip: str, machine_type: str | None = None,
                                  stated_domain_chips: int | None = None) -> bool:
        """Whether nodes of `chip` (on `machine_type` when it is a machine the table states a domain of; a
        Kubernetes inventory's nodes are named by chip alone) share an NVLink domain across machines (GB200
        NVL72: 72 GPUs over 18 nodes of 4), so a job spanning nodes claims an IMEX channel through an NVIDIA
        ComputeDomain. The domain is the chip's scale-up domain ([collective_fabrics], the one place the table
        states it, or the machine's own there); it spans machines when it is larger than the largest machine of
        that chip, not merely larger than this one: a3-highgpu-1g's H100 is one GPU of an 8-GPU board whose
        NVLink never leaves the board. A TPU (domain 0: the slice) or a PCIe GPU (none) never does.
        `stated_domain_chips`: what an existing cluster's inventory says of its own nodes' domain (accel:cluster
        inventory `nvlink_domain_gpus`: a GB200 NVL4 board's 4), in place of the table's."""
        domain = stated_domain_chips if stated_domain_chips is not None else \
            self.scale_up_domain_chips(chip, machine_type)
        most = self._index("most_gpus_per_machine", self._most_gpus_per_machine).get(chip)
        # A chip no machine of the table carries (h800, a published run's part) has no machine to outgrow: no.
        return bool(domain) and most is not None and domain > most

    def inventory_chips_per_node(self, chip: str) -> int:
        """Chips per node of an existing cluster's inventory that does not say (accel:cluster inventory
        `gpus_per_node` unset): a multi-host TPU VM's chips; for a GPU whose NVLink domain spans nodes, the compute
        tray every machine type of it is (GB200: 4, as a4x-highgpu-4g and p6e-gb200.36xlarge; no GB200 node holds
        8); else eight GPUs, a typical training node (an assumption: say gpus_per_node when yours differ)."""
        generation = self.generation_of_chip(chip)
        if generation is not None:
            return self.tpu_machines[generation.multi_host_machine_type].chips
        if self.nvlink_domain_spans_nodes(chip):
            return self._index("most_gpus_per_machine", self._most_gpus_per_machine)[chip]
        return 8

    def _most_gpus_per_machine(self) -> dict[str, int]:
        """Chip id -> the most GPUs any machine type of either cloud carries of it."""
        most: dict[str, int] = {}
        for machine in (*self.gcp_gpu_machines.values(), *self.aws_gpu_instances.values()):
            most[machine.chip] = max(most.get(machine.chip, 0), machine.gpus)
        return most

    def collective_fabric(self, chip: str, machine_type: str | None = None) -> CollectiveFabric | None:
        """What the chip's collectives cross ([collective_fabrics]), on `machine_type` when given: its own NVLink
        domain where the table states one (a2-megagpu-16g: 16 A100), the chip's otherwise; None for a chip the
        table gives none."""
        found = self.collective_fabrics.get(chip)
        own = found.machine_domain(machine_type) if found is not None else None
        if own is None:
            return found
        if own.domain_chips is not None:
            found = replace(found, domain_chips=own.domain_chips)
        if own.scale_out_gbps is not None:
            found = replace(found, scale_out_gbps=own.scale_out_gbps, source=own.source)
        return found

    def collective_fabrics_key(self) -> tuple:
        """The [collective_fabrics] entries as one hashable value (worked out once): what a cache of anything fitted
        over them (the whole-run model's MoE factor) is keyed by beside its other inputs."""
        return self._index("collective_fabrics_key", lambda: tuple(sorted(self.collective_fabrics.items())))

    def scale_up_domain_chips(self, chip: str, machine_type: str | None = None) -> int | None:
        """Chips one scale-up domain of `chip` (on `machine_type`, when given) joins, what an expert-parallel
        group is spread over (the estimator's all-to-all and the Plan's layout read it here): its NVLink domain,
        the machine's own where the table states one, 0 for a TPU (the slice is the domain), None for a chip
        without a collective fabric in the table."""
        found = self.collective_fabric(chip, machine_type)
        return found.domain_chips if found is not None else None

    def kubernetes_arch(self, machine_type: str | None) -> str | None:
        """The kubernetes.io/arch of a GPU machine type's nodes (amd64 | arm64: A4X and p6e-gb200 are Arm, Grace
        hosts), whichever way its cloud spells it (EC2's x86_64 is amd64); None for a machine the table does not
        list. The one derivation the node pools (their installers and Arm toleration) and the job's checks read."""
        machine = self.gpu_machine(machine_type) if machine_type else None
        return kubernetes_arch_name(machine.arch) if machine is not None else None

    def is_arm(self, machine_type: str) -> bool:
        """Arm (Grace) hosts: A4X, p6e-gb200. GKE taints its Arm nodes kubernetes.io/arch=arm64:NoSchedule."""
        return self.kubernetes_arch(machine_type) == "arm64"

    def fabric_network_count(self, fabric: str, gpus_per_node: int) -> int:
        return self.fabrics[fabric].network_count(gpus_per_node)

    def limit(self, name: str) -> int:
        return self.limits[name].value

    def _index(self, key: str, build: Any) -> Any:
        if key not in self._inverse:
            self._inverse[key] = build()
        return self._inverse[key]


# ------------------------------------------------------------------------------ loading


class _Entry:
    """One table of the TOML file, remembering where it is for error messages."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise HardwareFactsError(f"{where}: expected a table, got {type(data).__name__}")
        self.data, self.where, self.used = data, where, set()

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., *, positive: bool = False) -> Any:
        self.used.add(key)
        if key not in self.data:
            if default is ...:
                raise HardwareFactsError(f"{self.where}.{key}: missing")
            return default
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            wanted = " or ".join(k.__name__ for k in kinds)
            raise HardwareFactsError(f"{self.where}.{key}: expected {wanted}, got {value!r}")
        if positive and value <= 0:
            raise HardwareFactsError(f"{self.where}.{key}: must be positive, got {value!r}")
        return value

    def one_of(self, key: str, allowed: Any, default: Any = ...) -> Any:
        value = self.get(key, str, default)
        if value not in allowed:
            raise HardwareFactsError(f"{self.where}.{key}: {value!r} is not one of {', '.join(sorted(allowed))}")
        return value

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise HardwareFactsError(f"{self.where}: unknown key {unknown[0]!r}")


def _tables(data: dict[str, Any], name: str, where: str, *, shared: tuple[str, ...] = ()) -> dict[str, _Entry]:
    section = data.get(name)
    if not isinstance(section, dict) or not section:
        raise HardwareFactsError(f"{where}: [{name}] is missing or empty")
    return {key: _Entry(value, f"{where}: {name}.{key}") for key, value in section.items() if key not in shared}


def _source(entry: _Entry, section_source: str | None, sources: Mapping[str, Source]) -> str:
    source = entry.get("source", str, section_source)
    if not source or len(source) < 3:
        raise HardwareFactsError(f"{entry.where}.source: every fact names its source")
    for key in (s.strip() for s in source.replace(":", ",").split(",")):
        if key in sources:
            break
    else:
        if not source.startswith(("estimate", "GKE", "Cloud TPU", "NVIDIA", "AWS", "Amazon", "no ")):
            raise HardwareFactsError(f"{entry.where}.source: {source!r} names no known source id "
                                     f"({', '.join(sorted(sources))}) and is not a citation")
    return source


def _optional_float(entry: _Entry, key: str) -> float | None:
    """A positive number the entry may leave out (None then)."""
    value = entry.get(key, (int, float), None, positive=True) if key in entry.data else None
    return float(value) if value is not None else None


def _source_named(key: str, sources: Mapping[str, Source], where: str, field: str = "dcn_source") -> str:
    """A source id of [sources], with its title: '<id>: <title>'."""
    if key not in sources:
        raise HardwareFactsError(f"{where}.{field}: {key!r} is not one of [sources] ({', '.join(sorted(sources))})")
    return f"{key}: {sources[key].title}"


def _jax_devices(entry: _Entry, sources: Mapping[str, Source]) -> tuple[int, str]:
    """(jax_devices_per_chip, its source) of a [chips] entry: stated, with a source, for every chip of more than one
    TensorCore (one device per core, or the cores joined as one megacore device), 1 where the chip has one."""
    cores = entry.data.get("tensorcores")
    if "jax_devices_per_chip" not in entry.data:
        if isinstance(cores, int) and cores > 1 and entry.data.get("family") == "tpu":
            raise HardwareFactsError(f"{entry.where}.jax_devices_per_chip: a TPU chip of {cores} TensorCores shows "
                                     f"JAX either one device (megacore) or {cores}; state which, with "
                                     "jax_devices_source")
        return 1, ""
    devices = entry.get("jax_devices_per_chip", int, positive=True)
    if isinstance(cores, int) and devices not in (1, cores):
        raise HardwareFactsError(f"{entry.where}.jax_devices_per_chip: {devices} is neither 1 (megacore) nor the "
                                 f"chip's {cores} TensorCores")
    return devices, _source_named(entry.get("jax_devices_source", str), sources, entry.where, "jax_devices_source")


def load_facts(path: str | Path | None = None) -> HardwareFacts:
    """Read and check a facts table: the bundled one (None) or a copy (tests, a fork's own table)."""
    import tomllib  # only when the table is read, not when it comes from the derived-data cache

    file = Path(path) if path is not None else BUNDLED_FACTS
    try:
        with file.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise HardwareFactsError(f"{file}: cannot read the hardware facts table ({error.strerror or error})") from None
    except tomllib.TOMLDecodeError as error:
        raise HardwareFactsError(f"{file}: not valid TOML ({error})") from None
    return _build(data, str(file))


def _build(data: dict[str, Any], where: str) -> HardwareFacts:
    known = {"version", "sources", "chips", "tpu", "tpu_machines", "fabrics", "gcp_gpu_machines",
             "aws_gpu_instances", "kubernetes", "limits", "placement_units", "aws_eni_limits",
             "collective_fabrics"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise HardwareFactsError(f"{where}: unknown section [{unknown[0]}]")
    sources = {}
    for key, entry in _tables(data, "sources", where).items():
        sources[key] = Source(entry.get("title", str), entry.get("as_of", str))
        entry.done()

    chips: dict[str, Chip] = {}
    for key, e in _tables(data, "chips", where).items():
        fp8 = e.get("peak_fp8_tflops", (int, float), None, positive=True) if "peak_fp8_tflops" in e.data else None
        chips[key] = Chip(key, e.get("name", str), e.one_of("family", FAMILIES),
                          float(e.get("peak_bf16_tflops", (int, float), positive=True)),
                          float(fp8) if fp8 is not None else None,
                          float(e.get("hbm_gb", (int, float), positive=True)),
                          float(e.get("hbm_gbps", (int, float), positive=True)),
                          e.get("tensorcores", int, positive=True), e.get("interconnect", str),
                          e.get("compute_capability", str, None), e.get("selectable", bool, False), _source(e, None, sources),
                          _optional_float(e, "peak_fp4_tflops"), e.get("tdp_watts", int, None, positive=True),
                          *_jax_devices(e, sources))
        if chips[key].peak_fp4_tflops is not None and fp8 is not None and chips[key].peak_fp4_tflops < fp8:
            raise HardwareFactsError(f"{e.where}.peak_fp4_tflops: {chips[key].peak_fp4_tflops:g} is below the chip's "
                                     f"fp8 peak {fp8:g}; a dense FP4 peak is at least the FP8 one")
        if "nvlink_domain_gpus" in e.data:
            raise HardwareFactsError(f"{e.where}.nvlink_domain_gpus: a chip's NVLink domain is stated once, as "
                                     f"[collective_fabrics.{key}] domain_chips (with its scale-up bandwidth); "
                                     "remove it here")
        e.done()

    def chip_ref(entry: _Entry, family: str) -> str:
        chip = entry.get("chip", str)
        if chip not in chips:
            raise HardwareFactsError(f"{entry.where}.chip: no chip {chip!r} in [chips]; known: {', '.join(chips)}")
        if chips[chip].family != family:
            raise HardwareFactsError(f"{entry.where}.chip: {chip!r} is a {chips[chip].family}, not a {family}")
        return chip

    generations: dict[str, TpuGeneration] = {}
    for key, e in _tables(data, "tpu", where).items():
        chip = chip_ref(e, "tpu")
        dimensions = e.get("dimensions", int)
        if dimensions not in (2, 3):
            raise HardwareFactsError(f"{e.where}.dimensions: TPU slices are 2D or 3D, got {dimensions}")
        counts = e.one_of("vm_type_counts", VM_TYPE_COUNTS)
        topologies = e.get("base_topologies" if dimensions == 3 else "topologies", list)
        single = e.get("single_host_machine_types", dict)
        generations[key] = TpuGeneration(
            key, chip, dimensions, chips[chip].tensorcores if counts == "tensorcores" else 1,
            e.get("type_prefix", str), e.get("machine_prefix", str), e.get("config_type", str, ""),
            e.get("gke_accelerator", str), e.get("multi_host_machine_type", str), dict(single),
            e.get("runtime_version", str, ""), e.get("max_chips_per_slice", int, positive=True),
            e.get("max_dimension", int, positive=True), tuple(topologies), e.get("flex_start", bool, True),
            _source(e, None, sources), float(e.get("dcn_gbps_per_chip", (int, float), positive=True)),
            _source_named(e.get("dcn_source", str), sources, e.where),
            e.one_of("placement", {"compact", "workload-policy"}, "compact"), e.get("gke_min_version", str, ""),
            e.get("containers_per_vm", int, 1, positive=True), tuple(e.get("frameworks", list, [])))
        if generations[key].config_type and not generations[key].runtime_version:
            raise HardwareFactsError(f"{e.where}.runtime_version: a generation the TPU VM API offers needs its runtime")
        e.done()

    section = data.get("tpu_machines") or {}
    tpu_machines: dict[str, TpuMachine] = {}
    for key, e in _tables(data, "tpu_machines", where, shared=("source",)).items():
        gen = next((g for g in generations.values() if key.startswith(g.machine_prefix + "-")), None)
        if gen is None:
            raise HardwareFactsError(f"{e.where}: no [tpu] generation has machine prefix {key.split('-')[0]!r}")
        tpu_machines[key] = TpuMachine(key, gen.name, e.get("chips", int, positive=True),
                                       e.get("vcpus", int, positive=True),
                                       float(e.get("memory_gb", (int, float), positive=True)),
                                       _source(e, section.get("source"), sources))
        e.done()
    for gen in generations.values():
        missing = [m for m in gen.machine_types if m not in tpu_machines]
        if missing:
            raise HardwareFactsError(f"{where}: tpu.{gen.name} uses machine type {missing[0]!r}, "
                                     "which [tpu_machines] does not describe")

    fabrics: dict[str, Fabric] = {}
    for key, e in _tables(data, "fabrics", where).items():
        fabrics[key] = Fabric(key, e.one_of("cloud", {"gcp", "aws", "any"}), e.get("extra_networks", int),
                              e.get("extra_networks_per_gpu", int, 0), _source(e, None, sources))
        e.done()

    section = data.get("gcp_gpu_machines") or {}
    gcp: dict[str, GcpGpuMachine] = {}
    for key, e in _tables(data, "gcp_gpu_machines", where, shared=("source",)).items():
        fabric = e.one_of("fabric", set(fabrics), "none")
        if fabrics[fabric].cloud not in ("gcp", "any"):
            raise HardwareFactsError(f"{e.where}.fabric: {fabric!r} is not a Google Cloud fabric")
        gcp[key] = GcpGpuMachine(key, chip_ref(e, "gpu"), e.get("gke_accelerator", str),
                                 e.get("gpus", int, positive=True), e.get("local_ssds", int),
                                 e.get("bundled_ssd", bool, False), fabric, e.get("boot_disk_type", str, "pd-balanced"),
                                 e.get("vcpus", int, positive=True), float(e.get("memory_gb", (int, float), positive=True)),
                                 _source(e, section.get("source"), sources), e.one_of("arch", {"amd64", "arm64"}, "amd64"),
                                 e.get("accelerator_topology", str, None))
        e.done()

    section = data.get("aws_gpu_instances") or {}
    aws: dict[str, AwsGpuInstance] = {}
    for key, e in _tables(data, "aws_gpu_instances", where, shared=("source",)).items():
        efa_cards = e.get("efa_cards", int)
        fabric = e.one_of("fabric", set(fabrics), "none")
        if fabrics[fabric].cloud not in ("aws", "any") or (fabric == "efa" and not efa_cards):
            raise HardwareFactsError(f"{e.where}.fabric: {fabric!r} needs an AWS fabric (efa needs efa_cards > 0)")
        aws[key] = AwsGpuInstance(key, chip_ref(e, "gpu"), e.get("gpus", int, positive=True), efa_cards,
                                  e.get("efa_only_secondaries", bool, False), fabric, e.get("vcpus", int, positive=True),
                                  float(e.get("memory_gb", (int, float), positive=True)),
                                  _source(e, section.get("source"), sources), e.one_of("arch", {"x86_64", "arm64"}, "x86_64"),
                                  (), e.get("efa_secondary_device_index", int, 1))
        types = e.get("ultraserver_types", dict, {})
        if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in types.values()):
            raise HardwareFactsError(f"{e.where}.ultraserver_types: EC2 UltraServer type names, each with its "
                                     "positive instance count")
        ordered = tuple(sorted(types.items(), key=lambda item: item[1]))
        aws[key] = aws[key]._replace(ultraserver_types=ordered, ultraserver_sizes=tuple(n for _, n in ordered))
        if aws[key].efa_secondary_device_index not in (0, 1):
            raise HardwareFactsError(f"{e.where}.efa_secondary_device_index: 0 or 1")
        aws[key] = aws[key]._replace(efa_first_card=e.get("efa_first_card", int, 0))
        if aws[key].efa_first_card not in (0, 1) or (aws[key].efa_first_card and not efa_cards):
            raise HardwareFactsError(f"{e.where}.efa_first_card: 0, or 1 where card 0 is ENA only and efa_cards > 0 "
                                     "(the EFA interfaces then take cards 1..efa_cards)")
        e.done()

    k8s = _Entry(data.get("kubernetes"), f"{where}: kubernetes")
    levels = ("gke_topology_levels", "eks_topology_levels", "nvlink_topology_levels", "single_node_levels")
    names: dict[str, Any] = {f: k8s.get(f, str) for f in KubernetesNames._fields
                             if f != "source" and f not in levels}
    for key in levels:
        value = k8s.get(key, list)
        if not value or not all(isinstance(label, str) and label for label in value):
            raise HardwareFactsError(f"{where}: kubernetes.{key}: a non-empty list of node label keys")
        names[key] = tuple(value)
    kubernetes = KubernetesNames(**names, source=_source(k8s, None, sources))
    k8s.done()

    limits = {}
    for key, e in _tables(data, "limits", where).items():
        limits[key] = Limit(key, e.get("value", int, positive=True), e.get("adjustable", bool, False),
                            _source(e, None, sources))
        e.done()

    units: dict[str, PlacementUnit] = {}
    for key, e in (_tables(data, "placement_units", where) if "placement_units" in data else {}).items():
        levels = (kubernetes.gke_topology_levels if key in gcp else
                  kubernetes.eks_topology_levels if key in aws else None)
        if levels is None:
            raise HardwareFactsError(f"{e.where}: {key!r} is neither in [gcp_gpu_machines] nor in [aws_gpu_instances]")
        level = e.one_of("level", set(levels[:-1]) | set(kubernetes.nvlink_topology_levels[:-1]))
        nodes = e.get("nodes", int, None, positive=True) if "nodes" in e.data else None
        units[key] = PlacementUnit(key, level, nodes, _source(e, None, sources))
        e.done()
    section = data.get("aws_eni_limits") or {}
    eni_limits: dict[str, EniLimit] = {}
    for key, e in (_tables(data, "aws_eni_limits", where, shared=("source",)) if section else {}).items():
        eni_limits[key] = EniLimit(key, e.get("enis", int, positive=True), e.get("ipv4_per_eni", int, positive=True),
                                   _source(e, section.get("source"), sources))
        e.done()
    collective: dict[str, CollectiveFabric] = {}
    for key, e in (_tables(data, "collective_fabrics", where) if "collective_fabrics" in data else {}).items():
        fabric = CollectiveFabric(key, e.get("domain_chips", int),
                                  float(e.get("scale_up_gbytes_per_s", (int, float), positive=True)),
                                  float(e.get("scale_out_gbps", (int, float), positive=True)),
                                  _source(e, None, sources))
        _check_scale_up_domain(fabric, chips.get(key), e.where)
        machines = e.get("machines", dict, {})
        collective[key] = replace(fabric, machines=tuple(
            _machine_domain(fabric, _Entry(value, f"{e.where}.machines.{name}"), name, {**gcp, **aws}, sources)
            for name, value in machines.items()))
        e.done()
    # A unit placed by its NVLink clique is a machine whose NVLink domain joins machines (its chip's domain is
    # larger than the machine): elsewhere the node is the whole domain and GPU Feature Discovery labels no clique.
    for unit in units.values():
        machine = gcp.get(unit.machine_type) or aws.get(unit.machine_type)
        fabric = collective.get(machine.chip) if machine is not None else None
        if unit.level in kubernetes.nvlink_topology_levels and (fabric is None or fabric.domain_chips <= machine.gpus):
            raise HardwareFactsError(f"{where}: placement_units.{unit.machine_type}.level: {unit.level} is an NVLink "
                                     f"clique, but {unit.machine_type}'s NVLink domain does not join machines "
                                     "([collective_fabrics])")
    # A selectable chip whose collectives cross a scale-up domain (a TPU slice's ICI, an NVLink domain) states it:
    # without an entry a mixture of experts' all-to-all on it was costed as free, "within one node".
    unstated = [c.id for c in chips.values() if c.selectable and _has_scale_up_domain(c) and c.id not in collective]
    if unstated:
        raise HardwareFactsError(f"{where}: chips.{unstated[0]} is selectable but has no [collective_fabrics."
                                 f"{unstated[0]}] (domain_chips, scale_up_gbytes_per_s, scale_out_gbps, source): the "
                                 "expert-parallel all-to-all of a mixture of experts reads it")
    return HardwareFacts(str(data.get("version") or "unversioned"), where, sources, chips, generations,
                         tpu_machines, fabrics, gcp, aws, kubernetes, limits, units, eni_limits, collective)


def _machine_domain(fabric: CollectiveFabric, e: _Entry, machine_type: str,
                    machines: Mapping[str, GcpGpuMachine | AwsGpuInstance],
                    sources: Mapping[str, Source]) -> MachineDomain:
    """A machine type's own NVLink domain or scale-out bandwidth ([collective_fabrics.<chip>.machines.<machine
    type>]): a GPU machine of the table that carries this chip, a positive count of GPUs or Gb/s per GPU that
    differs from the chip's (the same figure would state one fact twice), at least one of them, and its source."""
    machine = machines.get(machine_type)
    if machine is None:
        raise HardwareFactsError(f"{e.where}: {machine_type!r} is neither in [gcp_gpu_machines] nor in "
                                 "[aws_gpu_instances]")
    if machine.chip != fabric.id:
        raise HardwareFactsError(f"{e.where}: {machine_type} carries {machine.chip}, not {fabric.id}; state its "
                                 f"domain under [collective_fabrics.{machine.chip}.machines]")
    if "domain_chips" not in e.data and "scale_out_gbps" not in e.data:
        raise HardwareFactsError(f"{e.where}: states neither domain_chips nor scale_out_gbps: a machine entry states "
                                 "what of its chip's fabric differs on it")
    domain = None
    if "domain_chips" in e.data:
        if not fabric.domain_chips:
            raise HardwareFactsError(f"{e.where}: {fabric.id} has no NVLink domain (domain_chips 0) for a machine "
                                     "to differ from")
        domain = e.get("domain_chips", int, positive=True)
        if domain == fabric.domain_chips:
            raise HardwareFactsError(f"{e.where}.domain_chips: {domain} is {fabric.id}'s own domain_chips; state a "
                                     "machine's NVLink domain only where it differs (remove the entry)")
    scale_out = None
    if "scale_out_gbps" in e.data:
        scale_out = float(e.get("scale_out_gbps", (int, float), positive=True))
        if scale_out == fabric.scale_out_gbps:
            raise HardwareFactsError(f"{e.where}.scale_out_gbps: {scale_out:g} is {fabric.id}'s own scale_out_gbps; "
                                     "state a machine's scale-out bandwidth only where it differs (remove it)")
    own = MachineDomain(machine_type, domain, _source(e, None, sources), scale_out)
    e.done()
    return own


def _has_scale_up_domain(chip: Chip) -> bool:
    """A TPU (its slice's ICI) or an NVLink GPU: a chip with a scale-up domain [collective_fabrics] describes."""
    return chip.family == "tpu" or chip.interconnect == "nvlink"


def _check_scale_up_domain(fabric: CollectiveFabric, chip: Chip | None, where: str) -> None:
    """A collective fabric's domain against its chip: a TPU's is its slice (0), an NVLink GPU's a positive count
    of GPUs, and a GPU without NVLink (PCIe) has no scale-up domain to state. A fabric of a part that is not in
    [chips] (h800: an export H100 some published runs used) is checked for a count only."""
    domain = fabric.domain_chips
    if chip is None:
        problem = "" if domain >= 0 else "a count of chips, or 0 for a TPU slice"
    elif chip.family == "tpu":
        problem = "" if domain == 0 else f"{chip.name} is a TPU: its scale-up domain is the slice (ICI), state 0"
    elif chip.interconnect != "nvlink":
        problem = (f"{chip.name}'s interconnect is {chip.interconnect!r}: no NVLink domain to state "
                   "(remove the entry)")
    else:
        problem = "" if domain > 0 else f"{chip.name} is an NVLink GPU: state the GPUs one NVLink domain joins"
    if problem:
        raise HardwareFactsError(f"{where}.domain_chips: {domain!r}: {problem}")


_BUNDLED: HardwareFacts | None = None
_ACTIVE: list[HardwareFacts] = []


def current() -> HardwareFacts:
    """The table in use: the bundled one unless `using(...)` swapped in another."""
    global _BUNDLED
    if _ACTIVE:
        return _ACTIVE[-1]
    if _BUNDLED is None:
        # Checked once and kept in the user's cache while facts.toml and the code are unchanged
        # (parsing and checking the table costs a choose ~20 ms; reading it back ~2 ms).
        _BUNDLED = cached("hardware-facts", [BUNDLED_FACTS], load_facts, code=[POLICIES_DIR])
    return _BUNDLED


def bundled_in_use() -> bool:
    """Whether consumers read the bundled table (no `using(...)` block is active): only what is
    derived from the bundled table may be cached under the bundled files' key."""
    return not _ACTIVE


@contextlib.contextmanager
def using(facts: HardwareFacts) -> Iterator[HardwareFacts]:
    """Within the block every consumer reads `facts` (the loader's injection point)."""
    _ACTIVE.append(facts)
    try:
        yield facts
    finally:
        _ACTIVE.remove(facts)


__all__ = [
    "AwsGpuInstance", "BUNDLED_FACTS", "Chip", "CollectiveFabric", "Fabric", "GcpGpuMachine", "HardwareFacts", "HardwareFactsError",
    "KubernetesNames", "Limit", "MachineDomain", "PlacementUnit", "Source", "TpuGeneration", "TpuMachine", "bundled_in_use", "current",
    "load_facts", "using",
]
