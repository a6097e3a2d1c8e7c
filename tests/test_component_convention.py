"""One component convention on every cloud: args check themselves on construction, raise the one
error type (ComponentArgsError) with one message shape, and are built from the Plan the same way."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import accel.components
from accel.base.errors import ComponentArgsError
from accel.components.tags import ResourceTags

TAGS = ResourceTags(workload="llama-70b", stack="dev", owner="ml-platform", cost_center="research")
MODULES = [importlib.import_module(m.name)
           for m in pkgutil.walk_packages(accel.components.__path__, prefix="accel.components.")]
ARGS_CLASSES = sorted({cls for module in MODULES for _, cls in inspect.getmembers(module, inspect.isclass)
                       if cls.__name__.endswith("Args") and cls.__module__ == module.__name__
                       and dataclasses.is_dataclass(cls)}, key=lambda c: f"{c.__module__}.{c.__name__}")
# The args TrainingCluster builds from a Plan (EksClusterArgs is built from the AwsNetwork instead).
FROM_PLAN = {"accel.components.gcp.network.GcpNetworkArgs", "accel.components.gcp.cluster.GkeClusterArgs",
             "accel.components.gcp.gpu.GpuNodePoolArgs", "accel.components.gcp.tpu.TpuSliceArgs",
             "accel.components.gcp.storage.TrainingStorageArgs", "accel.components.aws.network.AwsNetworkArgs",
             "accel.components.aws.gpu.GpuNodeGroupArgs", "accel.components.aws.storage.TrainingStorageArgs"}


def qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__name__}"


def test_the_args_classes_of_every_cloud_are_found():
    clouds = {qualified(cls).split(".")[2] for cls in ARGS_CLASSES}
    assert {"gcp", "aws", "kubernetes", "training_cluster"} <= clouds


@pytest.mark.parametrize("cls", ARGS_CLASSES, ids=qualified)
def test_every_args_class_checks_itself_on_construction(cls):
    assert "__post_init__" in vars(cls), f"{qualified(cls)} must validate in __post_init__"


@pytest.mark.parametrize("name", sorted(FROM_PLAN))
def test_args_built_from_the_plan_have_for_plan_on_every_cloud(name):
    module, _, class_name = name.rpartition(".")
    cls = getattr(importlib.import_module(module), class_name)
    assert isinstance(inspect.getattr_static(cls, "for_plan"), classmethod)
    assert list(inspect.signature(cls.for_plan).parameters)[0] == "plan"


def test_every_error_a_component_defines_is_the_one_component_error():
    errors = [cls for module in MODULES for _, cls in inspect.getmembers(module, inspect.isclass)
              if issubclass(cls, Exception) and cls.__module__ == module.__name__]
    assert errors and all(issubclass(cls, ComponentArgsError) for cls in errors)


def bad_gcp_network():
    from accel.components.gcp.network import GcpNetworkArgs
    GcpNetworkArgs(region="us-central1", tags=TAGS, mtu=10)


def bad_aws_network():
    from accel.components.aws.network import AwsNetworkArgs
    AwsNetworkArgs(region="us-east-1", zones=["us-east-1a"], tags=TAGS)


@pytest.mark.parametrize(("build", "where", "value"), [
    (bad_gcp_network, "GcpNetwork.mtu", 10),
    (bad_aws_network, "AwsNetworkArgs.zones", ["us-east-1a"]),
])
def test_a_bad_argument_names_the_component_property_value_and_what_is_allowed(build, where, value):
    with pytest.raises(ComponentArgsError) as raised:
        build()
    assert str(raised.value).startswith(f"{where}: {value!r} is not valid; ")
    assert (raised.value.field, raised.value.value) == (where.split(".", 1)[1], value)


def test_kubernetes_args_check_themselves_on_construction():
    from accel.components.kubernetes.accelerator_stack import AcceleratorStackArgs
    with pytest.raises(ComponentArgsError, match="at least one accelerator pool"):
        AcceleratorStackArgs(tags=TAGS, pools=[])
