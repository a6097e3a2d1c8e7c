"""Storage the training pods mount: one static PersistentVolume + PersistentVolumeClaim per store.

The cloud components create the stores (buckets, Filestore, Managed Lustre, FSx for Lustre) and
their CSI drivers (GKE add-ons on the cluster; the FSx CSI driver add-on on EKS); this declares
the volumes in the training namespace, bound one-to-one (`claimRef` / `volumeName`), so a job
mounts `persistentVolumeClaim: {claimName: datasets}` and nothing else. Static volumes, reclaim
policy Retain: deleting the claim never deletes data.

CSI volume formats (driver, volumeHandle, volumeAttributes), from the drivers' documentation:
- GCS FUSE (`gcsfuse.csi.storage.gke.io`): volumeHandle = bucket name; pods also carry the
  annotation `gke-gcsfuse/volumes: "true"` (GKE "Cloud Storage FUSE CSI driver" static provisioning).
- Filestore (`filestore.csi.storage.gke.io`): volumeHandle = modeInstance/<location>/<instance>/<share>,
  attributes ip and volume (GKE "Access pre-existing Filestore instances").
- Managed Lustre (`lustre.csi.storage.gke.io`): volumeHandle = <project>/<zone>/<instance>,
  attributes ip and filesystem (GKE "Access existing Managed Lustre instances").
- FSx for Lustre (`fsx.csi.aws.com`): volumeHandle = file system id, attributes dnsname and
  mountname (kubernetes-sigs/aws-fsx-csi-driver examples/kubernetes/static_provisioning).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi

GCS_FUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
FILESTORE_DRIVER = "filestore.csi.storage.gke.io"
MANAGED_LUSTRE_DRIVER = "lustre.csi.storage.gke.io"
FSX_LUSTRE_DRIVER = "fsx.csi.aws.com"
GCS_FUSE_POD_ANNOTATION = {"gke-gcsfuse/volumes": "true"}


@dataclass(frozen=True)
class StorageMount:
    """One store as a volume: the claim name pods use, and the CSI source that reaches the store."""

    claim: str                                   # PVC name in the training namespace (a DNS label)
    driver: str
    volume_handle: pulumi.Input[str]
    capacity_gib: int                            # informational for buckets; the real size for filesystems
    read_only: bool = False
    volume_attributes: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    mount_options: Sequence[str] = ()

    @property
    def access_mode(self) -> Literal["ReadOnlyMany", "ReadWriteMany"]:
        return "ReadOnlyMany" if self.read_only else "ReadWriteMany"

    @classmethod
    def gcs_bucket(cls, claim: str, bucket: pulumi.Input[str], *, read_only: bool) -> "StorageMount":
        # implicit-dirs: show prefixes written by other tools (gsutil, training frameworks) as directories.
        return cls(claim, GCS_FUSE_DRIVER, bucket, 1024, read_only, mount_options=("implicit-dirs",))

    @classmethod
    def filestore(cls, claim: str, location: str, instance: pulumi.Input[str], share: str,
                  ip: pulumi.Input[str], capacity_gib: int) -> "StorageMount":
        handle = pulumi.Output.concat("modeInstance/", location, "/", instance, "/", share)
        return cls(claim, FILESTORE_DRIVER, handle, capacity_gib, volume_attributes={"ip": ip, "volume": share})

    @classmethod
    def managed_lustre(cls, claim: str, project: str, zone: str, instance: pulumi.Input[str],
                       filesystem: str, ip: pulumi.Input[str], capacity_gib: int) -> "StorageMount":
        handle = pulumi.Output.concat(project, "/", zone, "/", instance)
        return cls(claim, MANAGED_LUSTRE_DRIVER, handle, capacity_gib,
                   volume_attributes={"ip": ip, "filesystem": filesystem})

    @classmethod
    def fsx_lustre(cls, claim: str, filesystem_id: pulumi.Input[str], dns_name: pulumi.Input[str],
                   mount_name: pulumi.Input[str], capacity_gib: int) -> "StorageMount":
        return cls(claim, FSX_LUSTRE_DRIVER, filesystem_id, capacity_gib,
                   volume_attributes={"dnsname": dns_name, "mountname": mount_name},
                   mount_options=("flock",))


def declare_mounts(k8s, name: str, namespace: str, mounts: Sequence[StorageMount], labels: Mapping[str, str],
                   opts: pulumi.ResourceOptions) -> list[tuple[object, object]]:
    """(PersistentVolume, PersistentVolumeClaim) per mount; the claim is bound to exactly its volume."""
    declared = []
    for mount in mounts:
        volume_name = f"{namespace}-{mount.claim}"  # PVs are cluster-scoped: namespaced by name
        csi: dict = {"driver": mount.driver, "volumeHandle": mount.volume_handle, "readOnly": mount.read_only}
        if mount.volume_attributes:
            csi["volumeAttributes"] = dict(mount.volume_attributes)
        spec: dict = {
            "capacity": {"storage": f"{mount.capacity_gib}Gi"},
            "accessModes": [mount.access_mode],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "volumeMode": "Filesystem",
            "claimRef": {"namespace": namespace, "name": mount.claim},
            "csi": csi,
        }
        if mount.mount_options:
            spec["mountOptions"] = list(mount.mount_options)
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-pv-{mount.claim}", metadata={"name": volume_name, "labels": dict(labels)}, spec=spec,
            opts=opts)
        claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc-{mount.claim}",
            metadata={"name": mount.claim, "namespace": namespace, "labels": dict(labels)},
            spec={"accessModes": [mount.access_mode], "storageClassName": "", "volumeName": volume_name,
                  "resources": {"requests": {"storage": f"{mount.capacity_gib}Gi"}}},
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[volume])))
        declared.append((volume, claim))
    return declared
