"""The vLLM serving job loads what the plan sized and runs on the GPU it is placed on (accel/job/vllm_serving.py).

The serving estimate sizes weights and KV cache at the workload's inference.precision (fp8: 1 byte per weight and per
K/V value; int8: W8A16, 1-byte weights with a bf16 KV cache). vLLM loads what its flags say: an fp8 plan's job
quantizes as it loads, int8 needs an 8-bit checkpoint, and a chip without fp8 tensor cores serves bf16 as its plan
does. The image is the vLLM release built for the chip's compute capability on the node's CPU architecture.
"""

from __future__ import annotations

import copy
import functools
import json
import re

import pytest

from accel.base.errors import UsageError
from accel.job.architectures import chip_arch, image_architectures
from accel.job.context import JobContext
from accel.job.facts import runtime
from accel.job.manifests import JobOptions, generate
from accel.job.service import job_of
from accel.job.plan_view import hardware as plan_hardware
from accel.job.vllm_serving import default_image
from accel.policies import hardware
from accel.policies.catalog import load_catalog
from accel.policies.plan import SERVED_PRECISION
from accel.policies.selection.choose import choose_plan, plan_from_pin
from accel.policies.workload import workload_from_mapping
from tests.conftest import planned_result

H100 = {"accelerator": "h100-80gb", "chips": 8}
A100 = {"accelerator": "a100-80gb", "chips": 8}
B200 = {"accelerator": "b200", "chips": 8}


@functools.cache
def _plan(workload_json: str):
    """A pinned workload's plan as `accel plan` makes a pinned stack's (plan_from_pin: no search, so the job's own
    refusals are reached; `accel choose` refuses int8 without a checkpoint before that, policies.workload's rule)."""
    spec = workload_from_mapping(json.loads(workload_json), "t.yaml")
    return (plan_from_pin if spec.hardware is not None else choose_plan)(spec, load_catalog())


def plan_of(precision="bf16", model=None, hw=H100, clouds=None):
    workload = {"name": "served", "kind": "inference", "model": model or {"parameters": "70B"}, "hardware": hw,
                "inference": {"tokens_per_second": 2000, "framework": "pytorch", "precision": precision},
                **({"constraints": {"clouds": clouds}} if clouds else {})}
    return _plan(json.dumps(workload, sort_keys=True))


