"""Register the resources of a captured plan again, with the Pulumi SDK alone (no accel import).

`replay_program` registers exactly what a Capture (or its JSON dump) holds: same type tokens,
names, parents, inputs, providers, dependencies, protect and retainOnDelete, each after what it
needs: with plain `pulumi.CustomResource` / `ComponentResource` / `ProviderResource`, or, with
`through_classes=True`, as a program declaring those types does (`gcp.container.Cluster(...)`):
each resource an instance of its provider SDK class (found through the SDK's resource-module
registry, the table the engine uses to rebuild resources), its inputs handed over as an instance of
the class's `<Class>Args` input type, as the generated constructor does before it calls the base
class. The SDK then works out the input type's and the class's typed properties, which a plain
`CustomResource` with a dict skips. The constructor itself is not called: it refuses a required
input that the preview left unknown and the capture omits. The registered inputs are the captured
ones either way (plan_programs.replay_differences checks it).
benchmarks/bench_plan.py times it in-process; benchmarks/bare_plan_program.py runs it as a whole
process beside `accel plan` (benchmarks/bench_startup.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi


def provider_urn(reference: str) -> str | None:
    """A provider reference is `urn::id`; the urn itself contains `::`."""
    return reference.rsplit("::", 1)[0] if reference else None


def registration_order(resources: list[Any]) -> list[Any]:
    """The resources with each one after its parent, its provider and its dependencies.

    A Capture is sorted for display (parents first, then by URN), not in an order a program can
    register it in: a firewall sorts before the network it depends on. Depth-first over those
    edges, keeping the captured order among independent resources."""
    by_urn = {r.urn: r for r in resources}
    ordered: list[Any] = []
    placed: set[str] = set()

    def place(resource: Any) -> None:
        if resource.urn in placed:
            return
        placed.add(resource.urn)
        needs = [resource.parent, provider_urn(resource.provider) if resource.custom or resource.provider else None,
                 *resource.dependencies]
        for urn in needs:
            if urn and urn in by_urn:
                place(by_urn[urn])
        ordered.append(resource)

    for resource in resources:
        place(resource)
    return ordered


def provider_sdk_class(type_token: str) -> type | None:
    """The provider SDK's class for a resource or provider type token, from the registry its package
    fills on import (`pulumi.runtime.register_resource_module` / `register_resource_package`, whose
    entries name the module and class of every type), or None for a type no imported SDK registers."""
    import importlib

    from pulumi.runtime.rpc import get_resource_module, get_resource_package

    package, module, name = (type_token.split(":") + ["", ""])[:3]
    if package == "pulumi" and module == "providers":
        registered = get_resource_package(name, "")
        info = getattr(registered, "pkg_info", None)
        return getattr(importlib.import_module(info["fqn"]), info["class"]) if info else None
    registered = get_resource_module(package, module, "")
    info = getattr(registered, "mod_info", None)
    class_name = info["classes"].get(type_token) if info else None
    return getattr(importlib.import_module(info["fqn"]), class_name) if class_name else None


def _as_input_type(cls: type | None, props: dict[str, Any]) -> Any:
    """The captured inputs as the generated constructor hands them to the SDK: an instance of the
    class's `<Class>Args` input type with each input under its Python name (what
    `Cluster._internal_init` builds before `super().__init__`), or the plain dict where the class
    has no such type (the SDK then skips the input type's name and type tables, as for a dict)."""
    import sys

    from pulumi import _types

    args_type = getattr(sys.modules[cls.__module__], f"{cls.__name__}Args", None) if cls is not None else None
    if args_type is None or not _types.is_input_type(args_type):
        return props
    python_names = {pulumi_name: python_name
                    for python_name, pulumi_name in _types.input_type_py_to_pulumi_names(args_type).items()}
    if not set(props) <= set(python_names):
        return props
    args = args_type.__new__(args_type)
    args.__dict__.update({python_names[key]: value for key, value in props.items()})
    return args


def _instance(cls: type | None, fallback: type) -> Any:
    """An uninitialised instance of the SDK class (its own __init__ takes Python-named keywords and
    refuses a missing required input that a preview left unknown and the capture omits; the base
    class's __init__ is called instead, as the generated constructor ends), or of the plain fallback."""
    return object.__new__(cls if cls is not None and issubclass(cls, fallback) else fallback)


def replay_program(capture: Any, through_classes: bool = False) -> Callable[[], None]:
    """A program registering the captured resources, each after what it needs, with plain SDK base
    classes or (`through_classes`) as instances of the provider SDKs' classes for their types.
    `capture` has `resources` (with the CapturedResource attributes) and `outputs`."""
    resources = registration_order(list(capture.resources))
    outputs = dict(capture.outputs)
    classes = {r.type: provider_sdk_class(r.type) for r in resources} if through_classes else {}

    def program() -> None:
        by_urn: dict[str, pulumi.Resource] = {}
        components: list[pulumi.ComponentResource] = []
        for captured in resources:
            # A component with a provider is a provider's remote component (kubernetes:yaml/v2:ConfigFile).
            remote = not captured.custom and bool(captured.provider)
            provider = by_urn.get(provider_urn(captured.provider) or "") if captured.custom or remote else None
            depends_on = [by_urn[urn] for urn in captured.dependencies if urn in by_urn]
            opts = pulumi.ResourceOptions(
                parent=by_urn.get(captured.parent) if captured.parent else None,
                protect=captured.protect or None,
                retain_on_delete=captured.retain_on_delete or None,
                provider=provider,
                depends_on=depends_on or None)
            props: dict[str, Any] = dict(captured.inputs)
            cls = classes.get(captured.type)
            inputs = _as_input_type(cls, props) if through_classes else props
            if captured.type.startswith("pulumi:providers:"):
                resource = _instance(cls, pulumi.ProviderResource)
                pulumi.ProviderResource.__init__(resource, captured.type.rsplit(":", 1)[-1], captured.name, inputs, opts)
            elif captured.custom:
                resource = _instance(cls, pulumi.CustomResource)
                pulumi.CustomResource.__init__(resource, captured.type, captured.name, inputs, opts)
            elif remote:
                resource = _instance(cls, pulumi.ComponentResource)
                pulumi.ComponentResource.__init__(resource, captured.type, captured.name, inputs, opts, remote=True)
            else:
                resource = pulumi.ComponentResource(captured.type, captured.name, props, opts)
                components.append(resource)
            by_urn[captured.urn] = resource
        for component in components:
            component.register_outputs({})
        for key, value in outputs.items():
            pulumi.export(key, value)

    return program


class EchoMocks(pulumi.runtime.Mocks):
    """The SDK's mock engine contract at its barest: a preview (no ids), outputs echo the inputs."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        return "", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return {}


def run_on_stock_engine(program: Callable[[], None], *, project: str, stack: str,
                        mocks: pulumi.runtime.Mocks | None = None) -> None:
    """`program` on the SDK's stock MockMonitor in preview; nothing recorded."""
    import asyncio

    from pulumi.runtime.settings import set_root_resource
    from pulumi.runtime.stack import run_in_stack
    from pulumi.runtime.sync_await import _sync_await

    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.set_mocks(mocks or EchoMocks(), project=project, stack=stack, preview=True)
    set_root_resource(None)
    try:
        _sync_await(run_in_stack(program))
    finally:
        set_root_resource(None)
