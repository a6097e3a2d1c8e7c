"""The review's building blocks: property paths, accelerator pools from inputs, escaping, the diagram."""

from __future__ import annotations

from accel.review.changes import ResourceChange
from accel.review.component_graph import component_graph
from accel.review.hardware import accelerator_pool
from accel.review.markdown_text import code, marker, text
from accel.review.mermaid import flowchart, label_text
from accel.review.preview_json import UNKNOWN_VALUE
from accel.review.property_paths import MISSING, get_path, leaf_changes, parse_path, show_value

NODE_POOL = "gcp:container/nodePool:NodePool"


def test_detailed_diff_paths_with_quoted_keys_and_indexes_resolve():
    inputs = {"nodeConfig": {"labels": {"cloud.google.com/gke-tpu-topology": "2x2x4"}},
              "spec": {"groups": [{"quota": 16}]}}
    assert parse_path('nodeConfig.labels["cloud.google.com/gke-tpu-topology"]') == [
        "nodeConfig", "labels", "cloud.google.com/gke-tpu-topology"]
    assert get_path(inputs, 'nodeConfig.labels["cloud.google.com/gke-tpu-topology"]') == "2x2x4"
    assert get_path(inputs, "spec.groups[0].quota") == 16
    assert get_path(inputs, "spec.groups[3].quota") is MISSING


def test_leaf_changes_walk_into_nested_inputs():
    old = {"placementPolicy": {"type": "COMPACT", "tpuTopology": "2x2x2"}}
    new = {"placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4x4"}}
    assert leaf_changes(old["placementPolicy"], new["placementPolicy"], "placementPolicy") == [
        ("placementPolicy.tpuTopology", "2x2x2", "4x4x4")]


def test_values_known_only_after_apply_and_secrets_read_as_such():
    assert show_value(UNKNOWN_VALUE) == "(known after apply)"
    assert show_value("[secret]") == "[secret]"
    assert show_value(MISSING) == "(unset)"
    assert show_value(32.0) == "32"


def test_gke_tpu_pool_reads_topology_chips_and_node_count_as_the_mock_engine_records_them():
    pool = accelerator_pool(NODE_POOL, {
        "nodeCount": 32.0, "location": "us-east5", "nodeLocations": ["us-east5-a"],
        "placementPolicy": {"type": "COMPACT", "tpuTopology": "4x4x8"},
        "nodeConfig": {"machineType": "ct5p-hightpu-4t", "spot": True}})
    assert (pool.kind, pool.accelerator, pool.nodes, pool.chips, pool.topology, pool.spot, pool.location) == (
        "tpu", "TPU v5p", "32", 128, "4x4x8", True, "us-east5-a")


def test_gke_gpu_pool_with_autoscaling_shows_the_range_and_most_chips():
    pool = accelerator_pool(NODE_POOL, {
        "initialNodeCount": 0, "autoscaling": {"totalMinNodeCount": 0, "totalMaxNodeCount": 16},
        "nodeConfig": {"machineType": "a3-megagpu-8g",
                       "guestAccelerators": [{"type": "nvidia-h100-mega-80gb", "count": 8}]}})
    assert (pool.kind, pool.accelerator, pool.nodes, pool.chips) == ("gpu", "nvidia-h100-mega-80gb",
                                                                     "0–16 (autoscaling)", 128)


def test_gke_gpu_pool_without_guest_accelerators_reads_the_machine_family():
    pool = accelerator_pool(NODE_POOL, {"nodeCount": 2, "nodeConfig": {"machineType": "a3-highgpu-8g"}})
    assert (pool.accelerator, pool.chips) == ("H100", 16)


def test_cpu_node_pool_is_not_an_accelerator_pool():
    assert accelerator_pool(NODE_POOL, {"nodeCount": 1, "nodeConfig": {"machineType": "e2-standard-8"}}) is None


def test_tpu_vm_counts_chips_from_the_tensorcore_name():
    pool = accelerator_pool("gcp:tpu/v2Vm:V2Vm", {"acceleratorType": "v5p-128", "zone": "us-east5-a",
                                                  "schedulingConfig": {"spot": True}})
    assert (pool.accelerator, pool.chips, pool.spot) == ("TPU v5p", 64, True)