def serve(precision="bf16", model=None, hw=H100, clouds=None, **options):
    """(the server's command, its image, the job's derivations) of a GPU serving plan."""
    generated = generate(plan_of(precision, model, hw, clouds), JobContext(stack="t"), JobOptions(**options))
    main = next(m for m in generated.manifests if m["kind"] in ("Deployment", "LeaderWorkerSet"))
    pod = (main["spec"]["template"] if main["kind"] == "Deployment" else
           main["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    container = pod["spec"]["containers"][0]
    return container["command"][-1], container["image"], "\n".join(generated.derivations)


# ----- precision -----

def test_a_bf16_plan_serves_bf16_with_no_quantization():
    command, _, notes = serve("bf16")
    assert "--dtype bfloat16 " in command
    assert "--quantization" not in command and "--kv-cache-dtype" not in command and "precision" not in notes


def test_an_fp16_plan_serves_fp16():
    command, _, _ = serve("fp16")
    assert "--dtype float16 " in command and "bfloat16" not in command


# An architecture with no published fp8 checkpoint of its weights (serving_checkpoints.yaml): vLLM quantizes online.
ONLINE = {"architecture": "llama3.1-70b"}


def test_an_fp8_plan_quantizes_weights_and_kv_cache_as_it_loads():
    """v0.33.0 quantizes a bf16 checkpoint online with --quantization fp8_per_tensor; plain --quantization fp8 now
    fails on a checkpoint not in fp8 (runtime.yaml vllm_precision.fp8_source)."""
    command, _, notes = serve("fp8", ONLINE)
    assert "--dtype bfloat16 --quantization fp8_per_tensor --kv-cache-dtype fp8 --tensor-parallel-size" in command
    assert "precision fp8: vLLM quantizes meta-llama/Llama-3.1-70B to fp8" in notes
    assert "'The fp8 quantization method no longer supports online quantization" in \
        runtime()["vllm_precision"]["fp8_source"]


def test_the_fp8_load_is_said_with_its_number_and_no_bf16_peak():
    """vLLM v0.33.0 quantizes each layer as its bf16 weights arrive: a GPU holds 70.6B x 1 byte over the replica."""
    plan = plan_of("fp8", ONLINE)
    gpus = plan.parallelism.tensor * plan.parallelism.pipeline
    _, _, notes = serve("fp8", ONLINE)
    assert (f"load: vLLM quantizes each layer as its bf16 weights arrive, so a GPU holds {70.6e9 / gpus / 1e9:,.1f} "
            f"GB of fp8 weights ({gpus} per replica)") in notes
    assert "never the whole model in bf16" in notes and "load peak" not in notes


def test_an_fp8_plan_of_a_model_whose_bf16_weights_never_fit_one_gpu_is_served():
    """A 13B model on one L4 (24 GB, 21.6 GB usable): 13 GB in fp8 fits; v0.8.5's whole-model bf16 load (26 GB) did
    not, and the old rule refused this plan at choose and in the job. v0.33.0 loads layer by layer: served."""
    model = {"architecture": "llama2-13b"}
    workload = {"name": "served", "kind": "inference", "model": model, "hardware": {"accelerator": "l4", "chips": 1},
                "inference": {"tokens_per_second": 2000, "framework": "pytorch", "precision": "fp8"}}
    plan = choose_plan(workload_from_mapping(workload, "t.yaml"), load_catalog())
    assert plan.parallelism.tensor * plan.parallelism.pipeline == 1
    generated = generate(plan, JobContext(stack="t"), JobOptions())
    assert "a GPU holds 13.0 GB of fp8 weights (1 per replica)" in "\n".join(generated.derivations)


def test_a_pre_quantized_fp8_checkpoint_needs_no_quantization_flag():
    model = {"parameters": "70B", "checkpoint": "my-org/llama-70b-tuned-FP8"}
    command, _, notes = serve("fp8", model)
    assert "--quantization" not in command and "--dtype bfloat16 --kv-cache-dtype fp8" in command
    assert "pre-quantized fp8 checkpoint (its name says fp8)" in notes and "load: " not in notes


def test_an_architecture_published_in_fp8_is_served_as_it_is():
    """DeepSeek-V3's own weights are fp8 (quant_method fp8): no online quantization."""
    command, _, notes = serve("fp8", {"architecture": "deepseek3-671b"}, {"accelerator": "h200-141gb", "chips": 16})
    assert "serve deepseek-ai/DeepSeek-V3 " in command
    assert "--quantization" not in command and "--kv-cache-dtype fp8" in command
    assert "published in fp8 (deepseek-ai/DeepSeek-V3 README_WEIGHTS.md" in notes and "load: " not in notes


def test_metas_fbgemm_fp8_checkpoint_is_loaded_with_the_flag_vllm_now_asks_for(monkeypatch):
    """Meta's Llama 3.1 405B FP8 names fbgemm_fp8, which vLLM v0.33.0 deprecates and refuses to load without
    --allow-deprecated-quantization; the neuralmagic compressed-tensors ones need nothing. Mutated (the method not
    deprecated, as at v0.8.5): the command vLLM v0.33.0 would refuse at start."""
    from accel.job import vllm_serving

    h200 = {"accelerator": "h200-141gb", "chips": 8}
    command, _, notes = serve("fp8", {"architecture": "llama3.1-405b"}, h200)
    assert "serve meta-llama/Llama-3.1-405B-FP8 " in command
    assert "--dtype bfloat16 --allow-deprecated-quantization --kv-cache-dtype fp8" in command
    assert "names fbgemm_fp8, which this vLLM deprecates and loads only with --allow-deprecated-quantization" in notes
    ready, _, _ = serve("fp8", {"parameters": "70B", "checkpoint": "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8"})
    assert "--allow-deprecated-quantization" not in ready
    facts = copy.deepcopy(runtime())
    facts["vllm_precision"]["deprecated_methods"] = []
    monkeypatch.setattr(vllm_serving, "runtime", lambda: facts)
    assert "--allow-deprecated-quantization" not in serve("fp8", {"architecture": "llama3.1-405b"}, h200)[0]


def test_a_checkpoint_not_named_fp8_is_quantized_online_and_told_what_vllm_does_with_a_quantized_one():
    command, _, notes = serve("fp8", {"parameters": "70B", "checkpoint": "my-org/llama-70b-tuned"})
    assert "--quantization fp8_per_tensor --kv-cache-dtype fp8" in command
    assert "if my-org/llama-70b-tuned is already quantized, vLLM refuses --quantization fp8_per_tensor" in notes


def test_the_fp8_kv_cache_flag_is_one_fact_for_online_and_pre_quantized_fp8(monkeypatch):
    """runtime.yaml vllm_precision.fp8_kv_cache is the one statement of the K/V flag: changed there (the mutation:
    vLLM's explicit spelling fp8_e4m3), both fp8 commands and their notes follow."""
    from accel.job import vllm_serving

    facts = copy.deepcopy(runtime())   # runtime() is cached: the mutation stays in this test
    facts["vllm_precision"]["fp8_kv_cache"] = "--kv-cache-dtype fp8_e4m3"
    monkeypatch.setattr(vllm_serving, "runtime", lambda: facts)
    online, _, online_notes = serve("fp8", {"architecture": "llama3.1-8b"})
    ready, _, ready_notes = serve("fp8", {"parameters": "70B", "checkpoint": "neuralmagic/Meta-Llama-3.1-70B-FP8"})
    for command, notes in ((online, online_notes), (ready, ready_notes)):
        assert "--kv-cache-dtype fp8_e4m3 " in command and "--kv-cache-dtype fp8 " not in command
        assert "--kv-cache-dtype fp8_e4m3" in notes


def test_fp8_on_a_chip_without_fp8_tensor_cores_serves_bf16_as_its_plan_does():
    plan = plan_of("fp8", hw=A100)
    served = next(a for a in plan.estimate.assumptions if a.name == SERVED_PRECISION)
    assert served.value == "bf16"   # the estimate widened weights and KV cache to 2 bytes
    command, _, notes = serve("fp8", hw=A100)
    assert "--dtype bfloat16 " in command and "--quantization" not in command and "--kv-cache-dtype" not in command
    assert ("inference.precision fp8, but the plan sized bf16 weights and KV cache on A100 80GB (its 'serving "
            "precision' assumption: fp8 needs fp8 tensor cores)") in notes


def test_the_job_serves_the_precision_its_plan_sized_not_one_it_works_out_again():
    """The estimate decides what an fp8 workload is served at (its 'serving precision' assumption); the job reads that
    decision. A plan that sized bf16 on an H100 (as one costed with a catalog stating no fp8 peak for it would) gets a
    bf16 server, not vLLM quantizing to the 1 byte per weight the plan never counted on."""
    plan = plan_of("fp8")
    assumptions = [a.model_copy(update={"value": "bf16"}) if a.name == SERVED_PRECISION else a
                   for a in plan.estimate.assumptions]
    sized_bf16 = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"assumptions": assumptions})})
    generated = generate(sized_bf16, JobContext(stack="t"), JobOptions())
    command = next(m for m in generated.manifests if m["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"][0]["command"][-1]
    assert "--dtype bfloat16 " in command and "--quantization" not in command and "--kv-cache-dtype" not in command
    assert "inference.precision fp8, but the plan sized bf16 weights and KV cache on H100 (its" in "\n".join(
        generated.derivations)


def test_a_plan_stating_no_serving_precision_is_served_what_it_asked():
    """A plan written without the estimate's assumptions (estimate.assumptions is optional in the schema) is taken to
    serve the precision its workload asks."""
    from accel.job.plan_view import serving_precision

    plan = plan_of("fp8", hw=A100)
    bare = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"assumptions": []})})
    assert serving_precision(plan) == ("fp8", "bf16") and serving_precision(bare) == ("fp8", "fp8")


