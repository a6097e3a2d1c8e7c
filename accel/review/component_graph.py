"""The cluster's component tree: components as nodes, parent edges, child-resource counts.

Only component resources (custom=false, e.g. accel:gcp:TpuSlice) become nodes, and at most
MAX_NODES of them, shallowest and busiest first, so the diagram stays readable. A component
whose own step is hidden (`same` steps are not in a preview by default) still appears
when a changed child names it as parent.
"""

from __future__ import annotations

from accel.review.changes import STACK_TYPE, ResourceChange, action_rank
from accel.review.model import ComponentGraph, ComponentNode
from accel.review.preview_json import split_urn

MAX_NODES = 12


def component_graph(changes: list[ResourceChange], max_nodes: int = MAX_NODES) -> ComponentGraph:
    components: dict[str, dict] = {}
    for change in changes:
        if not change.custom and change.type != STACK_TYPE:
            components[change.urn] = {"type": change.type, "name": change.name, "parent": change.parent,
                                      "action": change.action, "children": {}}
    for change in changes:
        parent = change.parent
        if not parent or parent in components:
            continue
        try:
            _, _, type_token, name = split_urn(parent)
        except ValueError:
            continue
        if type_token != STACK_TYPE and not type_token.startswith("pulumi:providers:"):
            components[parent] = {"type": type_token, "name": name, "parent": None, "action": "same",
                                  "children": {}}
    for change in changes:
        if change.custom and change.parent in components:
            children = components[change.parent]["children"]
            children[change.action] = children.get(change.action, 0) + 1

    def depth(key: str) -> int:
        level, seen = 0, {key}
        parent = components[key]["parent"]
        while parent in components and parent not in seen:
            seen.add(parent)
            level += 1
            parent = components[parent]["parent"]
        return level

    nodes = []
    for key, info in components.items():
        actions = [info["action"], *info["children"]]
        state = min(actions, key=action_rank)
        parent = info["parent"] if info["parent"] in components else None
        nodes.append(ComponentNode(key, info["type"], info["name"], parent, depth(key), state,
                                   dict(sorted(info["children"].items(), key=lambda kv: action_rank(kv[0])))))
    changed = {n.key: sum(v for a, v in n.children.items() if a != "same") for n in nodes}
    nodes.sort(key=lambda n: (n.depth, -changed[n.key], n.type, n.name))
    kept = nodes[:max_nodes]
    return ComponentGraph(nodes=tuple(kept), hidden=len(nodes) - len(kept))
