"""accel's decisions: the workload spec, the catalog, the choice and the Plan the components build.

    from accel.policies import Plan, WorkloadSpec, load_workload, load_catalog, choose, choose_plan
    from accel.policies import tpu_pool, gpu_pool

Names load on first use (PEP 562): `accel.policies.hardware` and the guardrail pack stay cheap to import.
"""

from typing import TYPE_CHECKING

from accel.base.lazy import lazy_exports

_EXPORTS = {
    "Plan": "accel.policies.plan",
    "TpuPool": "accel.policies.plan",
    "GpuPool": "accel.policies.plan",
    "Capacity": "accel.policies.plan",
    "WorkloadSpec": "accel.policies.workload",
    "load_workload": "accel.policies.workload",
    "workload_from_mapping": "accel.policies.workload",
    "load_catalog": "accel.policies.catalog",
    "choose": "accel.policies.selection.choose",
    "choose_plan": "accel.policies.selection.choose",
    "make_plan": "accel.policies.selection.plan_builder",
    "Choice": "accel.policies.selection.choice",
    "NoFeasibleOption": "accel.policies.selection.choice",
    "tpu_pool": "accel.policies.selection.pools",
    "gpu_pool": "accel.policies.selection.pools",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from accel.policies.catalog import load_catalog
    from accel.policies.selection.choice import Choice, NoFeasibleOption
    from accel.policies.plan import Capacity, GpuPool, Plan, TpuPool
    from accel.policies.selection.plan_builder import make_plan
    from accel.policies.selection.pools import gpu_pool, tpu_pool
    from accel.policies.selection.choose import choose, choose_plan
    from accel.policies.workload import WorkloadSpec, load_workload, workload_from_mapping
