"""A serving replica over whole GPU nodes: tensor parallel in each node, a pipeline stage per node over the
scale-out network (vLLM's multi-node rule, assumptions.yaml inference.pipeline_serving).

1. Sizing (policies/selection/ladders.py): such replicas are offered only when no replica inside one node or NVLink
   domain holds the weights and one sequence's KV cache, from the fewest nodes that do, and only on a machine with a
   scale-out fabric whose bandwidth the hardware table states.
2. Estimate (policies/estimator/estimate.py InferenceModel): a token crosses every stage in turn, paying the
   hand-offs between them; the pipeline keeps one micro-batch per stage in flight, so its KV cache holds them all.
3. The Llama 3.1 405B bf16 service on 8 x H100 80GB nodes: refused before, now two-node replicas on GCP and AWS,
   their nodes in one compact placement / cluster placement group and one zone.
4. The job (stacks/Pulumi.llama-405b-serving-h100.yaml): a LeaderWorkerSet whose leader runs vLLM with
   --tensor-parallel-size 8 --pipeline-parallel-size 2 over the group through its multiprocessing backend, the worker
   headless, as vLLM v0.33.0's LWS example does; valid against the LWS CRD, placed by Kueue as one PodSet group.
"""

from __future__ import annotations

import copy
import functools
import json
import math

import jsonschema
import pytest

from accel.job.facts import runtime
from accel.job.manifests import SERVING_PORT, JobOptions, generate
from accel.job.context import JobContext
from accel.job.service import check_manifests, job_of
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.estimator.estimate import InferenceModel, resolve
from accel.policies.parallelism import serving_parallelism
from accel.policies.plan import Plan
from accel.policies.selection.choose import choose_plan
from accel.policies.selection.ladders import pipeline_sizes, replica_sizes
from accel.policies.workload import workload_from_mapping
from tests.conftest import planned_result
from tests.crds import CRDS, validate

STACK = "llama-405b-serving-h100"
LWS_CRD = CRDS / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
SERVICE_405B = {"name": "llama-405b-serving", "kind": "inference", "model": {"architecture": "llama3.1-405b"},
                "inference": {"tokens_per_second": 2000, "p99_latency_ms": 100, "framework": "pytorch",
                              "precision": "bf16"},
                "constraints": {"spot": "never", "accelerators": ["h100-80gb"]}}


def workload(**changes):
    data = copy.deepcopy(SERVICE_405B)
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value}
    return workload_from_mapping(data, "t.yaml")


@functools.cache
def _chosen(data: str) -> Plan:
    return choose_plan(workload_from_mapping(json.loads(data), "t.yaml"), load_catalog())


def chosen(clouds: list[str]) -> Plan:
    data = copy.deepcopy(SERVICE_405B)
    data["constraints"]["clouds"] = clouds
    return _chosen(json.dumps(data, sort_keys=True))


def model_on(accelerator: str, spec=None) -> InferenceModel:
    catalog = load_catalog()
    spec = spec or workload()
    return InferenceModel(spec, resolve(spec, catalog.defaults), catalog.accelerator(accelerator))


# ------------------------------------------------------------------------------ 1. sizing
def test_a_replica_spans_nodes_only_when_one_node_cannot_hold_it():
    p5 = load_catalog().offering("aws-p5.48xlarge")
    model = model_on("h100-80gb")
    need = model.hold_chips()
    assert need > 8, "405B in bf16 outgrows one 8 x 80 GB node"
    sizes = replica_sizes(p5, 256, need)
    pipelined = [s for s in sizes if s.stages > 1]
    assert [(s.hosts, s.chips, s.stages) for s in pipelined] == [(2, 16, 2), (4, 32, 4), (8, 64, 8), (16, 128, 16),
                                                                  (32, 256, 32)]
    # Mutated: a model one node holds gets the node's sizes only (one node first).
    assert all(s.stages == 1 and s.hosts == 1 for s in replica_sizes(p5, 256, 8))


def test_the_first_pipeline_holds_the_weights_and_one_sequence():
    p5 = load_catalog().offering("aws-p5.48xlarge")
    assert [s.hosts for s in pipeline_sizes(p5, 256, 17)] == [4, 8, 16, 32]   # 17 GPUs: 3 nodes, rounded to 4
    assert pipeline_sizes(p5, 16, 17) == []                                   # max_replica_chips bounds it


def test_no_pipeline_on_a_machine_without_a_scale_out_fabric():
    g6e = load_catalog().offering("aws-g6e.48xlarge")
    assert g6e.fabric == "none"
    assert pipeline_sizes(g6e, 256, 64) == []
    assert all(s.stages == 1 for s in replica_sizes(g6e, 256, 64))


