"""TPU serving holds the bytes the plan sized (accel/job/maxtext_precision.py): MaxText's JetStream engine builds and
restores weights at weight_dtype, float32 by default, so every server passes bfloat16; int8 is held as int8 only from a
checkpoint MaxText quantized, read with checkpoint_is_quantized=True; fp8 has no TPU serving path and is refused."""

from __future__ import annotations

import functools
import json

import pytest

from accel.base.errors import UsageError
from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.manifests import JobOptions, generate
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping

V5E = {"accelerator": "tpu-v5e", "chips": 4}
TPU7X = {"accelerator": "tpu7x", "topology": "2x2x1"}
QUANTIZED = "gs://w/llama-int8/0/items"


@functools.cache
def _plan(workload_json: str):
    return choose_plan(workload_from_mapping(json.loads(workload_json), "t.yaml"), load_catalog())


def serve(model: dict, precision: str = "bf16", hardware: dict = V5E, **options) -> tuple[str, str]:
    """(the engine container's command, the job's derivations) for a TPU serving workload."""
    workload = {"name": "tpu-precision", "kind": "inference", "model": model, "hardware": hardware,
                "inference": {"tokens_per_second": 2000, "framework": "jax", "precision": precision,
                              "hours": 168}}   # within flex-start's longest request (TPU7x is bought so)
    generated = generate(_plan(json.dumps(workload, sort_keys=True)), JobContext(stack="t"), JobOptions(**options))
    main = next(m for m in generated.manifests if m["kind"] == "Deployment")
    return main["spec"]["template"]["spec"]["containers"][0]["command"][-1], "\n".join(generated.derivations)


def flags(command: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in command.split() if "=" in word)


LLAMA = {"architecture": "llama3.1-8b", "checkpoint": "gs://w/llama/0/items"}


# ----- bf16: weight_dtype, whose default float32 would hold twice the bytes -----

def test_maxtexts_weight_dtype_default_is_float32_so_bf16_serving_passes_bfloat16():
    command, notes = serve(LLAMA)
    assert flags(command)["weight_dtype"] == "bfloat16"
    assert "quantization" not in flags(command) and "checkpoint_is_quantized" not in flags(command)
    assert "precision bf16: weights held in bf16 (weight_dtype=bfloat16; MaxText's default weight_dtype is float32" \
        in notes


def test_the_jetstream_stand_in_passes_bfloat16_too():
    command, _ = serve({"parameters": "8B"})
    assert command.startswith("/usr/bin/maxengine_server_entrypoint.sh ")
    assert flags(command)["weight_dtype"] == "bfloat16"


def test_fp8_asked_of_a_chip_without_fp8_is_served_in_the_bf16_the_plan_sized():
    command, notes = serve(LLAMA, "fp8")
    assert flags(command)["weight_dtype"] == "bfloat16" and "quantization" not in flags(command)
    assert "inference.precision fp8, but the plan sized bf16 weights and KV cache on TPU v5e" in notes
    assert "so MaxText serves bf16" in notes


# ----- int8: AQT weights from a checkpoint MaxText quantized -----

def test_int8_reads_a_quantized_checkpoint_with_checkpoint_is_quantized():
    command, notes = serve({"architecture": "llama3.1-8b", "checkpoint": QUANTIZED}, "int8")
    assert {"quantization": "int8", "checkpoint_is_quantized": "True", "weight_dtype": "bfloat16",
            "load_parameters_path": QUANTIZED}.items() <= flags(command).items()
    assert "quantize_kvcache" not in flags(command)     # the catalog sizes int8's KV cache in bf16
    assert "maxtext.checkpoint_conversion.load_and_quantize_checkpoint" in notes and "KV cache bf16" in notes


def test_int8_without_a_checkpoint_is_refused_naming_precision_and_checkpoint():
    with pytest.raises(UsageError, match=r"^inference\.precision: int8 \(weight-only W8A16\) needs model\.checkpoint "
                                         r"to name a checkpoint quantized to int8 by MaxText .*model\.checkpoint is "
                                         r"unset and llama3\.1-8b is MaxText's config with random weights: .*twice "
                                         r"what the plan sized"):
        serve({"architecture": "llama3.1-8b"}, "int8")


def test_int8_on_the_stand_in_is_refused_naming_the_architecture_too():
    with pytest.raises(UsageError, match=r"inference\.precision: int8 .*is a stand-in with random weights: .* model\.checkpoint to the "
                                         r"quantized checkpoint's gs:// path and model\.architecture"):
        serve({"parameters": "8B"}, "int8")


# ----- fp8: a plan on TPU7x sized 1-byte weights and K/V, which MaxText's engine cannot hold -----

def test_fp8_sized_on_tpu7x_is_refused():
    with pytest.raises(UsageError, match=r"^inference\.precision: fp8: the plan sized 1-byte fp8 weights and KV cache "
                                         r"on TPU7x.*KV cache quantizes to int8 or int4 only"):
        serve(LLAMA, "fp8", TPU7X)
    command, _ = serve(LLAMA, "bf16", TPU7X)          # the same hardware at bf16 serves
    assert flags(command)["weight_dtype"] == "bfloat16"


# ----- your command is yours -----

@pytest.mark.parametrize("model, precision", [(LLAMA, "fp8"), ({"parameters": "8B"}, "int8")])
def test_your_command_passes_its_own_precision(model, precision):
    hardware = TPU7X if precision == "fp8" else V5E
    command, notes = serve(model, precision, hardware, command="serve.sh")
    assert command == "serve.sh" and "weight_dtype" not in notes


def test_every_flag_is_a_key_of_the_pinned_maxtext():
    known = set(runtime()["maxtext"]["config_keys"])
    command, _ = serve({"architecture": "llama3.1-8b", "checkpoint": QUANTIZED}, "int8")
    assert {"weight_dtype", "quantization", "checkpoint_is_quantized"} <= set(flags(command)) <= known
    stand_in, _ = serve({"parameters": "8B"})
    assert set(flags(stand_in)) <= set(runtime()["maxtext"]["jetstream_config_keys"])
