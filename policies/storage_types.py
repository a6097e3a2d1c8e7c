"""Resource types that can hold datasets or checkpoints.

One list for everyone who must protect data: the guardrails check these are retained and never
force-destroyed, and the reaper refuses to destroy a stack where one of them would be deleted.
Plain data, no imports, so the policy pack can load it without the project's dependencies.
"""

STORAGE_TYPES: frozenset[str] = frozenset({
    "gcp:storage/bucket:Bucket",
    "gcp:filestore/instance:Instance",
    "gcp:lustre/instance:Instance",
    "gcp:compute/disk:Disk",
    "aws:s3/bucket:Bucket",
    "aws:s3/bucketV2:BucketV2",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:ebs/volume:Volume",
    "aws:efs/fileSystem:FileSystem",
    # Also data stores a training program may declare directly (each carries labels or tags in its provider
    # schema, so it can say its data-role): regional disks, Parallelstore, snapshots, the other FSx filesystems.
    "gcp:compute/regionDisk:RegionDisk",
    "gcp:compute/snapshot:Snapshot",
    "gcp:parallelstore/instance:Instance",
    "aws:ebs/snapshot:Snapshot",
    "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
    "aws:fsx/ontapFileSystem:OntapFileSystem",
})
