"""A vLLM TPU server uses every JAX device its pod holds.

vLLM TPU (tpu-inference) lays its model over the first TP x DP x PP of the devices JAX shows and leaves the rest
idle: nothing refuses a --tensor-parallel-size smaller than the pod's devices. On TPU7x each chip is two JAX devices
(policies/hardware/facts.toml `jax_devices_per_chip`), so a server written with the chip count, the habit every
earlier TPU allowed, runs on half the replica it pays for. The rule reads each container that runs `vllm serve` (or
vLLM's OpenAI server module) on a node pool it selects by cloud.google.com/gke-tpu-accelerator, and compares its
parallel degrees with the devices of its google.com/tpu chips. A server whose degrees span more than its pod (a
multi-host replica) is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from accel.components.kubernetes.accelerator_stack import GKE_TPU_ACCELERATOR_LABEL, TPU_RESOURCE
from accel.job import tpu_devices
from accel.job.pod_templates import pod_templates
from accel.job.rules.registry import Breach, Scope, command_words, containers, describe, join, rule
from accel.policies import hardware

SOURCE = ("tpu-inference 0.32.0 tpu_inference/layers/common/sharding.py l.199-200 (total_devices = the product of the "
          "parallel degrees) and worker/tpu_worker.py l.411-412 (self.devices = jax.devices()[:total_devices]); "
          "MaxText 834e4bae src/maxtext/utils/accelerator_to_spec_map.py l.35-45 (TPU7x: two devices per chip); "
          "tpu-recipes c8cfe2f6 inference/ironwood/vLLM (TP x DP = 2 x chips)")
FLAGS = {"--tensor-parallel-size": "tensor", "-tp": "tensor", "--data-parallel-size": "data", "-dp": "data",
         "--pipeline-parallel-size": "pipeline", "-pp": "pipeline"}
OPENAI_MODULE = "vllm.entrypoints.openai.api_server"


def vllm_degrees(argv: list[str]) -> dict[str, int] | None:
    """The tensor, data and pipeline degrees a `vllm serve` (or OpenAI server module) command passes (1 where it
    passes none), or None where the command runs no vLLM server or a degree is not a number. A `sh -c` script is read
    as the shell reads it (command_words)."""
    words = command_words(argv) or []
    starts = [i for i, w in enumerate(words)
              if (os.path.basename(w) == "vllm" and words[i + 1:i + 2] == ["serve"]) or w == OPENAI_MODULE]
    if not starts:
        return None
    degrees = {"tensor": 1, "data": 1, "pipeline": 1}
    rest = words[starts[0] + 1:]
    for i, word in enumerate(rest):
        name, eq, value = word.partition("=")
        if name not in FLAGS:
            continue
        value = value if eq else (rest[i + 1] if i + 1 < len(rest) else "")
        if not value.isdigit():
            return None
        degrees[FLAGS[name]] = int(value)
    return degrees


def _chip_of(pod_spec: dict[str, Any]) -> str | None:
    """The TPU chip of the node pool the pod selects (its cloud.google.com/gke-tpu-accelerator), else None."""
    label = (pod_spec.get("nodeSelector") or {}).get(GKE_TPU_ACCELERATOR_LABEL)
    for generation in hardware.current().tpu_generations.values():
        if generation.gke_accelerator == label:
            return generation.accelerator
    return None


def _servers(scope: Scope) -> Iterator[tuple[str, str, str, int, dict[str, int]]]:
    """(owner, field, chip, chips, degrees) of every vLLM server container on a TPU pool."""
    for template in pod_templates(scope.manifests):
        chip = _chip_of(template.spec)
        if chip is None:
            continue
        for where, container in containers(template.spec):
            limit = ((container.get("resources") or {}).get("limits") or {}).get(TPU_RESOURCE)
            argv = [*(container.get("command") or []), *(container.get("args") or [])]
            if limit is None or not str(limit).isdigit() or not all(isinstance(w, str) for w in argv):
                continue
            degrees = vllm_degrees(argv)
            if degrees is not None:
                yield (describe(template.owner), join(template.path, "spec", where, "command"), chip, int(limit),
                       degrees)


@rule("tpu/vllm-uses-every-device", "a vLLM TPU server's parallel degrees cover every JAX device its pod holds",
      source=SOURCE, severity="flag",
      fix="pass --tensor-parallel-size (times --data-parallel-size) equal to the pod's JAX devices: its google.com/tpu "
          "chips times the chip's devices (TPU7x: 2 per chip)")
def vllm_uses_every_device(scope: Scope):
    for owner, field, chip, chips, degrees in _servers(scope):
        devices = tpu_devices.devices(chip, chips)
        used = degrees["tensor"] * degrees["data"] * degrees["pipeline"]
        if used >= devices:
            continue
        yield Breach(owner, field,
                     f"vLLM TPU lays the model over TP {degrees['tensor']} x DP {degrees['data']} x PP "
                     f"{degrees['pipeline']} = {used} JAX devices, but the pod holds "
                     f"{tpu_devices.counted(chip, chips)}: tpu-inference takes "
                     f"the first {used} and leaves {devices - used} idle",
                     f"pass --tensor-parallel-size {devices // (degrees['data'] * degrees['pipeline'])}"
                     if devices % (degrees["data"] * degrees["pipeline"]) == 0 else None)
