"""The Plan: the one serializable decision that `policies` produce and `components` consume.

A Plan says which hardware, where, how much, what it costs and why. It carries no Pulumi
types so it can be written to a stack file, diffed in a pull request and read back
unchanged (`Plan.model_validate(plan.model_dump(mode="json"))` round-trips).

Schema 2 keeps each fact once (docs/contracts.md, "Plan schema 2"):
- the capacity type is one field, `provisioning`; `spot` is derived from it (a computed field,
  still written out because the `accel choose --json` OPTION contract has it);
- `cloud`, `region` and `family` of the Plan are derived from `chosen`; a TPU pool's `generation`
  from its `accelerator`;
- what is stored twice on purpose (the pools' sizes and the chosen OPTION's, the estimate's cost and
  the OPTION's, the capacity type of the Plan and of the OPTION) is cross-checked on load, and a
  contradiction is an error naming both fields.
Derived fields given on input (a dump read back, a schema-1 pin) are accepted when they agree.
Schema-1 documents are upgraded first (policies/plan_migration.py).
"""

# No `from __future__ import annotations` in a module of pydantic models: pydantic would compile each field's
# annotation string when its class is defined, ~3 ms of every `accel choose` (docs/choose.md, "Start-up").

import math
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field, computed_field, model_serializer, model_validator

from accel.base.model import StrictModel
from accel.policies import hardware
from accel.policies.parallelism import (
    Parallelism,
    ShardedState,
    expert_parallelism,
    expert_within_ranks,
    HeadsLayoutError,
    gpu_parallelism,
    layout_need,
)
from accel.policies.architectures import architecture_heads
from accel.policies.plan_migration import SCHEMA_VERSION, upgrade_schema_1
from accel.policies.workload import AcceleratorId, Cloud, WorkloadSpec

Family = Literal["gpu", "tpu"]
Provisioning = Literal["on-demand", "spot", "reservation", "flex-start", "queued", "capacity-block"]
GpuFabric = Literal["none", "gpudirect-tcpx", "gpudirect-tcpxo", "rdma", "efa"]
Filesystem = Literal["none", "filestore", "managed-lustre", "fsx-lustre"]
# The hardware table's TPU generations (v4 .. v6e, whose chips are tpu-v4 .. tpu-v6e, and tpu7x, whose chip is tpu7x).
TpuGeneration = Literal[tuple(hardware.current().tpu_generations)]  # type: ignore[valid-type]
PROVISIONING_TYPES: tuple[str, ...] = get_args(Provisioning)


class DerivedFieldsModel(StrictModel):
    """A model with computed (derived) fields: written out in `_dump_order`, accepted back on input.

    `_dump_order` keeps the key order of the documents other tools read (the JSON contracts) when
    a stored field became a computed one.
    """

    _dump_order: ClassVar[tuple[str, ...]] = ()
    # Optional fields added to a contract after its documents were first written: left out while unset, so a
    # document without the new fact is byte for byte the one written before the field existed.
    _omit_when_none: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _in_contract_order(self, handler: Any) -> Any:
        data = handler(self)
        if not isinstance(data, dict) or not self._dump_order:
            return data
        for key in self._omit_when_none:
            if key in data and data[key] is None:
                del data[key]
        ordered = {key: data[key] for key in self._dump_order if key in data}
        ordered.update((key, value) for key, value in data.items() if key not in ordered)
        return ordered


def _value(section: Any, key: str) -> Any:
    """`key` of a mapping or a model (a before-validator sees either)."""
    return section.get(key) if isinstance(section, dict) else getattr(section, key, None)


def accept_derived(data: dict[str, Any], key: str, derived: Any, where: str, source: str) -> None:
    """Drop a derived `key` given on input, after checking it says what the one field says."""
    if key not in data:
        return
    given = data.pop(key)
    if derived is not None and given != derived:
        raise ValueError(f"{where}.{key} is {given!r} but {source} says {derived!r}; {where}.{key} is "
                         f"derived from {source}: drop it or make them agree")


