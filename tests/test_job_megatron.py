"""The PyTorch training job runs Megatron-LM's pretrain_gpt.py with the Plan's layout, the model's shape and its
precision as Megatron's own flags (accel/job/megatron_run.py, runtime.yaml `megatron`); Megatron's refusals a plan
can meet are refused first, naming the workload field."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from accel.base.errors import UsageError
from accel.job import megatron_run
from accel.job.facts import runtime
from accel.job.manifests import JobOptions
from accel.job.service import job_of
from accel.policies.catalog import load_catalog
from accel.policies.plan import Plan
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import load_workload, workload_from_mapping
from tests.conftest import planned_result

ROOT = Path(__file__).resolve().parent.parent


def plan_of(example: str, **changes) -> Plan:
    """The plan `accel choose` makes for examples/<example>.yaml with `changes` (dotted keys) applied."""
    data = load_workload(ROOT / "examples" / f"{example}.yaml").model_dump(mode="json", exclude_none=True)
    data["training"]["framework"] = "pytorch"
    for key, value in changes.items():
        *path, last = key.split(".")
        node = data
        for part in path:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return choose_plan(workload_from_mapping(data, "t.yaml"), load_catalog())


def flags(command: str) -> dict[str, str | None]:
    """--flag -> its value (None for a switch) of a Megatron command."""
    words = shlex.split(command)
    found: dict[str, str | None] = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
            found[word] = value
    return found


def pod(job) -> dict:
    jobset = next(m for m in job.manifests if m["kind"] == "JobSet")
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


# ----- the command a plan generates -----

def test_a_70b_plan_runs_pretrain_gpt_under_torchrun_with_the_plans_layout():
    job = job_of(planned_result("llama-70b-a3mega-gcp"), JobOptions())
    spec = pod(job)
    script = spec["containers"][0]["command"][-1]
    assert re.search(r"torchrun .*--master-port=29500 /opt/megatron-lm/pretrain_gpt.py ", script)
    given_flags = flags(script[script.index("pretrain_gpt.py"):])
    # The Plan says TP8 x PP2 x DP16 on 32 H100 nodes (the distributed optimizer's replica: TP8 x PP4 when a replica
    # held the whole state).
    assert given_flags["--tensor-model-parallel-size"] == "8" and given_flags["--pipeline-model-parallel-size"] == "2"
    assert "--sequence-parallel" in given_flags and "--use-distributed-optimizer" in given_flags
    assert "--context-parallel-size" not in given_flags   # no CP at 8K tokens
    assert (given_flags["--recompute-granularity"], given_flags["--recompute-method"],
            given_flags["--recompute-num-layers"]) == ("full", "uniform", "1")
    assert given_flags["--micro-batch-size"] == "1" and int(given_flags["--global-batch-size"]) % 16 == 0
    assert given_flags["--seq-length"] == given_flags["--max-position-embeddings"] == "8192"
    assert int(given_flags["--num-layers"]) % 2 == 0 and int(given_flags["--num-attention-heads"]) % 8 == 0
    assert "--bf16" in given_flags and "--fp8-format" not in given_flags
    assert "--mock-data" in given_flags and given_flags["--tokenizer-type"] == "NullTokenizer"
    assert given_flags["--train-iters"] == "100"
    assert given_flags["--save"] == given_flags["--load"] == "$(CHECKPOINT_DIR)"
    assert spec["containers"][0]["image"] == runtime()["defaults"]["pytorch-gpu"]["image"]
    # The checkout: an init container of the same image clones the pinned tag and refuses any other commit.
    clone = spec["initContainers"][0]
    facts = runtime()["megatron"]
    assert clone["name"] == "megatron-lm" and clone["image"] == spec["containers"][0]["image"]
    assert facts["tag"] in clone["command"][-1] and facts["commit"] in clone["command"][-1]
    assert {"name": "megatron-lm", "mountPath": "/opt/megatron-lm"} in spec["containers"][0]["volumeMounts"]
    derivations = " ".join(" ".join(job.derivations).split())
    assert "derived shape" in derivations and "core_v0.19.0" in derivations


def test_a_named_architecture_is_trained_at_its_own_shape():
    plan = plan_of("llama-70b-pretrain", **{"model.architecture": "llama3.1-70b", "model.parameters": None,
                                            "hardware.accelerator": "h100-80gb", "hardware.chips": 256})
    given_flags = flags(megatron_run.run(plan).args)
    assert (given_flags["--num-layers"], given_flags["--hidden-size"], given_flags["--ffn-hidden-size"],
            given_flags["--num-attention-heads"], given_flags["--num-query-groups"],
            given_flags["--padded-vocab-size"]) == ("80", "8192", "28672", "64", "8", "128256")
    assert "--group-query-attention" in given_flags and "--untie-embeddings-and-output-weights" in given_flags
    # Llama 3.1's RoPE: base 500,000 (Megatron's default is 10,000) with its long-context scaling; RMSNorm 1e-5.
    assert (given_flags["--rotary-base"], float(given_flags["--norm-epsilon"])) == ("500000", 1e-5)
    assert "--use-rope-scaling" in given_flags and "--qk-layernorm" not in given_flags
    # No dropout (Megatron's defaults are 0.1 each): MaxText trains every row without (base.yml dropout_rate 0.0).
    assert (given_flags["--attention-dropout"], given_flags["--hidden-dropout"]) == ("0.0", "0.0")


def test_a_mixture_of_experts_gets_its_experts_router_and_expert_parallelism():
    # DeepSeek-V3's 15,360 sequences of 4,096 tokens (the example's "63M" rounds it: 15,380 sequences, moved to a
    # multiple of the data-parallel ranks: test_a_stated_batch_a_few_sequences_off_whole_ranks_moves_to_the_nearest).
    plan = plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                         "training.global_batch_tokens": 15360 * 4096})
    assert plan.parallelism is not None and plan.parallelism.expert
    run = megatron_run.run(plan)
    given_flags = flags(run.args)
    assert given_flags["--num-experts"] == "256" and given_flags["--moe-router-topk"] == "8"
    assert given_flags["--expert-model-parallel-size"] == str(plan.parallelism.expert)
    assert given_flags["--expert-tensor-parallel-size"] == "1"
    assert given_flags["--moe-shared-expert-intermediate-size"] == given_flags["--moe-ffn-hidden-size"]  # 1 shared
    # The workload's own batch (15,360 sequences) is a multiple of the data-parallel ranks: taken as it is.
    assert given_flags["--global-batch-size"] == "15360"
    # fp8 on H100: Transformer Engine's hybrid recipe over bf16.
    assert given_flags["--fp8-format"] == "hybrid" and "--bf16" in given_flags


def test_a_stated_batch_a_few_sequences_off_whole_ranks_moves_to_the_nearest_and_says_so():
    # The example's "63M" tokens are 15,380 sequences: no multiple of the plan's data-parallel ranks, which Megatron
    # refuses; the nearest multiple is within 1%, so the job trains that and says so (the day-one flow of the
    # example, choose --write-stack then job, ran into a refusal before).
    plan = plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048})
    data = megatron_run.layout(plan).data
    batch, why = megatron_run.global_batch(plan, megatron_run.layout(plan))
    assert batch % data == 0 and batch != 15_380 and abs(batch - 15_380) <= data / 2
    assert f"15,380 sequences moved to {batch:,}" in why
    assert flags(megatron_run.run(plan).args)["--global-batch-size"] == str(batch)


def test_fp8_on_a_gpu_without_fp8_tensor_cores_trains_in_bf16_and_says_so():
    plan = plan_of("llama-70b-pretrain", **{"training.precision": "fp8", "hardware.accelerator": "a100-80gb",
                                            "hardware.chips": 256})
    run = megatron_run.run(plan)
    assert "--fp8-format" not in run.args and "--bf16" in flags(run.args)
    assert any("no fp8 tensor cores" in note for note in run.notes)


def test_a_long_sequence_gets_context_parallelism_and_126_layers_run_on_uneven_stages():
    # Llama 3 405B at 131,072 tokens on 2,048 H100: TP8 x CP8 x PP16 x DP2; its 126 layers over 16 stages go 7 on
    # the first and last, 8 on each other, as the Llama 3 run did.
    plan = plan_of("llama-405b-longcontext", **{"hardware.chips": 2048, "hardware.accelerator": "h100-80gb"})
    run = megatron_run.run(plan)
    given_flags = flags(run.args)
    assert (given_flags["--context-parallel-size"], given_flags["--pipeline-model-parallel-size"]) == ("8", "16")
    assert (given_flags["--decoder-first-pipeline-num-layers"],
            given_flags["--decoder-last-pipeline-num-layers"]) == ("7", "7")
    assert given_flags["--seq-length"] == "131072" and given_flags["--num-layers"] == "126"


@given(layers=st.integers(1, 400), stages=st.integers(1, 64))
def test_an_uneven_pipeline_split_is_one_megatron_accepts(layers, stages):
    """transformer_config.py l.1997-1998, l.2016-2017 and l.2034-2047 at core_v0.19.0: first and last stage at least
    one layer, middle layers exactly where there are middle stages, divisible by them; fewer layers than stages
    cannot split."""
    if layers < stages and layers % stages:
        with pytest.raises(ValueError):
            megatron_run.pipeline_split(layers, stages)
        return
    split = megatron_run.pipeline_split(layers, stages)
    if layers % stages == 0:
        assert split is None
        return
    first, last = split
    assert first >= 1 and last >= 1
    middle = stages - 2
    assert middle == 0 and first + last == layers or (layers - first - last) % middle == 0 and layers > first + last


def test_every_flag_the_command_can_pass_is_one_megatron_declares():
    plans = [Plan.model_validate(planned_result(stack).plan) for stack in
             ("llama-70b-a4", "llama-405b-h100-aws", "llama-405b-p6e", "onprem-gpus")]
    plans += [plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                            "training.global_batch_tokens": 15360 * 4096}),
              plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                            "training.global_batch_tokens": 15360 * 4096,
                                            "model.architecture": "deepseek3-671b"}),
              plan_of("llama-405b-longcontext", **{"hardware.chips": 2048, "hardware.accelerator": "h100-80gb"}),
              plan_of("llama-70b-pretrain", **{"model.architecture": "gemma2-27b", "model.parameters": None,
                                               "training.precision": "fp16", "hardware.accelerator": "h100-80gb",
                                               "hardware.chips": 64})]
    declared = runtime()["megatron"]["flags"]
    seen: set[str] = set()
    for plan in plans:
        seen |= set(flags(megatron_run.run(plan).args))
    assert seen <= set(declared), seen - set(declared)
    # Where each is declared: its add_argument in arguments.py, or the config dataclass field it is generated from.
    assert all(re.fullmatch(r"(megatron/[\w/]+|[\w]+)\.py l\.[1-9]\d*", where) for where in declared.values())
    # The switches the brief names are among those passed.
    assert {"--expert-model-parallel-size", "--context-parallel-size", "--fp8-format", "--kv-channels",
            "--decoder-first-pipeline-num-layers", "--fp16", "--multi-latent-attention", "--q-lora-rank",
            "--mscale-all-dim", "--moe-router-score-function", "--moe-router-num-groups", "--rotary-base",
            "--norm-epsilon", "--padded-vocab-size", "--moe-token-dispatcher-type", "--moe-router-dtype"} <= seen


def test_a_command_of_ones_own_replaces_megatron_and_an_image_of_ones_own_gets_no_checkout():
    result = planned_result("llama-70b-a4")
    own = pod(job_of(result, JobOptions(command="python3 my_train.py")))
    assert "pretrain_gpt.py" not in own["containers"][0]["command"][-1]
    assert not any(c["name"] == "megatron-lm" for c in own.get("initContainers", []))
    imaged = pod(job_of(result, JobOptions(image="registry.example/megatron:1")))
    assert "pretrain_gpt.py" in imaged["containers"][0]["command"][-1]
    assert not any(c["name"] == "megatron-lm" for c in imaged.get("initContainers", []))


# ----- Megatron's refusals, ported: each catches a mutated bad case -----

def mutated(base: Plan, model: dict | None = None, training: dict | None = None) -> Plan:
    workload = base.workload
    if model is not None:
        workload = workload.model_copy(update={"model": workload.model.model_copy(update=model)})
    if training is not None:
        workload = workload.model_copy(update={"training": workload.training.model_copy(update=training)})
    return base.model_copy(update={"workload": workload})


@pytest.fixture(scope="module")
def a4_plan() -> Plan:
    """llama-70b-a4: 32 nodes of 8 B200, TP8 x PP1 x DP32 (the distributed optimizer's replica; TP8 x PP2 x DP16
    when a replica held the whole state)."""
    return Plan.model_validate(planned_result("llama-70b-a4").plan)


def named(plan: Plan, architecture: str) -> Plan:
    from accel.policies.workload import ModelSpec
    model = ModelSpec.model_validate({"architecture": architecture, "sequence_length": 8192})
    return plan.model_copy(update={"workload": plan.workload.model_copy(update={"model": model})})


def test_the_unmutated_plan_passes(a4_plan):
    assert megatron_run.run(a4_plan).args


@pytest.mark.parametrize("mutate, layout, field, rule", [
    # one layer cannot fill two pipeline stages (arguments.py l.963)
    (lambda p: mutated(p, model={"layers": 1}), {"pipeline": 2, "data": 16}, "model.layers", "l.963"),
    # a width that is no whole number of 128-wide heads in 8 groups (transformer_config.py l.1323)
    (lambda p: mutated(p, model={"hidden": 8000}), None, "model.hidden", "l.1323"),
    # a sequence that does not split into 2 x CP chunks (arguments.py l.1296)
    (lambda p: mutated(p, model={"sequence_length": 8190}), {"context": 2, "data": 8}, "model.sequence_length",
     "l.1296"),
    # a stated global batch of 100 sequences over 32 data-parallel ranks (num_microbatches_calculator.py l.381)
    (lambda p: mutated(p, training={"global_batch_tokens": 100 * 8192}), None, "training.global_batch_tokens",
     "l.381"),
    # 12 experts over the 8 GPUs of a node (arguments.py l.1602): the plan spreads them over 4, dividing them
    # (policies/parallelism.py expert_parallelism), so a hand-edited EP8 stands in
    (lambda p: mutated(p, model={"experts": 12, "experts_per_token": 2, "active_parameters": 20e9}), {"expert": 8},
     "model.experts", "l.1602"),
    # EP8 over a stage of TP2 x DP2 = 4 ranks (parallel_state.py
    # l.871-884): a hand-edited layout, as the plan narrows EP to the stage's ranks
    (lambda p: mutated(p, model={"experts": 16, "experts_per_token": 2, "active_parameters": 20e9}),
     {"tensor": 2, "pipeline": 64, "data": 2, "expert": 8}, "plan.parallelism", "l.871-884"),
    # a layout that does not tile the job's 256 ranks (arguments.py l.430)
    (lambda p: p, {"pipeline": 3}, "plan.parallelism", "l.430"),
])
def test_megatrons_refusals_name_the_field_and_its_line(a4_plan, monkeypatch, mutate, layout, field, rule):
    plan = mutate(a4_plan)
    if layout is not None:   # the Plan derives its layout: a hand-edited one stands in for it here
        edited = plan.parallelism.model_copy(update=layout)
        monkeypatch.setattr(Plan, "parallelism", property(lambda self: edited))
    with pytest.raises(UsageError) as caught:
        megatron_run.run(plan)
    message = str(caught.value)
    assert message.startswith(f"{field}:") and rule in message and "core_v0.19.0" in message
    assert caught.value.exit_code == 2


def test_kv_heads_fewer_than_the_tensor_ranks_are_replicated_as_megatron_does(a4_plan, monkeypatch):
    # gemma2-2b: 8 query heads, 4 KV heads, on a hand-edited TP8 (the plan narrows to TP4, tests/test_heads_layout.py).
    # Refused at core_v0.15.3 (KV groups a multiple of TP); since f7dfb997 Megatron also takes TP a multiple of the KV
    # heads, replicating them (transformer_config.py l.1338-1345 at core_v0.19.0).
    edited = a4_plan.parallelism.model_copy(update={"tensor": 8, "pipeline": 1, "data": 32, "stages_per_node": None})
    monkeypatch.setattr(Plan, "parallelism", property(lambda self: edited))
    plan = named(a4_plan, "gemma2-2b")
    assert megatron_run.layout(plan).tensor == 8
    given_flags = flags(megatron_run.run(plan).args)
    assert (given_flags["--tensor-model-parallel-size"], given_flags["--num-query-groups"]) == ("8", "4")


def test_kv_heads_that_neither_split_over_nor_divide_the_tensor_ranks_are_refused(a4_plan, monkeypatch):
    # Mutated: llama3-70b with 12 KV heads on a hand-edited TP8 (12 is no multiple of 8, nor 8 of 12).
    from dataclasses import replace

    from accel.policies.architectures.rows import table

    monkeypatch.setitem(table().rows, "llama3-70b", replace(table().rows["llama3-70b"], kv_heads=12))
    edited = a4_plan.parallelism.model_copy(update={"tensor": 8, "pipeline": 1, "data": 32, "stages_per_node": None})
    monkeypatch.setattr(Plan, "parallelism", property(lambda self: edited))
    plan = named(a4_plan, "llama3-70b")
    assert megatron_run.layout(plan).tensor == 8
    with pytest.raises(UsageError) as caught:
        megatron_run.run(plan)
    message = str(caught.value)
    assert message.startswith("model.architecture: llama3-70b:") and "l.1338-1345" in message
    assert runtime()["megatron"]["refusals"]["query_groups"] in message and caught.value.exit_code == 2


def test_a_mixture_of_experts_in_fp16_over_expert_ranks_is_written_as_megatron_now_takes_it(a4_plan):
    # core_v0.15.3 refused expert parallelism with fp16 (arguments.py l.1041); 4193f3aa removed that assert, so at
    # core_v0.19.0 the job is written, with the experts over the node's ranks and --fp16.
    plan = mutated(a4_plan, model={"experts": 16, "experts_per_token": 2, "active_parameters": 20e9},
                   training={"precision": "fp16"})
    given_flags = flags(megatron_run.run(plan).args)
    assert "--fp16" in given_flags and int(given_flags["--expert-model-parallel-size"]) > 1
    assert "expert_fp16" not in runtime()["megatron"]["refusals"]


def test_the_default_global_batch_is_rounded_up_to_whole_data_parallel_ranks(a4_plan):
    # 4M tokens of 8,192 = 488 sequences, no multiple of DP32: 512, said.
    batch, why = megatron_run.global_batch(a4_plan, megatron_run.layout(a4_plan))
    assert batch == 512 and "rounded up" in why


def test_every_mixture_of_experts_architecture_states_its_expert_width():
    from accel.policies.architectures.rows import table

    assert all(row.expert_mlp for row in table().rows.values() if row.is_moe)
    assert table().rows["deepseek3-671b"].expert_mlp == 2048      # MaxText deepseek3-671b.yml base_moe_mlp_dim


def test_deepseek_v3_builds_experts_of_its_own_width_not_megatrons_default():
    # Megatron's SwiGLU default for width 7,168 is ~19,072 per expert: 256 such experts in 61 layers are ~6.4T
    # parameters, ten times DeepSeek-V3. The row's 2,048 builds ~0.7T.
    plan = plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                         "training.global_batch_tokens": 15360 * 4096, "model.architecture":
                                         "deepseek3-671b"})
    run = megatron_run.run(plan)
    given_flags = flags(run.args)
    assert given_flags["--moe-ffn-hidden-size"] == "2048"
    assert given_flags["--moe-shared-expert-intermediate-size"] == "2048"
    # Its first three layers are dense, of MLP 18,432 (first_num_dense_layers, base_mlp_dim): Megatron's layer pattern.
    assert given_flags["--ffn-hidden-size"] == "18432"
    assert given_flags["--moe-layer-freq"] == "([0]*3+[1]*58)"       # 3 dense + 58 routed = the row's 61 layers
    assert any("routed experts of MLP 2,048" in note and "first 3 layers dense" in note for note in run.notes)


# ----- DeepSeek-V3's attention and router, as the architecture table states them -----

@pytest.fixture(scope="module")
def deepseek_plan() -> Plan:
    return plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                         "training.global_batch_tokens": 15360 * 4096, "model.architecture":
                                         "deepseek3-671b"})


def test_deepseek_v3_is_built_with_its_multi_latent_attention(deepseek_plan):
    """MaxText deepseek3-671b.yml l.41-46, l.52 at 11085e11 (the table's latent_attention), as Megatron-LM's own
    DeepSeek recipe writes them (examples/post_training/modelopt/conf/deepseek-ai/DeepSeek-R1.sh l.21-27, l.53-55)."""
    run = megatron_run.run(deepseek_plan)
    given_flags = flags(run.args)
    assert "--multi-latent-attention" in given_flags and "--qk-layernorm" in given_flags
    assert (given_flags["--q-lora-rank"], given_flags["--kv-lora-rank"], given_flags["--qk-head-dim"],
            given_flags["--qk-pos-emb-head-dim"], given_flags["--v-head-dim"]) == ("1536", "512", "128", "64", "128")
    # YaRN at factor 40: Megatron's argument defaults (factor 1.0, mscale_all_dim 0.0) would switch both off.
    assert (given_flags["--rope-type"], given_flags["--rotary-scaling-factor"], given_flags["--mscale"],
            given_flags["--mscale-all-dim"]) == ("yarn", "40", "1.0", "1.0")
    # 128 heads of their own width: no query groups and no --kv-channels (MLA sizes its heads by the flags above).
    assert "--group-query-attention" not in given_flags and "--kv-channels" not in given_flags
    assert any("multi-latent attention: query latent 1,536, key/value latent 512" in note and "YaRN RoPE x40" in note
               for note in run.notes)
    assert not any("not written" in note for note in run.notes)


def test_deepseek_v3_routes_by_sigmoid_with_expert_bias_scaling_and_groups(deepseek_plan):
    """MaxText deepseek3-671b.yml l.35-37 and its l.17-18 comment (groups 8, top 4 groups); the sequence-wise
    balance loss of weight 1e-4 is the report's, as Megatron's recipe carries it (DeepSeek-R1.sh l.42-43)."""
    run = megatron_run.run(deepseek_plan)
    given_flags = flags(run.args)
    assert given_flags["--moe-router-score-function"] == "sigmoid"
    assert "--moe-router-enable-expert-bias" in given_flags
    assert given_flags["--moe-router-topk-scaling-factor"] == "2.5"
    assert (given_flags["--moe-router-num-groups"], given_flags["--moe-router-group-topk"]) == ("8", "4")
    assert (given_flags["--moe-router-load-balancing-type"], float(given_flags["--moe-aux-loss-coeff"])) == \
        ("seq_aux_loss", 1e-4)
    assert any("routing: sigmoid router scores, an expert bias" in note and "4 of 8 expert groups" in note
               for note in run.notes)


def test_a_mixture_of_experts_without_a_router_row_keeps_megatrons_router(deepseek_plan):
    # Mixtral and Qwen3 route by softmax over the top-k, Megatron's default: no router flag is written for them.
    plan = plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                         "training.global_batch_tokens": 15360 * 4096})
    assert not any(flag.startswith(("--moe-router-score", "--moe-router-num", "--multi-latent"))
                   for flag in flags(megatron_run.run(plan).args))


def test_top_1_softmax_routing_puts_the_softmax_before_the_choice(a4_plan):
    # transformer_config.py l.2328-2336: Megatron refuses top-1 softmax routing without --moe-router-pre-softmax.
    top1 = mutated(a4_plan, model={"experts": 16, "experts_per_token": 1, "active_parameters": 20e9})
    assert "--moe-router-pre-softmax" in flags(megatron_run.run(top1).args)
    top2 = mutated(a4_plan, model={"experts": 16, "experts_per_token": 2, "active_parameters": 20e9})
    assert "--moe-router-pre-softmax" not in flags(megatron_run.run(top2).args)
    assert "--moe-router-pre-softmax" in runtime()["megatron"]["flags"]


@pytest.mark.parametrize("routing, rule, line", [
    ({"score_function": "softmax"}, "expert_bias", "l.2284-2292"),  # an expert bias needs sigmoid(-like) scores
    ({"groups": 7}, "router_groups", "l.2349"),                     # 256 experts in 7 groups
    ({"group_topk": 9}, "router_group_topk", "l.2353"),             # 9 of 8 groups
])
def test_a_router_megatron_refuses_is_refused_naming_the_row(deepseek_plan, monkeypatch, routing, rule, line):
    from dataclasses import replace

    from accel.policies.architectures.rows import table

    row = table().rows["deepseek3-671b"]
    monkeypatch.setitem(table().rows, "deepseek3-671b", replace(row, routing=replace(row.routing, **routing)))
    with pytest.raises(UsageError) as caught:
        megatron_run.run(deepseek_plan)
    message = str(caught.value)
    assert message.startswith("model.architecture: deepseek3-671b:") and line in message
    assert runtime()["megatron"]["refusals"][rule] in message and caught.value.exit_code == 2


def test_gemmas_geglu_is_said_not_to_be_written():
    # Megatron's flags build a gated MLP only with SiLU or quick-GELU (argument_utils.py l.314-326 at core_v0.19.0).
    plan = plan_of("llama-70b-pretrain", **{"model.architecture": "gemma2-27b", "model.parameters": None,
                                            "hardware.accelerator": "h100-80gb", "hardware.chips": 64})
    run = megatron_run.run(plan)
    assert "--swiglu" in flags(run.args) and "--quick-geglu" not in flags(run.args)
    assert any("gated by GELU, is not written" in note for note in run.notes)


# ----- each row's rotary embedding, norms and vocabulary, as the architecture table states them -----

def _row_run(architecture: str, chips: int = 64):
    plan = plan_of("llama-70b-pretrain", **{"model.architecture": architecture, "model.parameters": None,
                                            "hardware.accelerator": "h100-80gb", "hardware.chips": chips})
    return megatron_run.run(plan), plan


@pytest.mark.parametrize("architecture, base, epsilon, scaling, qk_norm", [
    ("llama2-7b", "10000", 1e-5, False, False),          # MaxText base.yml's default: the file states none
    ("llama3-8b", "500000", 1e-5, False, False),         # llama3-8b.yml rope_max_timescale 500_000
    ("llama3.1-8b", "500000", 1e-5, True, False),        # and Llama 3.1's scaling (attentions.py l.825)
    ("mistral-7b", "1000000", 1e-5, False, False),
    ("qwen3-8b", "1000000", 1e-6, False, True),          # use_qk_norm, normalization_layer_epsilon 1e-6
    ("gemma3-12b", "1000000", 1e-6, False, True),        # the global layers' base; gemma3.py's query/key norms
])
def test_a_named_row_trains_at_its_own_rotary_base_and_norms(architecture, base, epsilon, scaling, qk_norm):
    run, _ = _row_run(architecture)
    given_flags = flags(run.args)
    assert (given_flags["--rotary-base"], float(given_flags["--norm-epsilon"])) == (base, epsilon)
    assert ("--use-rope-scaling" in given_flags) == scaling and ("--qk-layernorm" in given_flags) == qk_norm
    assert any(f"rotary base {int(base):,}" in note for note in run.notes)


def test_every_row_states_its_rotary_base_and_norm_epsilon():
    from accel.policies.architectures.rows import table

    rows = table().rows.values()
    assert all(row.rope_base and row.norm_epsilon for row in rows)
    # Llama 3's 500,000 (Meta's rope_theta), not Megatron's default 10,000; Llama 2 and DeepSeek-V3 keep 10,000.
    assert {row.name for row in rows if row.rope_base == 500_000} == {
        "llama3-8b", "llama3-70b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3.3-70b"}
    assert table().rows["deepseek3-671b"].rope_base == 10_000 and table().rows["llama2-70b"].rope_base == 10_000


def test_gemma_3s_local_base_and_linear_scaling_are_said_not_to_be_written():
    run, _ = _row_run("gemma3-12b")
    assert any("sliding-window layers' base 10,000 and its global layers' linear RoPE scaling x8 not written" in note
               for note in run.notes)
    assert "--rotary-seq-len-interpolation-factor" not in flags(run.args)


def test_the_embedding_has_exactly_the_models_vocabulary():
    # Without --padded-vocab-size Megatron pads the null tokenizer's vocabulary to a multiple of 128 x TP: Llama 3's
    # 128,256 would be 129,024 rows at TP8. At core_v0.19.0 the null tokenizer's vocabulary is --vocab-size itself,
    # its last id the end-of-document one (null_tokenizer.py l.16-19, l.60-62); at core_v0.15.3 it was --vocab-size
    # plus one, so the flag went from the vocabulary less one (128,255) to the vocabulary.
    run, plan = _row_run("llama3-70b")
    given_flags = flags(run.args)
    assert megatron_run.layout(plan).tensor == 8
    assert (given_flags["--vocab-size"], given_flags["--padded-vocab-size"]) == ("128256", "128256")


def test_the_smoke_run_states_the_evaluation_interval_megatron_no_longer_defaults(a4_plan):
    # core_v0.19.0: ValidationConfig.eval_interval defaults to None (training_config.py l.119; 1000 at core_v0.15.3)
    # and get_train_valid_test_num_samples divides train_iters by it (training.py l.4478-4485) even with
    # --eval-iters 0: a command without it stops with a TypeError before the first step.
    given_flags = flags(megatron_run.run(a4_plan).args)
    assert given_flags["--eval-iters"] == "0" and int(given_flags["--eval-interval"]) > 0
    assert "--eval-interval" in runtime()["megatron"]["flags"]


def test_a_vocabulary_that_does_not_split_over_the_tensor_ranks_is_padded_and_said(monkeypatch):
    # Megatron's vocabulary-parallel embedding asserts its rows divide by TP (tensor_parallel/utils.py l.118): a row of
    # 128,257 entries on TP8 gets 128,264 rows, not a job that fails at start-up.
    from dataclasses import replace

    from accel.policies.architectures.rows import table

    monkeypatch.setitem(table().rows, "llama3-70b", replace(table().rows["llama3-70b"], vocabulary=128_257))
    run, plan = _row_run("llama3-70b")
    given_flags = flags(run.args)
    assert megatron_run.layout(plan).tensor == 8
    assert (given_flags["--vocab-size"], given_flags["--padded-vocab-size"]) == ("128257", "128264")
    assert any("padded to a multiple of tensor parallelism 8" in note for note in run.notes)


@given(vocabulary=st.integers(2, 300_000), tensor=st.sampled_from([1, 2, 4, 8, 16, 36, 72]))
def test_a_padded_vocabulary_splits_over_the_tensor_ranks(vocabulary, tensor):
    """megatron/core/tensor_parallel/utils.py l.118 at core_v0.19.0: the embedding's rows divide by TP."""
    padded = megatron_run.vocabulary_padded(vocabulary, tensor)
    assert padded % tensor == 0 and vocabulary <= padded < vocabulary + tensor


def test_a_derived_shape_takes_its_familys_vocabulary_and_rotary_base(a4_plan):
    given_flags = flags(megatron_run.run(a4_plan).args)
    assert (given_flags["--rotary-base"], given_flags["--padded-vocab-size"]) == ("500000", "128256")
    assert runtime()["megatron"]["derived_family"] == "llama3-8b" and "--use-rope-scaling" not in given_flags


@pytest.mark.parametrize("change, rule, line", [
    ({"rope_base": 500_000.5}, "rotary_base", "l.2335"),               # argparse's type=int refuses it
    ({"rope_scaling_factor": 32}, "rope_scaling_factor", "l.86-103"),  # pretrain_gpt.py builds 8 whatever is given
])
def test_a_rotary_embedding_megatron_cannot_take_is_refused_naming_the_row(monkeypatch, change, rule, line):
    from dataclasses import replace

    from accel.policies.architectures.rows import table

    plan = plan_of("llama-70b-pretrain", **{"model.architecture": "llama3.1-8b", "model.parameters": None,
                                            "hardware.accelerator": "h100-80gb", "hardware.chips": 64})
    monkeypatch.setitem(table().rows, "llama3.1-8b", replace(table().rows["llama3.1-8b"], **change))
    with pytest.raises(UsageError) as caught:
        megatron_run.run(plan)
    message = str(caught.value)
    assert message.startswith("model.architecture: llama3.1-8b:") and line in message
    assert runtime()["megatron"]["refusals"][rule] in message and caught.value.exit_code == 2


# ----- a mixture of experts's token dispatch -----

def test_experts_over_expert_parallel_ranks_are_dispatched_by_all_to_all_with_an_fp32_router(deepseek_plan):
    # megatron/core/transformer/moe/README.md l.309: `alltoall` for "Standard EP > 1 setups"; transformer_config.py
    # l.2795-2803 warns of >= 32 experts without fp32 routing (DeepSeek-V3: 256).
    assert deepseek_plan.parallelism.expert > 1
    run = megatron_run.run(deepseek_plan)
    given_flags = flags(run.args)
    assert (given_flags["--moe-token-dispatcher-type"], given_flags["--moe-router-dtype"]) == ("alltoall", "fp32")
    assert any("all-to-all token dispatcher" in note for note in run.notes)


def test_few_experts_on_one_rank_keep_megatrons_all_gather_and_router_dtype(a4_plan, monkeypatch):
    # 16 experts (under Megatron's 32) on expert parallelism 1: Megatron's defaults, which it says suit that case.
    plan = mutated(a4_plan, model={"experts": 16, "experts_per_token": 2, "active_parameters": 20e9})
    spread = flags(megatron_run.run(plan).args)     # the plan spreads them over the node's 8 GPUs
    assert spread["--moe-token-dispatcher-type"] == "alltoall" and "--moe-router-dtype" not in spread
    one_rank = a4_plan.parallelism.model_copy(update={"expert": 1})
    monkeypatch.setattr(Plan, "parallelism", property(lambda self: one_rank))
    given_flags = flags(megatron_run.run(plan).args)
    assert "--moe-token-dispatcher-type" not in given_flags and "--moe-router-dtype" not in given_flags


# ----- a softmax router's load balancing -----

def test_a_mixture_of_experts_without_a_row_balances_its_experts_at_megatrons_recommended_weight(deepseek_plan):
    # arguments.py l.3369-3370 at 5be96267: --moe-aux-loss-coeff defaults to 0.0 (no balancing: a softmax router is
    # free to send every token to a few experts); its help recommends 1e-2, as Megatron's Mixtral example trains.
    plan = plan_of("deepseek-v3-moe", **{"hardware.accelerator": "h100-80gb", "hardware.chips": 2048,
                                         "training.global_batch_tokens": 15360 * 4096})
    run = megatron_run.run(plan)
    given_flags = flags(run.args)
    assert (given_flags["--moe-router-load-balancing-type"], float(given_flags["--moe-aux-loss-coeff"])) == \
        ("aux_loss", 0.01)
    assert any("load balancing: the auxiliary loss at weight 0.01 (Megatron's recommended starting value" in note
               for note in run.notes)


@pytest.mark.parametrize("architecture, chips, weight, whose", [
    ("mixtral-8x7b", 256, 0.02, "the model's own"),        # its config.json's router_aux_loss_coef
    ("qwen3-30b-a3b", 1024, 0.001, "the model's own"),     # 4 KV heads: a fleet whose layout takes TP4
    ("mixtral-8x22b", 256, 0.01, "Megatron's recommended starting value; the model states none"),
])
def test_a_softmax_routed_row_balances_at_the_weight_the_model_states(architecture, chips, weight, whose):
    run, _ = _row_run(architecture, chips=chips)
    given_flags = flags(run.args)
    assert (given_flags["--moe-router-load-balancing-type"], float(given_flags["--moe-aux-loss-coeff"])) == \
        ("aux_loss", weight)
    assert any(f"auxiliary loss at weight {weight:g} ({whose}" in note for note in run.notes)


def test_a_row_that_balances_its_own_way_gets_no_auxiliary_loss(deepseek_plan, monkeypatch):
    # DeepSeek-V3 balances by an expert bias and a sequence-wise loss: one load-balancing type, its own.
    words = shlex.split(megatron_run.run(deepseek_plan).args)
    assert words.count("--moe-router-load-balancing-type") == 1 and "aux_loss" not in words
    # Mutated: the same router without its sequence-wise loss is auxiliary-loss-free (the expert bias alone).
    from dataclasses import replace

    from accel.policies.architectures.rows import table

    row = table().rows["deepseek3-671b"]
    monkeypatch.setitem(table().rows, "deepseek3-671b",
                        replace(row, routing=replace(row.routing, sequence_balance_loss=None)))
    assert "--moe-router-load-balancing-type" not in flags(megatron_run.run(deepseek_plan).args)
