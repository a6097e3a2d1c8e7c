"""From a stack's config to the arguments of its TrainingCluster: the stack program's one step.

Kept out of `__main__.py` so it can be tested without running a Pulumi program, and so the
program itself stays a list of wiring steps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from accel.base.errors import UsageError
from accel.stack.deploy_keys import (DeployKey, missing_deploy_keys, missing_keys_message, placeholders_allowed,
                                     project_id_problem)
from accel.stack.settings import StackSettings, settings_from_config
from accel.components.provider_settings import ProviderSettings
from accel.components.tags import ResourceTags
from accel.components.training_cluster import TrainingClusterArgs
from accel.policies.lifecycle import Lifecycle, stack_tag_problems
from accel.policies.plan import Plan
from accel.policies.cloud.reservations import capacity_block_window
from accel.policies.workload import WorkloadFieldError, WorkloadSpec

# GKE cluster names are at most 40 characters and the components derive longer child names
# (service accounts, node pools) from the stack's resource name: keep it short.
MAX_RESOURCE_NAME = 20


def current_config() -> dict[str, str]:
    """All config the running program was given, however it arrived.

    Under the CLI the language host passes config in the PULUMI_CONFIG environment variable;
    the mock engine (accel plan, tests) sets it in the runtime. The SDK's own lookups consult
    both, in this order, and so does this.
    """
    from pulumi.runtime import config as runtime_config

    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def current_secret_keys(config: Mapping[str, str]) -> set[str]:
    """The keys of `config` that were secrets in the stack file (the CLI lists them in PULUMI_CONFIG_SECRET_KEYS; the
    mock engine marks them in the runtime)."""
    from pulumi.runtime import config as runtime_config

    listed = set(runtime_config.get_config_secret_keys_env())
    return {key for key in config if key in listed or runtime_config.is_config_secret(key)}


def stack_source(stack: str) -> str:
    return f"stacks/Pulumi.{stack}.yaml"


def stack_error_message(error: Exception, stack: str) -> str:
    """The error as the user should read it: prefixed with the stack file unless it already is."""
    source = stack_source(stack)
    message = str(error)
    return message if message.startswith(source) else f"{source}: {message}"


@dataclass
class StackProgram:
    """Everything the program needs, decided and validated before any resource registers."""

    settings: StackSettings
    plan: Plan
    pinned: bool
    lifecycle: Lifecycle
    resource_name: str
    cluster_args: TrainingClusterArgs
    notes: list[str] = field(default_factory=list)
    # What the program wrote otherwise than the stack file said (an owner folded into a Kubernetes label): warnings,
    # so `pulumi preview` and `accel plan` show them.
    rewrites: list[str] = field(default_factory=list)
    # Keys `pulumi up` still needs; non-empty only under offline planning, which used placeholders.
    missing_for_up: list[DeployKey] = field(default_factory=list)


def resource_name(stack: str) -> str:
    """A short, stable name for the stack's resources (stack names can be long)."""
    name = re.sub(r"[^a-z0-9-]", "-", stack.lower()).strip("-") or "accel"
    if not name[0].isalpha():
        name = f"s-{name}"
    if len(name) <= MAX_RESOURCE_NAME:
        return name
    import hashlib

    digest = hashlib.sha1(name.encode()).hexdigest()[:4]
    return f"{name[:MAX_RESOURCE_NAME - 5].rstrip('-')}-{digest}"


def read_stack(config: Mapping[str, str], stack: str) -> StackProgram:
    """Validate the stack's config, make or check the Plan, and build the cluster's arguments.

    Every mistake in the stack's config is a UsageError: pydantic's ValidationError (a pinned plan
    that no longer validates, say) is wrapped here, where the config enters, with its message unchanged."""
    from pydantic import ValidationError

    try:
        return _read_stack(config, stack)
    except ValidationError as error:
        raise UsageError(str(error)) from error


