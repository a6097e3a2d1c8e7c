"""The rows of architectures.yaml (see the package's docstring) and their lookup."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from accel.policies.architectures import TABLE

# The workload fields a row fills when the workload leaves them out, and must equal when it gives them.
SHAPE_FIELDS = ("layers", "hidden", "experts", "experts_per_token", "shared_experts")
# The counts a workload may round: within the table's tolerance of the row's.
COUNT_FIELDS = ("parameters", "active_parameters")


# MaxText's own tokenizer_type when none is passed (src/maxtext/configs/base.yml l.687 at 834e4bae).
MAXTEXT_DEFAULT_TOKENIZER = "sentencepiece"


@dataclass(frozen=True)
class Tokenizer:
    path: str                  # a file under MaxText's assets/tokenizers, or a Hugging Face id (type huggingface)
    type: str = MAXTEXT_DEFAULT_TOKENIZER

    @property
    def is_default_type(self) -> bool:
        """MaxText's default type: a command need not pass tokenizer_type."""
        return self.type == MAXTEXT_DEFAULT_TOKENIZER

    @property
    def is_asset(self) -> bool:
        """A file MaxText ships (under src/maxtext/assets/tokenizers) rather than a Hugging Face id."""
        return "/" not in self.path


@dataclass(frozen=True)
class LatentAttention:
    """Multi-latent attention (DeepSeek-V3): queries and keys/values through low-rank latents, each head's query and
    key a part without position (qk_nope_head_dim) and a rotary part (qk_rope_head_dim), under YaRN RoPE."""
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    rope_factor: float
    mscale: float


@dataclass(frozen=True)
class Routing:
    """How a mixture of experts's router scores and picks experts, where it is not top-k over a softmax."""
    score_function: str              # sigmoid or softmax
    expert_bias: bool                # a per-expert bias added for the choice only (auxiliary-loss-free balancing)
    scaling_factor: float | None     # the chosen experts' weights scaled by it
    groups: int | None               # group-limited routing: the experts in this many equal groups,
    group_topk: int | None           # of which each token's experts come from this many
    sequence_balance_loss: float | None = None   # the sequence-wise balance loss's weight


@dataclass(frozen=True)
class Architecture:
    name: str                  # MaxText's model_name
    parameters: float
    layers: int
    hidden: int
    query_heads: int
    kv_heads: int
    vocabulary: int
    huggingface: str
    gated: bool
    tokenizer: Tokenizer
    active_parameters: float | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    shared_experts: int | None = None
    mlp: int | None = None             # MLP width (an MoE row: one expert's); with head_dim and tied_embeddings, only
    head_dim: int | None = None        # there to recompute the counts (tests/test_architectures.py)
    tied_embeddings: bool = False
    moe_mlp: int | None = None         # one routed expert's width where `mlp` is not stated (DeepSeek-V3), its
    dense_mlp: int | None = None       # dense layers' MLP width and how many layers come first as dense ones
    first_dense_layers: int = 0
    latent_attention: LatentAttention | None = None   # multi-latent attention instead of (grouped-)query heads
    routing: Routing | None = None                     # the router where it is not top-k over a softmax
    balance_loss: float | None = None   # the auxiliary load-balancing loss's weight the model states (a softmax router)
    mlp_activation: str = "silu"                       # the MLP's gate: silu (SwiGLU) or gelu (GeGLU)
    rope_base: int | None = None         # the rotary embedding's base (rope_theta); every row states one
    norm_epsilon: float | None = None    # the RMSNorm epsilon; every row states one
    rope_scaling_factor: float | None = None   # Llama 3.1's long-context RoPE scaling, where the model has it
    qk_norm: bool = False                # an RMSNorm on each head's query and key (Qwen3, Gemma 3)
    local_rope_base: int | None = None   # sliding-window layers' own base where it differs (Gemma 3)
    rope_linear_factor: float | None = None   # linear RoPE scaling of the global layers (Gemma 3)

    @property
    def expert_mlp(self) -> int | None:
        """One routed expert's width (an MoE row): `mlp`, else `moe_mlp`; None when the table states neither."""
        return (self.mlp if self.mlp is not None else self.moe_mlp) if self.is_moe else None

    @property
    def is_moe(self) -> bool:
        return self.experts is not None

    @property
    def tensor_heads(self) -> int:
        """What a tensor-parallel degree must divide: Megatron-LM splits both the query heads and the KV heads (query
        groups) over the tensor ranks (accel/job/runtime.yaml megatron.refusals heads and query_groups; since
        core_v0.16 it also takes a degree that is a multiple of the KV heads, replicating them, which this rule does
        not use), MaxText both over its mesh's tensor axis; so their greatest common divisor. A
        multi-latent-attention row states as many KV heads as query heads (DeepSeek-V3's 128): the same rule."""
        return math.gcd(self.query_heads, self.kv_heads)

    def workload_fields(self) -> dict[str, float | int]:
        """The ModelSpec fields this row states: the counts and the shape (the MoE ones only for an MoE row)."""
        fields = {name: getattr(self, name) for name in (*COUNT_FIELDS, *SHAPE_FIELDS)}
        return {name: value for name, value in fields.items() if value is not None}


@dataclass(frozen=True)
class ArchitectureTable:
    rows: dict[str, Architecture]
    maxtext_commit: str
    tolerance: float
    tolerance_why: str

    def names(self) -> tuple[str, ...]:
        return tuple(self.rows)

    def closest(self, name: str, count: int = 3) -> list[str]:
        """The names nearest a misspelt one (case folded: 'Llama3.1-8B' finds llama3.1-8b)."""
        import difflib   # only for a name the table lacks

        return difflib.get_close_matches(name.lower(), self.rows, n=count, cutoff=0.5)


def _row(name: str, data: dict) -> Architecture:
    tokenizer = Tokenizer(**data["tokenizer"])
    known = {f for f in Architecture.__dataclass_fields__} - {"name", "tokenizer"}
    fields = {k: v for k, v in data.items() if k in known}
    if "latent_attention" in fields:
        fields["latent_attention"] = LatentAttention(**fields["latent_attention"])
    if "routing" in fields:
        fields["routing"] = Routing(**fields["routing"])
    if "norm_epsilon" in fields:   # 1.0e-5 parses as a number, 1e-5 (no dot) as a string in YAML 1.1
        fields["norm_epsilon"] = float(fields["norm_epsilon"])
    for count in COUNT_FIELDS:   # 6.74e9 is a string to YAML 1.1 (its exponent wants a sign): read as a number
        if count in fields:
            fields[count] = float(fields[count])
    return Architecture(name=name, tokenizer=tokenizer, **fields)


@cache
def table() -> ArchitectureTable:
    """architectures.yaml, parsed once (PyYAML only when a workload names an architecture)."""
    from accel.base.safe_files import read_text
    from accel.base.yaml_files import parse_yaml

    data = parse_yaml(read_text(TABLE, "model architecture table"))
    rows = {name: _row(name, row) for name, row in data["architectures"].items()}
    return ArchitectureTable(rows, data["maxtext_commit"], float(data["tolerance"]), data["tolerance_why"])


def lookup(name: str) -> Architecture | None:
    return table().rows.get(name)