def test_an_nvlink_domain_pair_stays_one_tensor_group_and_pipelines_start_past_it():
    """A4X: two trays are one tensor-parallel group over NVLink, so a pipeline of trays starts at four, and every
    size's stages are the Plan's pipeline degree for it (policies/parallelism.py serving_parallelism)."""
    a4x = load_catalog().offering("gcp-a4x-highgpu-4g")
    domain = hardware.current().nvlink_domain_unit_nodes(a4x.machine_type, a4x.nvlink_clique_nodes)
    sizes = replica_sizes(a4x, 256, 9)
    assert [(s.hosts, s.stages) for s in sizes if s.hosts > 1] == [(2, 1), (4, 4), (8, 8), (16, 16), (32, 32),
                                                                   (64, 64)]
    for size in sizes:
        layout = serving_parallelism(size.chips, a4x.chips_per_host, size.hosts, domain)
        assert layout.pipeline == size.stages, size


# ------------------------------------------------------------------------------ 2. estimate
def test_a_token_crosses_every_stage_and_pays_the_hand_offs_between_them():
    model = model_on("h100-80gb")
    one_node, _ = model.step_seconds(8, 32)
    two_stages, bound = model.step_seconds(16, 32, stages=2)
    defaults = load_catalog().defaults.inference.pipeline_serving
    fabric = hardware.current().collective_fabric("h100-80gb")
    tokens = 32 * (1 + model.prompt_per_output)
    # Each of a stage's 8 tensor-parallel ranks sends its 1/8 slice to its peer (vLLM v0.33.0's all-gather send).
    assert defaults.split_over_tensor_ranks
    hand_off = (defaults.hop_latency_us.value * 1e-6
                + tokens * defaults.activation_tensors.value * model.hidden * 2 / 8
                / (fabric.scale_out_gbps * 1e9 / 8))
    # One hand-off between the two stages, and the sampled tokens' return (latency only).
    assert two_stages == pytest.approx(one_node + hand_off + defaults.hop_latency_us.value * 1e-6)
    assert bound == "memory-bandwidth"
    # Mutated: a pipeline whose hand-offs were free would be as fast as one node, which it is not.
    assert two_stages > one_node


def test_each_tensor_rank_sends_its_share_of_the_hand_off_not_the_whole():
    """Mutated back to v0.8.5's Ray compiled graph (every rank sends the whole tensors): the hand-off's bytes take 8
    times as long on an 8-GPU stage, which the old rule charged."""
    model = model_on("h100-80gb")
    latency = model.pipeline_hops_seconds(2, 0, 8)
    split = model.pipeline_hops_seconds(2, 64, 8) - latency
    model.hop_split = False
    whole = model.pipeline_hops_seconds(2, 64, 8) - latency
    assert whole == pytest.approx(8 * split) and split > 0


def test_a_pipeline_keeps_one_micro_batch_per_stage_in_flight():
    model = model_on("h100-80gb")
    replica, why = model.replica(16, stages=2)
    assert why == "" and replica is not None and replica.stages == 2
    micro = replica.batch // 2
    assert replica.batch == 2 * micro
    step, _ = model.step_seconds(16, micro, stages=2)
    assert replica.step_seconds == pytest.approx(step)
    assert replica.tokens_per_second == pytest.approx(2 * micro / step)
    # The KV cache holds every micro-batch: the memory bound is the whole replica's, shared by the stages.
    free = 16 * model.usable_hbm - model.weight_bytes
    assert replica.batch <= free / model.kv_bytes_per_sequence


def test_a_pipeline_without_room_for_a_sequence_per_micro_batch_is_refused():
    model = model_on("h100-80gb")
    # Room for one and a half sequences over the 2 stages (TP 8 each: one copy of the 8 KV heads): one micro-batch
    # of one, not two. (As TP 16 the replica would store two copies, InferenceModel.kv_copies: room for none.)
    model.kv_bytes_per_sequence = (16 * model.usable_hbm - model.weight_bytes) / 1.5
    assert model.sequence_kv_bytes(16, stages=2) == model.kv_bytes_per_sequence
    replica, why = model.replica(16, stages=2)
    assert replica is None and why == "no room for the KV cache of one sequence in each of its 2 micro-batches"


def test_a_chip_with_no_scale_out_figure_has_no_pipeline():
    model = model_on("h100-80gb")
    model.scale_out_bytes_per_s = None
    assert model.pipeline_hops_seconds(1, 8) == 0.0
    with pytest.raises(ValueError, match="scale-out bandwidth"):
        model.pipeline_hops_seconds(2, 8)


