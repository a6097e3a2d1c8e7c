"""`accel job`: Kubernetes manifests that run a stack's workload on the stack's hardware, and the
check that they schedule on what the stack's program declares (not on the Plan they came from)."""
