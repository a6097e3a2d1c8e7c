"""The stack program: stack config -> workload -> Plan -> TrainingCluster -> exports.

Wiring only. Which hardware, and why, is decided in policies/; what gets built is declared in
components/. A pinned plan (`accel choose WORKLOAD --write-stack STACK`) is used as written,
so a price change can never silently change hardware; an unpinned stack decides at run time
and says so.
"""

import pulumi

from accel.base.errors import AccelError
from accel.components.training_cluster import TrainingCluster
from accel.stack.program import current_config, read_stack, stack_error_message

try:
    stack = read_stack(current_config(), pulumi.get_stack())
    for note in stack.notes:
        pulumi.log.info(note)
    for rewrite in stack.rewrites:
        pulumi.log.warn(rewrite)
    cluster = TrainingCluster(stack.resource_name, stack.cluster_args)
except AccelError as error:
    # A user's mistake, not a bug (every one derives from AccelError): stop with the message alone,
    # no traceback.
    raise pulumi.RunError(stack_error_message(error, pulumi.get_stack())) from error

plan = stack.plan
pulumi.export("plan", plan.model_dump(mode="json"))
pulumi.export("decision", "pinned" if stack.pinned else "decided at run time")
pulumi.export("hourlyUsd", round(plan.estimate.hourly_usd, 2))
pulumi.export("runUsd", round(plan.estimate.total_usd, 2))
pulumi.export("hardware", {
    "cloud": plan.cloud, "region": plan.region, "zones": plan.zones, "accelerator": plan.chosen.accelerator,
    "chips": plan.chosen.chips, "machineType": plan.chosen.machine_type, "topology": plan.chosen.topology,
    "slices": plan.chosen.slices, "spot": plan.chosen.spot,
})
pulumi.export("lifecycle", stack.lifecycle.outputs())
if stack.missing_for_up:  # offline plans only: `pulumi up` stops before this without them
    pulumi.export("neededBeforeUp", [key.to_json() for key in stack.missing_for_up])
pulumi.export("clusterName", cluster.cluster_name)
if cluster.kubeconfig is not None:
    pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("datasetBucket", cluster.dataset_bucket)
pulumi.export("checkpointBucket", cluster.checkpoint_bucket)
pulumi.export("namespace", cluster.namespace)
pulumi.export("localQueue", cluster.local_queue)
if cluster.pod_network_annotations:
    pulumi.export("podNetworkAnnotations", cluster.pod_network_annotations)
