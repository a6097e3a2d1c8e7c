"""What every served component shares: ownership labels, the storage a stack keeps, the plumbing
that turns a facade's hand-written inputs into the Python API's args, and `serve`, the steps every
facade takes once they are built."""

import importlib
import inspect
from typing import Any, Callable, NotRequired, Optional, TypedDict

import pulumi
from pydantic import BaseModel, ValidationError

from accel.base.errors import ComponentArgsError
from accel.components.tags import ResourceTags


class Ownership(TypedDict):
    """Who pays, and what for: stamped as labels / tags on every billable resource."""

    workload: str
    """The workload the resources serve, e.g. llama-8b."""
    owner: NotRequired[str]
    """Team or person that owns the resources."""
    costCenter: NotRequired[str]
    """Cost center billed."""


class Storage(TypedDict):
    """What storage a stack keeps (the Plan's storage): buckets that outlive clusters, an optional filesystem."""

    datasetBucket: NotRequired[bool]
    """Create a dataset bucket; default true."""
    checkpointBucket: NotRequired[bool]
    """Create a versioned checkpoint bucket; default true."""
    filesystem: NotRequired[str]
    """none (default), filestore or managed-lustre (Google Cloud), fsx-lustre (AWS)."""
    filesystemCapacityGib: NotRequired[int]
    """Capacity of the filesystem in GiB."""
    checkpointRetentionDays: NotRequired[int]
    """Days overwritten checkpoint versions are kept; default 30."""


def tags(ownership: Ownership) -> ResourceTags:
    return ResourceTags(workload=ownership["workload"], stack=pulumi.get_stack(),
                        owner=ownership.get("owner", "unknown"), cost_center=ownership.get("costCenter", "unknown"))


def child(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def snake_name(name: str) -> str:
    """A camelCase input or output name -> the Python API's snake_case name."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def snake(inputs: dict[str, Any]) -> dict[str, Any]:
    """camelCase input keys -> the Python API's snake_case field names."""
    return {snake_name(key): value for key, value in inputs.items()}


def given(inputs: Any, declared: type, *, but: tuple[str, ...] = ()) -> dict[str, Any]:
    """The optional inputs the caller gave, as the Python API's keyword arguments (unset: its default): the
    NotRequired fields of `declared`, the facade's inputs TypedDict, `but` those the facade converts itself.
    Read from the declaration, so an optional input added there reaches the Python API without a second list."""
    optional = [key for key in declared.__annotations__ if key in declared.__optional_keys__ and key not in but]
    return snake({key: inputs[key] for key in optional if key in inputs})


def model(component: str, field: str, cls: type[BaseModel], data: dict[str, Any]) -> Any:
    """`cls` validated from a nested input (camelCase keys); a bad value is refused naming the property
    as the caller wrote it, `Component.field.key: what is wrong (got value)`."""
    try:
        return cls.model_validate(snake(data))
    except ValidationError as error:
        problems = []
        for problem in error.errors():
            path = ".".join(camel(p) if isinstance(p, str) else str(p)
                            for p in problem["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            whole = not path  # a check across keys: the message says which
            got = "" if whole or problem["type"] == "missing" else f" (got {problem['input']!r})"
            where = f"{component}.{field}" + ("" if whole else f".{path}")
            problems.append(f"{where}: {problem['msg'].removeprefix('Value error, ')}{got}")
        raise ComponentArgsError("\n".join(problems)) from None


def storage_plan(component: str, storage: Storage | None) -> Any:
    from accel.policies.plan import StoragePlan

    return model(component, "storage", StoragePlan, dict(storage or {}))


def served(facade: type) -> type[pulumi.ComponentResource]:
    """The public Python component a facade stands for: its `SERVES` ("module:Name")."""
    module, name = facade.SERVES.split(":")
    return getattr(importlib.import_module(module), name)


def serve(facade: pulumi.ComponentResource, name: str, built: Any, opts: Optional[pulumi.ResourceOptions],
          inner_options: Callable[[pulumi.ComponentResource], pulumi.ResourceOptions] = child) -> None:
    """What every facade does once its inputs are built into the Python API's args (`built`, so a bad input
    is refused before anything is declared): register as `accel:index:<its class>`, declare the Python
    component it `SERVES` as its only child (with `inner_options(facade)`), then set and register each output
    its class declares. An output is the served component's attribute of the same name in snake_case, or
    the one its class's `RENAMED_OUTPUTS` names; lists and maps of outputs become one output."""
    facade_class = type(facade)
    pulumi.ComponentResource.__init__(facade, f"accel:index:{facade_class.__name__}", name, None, opts)
    inner = served(facade_class)(name, built, inner_options(facade))
    renamed = getattr(facade_class, "RENAMED_OUTPUTS", {})
    outputs = {output: pulumi.Output.from_input(getattr(inner, renamed.get(output, snake_name(output))))
               for output in inspect.get_annotations(facade_class)}
    for output, value in outputs.items():
        setattr(facade, output, value)  # the attribute its class declares, which the schema analyzer read
    facade.register_outputs(outputs)
