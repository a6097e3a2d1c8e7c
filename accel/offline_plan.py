"""`accel plan` without the Pulumi CLI: run the stack program on the mock engine and report.

The project's own __main__.py runs unchanged, in preview mode, with the stack's merged config.
Everything it declares is captured (type, name, parent, inputs, protect, retain_on_delete);
the cost and the hardware decision come from the stack outputs the program exports
(`plan`, `hourlyUsd`, `runUsd`); the guardrails run offline over the captured resources.
"""

from __future__ import annotations

import gc
import importlib
import logging
import json
import importlib.abc
import importlib.machinery
import os
import re
import runpy
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from accel.stack import config as stack_config
from accel.base.yaml_files import read_yaml_file
from accel.base.errors import AccelError, UsageError
from accel.base.model import describe_validation_error
from accel.mock_engine import Capture, run_program

# The stack outputs the program exports for the plan report.
PLAN_OUTPUT = "plan"
NEEDED_BEFORE_UP_OUTPUT = "neededBeforeUp"
HOURLY_OUTPUT = "hourlyUsd"
RUN_OUTPUT = "runUsd"

PROVIDER_PACKAGES = ("pulumi_gcp", "pulumi_aws", "pulumi_kubernetes")
GUARDRAILS_MODULE = "accel.policies.guardrails.offline"

Progress = Callable[[str], None]


