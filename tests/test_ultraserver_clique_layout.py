"""p6e-gb200 bought as u-p6e-gb200x72 lays tensor parallelism across two trays of its one 18-tray NVLink clique.

A p6e-gb200 fleet is placed by its NVLink clique, 9 trays in the hardware table: an UltraServer is 9 instances
(u-p6e-gb200x36) or 18 (u-p6e-gb200x72), and a Capacity Block of 18 may be either one x72 or two x36. An UltraServer
Capacity Block states its type (EC2 CapacityBlock.ultraserverType; facts.toml ec2-ultraserver-capacity-blocks), and
a stack's block may say it (accel:reservations ultraserverType). Where every block of the machine says a type larger
than the table's unit, that UltraServer is the clique the search, the Plan (gpu.nvlink_clique_nodes), its own check
and the job's placement read, as for a GB200 inventory labelled by its clique (tests/test_inventory_clique_layout.py).
A block that says nothing, or u-p6e-gb200x36, leaves every output as before.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from accel.base.errors import UsageError
from accel.job.service import check_manifests, job_of
from accel.job.topology import REQUIRED
from accel.offline_plan import plan_stack
from accel.policies import hardware
from accel.policies.cloud.reservations import DeclaredReservation, declared_clique_nodes
from accel.policies.plan import Plan
from tests.compute_domain_checks import assert_claims_a_valid_compute_domain
from tests.conftest import planned_result

ROOT = Path(__file__).resolve().parent.parent
P6E = "p6e-gb200.36xlarge"
CLIQUE = hardware.current().kubernetes.nvlink_topology_levels[0]
BLOCK = {"name": "cr-0b200e72a1b2c3d4e", "kind": "capacity-block", "machineType": P6E, "count": 18,
         "zone": "us-east-1-dfw-2a", "start": "2030-01-06T11:30:00Z", "end": "2030-01-13T11:30:00Z"}


def _block(**fields) -> DeclaredReservation:
    return DeclaredReservation.model_validate({**BLOCK, **fields})


def _stack(tmp_path: Path, ultraserver: str | None, plan: dict | None = None) -> Path:
    """stacks/Pulumi.llama-405b-p6e.yaml (whose block says u-p6e-gb200x72) with its block's ultraserverType
    (None: unsaid) and `plan` pinned."""
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-405b-p6e.yaml").read_text())
    [block] = stack["config"]["accel:reservations"]
    block.pop("ultraserverType", None)
    if ultraserver is not None:
        block["ultraserverType"] = ultraserver
    if plan is not None:   # the pinned plan fixes the hardware (its workload carries the pin)
        stack["config"]["accel:plan"] = plan
        stack["config"]["accel:workload"]["hardware"] = stack["config"].pop("accel:hardware")
    path = tmp_path / "Pulumi.llama-405b-p6e.yaml"
    path.write_text(yaml.safe_dump(stack))
    return path


@pytest.fixture(scope="module")
def x72(tmp_path_factory):
    return plan_stack(None, _stack(tmp_path_factory.mktemp("x72"), "u-p6e-gb200x72"), ROOT)


@pytest.fixture(scope="module")
def unsaid(tmp_path_factory):
    """The same stack with a block that does not say which UltraServers it is: laid out by the table's 9 trays."""
    return plan_stack(None, _stack(tmp_path_factory.mktemp("unsaid"), None), ROOT)


# ------------------------------------------------------------------------------ the facts and the declaration
def test_the_hardware_table_names_each_ultraserver_type_with_its_instances():
    facts = hardware.current()
    assert facts.aws_gpu_instances[P6E].ultraserver_types == (("u-p6e-gb200x36", 9), ("u-p6e-gb200x72", 18))
    assert facts.aws_gpu_instances[P6E].ultraserver_sizes == (9, 18)     # derived from the types
    assert facts.ultraserver_instances(P6E, "u-p6e-gb200x72") == 18
    assert facts.ultraserver_instances("p5.48xlarge", "u-p6e-gb200x72") is None


@pytest.mark.parametrize(("fields", "message"), [
    ({"machineType": "p5.48xlarge", "ultraserverType": "u-p6e-gb200x72"},
     r"ultraserverType: p5.48xlarge is not sold as UltraServers"),
    ({"kind": "reservation", "start": None, "end": None, "ultraserverType": "u-p6e-gb200x72"},
     r"ultraserverType: UltraServers are bought as Capacity Blocks; set kind: capacity-block"),
    ({"ultraserverType": "u-p6e-gb200x144"}, r"ultraserverType: 'u-p6e-gb200x144' is not an UltraServer type of "
                                             r"p6e-gb200.36xlarge .*u-p6e-gb200x36.*u-p6e-gb200x72"),
    ({"count": 9, "ultraserverType": "u-p6e-gb200x72"},
     r"count: 9 instances is not a whole number of u-p6e-gb200x72 UltraServers of 18"),
    ({"ultraserverType": ""}, r"ultraserverType\n.*at least 1 character"),
])
def test_a_block_whose_ultraserver_type_does_not_fit_is_refused_naming_the_field(fields, message):
    with pytest.raises(ValidationError, match=message):
        _block(**fields)


