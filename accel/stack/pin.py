"""Pin a workload and its Plan into a stack file, keeping everything else in it: keys, order, comments.

`accel choose WORKLOAD --write-stack NAME` writes through here. The file is edited as a round trip
(ruamel.yaml), so the comments that document a scenario, inside `config:` as well as at the top,
survive a re-pin; only `accel:workload` and `accel:plan` are replaced (and a region key of the plan's cloud that
names another region follows the plan: the region comes from the plan).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Callable

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from accel.base.errors import UsageError
from accel.base.safe_files import describe_os_error, read_text, write_text


def _round_trip() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=2, offset=0)
    # Unset fields read `null`, as `accel choose` has always written them (ruamel's default is empty).
    yaml.representer.add_representer(type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
    return yaml


def finite(value: Any) -> Any:
    """JSON-safe numbers: an infinite or NaN float becomes null (YAML would write .inf)."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _dump(yaml: YAML, data: Any) -> str:
    """The document as text, without the trailing blanks ruamel leaves where it folds a long plain
    scalar (kept only if removing them would change what the file says)."""
    out = io.StringIO()
    yaml.dump(data, out)
    text = out.getvalue()
    trimmed = "\n".join(line.rstrip() for line in text.split("\n"))
    return trimmed if YAML(typ="safe").load(trimmed) == YAML(typ="safe").load(text) else text


def _comment_lines_after(node: Any) -> list[str]:
    """The full-line comments after a block value's last entry.

    ruamel attaches a comment line that sits between two keys to the end of the value before it, so
    replacing a nested value would drop the comment written above the key that follows it."""
    while isinstance(node, (CommentedMap, CommentedSeq)) and len(node):
        last = list(node)[-1] if isinstance(node, CommentedMap) else len(node) - 1
        if isinstance(node[last], (CommentedMap, CommentedSeq)) and len(node[last]):
            node = node[last]
            continue
        slot = node.ca.items.get(last) or []
        index = 2 if isinstance(node, CommentedMap) else 0
        token = slot[index] if len(slot) > index else None
        if token is None:
            return []
        # The token's first line is the entry's own end-of-line comment (or empty): it goes with the entry.
        return [line.strip().removeprefix("#").strip() for line in token.value.split("\n")[1:]
                if line.strip().startswith("#")]
    return []


def _replace_keeping_comments(config: CommentedMap, key: str, value: Any) -> None:
    """config[key] = value, and the comments above the key after it stay above that key."""
    keys = list(config)
    lines = _comment_lines_after(config.get(key)) if key in config else []
    config[key] = value
    if lines and key in keys and keys.index(key) + 1 < len(keys):
        following = keys[keys.index(key) + 1]
        column = config.lc.data[following][1] if following in config.lc.data else 0
        config.yaml_set_comment_before_after_key(following, before="\n".join(lines), indent=column)


def _give_spot_plans_a_ttl(config: dict, plan: dict[str, Any], warn: Callable[[str], None] | None = None) -> None:
    """A spot plan is an ephemeral stack: write a TTL from its estimated run, and the stack tags the
    reaper reads, unless the file already sets an expiry or a TTL that covers this run. A TTL
    written for an earlier, shorter run (re-choosing onto an existing stack) is refreshed."""
    from accel.policies.lifecycle import Lifecycle, stack_tags
    from accel.policies.spot_ttl import ttl_covers_run, ttl_for_run

    if not plan["chosen"]["spot"] or "accel:expiresAt" in config:
        return
    hours = plan["estimate"]["hours"]
    current = config.get("accel:ttl")
    if current is not None:
        if ttl_covers_run(str(current), hours):
            return  # the file's own TTL still covers the new run (an unreadable one is replaced by one that does)
        if warn is not None:
            warn(f"accel:ttl {current!r} is shorter than the new run ({hours:,.1f} h estimated): set to "
                 f"{ttl_for_run(hours)} so the reaper does not destroy the stack mid-run")
    config["accel:ttl"] = ttl_for_run(hours)
    tags = config.get("pulumi:tags") if isinstance(config.get("pulumi:tags"), dict) else {}
    config["pulumi:tags"] = {**tags, **stack_tags(Lifecycle.from_config({"ttl": config["accel:ttl"]}))}


