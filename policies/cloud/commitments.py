"""Commitments the user holds: AWS Savings Plans and Google Cloud resource-based committed-use discounts (CUDs).

A commitment is a price, not capacity (capacity_modes.yaml: aws-savings-plan, gcp-cud; the facts and their
sources are kept there). It prices the matching ON-DEMAND usage up to its committed amount at the committed
rate, and the rest at on-demand:

- `savings-plan` (AWS): a committed $/h at Savings Plan rates for 1 or 3 years. A Compute Savings Plan applies to
  EC2 usage of any instance family in any region; an EC2 Instance Savings Plan to one instance family in one
  region (aws-savings-plans-api). Usage is covered at the plan's rate until the commitment is exhausted; any
  remaining usage is charged at on-demand (aws-savings-plans-applying). It never applies to spot or to Capacity
  Blocks (they have their own prices).
- `committed-use` (GCP): resources (the GPUs or TPU chips, vCPUs and memory) of `count` machines of a machine type
  committed in a region for 1 or 3 years; the discount applies to the aggregate usage of those resources in the
  region (gcp-cud-resource-based). Commitments for GPUs must have reservations attached
  (gcp-cud-gpu-reservations): declare the attached reservation too (kind reservation, with
  committedUsdPerMachineHour) to plan on the reserved capacity. Flex-start and spot are not covered.

The rate is the declaration's: `discount` (the fraction off on-demand for the matching usage; the published
Savings Plan and CUD rates differ by instance type, region and term) or `committedUsdPerMachineHour` (the
rate itself). Pure functions over typed data; the search (policies/selection/commitments.py) sizes a
commitment's price point apart, like a declared reservation's, and prefers it on equal figures.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from accel.base.model import StrictModel
from accel.policies.cloud.machine_counts import machine_count_problem

COMMITMENT_KINDS = ("savings-plan", "committed-use")
MODE_OF = {"savings-plan": "aws-savings-plan", "committed-use": "gcp-cud"}   # capacity_modes.yaml mode ids


class DeclaredCommitment(StrictModel):
    """One commitment the user holds (an `accel choose --reservations` entry with kind savings-plan or
    committed-use)."""

    name: str = Field(min_length=1, description="Its id: a Savings Plan id (a lowercase UUID) or a GCP commitment "
                                                "name (RFC 1035, 1-63 characters)")
    kind: Literal["savings-plan", "committed-use"]
    plan: Literal["compute", "ec2-instance"] | None = Field(
        None, description="savings-plan only: compute (any family, any region) or ec2-instance (one family, one region)")
    instanceFamily: str | None = Field(
        None, min_length=1, description="savings-plan ec2-instance only: the instance family, e.g. p5")
    region: str | None = Field(
        None, min_length=1, description="The region it applies in (ec2-instance Savings Plans and committed-use)")
    # A sanity bound, not an AWS limit (none is published): $10M/h is ~$88B a year, more than any one company's
    # cloud bill, so a larger commitment is a typo (1e300 was priced before).
    hourlyCommitmentUsd: float | None = Field(
        None, gt=0, le=10_000_000, allow_inf_nan=False,
        description="savings-plan only: the committed $/h, spent at Savings Plan rates")
    machineType: str | None = Field(
        None, min_length=1, description="committed-use only: the machine type whose resources are committed")
    count: int | None = Field(None, gt=0, description="committed-use only: machines' worth of resources committed")
    discount: float | None = Field(
        None, gt=0, lt=1, description="The fraction off on-demand for the matching usage (e.g. 0.4)")
    committedUsdPerMachineHour: float | None = Field(
        None, gt=0, le=10_000, description="The committed rate per machine-hour (instead of discount)")

    @field_validator("count")
    @classmethod
    def _a_count_a_cluster_can_use(cls, count: int | None) -> int | None:
        problem = None if count is None else machine_count_problem(count)
        if problem:
            raise ValueError(problem)
        return count

    @model_validator(mode="after")
    def _name_the_cloud_knows(self) -> "DeclaredCommitment":
        from accel.policies.cloud.reservation_names import commitment_name_problem

        problem = commitment_name_problem(self.name, self.kind)
        if problem:
            raise ValueError(f"name: {problem}")
        return self

    @model_validator(mode="after")
    def _fields_fit_the_kind(self) -> "DeclaredCommitment":
        if (self.discount is None) == (self.committedUsdPerMachineHour is None):
            raise ValueError("discount / committedUsdPerMachineHour: give exactly one: the fraction off on-demand "
                             "(e.g. discount: 0.4) or the committed rate per machine-hour")
        if self.kind == "savings-plan":
            _require(self, "plan", "hourlyCommitmentUsd")
            _refuse(self, "savings-plan", "machineType", "count")
            if self.plan == "ec2-instance":
                _require(self, "instanceFamily", "region")
            else:
                _refuse(self, "a compute Savings Plan (it applies to every family in every region)",
                        "instanceFamily", "region")
                if self.committedUsdPerMachineHour is not None:
                    raise ValueError("committedUsdPerMachineHour: a compute Savings Plan's rate differs by instance "
                                     "type and region, so one rate per machine cannot state it; give discount (the "
                                     "fraction off on-demand, e.g. 0.3)")
        else:
            _require(self, "machineType", "count", "region")
            _refuse(self, "committed-use", "plan", "instanceFamily", "hourlyCommitmentUsd")
        return self

    # The interface a price point's `reserved` slot offers the search (shared with DeclaredReservation).
    @property
    def provisioning(self) -> str:
        return "on-demand"      # a commitment prices on-demand usage; it holds no capacity

    @property
    def holds_capacity(self) -> bool:
        return False

    @property
    def zone(self) -> None:
        return None

    @property
    def held_machines(self) -> int:
        """Machines whose sizes are worth a probe: a CUD's count; a Savings Plan commits dollars, not machines."""
        return self.count or 0

    @property
    def cloud(self) -> str:
        return "aws" if self.kind == "savings-plan" else "gcp"

    def prepaid_words(self, machines: int) -> None:
        """A commitment bills usage at its rate: nothing of it is prepaid (DeclaredReservation.prepaid_words)."""
        return None

    def applies_to(self, cloud: str, machine_type: str, region: str, provisioning: str) -> bool:
        """Whether usage of this machine type in this region, bought this way, is covered."""
        if cloud != self.cloud or provisioning != "on-demand":
            return False
        if self.kind == "savings-plan":
            return self.plan == "compute" or (machine_type.split(".", 1)[0] == self.instanceFamily
                                              and region == self.region)
        return machine_type == self.machineType and region == self.region

    def rate(self, on_demand_per_machine: float) -> float:
        """The committed $/h of one matching machine."""
        if self.committedUsdPerMachineHour is not None:
            return self.committedUsdPerMachineHour
        assert self.discount is not None
        return on_demand_per_machine * (1.0 - self.discount)

    def covered(self, machines: int, on_demand_per_machine: float) -> float:
        """Machines (possibly a fraction, for a Savings Plan's last dollars) billed at the committed rate."""
        if self.kind == "committed-use":
            return float(min(machines, self.count or 0))
        rate = self.rate(on_demand_per_machine)
        return min(float(machines), (self.hourlyCommitmentUsd or 0.0) / rate) if rate > 0 else float(machines)

    def hourly(self, machines: int, on_demand_per_machine: float) -> float:
        """$/h of `machines` on-demand machines under the commitment: the covered ones at its rate, the rest at
        on-demand; never more than on-demand (a committed rate above on-demand is not used)."""
        rate = min(self.rate(on_demand_per_machine), on_demand_per_machine)
        covered = self.covered(machines, on_demand_per_machine)
        return covered * rate + (machines - covered) * on_demand_per_machine

    def what(self) -> str:
        """'Savings Plan 'sp-1' (EC2 Instance, p5 in us-east-1, $500.00/h committed)'."""
        if self.kind == "savings-plan":
            scope = ("Compute: any family, any region" if self.plan == "compute"
                     else f"EC2 Instance: {self.instanceFamily} in {self.region}")
            return f"Savings Plan {self.name!r} ({scope}, ${self.hourlyCommitmentUsd:,.2f}/h committed)"
        return f"committed-use discount {self.name!r} ({self.count} x {self.machineType} in {self.region})"

    def price_words(self, machines: int, on_demand_per_machine: float) -> str:
        """How a fleet is priced under it, with the part beyond the commitment."""
        rate = min(self.rate(on_demand_per_machine), on_demand_per_machine)
        covered = self.covered(machines, on_demand_per_machine)
        how = (f"{self.discount:.0%} off on-demand" if self.discount is not None
               else f"${self.committedUsdPerMachineHour:,.2f}/h per machine committed")
        words = (f"{self.what()}: {_machines(covered)} at ${rate:,.2f}/h ({how}) = ${covered * rate:,.2f}/h")
        if machines - covered > 1e-9:
            words += (f"; beyond the commitment: {_machines(machines - covered)} at on-demand "
                      f"${on_demand_per_machine:,.2f}/h = ${(machines - covered) * on_demand_per_machine:,.2f}/h")
        return words


def _machines(count: float) -> str:
    return f"{count:g} machines" if math.isclose(count, round(count)) else f"{count:.2f} machines' worth"


def _require(commitment: DeclaredCommitment, *names: str) -> None:
    missing = [name for name in names if getattr(commitment, name) is None]
    if missing:
        what = commitment.kind + (f" ({commitment.plan})" if commitment.plan else "")
        raise ValueError(f"{' and '.join(missing)}: missing; a {what} commitment needs {', '.join(names)}")


def _refuse(commitment: DeclaredCommitment, what: str, *names: str) -> None:
    given = [name for name in names if getattr(commitment, name) is not None]
    if given:
        raise ValueError(f"{' and '.join(given)}: not used by {what}; remove {' and '.join(given)}")
