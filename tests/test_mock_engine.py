"""The recording mock engine: what it captures is what the real engine would receive."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pulumi

from tests import harness

ROOT = Path(__file__).resolve().parent.parent


class Box(pulumi.ComponentResource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("accel:test:Box", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.data = pulumi.CustomResource("test:index:Data", f"{name}-data", {"size": 32, "ratio": 0.5},
                                          opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True))
        self.user = pulumi.CustomResource("test:index:User", f"{name}-user",
                                          {"dataId": self.data.id, "password": pulumi.Output.secret("hunter2")},
                                          opts=child)
        self.register_outputs({})


def program():
    box = Box("box")
    pulumi.CustomResource("test:index:Locked", "locked", {}, opts=pulumi.ResourceOptions(protect=True))
    pulumi.export("dataId", box.data.id)


def test_parents_protect_and_retain_on_delete_are_recorded():
    capture = harness.run(program, mode="up")
    box, data, user = capture.named("box"), capture.named("box-data"), capture.named("box-user")
    assert data.parent == box.urn and user.parent == box.urn and box.parent is None
    assert data.retain_on_delete and not data.protect
    assert capture.named("locked").protect


def test_whole_numbers_come_back_as_ints_and_fractions_stay_floats():
    data = harness.run(program, mode="up").named("box-data")
    assert data.inputs == {"size": 32, "ratio": 0.5}
    assert isinstance(data.inputs["size"], int)


def test_values_known_only_after_apply_are_none_in_preview_and_ids_in_up():
    assert harness.run(program, mode="preview").named("box-user").inputs["dataId"] is None
    assert harness.run(program, mode="up").named("box-user").inputs["dataId"] == "box-data-id"


def test_secrets_never_appear_in_the_capture():
    user = harness.run(program, mode="up").named("box-user")
    assert user.inputs["password"] == "[secret]"


def test_stack_exports_are_captured():
    assert harness.run(program, mode="up").outputs == {"dataId": "box-data-id"}


def test_many_runs_in_one_process_leave_no_threads_or_files_behind():
    harness.run(program)
    threads, fds = threading.active_count(), len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        harness.run(program)
    assert threading.active_count() <= threads
    assert len(os.listdir("/proc/self/fd")) <= fds


FAILING_PROGRAM = """
import sys
import pulumi
from accel.mock_engine import run_program

def program():
    for i in range(20):
        pulumi.CustomResource("test:index:Thing", f"thing-{i}", {"size": i})
    raise ValueError("bad stack setting")

try:
    run_program(program)
except ValueError as error:
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2)
"""


def test_a_failing_program_leaves_no_event_loop_for_the_garbage_collector_to_close():
    # An event loop left open is closed by its __del__ at exit, which now and then prints
    # "Exception ignored in BaseEventLoop.__del__ ... Invalid file descriptor: -1" after the
    # error message; the ResourceWarning it raises first says so on every run, not now and then.
    result = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", FAILING_PROGRAM],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == "error: bad stack setting\n"


def test_resources_come_back_in_the_same_order_every_run_with_parents_first():
    orders = {tuple(r.name for r in harness.run(program).resources) for _ in range(5)}
    assert len(orders) == 1
    capture = harness.run(program)
    position = {r.urn: i for i, r in enumerate(capture.resources)}
    assert all(position[r.parent] < position[r.urn] for r in capture.resources if r.parent)


def test_aws_zones_are_answered_for_the_region_the_program_asks_about():
    """A plan in us-east-2 gets us-east-2 zones (and us-east-2 zone IDs), as the real provider answers."""
    import pulumi_aws as aws

    def zones():
        answer = aws.get_availability_zones(region="us-east-2", state="available")
        pulumi.export("names", answer.names)
        pulumi.export("ids", answer.zone_ids)

    outputs = harness.run(zones, mode="up").outputs
    assert len(outputs["names"]) >= 2 and all(name.startswith("us-east-2") for name in outputs["names"])
    assert all(zone_id.startswith("use2-az") for zone_id in outputs["ids"])
