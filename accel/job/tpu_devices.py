"""A TPU job's parallelism in the unit its programs count: JAX devices, not chips.

vLLM TPU's --tensor-parallel-size and MaxText's per_device_batch_size and ici_*_parallelism all count the devices
JAX shows (tpu-inference 0.32.0 tpu_inference/worker/tpu_worker.py l.411-412 takes jax.devices()[:TP x DP ...];
MaxText at 834e4bae src/maxtext/configs/types.py l.3149-3157 multiplies per_device_batch_size by len(jax.devices()),
src/maxtext/utils/maxtext_utils.py l.2182 fills the ICI axes to the devices per slice). On every TPU but TPU7x that
is one per chip (v4 and v5p join their two TensorCores as one megacore device); TPU7x shows each of its two
TensorCores as its own device. The plan counts chips; the hardware table's chip row says how many devices each is
(policies/hardware/facts.toml `jax_devices_per_chip`, with its source), read here once.
"""

from __future__ import annotations

from accel.policies import hardware


def per_chip(accelerator: str) -> int:
    """The JAX devices one chip of `accelerator` shows (1 for a chip the table does not split)."""
    chip = hardware.current().chips.get(accelerator)
    return chip.jax_devices_per_chip if chip is not None else 1


def devices(accelerator: str, chips: int) -> int:
    """The JAX devices `chips` chips of `accelerator` show: what vLLM TPU and MaxText count."""
    return chips * per_chip(accelerator)


def source(accelerator: str) -> str:
    """The table's source of the chip's device count, its id and title up to the first colon of the title."""
    chip = hardware.current().chips[accelerator]
    key, _, title = chip.jax_devices_source.partition(": ")
    return f"{key}: {title.split(':')[0]}" if title else key


def counted(accelerator: str, chips: int) -> str:
    """'8 JAX devices (4 chips, 2 per chip)' where a chip is more than one device, else '4 chips'."""
    each = per_chip(accelerator)
    if each == 1:
        return f"{chips} chip{'s' if chips != 1 else ''}"
    return f"{chips * each} JAX devices ({chips} chip{'s' if chips != 1 else ''}, {each} per chip)"
