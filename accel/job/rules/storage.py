"""Volumes: the claims a pod mounts exist, and each static claim binds the volume the stack made for it.

A pod whose claim does not exist, or whose claim never binds, stays Pending. Ported from Kubernetes
v1.33 `pkg/scheduler/framework/plugins/volumebinding/binder.go` (a pod's claims must exist before it
can be scheduled: "persistentvolumeclaim not found") and `pkg/controller/volume/persistentvolume/
pv_controller.go` checkVolumeSatisfyClaim (the requested size fits the volume's capacity, the storage
class and volume mode match, the volume offers the claim's access modes) for a claim that names its
volume (spec.volumeName) and a volume reserved for it (spec.claimRef).
"""

from __future__ import annotations

from accel.job.pod_templates import pod_templates
from accel.job.quantities import parse_quantity
from accel.job.rules.registry import Breach, Scope, describe, of_kind, rule, spec

BINDER = "kubernetes v1.33 pkg/controller/volume/persistentvolume/pv_controller.go checkVolumeSatisfyClaim"


def _namespace(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("namespace") or "default"


def _name(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


@rule("pod/claims-exist", "every claim a pod mounts is declared in the pod's namespace",
      source="kubernetes v1.33 pkg/scheduler/framework/plugins/volumebinding/binder.go (a pod with a missing "
             "claim is unschedulable: persistentvolumeclaim not found)",
      fix="mount a claim the stack declares (accel plan lists them), or declare the claim")
def claims_exist(scope: Scope):
    if scope.cluster is None:
        return
    claims = {(_namespace(o), _name(o)) for o in of_kind(scope.stack_objects, "PersistentVolumeClaim")}
    claims |= {(_namespace(o), _name(o)) for o in of_kind(scope.manifests, "PersistentVolumeClaim")}
    for template in pod_templates(scope.manifests):
        namespace = _namespace(template.owner)
        for index, volume in enumerate(template.spec.get("volumes") or []):
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and (namespace, claim) not in claims:
                declared = sorted(n for ns, n in claims if ns == namespace)
                yield Breach(describe(template.owner), f"{template.path}.spec.volumes[{index}].persistentVolumeClaim",
                             f"claim {namespace}/{claim} is not declared (declared: {', '.join(declared) or 'none'})")


@rule("storage/claim-binds-its-volume", "a claim naming its volume binds it: the volume is reserved for it, large "
      "enough, of the same class and mode, and offers the claim's access modes",
      source=f"{BINDER}; pv_controller.go syncUnboundClaim (spec.volumeName) and claimRef",
      fix="make the PersistentVolume's claimRef, capacity, storageClassName, volumeMode and accessModes agree "
          "with its claim (components/kubernetes/storage_mounts.py)")
def claim_binds_its_volume(scope: Scope):
    volumes = {_name(v): v for v in of_kind(scope.objects, "PersistentVolume")}
    for claim in of_kind(scope.objects, "PersistentVolumeClaim"):
        wanted = spec(claim)
        volume_name = wanted.get("volumeName")
        if not volume_name:
            continue
        volume = volumes.get(volume_name)
        if volume is None:
            yield Breach(describe(claim), "spec.volumeName", f"PersistentVolume {volume_name} is not declared: the "
                         "claim stays Pending")
            continue
        offered = spec(volume)
        ref = offered.get("claimRef") or {}
        if ref and (ref.get("namespace"), ref.get("name")) != (_namespace(claim), _name(claim)):
            yield Breach(describe(claim), "spec.volumeName", f"PersistentVolume {volume_name} is reserved for "
                         f"{ref.get('namespace')}/{ref.get('name')}")
        request = ((wanted.get("resources") or {}).get("requests") or {}).get("storage")
        capacity = (offered.get("capacity") or {}).get("storage")
        if isinstance(request, (str, int)) and isinstance(capacity, (str, int)) and \
                parse_quantity(request) > parse_quantity(capacity):
            yield Breach(describe(claim), "spec.resources.requests[storage]", f"requests {request}, more than "
                         f"PersistentVolume {volume_name}'s capacity {capacity}")
        if wanted.get("storageClassName", "") != offered.get("storageClassName", ""):
            yield Breach(describe(claim), "spec.storageClassName", f"{wanted.get('storageClassName')!r} differs from "
                         f"the volume's {offered.get('storageClassName')!r}")
        if wanted.get("volumeMode", "Filesystem") != offered.get("volumeMode", "Filesystem"):
            yield Breach(describe(claim), "spec.volumeMode", f"{wanted.get('volumeMode')!r} differs from the "
                         f"volume's {offered.get('volumeMode')!r}")
        missing = set(wanted.get("accessModes") or []) - set(offered.get("accessModes") or [])
        if missing:
            yield Breach(describe(claim), "spec.accessModes", f"{sorted(missing)} not offered by PersistentVolume "
                         f"{volume_name} ({offered.get('accessModes')})")