def test_int8_with_no_checkpoint_is_refused_naming_the_fields():
    with pytest.raises(UsageError) as refused:
        serve("int8")
    message = str(refused.value)
    assert message.startswith("inference.precision: int8 (weight-only W8A16) needs model.checkpoint")
    assert "meta-llama/Llama-3.1-70B-Instruct is a stand-in" in message


def test_the_precision_flags_take_the_served_model_as_model_run_decided_it():
    """Which model vLLM serves (model.checkpoint, else the architecture's repo, else a stand-in) is decided once, in
    model_run.vllm_model; the precision flags and refusals speak of that decision rather than re-deciding it."""
    from accel.job import model_run
    from accel.job.vllm_serving import precision_flags

    plan = plan_of("int8", {"architecture": "llama3.1-70b"})
    served = model_run.vllm_model(plan, "a-stand-in", custom_image=False)
    assert (served.model, served.checkpoint) == ("meta-llama/Llama-3.1-70B", None)
    with pytest.raises(UsageError, match="meta-llama/Llama-3.1-70B is the published weights of architecture "
                                         "llama3.1-70b"):
        precision_flags(plan, plan_hardware(plan), served, 8)
    tuned = model_run.vllm_model(plan_of("int8", {"architecture": "llama3.1-70b", "checkpoint": "org/llama-w8a16"}),
                                 "a-stand-in", custom_image=False)
    assert "model.checkpoint org/llama-w8a16's config.json" in precision_flags(plan, plan_hardware(plan), tuned,
                                                                                8).notes[0]