@dataclass
class PlanResult:
    """What one offline plan found: the captured graph, the decision, the cost, the guardrails."""

    stack: str
    project: str
    stack_file: Path
    capture: Capture
    plan: dict[str, Any] | None
    hourly_usd: float | None
    run_usd: float | None
    violations: list[dict[str, Any]] = field(default_factory=list)
    guardrails_note: str | None = None  # why guardrails were not evaluated, when they were not
    providers_loaded: list[str] = field(default_factory=list)  # provider packages imported by this run
    provider_load_seconds: dict[str, float] = field(default_factory=dict)
    existing_cluster: Any = None  # the stack's accel:cluster (an ExistingCluster), when it brings one
    job: dict[str, Any] | None = None  # the generated job's schedule check (accel.job)
    warnings: list[str] = field(default_factory=list)  # the program's warnings, in stack-file words
    built: Any = None  # accel.policies.cloud.pricing.BuiltCost: the declared resources priced against the catalog
    drift: Any = None  # accel.policies.cloud.pin_check.PriceDrift: the pin's $/h moved only because prices did
    fresh_choice: Any = None  # accel.policies.selection.pin_freshness.FreshChoice: choose now picks other hardware
    pinned_hourly_usd: float | None = None  # the Plan's own figures (the program's hourlyUsd / runUsd exports)
    pinned_run_usd: float | None = None

    @property
    def guardrails_evaluated(self) -> bool:
        return self.guardrails_note is None

    @property
    def needed_before_up(self) -> list[dict[str, str]]:
        """Config `pulumi up` still needs ({key, why, command}); the plan used placeholders for it."""
        needed = self.capture.outputs.get(NEEDED_BEFORE_UP_OUTPUT)
        return [dict(item) for item in needed] if isinstance(needed, list) else []

    @property
    def quotas(self) -> list[dict[str, Any]]:
        """The quota each region needs before `pulumi up` (accel.policies.cloud.quotas), from the exported Plan."""
        if not isinstance(self.plan, dict):
            return []
        from pydantic import ValidationError

        from accel.policies.plan import Plan
        from accel.policies.cloud.quotas import quota_needs

        try:
            plan = Plan.model_validate(self.plan)
        except ValidationError:   # not a Plan this version reads (an exported fragment): nothing to derive
            return []
        return [need.model_dump(mode="json") for need in quota_needs(plan)]

    @property
    def mandatory_violations(self) -> list[dict[str, Any]]:
        return [v for v in self.violations if str(v.get("level", "")).lower() == "mandatory"]

    @property
    def job_errors(self) -> list[dict[str, Any]]:
        """Why the stack's own job would not run (accel/job: the schedule check and accel/job/rules)."""
        return list((self.job or {}).get("errors") or [])

    @property
    def exit_code(self) -> int:
        """docs/contracts.md: 4 a mandatory guardrail violation; else 2 when the stack's job would not run
        (the findings `accel job` exits 2 on: a stack whose workload cannot run is invalid input); else 0."""
        from accel.base.errors import EXIT_GUARDRAIL, EXIT_INVALID

        if self.mandatory_violations:
            return EXIT_GUARDRAIL
        return EXIT_INVALID if self.job_errors else 0

    @property
    def providers_used(self) -> list[str]:
        """Provider packages the declared resources belong to (gcp, aws, kubernetes, ...)."""
        used = set()
        for resource in self.capture.resources:
            package = resource.type.split(":", 1)[0]
            if package == "pulumi" and resource.type.startswith("pulumi:providers:"):
                package = resource.type.rsplit(":", 1)[-1]
            if package not in ("pulumi", "accel"):
                used.add(package)
        return sorted(used)

    def cost_json(self) -> dict[str, Any]:
        """`cost` of docs/contracts.md 2.2: what is built, priced now; the Plan's own figures; any drift."""
        hours = (self.plan or {}).get("estimate", {}).get("hours") if isinstance(self.plan, dict) else None
        return {
            "hourly_usd": self.hourly_usd, "run_usd": self.run_usd,
            "pinned": {"hourly_usd": self.pinned_hourly_usd, "run_usd": self.pinned_run_usd},
            "built": None if self.built is None else self.built.to_json(hours if isinstance(hours, (int, float)) else None),
            "drift": None if self.drift is None else self.drift.model_dump(mode="json"),
        }

    def resources_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.capture.resources]

    def to_json(self) -> dict[str, Any]:
        """The `accel plan --json` object of docs/contracts.md (section 2.2)."""
        outputs = {k: v for k, v in self.capture.outputs.items() if k != PLAN_OUTPUT}
        return {
            "stack": self.stack,
            "resources": self.resources_json(),
            "summary": {"by_type": self.capture.by_type(), "count": len(self.capture.resources)},
            "cost": self.cost_json(),
            "plan": self.plan,
            "policy": {
                "violations": self.violations,
                "evaluated": self.guardrails_evaluated,
                "note": self.guardrails_note,
            },
            "providers": self.providers_used,
            "needed_before_up": self.needed_before_up,
            "quotas": self.quotas,
            "outputs": outputs,
            "job": self.job,
            "fresh_choice": None if self.fresh_choice is None else self.fresh_choice.model_dump(mode="json"),
            "warnings": self.warnings,
        }


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Reports provider modules as they load (the slow part of a plan) and times them.

    Provider packages import their submodules lazily and execute them on first use, so the
    report hooks the loader's exec_module, which runs when the module really loads.
    """

    def __init__(self, progress: Progress):
        self.progress = progress
        self.load_seconds: dict[str, float] = {}
        self._depth = 0

    def find_spec(self, fullname, path, target=None):  # noqa: ARG002 (finder protocol)
        top = fullname.partition(".")[0]
        if top not in PROVIDER_PACKAGES or fullname in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None  # let the regular finders answer
        original = spec.loader.exec_module

        def exec_module(module, _original=original, _name=fullname, _top=top):
            if self._depth:  # inside an outer provider module's load: its time and message cover this
                _original(module)
                return
            self.progress(f"loading {_name}")
            self._depth += 1
            started = time.perf_counter()
            try:
                _original(module)
            finally:
                self._depth -= 1
                self.load_seconds[_top] = self.load_seconds.get(_top, 0.0) + time.perf_counter() - started
                self.progress("declaring resources")

        spec.loader.exec_module = exec_module
        return spec


@contextmanager
def _program_environment(project_dir: Path, watcher: _ImportWatcher) -> Iterator[None]:
    """Run as the CLI would: from the project directory, with it first on sys.path."""
    saved_cwd, saved_path, saved_argv = os.getcwd(), list(sys.path), list(sys.argv)
    sys.path.insert(0, str(project_dir))
    sys.meta_path.insert(0, watcher)
    os.chdir(project_dir)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        sys.argv[:] = saved_argv
        if watcher in sys.meta_path:
            sys.meta_path.remove(watcher)


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a plan runs.

    Importing the provider SDKs and declaring the resources allocate hundreds of thousands of
    long-lived objects (modules, classes, Outputs) and almost no garbage cycles, so each of the
    full collections those allocations trigger scans the whole heap for nothing: about 0.5 s of a
    TPU plan. Reference counting still frees everything that is not a cycle; the collector is
    switched back on afterwards (a long-running process, such as the test suite, collects later).
    The one-shot `accel plan` process never has it on (accel/cli.py WITHOUT_COLLECTOR): switched
    back on here, its first collection would be a full one over that whole heap."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _normalize_plan(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    from accel.policies.plan import Plan

    try:
        return Plan.model_validate(raw).model_dump(mode="json")
    except ValidationError:
        return raw  # shown as exported; the program owns its shape


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _blame(message: str, source: str, stack: str) -> str:
    """Name the file the config came from: programs name the conventional stack file, which
    is wrong when the plan ran on --config some/other/file."""
    conventional = re.compile(rf"^\S*Pulumi\.{re.escape(stack)}\.ya?ml:", re.MULTILINE)
    if conventional.search(message):
        return conventional.sub(lambda _match: f"{source}:", message)
    return message if message.startswith(source) else f"{source}: {message}"


def _caused_by(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` in the chain of causes (the program re-raises errors as RunError)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _as_user_error(error: BaseException, source: str, stack: str) -> AccelError | None:
    """The user-facing form of a program exception, or None if it is a bug (keep the traceback).
    A stack decided at plan time with nothing feasible is NothingFeasible (exit 3), as in `accel choose`."""
    import pulumi

    from accel.base.errors import ComponentArgsError, NothingFeasible

    if _caused_by(error, NothingFeasible) is not None:
        return NothingFeasible(_blame(str(error), source, stack))
    if isinstance(error, UsageError):
        return UsageError(_blame(str(error), source, stack))
    if isinstance(error, pulumi.ConfigMissingError):
        return UsageError(f"{source}: {error.key}: missing; this stack needs it")
    if isinstance(error, pulumi.ConfigTypeError):
        return UsageError(f"{source}: {error.key}: {error}")
    if isinstance(error, ValidationError):
        return UsageError(describe_validation_error(error, source, prefix=(error.title,)))
    if isinstance(error, pulumi.RunError):
        # Pulumi's own convention for "show the user this message, not a stack trace".
        return UsageError(_blame(str(error), source, stack))
    if isinstance(error, ComponentArgsError):
        return UsageError(_blame(str(error), source, stack))
    return None


def load_policy_config(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    path = Path(path)
    shown = stack_config.display_path(path)
    data = read_yaml_file(path, "policy config file (YAML or JSON)", shown=shown)
    if data is not None and not isinstance(data, dict):
        raise UsageError(f"{shown}: expected a mapping of policy name to its configuration")
    return data or {}


class _ProgramWarnings(logging.Handler):
    """Collects the program's `pulumi.log.warn` messages (the mock engine logs them on the root logger)
    in stack-file words, instead of Python's last-resort handler printing them raw on stderr."""

    def __init__(self, stack_words: bool = True) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.stack_words = stack_words

    def emit(self, record: logging.LogRecord) -> None:
        from accel.stack.words import in_stack_words

        message = in_stack_words(record.getMessage()) if self.stack_words else record.getMessage()
        if message not in self.messages:
            self.messages.append(message)

    def in_order(self) -> list[str]:
        """The messages in a fixed order: a warning that names a resource is logged once the resource's URN
        resolves, an order that changes from run to run, so a plan (and a review's before/after) would churn.
        Sorted with numbers compared as numbers, so pool 2 comes before pool 12."""
        return sorted(self.messages, key=lambda text: [(0, int(part), "") if part.isdecimal() else (1, 0, part)
                                                       for part in re.split(r"(\d+)", text)])

    def __enter__(self) -> "_ProgramWarnings":
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)


