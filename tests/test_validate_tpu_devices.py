"""`accel job --validate` on TPU7x: its psum runs over every JAX device (two per chip, policies/hardware/facts.toml
jax_devices_per_chip) and prints bus bandwidth counted over those devices, so its pass line is stated in the same
unit: the chip's ICI line x ((n-1)/n) / ((c-1)/c). A one-device chip's line is unchanged."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, strategies as st

from accel.job import tpu_devices
from accel.job.facts import runtime
from accel.job.validate import device_bus_scale, pass_line
from accel.policies.catalog import load_catalog
from accel.policies.selection.choose import choose_plan
from accel.policies.workload import workload_from_mapping


@functools.cache
def _plan(accelerator: str, chips: int):
    workload = {"name": "fabric", "kind": "pretrain", "model": {"parameters": "8B"},
                "hardware": {"accelerator": accelerator, "chips": chips},
                "constraints": {"clouds": ["gcp"], "spot": "never"},
                "training": {"tokens": "20B", "framework": "jax"}}
    return choose_plan(workload_from_mapping(workload, "t.yaml"), load_catalog())


def _busbw(chip_gbytes: float, chips: int, devices: int) -> float:
    """What the program prints for a fabric whose chips move `chip_gbytes` each: the chips' all-reduce takes
    2(c-1)/c x the bytes over that rate (each chip's devices reduce on the chip first), counted as 2(n-1)/n x the
    bytes over the time."""
    seconds = 2 * (chips - 1) / chips / chip_gbytes
    return 2 * (devices - 1) / devices / seconds


def test_a_2x2x1_tpu7x_line_is_per_device():
    plan = _plan("tpu7x", 4)
    assert tpu_devices.devices("tpu7x", 4) == 8
    facts = runtime()["validate"]
    chip_line = facts["pass_share"] * facts["tpu_ici_gbytes"]["tpu7x"]["value"]      # 420 GB/s per chip
    line, why = pass_line(plan)
    assert line == pytest.approx(round(chip_line * 7 / 6, 1))                         # 490 GB/s per device
    assert "per JAX device over ICI" in why and "8 devices" in why and "4-chip all-reduce" in why


def test_a_tpu7x_fabric_short_of_its_line_fails_the_device_line_it_passed_per_chip():
    # The mutated bad case: ICI at 65% of the chip's figure, below the 70% pass share.
    facts = runtime()["validate"]
    slow = 0.65 * facts["tpu_ici_gbytes"]["tpu7x"]["value"]
    printed = _busbw(slow, 4, 8)
    per_chip_line = facts["pass_share"] * facts["tpu_ici_gbytes"]["tpu7x"]["value"]
    assert printed >= per_chip_line                       # the old, per-chip line let it pass
    assert printed < pass_line(_plan("tpu7x", 4))[0]      # the per-device line fails it
    healthy = _busbw(facts["tpu_ici_gbytes"]["tpu7x"]["value"], 4, 8)
    assert healthy >= pass_line(_plan("tpu7x", 4))[0]     # a fabric at its figure still passes


def test_one_device_chips_keep_the_per_chip_line():
    facts = runtime()["validate"]
    line, why = pass_line(_plan("tpu-v6e", 8))
    assert line == round(facts["pass_share"] * facts["tpu_ici_gbytes"]["v6e"]["value"], 1)
    assert "per chip over ICI" in why


@given(st.integers(min_value=2, max_value=9216))
def test_the_scale_is_the_bus_counts_ratio_and_fades_with_size(chips):
    scale = device_bus_scale(chips, 2 * chips)
    assert scale > 1.0
    assert scale == pytest.approx(_busbw(1.0, chips, 2 * chips))
    assert device_bus_scale(chips + 1, 2 * chips + 2) < scale
    assert device_bus_scale(chips, chips) == 1.0


def test_one_chip_crosses_no_ici():
    assert device_bus_scale(1, 2) == 1.0