def _follow_the_plans_region(config: dict, plan: dict[str, Any], warn: Callable[[str], None] | None = None) -> None:
    """The region keys of the plan's cloud repeat the plan's region, or `accel plan` refuses the stack
    (accel/stack/provider_config.py): a re-pin into another region moves them with it, and says so."""
    cloud, region, zones = plan.get("cloud"), plan.get("region"), list(plan.get("zones") or [])
    moved: dict[str, Any] = {}
    if f"{cloud}:region" in config and region and config[f"{cloud}:region"] != region:
        moved[f"{cloud}:region"] = region
    if cloud == "gcp" and "gcp:zone" in config and zones and config["gcp:zone"] not in zones:
        moved["gcp:zone"] = zones[0]
    for key, value in moved.items():
        if warn is not None:
            warn(f"{key} {config[key]!r} set to {value}, the new plan's {'zone' if key == 'gcp:zone' else 'region'}")
        config[key] = value


def _say_where_the_stack_moves(path: Path, previous: Any, plan: dict[str, Any], warn: Callable[[str], None]) -> None:
    """A plan in another region or cloud than the one it replaces moves the stack: its compute, network and storage are
    regional, and data kept on delete (retain) stays behind. `accel choose` cannot know if the stack is deployed, so it
    says what that would mean."""
    if not isinstance(previous, dict):
        return
    before, after = (previous.get("cloud"), previous.get("region")), (plan.get("cloud"), plan.get("region"))
    if None in before or before == after:
        return
    warn(f"{path}: the new plan moves the stack from {before[0]} {before[1]} to {after[0]} {after[1]}: a deployed "
         f"stack's resources are rebuilt there, and its retained data (buckets, file systems) stays in {before[1]}; "
         "read `pulumi preview` before `pulumi up`")


def pin_to_stack_file(path: Path, workload: dict[str, Any], plan: dict[str, Any],
                      warn: Callable[[str], None] | None = None, reservation: dict[str, Any] | None = None) -> None:
    """Set `accel:workload` and `accel:plan` in the stack file at `path` (created when missing).

    Replacing a different workload (another name) is what the user asked for, but `warn` is told.
    `reservation`: the declared reservation or Capacity Block the plan runs on (`accel choose --reservations`),
    added to `accel:reservations` unless one of that name is there, so the stack plans on what it was chosen on."""
    yaml = _round_trip()
    data: Any = {}
    try:
        exists = path.exists()
    except (OSError, ValueError) as error:  # a name too long, a path through a file
        raise UsageError(f"{path}: cannot use this stack file name: "
                         f"{describe_os_error(error) if isinstance(error, OSError) else error}") from None
    if exists:
        from accel.base.yaml_files import read_yaml_file

        read_yaml_file(path, "stack file")  # the shared reader's messages: the line of a syntax error, a duplicate key
        try:
            data = yaml.load(read_text(path, "stack file"))
        except (YAMLError, OSError, UnicodeDecodeError) as error:
            raise UsageError(f"{path}: cannot update the stack file: {error}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise UsageError(f"{path}: a stack file must be a mapping with a 'config' section")
    config = data.get("config")
    if config is None:
        config = data["config"] = {}
    if not isinstance(config, dict):
        raise UsageError(f"{path}: config: expected a mapping of keys to values")
    from accel.stack.settings import check_known_key

    for key in config:  # a key `accel plan` would refuse: say so now, before writing a stack that cannot plan
        if isinstance(key, str) and key.startswith("accel:"):
            check_known_key(key, str(path))
    previous = config.get("accel:workload")
    previous_plan = config.get("accel:plan")
    if warn is not None and isinstance(previous, dict) and previous.get("name") not in (None, workload.get("name")):
        warn(f"{path}: replacing accel:workload {previous['name']!r} with {workload.get('name')!r} (and its plan)")
    if isinstance(config, CommentedMap):
        _replace_keeping_comments(config, "accel:workload", finite(workload))
        _replace_keeping_comments(config, "accel:plan", finite(plan))
    else:
        config["accel:workload"] = finite(workload)
        config["accel:plan"] = finite(plan)
    _give_spot_plans_a_ttl(config, plan, warn)
    _follow_the_plans_region(config, plan, warn)
    if warn is not None:
        _say_where_the_stack_moves(path, previous_plan, plan, warn)
    if reservation is not None:
        held = config.get("accel:reservations")
        if not isinstance(held, list):
            held = config["accel:reservations"] = []
        if not any(isinstance(entry, dict) and entry.get("name") == reservation.get("name") for entry in held):
            held.append(finite(reservation))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{path}: cannot write the stack file: {describe_os_error(error)}") from None
    write_text(path, _dump(yaml, data), "stack file")
