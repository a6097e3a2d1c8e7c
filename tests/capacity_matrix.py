"""A stack of every capacity type and machine family the components support, as pinned stack files.

Each entry pins real hardware through `accel:workload.hardware` (the same path `accel choose`
and the program use), then sets the capacity mode on the pinned Plan, as a user editing
`accel:plan` would. GKE's COMPACT-placement rule (policies/cloud/gke_rules.yaml) is applied the same
way the planner applies it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from accel.policies.catalog import load_catalog
from accel.policies.cloud.capacity_modes import load_modes
from accel.policies.cloud.mode_prices import queued_prices
from accel.policies.cloud.flex_start import gke_provisioning
from accel.policies.cloud.gke_rules import compact_placement_problem
from accel.policies.plan import Capacity, Plan
from accel.policies.selection.choose import plan_from_pin
from accel.policies.spot_ttl import ttl_for_run
from accel.policies.workload import workload_from_mapping

# A capacity block's window as EC2 sells them (starts and ends at 11:30 UTC, 1-14 days); stack files declare it. Two
# weeks: the matrix's 100B-token run on 32 H100 takes ~203 h, and a block shorter than the run is refused at plan.
CAPACITY_BLOCK_WINDOW = {"start": "2030-01-06T11:30:00Z", "end": "2030-01-20T11:30:00Z"}

# (stack name, hardware pin, capacity mode, reservation/capacity block id)
MATRIX = [
    ("a3-high-on-demand", {"accelerator": "h100-80gb", "chips": 32, "cloud": "gcp", "machine_type": "a3-highgpu-8g"},
     "on-demand", None),
    ("a3-high-spot", {"accelerator": "h100-80gb", "chips": 32, "cloud": "gcp", "machine_type": "a3-highgpu-8g"},
     "spot", None),
    ("a3-high-flex", {"accelerator": "h100-80gb", "chips": 32, "cloud": "gcp", "machine_type": "a3-highgpu-8g"},
     "flex-start", None),
    ("a3-mega-queued", {"accelerator": "h100-80gb", "chips": 32, "cloud": "gcp", "machine_type": "a3-megagpu-8g"},
     "queued", None),
    ("a3-ultra-flex", {"accelerator": "h200-141gb", "chips": 32, "cloud": "gcp"}, "flex-start", None),
    ("a3-ultra-spot", {"accelerator": "h200-141gb", "chips": 32, "cloud": "gcp"}, "spot", None),
    ("tpu-v5e-spot", {"accelerator": "tpu-v5e", "topology": "4x4"}, "spot", None),
    ("tpu-v5p-queued", {"accelerator": "tpu-v5p", "topology": "2x2x4"}, "queued", None),
    ("tpu-v6e-flex", {"accelerator": "tpu-v6e", "topology": "4x4"}, "flex-start", None),
    ("tpu-v6e-on-demand", {"accelerator": "tpu-v6e", "topology": "4x4", "slices": 2}, "on-demand", None),
    ("p4d-on-demand", {"accelerator": "a100-40gb", "chips": 16, "cloud": "aws"}, "on-demand", None),
    ("p5-capacity-block", {"accelerator": "h100-80gb", "chips": 32, "cloud": "aws"}, "capacity-block",
     "cr-02168da1478b509e0"),
    ("p5en-reservation", {"accelerator": "h200-141gb", "chips": 32, "cloud": "aws"}, "reservation",
     "cr-0a1b2c3d4e5f67890"),
    ("p5en-spot", {"accelerator": "h200-141gb", "chips": 32, "cloud": "aws"}, "spot", None),
]


def _plan(pin: dict, provisioning: str, reservation: str | None) -> tuple[dict, Plan]:
    workload = {"name": "matrix", "kind": "pretrain", "model": {"parameters": "8B"},
                "training": {"tokens": "100B", "framework": "pytorch" if "tpu" not in pin["accelerator"] else "jax"},
                "constraints": {"clouds": [pin.get("cloud", "gcp")], "spot": "allowed"}, "hardware": pin}
    spec = workload_from_mapping(workload, "capacity matrix")
    catalog = load_catalog()
    plan = plan_from_pin(spec, catalog)
    spot = provisioning == "spot"
    # Priced at the capacity type it is switched to, as `accel plan` prices the pools it builds (a pin whose
    # figures disagree with its hardware at the pin's own catalog is refused).
    chip, host = catalog.offering(plan.chosen.offering).prices(plan.region, spot)
    mode = load_modes().mode_for(plan.cloud, plan.chosen.machine_type, provisioning)
    if provisioning in ("flex-start", "queued") and mode is not None:   # at the mode's factor, where it has one
        chip, host = queued_prices(load_modes(), mode.id, plan.chosen.machine_type, chip, host) or (chip, host)
    hourly = plan.chosen.chips * chip.usd + plan.chosen.hosts * (host.usd if host else 0.0)
    block_rate = load_modes().cb_instance_usd(plan.chosen.machine_type, plan.region)
    if provisioning == "capacity-block" and block_rate is not None:   # a block is billed at its own rate
        hourly = plan.chosen.hosts * block_rate[0]
    costs = {"hourly_usd": hourly, "total_usd": round(hourly * plan.chosen.hours, 2)}
    chosen = plan.chosen.model_copy(update={"spot": spot, "provisioning": provisioning, **costs})
    update: dict = {"chosen": chosen, "capacity": Capacity(spot=spot, provisioning=provisioning,
                                                           reservation=reservation),
                    "estimate": plan.estimate.model_copy(update={**costs, "hours": plan.chosen.hours})}
    if plan.gpu is not None and plan.cloud == "gcp" and plan.gpu.compact_placement:
        # a flex-start fleet on a fabric is built with queued provisioning (policies/cloud/flex_start.py)
        if compact_placement_problem(plan.gpu.machine_type, gke_provisioning(provisioning, plan.gpu.fabric)):
            update["gpu"] = plan.gpu.model_copy(update={"compact_placement": False})
    return workload, plan.model_copy(update=update)


def write_matrix_project(root: Path, project_root: Path) -> list[str]:
    """A project with one stack file per MATRIX entry; returns the stack names."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(project_root / name, root / name)
    (root / "stacks").mkdir(exist_ok=True)
    for stack, pin, provisioning, reservation in MATRIX:
        workload, plan = _plan(pin, provisioning, reservation)
        config: dict = {"accel:owner": "platform", "accel:costCenter": "matrix",
                        "accel:workload": plan.workload.model_dump(mode="json", exclude_none=True),
                        "accel:plan": plan.model_dump(mode="json")}
        if plan.cloud == "gcp":
            config["gcp:project"] = "acme-matrix"
        else:
            config["aws:region"] = plan.region
            config["accel:apiAccessCidrs"] = ["35.190.10.0/24"]
        if provisioning == "capacity-block":
            # The block the plan runs on, with its window: the node groups are scheduled around it.
            config["accel:reservations"] = [{
                "name": reservation, "kind": "capacity-block", "machineType": plan.gpu.machine_type,
                "count": plan.gpu.nodes, "zone": plan.zones[0], **CAPACITY_BLOCK_WINDOW}]
        if plan.chosen.spot:
            config["accel:ttl"] = ttl_for_run(plan.estimate.hours)
            config["pulumi:tags"] = {"accel:ephemeral": "true", "accel:ttl": config["accel:ttl"]}
        text = f"# capacity matrix: {stack}\n" + yaml.safe_dump({"config": config}, sort_keys=False)
        (root / "stacks" / f"Pulumi.{stack}.yaml").write_text(text)
    return [entry[0] for entry in MATRIX]