def spot_to_provisioning(data: Any, where: str) -> Any:
    """Accept `spot` on input: it fills in `provisioning` when that is absent, else must agree with it."""
    if not isinstance(data, dict) or "spot" not in data:
        return data
    data = dict(data)
    spot = data.pop("spot")
    if "provisioning" not in data:
        data["provisioning"] = "spot" if spot else "on-demand"
    elif bool(spot) != (data["provisioning"] == "spot"):
        raise ValueError(f"{where}.spot is {spot!r} but {where}.provisioning is {data['provisioning']!r}; "
                         f"spot is derived: it is true exactly when {where}.provisioning is 'spot'")
    return data


class SpotFromProvisioning(DerivedFieldsModel):
    """A model whose capacity type is its `provisioning` field; `spot` is derived from it, and accepted
    on input only when it agrees (section `_spot_where` in messages)."""

    _spot_where: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _accept_spot(cls, data: Any) -> Any:
        return spot_to_provisioning(data, cls._spot_where)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def spot(self) -> bool:
        """Spot capacity, derived from `provisioning` (the contract's boolean)."""
        return self.provisioning == "spot"  # type: ignore[attr-defined]  # each subclass declares it


class Option(SpotFromProvisioning):
    """One costed configuration. The first fourteen fields are the OPTION of the `accel choose --json`
    contract (docs/contracts.md); `spot` among them is derived from `provisioning`."""

    _dump_order = ("cloud", "region", "accelerator", "family", "chips", "hosts", "slices", "topology",
                   "machine_type", "spot", "hourly_usd", "hours", "total_usd", "mfu", "offering", "zone",
                   "chips_per_host", "provisioning", "goodput")
    _spot_where = "chosen"
    _omit_when_none = ("ranked_after", "usd_per_million_tokens", "usd_per_million_tokens_at_target",
                       "usd_per_million_tokens_unpriced")

    cloud: Cloud
    region: str
    accelerator: AcceleratorId
    family: Family
    chips: int = Field(gt=0, description="Total accelerator chips across all hosts and slices")
    hosts: int = Field(gt=0, description="Total VMs / nodes across all slices")
    slices: int = Field(1, gt=0, description="TPU slices (multislice) or 1 for GPU")
    topology: str | None = Field(None, description="TPU slice topology, e.g. 4x4x8; None for GPU")
    machine_type: str
    hourly_usd: float = Field(ge=0, description="Fleet cost per hour, all chips and host VMs")
    hours: float = Field(gt=0, description="Estimated wall-clock hours of the run")
    total_usd: float = Field(ge=0)
    mfu: float = Field(gt=0, le=1)
    # Extensions beyond the contract.
    offering: str = Field(description="Catalog offering id this option came from")
    zone: str | None = None
    chips_per_host: int = Field(gt=0)
    provisioning: Provisioning = Field("on-demand", description="The capacity type: the one field `spot` derives from")
    goodput: float = Field(1.0, gt=0, le=1)
    price_estimate: bool = Field(False, description="The price is an estimate by a stated rule, not read off a "
                                                    "price list (its catalog source's title starts with 'estimate')")
    price_source: str | None = Field(None, description="The catalog source of the chip price and its date, e.g. "
                                                        "'aws-p6-list-2026 (2026-08-26)'")
    ranked_after: str | None = Field(None, description="Why the search ranks this option after options whose "
                                                       "figures it may beat: priced by estimate, or an on-demand "
                                                       "fleet past what a zone is expected to supply (written only "
                                                       "when set)")
    usd_per_million_tokens: float | None = Field(None, ge=0, description="Serving: the price per million generated "
                                                 "tokens with every replica the fleet runs busy (written only for "
                                                 "serving)")
    usd_per_million_tokens_at_target: float | None = Field(None, ge=0, description="Serving: the price per million "
                                                           "generated tokens at the workload's tokens_per_second "
                                                           "(flat out where the fleet serves less; serving only)")
    usd_per_million_tokens_unpriced: str | None = Field(None, description="Serving: why the two prices per million "
                                                        "tokens are absent: the fleet runs on a reservation declared "
                                                        "already paid for (marginal: zero), whose $0/h is no price "
                                                        "of a token (written only then)")


