"""Price what a program declares: resource type + inputs -> $/h, against the catalog.

The Plan's figures are what `accel choose` estimated; these are what `pulumi up` would build. Both
`accel plan` (the captured graph), the budget guardrails (the analyzer's resources) and `accel review`
(a preview's old and new states) call the same functions here, so one stack is priced the same way
whichever document describes it.

Priced: accelerator node pools / node groups (nodes x machine type: the chips at the offering's chip
price plus the host VM where the cloud bills it apart, `Offering.prices`) and parallel filesystems
(capacity x the price of the throughput tier the inputs name). A compute or NAT resource the catalog
has no price for is listed as unpriced with the reason, never guessed. Everything else (IAM, VPCs,
buckets billed by use) is not a priced kind and is left out.

Pools on a declared reservation (`bill_reservation`) are then priced as the declaration bills them
(committed $/h per machine, or $0 marginal when already paid), the reservation's count shared across
the pools in order, any machines beyond it at the on-demand price: the same rule `accel choose` uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import Field

from accel.base.model import StrictModel
from accel.base.units import HOURS_PER_MONTH
from accel.policies import hardware
from accel.policies.catalog.model import Catalog, Offering
from accel.policies.cloud.reservations import DeclaredReservation

GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
MANAGED_LUSTRE = "gcp:lustre/instance:Instance"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
NAT_TYPES = ("gcp:compute/routerNat:RouterNat", "aws:ec2/natGateway:NatGateway")
PRICED_TYPES = (GKE_NODE_POOL, EKS_NODE_GROUP, MANAGED_LUSTRE, FSX_LUSTRE, *NAT_TYPES)
# Which catalog filesystem a storage resource type is (policies/catalog/assumptions.yaml storage.filesystems).
FILESYSTEM_CLOUD = {MANAGED_LUSTRE: "gcp", FSX_LUSTRE: "aws"}

Kind = Literal["accelerator-pool", "node-pool", "storage", "nat"]
_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$")


class PricedResource(StrictModel):
    """One declared resource and what it costs per hour; `hourly_usd` None means unpriced (`reason` says why)."""

    type: str
    name: str
    kind: Kind
    machine_type: str | None = None
    nodes: int | None = None
    chips: int | None = Field(None, description="Accelerator chips across the pool's nodes")
    spot: bool = False
    capacity_gib: int | None = None
    throughput_mbps_per_tib: int | None = None
    hourly_usd: float | None = None
    reason: str | None = Field(None, description="Why it is not priced")
    source: str | None = Field(None, description="The catalog price the figure comes from")
    reservation: str | None = Field(None, description="The declared reservation the pool's nodes are billed on")
    reserved_nodes: int | None = Field(None, description="Nodes billed at the reservation's price (the rest on demand)")

    @property
    def priced(self) -> bool:
        return self.hourly_usd is not None


class BuiltCost(StrictModel):
    """Every priced kind of resource a document declares, priced against one catalog."""

    catalog_version: str
    catalog_as_of: str
    items: list[PricedResource] = Field(default_factory=list)

    def _sum(self, kinds: tuple[str, ...]) -> float:
        return sum(i.hourly_usd for i in self.items if i.kind in kinds and i.hourly_usd is not None)

    @property
    def hourly_usd(self) -> float:
        return self._sum(("accelerator-pool", "node-pool", "storage", "nat"))

    @property
    def accelerator_hourly_usd(self) -> float:
        return self._sum(("accelerator-pool",))

    @property
    def storage_hourly_usd(self) -> float:
        return self._sum(("storage",))

    @property
    def accelerator_pools(self) -> list[PricedResource]:
        return [i for i in self.items if i.kind == "accelerator-pool"]

    @property
    def unpriced(self) -> list[PricedResource]:
        return [i for i in self.items if not i.priced]

    @property
    def chips(self) -> int:
        return sum(p.chips or 0 for p in self.accelerator_pools)

    @property
    def nodes(self) -> int:
        return sum(p.nodes or 0 for p in self.accelerator_pools)

    def to_json(self, hours: float | None = None) -> dict[str, Any]:
        """The `cost.built` object of `accel plan --json` (docs/contracts.md, section 2.2)."""
        return {
            "catalog": {"version": self.catalog_version, "as_of": self.catalog_as_of},
            "hourly_usd": round(self.hourly_usd, 2),
            "run_usd": None if hours is None else round(self.hourly_usd * hours, 2),
            "accelerator_hourly_usd": round(self.accelerator_hourly_usd, 2),
            "storage_hourly_usd": round(self.storage_hourly_usd, 2),
            "pools": len(self.accelerator_pools), "nodes": self.nodes, "chips": self.chips,
            "items": [i.model_dump(mode="json", exclude_none=True) for i in self.items],
        }


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _int(value: Any) -> int | None:
    """A count from inputs (the GCP provider takes some integers as strings); None when unknown."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def region_of(location: Any) -> str | None:
    """us-east5 for us-east5 or us-east5-b; None when not a Google Cloud location."""
    if not isinstance(location, str):
        return None
    match = _ZONE.fullmatch(location)
    return match.group("region") if match else (location or None)