# ------------------------------------------------------------------------------ 3. the 405B service
@pytest.mark.parametrize("cloud, machine", [("aws", "p5.48xlarge"), ("gcp", "a3-highgpu-8g")])
def test_the_405b_bf16_service_runs_on_two_node_replicas_in_one_placement_group(cloud, machine):
    plan = chosen([cloud])
    assert (plan.chosen.machine_type, plan.chosen.hosts) == (machine, 4)
    details = plan.estimate.details
    assert (details["replica_chips"], details["replicas"], details["pipeline_stages"]) == (16, 2, 2)
    assert plan.parallelism.tensor == 8 and plan.parallelism.pipeline == 2 and plan.parallelism.group_nodes == 2
    assert plan.gpu.compact_placement and len(plan.zones) == 1
    assert plan.gpu.fabric != "none"
    assert any("2 pipeline stages over the scale-out network" in line for line in plan.rationale)
    names = [a.name for a in plan.estimate.assumptions]
    assert "pipeline-parallel replica" in names and "pipeline hand-off" in names


def test_the_405b_service_on_h200_stays_on_one_node():
    """141 GB H200s hold it in one node: no pipeline, the fleet spread over the zones as before."""
    data = copy.deepcopy(SERVICE_405B)
    data["constraints"]["accelerators"] = ["h200-141gb"]
    data["constraints"]["clouds"] = ["aws"]
    plan = _chosen(json.dumps(data, sort_keys=True))
    assert plan.estimate.details["replica_chips"] == 8 and "pipeline_stages" not in plan.estimate.details
    assert not plan.gpu.compact_placement


# ------------------------------------------------------------------------------ 4. the job
@pytest.fixture(scope="module")
def serving():
    result = planned_result(STACK)
    return result, job_of(result)


def _lws(job):
    return next(m for m in job.manifests if m["kind"] == "LeaderWorkerSet")