def evaluate_guardrails(resources: list[dict[str, Any]], pack_config: dict[str, Any] | None,
                        config_source: str = "policy config",
                        stack_tags: dict[str, str] | None = None,
                        stack_words: bool = True) -> tuple[list[dict[str, Any]], str | None]:
    """(violations, note): note says why nothing was evaluated, when the guardrails are not there.
    `stack_words`: fixes in accel's stack-file words (accel/stack/words.py), for accel's own program; a
    program of your own keeps the components' words (ResourceTags(...)), since `accel:` keys are not its."""
    module_name = GUARDRAILS_MODULE
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name in ("accel.policies.guardrails", module_name):
            return [], f"{module_name} is not installed yet, so no guardrail ran"
        raise
    config_error = getattr(module, "PolicyConfigError", None)
    try:
        violations = module.evaluate(resources, pack_config, stack_tags=stack_tags)
    except Exception as error:
        if isinstance(config_error, type) and isinstance(error, config_error):
            raise UsageError(f"{config_source}: {error}") from None
        raise
    from accel.stack.words import in_stack_words

    if not stack_words:
        return [dict(v) for v in violations], None
    return [{**v, "message": in_stack_words(str(v.get("message", "")))} for v in map(dict, violations)], None


def _stack_tags(values: Mapping[str, Any]) -> dict[str, str]:
    """The stack file's `pulumi:tags`, which the CLI applies to the stack and hands policies as stack tags."""
    raw = values.get("pulumi:tags")
    try:
        tags = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {}
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}


