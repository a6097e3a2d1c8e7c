"""Compute outside node pools, priced (or named as unpriced) so a pull request cannot hide it.

`accel.policies.cloud.pricing` prices what accel's components build: GKE node pools, EKS node groups,
filesystems. A program may also create accelerators directly: a TPU VM, a queued TPU resource, EC2
or Compute Engine instances, an autoscaling group or a managed instance group. Each of those is
priced here from the same catalog (a TPU by its chip price times its chips; a machine by its
offering) or returned unpriced with the reason, which the review lists under "not priced" and
which makes the total a lower bound. A type in COMPUTE_TYPES is never silently $0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accel.policies.catalog.model import Catalog
from accel.policies.cloud.pricing import PricedResource, price_nodes, region_of
from accel.policies.hardware.shapes import ShapeError, parse_tpu_vm_type
from accel.review.hardware import accelerator_pool, gce_spot

TPU_TYPES = frozenset({"gcp:tpu/v2Vm:V2Vm", "gcp:tpu/node:Node", "gcp:tpu/v2QueuedResource:V2QueuedResource"})
EC2_INSTANCE = "aws:ec2/instance:Instance"
GCE_INSTANCE = "gcp:compute/instance:Instance"
AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
INSTANCE_GROUP_MANAGERS = frozenset({"gcp:compute/instanceGroupManager:InstanceGroupManager",
                                     "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"})
SPOT_REQUESTS = frozenset({"aws:ec2/spotInstanceRequest:SpotInstanceRequest", "aws:ec2/spotFleetRequest:SpotFleetRequest",
                           "aws:ec2/fleet:Fleet"})
COMPUTE_TYPES = TPU_TYPES | {EC2_INSTANCE, GCE_INSTANCE, AUTOSCALING_GROUP} | INSTANCE_GROUP_MANAGERS | SPOT_REQUESTS


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) else None


def _unpriced(resource_type: str, name: str, reason: str, nodes: int | None = None,
              machine_type: str | None = None) -> PricedResource:
    return PricedResource(type=resource_type, name=name, kind="node-pool", nodes=nodes, machine_type=machine_type,
                          reason=reason)


def _tpu(resource_type: str, name: str, inputs: Mapping[str, Any], catalog: Catalog) -> PricedResource:
    pool = accelerator_pool(resource_type, dict(inputs))
    accelerator_type = inputs.get("acceleratorType")
    if resource_type == "gcp:tpu/v2QueuedResource:V2QueuedResource" and pool is not None:
        accelerator_type = pool.machine_type
    if pool is None or pool.chips is None or not isinstance(accelerator_type, str):
        shown = accelerator_type if isinstance(accelerator_type, str) else None
        return _unpriced(resource_type, name, f"TPU type {shown} is not one accel knows" if shown else
                         "a TPU whose type or size is not known before apply", machine_type=shown)
    try:
        generation, _ = parse_tpu_vm_type(accelerator_type)
    except ShapeError:
        return _unpriced(resource_type, name, f"TPU type {accelerator_type} is not one accel knows",
                         machine_type=accelerator_type)
    region = region_of(pool.location)
    spot = bool(pool.spot)
    base = {"type": resource_type, "name": name, "machine_type": accelerator_type, "chips": pool.chips, "spot": spot}
    for offering in catalog.offerings:
        if offering.cloud != "gcp" or offering.accelerator != generation.accelerator:
            continue
        regions = [region] if region in offering.regions else ([] if region else list(offering.regions)[:1])
        for where in regions:
            prices = offering.prices(where, spot)
            if prices is not None:
                chip, _host = prices  # a TPU VM is billed per chip; no separate host
                return PricedResource(kind="accelerator-pool", hourly_usd=pool.chips * chip.usd, source=chip.source,
                                      **base)
    where = f" in {region}" if region else ""
    return PricedResource(kind="accelerator-pool", reason=f"catalog {catalog.version} has no "
                          f"{'spot' if spot else 'on-demand'} {generation.accelerator} price{where}", **base)


def price_compute(resource_type: str, name: str, inputs: Mapping[str, Any] | None, catalog: Catalog,
                  region: str | None = None) -> PricedResource | None:
    """The hourly price of compute created outside node pools, or an unpriced item saying why;
    None for a type that is not in COMPUTE_TYPES."""
    if resource_type not in COMPUTE_TYPES or inputs is None:
        return None
    if resource_type in TPU_TYPES:
        return _tpu(resource_type, name, inputs, catalog)
    if resource_type == EC2_INSTANCE:
        spot = inputs.get("instanceMarketOptions") is not None
        machine = inputs.get("instanceType")
        return price_nodes(resource_type, name, "aws", machine, 1, spot, region, catalog)
    if resource_type == GCE_INSTANCE:
        return price_nodes(resource_type, name, "gcp", inputs.get("machineType"), 1, gce_spot(dict(inputs)),
                           region_of(inputs.get("zone")) or region, catalog)
    if resource_type == AUTOSCALING_GROUP:
        nodes = _count(inputs.get("desiredCapacity"))
        nodes = nodes if nodes else _count(inputs.get("maxSize"))
        return _unpriced(resource_type, name, f"an autoscaling group of up to {nodes if nodes is not None else '?'} "
                         "instances whose instance type is in a launch template, known only after apply", nodes)
    if resource_type in INSTANCE_GROUP_MANAGERS:
        nodes = _count(inputs.get("targetSize"))
        return _unpriced(resource_type, name, f"a managed instance group of {nodes if nodes is not None else '?'} "
                         "VMs whose machine type is in an instance template, known only after apply", nodes)
    return _unpriced(resource_type, name, "a spot request or fleet: its instance types and count are not priced")