def test_int8_serving_an_architectures_published_weights_is_refused():
    with pytest.raises(UsageError, match="the published weights of architecture llama3.1-70b"):
        serve("int8", {"architecture": "llama3.1-70b"})


def test_int8_with_a_checkpoint_lets_vllm_read_its_quantization():
    command, _, notes = serve("int8", {"parameters": "70B", "checkpoint": "my-org/llama-70b-w8a16"})
    assert "--dtype bfloat16 " in command and "--quantization" not in command and "--kv-cache-dtype" not in command
    assert "precision int8 (W8A16): vLLM reads the quantization from model.checkpoint my-org/llama-70b-w8a16" in notes


def test_your_command_is_not_refused_for_its_precision():
    command, _, _ = serve("int8", command="vllm serve my-org/w8 --port 8000")
    assert command == "vllm serve my-org/w8 --port 8000"


def test_every_flag_the_job_passes_is_cited_in_the_images_vllm():
    """Each --flag of a generated vLLM command (bf16, fp8 online, fp8 pre-quantized, s3 streaming, multi-node leader
    and worker) is named with its line in runtime.yaml vllm_precision.flags_source."""
    source = runtime()["vllm_precision"]["flags_source"]
    commands = [serve("bf16")[0], serve("fp8")[0], serve("fp16")[0], serve("fp8", ONLINE)[0],
                serve("fp8", {"architecture": "llama3.1-405b"}, {"accelerator": "h200-141gb", "chips": 8})[0],
                serve("fp8", {"parameters": "70B", "checkpoint": "s3://bucket/llama-70b"})[0]]
    group = next(m for m in job_of(planned_result("llama-405b-serving-a4x"), JobOptions()).manifests
                 if m["kind"] == "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    commands += [group[t]["spec"]["containers"][0]["command"][-1] for t in ("leaderTemplate", "workerTemplate")]
    flags = {f for c in commands for f in re.findall(r"(--[a-z-]+)", c[c.index("vllm serve"):])}
    assert {"--quantization", "--kv-cache-dtype", "--load-format", "--nnodes", "--node-rank", "--master-addr",
            "--headless", "--allow-deprecated-quantization"} <= flags
    flags.add("--pipeline-parallel-size")   # written for a replica over several nodes without an NVLink domain
    for flag in flags:
        assert f"{flag} l." in source or f"{flag}: " in source, flag


# ----- the image per GPU generation -----

def test_hopper_runs_the_current_release_and_says_what_driver_it_needs():
    _, image, notes = serve("bf16")
    assert image == runtime()["defaults"]["vllm"]["image"] == "vllm/vllm-openai:v0.33.0"
    assert ("image: vllm/vllm-openai:v0.33.0, vLLM's release image for amd64 built for compute capability 9.0 (H100) "
            "on CUDA 13.0.2: the node's driver must be R580 or newer") in notes


def test_b200_runs_the_same_release_as_hopper():
    # On AWS: a month's service is not served on GCP's B200 (A4), sold without a reservation only through flex-start,
    # whose nodes are removed within seven days (tests/test_flex_start_serving.py).
    _, image, notes = serve("fp8", ONLINE, hw=B200, clouds=["aws"])
    assert image == serve("bf16")[1] == "vllm/vllm-openai:v0.33.0"
    assert "built for compute capability 10.0 (B200)" in notes


def test_every_gpu_a_serving_plan_may_choose_has_an_image_built_for_it_on_its_nodes():
    facts = hardware.current()
    rows = runtime()["vllm_generations"].values()
    for chip in facts.chips.values():
        if chip.family == "gpu" and chip.selectable:
            arch = chip_arch(chip.id) or "amd64"
            assert any(chip.compute_capability in row["compute_capabilities"][arch] for row in rows), chip.id


def test_one_release_covers_ampere_to_blackwell_on_both_architectures():
    rows = runtime()["vllm_generations"]
    assert list(rows) == ["vllm"] and "image" not in rows["vllm"]   # defaults.vllm's image
    built = rows["vllm"]["compute_capabilities"]
    assert {"8.0", "9.0", "10.0"} <= set(built["amd64"]) and {"9.0", "10.0"} <= set(built["arm64"])
    assert "7.0" not in built["amd64"]   # CUDA 13 builds no Volta kernels
    assert "CUDA_ARCH_X86 '7.5 8.0 8.6 8.9 9.0 10.0 12.0'" in rows["vllm"]["source"]
    assert image_architectures(runtime()["defaults"]["vllm"]["image"]).runs_on("arm64") is True


def test_arm_nodes_run_the_releases_arm64_build():
    hw = plan_hardware(plan_of("bf16", {"parameters": "405B"}, {"accelerator": "gb200", "chips": 72},
                               clouds=["gcp"]))
    image = default_image(hw)
    assert image.image == runtime()["defaults"]["vllm"]["image"]
    assert "release image for arm64 built for compute capability 10.0 (GB200)" in image.note


def test_b300_runs_the_blackwell_family_build():
    """CUDA 13 builds sm_100 as a family target (10.0f), which B300 (10.3) runs; the v0.10.2 image had no row for it."""
    hw = plan_hardware(plan_of("bf16"))
    b300 = type(hw)(**{**hw.__dict__, "accelerator": "b300", "machine_type": "p6-b300.48xlarge"})
    assert default_image(b300).image == "vllm/vllm-openai:v0.33.0"


def test_a_gpu_no_image_is_built_for_is_refused_unless_you_pass_one():
    hw = plan_hardware(plan_of("bf16"))
    v100 = type(hw)(**{**hw.__dict__, "accelerator": "v100", "machine_type": "p3.16xlarge"})
    with pytest.raises(UsageError, match=r"accelerator v100 \(compute capability 7.0\): no default vLLM image is "
                                         r"built for it \(vllm/vllm-openai:v0.33.0 on amd64: 7.5 8.0"):
        default_image(v100)


def test_a_chip_built_on_one_architecture_only_is_refused_on_the_other(monkeypatch):
    """The arm64 list has no 7.5 (T4): a T4 on an Arm node is refused, though the amd64 build runs it."""
    hw = plan_hardware(plan_of("bf16"))
    t4 = type(hw)(**{**hw.__dict__, "accelerator": "t4", "machine_type": "g4dn.12xlarge"})
    assert default_image(t4).image == "vllm/vllm-openai:v0.33.0"
    monkeypatch.setattr("accel.job.vllm_serving.node_arch", lambda machine, chip: "arm64")
    with pytest.raises(UsageError, match=r"compute capability 7.5.*on arm64: 8.0 8.7"):
        default_image(t4)


def test_an_image_of_your_own_replaces_the_generations_and_keeps_the_precision_flags():
    command, image, notes = serve("fp8", ONLINE, hw=B200, clouds=["aws"], image="registry.local/vllm:1.0")
    assert image == "registry.local/vllm:1.0" and "image: vllm/vllm-openai" not in notes
    assert "--quantization fp8_per_tensor --kv-cache-dtype fp8" in command


def test_int8_of_weights_published_in_fp8_points_at_fp8():
    with pytest.raises(UsageError, match="published in fp8: set inference.precision fp8"):
        serve("int8", {"architecture": "deepseek3-671b"}, {"accelerator": "h200-141gb", "chips": 16})


def test_a_source_is_cited_by_where_it_is_one_way_for_every_note():
    """accel.job.facts.cite: the part of a runtime.yaml source before its first colon, used by every model and
    precision note (model_run.py and vllm_serving.py had one helper and three inline copies of it)."""
    from accel.job.facts import cite

    source = runtime()["vllm_precision"]["fp8_source"]
    assert cite(source) == "vLLM v0.33.0 docs 'Online Quantization' (docs/features/quantization/online.md l.3-6, " \
                           "l.38, l.51)"
    assert cite(source) in serve("fp8", ONLINE)[2]