def _existing_cluster(values: Any, source: str) -> Any:
    """The stack's accel:cluster, if any; None for a program that does not read accel settings."""
    from accel.stack.settings import settings_from_config

    try:
        return settings_from_config(values, source).cluster
    except UsageError:
        return None


def _catalog_for(values: Mapping[str, Any], source: str, project_dir: Path) -> Any:
    """The catalog the stack's prices come from: its accel:catalog overlay, else the bundled one."""
    from accel.policies.catalog import load_catalog
    from accel.stack.settings import settings_from_config

    overlay = settings_from_config(values, source).catalog
    return load_catalog(None if overlay is None else project_dir / overlay)


def _declared_reservation(values: Mapping[str, Any], source: str, plan: Any) -> Any:
    """The stack's declared reservation the Plan's pools run on (priced as it declares), or None."""
    from accel.policies.cloud.reservations import RESERVED_TYPES
    from accel.stack.settings import settings_from_config

    if plan.capacity.provisioning not in RESERVED_TYPES:
        return None
    try:
        reservations = settings_from_config(values, source).reservations
    except UsageError:
        return None
    return next((r for r in reservations if r.name == plan.capacity.reservation), None)


def _check_fresh_choice(result: PlanResult, plan: Any, catalog: Any, values: Mapping[str, Any], source: str) -> None:
    """Say when `accel choose` of the pin's workload would now pick other hardware (policies/selection/pin_freshness.py)."""
    from accel.policies.cloud.pin_check import repin_hint
    from accel.policies.selection.pin_freshness import fresh_choice
    from accel.stack.settings import settings_from_config

    try:
        reservations = settings_from_config(values, source).reservations
    except UsageError:
        reservations = []
    result.fresh_choice = fresh_choice(plan, catalog, reservations)
    if result.fresh_choice is not None:
        result.warnings.append(
            f"{result.stack}: {result.fresh_choice.note}. The pinned hardware is kept: to take the new answer, "
            f"{repin_hint(result.stack)}; to keep this one, say why in accel:workload (e.g. constraints.spot: never) "
            "and re-pin, so its rationale is true again")

def _price_built(result: PlanResult, values: Mapping[str, Any], source: str, project_dir: Path) -> None:
    """Price what the program declared; refuse a Plan whose pools, nodes or chips say otherwise.

    The reported cost becomes the built cost (pools + storage, priced now); the Plan's own figures
    stay in `cost.pinned`. A stack on an existing cluster builds no pools: its cost is the Plan's."""
    from accel.policies.cloud.pin_check import STACK_KEY, check_pin, repin_hint
    from accel.policies.plan import Plan
    from accel.policies.cloud.pricing import bill_reservation, price_resources

    result.pinned_hourly_usd, result.pinned_run_usd = result.hourly_usd, result.run_usd
    if result.plan is None:
        return
    try:
        plan = Plan.model_validate(result.plan)
    except ValidationError:
        return  # shown as exported; nothing typed to compare with
    catalog = _catalog_for(values, source, project_dir)
    built = price_resources(((r.type, r.name, r.inputs, r.parent) for r in result.capture.resources), catalog)
    held = _declared_reservation(values, source, plan)
    if held is not None:
        built = bill_reservation(built, held)
    result.built = built
    hourly = built.hourly_usd
    if result.existing_cluster is not None and not built.accelerator_pools:
        hourly += plan.chosen.hourly_usd  # nothing built to compare: the accelerators are the existing cluster's
    else:
        problems, result.drift = check_pin(plan, built, result.stack)
        if problems:
            raise UsageError(f"{source}: " + "; ".join(problems) + f"; {repin_hint(result.stack)}")
        if STACK_KEY in values:  # a stack without a pin was just decided by the same choose: nothing to compare
            _check_fresh_choice(result, plan, catalog, values, source)
    result.hourly_usd = round(hourly, 2)
    result.run_usd = round(hourly * plan.estimate.hours, 2)