def _offering(catalog: Catalog, cloud: str, machine_type: str) -> Offering | None:
    for offering in catalog.offerings:
        if offering.cloud == cloud and offering.machine_type == machine_type:
            return offering
    # A TPU offering is listed by its multi-host machine type; a single-host slice (v6e-8 on ct6e-standard-8t)
    # runs the same chips at the same per-chip price on another machine type of that generation.
    generation = hardware.current().generation_of_tpu_machine(machine_type) if cloud == "gcp" else None
    for offering in catalog.offerings if generation is not None else ():
        if offering.cloud == cloud and offering.accelerator == generation.accelerator \
                and offering.machine_type in generation.machine_types:
            return offering
    return None


def _chips_per_node(offering: Offering, machine_type: str) -> int:
    """The offering's chips per host, or the TPU machine type's own when it is another of the generation's."""
    if machine_type == offering.machine_type:
        return offering.chips_per_host
    return hardware.current().tpu_machines[machine_type].chips


def gke_pool_nodes(inputs: Mapping[str, Any]) -> int | None:
    """Nodes of a GKE node pool when its work runs: a fixed nodeCount, else the autoscaler's ceiling."""
    fixed = _int(inputs.get("nodeCount"))
    if fixed is not None:
        return fixed
    autoscaling = inputs.get("autoscaling")
    if isinstance(autoscaling, Mapping):
        total = _int(autoscaling.get("totalMaxNodeCount"))
        if total is not None:
            return total
        per_zone = _int(autoscaling.get("maxNodeCount"))
        if per_zone is not None:
            zones = inputs.get("nodeLocations")
            return per_zone * (len(zones) if isinstance(zones, list) and zones else 1)
    return _int(inputs.get("initialNodeCount"))


def eks_group_nodes(inputs: Mapping[str, Any]) -> int | None:
    """Nodes of an EKS managed node group when its work runs: desiredSize, else maxSize."""
    scaling = inputs.get("scalingConfig")
    if not isinstance(scaling, Mapping):
        return None
    desired = _int(scaling.get("desiredSize"))
    return desired if desired else _int(scaling.get("maxSize"))


def _price_nodes(kind_type: str, name: str, cloud: str, machine_type: Any, nodes: int | None, spot: bool,
                 region: str | None, catalog: Catalog) -> PricedResource:
    base = {"type": kind_type, "name": name, "spot": spot, "nodes": nodes}
    if not isinstance(machine_type, str) or not machine_type:
        return PricedResource(kind="node-pool", reason="no machine type in the inputs (known only after apply)",
                              **base)
    offering = _offering(catalog, cloud, machine_type)
    if offering is None:
        return PricedResource(kind="node-pool", machine_type=machine_type,
                              reason=f"machine type {machine_type} is not in catalog {catalog.version}", **base)
    if nodes is not None and nodes < 0:
        return PricedResource(kind="node-pool", machine_type=machine_type,
                              reason=f"a node count of {nodes} is not a count", **(base | {"nodes": None}))
    per_host = _chips_per_node(offering, machine_type)
    chips = None if nodes is None else nodes * per_host
    base |= {"machine_type": machine_type, "chips": chips}
    if nodes is None:
        return PricedResource(kind="accelerator-pool", reason="node count not known before apply", **base)
    if region is not None and region not in offering.regions:
        return PricedResource(kind="accelerator-pool", reason=f"catalog {catalog.version} does not sell "
                              f"{machine_type} in {region}", **base)
    # Without a known region the offering's own price holds: it applies to every listed region it does not override.
    priced_region = region if region is not None else next(iter(offering.regions))
    prices = offering.prices(priced_region, spot)
    if prices is None:
        capacity = "spot" if spot else "on-demand"
        return PricedResource(kind="accelerator-pool", reason=f"catalog {catalog.version} has no {capacity} price "
                              f"for {machine_type} in {priced_region}", **base)
    chip, host = prices
    per_node = per_host * chip.usd + (host.usd if host else 0.0)
    source = chip.source if host is None else f"{chip.source}; host VM: {host.source}"
    return PricedResource(kind="accelerator-pool", hourly_usd=nodes * per_node, source=source, **base)


