"""The known-architecture table (policies/architectures/architectures.yaml) and the workload fields that name it:
`model.architecture` fills the shape and counts left out and refuses ones that disagree; `model.checkpoint` is a
Hugging Face repo id, a bucket URL or an absolute path. Each refusal is shown on a mutated good workload."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accel.base.errors import UsageError
from accel.policies import architectures
from accel.policies.workload import workload_from_mapping

TABLE = architectures.table()
SERVING = {"name": "served", "kind": "inference", "inference": {"tokens_per_second": 1000}}


def workload(**model):
    return workload_from_mapping({**SERVING, "model": model}, "w.yaml")


def refusal(**model) -> str:
    with pytest.raises(UsageError) as caught:
        workload(**model)
    return str(caught.value)


def decoder_parameters(row: architectures.Architecture, experts: int | None) -> float:
    """Embeddings (x2 unless the output layer reuses them), per layer attention (q, k, v, o), the gated MLP's three
    matrices (each routed expert's, plus the router), two norms; the final norm."""
    attention = row.hidden * row.head_dim * (2 * row.query_heads + 2 * row.kv_heads)
    mlp = 3 * row.hidden * row.mlp
    if row.is_moe:
        mlp = experts * mlp + row.hidden * row.experts
    embeddings = row.vocabulary * row.hidden * (1 if row.tied_embeddings else 2)
    return embeddings + row.layers * (attention + mlp + 2 * row.hidden) + row.hidden


@pytest.mark.parametrize("name", [n for n, r in TABLE.rows.items() if r.mlp is not None])
def test_each_rows_counts_are_what_its_dimensions_hold(name):
    """The counts and the dimensions are stated separately, so a typo in either shows: within 1.5% (norms of
    Gemma's extra sandwich layers and Qwen3's q/k norms are left out of the formula)."""
    row = TABLE.rows[name]
    assert decoder_parameters(row, row.experts) == pytest.approx(row.parameters, rel=0.015)
    if row.is_moe:
        assert decoder_parameters(row, row.experts_per_token) == pytest.approx(row.active_parameters, rel=0.015)


def latent_decoder_parameters(row: architectures.Architecture, experts: int) -> float:
    """DeepSeek-V3's decoder: multi-latent attention (query down- and up-projection, the key/value latent with its
    shared rotary key, its up-projection to per-head keys and values, the output; an RMSNorm on each latent), its
    first layers dense, the rest `experts` routed plus the shared ones, each with the router."""
    latent, hidden, heads = row.latent_attention, row.hidden, row.query_heads
    query_key_head = latent.qk_nope_head_dim + latent.qk_rope_head_dim
    query = hidden * latent.q_lora_rank + latent.q_lora_rank * heads * query_key_head
    key_value = (hidden * (latent.kv_lora_rank + latent.qk_rope_head_dim)
                 + latent.kv_lora_rank * heads * (latent.qk_nope_head_dim + latent.v_head_dim))
    attention = query + key_value + heads * latent.v_head_dim * hidden + latent.q_lora_rank + latent.kv_lora_rank
    routed = (experts + row.shared_experts) * 3 * hidden * row.moe_mlp + hidden * row.experts
    mlp = row.first_dense_layers * 3 * hidden * row.dense_mlp + (row.layers - row.first_dense_layers) * routed
    return row.vocabulary * hidden * 2 + row.layers * (attention + 2 * hidden) + mlp + hidden


def test_deepseek_v3s_counts_are_what_its_latent_attention_and_experts_hold():
    """671B to 0.1% (the report's total, arXiv:2412.19437, rounds to 1B; these dimensions hold 671.03B): a query
    latent or value head half as wide would show (-1.5B, -3.8B), a narrower rotary part alone would not (-0.4B).
    Active: within 2% of the report's rounded 37B (37.55B here, the input embedding counted)."""
    row = TABLE.rows["deepseek3-671b"]
    assert latent_decoder_parameters(row, row.experts) == pytest.approx(row.parameters, rel=0.001)
    assert latent_decoder_parameters(row, row.experts_per_token) == pytest.approx(row.active_parameters, rel=0.02)


def test_the_table_covers_the_models_the_task_names():
    wanted = {"llama3-8b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3.3-70b", "llama2-7b",
              "llama2-13b", "llama2-70b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "deepseek3-671b",
              "gemma2-2b", "gemma3-27b", "qwen3-8b", "qwen3-235b-a22b"}
    assert wanted <= set(TABLE.names())


@pytest.mark.parametrize("name", sorted(TABLE.rows))
def test_each_row_is_a_whole_model(name):
    row = TABLE.rows[name]
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", row.huggingface), row.huggingface
    assert row.query_heads % row.kv_heads == 0          # grouped-query attention: whole groups
    assert (row.active_parameters is None) == (row.experts is None) == (row.experts_per_token is None)
    assert row.tokenizer.type in ("sentencepiece", "tiktoken", "huggingface")
    assert row.mlp_activation in ("silu", "gelu")         # MaxText's mlp_activations gate: SwiGLU or GeGLU
    assert row.routing is None or row.is_moe and row.routing.score_function in ("softmax", "sigmoid")
    assert row.tokenizer.is_asset != (row.tokenizer.type == "huggingface" and "/" in row.tokenizer.path)


def test_an_architecture_fills_the_shape_and_counts_left_out():
    model = workload(architecture="mixtral-8x7b").model
    assert (model.parameters, model.active_parameters) == (46.7e9, 12.9e9)
    assert (model.layers, model.hidden, model.experts, model.experts_per_token) == (32, 4096, 8, 2)


def test_a_rounded_count_within_the_tolerance_is_kept_as_given():
    assert workload(architecture="llama3.1-70b", parameters="70B").model.parameters == 70e9
    assert workload(architecture="gemma2-2b", parameters="2B").model.parameters == 2e9   # 2.61B: 23% off


def test_without_an_architecture_the_model_reads_as_before():
    model = workload(parameters="8B")
    dumped = model.model.model_dump(mode="json")
    assert "architecture" not in dumped and "checkpoint" not in dumped and "layers" not in dumped


def test_a_model_without_parameters_or_an_architecture_is_told_either_will_do():
    assert workload(parameters="8B")
    message = refusal(sequence_length=4096)
    assert "model.parameters: Field required: the parameter count (e.g. 70B), or name model.architecture" in message


def test_an_unknown_name_is_refused_with_the_closest_and_the_list():
    message = refusal(architecture="Llama-3.1-8B")
    assert "model.architecture: no known architecture 'Llama-3.1-8B'" in message
    assert "closest: llama3.1-8b" in message
    assert all(name in message for name in TABLE.names())
    assert workload(architecture="llama3.1-8b")   # the good case the mutation broke


def test_a_shape_field_that_disagrees_is_refused_naming_both_values():
    assert workload(architecture="llama3.1-8b", layers=32, hidden=4096)
    message = refusal(architecture="llama3.1-8b", layers=80)
    assert "model.layers: 80 contradicts architecture llama3.1-8b, whose layers is 32" in message
    assert "model.hidden: 8192 contradicts" in refusal(architecture="llama3.1-8b", hidden=8192)


def test_expert_fields_on_a_dense_architecture_are_refused():
    assert "model.experts: 8 contradicts architecture llama3.1-8b, whose experts is none" in \
        refusal(architecture="llama3.1-8b", experts=8, experts_per_token=2, active_parameters="2B")
    assert "model.active_parameters: 2B but architecture llama3.1-8b is a dense model" in \
        refusal(architecture="llama3.1-8b", active_parameters="2B")


def test_a_count_for_another_size_is_refused():
    assert workload(architecture="qwen3-14b", parameters="14B")
    message = refusal(architecture="qwen3-14b", parameters="8B")
    assert "model.parameters: 8B is more than 25% from architecture qwen3-14b's 14.8B" in message
    assert "model.active_parameters: 30B is more than 25%" in refusal(architecture="qwen3-30b-a3b",
                                                                     active_parameters="30B")


def test_the_tolerance_refuses_every_other_size_of_a_family():
    """The rule's reason, checked: for every two rows of one family (same name before the last '-'), the
    smaller's count lies outside the larger's tolerance."""
    families: dict[str, list[float]] = {}
    for name, row in TABLE.rows.items():
        families.setdefault(name.rsplit("-", 1)[0], []).append(row.parameters)
    for counts in families.values():
        counts.sort()
        for small, large in zip(counts, counts[1:]):
            assert abs(large - small) > TABLE.tolerance * large


@pytest.mark.parametrize("checkpoint", ["meta-llama/Llama-3.1-8B-Instruct", "gs://models/llama/0/items",
                                        "s3://weights/llama-3.1-8b/", "/models/llama"])
def test_a_checkpoint_is_a_repo_id_a_bucket_url_or_an_absolute_path(checkpoint):
    assert workload(parameters="8B", checkpoint=checkpoint).model.checkpoint == checkpoint


@pytest.mark.parametrize("checkpoint, form", [("meta-llama/Llama-3.1-8B-Instruct", "repo"),
                                              ("gs://models/llama/0/items", "gs"), ("s3://weights/llama/", "s3"),
                                              ("/models/llama", "path"), ("/mnt/gs://odd", "path")])
def test_the_form_of_a_checkpoint_is_told_once_for_the_workload_and_the_job(checkpoint, form):
    """workload.checkpoint_form is the one reading of which form a checkpoint takes: the workload's check and the
    job's MaxText and vLLM commands (accel/job/model_run.py) all go by it."""
    from accel.policies.workload import checkpoint_form

    assert checkpoint_form(checkpoint) == form


@pytest.mark.parametrize("checkpoint", ["llama", "https://huggingface.co/meta-llama/x",
                                        "meta-llama/-bad", "a--b/c", "owner/name.git", "gs://", "a/b/c"])
def test_anything_else_is_refused_naming_the_field(checkpoint):
    message = refusal(parameters="8B", checkpoint=checkpoint)
    assert message.startswith("w.yaml: model.checkpoint:"), message


def test_a_named_architecture_sizes_the_serving_kv_cache_by_its_own_attention():
    """Layers x KV heads x head width x K,V x 2 bytes (bf16) per token, where the assumption would guess from the
    size: Mixtral 8x7B's 32 layers of 8 x 128 are 128 KiB per token, not 72 estimated layers' 288 KiB."""
    from accel.policies.catalog import load_catalog
    from accel.policies.estimator.estimate import resolve

    defaults = load_catalog().defaults
    named = resolve(workload(architecture="mixtral-8x7b"), defaults)
    assert named["model_layers"] == 32
    assert named["kv_cache_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    guessed = resolve(workload(parameters="46.7B"), defaults)   # the same size, no architecture: as before
    assert guessed["model_layers"] != 32
    assert guessed["kv_cache_bytes_per_token"] == 2 * guessed["model_layers"] * 1024 * 2


_NAME = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9_]|[-.](?=[A-Za-z0-9_])){0,40}", fullmatch=True)


