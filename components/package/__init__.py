"""The components other languages use: a Pulumi component package (provider/PulumiPlugin.yaml).

Pulumi serves Python components to TypeScript, Go, C#, Java and YAML programs by inferring a schema
from type annotations (`pulumi.provider.experimental`: component_provider_host and its Analyzer).
The analyzer reads plain TypedDict args of scalars, lists, maps and nested TypedDicts, and cannot read
postponed annotations (`from __future__ import annotations`, so these modules have none) nor
dataclasses that hold pydantic models, which is what the Python API's `...Args` are. Each component
here is therefore a thin facade: `*Inputs` with only what a person writes, converted to the Python
API's args (which derive and validate the rest), then the public Python component it `SERVES`
declared as its only child (AcceleratorStack adds a Kubernetes provider when given a kubeconfig).

Every public ComponentResource of accel.components has one facade (tests/test_component_package.py
derives the list from the public API). Names are unique across the package (the analyzer puts every
type in one `index` module), so the two clouds' storage and the AWS GPU group carry their cloud in
the name. Inputs repeat a field's declaration rather than inherit it from a base TypedDict: the
analyzer follows TypedDict inheritance for the fields but reads a field's description only from the
class that declares it, so inherited inputs would reach other languages undocumented. Outputs are
declared on each facade for the same reason (the analyzer reads them from the class's annotations,
in camelCase, never from the Python component's attributes at run time), so a facade's output list
mirrors its Python component's. These per-class declarations are what Pulumi's schema inference needs,
and are the only thing a facade writes out: its `__init__` builds the Python API's args from its inputs
and hands them to `common.serve`, the steps every facade shares (register, declare the served component,
set and register each declared output from the served component's attribute of the same snake_case
name, or the one its `RENAMED_OUTPUTS` names).
"""

from accel.components.package.aws import AwsGpuNodeGroup, AwsNetwork, AwsTrainingStorage, EksCluster
from accel.components.package.common import Ownership, Storage
from accel.components.package.gcp import GcpNetwork, GcpTrainingStorage, GkeCluster, GpuNodePool, TpuSlice, TpuVmSlice
from accel.components.package.kubernetes import AcceleratorStack
from accel.components.package.training import TrainingCluster

COMPONENTS = [TpuSlice, GpuNodePool, AwsGpuNodeGroup, TrainingCluster, GkeCluster, GcpNetwork, TpuVmSlice,
              GcpTrainingStorage, EksCluster, AwsNetwork, AwsTrainingStorage, AcceleratorStack]
"""What the package serves (provider/__main__.py)."""

__all__ = ["COMPONENTS", "Ownership", "Storage", *(c.__name__ for c in COMPONENTS)]