def _at_capacity_block_rate(priced: PricedResource, region: str | None) -> PricedResource:
    """A node group on a Capacity Block billed at the block's sourced rate for its type and region
    (policies/cloud/capacity_modes.yaml), where one is known; else as priced (the catalog's figure)."""
    from accel.policies.cloud.capacity_modes import load_modes

    rate = load_modes().cb_instance_usd(str(priced.machine_type), region) if region else None
    if rate is None or priced.nodes is None:
        return priced
    return priced.model_copy(update={"hourly_usd": priced.nodes * rate[0],
                                     "source": f"Capacity Block rate ${rate[0]:,.3f}/instance-h: {rate[1]}"})


def _at_queued_rate(priced: PricedResource, mode_id: str) -> PricedResource:
    """A GKE pool on flex-start or queued provisioning billed at the mode's factor of the on-demand price for its
    machine type (policies/cloud/mode_prices.py), where the mode table has one; else as priced (on demand)."""
    from accel.policies.cloud.capacity_modes import load_modes
    from accel.policies.cloud.mode_prices import queued_hourly

    if priced.hourly_usd is None or priced.source is None:
        return priced
    rate = queued_hourly(load_modes(), mode_id, str(priced.machine_type), priced.hourly_usd, priced.source)
    return priced if rate is None else priced.model_copy(update={"hourly_usd": rate[0], "source": rate[1]})


price_nodes = _price_nodes  # compute created outside node pools (accel/review/compute_cost.py) is priced alike


def _price_filesystem(resource_type: str, name: str, capacity: Any, tier: Any, catalog: Catalog) -> PricedResource:
    offer = catalog.defaults.storage.filesystems.get(FILESYSTEM_CLOUD[resource_type])  # type: ignore[arg-type]
    gib, mbps = _int(capacity), _int(tier)
    base = {"type": resource_type, "name": name, "kind": "storage", "capacity_gib": gib,
            "throughput_mbps_per_tib": mbps}
    if offer is None:
        return PricedResource(reason=f"catalog {catalog.version} prices no filesystem of this type", **base)
    if gib is None or mbps is None:
        return PricedResource(reason="capacity or throughput tier not known before apply", **base)
    price = offer.prices_per_gib_month.get(mbps)
    if price is None:
        tiers = ", ".join(str(t) for t in sorted(offer.prices_per_gib_month))
        return PricedResource(reason=f"catalog {catalog.version} has no price for the {mbps} MB/s per TiB tier "
                              f"(priced tiers: {tiers})", **base)
    return PricedResource(hourly_usd=gib * price.usd / HOURS_PER_MONTH, source=price.source, **base)


LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def template_instance_types(resources: Iterable[tuple[str, Mapping[str, Any], str | None]]) -> dict[str, str]:
    """{parent URN: instance type} of launch templates that name one (an EKS group on a Capacity Block
    names its type there, not in instanceTypes: docs.aws.amazon.com/eks/latest/userguide/capacity-blocks-mng.html)."""
    found: dict[str, str] = {}
    for rtype, inputs, parent in resources:
        machine = inputs.get("instanceType") if rtype == LAUNCH_TEMPLATE else None
        if parent and isinstance(machine, str) and machine:
            found[parent] = machine
    return found


