"""An AWS-only stack never loads the Google Cloud provider, and args never load the AWS one.

Each check runs in a fresh interpreter: this test process has long since imported everything.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A whole AWS training cluster from a Plan, on the mock engine, through the for_plan helpers.
AWS_STACK = textwrap.dedent("""
    import json, sys
    from accel.mock_engine import run_program
    from accel.components.aws.cluster import EksCluster, EksClusterArgs
    from accel.components.aws.gpu import GpuNodeGroup, GpuNodeGroupArgs
    from accel.components.aws.network import AwsNetwork, AwsNetworkArgs
    from accel.components.aws.storage import TrainingStorage, TrainingStorageArgs
    from accel.components.tags import ResourceTags
    from accel.policies.plan import Plan

    plan = Plan.model_validate({
        "workload": {"name": "llama-8b-finetune", "kind": "finetune", "model": {"parameters": "8B"},
                     "training": {"tokens": "20B", "framework": "pytorch"}},
        "catalog": {"version": "test", "as_of": "2026-01-01"},
        "chosen": {"cloud": "aws", "region": "us-east-1", "accelerator": "h100-80gb", "family": "gpu",
                   "chips": 32, "hosts": 4, "machine_type": "p5.48xlarge", "spot": False, "hourly_usd": 393.3,
                   "hours": 10, "total_usd": 3933, "mfu": 0.4, "offering": "aws-p5.48xlarge",
                   "chips_per_host": 8},
        "cloud": "aws", "region": "us-east-1", "zones": ["us-east-1a"], "family": "gpu",
        "gpu": {"machine_type": "p5.48xlarge", "gpus_per_node": 8, "nodes": 4, "fabric": "efa",
                "efa_interfaces": 32, "compact_placement": True},
        "storage": {"filesystem": "fsx-lustre", "filesystem_capacity_gib": 1200},
        "estimate": {"flops": 1e21, "min_chips_for_memory": 8, "hours": 10, "hourly_usd": 393.3,
                     "total_usd": 3933, "mfu": 0.4, "goodput": 0.9},
    })
    tags = ResourceTags(workload=plan.workload.name, stack="aws-only")

    def program():
        network = AwsNetwork("net", AwsNetworkArgs.for_plan(plan, tags, extra_zones=["us-east-1b"]))
        cluster = EksCluster("train", EksClusterArgs.for_network(network, tags, public_access_cidrs=["35.190.10.0/24"]))
        GpuNodeGroup("h100", GpuNodeGroupArgs.for_plan(plan, cluster=cluster, network=network, tags=tags))
        TrainingStorage("llama", TrainingStorageArgs.for_plan(plan, cluster=cluster, network=network, tags=tags))

    capture = run_program(program, preview=True)
    print(json.dumps({
        "by_type": capture.by_type(),
        "gcp_loaded": sorted(m for m in sys.modules if m == "pulumi_gcp" or m.startswith("pulumi_gcp.")),
        "gpu_subnets": capture.named("h100-nodes").inputs["subnetIds"],
    }))
""")


def run_python(code: str) -> dict:
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def aws_stack() -> dict:
    return run_python(AWS_STACK)


def test_aws_only_stack_never_imports_pulumi_gcp(aws_stack):
    report = aws_stack
    assert report["gcp_loaded"] == []
    # The program really built the cluster: without this the check above proves nothing.
    assert report["by_type"]["aws:eks/nodeGroup:NodeGroup"] == 2
    assert report["by_type"]["aws:fsx/lustreFileSystem:LustreFileSystem"] == 1
    assert report["by_type"]["accel:aws:GpuNodeGroup"] == 1


def test_plan_helpers_put_efa_nodes_in_the_plan_zone(aws_stack):
    assert len(aws_stack["gpu_subnets"]) == 1  # one private subnet: the plan's zones[0]


def test_building_args_does_not_load_any_provider():
    report = run_python(textwrap.dedent("""
        import json, sys
        from accel.components.aws.gpu import GpuNodeGroupArgs
        from accel.components.aws.network import AwsNetworkArgs
        from accel.components.aws.storage import TrainingStorageArgs
        from accel.components.aws.cluster import EksClusterArgs
        from accel.components.tags import ResourceTags
        AwsNetworkArgs(region="us-west-2", zones=["us-west-2a", "us-west-2b"],
                       tags=ResourceTags(workload="w", stack="s"))
        providers = ("pulumi_aws", "pulumi_gcp", "pulumi_kubernetes")
        print(json.dumps({"loaded": sorted(m for m in sys.modules if m in providers)}))
    """))
    assert report["loaded"] == []
