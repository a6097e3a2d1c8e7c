"""The whole training cluster from a Plan, as the component package serves it (accel:index:TrainingCluster)."""

import json
from typing import NotRequired, Optional, TypedDict

import pulumi

from pydantic import ValidationError

from accel.base.errors import ComponentArgsError, invalid_arg
from accel.base.model import describe_validation_error
from accel.components.package.common import Ownership, serve, tags


class TrainingClusterInputs(TypedDict):
    """A whole training cluster from a Plan (`accel choose --json` .chosen plan, or `accel:plan`)."""

    planJson: str
    """The Plan as JSON (schema 2), as `accel choose --write-stack` pins it."""
    gcpProject: NotRequired[str]
    """Google Cloud project, for Google Cloud plans."""
    apiAccessCidrs: list[str]
    """Who may reach the Kubernetes API's public endpoint."""
    ownership: Ownership
    """Labels / tags for cost and ownership."""


class TrainingCluster(pulumi.ComponentResource):
    """Network, cluster, accelerator pools, storage and the Kubernetes layer a Plan asks for."""

    SERVES = "accel.components:TrainingCluster"

    clusterName: pulumi.Output[str]
    """Name of the Kubernetes cluster."""
    kubeconfig: pulumi.Output[Optional[str]]
    """Kubeconfig of the cluster (secret)."""

    def __init__(self, name: str, args: TrainingClusterInputs, opts: Optional[pulumi.ResourceOptions] = None):
        from accel.components.training_cluster import TrainingClusterArgs
        from accel.policies.plan import Plan

        try:
            document = json.loads(args["planJson"])
        except json.JSONDecodeError as error:
            raise invalid_arg("TrainingCluster", "planJson", args["planJson"][:40], f"not JSON: {error}") from None
        try:
            plan = Plan.model_validate(document)
        except ValidationError as error:  # the plan's own keys are snake_case, as the stack file pins them
            raise ComponentArgsError(describe_validation_error(error, "TrainingCluster.planJson", Plan)) from None
        built = TrainingClusterArgs(plan=plan, tags=tags(args["ownership"]), gcp_project=args.get("gcpProject"),
                                    api_access_cidrs=list(args["apiAccessCidrs"]))
        serve(self, name, built, opts)