def price_resource(resource_type: str, name: str, inputs: Mapping[str, Any], catalog: Catalog,
                   region: str | None = None, template_instance_type: str | None = None) -> PricedResource | None:
    """What one declared resource costs per hour; None for resource kinds that are not priced.

    `region` is the region of resources whose inputs do not say it (an AWS provider's region);
    `template_instance_type` the type a node group's launch template names when the group names none."""
    if resource_type == GKE_NODE_POOL:
        config = inputs.get("nodeConfig") if isinstance(inputs.get("nodeConfig"), Mapping) else {}
        spot = bool(_get(config, "spot") is True or _get(config, "preemptible") is True)
        priced = _price_nodes(resource_type, name, "gcp", _get(config, "machineType"), gke_pool_nodes(inputs), spot,
                              region_of(inputs.get("location")) or region, catalog)
        queued = ("gcp-queued" if _get(inputs, "queuedProvisioning", "enabled") is True else
                  "gcp-flex-start" if _get(config, "flexStart") is True else None)
        return _at_queued_rate(priced, queued) if queued and not spot else priced
    if resource_type == EKS_NODE_GROUP:
        types = inputs.get("instanceTypes")
        machine = types[0] if isinstance(types, list) and types else template_instance_type
        capacity = inputs.get("capacityType")
        spot = isinstance(capacity, str) and capacity.upper() == "SPOT"
        priced = _price_nodes(resource_type, name, "aws", machine, eks_group_nodes(inputs), spot, region, catalog)
        if capacity == "CAPACITY_BLOCK" and priced.hourly_usd is not None and priced.nodes:
            return _at_capacity_block_rate(priced, region)
        return priced
    if resource_type == MANAGED_LUSTRE:
        return _price_filesystem(resource_type, name, inputs.get("capacityGib"), inputs.get("perUnitStorageThroughput"),
                                 catalog)
    if resource_type == FSX_LUSTRE:
        return _price_filesystem(resource_type, name, inputs.get("storageCapacity"),
                                 inputs.get("perUnitStorageThroughput"), catalog)
    if resource_type in NAT_TYPES:
        return PricedResource(type=resource_type, name=name, kind="nat",
                              reason=f"catalog {catalog.version} has no NAT price")
    return None


def provider_region(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> str | None:
    """The region of the document's one AWS provider, when it declares exactly one region."""
    regions = {inputs.get("region") for rtype, _name, inputs in resources
               if rtype == "pulumi:providers:aws" and isinstance(inputs.get("region"), str)}
    return regions.pop() if len(regions) == 1 else None


def price_resources(resources: Iterable[tuple[str, str, Mapping[str, Any]] | tuple[str, str, Mapping[str, Any], str | None]],
                    catalog: Catalog, region: str | None = None) -> BuiltCost:
    """Price every priced kind among (type, name, inputs[, parent URN]) tuples."""
    listed = [(r[0], r[1], r[2], r[3] if len(r) > 3 else None) for r in resources]  # type: ignore[misc]
    region = region or provider_region((t, n, i) for t, n, i, _p in listed)
    templates = template_instance_types((t, i, p) for t, _n, i, p in listed)
    items = [item for rtype, name, inputs, parent in listed
             if (item := price_resource(rtype, name, inputs, catalog, region,
                                        templates.get(parent) if parent else None)) is not None]
    return BuiltCost(catalog_version=catalog.version, catalog_as_of=catalog.as_of.isoformat(), items=items)


def bill_reservation(built: BuiltCost, reservation: DeclaredReservation) -> BuiltCost:
    """The built cost with the accelerator pools of the reservation's machine type priced as it declares:
    its count shared across those pools in order, each node within it at the reserved rate, the rest (the
    overflow) at the on-demand price the pool was priced at."""
    left = reservation.count
    items = []
    for item in built.items:
        if (item.kind != "accelerator-pool" or item.machine_type != reservation.machineType
                or item.hourly_usd is None or not item.nodes):
            items.append(item)
            continue
        held = min(item.nodes, left)
        left -= held
        per_node = item.hourly_usd / item.nodes
        hourly = held * reservation.machine_hourly_usd(per_node) + (item.nodes - held) * per_node
        source = (f"reservation {reservation.name}: {held} nodes {reservation.billing_words()}"
                  + (f", {item.nodes - held} on demand ({item.source})" if item.nodes > held else ""))
        if reservation.committedUsdPerMachineHour is None and reservation.marginal is None:
            source += f" ({item.source})"
        items.append(item.model_copy(update={"hourly_usd": hourly, "source": source,
                                             "reservation": reservation.name, "reserved_nodes": held}))
    return built.model_copy(update={"items": items})
