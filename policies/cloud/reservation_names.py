"""What each cloud takes as the name of a reservation a stack declares (`accel:reservations[i].name`).

- AWS: an On-Demand Capacity Reservation or Capacity Block id, `cr-` and hex digits (EC2 resource ids: 8 hex
  digits for the old ids, 17 since 2016; the id `aws ec2 describe-capacity-reservations` prints).
- Google Cloud: a Compute Engine resource name (the Reservation resource's `name`: 1 to 63 characters matching
  `[a-z]([-a-z0-9]*[a-z0-9])?`, RFC 1035), optionally as the shared-reservation path
  `projects/PROJECT/reservations/NAME`, and followed by `/reservationBlocks/BLOCK` (and
  `/reservationSubBlocks/SUB_BLOCK`) to target a block of it, as GKE's reservation affinity takes it.
GKE and EKS refuse any other name at `pulumi up`; this says so at `accel choose --reservations` and `accel plan`.

And the names of the commitments `accel choose --reservations` weighs (commitment_name_problem):
- Google Cloud committed-use: the Commitment resource's `name`, the same Compute Engine rule: "1-63 characters
  long and match the regular expression [a-z]([-a-z0-9]*[a-z0-9])?" (Compute Engine API, regionCommitments,
  Commitment.name; stored copy read 2026-11-27).
- AWS Savings Plan: its id, the last part of its ARN, a lowercase UUID: the Savings Plans API's ARN pattern ends
  `savingsplan/([0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})` (Savings Plans API
  Reference, DescribeSavingsPlans, savingsPlanArns; stored copy read 2026-11-27), and
  `aws savingsplans describe-savings-plans` lists yours by that id.
"""

from __future__ import annotations

import re

AWS_RESERVATION_ID = re.compile(r"cr-[0-9a-f]{8}(?:[0-9a-f]{9})?")
_GCP_NAME = r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?"
GCP_RESOURCE_NAME = re.compile(_GCP_NAME)
AWS_SAVINGS_PLAN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# A Google Cloud project id. Resource Manager: "The ID must be 6 to 30 lowercase letters, digits, or hyphens. It must
# start with a letter. Trailing hyphens are prohibited." (cloud.google.com/resource-manager/docs/creating-managing-
# projects, read 2026-11-27). Projects created under a G Suite domain before 2017 keep a domain-scoped id,
# `example.com:my-project`, and resource paths carry it as is (projects/example.com:my-project/...).
GCP_PROJECT_ID = r"(?:[a-z0-9][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]"
GCP_RESERVATION = re.compile(rf"(?:projects/{GCP_PROJECT_ID}/reservations/)?{_GCP_NAME}"
                             rf"(?:/reservationBlocks/{_GCP_NAME}(?:/reservationSubBlocks/{_GCP_NAME})?)?")


def reservation_name_problem(name: str, cloud: str) -> str | None:
    """Why `cloud` would not take `name` as a reservation's name, or None."""
    if cloud == "aws" and not AWS_RESERVATION_ID.fullmatch(name):
        return (f"{name!r} is not an AWS capacity reservation id: cr- and 8 or 17 hex digits, e.g. "
                "cr-0123456789abcdef0 (aws ec2 describe-capacity-reservations lists yours)")
    if cloud == "gcp" and not GCP_RESERVATION.fullmatch(name):
        return (f"{name!r} is not a Google Cloud reservation name: 1 to 63 lowercase letters, digits or '-', "
                "starting with a letter and not ending with '-' (or projects/PROJECT/reservations/NAME, optionally "
                "with /reservationBlocks/BLOCK)")
    return None


def commitment_name_problem(name: str, kind: str) -> str | None:
    """Why the cloud would not know `name` as a commitment of `kind` (savings-plan, committed-use), or None."""
    if kind == "savings-plan" and not AWS_SAVINGS_PLAN_ID.fullmatch(name):
        return (f"{name!r} is not a Savings Plan id: a lowercase UUID such as 3f2b1c4d-8e9a-4b7c-9d1e-2a3b4c5d6e7f, "
                "the last part of its ARN (aws savingsplans describe-savings-plans lists yours)")
    if kind == "committed-use" and not GCP_RESOURCE_NAME.fullmatch(name):
        return (f"{name!r} is not a Google Cloud commitment name: 1 to 63 lowercase letters, digits or '-', "
                "starting with a letter and not ending with '-' (gcloud compute commitments list shows yours)")
    return None