def _read_stack(config: Mapping[str, str], stack: str) -> StackProgram:
    source = stack_source(stack)
    settings = settings_from_config(config, source)
    notes: list[str] = []
    _refuse_unknown_reservations(settings, source)
    plan, pinned = _plan(settings, source, notes)
    _refuse_an_undeclared_clique(plan, settings, source)
    _refuse_a_service_past_its_capacity(plan, pinned, source)
    # A plan bought through a Capacity Block or a calendar-mode reservation takes the one the stack declares, or
    # (not booked yet) a placeholder offline and a needed_before_up entry saying what to book (accel/stack/bookings.py).
    from accel.stack.bookings import on_booking

    booked = on_booking(plan, settings.reservations, stack)
    plan, reservations, booking_key = booked.plan, booked.reservations, booked.needed
    # A fleet on several blocks was matched block by block (kind, type, zone, window, count) by on_booking.
    plan = _on_reservations(plan, pinned, reservations, source, check=not booked.block_ids)
    lifecycle = settings.lifecycle(source)
    declared_tags = _declared_tags(config, source)
    # `pulumi:tags` is ordinary stack config (pulumi/pulumi#12856): the CLI stamps it on the stack at
    # every `pulumi up`, and the program sees it like any other key. The reaper reads only those tags,
    # so an ephemeral stack without them would never be reaped: refuse it here, at preview/plan time.
    if lifecycle.ephemeral or declared_tags:
        problems = stack_tag_problems(lifecycle, declared_tags)
        if problems:
            raise UsageError(f"{source}: " + "; ".join(problems) + _TAGS_HINT)
    tags = ResourceTags(
        workload=plan.workload.name,
        stack=stack,
        owner=plan.workload.owner or settings.owner,
        cost_center=plan.workload.cost_center or settings.costCenter,
        **lifecycle.resource_tag_fields(),
    )
    _check_ownership(tags, plan, source)
    from accel.components.tags import ownership_rewrites

    rewrites = ownership_rewrites(tags, plan.cloud)
    gcp_project = config.get("gcp:project")
    if plan.cloud == "gcp" and gcp_project and project_id_problem(gcp_project):
        raise UsageError(f"{source}: {project_id_problem(gcp_project)}")
    api_access_cidrs = list(settings.apiAccessCidrs)
    if plan.cloud == "gcp":
        # GkeCluster refuses a /0 allowlist (components/gcp/cluster.py; EKS takes an explicit one): say it in the
        # stack file's words, not as the component argument master_authorized_cidrs.
        import ipaddress

        for index, cidr in enumerate(api_access_cidrs):
            if ipaddress.ip_network(cidr).prefixlen == 0:
                raise UsageError(f"{source}: accel:apiAccessCidrs[{index}]: {cidr!r} opens the GKE control plane to "
                                 "the whole internet; list your office/VPN/CI egress ranges, or leave the list empty "
                                 "and use the IAM-authenticated DNS endpoint")
    missing = missing_deploy_keys(plan, config, api_access_cidrs, stack) + ([booking_key] if booking_key else [])
    if missing and not placeholders_allowed():
        raise UsageError(f"{source}: {missing_keys_message(missing)}")
    for key in missing:  # offline only: plan with a visible placeholder, report the command
        if key.key == "gcp:project":
            gcp_project = str(key.placeholder)
        elif key.key == "accel:apiAccessCidrs":
            api_access_cidrs = list(key.placeholder)  # type: ignore[call-overload]
        shown = getattr(key.placeholder, "name", key.placeholder)   # a placeholder booking: its name
        notes.append(f"{key.key} is not set: planned with the placeholder {shown!r}; "
                     f"before `pulumi up`: {key.set_command}")
    # Every aws:* / gcp:* / kubernetes:* key reaches the stack's explicit provider or is refused naming it
    # (accel/stack/provider_config.py).
    from accel.stack.provider_config import provider_settings

    providers = provider_settings(config, plan, source, secret_keys=current_secret_keys(config),
                                  cluster=settings.cluster)
    aws_default_tags = _aws_default_tags(config, tags, source) if plan.cloud == "aws" else {}
    gcp_default_labels = _gcp_default_labels(config, tags, source) if plan.cloud == "gcp" else {}
    args = TrainingClusterArgs(
        plan=plan,
        tags=tags,
        aws_default_tags=aws_default_tags,
        gcp_default_labels=gcp_default_labels,
        aws_provider=providers["aws"] if plan.cloud == "aws" else ProviderSettings(),
        gcp_provider=providers["gcp"] if plan.cloud == "gcp" else ProviderSettings(),
        kubernetes_provider=providers["kubernetes"],
        lifecycle=lifecycle,
        gcp_project=gcp_project,
        existing_cluster=settings.cluster,
        api_access_cidrs=tuple(api_access_cidrs),
        upgrade_pause=(settings.upgradePause.start, settings.upgradePause.end) if settings.upgradePause else None,
        namespace=settings.namespace,
        capacity_block_window=capacity_block_window(plan, reservations),
        capacity_block_ids=booked.block_ids,
    )
    args.validate()
    return StackProgram(settings=settings, plan=plan, pinned=pinned, lifecycle=lifecycle,
                        resource_name=resource_name(stack), cluster_args=args, notes=notes, rewrites=rewrites,
                        missing_for_up=missing)


