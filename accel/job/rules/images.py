"""Each container's image is built for the architecture of the nodes its pod lands on.

Nothing in Kubernetes checks this before the pod runs: the kubelet labels its node kubernetes.io/arch with its own
GOARCH and pulls whatever the image reference names. From a multi-platform index the runtime picks the node's
platform and the pull fails when there is none ("no match for platform in manifest"); a single-platform amd64 image
is pulled and run as is, and its first binary fails on an Arm (Grace) node with "exec format error", the pod in
CrashLoopBackOff. A4X, p6e-gb200 and GB200 inventories are Arm; most published images are amd64 only.

A pod's architecture is what it selects (nodeSelector or a required node affinity on kubernetes.io/arch), else the
one architecture of every node pool of the stack it can be placed on (labels matched, taints tolerated). The
images' architectures are runtime.yaml `image_architectures` (accel/job/architectures.py).
"""

from __future__ import annotations

from typing import Any

from accel.job.architectures import ARCH_LABEL, image_architectures, normalized
from accel.job.pod_templates import pod_templates
from accel.job.rules.placement import placeable_pools
from accel.job.rules.registry import Breach, Scope, containers, describe, join, rule

SOURCE = ("kubernetes v1.33 pkg/kubelet/kubelet_node_status.go (kubernetes.io/arch is the kubelet's runtime.GOARCH; "
          "nothing compares it with the image's platform); containerd: an index without the node's platform fails "
          "to pull, an image of another architecture runs and fails with 'exec format error'")


def _selected_arch(pod_spec: dict[str, Any]) -> str | None:
    """The architecture the pod itself requires: nodeSelector, or a required node affinity naming one value."""
    chosen = normalized((pod_spec.get("nodeSelector") or {}).get(ARCH_LABEL))
    if chosen:
        return chosen
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            values = expression.get("values") or []
            if expression.get("key") == ARCH_LABEL and expression.get("operator") == "In" and len(values) == 1:
                return normalized(values[0])
    return None


def _placed_arch(pod_spec: dict[str, Any], cluster) -> str | None:
    """The one architecture of every stack pool the pod can be placed on; None when unknown or mixed."""
    arches = {pool.arch for pool in placeable_pools(pod_spec, cluster)}
    return arches.pop() if len(arches) == 1 else None


def _images(scope: Scope):
    """(owner, field, image, node architecture) of every container whose pod's node architecture is known."""
    for template in pod_templates(scope.objects):
        arch = _selected_arch(template.spec) or _placed_arch(template.spec, scope.cluster)
        if arch is None:
            continue
        for where, container in containers(template.spec):
            image = container.get("image")
            if isinstance(image, str) and image:
                yield describe(template.owner), join(template.path, "spec", where, "image"), image, arch


@rule("pod/image-architecture", "a container's image is built for its nodes' architecture",
      source=SOURCE,
      fix="give the job an image built for the nodes' architecture (accel job --image IMAGE: a multi-platform "
          "tag with a linux/arm64 build on Arm nodes, e.g. one you build with docker buildx --platform linux/arm64)")
def image_architecture(scope: Scope):
    for owner, field, image, arch in _images(scope):
        stated = image_architectures(image)
        if stated.runs_on(arch) is False:
            yield Breach(owner, field, f"{image} is published for {', '.join(stated.architectures)} only "
                         f"({stated.source}); these nodes are {arch}: the container would fail with "
                         f"'exec format error'")


@rule("pod/image-architecture-unconfirmed", "on Arm nodes, an image whose arm64 build is not confirmed",
      source=SOURCE, severity="flag",
      fix="confirm the image has a linux/arm64 build (docker manifest inspect IMAGE lists its platforms), or "
          "pass one that does with accel job --image IMAGE")
def image_architecture_unconfirmed(scope: Scope):
    for owner, field, image, arch in _images(scope):
        if arch == "amd64":
            continue   # almost every image is built for amd64; the check speaks where the risk is
        stated = image_architectures(image)
        if stated.runs_on(arch) is None:
            why = (f"its platforms are unconfirmed ({stated.source})" if stated.status == "unconfirmed"
                   else "runtime.yaml states no architectures for it")
            yield Breach(owner, field, f"these nodes are {arch} and {image} may have no {arch} build: {why}")