def plan_stack(stack: str | None, config_path: Path | None, project_dir: Path, *,
               policy_config: Path | None = None, progress: Progress | None = None) -> PlanResult:
    """Run the project's program for `stack` on the mock engine in preview mode and report it.

    Raises UsageError (exit 2) for bad stack files and for program errors caused by the
    configuration; any other exception from the program is a bug and propagates unchanged.
    """
    with cycle_collection_paused():
        return _plan(stack, config_path, Path(project_dir).resolve(), policy_config, progress or (lambda _m: None))


def _plan(stack: str | None, config_path: Path | None, project_dir: Path, policy_config: Path | None,
          say: Progress) -> PlanResult:
    say("reading stack configuration")
    project = stack_config.load_project(project_dir)
    config = stack_config.load_stack_config(project_dir, stack, config_path)
    pack_config = load_policy_config(policy_config)
    main_file = project.main_file
    if not main_file.is_file():
        raise UsageError(f"{stack_config.display_path(main_file)}: the project has no program to plan")

    def program() -> None:
        import pulumi

        from accel.stack.deploy_keys import offline_placeholders

        # Secret keys too, so the program sees `Config.get_secret` values as secrets.
        pulumi.runtime.set_all_config(dict(config.values), list(config.secret_keys))
        # Nothing is created offline: keys only `pulumi up` needs get placeholders, and are reported.
        with offline_placeholders():
            runpy.run_path(str(main_file), run_name="__main__")

    source = config.source
    before = {name for name in PROVIDER_PACKAGES if name in sys.modules}
    say("running the program on the mock engine")
    watcher = _ImportWatcher(say)
    # accel's own program reads the stack file's accel: keys; a project of your own (`accel plan -C DIR`)
    # is told what to pass its components instead.
    from accel.stack.settings import PROJECT as ACCEL_PROJECT  # the project whose program reads accel: keys

    own_program = project.name == ACCEL_PROJECT
    warnings = _ProgramWarnings(stack_words=own_program)
    try:
        with _program_environment(project.main_dir, watcher), warnings:
            capture = run_program(program, project=project.name, stack=config.stack,
                                  config=config.values, preview=True)
    except Exception as error:  # noqa: BLE001 (classified below; bugs are re-raised as they are)
        shown = _as_user_error(error, source, config.stack)
        if shown is None:
            raise
        raise shown from None
    loaded = sorted(name for name in PROVIDER_PACKAGES if name in sys.modules and name not in before)

    outputs = capture.outputs
    plan = _normalize_plan(outputs.get(PLAN_OUTPUT))
    result = PlanResult(
        stack=config.stack,
        project=project.name,
        stack_file=config.stack_file,
        capture=capture,
        plan=plan,
        hourly_usd=_number(outputs.get(HOURLY_OUTPUT)),
        run_usd=_number(outputs.get(RUN_OUTPUT)),
        providers_loaded=loaded,
        provider_load_seconds=dict(watcher.load_seconds),
        warnings=warnings.in_order(),
    )
    result.existing_cluster = _existing_cluster(config.values, config.source)
    say("pricing the declared resources")
    _price_built(result, config.values, config.source, project.main_dir)
    say("checking that the job schedules")
    from accel.job.service import job_report

    result.job = job_report(result)
    say("evaluating guardrails")
    shown_policy_config = stack_config.display_path(policy_config) if policy_config else "policy config"
    result.violations, result.guardrails_note = evaluate_guardrails(result.resources_json(), pack_config,
                                                                    shown_policy_config, _stack_tags(config.values),
                                                                    stack_words=own_program)
    return result

