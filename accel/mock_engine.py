"""Run a Pulumi program on the SDK's mock engine and record everything it declares.

This is the one recorder in the project: `accel plan` uses it to show what a stack would
build, and the test suite uses it (through tests/harness.py) to assert on components. It
records what the real engine would receive: type token, name, parent, camelCase inputs,
protect, retainOnDelete, provider, dependencies, and the stack's exports.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import set_root_resource
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

STACK_TYPE = "pulumi:pulumi:Stack"
SECRET_PLACEHOLDER = "[secret]"

# Invoke answers the programs here rely on; anything else answers {} (the mock default).
DEFAULT_ZONES = {
    "us-central1": ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"],
    "us-central2": ["us-central2-b"],
    "us-east5": ["us-east5-a", "us-east5-b", "us-east5-c"],
    "us-east1": ["us-east1-b", "us-east1-c", "us-east1-d"],
    "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"],
    "us-west-2": ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"],
}


def _aws_zone_id_prefix(region: str) -> str:
    """The zone-ID prefix AWS uses for a region: us-east-2 -> use2, ap-northeast-1 -> apne1, eu-west-1 -> euw1."""
    area, *direction, number = region.split("-")
    words = "".join(direction)
    short = {"northeast": "ne", "southeast": "se", "northwest": "nw", "southwest": "sw"}.get(words, words[:1])
    return f"{area}{short}{number}"


@dataclass
class CapturedResource:
    type: str
    name: str
    urn: str
    parent: str | None
    inputs: dict[str, Any]
    custom: bool
    protect: bool = False
    retain_on_delete: bool = False
    provider: str = ""
    dependencies: list[str] = field(default_factory=list)

    @property
    def parent_name(self) -> str | None:
        return self.parent.rsplit("::", 1)[-1] if self.parent else None

    @property
    def provider_urn(self) -> str | None:
        """The URN of the provider this resource is created through (a reference is `<urn>::<id>`)."""
        return self.provider.rsplit("::", 1)[0] if self.provider else None

    def to_json(self) -> dict[str, Any]:
        """The `accel plan --json` resource shape (docs/contracts.md, section 2.2).

        `dependencies` are the URNs the engine waits for before creating this resource, as the
        program registered them: explicit `depends_on` (a component expanded to its resources)
        and every resource whose outputs flow into an input. `provider` is the URN of the
        provider it is created through; the engine creates that first, after its own dependencies.
        """
        return {
            "type": self.type,
            "name": self.name,
            "urn": self.urn,
            "parent": self.parent,
            "custom": self.custom,
            "inputs": self.inputs,
            "retain_on_delete": self.retain_on_delete,
            "protect": self.protect,
            "dependencies": sorted(self.dependencies),  # the SDK gathers them from sets: one stable order
            "provider": self.provider_urn,
        }


@dataclass
class Capture:
    """Everything one program run declared, in registration order."""

    resources: list[CapturedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_type(self, type_token: str) -> list[CapturedResource]:
        return [r for r in self.resources if r.type == type_token]

    def named(self, name: str) -> CapturedResource:
        found = [r for r in self.resources if r.name == name]
        if len(found) != 1:
            raise KeyError(f"expected one resource named {name!r}, found {len(found)}")
        return found[0]

    def children_of(self, parent: CapturedResource) -> list[CapturedResource]:
        return [r for r in self.resources if r.parent == parent.urn]

    def by_type(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.resources:
            counts[r.type] = counts.get(r.type, 0) + 1
        return dict(sorted(counts.items()))


def _plain(value: Any) -> Any:
    """Make deserialized inputs JSON-friendly: unknowns become None, secrets stay hidden."""
    if isinstance(value, Unknown) or value == rpc.UNKNOWN:
        return None  # known only after apply
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire carries every number as a double; 32.0 nodes were 32 in the program
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET_PLACEHOLDER  # a secret envelope: show that there is a value, never the value
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return "<resource>"
    return json.loads(json.dumps(value, default=str))


class RecordingMocks(pulumi.runtime.Mocks):
    """Echo inputs as outputs; in preview, ids are empty so dependent values stay unknown."""

    def __init__(self, preview: bool, answers: Mapping[str, Callable[[dict], dict]] | None = None):
        self.preview = preview
        self.answers = dict(answers or {})

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        outputs = dict(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            outputs.setdefault("outputs", {})
        if args.typ == "aws:eks/nodeGroup:NodeGroup" and not self.preview:
            # EKS reports a managed node group's Auto Scaling group once created (always one); programs read
            # its name (capacity-block scheduled actions), so up mode answers the way the provider does.
            outputs.setdefault("resources", [{"autoscalingGroups": [{"name": f"eks-{args.name}-mock"}]}])
        resource_id = "" if self.preview else f"{args.name}-id"
        return resource_id, outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        answer = self.answers.get(args.token)
        if answer is not None:
            return answer(args.args)
        if args.token == "gcp:compute/getZones:getZones":
            region = args.args.get("region") or "us-central1"
            return {"names": DEFAULT_ZONES.get(region, [f"{region}-a", f"{region}-b", f"{region}-c"])}
        if args.token == "aws:index/getAvailabilityZones:getAvailabilityZones":
            # The region asked for (the programs pass their plan's region), so a plan in us-east-2 gets
            # us-east-2 zones: AWS zone names are the region name plus a letter.
            region = args.args.get("region") or "us-east-1"
            names = DEFAULT_ZONES.get(region, [f"{region}{letter}" for letter in "abc"])
            return {"names": names, "zoneIds": [f"{_aws_zone_id_prefix(region)}-az{i + 1}" for i in range(len(names))]}
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": "123456789012", "arn": "arn:aws:iam::123456789012:user/mock",
                    "userId": "MOCK", "id": "123456789012"}
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}
        if args.token == "aws:index/getRegion:getRegion":
            return {"name": "us-east-1", "region": "us-east-1", "id": "us-east-1"}
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"project": "mock-project", "region": "us-central1", "zone": "us-central1-a",
                    "accessToken": "mock", "id": "mock"}
        return {}


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, plus a record of the options the mocks API does not show."""

    def __init__(self, mocks: RecordingMocks, capture: Capture):
        super().__init__(mocks)
        self.capture = capture
        self.stack_urn: str | None = None

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN as the engine forms it, not as the SDK's mock does.

        The engine (pulumi/pulumi pkg/resource/deploy/deployment.go, `generateURN`) prefixes a type with
        the parent's whole qualified type chain, except when the parent is the root stack; the SDK mock
        takes only the parent's last type and keeps the stack's. Checked against real documents in
        tests/fixtures/urns (docs/contracts.md, section 2.2)."""
        if parent:
            qualified = parent.split("::")[2]
            if qualified != STACK_TYPE:
                type_ = f"{qualified}${type_}"
        return "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), type_, name])

    def RegisterResource(self, request):  # noqa: N802 (gRPC method name)
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            self.stack_urn = response.urn
            return response
        inputs = _sync_await(_deserialize(request.object))
        parent = request.parent or None
        if parent == self.stack_urn:
            parent = None
        self.capture.resources.append(
            CapturedResource(
                type=request.type,
                name=request.name,
                urn=response.urn,
                parent=parent,
                inputs=_plain(inputs),
                custom=bool(request.custom),
                protect=bool(request.protect),
                retain_on_delete=bool(request.retainOnDelete),
                provider=request.provider,
                dependencies=list(request.dependencies),
            )
        )
        return response

    def RegisterResourceOutputs(self, request):  # noqa: N802
        if self.stack_urn and request.urn == self.stack_urn:
            outputs = _sync_await(_deserialize(request.outputs))
            self.capture.outputs.update(_plain(outputs))
        return super().RegisterResourceOutputs(request)


async def _deserialize(struct) -> dict[str, Any]:
    return rpc.deserialize_properties(struct, keep_unknowns=False) or {}


def run_program(
    program: Callable[[], None],
    *,
    project: str = "accel",
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
    preview: bool = True,
    answers: Mapping[str, Callable[[dict], dict]] | None = None,
) -> Capture:
    """Run `program` as a stack on the mock engine; return what it registered and exported.

    `config` keys are fully qualified (`accel:workload`) and values are strings, as the CLI
    would pass them. Each run gets a fresh event loop and fresh runtime settings, so many
    runs can share one process.
    """
    capture = Capture()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    thread_loops: list[asyncio.AbstractEventLoop] = []
    loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix="accel-mock-engine",
                                                 initializer=_give_thread_a_loop, initargs=(thread_loops,)))
    pulumi.runtime.set_all_config(dict(config or {}))
    mocks = RecordingMocks(preview=preview, answers=answers)
    monitor = RecordingMonitor(mocks, capture)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    set_root_resource(None)  # a previous run in this process leaves its Stack as the root
    try:
        _sync_await(run_in_stack(program))
    finally:
        set_root_resource(None)
        # The SDK runs monitor calls on the loop's default executor; without this every run
        # would leave its loop and a pool of threads (and their file descriptors) behind.
        loop.run_until_complete(loop.shutdown_default_executor())
        # The worker threads have ended (shutdown joins them), so their loops can be closed here.
        for thread_loop in thread_loops:
            thread_loop.close()
        loop.close()
    # Monitor calls run on a thread pool, so registration order varies between runs; a fixed
    # order (parents before children, then by URN) keeps plan output and its JSON diffable.
    capture.resources.sort(key=_tree_order(capture.resources))
    return capture


def _tree_order(resources: list[CapturedResource]) -> Callable[[CapturedResource], tuple[int, str]]:
    """Sort key: depth in the parent tree, then URN."""
    parent_of = {r.urn: r.parent for r in resources}

    def depth(urn: str | None) -> int:
        count = 0
        while (urn := parent_of.get(urn)) is not None:
            count += 1
        return count

    return lambda resource: (depth(resource.urn), resource.urn)


def _give_thread_a_loop(thread_loops: list[asyncio.AbstractEventLoop]) -> None:
    """Executor thread initializer: the loop the mock monitor wants in this thread, owned by us.

    The SDK's mock monitor calls `_ensure_event_loop()` in the executor thread, which would
    otherwise create a loop nobody closes. An unclosed loop is closed by its `__del__` when the
    garbage collector reaches it, and at interpreter exit the collector may have closed its
    self-pipe socket first: then `__del__` prints "Exception ignored in BaseEventLoop.__del__ ...
    ValueError: Invalid file descriptor: -1" on stderr, after the command's own message.
    """
    thread_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(thread_loop)
    thread_loops.append(thread_loop)  # list.append is atomic; run_program closes them after shutdown