def _refuse_an_undeclared_clique(plan, settings: StackSettings, source: str) -> None:
    """A cloud Plan laid out by a larger NVLink clique than the hardware table's (gpu.nvlink_clique_nodes: 18 on
    p6e-gb200) holds only where the stack's Capacity Blocks say they are UltraServers of that size: a block of 18
    instances may be two u-p6e-gb200x36, whose tensor groups across trays would straddle two NVLink domains."""
    from accel.policies.cloud.reservations import declared_clique_nodes

    laid_out = plan.gpu.nvlink_clique_nodes if plan.gpu is not None and plan.cloud != "kubernetes" else None
    if laid_out is None:
        return
    declared = declared_clique_nodes(plan.gpu.machine_type, settings.reservations)
    if declared != laid_out:
        said = (f"UltraServers of {declared}" if declared else
                "no UltraServer type on every Capacity Block of it (ultraserverType)")
        raise UsageError(f"{source}: accel:plan: gpu.nvlink_clique_nodes is {laid_out} ({plan.gpu.machine_type} "
                         f"trays of one NVLink clique), but accel:reservations says {said}; declare each block's "
                         "ultraserverType as EC2 shows it, or re-run `accel choose --write-stack`")


def _refuse_a_service_past_its_capacity(plan: Plan, pinned: bool, source: str) -> None:
    """A pinned serving Plan on flex-start or queued capacity past the mode's longest request (chosen before the
    rule, policies/selection/serving_capacity.py): its nodes would all be removed within the request."""
    if not pinned:
        return
    from accel.policies.selection.serving_capacity import pinned_plan_refusal

    refused = pinned_plan_refusal(plan)
    if refused is not None:
        raise UsageError(f"{source}: accel:plan: capacity.provisioning is {plan.capacity.provisioning!r}: {refused}")


def _check_ownership(tags: ResourceTags, plan, source: str) -> None:
    """The owner and cost centre, by the rule `accel choose` applies to the workload (policies/tagging
    ownership_problem), named by the key they came from: a plan built without validation is caught here too."""
    from accel.policies.tagging import ownership_problem

    for field, workload_key, stack_key in (("owner", "owner", "accel:owner"),
                                           ("cost_center", "cost_center", "accel:costCenter")):
        value = getattr(tags, field)
        problem = ownership_problem(value)
        if problem:
            key = f"accel:workload.{workload_key}" if getattr(plan.workload, workload_key) else stack_key
            raise UsageError(f"{source}: {key}: {value!r}: {problem}")


def _aws_default_tags(config: Mapping[str, str], tags: ResourceTags, source: str) -> dict[str, str]:
    """The stack file's aws:defaultTags.tags, checked by AWS's tag rules (policies/tagging) and named by their key.
    The stack's AWS provider is explicit and reads no aws:* config by itself (pulumi/pulumi-aws#1307), so without
    this they would be dropped without a word."""
    from accel.components.tags import aws_default_tags_problem
    from accel.stack.provider_config import decoded_config_value

    raw = config.get("aws:defaultTags")
    if raw is None:
        return {}
    value = decoded_config_value(raw)
    if not isinstance(value, dict) or set(value) - {"tags"}:
        raise UsageError(f"{source}: aws:defaultTags: expected {{tags: {{KEY: VALUE, ...}}}}, the AWS provider's "
                         "defaultTags (its only setting is tags)")
    default_tags = value.get("tags") or {}
    found = aws_default_tags_problem(default_tags, tags)
    if found:
        raise UsageError(f"{source}: aws:defaultTags.{found[0]}: {found[1]}")
    return dict(default_tags)


def _gcp_default_labels(config: Mapping[str, str], tags: ResourceTags, source: str) -> dict[str, str]:
    """The stack file's gcp:defaultLabels, checked by GCP's label rule (policies/tagging) and named by their key;
    handed to the stack's Google provider, which is explicit and so reads no gcp:* config by itself."""
    from accel.components.tags import gcp_default_labels_problem
    from accel.stack.provider_config import decoded_config_value

    raw = config.get("gcp:defaultLabels")
    if raw is None:
        return {}
    labels = decoded_config_value(raw)
    found = gcp_default_labels_problem(labels, tags)
    if found:
        where = f"gcp:defaultLabels.{found[0]}" if found[0] else "gcp:defaultLabels"
        raise UsageError(f"{source}: {where}: {found[1]}")
    return dict(labels)


