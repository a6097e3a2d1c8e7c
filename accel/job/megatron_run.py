"""The PyTorch training job's program: Megatron-LM's GPT pre-training (`pretrain_gpt.py`) with the Plan's layout, the
model's shape and its precision written as Megatron's own flags, started by the job's torchrun line.

The layout is the Plan's (TP x CP x PP x DP, EP for a mixture of experts); the shape is the workload's
`model.architecture` row (policies/architectures: with a row's multi-latent attention and router, DeepSeek-V3's),
else its `model.layers` / `model.hidden`, else the shape the estimate itself used (policies/estimator/estimate.py
model_architecture), laid out with 128-wide heads and 8 KV groups and said to be derived. Megatron's own refusals a
plan can meet (layers over pipeline stages, heads and KV groups over tensor ranks, the global batch over data-parallel
ranks, the sequence over context-parallel ranks, experts over expert ranks; a row's router) are checked here first,
each naming the workload field and citing Megatron's line, so a job that cannot start is never written.

Every fact of Megatron-LM (the pinned tag and commit, the checkout, each flag's line in arguments.py, the refusals)
is runtime.yaml `megatron`, with sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from accel.base.errors import UsageError
from accel.policies import hardware
from accel.policies.plan import Plan

from accel.job import context_parallel, model_run, plan_view
from accel.job.facts import runtime

if TYPE_CHECKING:
    from accel.policies.architectures.rows import Architecture, LatentAttention, Routing

CHECKOUT_VOLUME = "megatron-lm"


def facts() -> dict[str, Any]:
    return runtime()["megatron"]


def script() -> str:
    """The training script in the checkout (defaults.pytorch-gpu's command)."""
    return f"{facts()['tree']}/{facts()['entry']}"


def _refusal(field: str, what: str, rule: str, remedy: str) -> UsageError:
    return UsageError(f"{field}: {what}, and Megatron-LM refuses it ({facts()['refusals'][rule]} at "
                      f"{facts()['tag']}); {remedy}")


@dataclass(frozen=True)
class Layout:
    tensor: int
    pipeline: int
    context: int
    data: int
    expert: int

    @property
    def model_ranks(self) -> int:
        return self.tensor * self.pipeline * self.context


def layout(plan: Plan) -> Layout:
    """The Plan's degrees over the ranks the job starts (rank_nodes x GPUs per node); a plan with no layout trains
    data-parallel only. Megatron's data-parallel degree is the world over TP x PP x CP (runtime.yaml
    megatron.refusals.world)."""
    hw = plan_view.hardware(plan)
    world = plan_view.rank_nodes(plan) * hw.chips_per_node
    degrees = plan.parallelism
    tensor, pipeline, context = ((degrees.tensor, degrees.pipeline, degrees.context or 1) if degrees is not None
                                 else (1, 1, 1))
    if world % (tensor * pipeline * context):
        raise _refusal("plan.parallelism", f"the job's {world} ranks do not split into TP{tensor} x PP{pipeline} x "
                       f"CP{context} groups", "world", "plan again (accel plan) so the layout tiles the fleet")
    expert = degrees.expert if degrees is not None and degrees.expert else 1
    return Layout(tensor, pipeline, context, world // (tensor * pipeline * context), expert)


@dataclass(frozen=True)
class Shape:
    layers: int
    hidden: int
    ffn: int
    heads: int
    query_groups: int
    kv_channels: int | None     # given where a head is not hidden / heads wide (a row's head_dim)
    vocabulary: int
    tied_embeddings: bool
    experts: int | None = None
    router_topk: int | None = None
    expert_ffn: int | None = None
    shared_expert_ffn: int | None = None
    note: str = ""
    dense_layers: int = 0       # a mixture of experts's first layers that are dense (MLP `ffn`), the rest routed
    latent_attention: LatentAttention | None = None   # multi-latent attention (a row's), instead of query groups
    routing: Routing | None = None                     # the router (a row's) where it is not Megatron's default
    rope_norms: RopeAndNorms | None = None             # the rotary embedding and the norms (a row's)
    balance_loss: float | None = None                  # the auxiliary balancing loss's weight (a row's)


def _swiglu_ffn(hidden: int) -> int:
    """Megatron's own MLP width for SwiGLU when none is given (arguments.py l.1287 at core_v0.19.0): 4h x 2/3, down
    to a multiple of 64, which keeps the MLP's parameters those of a 4h one (the estimate's 12 x layers x hidden^2)."""
    return int((4 * hidden * 2 / 3) / 64) * 64


def pipeline_split(layers: int, stages: int) -> tuple[int, int] | None:
    """(layers on the first stage, on the last) where `layers` do not split evenly over `stages`, else None: the
    middle stages take ceil(layers / stages) each when that leaves the first and last at least one between them, else
    floor (Megatron's uneven pipeline: runtime.yaml megatron.refusals.uneven_pipeline). ValueError for fewer layers
    than stages, which no split holds."""
    if layers % stages == 0:
        return None
    if layers < stages:
        raise ValueError(f"{layers} layers cannot fill {stages} pipeline stages")
    if stages == 2:
        return layers // 2, layers - layers // 2
    middle = -(-layers // stages)
    if layers - (stages - 2) * middle < 2:
        middle = layers // stages
    ends = layers - (stages - 2) * middle
    return ends // 2, ends - ends // 2


def _stages(layers: int, degrees: Layout, field: str) -> tuple[int, int] | None:
    try:
        return pipeline_split(layers, degrees.pipeline)
    except ValueError:
        raise _refusal(field, f"{layers} layers cannot fill pipeline parallelism {degrees.pipeline} (each stage "
                       "holds at least one)", "pipeline_layers", "pin hardware whose layout has fewer stages") from None


@dataclass(frozen=True)
class RopeAndNorms:
    """What a row states of its rotary embedding and norms, which Megatron's defaults would otherwise set: the base
    (--rotary-base, default 10,000), Llama 3.1's scaling (--use-rope-scaling), the RMSNorm epsilon (--norm-epsilon,
    default 1e-5) and a norm on each head's query and key (--qk-layernorm)."""
    rope_base: int
    norm_epsilon: float
    rope_scaling: bool = False
    qk_norm: bool = False

    def args(self) -> list[str]:
        return [f"--rotary-base {self.rope_base}", *(["--use-rope-scaling"] if self.rope_scaling else []),
                f"--norm-epsilon {self.norm_epsilon:g}", *(["--qk-layernorm"] if self.qk_norm else [])]

    def note(self) -> str:
        scaling = f" with Llama 3.1's scaling (x{facts()['rope_scaling_factor']:g})" if self.rope_scaling else ""
        return (f"rotary base {self.rope_base:,}{scaling}"
                + f", RMSNorm epsilon {self.norm_epsilon:g}" + (", query/key norms" if self.qk_norm else ""))


def _cannot_build(field: str, what: str, rule: str, remedy: str) -> UsageError:
    return UsageError(f"{field}: {what}, which Megatron-LM's pretrain_gpt.py cannot build ({facts()['refusals'][rule]} "
                      f"at {facts()['tag']}); {remedy}")


def _rope_norms(row: Architecture, field: str) -> RopeAndNorms:
    """The row's rotary base, scaling and norms as Megatron takes them; a row Megatron would refuse or build otherwise
    is refused naming it (the table's values: met only by a row added or edited)."""
    remedy = "correct the row in policies/architectures/architectures.yaml"
    if row.rope_base is None or row.norm_epsilon is None:   # every row states both (tests/test_job_megatron.py)
        raise UsageError(f"{field}: the architecture table states no rotary base or norm epsilon for it, and "
                         "Megatron's defaults (10,000, 1e-5) would build another model; pass --command with "
                         "--rotary-base and --norm-epsilon")
    if row.rope_base != int(row.rope_base) or row.rope_base <= 0:
        raise _refusal(field, f"its rotary base {row.rope_base} is no whole number", "rotary_base", remedy)
    scaling = row.rope_scaling_factor
    if scaling is not None and scaling != float(facts()["rope_scaling_factor"]):
        raise _cannot_build(field, f"its Llama 3.1 RoPE scaling factor is {scaling:g}", "rope_scaling_factor",
                            remedy)
    return RopeAndNorms(int(row.rope_base), row.norm_epsilon, scaling is not None,
                     row.qk_norm and row.latent_attention is None)   # MLA's --qk-layernorm is its latents' norm


def _rope_note(row: Architecture) -> str:
    """What the job says of a row's RoPE Megatron's GPT cannot build: one base for every layer (gpt_model.py
    l.177-187 at core_v0.19.0 builds one rotary embedding), so Gemma 3's sliding-window layers' own base and its
    global layers' linear scaling are not written."""
    if row.local_rope_base is None and row.rope_linear_factor is None:
        return ""
    unwritten = [f"its sliding-window layers' base {row.local_rope_base:,}" if row.local_rope_base else "",
                 f"its global layers' linear RoPE scaling x{row.rope_linear_factor:g}" if row.rope_linear_factor
                 else ""]
    return (f" ({' and '.join(part for part in unwritten if part)} not written: Megatron's GPT has one rotary "
            f"embedding for every layer, at the global base {row.rope_base:,})")


def _named_shape(plan: Plan, degrees: Layout) -> Shape | None:
    row = model_run.named_model(plan).architecture
    if row is None:
        return None
    field = f"model.architecture: {row.name}"
    _stages(row.layers, degrees, field)
    if row.query_heads % degrees.tensor:
        raise _refusal(field, f"its {row.query_heads} query heads do not split over tensor parallelism "
                       f"{degrees.tensor}", "heads", "pin hardware whose tensor parallelism divides them")
    if row.kv_heads % degrees.tensor and degrees.tensor % row.kv_heads:
        # Megatron replicates KV heads over the tensor ranks when TP is a multiple of them
        raise _refusal(field, f"its {row.kv_heads} KV heads (query groups) neither split over tensor parallelism "
                       f"{degrees.tensor} nor divide it", "query_groups",
                       "pin hardware whose tensor parallelism divides them or is a multiple of them")
    width = row.hidden // row.query_heads
    kv_channels = row.head_dim if row.head_dim is not None and (row.head_dim != width or row.hidden % row.query_heads) \
        else None
    if kv_channels is None and row.hidden % row.query_heads:
        raise _refusal(field, f"its width {row.hidden} does not split into {row.query_heads} heads", "head_width",
                       "pass --command with --kv-channels")
    mlp = row.mlp if row.mlp is not None else _swiglu_ffn(row.hidden)
    rope_norms = _rope_norms(row, field)
    heads = (f"{row.query_heads} heads of multi-latent attention" if row.latent_attention is not None else
             f"{row.query_heads}/{row.kv_heads} query/KV heads")
    note = (f"model: architecture {row.name} ({row.layers} layers, width {row.hidden:,}, {heads}, MLP {mlp:,}"
            f"{'' if row.mlp is not None else ' (Megatron SwiGLU default)'}, vocabulary {row.vocabulary:,}) as "
            f"Megatron's GPT with SwiGLU, RMSNorm and RoPE; {rope_norms.note()}" + _rope_note(row)
            + _activation_note(row) + _latent_note(row))
    if row.is_moe:
        # An expert's width is the row's (DeepSeek-V3: moe_mlp 2,048; Megatron's SwiGLU default for its width would be
        # 19,072, a model of ~6.4T parameters).
        expert = row.expert_mlp
        if expert is None:   # every MoE row states one (tests/test_job_megatron.py); a row added without it
            raise UsageError(f"{field}: the architecture table states no expert width for it, and Megatron's default "
                             f"({mlp:,}) would build another model; pass --command with --moe-ffn-hidden-size")
        shared = row.shared_experts * expert if row.shared_experts else None
        dense = row.dense_mlp or expert
        note = note.replace(f"MLP {mlp:,} (Megatron SwiGLU default)", f"MLP {dense:,}")
        note += f"; {row.experts} routed experts of MLP {expert:,}, top-{row.experts_per_token}" + (
            f", {row.shared_experts} shared" if row.shared_experts else "")
        if row.first_dense_layers:
            note += f"; the first {row.first_dense_layers} layers dense (--moe-layer-freq)"
        if row.routing is not None:
            _check_routing(row, field)
            note += _routing_note(row.routing)
        return Shape(row.layers, row.hidden, dense, row.query_heads, row.kv_heads, kv_channels,
                     row.vocabulary, row.tied_embeddings, row.experts, row.experts_per_token, expert, shared, note,
                     row.first_dense_layers, row.latent_attention, row.routing, rope_norms, row.balance_loss)
    return Shape(row.layers, row.hidden, mlp, row.query_heads, row.kv_heads, kv_channels, row.vocabulary,
                 row.tied_embeddings, note=note, latent_attention=row.latent_attention, rope_norms=rope_norms)


def _activation_note(row: Architecture) -> str:
    """What the job says of a row whose MLP gate is not SwiGLU: Megatron's pretrain_gpt.py builds a gated MLP only
    from --swiglu (SiLU) or --quick-geglu (x * sigmoid(1.702 x), an approximation of GELU), argument_utils.py
    l.314-326 at core_v0.19.0, so Gemma's GeGLU (GELU gate) has no flag and SwiGLU is written in its place."""
    if row.mlp_activation == "silu":
        return ""
    return (f" ({row.name}'s own MLP, gated by {row.mlp_activation.upper()}, is not written: Megatron's flags build a "
            "gated MLP only with SiLU (--swiglu) or quick-GELU (--quick-geglu), so SwiGLU is)")


def _latent_note(row: Architecture) -> str:
    latent = row.latent_attention
    if latent is None:
        return ""
    return (f"; multi-latent attention: query latent {latent.q_lora_rank:,}, key/value latent {latent.kv_lora_rank:,}"
            f" (each RMS-normed), query/key heads {latent.qk_nope_head_dim} + {latent.qk_rope_head_dim} rotary, value "
            f"heads {latent.v_head_dim}, YaRN RoPE x{latent.rope_factor:g} (mscale {latent.mscale}), as "
            "Megatron's --multi-latent-attention (runtime.yaml megatron.latent_attention_source)")


def _routing_note(routing: Routing) -> str:
    parts = [f"{routing.score_function} router scores"]
    if routing.expert_bias:
        parts.append("an expert bias for the choice (auxiliary-loss-free balancing)")
    if routing.scaling_factor:
        parts.append(f"weights scaled by {routing.scaling_factor:g}")
    if routing.groups and routing.group_topk:
        parts.append(f"each token's experts from {routing.group_topk} of {routing.groups} expert groups")
    if routing.sequence_balance_loss:
        parts.append(f"a sequence-wise balance loss of weight {routing.sequence_balance_loss:g}")
    return "; routing: " + ", ".join(parts)


def _check_routing(row: Architecture, field: str) -> None:
    """Megatron's own checks of a router (transformer_config.py at the pinned tag): a row's values, so met only by a
    row added or edited; each refused naming the row, as Megatron would refuse the job at start-up."""
    routing = row.routing
    remedy = "correct the row in policies/architectures/architectures.yaml"
    if routing.expert_bias and routing.score_function not in facts()["expert_bias_score_functions"]:
        raise _refusal(field, f"its router adds an expert bias to {routing.score_function} scores", "expert_bias",
                       remedy)
    if routing.groups and row.experts % routing.groups:
        raise _refusal(field, f"its {row.experts} experts do not split into {routing.groups} routing groups",
                       "router_groups", remedy)
    if routing.group_topk and not (routing.groups and routing.group_topk <= routing.groups):
        raise _refusal(field, f"its router picks {routing.group_topk} of {routing.groups or 'no'} expert groups",
                       "router_group_topk", remedy)


def _attention_args(shape: Shape) -> list[str]:
    """The attention's flags beyond the heads: a row's multi-latent attention (runtime.yaml
    megatron.latent_attention_source), else grouped-query attention where the KV heads are fewer."""
    latent = shape.latent_attention
    if latent is None:
        return ([f"--group-query-attention --num-query-groups {shape.query_groups}"]
                if shape.query_groups < shape.heads else [])
    # MaxText's one mscale is both of Megatron's: the softmax's (--mscale-all-dim) and the rotary output's (--mscale),
    # whose ratio then leaves the rotary output unscaled.
    return [f"--multi-latent-attention --q-lora-rank {latent.q_lora_rank} --kv-lora-rank {latent.kv_lora_rank} "
            f"--qk-head-dim {latent.qk_nope_head_dim} --qk-pos-emb-head-dim {latent.qk_rope_head_dim} "
            f"--v-head-dim {latent.v_head_dim} --qk-layernorm --rope-type yarn "
            f"--rotary-scaling-factor {latent.rope_factor:g} --mscale {latent.mscale} "
            f"--mscale-all-dim {latent.mscale}"]


def _routing_args(routing: Routing | None) -> list[str]:
    """A row's router as Megatron's flags (its defaults otherwise: softmax after top-k, no bias, no groups)."""
    if routing is None:
        return []
    args = [f"--moe-router-score-function {routing.score_function}"]
    if routing.expert_bias:
        args.append("--moe-router-enable-expert-bias")
    if routing.scaling_factor:
        args.append(f"--moe-router-topk-scaling-factor {routing.scaling_factor:g}")
    if routing.groups and routing.group_topk:   # Megatron limits routing to groups only given both
        args.append(f"--moe-router-num-groups {routing.groups} --moe-router-group-topk {routing.group_topk}")
    if routing.sequence_balance_loss:
        args.append(f"--moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff "
                    f"{routing.sequence_balance_loss:g}")
    return args


def _balance_weight(shape: Shape) -> tuple[float, str] | None:
    """(weight, whose) of the auxiliary load-balancing loss a softmax router trains with: the row's (architectures.yaml
    balance_loss), else Megatron's recommended starting value (runtime.yaml megatron.balance_loss), since its default
    weight 0.0 balances nothing. None where the row balances its own way (an expert bias, a sequence-wise loss)."""
    routing = shape.routing
    if shape.experts is None or (routing is not None and (routing.expert_bias or routing.sequence_balance_loss)):
        return None
    if shape.balance_loss is not None:
        return shape.balance_loss, "the model's own"
    return float(facts()["balance_loss"]["weight"]), "Megatron's recommended starting value; the model states none"


def _balance_args(shape: Shape) -> list[str]:
    balance = _balance_weight(shape)
    if balance is None:
        return []
    return [f"--moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff {balance[0]:g}"]


def _dispatch_args(shape: Shape, degrees: Layout) -> list[str]:
    """How a mixture of experts's tokens reach their experts: Megatron's all-to-all dispatcher where the experts are
    spread over expert-parallel ranks (the all-to-all the estimate costs: policies/estimator/moe.py), its default
    all-gather otherwise; the router in fp32 from as many experts as Megatron warns about without it
    (runtime.yaml megatron.moe_dispatch)."""
    table = facts()["moe_dispatch"]
    args = ["--moe-token-dispatcher-type alltoall"] if degrees.expert > 1 else []
    if shape.experts is not None and shape.experts >= int(table["router_fp32_from_experts"]):
        args.append("--moe-router-dtype fp32")
    return args


def _dispatch_note(shape: Shape, degrees: Layout) -> str:
    if shape.experts is None:
        return ""
    words = (f"dispatch: the all-to-all token dispatcher over the {degrees.expert} expert-parallel ranks "
             "(--moe-token-dispatcher-type alltoall, which Megatron recommends with expert parallelism)"
             if degrees.expert > 1 else "dispatch: Megatron's default all-gather token dispatcher (no expert "
             "parallelism)")
    balance = _balance_weight(shape)
    if balance is not None:
        words += (f"; load balancing: the auxiliary loss at weight {balance[0]:g} ({balance[1]}; Megatron's default "
                  "0.0 would balance nothing: runtime.yaml megatron.balance_loss)")
    warned = int(facts()["moe_dispatch"]["router_fp32_from_experts"])
    if shape.experts >= warned:
        words += (f"; router scores in fp32 (--moe-router-dtype fp32), as Megatron asks of {shape.experts} experts "
                  f"(a warning from {warned})")
    return words + " (runtime.yaml megatron.moe_dispatch)"


def vocabulary_padded(vocabulary: int, tensor: int) -> int:
    """The embedding's rows for a vocabulary: the vocabulary itself, or the next multiple of tensor parallelism where
    it does not split over the tensor ranks (Megatron's vocabulary-parallel embedding divides it exactly:
    runtime.yaml megatron.refusals.vocab_partition). Without --padded-vocab-size Megatron would pad the null
    tokenizer's vocabulary plus its end-of-document id to a multiple of 128 x TP, another model."""
    return -(-vocabulary // tensor) * tensor


def _derived_shape(plan: Plan, degrees: Layout) -> Shape:
    """The workload's model.layers / model.hidden, else the estimate's own (model_architecture): layers rounded to
    whole pipeline stages, the width to whole 128-wide heads in groups of 8 KV heads (more where tensor parallelism
    is wider), SwiGLU at Megatron's default width."""
    from accel.policies.estimator.estimate import model_architecture

    model = plan.workload.model
    table = facts()
    layers_estimate, hidden_estimate, _ = model_architecture(plan.workload)
    source = ("model.layers and model.hidden" if model.layers is not None and model.hidden is not None else
              "policies/estimator/estimate.py model_architecture" + (", model.layers" if model.layers else "")
              + (", model.hidden" if model.hidden else ""))
    head_dim = int(table["derived_head_dim"])
    groups = max(int(table["derived_query_groups"]), degrees.tensor)
    if model.layers is not None:
        _stages(model.layers, degrees, "model.layers")
        layers = model.layers
    else:
        layers = max(degrees.pipeline, degrees.pipeline * round(layers_estimate / degrees.pipeline))
    if model.hidden is not None:
        if model.hidden % (head_dim * groups):
            raise _refusal("model.hidden", f"width {model.hidden} is no whole number of {head_dim}-wide heads in "
                           f"{groups} KV groups (tensor parallelism {degrees.tensor})", "heads",
                           f"give a multiple of {head_dim * groups}, or name model.architecture")
        hidden = model.hidden
    else:
        hidden = head_dim * groups * max(1, round(hidden_estimate / (head_dim * groups)))
    heads = hidden // head_dim
    ffn = _swiglu_ffn(hidden)
    family = _derived_family()
    vocabulary = family.vocabulary
    rope_norms = _rope_norms(family, f"runtime.yaml megatron.derived_family: {family.name}")
    note = (f"model: no model.architecture, so a derived shape: {layers} layers, width {hidden:,}, {heads}/{groups} "
            f"query/KV heads of {head_dim}, SwiGLU MLP {ffn:,}, vocabulary {vocabulary:,}, {rope_norms.note()} "
            f"({family.name}'s): the estimate's {layers_estimate:g} layers and width {hidden_estimate:,.0f} "
            f"({source}) rounded to whole pipeline stages and whole heads (runtime.yaml megatron.derived_*); name "
            "model.architecture to train a published model's shape")
    if model.experts is None:
        return Shape(layers, hidden, ffn, heads, groups, None, vocabulary, False, note=note, rope_norms=rope_norms)
    topk = model.experts_per_token or 2   # Megatron's --moe-router-topk default (runtime.yaml megatron.flags)
    shared = model.shared_experts * ffn if model.shared_experts else None
    note += f"; {model.experts} routed experts of MLP {ffn:,} (derived), top-{topk}" + (
        f", {model.shared_experts} shared" if model.shared_experts else "")
    return Shape(layers, hidden, ffn, heads, groups, None, vocabulary, False, model.experts, topk, ffn, shared,
                 note, rope_norms=rope_norms)


def _derived_family() -> Architecture:
    """The architecture row whose attention a derived shape follows (runtime.yaml megatron.derived_family): its
    vocabulary, rotary base and norm epsilon."""
    from accel.policies.architectures.rows import lookup

    return lookup(facts()["derived_family"])


def model_shape(plan: Plan, degrees: Layout) -> Shape:
    shape = _named_shape(plan, degrees) or _derived_shape(plan, degrees)
    if shape.experts is not None and shape.experts % degrees.expert:
        field = "model.architecture" if model_run.named_model(plan).architecture else "model.experts"
        raise _refusal(field, f"{shape.experts} experts do not split over expert parallelism {degrees.expert}",
                       "experts", "pin hardware whose expert parallelism divides them")
    world = degrees.model_ranks * degrees.data
    if shape.experts is not None and world % (degrees.expert * degrees.pipeline):
        # Expert tensor parallelism 1 (run): the world a multiple of EP x PP. The plan keeps to it
        # (policies/parallelism.py expert_within_ranks); this is the backstop for a hand-edited layout.
        raise _refusal("plan.parallelism", f"the job's {world} ranks do not split into EP{degrees.expert} x "
                       f"PP{degrees.pipeline} expert groups", "expert_world",
                       "plan again (accel plan) so the expert degree divides a stage's ranks")
    return shape


# A workload's own batch is moved to the nearest multiple of the data-parallel ranks when that is this close: the
# ranks are accel's choice, not the user's, and a batch 0.1% larger trains the same (DeepSeek-V3's "63M" tokens
# are 15,380 sequences; on 9 data-parallel ranks, 15,381). Farther, the user decides.
STATED_BATCH_TOLERANCE = 0.01


def global_batch(plan: Plan, degrees: Layout) -> tuple[int, str]:
    """(the global batch in sequences, what the job says of it): the plan's, a multiple of the data-parallel ranks
    (micro-batch 1). A workload's own training.global_batch_tokens that is none is moved to the nearest one within
    STATED_BATCH_TOLERANCE, else refused; the default for the model's size is rounded up to one; either is said."""
    sequences, _ = context_parallel.plan_batch(plan)
    training = plan.workload.training
    if sequences % degrees.data == 0:
        return sequences, f"the plan's global batch, {sequences:,} sequences"
    if training is not None and training.global_batch_tokens is not None:
        nearest = max(degrees.data, round(sequences / degrees.data) * degrees.data)
        if abs(nearest - sequences) <= STATED_BATCH_TOLERANCE * sequences:
            return nearest, (f"training.global_batch_tokens' {sequences:,} sequences moved to {nearest:,}, the nearest "
                             f"multiple of the {degrees.data} data-parallel ranks, as Megatron requires: "
                             "runtime.yaml megatron.refusals.batch")
        raise _refusal("training.global_batch_tokens",
                       f"{sequences:,} sequences a step is no multiple of the {degrees.data} data-parallel ranks "
                       "(micro-batch 1)", "batch",
                       f"give a multiple of {degrees.data} x {plan.workload.model.sequence_length:,} tokens")
    rounded = -(-sequences // degrees.data) * degrees.data
    return rounded, (f"the plan's default global batch of {sequences:,} sequences rounded up to a multiple of the "
                     f"{degrees.data} data-parallel ranks, as Megatron requires: runtime.yaml megatron.refusals.batch")


def _precision(plan: Plan) -> tuple[str, list[str]]:
    precision = plan_view.precision(plan)
    if precision == "fp32":
        return "", []
    if precision == "fp16":
        return "--fp16", []
    if precision != "fp8":
        return "--bf16", []
    accelerator = plan_view.hardware(plan).accelerator
    chip = hardware.current().chips.get(accelerator)
    if chip is not None and chip.peak_fp8_tflops:
        return f"--bf16 {facts()['fp8']}", [f"precision fp8: {facts()['fp8']} (Transformer Engine's E4M3 forward, "
                                              f"E5M2 gradients) over bf16 on {chip.name}'s fp8 tensor cores"]
    name = chip.name if chip is not None else accelerator
    return "--bf16", [f"training.precision fp8, but {name} has no fp8 tensor cores: the job trains in bf16"]


@dataclass(frozen=True)
class MegatronRun:
    args: str           # the flags after the script
    notes: list[str]


def run(plan: Plan, checkpoint_url: str | None = None) -> MegatronRun:
    """Megatron's flags for the plan (UsageError, exit 2, where Megatron would refuse the plan's layout).
    `checkpoint_url`: CHECKPOINT_DIR where the job sets it to an object-store URL rather than a mounted path."""
    table = facts()
    degrees = layout(plan)
    shape = model_shape(plan, degrees)
    sequence = plan.workload.model.sequence_length
    if degrees.context > 1 and sequence % (2 * degrees.context):
        raise _refusal("model.sequence_length", f"{sequence:,} tokens is no multiple of 2 x context parallelism "
                       f"{degrees.context}", "context_sequence", f"give a multiple of {2 * degrees.context}")
    precision, precision_notes = _precision(plan)
    batch, batch_note = global_batch(plan, degrees)
    args = [f"--tensor-model-parallel-size {degrees.tensor}", f"--pipeline-model-parallel-size {degrees.pipeline}"]
    uneven = pipeline_split(shape.layers, degrees.pipeline)
    if uneven is not None:
        args.append(f"--decoder-first-pipeline-num-layers {uneven[0]} --decoder-last-pipeline-num-layers {uneven[1]}")
    if degrees.context > 1:
        args.append(f"--context-parallel-size {degrees.context}")
    if degrees.tensor > 1:
        args.append("--sequence-parallel")
    if shape.experts is not None:
        # The plan spreads the experts over one NVLink domain's GPUs (EP), the ranks its attention splits over by
        # tensor parallelism: each expert whole on its rank (expert tensor parallelism 1).
        args += [f"--num-experts {shape.experts}", f"--moe-router-topk {shape.router_topk}",
                 f"--expert-model-parallel-size {degrees.expert}", "--expert-tensor-parallel-size 1",
                 f"--moe-ffn-hidden-size {shape.expert_ffn}"]
        if shape.shared_expert_ffn:
            args.append(f"--moe-shared-expert-intermediate-size {shape.shared_expert_ffn}")
        if shape.dense_layers:   # Megatron evaluates the list pattern, one entry a layer (arguments.py moe_freq_type)
            args.append(f"--moe-layer-freq '([0]*{shape.dense_layers}+[1]*{shape.layers - shape.dense_layers})'")
        args += _routing_args(shape.routing)
        args += _balance_args(shape)
        if shape.router_topk == 1 and (shape.routing is None or shape.routing.score_function == "softmax"):
            # A softmax over the one chosen expert is 1 everywhere, with no gradient: Megatron refuses top-1 softmax
            # routing unless the softmax comes before the choice (runtime.yaml megatron.refusals.top1_softmax).
            args.append("--moe-router-pre-softmax")
        args += _dispatch_args(shape, degrees)
    args += ["--use-distributed-optimizer", table["recompute"],
             f"--num-layers {shape.layers}", f"--hidden-size {shape.hidden}", f"--ffn-hidden-size {shape.ffn}",
             f"--num-attention-heads {shape.heads}"]
    if shape.kv_channels is not None:
        args.append(f"--kv-channels {shape.kv_channels}")
    args += _attention_args(shape)
    args += [f"--seq-length {sequence}", f"--max-position-embeddings {sequence}",
             "--swiglu --normalization RMSNorm --position-embedding-type rope --disable-bias-linear"]
    if shape.rope_norms is not None:
        args += shape.rope_norms.args()
    args.append(table["dropout"])
    if not shape.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    args += ["--micro-batch-size 1", f"--global-batch-size {batch}"]
    if precision:
        args.append(precision)
    padded = vocabulary_padded(shape.vocabulary, degrees.tensor)
    args += [table["smoke"], f"--vocab-size {shape.vocabulary} --padded-vocab-size {padded}"]
    checkpoint_notes = []
    if checkpoint_url is not None:
        checkpoint_notes.append(f"checkpoints: none written: CHECKPOINT_DIR is {checkpoint_url}, a URL, and "
                                "Megatron-LM saves to a filesystem path (--save); mount the bucket or use the "
                                "stack's filesystem, and pass --command with --save/--load there")
    else:
        interval = table["save_interval"]
        args.append(f"--save $(CHECKPOINT_DIR) --load $(CHECKPOINT_DIR) --save-interval {interval}")
        checkpoint_notes.append(f"checkpoints: --save and --load $(CHECKPOINT_DIR) every {interval} iterations "
                                "(Megatron's torch_dist format; a restarted job resumes from the latest)")
    context = f"CP{degrees.context} x " if degrees.context > 1 else ""
    expert = f", EP{degrees.expert} (expert tensor parallelism 1)" if shape.experts is not None else ""
    dispatch = _dispatch_note(shape, degrees)
    notes = [
        f"program: Megatron-LM {table['tag']} ({table['commit'][:8]}, {table['date']}) {table['entry']}, checked out "
        f"at {table['tree']} (sources: runtime.yaml megatron)",
        f"layout: TP{degrees.tensor} x {context}PP{degrees.pipeline} x DP{degrees.data}{expert} as Megatron's "
        "flags" + (", sequence parallelism over the tensor ranks" if degrees.tensor > 1 else "")
        + "; the distributed optimizer (optimizer state sharded over DP); full recomputation of every layer, "
        "the regime the estimate sizes activations by",
        f"{shape.note}; no dropout (Megatron's defaults are 0.1: runtime.yaml megatron.dropout)",
        *([dispatch] if dispatch else []),
        *([f"pipeline: {shape.layers} layers do not split evenly over {degrees.pipeline} stages: {uneven[0]} on the "
           f"first, {uneven[1]} on the last, {(shape.layers - sum(uneven)) // max(1, degrees.pipeline - 2)} on each "
           "other (Megatron's uneven pipeline, as Llama 3 405B's 126 layers ran on 16 stages)"]
          if uneven is not None else []),
        f"batch: --micro-batch-size 1, --global-batch-size {batch:,} ({batch_note}) of {sequence:,} tokens",
        *precision_notes,
        f"smoke run: mock data (--mock-data), a null tokenizer of the model's {shape.vocabulary:,} ids, its last the "
        f"end-of-document id, in an embedding of exactly {padded:,} rows "
        "(--padded-vocab-size" + (f", padded to a multiple of tensor parallelism {degrees.tensor}"
                                  if padded != shape.vocabulary else "")
        + "; runtime.yaml megatron.vocabulary_source), 100 iterations, random weights. For a real run pass "
        "--command with --data-path <prefix of Megatron .bin/.idx files>, --tokenizer-type HuggingFaceTokenizer "
        "--tokenizer-model <tokenizer>, --train-iters, --eval-iters with --eval-interval (which Megatron-LM "
        f"{table['tag']} requires: no default) and your learning-rate schedule",
        *checkpoint_notes,
    ]
    return MegatronRun(" ".join(args), notes)


def default_command(plan: Plan, checkpoint_url: str | None = None) -> tuple[str, list[str]]:
    """The default PyTorch training command (script and flags, what torchrun runs) and what the job says of it."""
    megatron = run(plan, checkpoint_url)
    return f"{runtime()['defaults']['pytorch-gpu']['command']} {megatron.args}", megatron.notes


def needs_checkout(command: str) -> bool:
    """Whether a command runs from the Megatron-LM checkout (the default one, or a user's naming its path)."""
    return f"{facts()['tree']}/" in command


def attach_checkout(pod: dict[str, Any], image: str) -> str:
    """Put the pinned Megatron-LM into the trainer's `tree`: an emptyDir, filled by an init container of the
    training image (first, before any sidecar) that clones the tag and fails unless it is the pinned commit.
    Returns the note."""
    table = facts()
    tree = table["tree"]
    clone = (f"git clone --depth 1 --branch {table['tag']} {table['repository']} {tree} && "
             f"test \"$(git -C {tree} rev-parse HEAD)\" = {table['commit']}")
    spec = pod["spec"]
    spec.setdefault("volumes", []).append({"name": CHECKOUT_VOLUME, "emptyDir": {}})
    mount = {"name": CHECKOUT_VOLUME, "mountPath": tree}
    spec["containers"][0].setdefault("volumeMounts", []).append(dict(mount))
    spec["initContainers"] = [{"name": CHECKOUT_VOLUME, "image": image, "command": ["/bin/bash", "-c", clone],
                               "volumeMounts": [dict(mount)]}, *spec.get("initContainers", [])]
    return (f"Megatron-LM: init container {CHECKOUT_VOLUME} clones {table['tag']} of {table['repository']} into "
            f"{tree} (an emptyDir) and fails unless it is {table['commit'][:8]}; the nodes need egress to github.com "
            "(or pass --image with Megatron-LM at that path)")