@pytest.mark.parametrize(("blocks", "clique"), [
    ([{"ultraserverType": "u-p6e-gb200x72"}], 18),
    ([{"ultraserverType": "u-p6e-gb200x72"}, {"ultraserverType": "u-p6e-gb200x72", "name": "cr-2"}], 18),
    ([{"ultraserverType": "u-p6e-gb200x36"}], None),            # the table's 9 already
    ([{}], None),                                                # unsaid: 18 instances may be two x36
    ([{"ultraserverType": "u-p6e-gb200x72"}, {"name": "cr-2"}], None),       # one block unsaid
    ([{"ultraserverType": "u-p6e-gb200x72"}, {"ultraserverType": "u-p6e-gb200x36", "name": "cr-2"}], None),
    ([], None),
])
def test_the_clique_is_the_smallest_declared_ultraserver_when_every_block_says_one(blocks, clique):
    assert declared_clique_nodes(P6E, [_block(**fields) for fields in blocks]) == clique
    assert declared_clique_nodes("a4x-highgpu-4g", [_block(**fields) for fields in blocks]) is None


# ------------------------------------------------------------------------------ the plan
def test_a_block_of_one_u_p6e_gb200x72_lays_tp8_over_two_trays(x72, unsaid):
    before = unsaid.plan
    assert before["parallelism"] == {"tensor": 4, "pipeline": 16, "data": 1, "group_nodes": 16}
    assert planned_result("llama-405b-p6e").plan == x72.plan      # the shipped stack says x72
    assert x72.plan["gpu"]["nvlink_clique_nodes"] == 18
    assert x72.plan["parallelism"] == {"tensor": 8, "pipeline": 8, "data": 1, "tensor_nodes": 2, "group_nodes": 16}
    # Same 18 instances, the same 16 of them timed: the hours and cost do not move.
    assert (x72.plan["chosen"]["chips"], x72.plan["chosen"]["hours"], x72.plan["chosen"]["total_usd"]) == \
        (before["chosen"]["chips"], before["chosen"]["hours"], before["chosen"]["total_usd"])


def test_a_block_of_u_p6e_gb200x36_changes_nothing(tmp_path, unsaid):
    assert plan_stack(None, _stack(tmp_path, "u-p6e-gb200x36"), ROOT).plan == unsaid.plan


def test_the_plan_check_refuses_the_x72_layout_without_its_clique(x72):
    mutated = copy.deepcopy(x72.plan)
    del mutated["gpu"]["nvlink_clique_nodes"]
    with pytest.raises(ValidationError, match=r"parallelism"):
        Plan.model_validate(mutated)
    Plan.model_validate(x72.plan)


def test_the_plan_check_refuses_a_clique_no_ultraserver_is(x72):
    mutated = copy.deepcopy(x72.plan)
    mutated["gpu"]["nvlink_clique_nodes"] = 12
    with pytest.raises(ValidationError, match=r"gpu.nvlink_clique_nodes is 12 but p6e-gb200.36xlarge is sold as "
                                              r"UltraServers of 9 or 18 instances"):
        Plan.model_validate(mutated)


def test_the_stack_refuses_an_x72_plan_on_a_block_that_does_not_say_it(x72, tmp_path):
    with pytest.raises(UsageError, match=r"accel:plan: gpu.nvlink_clique_nodes is 18 \(p6e-gb200.36xlarge trays of "
                                         r"one NVLink clique\), but accel:reservations says no UltraServer type"):
        plan_stack(None, _stack(tmp_path, None, x72.plan), ROOT)
    assert plan_stack(None, _stack(tmp_path, "u-p6e-gb200x72", x72.plan), ROOT).plan["parallelism"] == \
        x72.plan["parallelism"]


# ------------------------------------------------------------------------------ the job
def test_the_x72_job_keeps_its_replica_and_tensor_groups_in_the_one_clique(x72):
    job = job_of(x72)
    [jobset] = [m for m in job.manifests if m["kind"] == "JobSet"]
    annotations = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {REQUIRED: CLIQUE}     # one 16-tray replica: one 18-tray UltraServer holds it
    assert "topology: the job is one model replica of 16 nodes, required in one nvidia.com/gpu.clique" \
        in job.derivations
    assert_claims_a_valid_compute_domain(x72, job)
    assert check_manifests(x72, job.manifests).ok


def test_accel_choose_with_the_stack_blocks_lays_out_by_the_ultraserver_they_say(tmp_path):
    """`accel choose --reservations` reads the blocks as the stack does: x72 said, TP8 over two trays; unsaid, TP4."""
    from typer.testing import CliRunner
    import typer

    from accel.commands import choose as choose_command

    app = typer.Typer(pretty_exceptions_enable=False)
    app.callback()(lambda: None)
    choose_command.register(app)
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.llama-405b-p6e.yaml").read_text())["config"]
    workload = tmp_path / "w.yaml"
    workload.write_text(yaml.safe_dump({**stack["accel:workload"], "hardware": stack["accel:hardware"]}))
    unsaid = _stack(tmp_path, None)
    shipped = ROOT / "stacks" / "Pulumi.llama-405b-p6e.yaml"
    for blocks, layout in ((shipped, "TP8 x PP8 x DP1"), (unsaid, "TP4 x PP16 x DP1")):
        result = CliRunner().invoke(app, ["choose", str(workload), "--reservations", str(blocks)],
                                    env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert f"Parallelism: {layout}" in result.output