def _refuse_unknown_reservations(settings: StackSettings, source: str) -> None:
    """A declared reservation whose machine type or zone the catalog does not know is a typo to name now,
    not a plan that quietly ignores it (or a refusal saying the pools are elsewhere)."""
    if not settings.reservations:
        return
    from accel.policies.catalog import load_catalog
    from accel.policies.cloud.reservations import declaration_problems

    problems = declaration_problems(settings.reservations, load_catalog(settings.catalog).offerings,
                                    catalog_key="accel:catalog")
    if problems:
        raise UsageError("\n".join(f"{source}: accel:reservations.{p.index}.{p.key}: {p.problem}"
                                    for p in problems))


def _on_reservations(plan: Plan, pinned: bool, reservations: list, source: str, check: bool = True) -> Plan:
    """A plan decided here takes the stack's reservation of its machine type; any plan must fit the
    declared reservations (machine type, zone, count), or the stack is refused before `pulumi up`."""
    from accel.policies.cloud.reservations import reservation_problems, use_reservation

    if not pinned:
        plan = use_reservation(plan, reservations)
    problems = reservation_problems(plan, reservations) if check else []
    if problems:
        raise UsageError(f"{source}: accel:reservations: the planned pools do not fit the reservations: "
                         + "; ".join(problems))
    return plan


def _plan(settings: StackSettings, source: str, notes: list[str]) -> tuple[Plan, bool]:
    if settings.plan is not None:
        if settings.hardware is not None:
            raise UsageError(f"{source}: accel:hardware and accel:plan are both set; the pinned plan already "
                             "fixes the hardware, so remove one")
        notes.append(f"using the pinned plan: {settings.plan.chosen.accelerator} x {settings.plan.chosen.chips} "
                     f"on {settings.plan.cloud} {settings.plan.region} (catalog {settings.plan.catalog.version})")
        return settings.plan, True

    workload = settings.resolved_workload(source)
    try:
        return _decide(settings, workload, notes), False
    except WorkloadFieldError as error:
        # Found wrong only against the catalog: name the stack key the value came from.
        key = f"accel:{error.field}" if error.field.startswith("hardware") and settings.hardware else \
            f"accel:workload.{error.field}"
        raise WorkloadFieldError(key, error.problem, source) from None


def _decide(settings: StackSettings, workload: WorkloadSpec, notes: list[str]) -> Plan:
    from accel.policies.catalog import load_catalog, offerings_from_inventory
    from accel.policies.selection.choose import choose_plan, plan_from_pin

    from accel.policies.cloud.reservations import with_declared_cliques

    # Capacity Blocks that name their UltraServers (u-p6e-gb200x72) give the layout their NVLink clique.
    catalog = with_declared_cliques(load_catalog(settings.catalog), settings.reservations)
    extra = []
    if settings.cluster is not None:
        extra = offerings_from_inventory(
            {"accelerator": e.accelerator, "count": e.chips, "usd_per_chip_hour": e.usd_per_chip_hour,
             "name": e.name or settings.cluster.name, "gpus_per_node": e.gpus_per_node,
             "nvlink_domain_gpus": e.nvlink_domain_gpus, "nvlink_clique_label": e.nvlink_clique_label}
            for e in settings.cluster.inventory)
    if workload.hardware is not None:
        plan = plan_from_pin(workload, catalog, extra_offerings=extra, reservations=settings.reservations)
        notes.append(f"no pinned plan: estimated the hardware pin at run time (catalog {catalog.version})")
    else:
        plan = choose_plan(workload, catalog, settings.objective, extra_offerings=extra,
                           reservations=settings.reservations)
        notes.append(f"no pinned plan: chose {plan.chosen.accelerator} x {plan.chosen.chips} at run time "
                     f"(catalog {catalog.version}); pin it with `accel choose --write-stack` so prices "
                     "can't change the hardware")
    return plan


_TAGS_HINT = ("; `accel reap` reads only the stack's tags, so without them it never tears this stack down "
              "(see docs/reap.md, \"Marking a stack ephemeral\")")


def _declared_tags(config: Mapping[str, str], source: str) -> dict | None:
    raw = config.get("pulumi:tags")
    if raw is None:
        return None
    try:
        tags = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        raise UsageError(f"{source}: pulumi:tags: expected a mapping of tag names to values") from None
    if not isinstance(tags, dict):
        raise UsageError(f"{source}: pulumi:tags: expected a mapping of tag names to values")
    return tags