def test_eks_spot_node_group_reads_gpus_per_instance():
    pool = accelerator_pool("aws:eks/nodeGroup:NodeGroup", {
        "instanceTypes": ["p5.48xlarge"], "capacityType": "SPOT",
        "scalingConfig": {"minSize": 0, "desiredSize": 2, "maxSize": 4}})
    assert (pool.accelerator, pool.nodes, pool.chips, pool.spot) == ("H100", "0–4 (desired 2)", 32, True)


GCE_INSTANCE = "gcp:compute/instance:Instance"


def test_a_compute_engine_gpu_vm_made_outside_a_node_pool_is_an_accelerator_in_the_review():
    """A program that creates an a3-megagpu-8g VM directly is shown with its 8 H100 (it is priced by
    compute_cost too), spot when its scheduling says so; a CPU VM is not an accelerator."""
    pool = accelerator_pool(GCE_INSTANCE, {"machineType": "a3-megagpu-8g", "zone": "us-central1-a",
                                           "scheduling": {"provisioningModel": "SPOT"}})
    assert (pool.kind, pool.accelerator, pool.nodes, pool.chips, pool.spot, pool.location) == (
        "gpu", "H100", "1", 8, True, "us-central1-a")
    attached = accelerator_pool(GCE_INSTANCE, {"machineType": "n1-standard-16", "guestAccelerators": [
        {"type": "nvidia-tesla-t4", "count": 2}]})
    assert (attached.accelerator, attached.chips, attached.spot) == ("nvidia-tesla-t4", 2, False)
    assert accelerator_pool(GCE_INSTANCE, {"machineType": "e2-standard-8"}) is None


def test_odd_input_shapes_are_not_guessed_at():
    assert accelerator_pool(NODE_POOL, {"nodeConfig": "not-a-dict"}) is None
    assert accelerator_pool(NODE_POOL, {"nodeConfig": {"machineType": UNKNOWN_VALUE}}) is None


def test_text_escapes_table_pipes_html_and_dollar_signs():
    assert text("a|b </details> $5 *x*") == r"a\|b &lt;/details&gt; \$5 \*x\*"


def test_code_span_survives_backticks_and_pipes_in_tables():
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code("a|b", in_table=True) == r"`a\|b`"


def test_marker_is_one_safe_html_comment_per_stack():
    assert marker("acme/prod") == "<!-- accel-review stack=acme/prod -->"
    assert marker("x--><script>") == "<!-- accel-review stack=x-__script_ -->"


def test_mermaid_labels_cannot_close_the_label_or_inject_markup():
    assert label_text('a"b<c>#') == "a#34;b#60;c#62;#35;"


def change(type_token: str, name: str, action: str, parent: str | None = None, custom: bool = True):
    return ResourceChange(urn=f"urn:pulumi:dev::accel::{type_token}::{name}", type=type_token, name=name,
                          action=action, ops=[action], custom=custom, parent=parent)


def test_diagram_has_components_only_with_parent_edges_and_child_counts():
    root = change("accel:cluster:TrainingCluster", "c", "same", custom=False)
    slice_ = change("accel:gcp:TpuSlice", "s", "same", parent=root.urn, custom=False)
    pool = change(NODE_POOL, "s-pool", "replace", parent=slice_.urn)
    graph = component_graph([root, slice_, pool])
    assert [(n.type, n.parent, n.state, n.children) for n in graph.nodes] == [
        ("accel:cluster:TrainingCluster", None, "same", {}),
        ("accel:gcp:TpuSlice", root.urn, "replace", {"replace": 1}),
    ]
    assert "c0 --> c1" in flowchart(graph)


def test_diagram_is_capped_and_counts_what_it_leaves_out():
    root = change("accel:cluster:TrainingCluster", "c", "create", custom=False)
    slices = [change("accel:gcp:TpuSlice", f"s{i}", "create", parent=root.urn, custom=False) for i in range(30)]
    graph = component_graph([root, *slices], max_nodes=5)
    assert len(graph.nodes) == 5 and graph.hidden == 26
    assert graph.nodes[0].name == "c"
    assert 'more["… 26 more components"]' in flowchart(graph)