@given(owner=_NAME, name=_NAME)
def test_any_repo_id_huggingface_takes_is_a_checkpoint(owner, name):
    from accel.policies.workload import checkpoint_problem

    assert checkpoint_problem(f"{owner}/{name}") is None


@given(text=st.text(min_size=1, max_size=60))
def test_a_checkpoint_with_a_space_or_a_web_address_is_refused(text):
    """Not a path (no leading '/', where a space is the path's own business) and not a bucket URL."""
    from accel.policies.workload import checkpoint_problem

    assert checkpoint_problem(f"owner/{text} {text}") is not None
    assert checkpoint_problem(f"https://{text}") is not None


def test_the_table_is_read_at_the_maxtext_its_jobs_run():
    """A row's name and shape are MaxText's config of it in the image that runs model_name=<row> (runtime.yaml
    defaults.jax-tpu, whose MaxText commit is maxtext.images'): one commit, not a later one said to be the image's."""
    from accel.job.facts import runtime

    facts = runtime()
    image = facts["defaults"]["jax-tpu"]["image"]
    assert architectures.table().maxtext_commit == facts["maxtext"]["images"][image]["commit"]


def test_only_a_tokenizer_type_other_than_maxtexts_default_is_passed():
    """MaxText's default tokenizer_type is one fact (architectures.MAXTEXT_DEFAULT_TOKENIZER, base.yml's own): a row
    states no type for it, and the job passes tokenizer_type only for another."""
    from accel.job.model_run import _tokenizer_args

    default = architectures.Tokenizer("tokenizer.llama2")
    assert default.type == architectures.MAXTEXT_DEFAULT_TOKENIZER and default.is_default_type
    tiktoken = architectures.Tokenizer("tokenizer_llama3.tiktoken", "tiktoken")
    row = architectures.lookup("llama2-7b")
    assert row.tokenizer.is_default_type and "tokenizer_type" not in _tokenizer_args(row, "assets")
    llama3 = architectures.lookup("llama3.1-8b")
    assert llama3.tokenizer == tiktoken and _tokenizer_args(llama3, "assets").endswith(" tokenizer_type=tiktoken")