# The Estimate detail (and Option field) that says why a serving fleet's token prices are not stated.
TOKENS_UNPRICED = "usd_per_million_tokens_unpriced"
# What a table cell shows in place of a price per million tokens the fleet has none of (TOKENS_UNPRICED says why).
PREPAID_CELL = "held (prepaid)"


def usd_per_million_tokens(hourly_usd: float, tokens_per_second: float) -> float:
    """What a million generated tokens cost on a fleet of `hourly_usd` serving `tokens_per_second` flat out."""
    return round(hourly_usd / (tokens_per_second * 3600) * 1e6, 4)


def serving_token_prices(hourly_usd: float, served: float, target: float,
                         unpriced: str | None = None) -> dict[str, float | str]:
    """The price per million generated tokens of a serving fleet of `hourly_usd` that serves `served` tokens/s
    flat out (every replica it runs busy), for the workload's `target` tokens/s: the one rule every serving plan,
    searched, pinned or put on a declared reservation, is priced by (selection.replicas, selection.pin,
    cloud.reservations.use_reservation). `usd_per_million_tokens`: flat out; `usd_per_million_tokens_at_target`: at
    the target rate, or flat out where the fleet serves less (a pin too small for the target cannot be busier than
    flat out). `unpriced`: why the fleet's $/h is no price of its tokens (a reservation already paid for, billed $0
    whether used or not: DeclaredReservation.prepaid_words); then neither price is stated, only that reason, and
    never a $0.00 per million tokens."""
    if unpriced is not None:
        return {TOKENS_UNPRICED: unpriced}
    return {"usd_per_million_tokens": usd_per_million_tokens(hourly_usd, served),
            "usd_per_million_tokens_at_target": usd_per_million_tokens(hourly_usd, min(target, served))}


# The Assumption the serving estimate names the precision it sized weights and KV cache at (bf16 where fp8 was asked
# of a chip without fp8 tensor cores): written by policies/estimator/estimate.py, read by the job (accel/job/plan_view).
SERVED_PRECISION = "serving precision"


class Assumption(StrictModel):
    name: str
    value: float | str
    source: str = Field(description="Where the default comes from, or 'workload override'")


class Estimate(StrictModel):
    flops: float = Field(ge=0, description="Total FLOPs of the run (6ND) or per-second demand for inference")
    min_chips_for_memory: int = Field(ge=1)
    hours: float = Field(gt=0)
    hourly_usd: float = Field(ge=0)
    total_usd: float = Field(ge=0)
    mfu: float = Field(gt=0, le=1)
    goodput: float = Field(gt=0, le=1)
    assumptions: list[Assumption] = Field(default_factory=list)
    details: dict[str, float | int | str] = Field(default_factory=dict,
                                                  description="Breakdown: replicas, batch, latency, spot productivity...")