def test_every_pod_of_the_group_runs_vllm_over_it_and_only_the_leader_serves(serving):
    """vLLM v0.33.0's LWS example: the same `vllm serve` in every pod with --nnodes, --node-rank and --master-addr
    from LWS's environment; the workers --headless and without the leader's --port (no API server to put on one:
    docs/deployment/frameworks/lws.md l.75 writes none); no Ray (the image carries none)."""
    _, job = serving
    lws = _lws(job)
    helper = runtime()["serving"]["multi_node"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2 and lws["spec"]["replicas"] == 2
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    command = leader["command"][-1]
    assert command.startswith("vllm serve ") and "ray" not in command
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in command
    assert command.endswith(" --nnodes $(LWS_GROUP_SIZE) --node-rank $(LWS_WORKER_INDEX) "
                            "--master-addr $(LWS_LEADER_ADDRESS)")
    assert f" --port {SERVING_PORT} " in command
    assert worker["command"][-1] == f"{command.replace(f' --port {SERVING_PORT}', '', 1)} --headless"
    assert "--port" not in worker["command"][-1]
    assert "ports" not in worker and leader["readinessProbe"]["tcpSocket"]["port"] == 8000
    for template in ("leaderTemplate", "workerTemplate"):
        spec = lws["spec"]["leaderWorkerTemplate"][template]["spec"]
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": helper["shm_size"]}} in spec["volumes"]
        assert {"name": "dshm", "mountPath": "/dev/shm"} in spec["containers"][0]["volumeMounts"]


def test_the_ray_recipe_of_the_old_image_would_not_start_in_the_new_one():
    """The v0.8.5 job ran `ray start` and the image's Ray helper; v0.33.0 ships no Ray: the recipe's facts say so and
    the LWS example they cite is the multiprocessing one."""
    helper = runtime()["serving"]["multi_node"]
    assert "script" not in helper and "ray_port" not in runtime()["serving"]
    assert "'Ray is an optional dependency" in helper["source"] and "Multiprocessing (default)" in helper["source"]


def test_an_image_of_your_own_gets_the_same_group(serving):
    result, job = serving
    plan = Plan.model_validate(result.plan)
    own = generate(plan, JobContext(stack="t"), JobOptions(image="registry.example/vllm:mine"))
    leader = _lws(own)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    default = _lws(job)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert leader["image"] == "registry.example/vllm:mine" and leader["command"] == default["command"]
    assert "readinessProbe" in leader


def test_the_group_is_valid_against_the_lws_crd_and_the_crd_catches_a_bad_one(serving):
    _, job = serving
    lws = _lws(job)
    validate(lws, LWS_CRD, "v1")
    bad = copy.deepcopy(lws)
    bad["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "RestartWhenever"
    with pytest.raises(jsonschema.ValidationError):
        validate(bad, LWS_CRD, "v1")


def test_kueue_places_each_replica_as_one_pod_set_group_and_the_stack_holds_it(serving):
    result, job = serving
    lws = _lws(job)
    group = lws["spec"]["leaderWorkerTemplate"]
    annotations = [group[t]["metadata"]["annotations"] for t in ("leaderTemplate", "workerTemplate")]
    assert annotations[0] == annotations[1]
    assert annotations[0]["kueue.x-k8s.io/podset-group-name"] == lws["metadata"]["name"]
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    report = check_manifests(result, job.manifests)
    assert report.errors == [] and report.ok
    # Mutated: a group of three nodes per replica on a four-node fleet of two replicas no longer fits.
    wider = copy.deepcopy(job.manifests)
    next(m for m in wider if m["kind"] == "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]["size"] = 3
    assert not check_manifests(result, wider).ok


def test_the_stacks_plan_pins_the_pipeline_and_its_placement(serving):
    result, _ = serving
    plan = Plan.model_validate(result.plan)
    assert plan.gpu.compact_placement and plan.gpu.fabric == "efa" and plan.zones == ["us-east-1a"]
    assert plan.parallelism.text().startswith("TP8 x PP2")
    assert math.isclose(plan.chosen.hourly_usd, 4 * 8 * 6.88, rel_tol=0.01)


def test_a_compact_serving_pool_is_held_to_the_compact_placement_limit():
    """GKE places at most 150 nodes in one compact pool: a pipelined serving fleet's pools obey it as training's do;
    a serving pool without compact placement keeps the node-pool limit (the mutated case)."""
    from accel.policies.selection.fleet_layout import gpu_nodes_per_pool, per_pool_limit

    a3 = load_catalog().offering("gcp-a3-highgpu-8g")
    compact = hardware.current().limit("gke_compact_placement_max_nodes")
    assert per_pool_limit(a3, compact=True, training=False) == compact
    assert per_pool_limit(a3, compact=False, training=False) == hardware.current().limit("gke_node_pool_max_nodes")
    # 160 nodes of 2-node replicas: pools of whole replicas within the compact limit.
    assert gpu_nodes_per_pool(a3, 160, compact=True, training=False, group_nodes=2) == compact - compact % 2


def test_pipeline_sizes_are_whole_power_of_two_node_counts_that_hold_the_model():
    from hypothesis import given, settings, strategies as st

    catalog = load_catalog()
    offerings = sorted(o.id for o in catalog.offerings if o.family == "gpu" and o.fabric != "none")

    # `domain`: the nodes of the widest replica inside one NVLink domain (1, or A4X's pair of trays).
    @settings(max_examples=200, deadline=None)
    @given(st.sampled_from(offerings), st.integers(1, 600), st.sampled_from([8, 64, 256, 1024]),
           st.sampled_from([1, 2, 4]))
    def check(offering_id, hold, cap, domain):
        offering = catalog.offering(offering_id)
        sizes = pipeline_sizes(offering, cap, hold, domain)
        per_node = offering.chips_per_host
        for size in sizes:
            assert size.stages == size.hosts and size.chips == size.hosts * per_node <= cap
            assert size.hosts >= 2 * domain and size.hosts & (size.hosts - 1) == 0
        if sizes:
            assert sizes[0].chips >= hold and (sizes[0].hosts == 2 * domain or sizes[0].chips // 2 < hold)
        else:   # none: even the fewest that would hold it are past the cap
            smallest = max(2 * domain, 2 ** math.ceil(math.log2(max(1, math.ceil(hold / per_node)))))
            assert smallest * per_node > cap

    check()


def test_a_pipeline_has_no_more_stages_than_the_model_has_layers():
    """vLLM gives each stage layers // stages layers (get_pp_indices): past the layer count a stage holds none."""
    a4x = load_catalog().offering("gcp-a4x-highgpu-4g")
    assert max(s.stages for s in replica_sizes(a4x, 256, 9, max_stages=16)) == 16
    assert max(s.stages for s in replica_sizes(a4x, 256, 9)) == 64   # mutated: no bound, 64 stages of 4 GPUs


def test_the_time_objective_takes_the_fewest_stages_that_serve():
    """A token crosses every stage, so a longer pipeline decodes it no sooner; ranked on p99 alone, 2 x 32 p5 nodes
    would win over 2 x 2 by the batch bisection's rounding (99.5 against 99.9 ms)."""
    from accel.policies.selection.choose import choose

    data = copy.deepcopy(SERVICE_405B)
    data["constraints"]["clouds"] = ["aws"]
    spec = workload_from_mapping(data, "t.yaml")
    fastest = choose(spec, load_catalog(), "time")
    assert fastest.chosen.hosts == 4 and fastest.estimate.details["pipeline_stages"] == 2
    # The longer pipelines serve too: the cost objective sees them and takes the cheapest, the same 2 x 2.
    assert choose(spec, load_catalog(), "cost").chosen.hosts == 4
