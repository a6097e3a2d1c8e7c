"""Cloud terms: what a cloud charges, reserves, limits and refuses, and the data files that say so.

- `pricing`          $/h of what a program declares, against the catalog;
- `reservations`     reservations a stack holds, and whether the planned pools fit them;
- `capacity_blocks`  an EC2 Capacity Block's window (capacity_blocks.yaml);
- `booking`          the booked modes (Capacity Blocks, calendar mode): their fleets and windows;
- `quotas`           the quota each region needs before `pulumi up` (quotas.yaml);
- `gke_rules`        GKE's node-pool rules on COMPACT placement and DWS (gke_rules.yaml);
- `pin_check`        whether a pinned Plan still says what the program builds, and its price drift.

It never imports accel.policies.selection.
"""