class TpuPool(DerivedFieldsModel):
    """N identical TPU slices. GKE: one node pool per slice; TPU VM: one queued resource per slice.

    `generation` is derived from `accelerator` (tpu-v5p -> v5p); either may be given on input."""

    _dump_order = ("accelerator", "generation", "topology", "chips_per_slice", "slices", "machine_type",
                   "chips_per_host", "hosts_per_slice", "gke_accelerator", "tpu_vm_type", "runtime_version")

    accelerator: AcceleratorId
    topology: str = Field(description="e.g. 2x2x2 (v4/v5p, 3D) or 16x16 (v5e/v6e, 2D)")
    chips_per_slice: int = Field(gt=0)
    slices: int = Field(1, gt=0)
    machine_type: str = Field(description="GKE machine type, e.g. ct5p-hightpu-4t")
    chips_per_host: int = Field(gt=0)
    hosts_per_slice: int = Field(gt=0)
    gke_accelerator: str = Field(description="Node label cloud.google.com/gke-tpu-accelerator value")
    tpu_vm_type: str = Field(description="TPU VM accelerator type, e.g. v5p-128 (v4/v5p count TensorCores)")
    # The names Cloud TPU lists (`gcloud compute tpus versions list`: v2-alpha-tpuv5, tpu-ubuntu2204-base,
    # v2-alpha-tpuv6e) are lower-case letters, digits, dots and dashes; anything else is refused. Empty
    # for a generation with no Cloud TPU VM path (TPU7x: GKE node pools only, policies/hardware/facts.toml).
    runtime_version: str = Field(pattern=r"^([a-z0-9][a-z0-9.-]{0,62})?$",
                                 description="TPU VM software version, e.g. v2-alpha-tpuv5; empty where the "
                                             "generation has no Cloud TPU VM path (TPU7x)")

    @model_validator(mode="before")
    @classmethod
    def _accept_generation(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "generation" not in data:
            return data
        data = dict(data)
        if "accelerator" not in data:
            generation = str(data.pop("generation"))
            data["accelerator"] = generation if generation.startswith("tpu") else f"tpu-{generation}"
        else:
            accept_derived(data, "generation", str(data["accelerator"]).removeprefix("tpu-"), "tpu", "tpu.accelerator")
        return data

    @model_validator(mode="after")
    def _is_a_tpu(self) -> "TpuPool":
        if self.accelerator.removeprefix("tpu-") not in get_args(TpuGeneration):
            raise ValueError(f"tpu.accelerator is {self.accelerator!r}; a TPU pool holds one of "
                             + ", ".join(f"tpu-{g}" for g in get_args(TpuGeneration)))
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def generation(self) -> TpuGeneration:
        """The TPU generation, derived from `accelerator`."""
        return self.accelerator.removeprefix("tpu-")  # type: ignore[return-value]


class GpuPool(DerivedFieldsModel):
    """Whole GPU nodes of one machine type (AWS spot may list alternates).

    A fleet larger than one node pool / node group may hold is laid out as several (docs/scale.md):
    `nodes_per_pool` is the most nodes one of them holds (None: one pool of all `nodes`); `pools` and
    `pool_sizes` are derived from it, the last pool taking the remainder, so the sizes add up to `nodes`."""

    accelerator: AcceleratorId = Field(description="The GPU every node carries, e.g. h100-80gb")
    machine_type: str = Field(description="Primary machine / instance type, e.g. a3-megagpu-8g, p5.48xlarge")
    alternate_machine_types: list[str] = Field(default_factory=list,
                                               description="Same-GPU alternates for spot diversification (AWS)")
    gpus_per_node: int = Field(gt=0)
    nodes: int = Field(gt=0)
    guest_accelerator: str | None = Field(None, description="GCP accelerator type, e.g. nvidia-h100-mega-80gb")
    fabric: GpuFabric = "none"
    extra_networks: int = Field(0, ge=0, description="GCP GPUDirect extra VPC networks (TCPX 4, TCPXO 8, RDMA 1)")
    efa_interfaces: int = Field(0, ge=0, description="AWS EFA interfaces per node (one per network card)")
    local_ssd_count: int = Field(0, ge=0)
    compact_placement: bool = False
    nodes_per_pool: int | None = Field(None, gt=0, description="Most nodes in one node pool / node group when the "
                                                              "fleet is split (docs/scale.md); None: one pool")
    nvlink_clique_nodes: int | None = Field(
        None, gt=1, description="Nodes of one NVLink clique the pool's nodes are labelled with, where the pool states "
        "its own (an inventory with nvlink_clique_label, GPU Feature Discovery's nvidia.com/gpu.clique: "
        "HardwareFacts.inventory_clique_nodes; UltraServer Capacity Blocks that say their type, u-p6e-gb200x72: 18, "
        "declared_clique_nodes); the unit the layout's tensor groups span nodes within. Unset: the machine type's "
        "placement unit in the hardware table (a Kubernetes inventory's: none, the node)")

    _dump_order = ("accelerator", "machine_type", "alternate_machine_types", "gpus_per_node", "nodes",
                   "guest_accelerator", "fabric", "extra_networks", "efa_interfaces", "local_ssd_count",
                   "compact_placement", "nodes_per_pool", "pools")
    _omit_when_none = ("nvlink_clique_nodes",)

    @model_validator(mode="before")
    @classmethod
    def _accept_pool_count(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "pools" not in data:
            return data
        data = dict(data)
        nodes, per_pool = data.get("nodes"), data.get("nodes_per_pool")
        usable = isinstance(nodes, int) and nodes > 0 and (per_pool is None or (isinstance(per_pool, int) and per_pool > 0))
        derived = pool_sizes(nodes, per_pool) if usable else None  # a bad nodes_per_pool: its own bound reports it
        accept_derived(data, "pools", len(derived) if derived else None, "gpu", "gpu.nodes and gpu.nodes_per_pool")
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pools(self) -> int:
        """How many node pools / node groups the fleet is built as, derived from nodes and nodes_per_pool."""
        return len(self.pool_sizes)

    @property
    def pool_sizes(self) -> list[int]:
        """Nodes in each pool, in build order: full pools, then the remainder; they add up to `nodes`."""
        return pool_sizes(self.nodes, self.nodes_per_pool)

    def split(self) -> list["GpuPool"]:
        """One single-pool GpuPool per node pool / node group of the fleet (what the components build)."""
        if self.nodes_per_pool is None:
            return [self]
        return [self.model_copy(update={"nodes": size, "nodes_per_pool": None}) for size in self.pool_sizes]


def pool_sizes(nodes: int, per_pool: int | None) -> list[int]:
    """`nodes` in pools of at most `per_pool`: full pools, then the remainder (one pool when per_pool is None)."""
    if per_pool is None or nodes <= per_pool:
        return [nodes]
    full, rest = divmod(nodes, per_pool)
    return [per_pool] * full + ([rest] if rest else [])


class Capacity(SpotFromProvisioning):
    """How the pools get their machines: one capacity type (`provisioning`); `spot` is derived."""

    _dump_order = ("spot", "provisioning", "reservation")
    _spot_where = "capacity"

    provisioning: Provisioning = Field("on-demand", description="The capacity type")
    reservation: str | None = Field(None, description="Reservation / capacity block id when provisioning says so")
    # Extensions (issue #27; docs/capacity.md): the capacity mode the search judged the fleet on, its risk in
    # words, the legs a flex-start or queued run is chained in, and "upper" when the price is an upper bound
    # (a fleet past what the mode is expected to supply, priced at on-demand list until a reservation is declared).
    mode: str | None = Field(None, description="Capacity mode id (policies/cloud/capacity_modes.yaml)")
    risk: str | None = Field(None, description="The mode's risk in words")
    legs: int | None = Field(None, gt=0, description="Requests a flex-start or queued run is chained in")
    price_bound: Literal["upper"] | None = Field(None, description="'upper': the price is an upper bound")

    @model_serializer(mode="wrap")
    def _in_contract_order(self, handler: Any) -> Any:
        """The extensions are written only when set, so plans pinned before them read back unchanged."""
        data = DerivedFieldsModel._in_contract_order(self, handler)
        if isinstance(data, dict):
            for key in ("mode", "risk", "legs", "price_bound"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data



class StoragePlan(StrictModel):
    dataset_bucket: bool = True
    checkpoint_bucket: bool = True
    filesystem: Filesystem = "none"
    filesystem_capacity_gib: int = Field(0, ge=0)
    checkpoint_retention_days: int = Field(30, gt=0, description="Non-current checkpoint versions kept this long")

    @property
    def is_empty(self) -> bool:
        """Nothing to create: e.g. a serving plan that reads weights from an existing bucket."""
        return not (self.dataset_bucket or self.checkpoint_bucket or self.filesystem != "none")


class CatalogRef(StrictModel):
    version: str
    as_of: str


class Plan(DerivedFieldsModel):
    _dump_order = ("schema_version", "workload", "catalog", "chosen", "cloud", "region", "zones", "family",
                   "tpu", "gpu", "parallelism", "capacity", "storage", "estimate", "rationale", "pinned")

    schema_version: Literal[2] = SCHEMA_VERSION
    workload: WorkloadSpec
    catalog: CatalogRef
    chosen: Option
    zones: list[str] = Field(min_length=1, description="Node zones; TPU COMPACT and EFA placement use zones[0]")
    tpu: TpuPool | None = None
    gpu: GpuPool | None = None
    capacity: Capacity = Field(default_factory=Capacity)
    storage: StoragePlan = Field(default_factory=StoragePlan)
    estimate: Estimate
    rationale: list[str] = Field(default_factory=list)
    pinned: bool = Field(False, description="True when the hardware came from a pin, not a search")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cloud(self) -> Cloud:
        """Derived from chosen.cloud."""
        return self.chosen.cloud

    @computed_field  # type: ignore[prop-decorator]
    @property
    def region(self) -> str:
        """Derived from chosen.region."""
        return self.chosen.region

    @computed_field  # type: ignore[prop-decorator]
    @property
    def family(self) -> Family:
        """Derived from chosen.family."""
        return self.chosen.family

    @computed_field  # type: ignore[prop-decorator]
    @property
    def parallelism(self) -> Parallelism | None:
        """Tensor x pipeline x data parallelism of a GPU plan, derived from the pool and the estimate
        (policies/parallelism.py); None for TPU plans, whose slices are the units (one pool each)."""
        return plan_parallelism(self.workload.kind, self.gpu, self.estimate, self.workload.model.experts,
                                architecture=self.workload.model.architecture)

    @property
    def pool(self) -> TpuPool | GpuPool:
        """The accelerator pool of the plan's family."""
        pool = self.tpu if self.family == "tpu" else self.gpu
        assert pool is not None  # _facts_agree guarantees it
        return pool

    @model_validator(mode="before")
    @classmethod
    def _upgrade_and_accept_derived(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = upgrade_schema_1(data) if data.get("schema_version", 1) == 1 else dict(data)
        chosen = data.get("chosen")
        for key in ("cloud", "region", "family"):
            accept_derived(data, key, _value(chosen, key), "plan", f"chosen.{key}")
        if "parallelism" in data:
            derived = _derived_parallelism(data)
            before = _derived_parallelism(data, domain_unit_nodes=1) if derived is not None and derived.tensor_nodes \
                else None
            if before is not None and data["parallelism"] == before.model_dump():
                # Pinned before tensor groups could span the nodes of one NVLink domain (2026-11-27): the layout
                # it derived then (tensor parallelism in the node) is read as what it is now, not refused.
                data.pop("parallelism")
            accept_derived(data, "parallelism", derived.model_dump() if derived is not None else None, "plan",
                           "workload.kind, gpu.gpus_per_node, gpu.nodes and the estimate")
        return data

    @model_validator(mode="after")
    def _facts_agree(self) -> "Plan":
        problems = plan_contradictions(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _layout_need(estimate: Estimate, gpu: GpuPool, unit: int) -> int:
    """The GPUs' worth of state a training replica is laid out for: where the estimate records the state as the job's
    distributed optimizer holds it (details.replicated_state_gpus and sharded_state_gpus: a PyTorch run, Megatron's
    --use-distributed-optimizer), the smallest replica whose GPUs hold their share at this fleet's data-parallel
    degree (policies/parallelism.py layout_need); else, and where a long sequence sets the layout
    (policies/estimator/activations.py), the whole state per replica (estimate.min_chips_for_memory)."""
    details = estimate.details
    replicated, sharded = details.get("replicated_state_gpus"), details.get("sharded_state_gpus")
    state = (ShardedState(float(replicated), float(sharded))
             if isinstance(replicated, (int, float)) and isinstance(sharded, (int, float)) else None)
    context, pipeline = details.get("context_parallel"), details.get("pipeline_parallel")
    busy = details.get("busy_chips")   # the global batch's GPUs: only the replicas they hold share the optimizer state
    # The rule the search times the fleet by (parallelism.layout_need): a long sequence keeps the whole state's layout.
    return layout_need(estimate.min_chips_for_memory, gpu.gpus_per_node, gpu.nodes, unit, 1 if context else 0,
                       1 if pipeline else 0, state, int(busy) if isinstance(busy, (int, float)) else 0)


def plan_parallelism(kind: str, gpu: GpuPool | None, estimate: Estimate,
                     experts: int | None = None, domain_unit_nodes: int | None = None,
                     architecture: str | None = None) -> Parallelism | None:
    """The parallelism of a GPU pool under this estimate (None without a GPU pool); a mixture-of-experts model
    (`experts` routed experts per layer) trains with its experts spread over the GPU's NVLink domain (its
    machine type's own where the hardware table states one), the expert-parallel degree the estimate's
    all-to-all is costed at (policies/estimator/moe.py); a tensor-parallel group spans nodes only inside one
    NVLink domain the cloud places as a unit a job can require (HardwareFacts.nvlink_domain_unit_nodes of the
    machine type, or of the pool's own NVLink clique, `gpu.nvlink_clique_nodes`; given `domain_unit_nodes`, that
    unit instead: 1, the layout derived before groups could span nodes); a sequence
    too long for the state's own layout adds the context-parallel degree the estimate records
    (details.context_parallel, policies/estimator/activations.py) and, where it chose one, the deeper pipeline
    (details.pipeline_parallel). A named `architecture` (model.architecture) narrows the tensor degree to divide its
    query and KV heads, deepening the pipeline (policies/parallelism.py within_heads)."""
    if gpu is None:
        return None
    replica = estimate.details.get("replica_chips")
    expert = None
    facts = hardware.current()
    if experts and kind != "inference":
        domain = facts.scale_up_domain_chips(gpu.accelerator, gpu.machine_type)
        expert = expert_parallelism(experts, domain)
    context = estimate.details.get("context_parallel")   # a long sequence's layout (policies/estimator/activations.py)
    pipeline = estimate.details.get("pipeline_parallel")
    tensor = estimate.details.get("tensor_parallel")     # its tensor group, where it widened one without CP
    unit = facts.nvlink_domain_unit_nodes(gpu.machine_type, gpu.nvlink_clique_nodes) if domain_unit_nodes is None \
        else domain_unit_nodes
    try:
        layout = _gpu_layout(kind, gpu, estimate, replica, expert, unit, context, pipeline, tensor, architecture)
    except HeadsLayoutError as error:
        raise HeadsLayoutError(f"model.architecture: {architecture}: on {gpu.nodes} x {gpu.machine_type} {error}, "
                               "so no layout Megatron-LM builds holds it (runtime.yaml megatron.refusals."
                               "pipeline_layers); choose GPUs with more memory, or more of them") from None
    # A fleet of whole nodes past the GPUs the global batch keeps busy (details.busy_chips, policies/selection/
    # sizing.py) holds only the replicas the batch feeds: its data-parallel degree is theirs, the rest idle.
    busy = estimate.details.get("busy_chips")
    if kind != "inference" and isinstance(busy, (int, float)) and busy < layout.replica_gpus * layout.data:
        layout = layout.model_copy(update={"data": max(1, int(busy) // layout.replica_gpus)})
    return expert_within_ranks(layout) if kind != "inference" else layout


def _gpu_layout(kind: str, gpu: GpuPool, estimate: Estimate, replica: Any, expert: int | None, unit: int,
                context: Any, pipeline: Any, tensor: Any, architecture: str | None) -> Parallelism:
    return gpu_parallelism(kind != "inference", gpu.gpus_per_node, gpu.nodes,
                           _layout_need(estimate, gpu, unit) if kind != "inference" else estimate.min_chips_for_memory,
                           int(replica) if isinstance(replica, (int, float)) else None, expert,
                           unit, int(context) if isinstance(context, (int, float)) else 0,
                           int(pipeline) if isinstance(pipeline, (int, float)) else 0,
                           int(tensor) if isinstance(tensor, (int, float)) else 0,
                           *(architecture_heads(architecture) if kind != "inference" else (0, 0)))


def _derived_parallelism(data: dict[str, Any], domain_unit_nodes: int | None = None) -> Parallelism | None:
    """The parallelism a raw plan document derives (None when its pool or estimate is not readable yet:
    validation then reports those fields); `domain_unit_nodes` as plan_parallelism takes it."""
    try:
        gpu = GpuPool.model_validate(data["gpu"]) if data.get("gpu") else None
        estimate = Estimate.model_validate(data["estimate"])
        workload = data["workload"]
        kind = _value(workload, "kind")
        experts = _value(_value(workload, "model"), "experts")
        architecture = _value(_value(workload, "model"), "architecture")
    except (KeyError, TypeError, ValueError):
        return None
    return plan_parallelism(str(kind), gpu, estimate, experts if isinstance(experts, int) else None, domain_unit_nodes,
                            architecture if isinstance(architecture, str) else None)


def _cloud_clique_problems(pool: GpuPool, cloud: str) -> list[str]:
    """A cloud pool states its own NVLink clique only where its machine is placed by the clique and sold as
    UltraServers of that many instances (p6e-gb200: 9 or 18, a Capacity Block naming u-p6e-gb200x72)."""
    facts = hardware.current()
    unit = facts.placement_units.get(pool.machine_type)
    instance = facts.aws_gpu_instances.get(pool.machine_type)
    sizes = instance.ultraserver_sizes if instance is not None else ()
    if unit is not None and unit.level in facts.kubernetes.nvlink_topology_levels and pool.nvlink_clique_nodes in sizes:
        return []
    where = (f"{pool.machine_type} is sold as UltraServers of {' or '.join(map(str, sizes))} instances" if sizes else
             f"{pool.machine_type} on {cloud} is placed by the hardware table's unit: only an existing cluster's "
             "inventory (cloud 'kubernetes') or an UltraServer states its own NVLink clique")
    return [f"gpu.nvlink_clique_nodes is {pool.nvlink_clique_nodes} but {where}"]


def plan_contradictions(plan: Plan) -> list[str]:
    """Every fact the Plan stores twice on purpose, where the two copies disagree."""
    chosen = plan.chosen
    if plan.family == "tpu" and (plan.tpu is None or plan.gpu is not None):
        return ["a TPU plan (chosen.family 'tpu') needs a 'tpu' pool and no 'gpu' pool"]
    if plan.family == "gpu" and (plan.gpu is None or plan.tpu is not None):
        return ["a GPU plan (chosen.family 'gpu') needs a 'gpu' pool and no 'tpu' pool"]
    problems = []
    if plan.capacity.provisioning != chosen.provisioning:
        problems.append(f"capacity.provisioning is {plan.capacity.provisioning!r} but chosen.provisioning is "
                        f"{chosen.provisioning!r}; the plan has one capacity type")
    pool = plan.pool
    if pool.accelerator != chosen.accelerator:
        problems.append(f"{plan.family}.accelerator is {pool.accelerator!r} but chosen.accelerator is "
                        f"{chosen.accelerator!r}")
    if isinstance(pool, TpuPool):
        sizes = {"chips": pool.chips_per_slice * pool.slices, "hosts": pool.hosts_per_slice * pool.slices,
                 "slices": pool.slices, "topology": pool.topology, "machine_type": pool.machine_type,
                 "chips_per_host": pool.chips_per_host}
    else:
        sizes = {"chips": pool.gpus_per_node * pool.nodes, "hosts": pool.nodes, "slices": 1,
                 "machine_type": pool.machine_type, "chips_per_host": pool.gpus_per_node}
    for key, from_pool in sizes.items():
        if getattr(chosen, key) != from_pool:
            problems.append(f"chosen.{key} is {getattr(chosen, key)!r} but the {plan.family} pool makes it "
                            f"{from_pool!r}")
    if isinstance(pool, GpuPool) and pool.nvlink_clique_nodes is not None and plan.cloud != "kubernetes":
        problems += _cloud_clique_problems(pool, plan.cloud)
    parallelism = plan.parallelism
    if isinstance(pool, GpuPool) and pool.nodes_per_pool and parallelism is not None \
            and parallelism.group_nodes <= pool.nodes_per_pool and pool.nodes_per_pool % parallelism.group_nodes:
        problems.append(f"gpu.nodes_per_pool is {pool.nodes_per_pool}, not a whole number of the "
                        f"{parallelism.group_nodes}-node model replicas ({parallelism.text()}): a replica would "
                        f"straddle two pools")
    for key in ("hours", "hourly_usd", "total_usd"):
        # The OPTION carries the estimate rounded (policies/selection/candidates.py): agree to a cent / 36 s.
        if not math.isclose(getattr(chosen, key), getattr(plan.estimate, key), rel_tol=1e-6, abs_tol=0.01):
            problems.append(f"chosen.{key} is {getattr(chosen, key)!r} but estimate.{key} is "
                            f"{getattr(plan.estimate, key)!r}")
    return problems
